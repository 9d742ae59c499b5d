/* SPDX-License-Identifier: MIT */
/* region.c: shared-memory regions (amp_region_*, amp_run_region).
 *
 * A region is a memfd sealed against shrinking and growing, mapped here
 * and handed to the daemon on its region socket (the Unix socket's path
 * plus ".regions", docs/regions.md): "REGISTER\n" with the descriptor
 * attached, answered "OK <id> <size>\n". Jobs then name the region by id
 * in the unary Pipeline call. The region socket is opened on a
 * connection's first region and shared, counted, by the connection and its
 * regions (struct region_link), so amp_close() does not pull regions from
 * under a program still using them. Besides conn.c, this is the only file
 * with socket I/O: the region socket's.
 */
#define _GNU_SOURCE  /* memfd_create, F_ADD_SEALS */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "abi.h"
#include "amp.pb-c.h"
#include "conn.h"
#include "error.h"
#include "jobs.h"
#include "steps.h"

#define REGION_ANSWER_MAX 256
#define REGION_ANSWER_TIMEOUT_MS 10000   /* the daemon answers at once; a bound for a stuck one */

struct region_link {
    int fd;        /* the region socket, blocking */
    int refs;      /* the connection's, and one per region */
};

struct amp_region {
    struct region_link *link;
    uint64_t id;
    uint8_t *map;
    size_t size;
};

void region_link_put(struct region_link *l)
{
    if (!l || --l->refs > 0)
        return;
    close(l->fd);
    free(l);
}

/* The connection's region socket, connected on first use. */
static int region_link_get(amp_conn *c, struct region_link **out)
{
    if (c->regions) {
        *out = c->regions;
        return 0;
    }
    if (!c->region_path[0])
        return conn_fail(c, AMP_EUNIMPL,
                         "regions need a connection to the daemon's Unix socket");
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    memcpy(sa.sun_path, c->region_path, strlen(c->region_path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return conn_fail(c, AMP_ECONNECT, "socket: %s", strerror(errno));
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        close(fd);
        if (e == ENOENT || e == ECONNREFUSED)
            return conn_fail(c, AMP_EUNIMPL, "no region socket at %s (the daemon runs with "
                             "--regions off?): %s", c->region_path, strerror(e));
        return conn_fail(c, AMP_ECONNECT, "connect to %s: %s", c->region_path, strerror(e));
    }
    struct region_link *l = malloc(sizeof *l);
    if (!l) {
        close(fd);
        return conn_fail(c, AMP_ENOMEM, "out of memory");
    }
    l->fd = fd;
    l->refs = 1;
    c->regions = l;
    *out = l;
    return 0;
}

/* The error code for a status name in an ERROR answer. */
static int region_status_code(const char *name, size_t len)
{
    for (int code = 0; code < AMP_STATUS_CODES; code++) {
        const char *n = amp_status_code_name(code);
        if (strlen(n) == len && strncmp(n, name, len) == 0)
            return error_from_grpc(code);
    }
    return AMP_EPROTO;
}

static const char region_too_long[] = "answer too long";

/* Reads one answer line from fd into ans (newline replaced by NUL), a
 * byte at a time so as never to read past it. Returns NULL, or why not. */
static const char *region_read_line(int fd, char *ans, size_t cap)
{
    size_t n = 0;
    while (n == 0 || ans[n - 1] != '\n') {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, REGION_ANSWER_TIMEOUT_MS) <= 0)
            return "no answer";
        ssize_t k = recv(fd, ans + n, 1, 0);
        if (k <= 0)
            return k == 0 ? "the daemon closed it" : strerror(errno);
        if (++n == cap)
            return region_too_long;
    }
    ans[n - 1] = '\0';
    return NULL;
}

/* Sends line (with fd attached unless -1) and reads the one-line answer.
 * Returns 0 with the answer's words after "OK " in ok, or an AMP_E* code
 * with the daemon's message on c. */
