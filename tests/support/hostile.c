/* SPDX-License-Identifier: MIT */
/* hostile.c: sockets, frames, memory and probes for the hostile-client
 * tests (see hostile.h). */
#define _GNU_SOURCE
#include "hostile.h"
#include "amp_wire.h"

#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HOSTILE_PROBE_BYTES 4096
#define HOSTILE_PROBE_TIMEOUT_MS 10000
#define HOSTILE_POLL_MS 50
#define HOSTILE_FRAME_HEADER 9
#define HOSTILE_WARM_STREAM_BYTES (8u * 1024 * 1024)

const uint8_t hostile_preface[24] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

long long hostile_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void hostile_sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* --- memory ------------------------------------------------------------- */

long hostile_rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

long hostile_rss_settle_kb(pid_t pid, long bound_kb, int timeout_ms)
{
    long long deadline = hostile_now_ms() + timeout_ms;
    long kb = hostile_rss_kb(pid);
    while (kb > bound_kb && hostile_now_ms() < deadline) {
        hostile_sleep_ms(HOSTILE_POLL_MS * 2);
        kb = hostile_rss_kb(pid);
    }
    return kb;
}

void hostile_assert_rss_back(const struct daemon_proc *d, long baseline_kb)
{
    long bound = baseline_kb + HOSTILE_RSS_SLACK_KB;
    long kb = hostile_rss_settle_kb(d->pid, bound, HOSTILE_SETTLE_MS);
    ck_assert_msg(kb >= 0 && kb <= bound, "ampd VmRSS %ld KiB, baseline %ld KiB (bound %ld)", kb,
                  baseline_kb, bound);
}

/* The daemon inherits this environment. ASan keeps freed blocks in a
 * 256 MiB quarantine, made small so that memory the daemon frees leaves
 * VmRSS. glibc's heap is not tuned here: the daemon gives freed memory
 * back itself once quiet (daemon/heap_trim.c), and the tests check that. */
static void hostile_env(void)
{
    const char *asan = getenv("ASAN_OPTIONS");
    if (!asan || !strstr(asan, "quarantine_size_mb")) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s%squarantine_size_mb=4", asan ? asan : "",
                 asan && *asan ? ":" : "");
        setenv("ASAN_OPTIONS", buf, 1);
    }
}

long hostile_start(struct daemon_proc *d, const char *const *args)
{
    hostile_env();
    ck_assert_msg(daemon_start(d, args) == 0, "ampd did not start");
    hostile_assert_served(d->address);
    long kb = hostile_rss_kb(d->pid);
    ck_assert_int_gt(kb, 0);
    return kb;
}

static long hostile_zeros(void *ctx, void *buf, size_t cap)
{
    size_t *left = ctx;
    size_t n = *left < cap ? *left : cap;
    memset(buf, 0, n);
    *left -= n;
    return (long)n;
}

long hostile_warm(const struct daemon_proc *d, uint64_t fill_count, int fills, bool stream)
{
    amp_conn *c;
    ck_assert_int_eq(amp_connect(d->address, &c), 0);
    amp_opts o = { .size = sizeof(amp_opts), .device = NULL, .timeout_ms = HOSTILE_IO_MS };
    for (int i = 0; i < fills; i++) {
        amp_fill_params fp = { .type = AMP_TYPE_INT32, .count = fill_count };
        void *out = NULL;
        size_t len;
        int rc = amp_fill(c, &o, &fp, &out, &len);
        ck_assert_msg(rc == 0, "warm-up fill: %s: %s", amp_strerror(rc), amp_last_message(c));
        amp_free(out);
    }
    if (stream) {
        amp_step step = { .size = sizeof(amp_step), .kind = AMP_STEP_TRANSFORM,
                          .transform = { .op = AMP_OP_XOR, .value = 1 } };
        size_t left = HOSTILE_WARM_STREAM_BYTES;
        int rc = amp_stream(c, &o, &step, 1, HOSTILE_WARM_STREAM_BYTES, hostile_zeros, &left, NULL,
                            NULL, NULL, 0);
        ck_assert_msg(rc == 0, "warm-up stream: %s: %s", amp_strerror(rc), amp_last_message(c));
    }
    amp_close(c);
    long kb = hostile_rss_kb(d->pid);
    ck_assert_int_gt(kb, 0);
    return kb;
}

