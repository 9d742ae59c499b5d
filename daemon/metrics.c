/* SPDX-License-Identifier: MIT */
/* metrics.c: the metrics listener, libmicrohttpd on its own thread (see
 * metrics.h); metrics_render.c writes the page. */
#include "metrics.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "address.h"
#include "listen.h"
#include "metrics_deadline.h"
#include "time_units.h"

#define METRICS_PATH "/metrics"
/* Probes for load balancers and orchestrators: /ready is 200 while the
 * daemon serves jobs (health SERVING) and 503 while it starts or drains;
 * /live is 200 while the process answers. */
#define METRICS_READY_PATH "/ready"
#define METRICS_LIVE_PATH "/live"
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
/* Scrapers are few, but slow clients from many addresses must not fill
 * the pool: room for 16 addresses at their cap. Each costs libmicrohttpd's
 * connection memory (32 KiB) and two descriptors (metrics_deadline.c). */
#define METRICS_MAX_CONNECTIONS 64
/* One address may hold only a few of the slots, so that slow or stuck
 * connections from one place leave room for a scraper from another. */
#define METRICS_MAX_ADDRESS_CONNECTIONS 4
/* A request must arrive whole, and its answer go out, within this time,
 * however its bytes are spaced (metrics_deadline.h); a scrape takes
 * milliseconds. It is the idle timeout too. */
#define METRICS_DEADLINE_S 5
#define METRICS_ADDRESS_MAX (INET6_ADDRSTRLEN + 8)

struct metrics {
    struct MHD_Daemon *mhd;
    struct metrics_sources src;          /* all but sched, which is: */
    _Atomic(struct sched *) sched;       /* src's, or metrics_set_sched()'s */
    atomic_bool ready;                   /* metrics_set_ready(): /ready's answer */
    struct metrics_deadline *deadline;
    char address[METRICS_ADDRESS_MAX];   /* as bound: "HOST:PORT" */
};

static enum MHD_Result metrics_answer(struct MHD_Connection *conn, unsigned status,
                                      const char *type, char *body, size_t len,
                                      enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
    if (!r) {
        if (mode == MHD_RESPMEM_MUST_FREE)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result rv = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return rv;
}

static enum MHD_Result metrics_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                          const char *method, const char *version,
                                          const char *upload_data, size_t *upload_data_size,
                                          void **req_cls)
{
    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)req_cls;
    struct metrics *m = cls;
    metrics_deadline_renew(m->deadline, conn);
    static char not_found[] = "not found: ampd serves " METRICS_PATH ", " METRICS_READY_PATH
                              " and " METRICS_LIVE_PATH "\n";
    static char bad_method[] = "method not allowed: GET " METRICS_PATH "\n";
    static char ready[] = "ready\n", not_ready[] = "not ready: starting or draining\n";
    static char live[] = "live\n";
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return metrics_answer(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", bad_method,
                              strlen(bad_method), MHD_RESPMEM_PERSISTENT);
    if (strcmp(url, METRICS_READY_PATH) == 0) {
        bool is = atomic_load(&m->ready);
        return metrics_answer(conn, is ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE,
                              "text/plain", is ? ready : not_ready,
                              strlen(is ? ready : not_ready), MHD_RESPMEM_PERSISTENT);
    }
    if (strcmp(url, METRICS_LIVE_PATH) == 0)
        return metrics_answer(conn, MHD_HTTP_OK, "text/plain", live, strlen(live),
                              MHD_RESPMEM_PERSISTENT);
    if (strcmp(url, METRICS_PATH) != 0)
        return metrics_answer(conn, MHD_HTTP_NOT_FOUND, "text/plain", not_found,
                              strlen(not_found), MHD_RESPMEM_PERSISTENT);
    size_t len;
    struct metrics_sources src = m->src;
    src.sched = atomic_load(&m->sched);
    char *page = metrics_render(&src, &len);
    if (!page)
        return MHD_NO;   /* out of memory: MHD closes the connection */
    return metrics_answer(conn, MHD_HTTP_OK, METRICS_CONTENT_TYPE, page, len,
                          MHD_RESPMEM_MUST_FREE);
}

