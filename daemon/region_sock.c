/* SPDX-License-Identifier: MIT */
/* region_sock.c: the region socket's listener and connections (region_sock.h).
 *
 * Plain non-blocking sockets under uv_poll, since libuv's streams read with
 * read() and would lose the descriptors. A connection reads a request line
 * at a time (with the descriptors that came with it), answers it, and stops
 * reading while an answer waits to be written, so a client that does not
 * read its answers holds one buffer, not more.
 */
#define _GNU_SOURCE  /* struct ucred, SO_PEERCRED, MSG_CMSG_CLOEXEC */
#include "region_sock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd_reserve.h"

#define REGION_SOCK_LINE_MAX 128     /* a request line, newline included */
#define REGION_SOCK_OUT_MAX 512      /* answers waiting to be written */
#define REGION_SOCK_FDS_MAX 4        /* descriptors held for lines not yet read */
/* The same, over every connection of one uid: without it each of its
 * --max-peer-connections held REGION_SOCK_FDS_MAX (issue 33 item 3). */
#define REGION_SOCK_PEER_FDS_MAX 8
#define REGION_SOCK_ACCEPT_BURST 64  /* accepts, then let the loop run */
#define REGION_SOCK_RETRY_MS 100     /* out of descriptors: accept again after this */

struct region_conn {
    struct region_listener *l;
    struct region_conn *prev, *next;
    uv_poll_t poll;
    int fd;
    uid_t uid;
    struct region_client *client;    /* NULL for a connection refused at accept */
    char in[REGION_SOCK_LINE_MAX];
    size_t in_len;
    int fds[REGION_SOCK_FDS_MAX];    /* received, not yet taken by a REGISTER */
    size_t nfds;
    char out[REGION_SOCK_OUT_MAX];
    size_t out_len;
    bool closing;                    /* close once out is written */
};

struct region_listener {
    uv_poll_t poll;
    uv_timer_t retry;              /* accepting paused, out of descriptors */
    int handles_open;              /* poll and retry, while they close */
    int fd;
    char path[ADDRESS_PATH_MAX];   /* removed on close; "": a passed socket's, not ours */
    struct region_set *set;
    struct region_sock_limits limits;
    struct region_conn *head;
    uint32_t count;
    bool closed;
};

static void region_conn_update(struct region_conn *c);

/* --- closing -------------------------------------------------------------- */

static void region_conn_drop_fds(struct region_conn *c)
{
    for (size_t i = 0; i < c->nfds; i++)
        close(c->fds[i]);
    c->nfds = 0;
}

static void region_conn_on_closed(uv_handle_t *h)
{
    struct region_conn *c = h->data;
    close(c->fd);
    free(c);
}

static void region_conn_close(struct region_conn *c)
{
    struct region_listener *l = c->l;
    region_conn_drop_fds(c);
    region_client_free(c->client);   /* its regions end */
    if (c->prev)
        c->prev->next = c->next;
    else
        l->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    l->count--;
    uv_close((uv_handle_t *)&c->poll, region_conn_on_closed);
}

/* --- answers -------------------------------------------------------------- */