/* --- calls ---------------------------------------------------------------- */

int hostile_probe(const char *address, char *why, size_t whylen)
{
    amp_conn *c;
    int rc = amp_connect(address, &c);
    if (rc != 0) {
        snprintf(why, whylen, "connect: %s", amp_last_message(NULL));
        return rc;
    }
    uint8_t in[HOSTILE_PROBE_BYTES];
    for (size_t i = 0; i < sizeof in; i++)
        in[i] = (uint8_t)(i * 7 + 3);
    amp_opts o = { .size = sizeof(amp_opts), .device = NULL,
                   .timeout_ms = HOSTILE_PROBE_TIMEOUT_MS };
    void *out = NULL;
    size_t out_len = 0;
    rc = amp_reverse(c, &o, in, sizeof in, &out, &out_len);
    if (rc != 0) {
        snprintf(why, whylen, "%s", amp_last_message(c));
    } else if (out_len != sizeof in) {
        snprintf(why, whylen, "reply of %zu bytes", out_len);
        rc = AMP_EPROTO;
    } else {
        for (size_t i = 0; i < sizeof in; i++)
            if (((uint8_t *)out)[i] != in[sizeof in - 1 - i]) {
                snprintf(why, whylen, "reply differs at byte %zu", i);
                rc = AMP_EPROTO;
                break;
            }
    }
    amp_free(out);
    amp_close(c);
    return rc;
}

void hostile_assert_served(const char *address)
{
    char why[512] = "";
    int rc = hostile_probe(address, why, sizeof why);
    ck_assert_msg(rc == 0, "well-behaved call on %s: %s: %s", address, amp_strerror(rc), why);
}

pid_t hostile_other_start(const struct daemon_proc *d, int probes)
{
    if (geteuid() != 0)
        return 0;
    ck_assert_int_eq(chmod(d->dir, 0711), 0);   /* the socket in it is 0666 */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (setgroups(0, NULL) != 0 || setgid(HOSTILE_OTHER_UID) != 0 ||
            setuid(HOSTILE_OTHER_UID) != 0)
            _exit(2);
        char why[512];
        for (int i = 0; i < probes; i++)
            if (hostile_probe(d->address, why, sizeof why) != 0) {
                fprintf(stderr, "uid %d, call %d: %s\n", HOSTILE_OTHER_UID, i, why);
                _exit(1);
            }
        _exit(0);
    }
    return pid;
}

/* Counts pid's descriptors; with show, prints what each one is. */
static long hostile_fds(pid_t pid, bool show)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *dir = opendir(path);
    if (!dir)
        return -1;
    long n = 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        n++;
        char link[PATH_MAX + 64], to[PATH_MAX] = "?";
        snprintf(link, sizeof link, "%s/%s", path, e->d_name);
        ssize_t len = show ? readlink(link, to, sizeof to - 1) : -1;
        if (len >= 0) {
            to[len] = '\0';
            fprintf(stderr, "ampd fd %s: %s\n", e->d_name, to);
        }
    }
    closedir(dir);
    return n;
}

long hostile_fd_count(pid_t pid)
{
    return hostile_fds(pid, false);
}

void hostile_assert_fds_back(const struct daemon_proc *d, long baseline)
{
    long long deadline = hostile_now_ms() + HOSTILE_SETTLE_MS;
    long n = hostile_fd_count(d->pid);
    while (n > baseline && hostile_now_ms() < deadline) {
        hostile_sleep_ms(HOSTILE_POLL_MS);
        n = hostile_fd_count(d->pid);
    }
    if (n > baseline)
        hostile_fds(d->pid, true);
    ck_assert_msg(n >= 0 && n <= baseline, "ampd has %ld descriptors open, %ld before", n,
                  baseline);
}