static int region_ask(amp_conn *c, struct region_link *l, const char *line, int fd, char *ok,
                      size_t oklen)
{
    struct iovec iov = { (void *)line, strlen(line) };
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
    if (fd >= 0) {
        memset(&ctl, 0, sizeof ctl);
        m.msg_control = ctl.buf;
        m.msg_controllen = sizeof ctl.buf;
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(h), &fd, sizeof fd);
    }
    if (sendmsg(l->fd, &m, MSG_NOSIGNAL) != (ssize_t)iov.iov_len)
        return conn_fail(c, AMP_EIO, "region socket: send: %s", strerror(errno));
    char ans[REGION_ANSWER_MAX];
    const char *why = region_read_line(l->fd, ans, sizeof ans);
    if (why)
        return conn_fail(c, why == region_too_long ? AMP_EPROTO : AMP_EIO,
                         "region socket: %s", why);
    if (strncmp(ans, "OK ", 3) == 0) {
        snprintf(ok, oklen, "%s", ans + 3);
        return 0;
    }
    if (strncmp(ans, "ERROR ", 6) == 0) {
        const char *name = ans + 6, *sp = strchr(name, ' ');
        size_t len = sp ? (size_t)(sp - name) : strlen(name);
        return conn_fail(c, region_status_code(name, len), "%s", sp ? sp + 1 : name);
    }
    return conn_fail(c, AMP_EPROTO, "region socket: unexpected answer \"%.80s\"", ans);
}