static void region_conn_answer(struct region_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void region_conn_answer(struct region_conn *c, const char *fmt, ...)
{
    char line[REGION_SOCK_OUT_MAX / 2];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = (int)sizeof line - 2;
    for (int i = 0; i < n; i++)    /* one answer is one line */
        if (line[i] == '\n')
            line[i] = ' ';
    line[n++] = '\n';
    /* Reading stops while anything is unwritten, so there is room. */
    if (c->out_len + (size_t)n <= sizeof c->out) {
        memcpy(c->out + c->out_len, line, (size_t)n);
        c->out_len += (size_t)n;
    }
}

static void region_conn_error(struct region_conn *c, enum status_code code, const char *msg)
{
    region_conn_answer(c, "ERROR %s %s", status_name(code), msg);
}

/* Writes what the socket takes; false when the connection failed. */
static bool region_conn_write(struct region_conn *c)
{
    while (c->out_len) {
        ssize_t n = send(c->fd, c->out, c->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        memmove(c->out, c->out + n, c->out_len - (size_t)n);
        c->out_len -= (size_t)n;
    }
    return true;
}

/* --- requests ------------------------------------------------------------- */

static void region_conn_register(struct region_conn *c)
{
    if (c->nfds != 1) {
        region_conn_error(c, STATUS_INVALID_ARGUMENT,
                          c->nfds ? "REGISTER takes exactly one descriptor, got more"
                                  : "REGISTER needs a memfd attached (SCM_RIGHTS)");
        region_conn_drop_fds(c);
        return;
    }
    int fd = c->fds[0];
    c->nfds = 0;
    uint64_t id, size;
    char err[STATUS_MSG_MAX];
    enum status_code code = region_register(c->client, fd, &id, &size, err, sizeof err);
    if (code != STATUS_OK)
        region_conn_error(c, code, err);
    else
        region_conn_answer(c, "OK %" PRIu64 " %" PRIu64, id, size);
}

static void region_conn_release(struct region_conn *c, const char *arg)
{
    char *end;
    errno = 0;
    uint64_t id = strtoull(arg, &end, 10);
    if (arg[0] < '0' || arg[0] > '9' || *end || errno) {
        region_conn_error(c, STATUS_INVALID_ARGUMENT, "RELEASE wants a region id");
        return;
    }
    char err[STATUS_MSG_MAX];
    enum status_code code = region_release(c->client, id, err, sizeof err);
    if (code != STATUS_OK)
        region_conn_error(c, code, err);
    else
        region_conn_answer(c, "OK %" PRIu64, id);
}

static void region_conn_line(struct region_conn *c, char *line)
{
    if (strcmp(line, "REGISTER") == 0) {
        region_conn_register(c);
        return;
    }
    if (strncmp(line, "RELEASE ", 8) == 0)
        region_conn_release(c, line + 8);
    else
        region_conn_error(c, STATUS_INVALID_ARGUMENT, "unknown request: REGISTER or RELEASE <id>");
    /* Descriptors belong to REGISTER lines only. */
    region_conn_drop_fds(c);
}

/* Answers the complete lines in c->in, up to the first answer that could
 * not be written at once (the rest wait for it). */
static void region_conn_lines(struct region_conn *c)
{
    while (!c->out_len && !c->closing) {
        char *nl = memchr(c->in, '\n', c->in_len);
        if (!nl) {
            if (c->in_len == sizeof c->in) {
                region_conn_error(c, STATUS_INVALID_ARGUMENT, "request line too long");
                c->closing = true;
            }
            return;
        }
        *nl = '\0';
        size_t used = (size_t)(nl - c->in) + 1;
        if (nl > c->in && nl[-1] == '\r')
            nl[-1] = '\0';
        region_conn_line(c, c->in);
        memmove(c->in, c->in + used, c->in_len - used);
        c->in_len -= used;
        if (!region_conn_write(c)) {
            c->closing = true;
            c->out_len = 0;
        }
    }
}

/* Descriptors waiting for their lines on uid's connections. */
static size_t region_conn_peer_fds(const struct region_listener *l, uid_t uid)
{
    size_t n = 0;
    for (const struct region_conn *c = l->head; c; c = c->next)
        n += c->uid == uid ? c->nfds : 0;
    return n;
}

/* Keeps a descriptor that came with c's bytes, or closes it and says why
 * not (in err; the connection ends after the answer). */
static void region_conn_keep_fd(struct region_conn *c, int fd, char *err, size_t errlen)
{
    if (err[0]) {
        close(fd);
        return;
    }
    if (c->nfds >= REGION_SOCK_FDS_MAX)
        snprintf(err, errlen, "too many descriptors at once");
    else if (region_conn_peer_fds(c->l, c->uid) >= REGION_SOCK_PEER_FDS_MAX)
        snprintf(err, errlen, "uid %u has %d descriptors waiting for their lines already",
                 (unsigned)c->uid, REGION_SOCK_PEER_FDS_MAX);
    else if (!fd_reserve_admit(fd))
        snprintf(err, errlen, "the daemon is out of descriptors for clients (%ld of its limit "
                              "%ld open)", fd_reserve_threshold(), fd_reserve_limit());
    if (err[0])
        close(fd);
    else
        c->fds[c->nfds++] = fd;
}

/* Reads what is there, with its descriptors; false at EOF or failure. */
static bool region_conn_read(struct region_conn *c)
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * REGION_SOCK_FDS_MAX)];
    } ctl;
    struct iovec iov = { c->in + c->in_len, sizeof c->in - c->in_len };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                        .msg_controllen = sizeof ctl.buf };
    ssize_t n = recvmsg(c->fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    char err[STATUS_MSG_MAX] = "";
    enum status_code code = STATUS_RESOURCE_EXHAUSTED;
    if (m.msg_flags & MSG_CTRUNC) {   /* the kernel dropped some: too many, or none left */
        snprintf(err, sizeof err, "too many descriptors at once");
        code = STATUS_INVALID_ARGUMENT;
    }
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
        if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof fd);
            bool first_refusal = !err[0];
            region_conn_keep_fd(c, fd, err, sizeof err);
            if (first_refusal && err[0] && c->nfds >= REGION_SOCK_FDS_MAX)
                code = STATUS_INVALID_ARGUMENT;   /* the protocol's limit, not the daemon's */
        }
    }
    if (err[0]) {
        region_conn_drop_fds(c);
        region_conn_error(c, code, err);
        c->closing = true;
        return true;
    }
    if (n == 0)
        return false;
    c->in_len += (size_t)n;
    return true;
}