/* The bound address as text, and whether it is loopback (127/8, ::1, or
 * 127/8 mapped into IPv6). */
static bool metrics_bound(int fd, char *out, size_t outlen)
{
    struct sockaddr_storage sa;
    socklen_t salen = sizeof sa;
    char host[INET6_ADDRSTRLEN] = "?";
    if (getsockname(fd, (struct sockaddr *)&sa, &salen) != 0) {
        snprintf(out, outlen, "?");
        return false;
    }
    if (sa.ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        snprintf(out, outlen, "%s:%u", host, ntohs(in->sin_port));
        return (ntohl(in->sin_addr.s_addr) >> 24) == IN_LOOPBACKNET;
    }
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&sa;
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    snprintf(out, outlen, "[%s]:%u", host, ntohs(in6->sin6_port));
    return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)
           || (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == IN_LOOPBACKNET);
}

int metrics_start(const char *text, bool allow_remote, const struct metrics_sources *src,
                  struct metrics **out, char *err, size_t errlen)
{
    struct address addr;
    char why[ADDRESS_ERROR_MAX];
    int fd = -1;
    if (address_parse(text, &addr, why, sizeof why) == 0 && addr.kind != ADDRESS_TCP)
        snprintf(why, sizeof why, "want HOST:PORT");
    else if (addr.kind == ADDRESS_TCP && listen_tcp_fd(&addr, &fd, why, sizeof why) == 0)
        why[0] = '\0';
    if (why[0]) {
        snprintf(err, errlen, "--metrics-listen %s: %s", text, why);
        return -1;
    }
    struct metrics *m = calloc(1, sizeof(*m));
    if (!m) {
        close(fd);
        snprintf(err, errlen, "--metrics-listen %s: out of memory", text);
        return -1;
    }
    if (!metrics_bound(fd, m->address, sizeof m->address) && !allow_remote) {
        snprintf(err, errlen, "--metrics-listen %s: %s is not a loopback address; "
                              "--metrics-allow-remote on serves metrics to other hosts",
                 text, m->address);
        close(fd);
        free(m);
        return -1;
    }
    m->src = *src;
    atomic_init(&m->sched, src->sched);
    if (metrics_deadline_start(METRICS_DEADLINE_S * TIME_MS_PER_S, &m->deadline) != 0) {
        snprintf(err, errlen, "--metrics-listen %s: cannot start its deadline thread", text);
        close(fd);
        free(m);
        return -1;
    }
    m->mhd = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD, 0, NULL, NULL, metrics_on_request, m,
                              MHD_OPTION_LISTEN_SOCKET, fd,
                              MHD_OPTION_CONNECTION_LIMIT, (unsigned)METRICS_MAX_CONNECTIONS,
                              MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                              (unsigned)METRICS_MAX_ADDRESS_CONNECTIONS,
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)METRICS_DEADLINE_S,
                              MHD_OPTION_NOTIFY_CONNECTION, metrics_deadline_notify, m->deadline,
                              MHD_OPTION_END);
    if (!m->mhd) {
        snprintf(err, errlen, "--metrics-listen %s: libmicrohttpd did not start", text);
        metrics_deadline_stop(m->deadline);
        close(fd);
        free(m);
        return -1;
    }
    *out = m;
    return 0;
}

const char *metrics_address(const struct metrics *m)
{
    return m->address;
}

void metrics_set_sched(struct metrics *m, struct sched *sched)
{
    if (m)
        atomic_store(&m->sched, sched);
}

void metrics_set_ready(struct metrics *m, bool ready)
{
    if (m)
        atomic_store(&m->ready, ready);
}

void metrics_stop(struct metrics *m)
{
    if (!m)
        return;
    /* MHD closes the listening socket it was given. */
    MHD_stop_daemon(m->mhd);
    metrics_deadline_stop(m->deadline);   /* after: MHD has closed every connection */
    free(m);
}