void hostile_other_assert_served(pid_t pid)
{
    if (pid == 0)
        return;
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the client of uid %d was not served (status %#x)", HOSTILE_OTHER_UID, status);
}

int hostile_status(const char *address, amp_daemon_status *st)
{
    amp_conn *c;
    int rc = amp_connect(address, &c);
    if (rc != 0)
        return rc;
    amp_opts o = { .size = sizeof(amp_opts), .device = NULL,
                   .timeout_ms = HOSTILE_PROBE_TIMEOUT_MS };
    rc = amp_status(c, &o, st);
    amp_close(c);
    return rc;
}

bool hostile_wait_quiet(const char *address, uint32_t connections, int timeout_ms)
{
    long long deadline = hostile_now_ms() + timeout_ms;
    do {
        amp_daemon_status st = { .size = sizeof st };
        if (hostile_status(address, &st) == 0 && st.connections <= connections
            && st.jobs_in_flight == 0 && st.held_bytes == 0)
            return true;
        hostile_sleep_ms(HOSTILE_POLL_MS);
    } while (hostile_now_ms() < deadline);
    return false;
}

/* --- sockets -------------------------------------------------------------- */

int hostile_connect_unix(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int hostile_connect_tcp(const char *src, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (src) {
        struct sockaddr_in from = { .sin_family = AF_INET };
        if (inet_pton(AF_INET, src, &from.sin_addr) != 1
            || bind(fd, (struct sockaddr *)&from, sizeof from) != 0) {
            int e = errno;
            close(fd);
            errno = e;   /* the caller may say why */
            return -1;
        }
    }
    struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    if (connect(fd, (struct sockaddr *)&to, sizeof to) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Ports the kernel hands out for connect() and port 0 lie in
 * ip_local_port_range (32768-60999 by default): a port taken there and
 * released is soon another test's source port. A random port below that
 * range, free on every address, is not. */
int hostile_free_port(void)
{
    static unsigned seed;
    if (!seed)
        seed = (unsigned)getpid() * 2654435761u ^ (unsigned)time(NULL);
    for (int tries = 0; tries < 1000; tries++) {
        int port = HOSTILE_PORT_LOW + (int)(rand_r(&seed) % (HOSTILE_PORT_HIGH - HOSTILE_PORT_LOW));
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(fd, 0);
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                  .sin_addr.s_addr = htonl(INADDR_ANY) };
        int ok = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
        close(fd);
        if (ok)
            return port;
    }
    ck_abort_msg("no free port in %d-%d", HOSTILE_PORT_LOW, HOSTILE_PORT_HIGH - 1);
    return -1;
}

int hostile_send(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

ssize_t hostile_send_some(int fd, const void *p, size_t n)
{
    for (;;) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w >= 0)
            return w;
        if (errno == EINTR)
            continue;
        return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    }
}

/* --- frames --------------------------------------------------------------- */

size_t hostile_frame(uint8_t *out, uint32_t len, uint8_t type, uint8_t flags, uint32_t stream_id)
{
    out[0] = (uint8_t)(len >> 16);
    out[1] = (uint8_t)(len >> 8);
    out[2] = (uint8_t)len;
    out[3] = type;
    out[4] = flags;
    out[5] = (uint8_t)((stream_id >> 24) & 0x7f);
    out[6] = (uint8_t)(stream_id >> 16);
    out[7] = (uint8_t)(stream_id >> 8);
    out[8] = (uint8_t)stream_id;
    return HOSTILE_FRAME_HEADER;
}

size_t hostile_hello(uint8_t *out)
{
    memcpy(out, hostile_preface, sizeof hostile_preface);
    return sizeof hostile_preface + hostile_frame(out + sizeof hostile_preface, 0,
                                                  HOSTILE_SETTINGS, 0, 0);
}

#define HOSTILE_NV(n, v) { (uint8_t *)(n), (uint8_t *)(v), strlen(n), strlen(v), NGHTTP2_NV_FLAG_NONE }

size_t hostile_request_block(uint8_t *out, size_t cap, const char *path, size_t extra_pad)
{
    char *pad = malloc(extra_pad + 1);
    ck_assert_ptr_nonnull(pad);
    memset(pad, 'p', extra_pad);
    pad[extra_pad] = '\0';
    nghttp2_nv nv[] = {
        HOSTILE_NV(":method", "POST"), HOSTILE_NV(":scheme", "http"),
        HOSTILE_NV(":authority", "localhost"), HOSTILE_NV(":path", path ? path : "/"),
        HOSTILE_NV("content-type", "application/grpc"), HOSTILE_NV("te", "trailers"),
        /* Replies of any size: the tests that leave them unread want big ones. */
        HOSTILE_NV(AMP_WIRE_MAX_REPLY_HEADER, "4294967295"),
        HOSTILE_NV("x-pad", pad),
    };
    size_t nnv = sizeof nv / sizeof nv[0] - (extra_pad ? 0 : 1);
    nghttp2_nv *first = nv;
    if (!path) {
        ck_assert_uint_gt(extra_pad, 0);
        first = &nv[nnv - 1];
        nnv = 1;
    }
    nghttp2_hd_deflater *d;
    ck_assert_int_eq(nghttp2_hd_deflate_new(&d, 0), 0);
    ssize_t n = 0;
    if (nghttp2_hd_deflate_bound(d, first, nnv) <= cap)
        n = nghttp2_hd_deflate_hd(d, out, cap, first, nnv);
    nghttp2_hd_deflate_del(d);
    free(pad);
    return n > 0 ? (size_t)n : 0;
}

/* --- reading what the daemon sends ---------------------------------------- */

void hostile_reader_init(struct hostile_reader *r)
{
    memset(r, 0, sizeof *r);
}

static void hostile_reader_frame(struct hostile_reader *r, const uint8_t *f, uint32_t len)
{
    uint8_t type = f[3], flags = f[4];
    const uint8_t *p = f + HOSTILE_FRAME_HEADER;
    r->frames++;
    if (type == HOSTILE_GOAWAY && len >= 8) {
        r->goaway = true;
        r->goaway_code = ((uint32_t)p[4] << 24) | ((uint32_t)p[5] << 16) | ((uint32_t)p[6] << 8) | p[7];
        size_t dlen = len - 8;
        if (dlen >= sizeof r->goaway_debug)
            dlen = sizeof r->goaway_debug - 1;
        memcpy(r->goaway_debug, p + 8, dlen);
        r->goaway_debug[dlen] = '\0';
    } else if (type == HOSTILE_RST_STREAM) {
        r->rst_streams++;
    } else if (type == HOSTILE_PING && (flags & HOSTILE_FLAG_ACK)) {
        r->ping_acks++;
    }
}

/* Parses every complete frame in r->buf, discarding DATA and anything too
 * big to keep (the tests only look at control frames). */
static void hostile_reader_parse(struct hostile_reader *r, const uint8_t *data, size_t n)
{
    while (n > 0) {
        if (r->skip > 0) {
            size_t k = n < r->skip ? n : r->skip;
            r->skip -= k;
            data += k;
            n -= k;
            continue;
        }
        size_t k = sizeof r->buf - r->len;
        if (k > n)
            k = n;
        memcpy(r->buf + r->len, data, k);
        r->len += k;
        data += k;
        n -= k;
        for (;;) {
            if (r->len < HOSTILE_FRAME_HEADER)
                break;
            uint32_t flen = ((uint32_t)r->buf[0] << 16) | ((uint32_t)r->buf[1] << 8) | r->buf[2];
            size_t total = HOSTILE_FRAME_HEADER + (size_t)flen;
            if (total > sizeof r->buf) {
                r->frames++;
                r->skip = total - r->len;
                r->len = 0;
                break;
            }
            if (r->len < total)
                break;
            hostile_reader_frame(r, r->buf, flen);
            memmove(r->buf, r->buf + total, r->len - total);
            r->len -= total;
        }
    }
}

int hostile_reader_pump(struct hostile_reader *r, int fd, int timeout_ms)
{
    if (r->eof)
        return 1;
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    int pr = poll(&pfd, 1, timeout_ms);
    if (pr <= 0)
        return 0;
    uint8_t buf[1 << 16];
    for (;;) {
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n <= 0) {
            r->eof = true;
            return 1;
        }
        hostile_reader_parse(r, buf, (size_t)n);
    }
}

long hostile_reader_until_eof(struct hostile_reader *r, int fd, int timeout_ms)
{
    long long start = hostile_now_ms(), deadline = start + timeout_ms;
    for (;;) {
        long long left = deadline - hostile_now_ms();
        if (left <= 0)
            return -1;
        if (hostile_reader_pump(r, fd, (int)left) == 1)
            return (long)(hostile_now_ms() - start);
    }
}