static void region_conn_on_poll(uv_poll_t *p, int status, int events)
{
    struct region_conn *c = p->data;
    bool ok = status == 0;
    if (ok && (events & UV_WRITABLE))
        ok = region_conn_write(c);
    if (ok && (events & UV_READABLE) && !c->closing && !c->out_len)
        ok = region_conn_read(c);
    if (ok && c->client)
        region_conn_lines(c);
    if (ok)
        ok = region_conn_write(c);
    if (!ok || (c->closing && !c->out_len)) {
        region_conn_close(c);
        return;
    }
    region_conn_update(c);
}

/* Read while nothing waits to be written; else wait until it can be. */
static void region_conn_update(struct region_conn *c)
{
    uv_poll_start(&c->poll, c->out_len ? UV_WRITABLE : UV_READABLE, region_conn_on_poll);
}

/* --- listener ------------------------------------------------------------- */

static uint32_t region_listen_peer_count(const struct region_listener *l, uid_t uid)
{
    uint32_t n = 0;
    for (const struct region_conn *c = l->head; c; c = c->next)
        n += c->uid == uid && c->client;
    return n;
}

static void region_listen_accept(struct region_listener *l, int fd)
{
    struct region_conn *c = calloc(1, sizeof(*c));
    if (!c || uv_poll_init(l->poll.loop, &c->poll, fd) != 0) {
        free(c);
        close(fd);
        return;
    }
    c->l = l;
    c->fd = fd;
    c->poll.data = c;
    c->next = l->head;
    if (l->head)
        l->head->prev = c;
    l->head = c;
    l->count++;
    struct ucred cred;
    socklen_t len = sizeof cred;
    char err[STATUS_MSG_MAX] = "";
    if (!fd_reserve_admit(fd))
        snprintf(err, sizeof err, "the daemon is out of descriptors for clients (%ld of its "
                                  "limit %ld open)", fd_reserve_threshold(), fd_reserve_limit());
    else if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        snprintf(err, sizeof err, "cannot tell who is calling (SO_PEERCRED)");
    else if (l->count > l->limits.max_connections)
        snprintf(err, sizeof err, "--max-connections (%" PRIu32 ") reached",
                 l->limits.max_connections);
    else if (region_listen_peer_count(l, cred.uid) >= l->limits.max_peer_connections)
        snprintf(err, sizeof err, "--max-peer-connections (%" PRIu32 ") reached for uid %u",
                 l->limits.max_peer_connections, (unsigned)cred.uid);
    c->uid = cred.uid;
    if (!err[0] && !(c->client = region_client_new(l->set, cred.uid)))
        snprintf(err, sizeof err, "out of memory");
    if (err[0]) {
        region_conn_error(c, STATUS_RESOURCE_EXHAUSTED, err);
        c->closing = true;
        if (!region_conn_write(c))
            c->out_len = 0;
        if (!c->out_len) {
            region_conn_close(c);
            return;
        }
    }
    region_conn_update(c);
}