/* A zero-filled memfd of size bytes, sealed so that its size never changes. */
static int region_memfd(amp_conn *c, size_t size, int *out)
{
    int fd = memfd_create("amp_region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return conn_fail(c, AMP_ENOMEM, "memfd_create: %s", strerror(errno));
    if (ftruncate(fd, (off_t)size) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        int e = errno;
        close(fd);
        return conn_fail(c, AMP_ENOMEM, "memfd of %zu bytes: %s", size, strerror(e));
    }
    *out = fd;
    return 0;
}

int amp_region_create(amp_conn *c, size_t size, amp_region **out)
{
    if (!c)
        return AMP_EINVAL;
    conn_begin(c);
    if (!out)
        return conn_fail(c, AMP_EINVAL, "out must not be NULL");
    *out = NULL;
    if (size == 0)
        return conn_fail(c, AMP_EINVAL, "size must be at least 1");
    struct region_link *l = NULL;
    int fd = -1, rc = region_link_get(c, &l);
    if (rc != 0 || (rc = region_memfd(c, size, &fd)) != 0)
        return rc;
    amp_region *r = calloc(1, sizeof *r);
    if (!r) {
        close(fd);
        return conn_fail(c, AMP_ENOMEM, "out of memory");
    }
    r->size = size;
    r->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    char ok[REGION_ANSWER_MAX];
    if (r->map == MAP_FAILED)
        rc = conn_fail(c, AMP_ENOMEM, "mmap of %zu bytes: %s", size, strerror(errno));
    else
        rc = region_ask(c, l, "REGISTER\n", fd, ok, sizeof ok);
    close(fd);   /* both mappings keep the memory */
    if (rc == 0 && sscanf(ok, "%" SCNu64, &r->id) != 1)
        rc = conn_fail(c, AMP_EPROTO, "region socket: bad answer \"%.80s\"", ok);
    if (rc != 0) {
        if (r->map != MAP_FAILED)
            munmap(r->map, size);
        free(r);
        return rc;
    }
    r->link = l;
    l->refs++;
    *out = r;
    return 0;
}

void *amp_region_data(const amp_region *r)
{
    return r ? r->map : NULL;
}

size_t amp_region_size(const amp_region *r)
{
    return r ? r->size : 0;
}

void amp_region_release(amp_region *r)
{
    if (!r)
        return;
    /* If the socket is gone the daemon has ended the registration already. */
    char line[64];
    snprintf(line, sizeof line, "RELEASE %" PRIu64 "\n", r->id);
    if (send(r->link->fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT) > 0) {
        /* Read its answer so that the next request's answer is the next line. */
        char ans[REGION_ANSWER_MAX];
        region_read_line(r->link->fd, ans, sizeof ans);
    }
    munmap(r->map, r->size);
    region_link_put(r->link);
    free(r);
}

/* --- jobs over regions ------------------------------------------------------- */

static int region_slice(amp_conn *c, const char *what, const amp_slice *s,
                        Amp__V1__RegionSlice *pb)
{
    if (!s)
        return 0;
    if (abi_check_size(c, what, s->size, ABI_SLICE_MIN) != 0)
        return -1;
    if (!s->region)
        return 0;
    if (s->offset > s->region->size || s->length > s->region->size - s->offset)
        return conn_fail(c, AMP_EINVAL,
                         "%s: offset %" PRIu64 " + length %" PRIu64 " is past the region's end "
                         "(%zu bytes)", what, s->offset, s->length, s->region->size);
    amp__v1__region_slice__init(pb);
    pb->region = s->region->id;
    pb->offset = s->offset;
    pb->length = s->length;
    return 1;
}

/* amp_run_region's checks, and its request's slices (in *in_pb and
 * *out_pb, which req points at). */
static int region_req(amp_conn *c, const amp_opts *o, const amp_step *steps, size_t nsteps,
                      const amp_slice *in, const amp_slice *out, Amp__V1__PipelineRequest *req,
                      Amp__V1__RegionSlice *in_pb, Amp__V1__RegionSlice *out_pb)
{
    int rc = jobs_check_opts(c, o);
    if (rc != 0)
        return rc;
    amp__v1__pipeline_request__init(req);
    int has_in = region_slice(c, "in", in, in_pb);
    int has_out = has_in < 0 ? 0 : region_slice(c, "out", out, out_pb);
    if (has_in < 0 || has_out < 0)
        return AMP_EINVAL;
    req->input_region = has_in ? in_pb : NULL;
    req->output_region = has_out ? out_pb : NULL;
    if (steps && nsteps && abi_check_size(c, "steps[0]", steps[0].size, ABI_STEP_MIN) != 0)
        return AMP_EINVAL;
    for (size_t i = 0; i < nsteps && steps && !has_out; i++)
        if (abi_step(steps, i)->kind != AMP_STEP_HISTOGRAM)
            return conn_fail(c, AMP_EINVAL, "steps[%zu] writes data: out must name a region", i);
    return 0;
}

int amp_run_region(amp_conn *c, const amp_opts *o, const amp_step *steps, size_t nsteps,
                   const amp_slice *in, const amp_slice *out, amp_step_result **results)
{
    if (!c)
        return AMP_EINVAL;
    conn_begin(c);
    if (!results)
        return conn_fail(c, AMP_EINVAL, "results must not be NULL");
    *results = NULL;
    Amp__V1__PipelineRequest req;
    Amp__V1__RegionSlice in_pb, out_pb;
    int rc = region_req(c, o, steps, nsteps, in, out, &req, &in_pb, &out_pb);
    return rc != 0 ? rc : pipeline_call(c, o, steps, nsteps, &req, results);
}

int amp_start_region(amp_conn *c, const amp_opts *o, const amp_step *steps, size_t nsteps,
                     const amp_slice *in, const amp_slice *out, amp_call **call)
{
    if (!c || !call)
        return AMP_EINVAL;
    conn_begin(c);
    *call = NULL;
    Amp__V1__PipelineRequest req;
    Amp__V1__RegionSlice in_pb, out_pb;
    int rc = region_req(c, o, steps, nsteps, in, out, &req, &in_pb, &out_pb);
    return rc != 0 ? rc : pipeline_start(c, o, steps, nsteps, &req, call);
}