static void region_listen_on_poll(uv_poll_t *p, int status, int events);

static void region_listen_on_retry(uv_timer_t *t)
{
    struct region_listener *l = t->data;
    uv_poll_start(&l->poll, UV_READABLE, region_listen_on_poll);
}

static void region_listen_on_poll(uv_poll_t *p, int status, int events)
{
    struct region_listener *l = p->data;
    if (status != 0 || !(events & UV_READABLE))
        return;
    for (int i = 0; i < REGION_SOCK_ACCEPT_BURST; i++) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            region_listen_accept(l, fd);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            /* EMFILE and the like: the listener stays readable, so polling
             * on would spin; the connections wait in the backlog. */
            uv_poll_stop(&l->poll);
            uv_timer_start(&l->retry, region_listen_on_retry, REGION_SOCK_RETRY_MS, 0);
        }
        return;
    }
}

int region_listen_adopt(uv_loop_t *loop, int fd, struct region_set *set,
                        const struct region_sock_limits *limits, struct region_listener **out,
                        char *err, size_t errlen)
{
    struct region_listener *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(err, errlen, "out of memory");
        close(fd);
        return -1;
    }
    l->fd = fd;
    l->set = set;
    l->limits = *limits;
    l->poll.data = l;
    if (uv_poll_init(loop, &l->poll, l->fd) != 0) {
        snprintf(err, errlen, "cannot poll the region socket");
        close(l->fd);
        free(l);
        return -1;
    }
    l->retry.data = l;
    uv_timer_init(loop, &l->retry);
    if (uv_poll_start(&l->poll, UV_READABLE, region_listen_on_poll) != 0) {
        snprintf(err, errlen, "cannot poll the region socket");
        l->path[0] = '\0';
        region_listen_close(l);   /* closes l->fd once the handles are closed */
        return -1;
    }
    *out = l;
    return 0;
}

int region_listen(uv_loop_t *loop, const char *path, const struct listen_unix_access *access,
                  struct region_set *set, const struct region_sock_limits *limits,
                  struct region_listener **out, char *err, size_t errlen)
{
    int fd;
    if (listen_unix_fd(path, access, &fd, err, errlen) != 0)
        return -1;
    if (region_listen_adopt(loop, fd, set, limits, out, err, errlen) != 0) {
        unlink(path);
        return -1;
    }
    snprintf((*out)->path, sizeof (*out)->path, "%s", path);
    return 0;
}

static void region_listen_on_closed(uv_handle_t *h)
{
    struct region_listener *l = h->data;
    if (--l->handles_open)
        return;
    close(l->fd);
    free(l);
}

void region_listen_close(struct region_listener *l)
{
    while (l->head)
        region_conn_close(l->head);
    if (l->path[0])
        unlink(l->path);
    l->handles_open = 2;
    uv_close((uv_handle_t *)&l->poll, region_listen_on_closed);
    uv_close((uv_handle_t *)&l->retry, region_listen_on_closed);
}
