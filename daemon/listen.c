/* SPDX-License-Identifier: MIT */
/* listen.c: listeners and accepted sockets on libuv (see listen.h).
 *
 * A listener is a plain listening socket under a uv_poll handle that
 * accepts with accept4() itself: libuv's own listeners can only accept
 * into a handle of their own loop, and a connection must live on the I/O
 * loop it is handed to. Accepted sockets become uv_stream_t handles on
 * that loop (uv_pipe_open, uv_tcp_open); Unix and TCP are both
 * uv_stream_t underneath, so everything past that is shared. A listen_sock carries its own read buffer (reused for
 * every read; the h2 layer copies what it keeps) and a timer for lingering
 * closes. Handles are freed only in their close callbacks.
 */
#define _GNU_SOURCE  /* struct ucred, SO_PEERCRED */
#include "listen.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "iov_send.h"
#include "loop_wake.h"
#include "sock_reader.h"
#include "sock_writer.h"

#define LISTEN_BACKLOG 511
/* Out of descriptors (or memory) while accepting: stop polling the
 * listener this long, instead of spinning on a backlog it cannot take. */
#define LISTEN_RETRY_MS 100
/* Bytes read at once: about what a peer's write leaves in a Unix socket
 * (its ~208 KiB send buffer), so a 32 MiB request is ~150 reads, not 512.
 * Pages are touched only as far as reads fill them. */
#define LISTEN_READ_BUF (256 * 1024)
_Static_assert(LISTEN_READ_BUF <= LISTEN_TURN_BYTES, "a turn ends within one read of its bytes");
/* A read straight into a call's memory (read_dest: a stream's staging
 * buffer) takes at most this much at once, though the DATA frame would
 * allow up to 1 MiB: on the H100 host 1 GiB transform streams ran 5-11%
 * faster with 128 KiB reads than with reads as large as the frame and the
 * socket's buffer allowed (bench/RESULTS-archive.md, session 11). */
#define LISTEN_READ_DEST_MAX (128 * 1024)
/* After the reader's read, the loop's own next read takes at most this
 * much: the next frame's header and a little of its payload, the rest left
 * to the reader, instead of a buffer's worth copied on the loop. */
#define LISTEN_PEEK_BYTES (16 * 1024)
/* A write of this size or more goes to the socket's writer thread
 * (common/sock_writer.h), whole: a stream's replies, not the small frames
 * of tiny calls, which would only pay a thread hop. */
#define LISTEN_WRITER_MIN (256 * 1024)
_Static_assert(LISTEN_WRITE_IOV <= SOCK_WRITER_IOV, "a write's iovecs fit the writer's");

union listen_handle {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_pipe_t pipe;
    uv_tcp_t tcp;
};

struct listener {
    uv_poll_t poll;            /* readable: connections wait in the backlog */
    uv_timer_t retry;          /* restarts poll after an accept ran out of resources */
    int fd;                    /* the listening socket; closed by listen_close() */
    int handles_open;          /* poll and retry: freed when both are closed */
    char unix_path[ADDRESS_PATH_MAX]; /* removed on close; "": TCP, or a passed socket's */
    struct listen_kind kind;   /* told to the accept callback */
    listen_accept_cb accept;
    void *ctx;
};

struct listen_sock {
    union listen_handle h;
    uv_timer_t linger;         /* bounds a graceful close */
    uv_idle_t resume;          /* restarts reading after a turn's bytes; active while the
                                * turn is over */
    size_t turn_bytes;         /* read in this turn of the loop */
    uv_shutdown_t shutdown;
    uv_write_t write;
    bool writing;              /* a uv_write of the loop's own is in flight */
    struct sock_writer *writer; /* made for the first large write; NULL before */
    bool writer_failed;        /* it could not be made: the loop writes everything */
    struct loop_wake writer_done; /* a writer's write finished (initialised with writer) */
    struct sock_reader *reader; /* made for the first large read; NULL before */
    bool reader_failed;        /* it could not be made: the loop reads everything */
    struct loop_wake reader_done; /* the reader's read ended (initialised with reader) */
    uint8_t *hand;             /* found by alloc for the reader: the read callback hands it */
    size_t hand_len;
    uint8_t *reading;          /* the reader's read in flight (NULL: none): its place */
    size_t reading_len;        /* ... and length */
    bool peek;                 /* the next read into rbuf takes LISTEN_PEEK_BYTES at most */
    uint8_t *held;             /* a settled read's bytes (listen_sock_read_settle), for the */
    size_t held_len;           /* next turn, */
    bool held_end;             /* then the peer's close or the socket's failure */
    bool closing;              /* listen_sock_close() was called: no read()/eof() */
    bool shutdown_pending;     /* shut down the write side once the write completes */
    int handles_open;          /* h, linger, resume and the wakes: freed when all are closed */
    const struct listen_sock_cbs *cbs;
    void *ctx;
    uint8_t rbuf[LISTEN_READ_BUF];
};

/* --- accepted sockets ----------------------------------------------------- */

static void listen_sock_handle_closed(uv_handle_t *h)
{
    struct listen_sock *s = h->data;
    if (--s->handles_open > 0)
        return;
    if (s->cbs && s->cbs->closed)
        s->cbs->closed(s->ctx);
    free(s);
}

static void listen_sock_close_now(struct listen_sock *s)
{
    if (s->reader) {
        sock_reader_free(s->reader);   /* joined: nothing is read into a call's memory after */
        s->reader = NULL;
        s->reading = NULL;
        loop_wake_close(&s->reader_done, listen_sock_handle_closed);
    }
    free(s->held);
    s->held = NULL;
    if (s->writer) {
        sock_writer_free(s->writer);   /* joined: no write touches the bytes after this */
        s->writer = NULL;
        loop_wake_close(&s->writer_done, listen_sock_handle_closed);
    }
    if (!uv_is_closing(&s->h.handle))
        uv_close(&s->h.handle, listen_sock_handle_closed);
    if (!uv_is_closing((uv_handle_t *)&s->linger))
        uv_close((uv_handle_t *)&s->linger, listen_sock_handle_closed);
    if (!uv_is_closing((uv_handle_t *)&s->resume))
        uv_close((uv_handle_t *)&s->resume, listen_sock_handle_closed);
}

static struct sock_reader *listen_sock_reader(struct listen_sock *s);

static void listen_sock_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    struct listen_sock *s = h->data;
    size_t len = 0;
    uint8_t *dest = !s->closing && s->cbs->read_dest ? s->cbs->read_dest(s->ctx, &len) : NULL;
    bool peek = s->peek;
    s->peek = false;
    if (dest && len >= LISTEN_READER_MIN && s->cbs->reader_wanted &&
        s->cbs->reader_wanted(s->ctx) && listen_sock_reader(s)) {
        s->hand = dest;
        s->hand_len = len;
        *buf = uv_buf_init(NULL, 0);   /* the read callback gets UV_ENOBUFS and hands it */
        return;
    }
    if (dest && len > LISTEN_READ_DEST_MAX)
        len = LISTEN_READ_DEST_MAX;
    if (dest)
        *buf = uv_buf_init((char *)dest, (unsigned)len);
    else
        *buf = uv_buf_init((char *)s->rbuf, peek ? LISTEN_PEEK_BYTES : sizeof(s->rbuf));
}

static void listen_sock_on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

/* The loop's next turn: the other connections' reads have had theirs.
 * A settled read's bytes go first, as the next the peer sent. */
static void listen_sock_on_resume(uv_idle_t *h)
{
    struct listen_sock *s = h->data;
    uv_idle_stop(h);
    uint8_t *held = s->held;
    size_t n = s->held_len;
    bool end = s->held_end;
    s->held = NULL;
    s->held_len = 0;
    s->held_end = false;
    if (n && !s->closing)
        s->cbs->read(s->ctx, held, n);
    free(held);
    if (end && !s->closing) {
        s->cbs->eof(s->ctx);
        return;
    }
    if (!s->closing)
        uv_read_start(&s->h.stream, listen_sock_alloc, listen_sock_on_read);
}

/* Hands the read alloc found (s->hand) to the reader; the loop reads
 * nothing from the socket until it ended. */
static void listen_sock_hand(struct listen_sock *s)
{
    uv_os_fd_t fd;
    uv_read_stop(&s->h.stream);
    s->reading = s->hand;
    s->reading_len = s->hand_len;
    s->hand = NULL;
    if (uv_fileno(&s->h.handle, &fd) != 0) {   /* an open stream has one: not reached */
        s->reading = NULL;
        s->cbs->eof(s->ctx);
        return;
    }
    sock_reader_start(s->reader, fd, s->reading, s->reading_len);
}

/* The reader's read ended: its bytes go up as a read of the loop's would,
 * and the loop reads again (first a peek at the next frame). */
static void listen_sock_on_reader_done(struct loop_wake *w)
{
    struct listen_sock *s = w->poll.data;
    size_t got;
    int status;
    if (!s->reader || !s->reading || !sock_reader_take(s->reader, &got, &status))
        return;
    uint8_t *dest = s->reading;
    size_t len = s->reading_len;
    s->reading = NULL;
    if (got && !s->closing)
        s->cbs->read(s->ctx, dest, got);
    if (s->closing)
        return;
    if (got < len) {   /* the peer closed, or the socket failed */
        s->cbs->eof(s->ctx);
        return;
    }
    s->peek = true;
    uv_read_start(&s->h.stream, listen_sock_alloc, listen_sock_on_read);
}

/* Reader thread, its lock let go: its read ended. */
static void listen_sock_reader_signal(void *ctx)
{
    struct listen_sock *s = ctx;
    loop_wake_send(&s->reader_done);
}

/* s's reader, made on first use; NULL if it cannot be (the loop reads). */
static struct sock_reader *listen_sock_reader(struct listen_sock *s)
{
    if (s->reader || s->reader_failed)
        return s->reader;
    if (loop_wake_init(s->h.handle.loop, &s->reader_done, listen_sock_on_reader_done, s) != 0) {
        s->reader_failed = true;
        return NULL;
    }
    s->handles_open++;
    s->reader = sock_reader_new("ampd-reader", LISTEN_BULK_NICE, LISTEN_READ_DEST_MAX,
                                listen_sock_reader_signal, s);
    if (!s->reader) {
        s->reader_failed = true;
        loop_wake_close(&s->reader_done, listen_sock_handle_closed);
    }
    return s->reader;
}

/* Ends the reader's read in flight, if any: returns the bytes it got
 * (*got, into the read's place) and whether the socket ended there. */
static bool listen_sock_reader_end(struct listen_sock *s, size_t *got)
{
    int status = 0;
    *got = 0;
    if (!s->reading)
        return false;
    sock_reader_stop(s->reader);
    (void)sock_reader_take(s->reader, got, &status);
    bool end = *got < s->reading_len && status != -ECANCELED;
    s->reading = NULL;
    return end;
}

void listen_sock_read_settle(struct listen_sock *s)
{
    if (!s->reading || s->closing)
        return;
    uint8_t *dest = s->reading;
    size_t got;
    bool end = listen_sock_reader_end(s, &got);
    if (got) {
        s->held = malloc(got);
        if (s->held) {
            memcpy(s->held, dest, got);
            s->held_len = got;
        } else {
            end = true;   /* bytes of the stream lost: the connection cannot go on */
        }
    }
    s->held_end = end;
    uv_idle_start(&s->resume, listen_sock_on_resume);
}

/* Counts a read into this turn; ends the turn at LISTEN_TURN_BYTES. */
static void listen_sock_turn(struct listen_sock *s, size_t nread, size_t asked)
{
    s->turn_bytes += nread;
    if (nread < asked) {
        s->turn_bytes = 0;        /* drained: libuv ends the turn itself */
        return;
    }
    if (s->turn_bytes < LISTEN_TURN_BYTES || s->closing ||
        uv_is_active((uv_handle_t *)&s->resume))
        return;
    s->turn_bytes = 0;
    uv_read_stop(&s->h.stream);
    uv_idle_start(&s->resume, listen_sock_on_resume);
}

static void listen_sock_on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    struct listen_sock *s = stream->data;
    if (nread == 0)
        return;
    if (s->closing) {
        /* Lingering: drop the peer's bytes until it closes. */
        if (nread < 0)
            listen_sock_close_now(s);
        return;
    }
    if (nread == UV_ENOBUFS && s->hand) {
        listen_sock_hand(s);
        return;
    }
    if (nread < 0) {
        uv_read_stop(stream);
        s->cbs->eof(s->ctx);
        return;
    }
    s->cbs->read(s->ctx, (const uint8_t *)buf->base, (size_t)nread);
    listen_sock_turn(s, (size_t)nread, buf->len);
}

int listen_sock_start(struct listen_sock *s, const struct listen_sock_cbs *cbs, void *ctx)
{
    s->cbs = cbs;
    s->ctx = ctx;
    return uv_read_start(&s->h.stream, listen_sock_alloc, listen_sock_on_read);
}

static void listen_sock_on_shutdown(uv_shutdown_t *req, int status)
{
    struct listen_sock *s = req->data;
    if (status != 0)
        listen_sock_close_now(s);
}

static void listen_sock_start_shutdown(struct listen_sock *s)
{
    s->shutdown.data = s;
    if (uv_shutdown(&s->shutdown, &s->h.stream, listen_sock_on_shutdown) != 0)
        listen_sock_close_now(s);
}

/* Whether the writer thread has writes whose results are not taken yet:
 * anything written meanwhile must go behind them, through it. */
static bool listen_sock_writer_has(struct listen_sock *s)
{
    return s->writer && sock_writer_queued(s->writer) > 0;
}

/* Whether any write is in flight: the loop's own, or the writer's. */
static bool listen_sock_in_flight(struct listen_sock *s)
{
    return s->writing || listen_sock_writer_has(s);
}

/* A write ended: tells the owner, or, closing, shuts down the write side
 * once the last is out. */
static void listen_sock_write_done(struct listen_sock *s, int status)
{
    if (s->closing) {
        if (!s->shutdown_pending || (status == 0 && listen_sock_in_flight(s)))
            return;
        s->shutdown_pending = false;
        if (status == 0 && !uv_is_closing(&s->h.handle))
            listen_sock_start_shutdown(s);
        else
            listen_sock_close_now(s);
        return;
    }
    s->cbs->written(s->ctx, status);
}

static void listen_sock_on_write(uv_write_t *req, int status)
{
    struct listen_sock *s = req->data;
    s->writing = false;
    listen_sock_write_done(s, status);
}

/* The writer's writes that ended, oldest first; a written() that closes
 * the socket ends the round (the writer is gone then). */
static void listen_sock_on_writer_done(struct loop_wake *w)
{
    struct listen_sock *s = w->poll.data;
    size_t written;
    int status;
    while (s->writer && sock_writer_take(s->writer, &written, &status))
        listen_sock_write_done(s, status);
}

/* Writer thread, its lock let go: its write is done. */
static void listen_sock_writer_signal(void *ctx)
{
    struct listen_sock *s = ctx;
    loop_wake_send(&s->writer_done);
}

/* s's writer, made on first use; NULL if it cannot be (the loop writes). */
static struct sock_writer *listen_sock_writer(struct listen_sock *s)
{
    if (s->writer || s->writer_failed)
        return s->writer;
    if (loop_wake_init(s->h.handle.loop, &s->writer_done, listen_sock_on_writer_done, s) != 0) {
        s->writer_failed = true;
        return NULL;
    }
    s->handles_open++;
    s->writer = sock_writer_new("ampd-writer", LISTEN_BULK_NICE, listen_sock_writer_signal, s);
    if (!s->writer) {
        s->writer_failed = true;
        loop_wake_close(&s->writer_done, listen_sock_handle_closed);
    }
    return s->writer;
}

/* uv_buf_t for each iovec (the same two fields, but not promised to be the
 * same type everywhere). */
static int listen_sock_bufs(const struct iovec *iov, int n, uv_buf_t *b)
{
    if (n < 1 || n > LISTEN_WRITE_IOV)
        return UV_EINVAL;
    for (int i = 0; i < n; i++)
        b[i] = uv_buf_init(iov[i].iov_base, (unsigned)iov[i].iov_len);
    return 0;
}

bool listen_sock_can_write(struct listen_sock *s)
{
    return !s->writing && (!s->writer || sock_writer_queued(s->writer) < SOCK_WRITER_QUEUE);
}

int listen_sock_writev(struct listen_sock *s, const struct iovec *iov, int n)
{
    uv_buf_t b[LISTEN_WRITE_IOV];
    int rv = listen_sock_bufs(iov, n, b);
    if (rv != 0)
        return rv;
    /* Behind a write the writer still has, everything goes to it: in order. */
    struct sock_writer *w = listen_sock_writer_has(s) || iov_total(iov, n) >= LISTEN_WRITER_MIN
                                ? listen_sock_writer(s)
                                : NULL;
    uv_os_fd_t fd;
    if (w && uv_fileno(&s->h.handle, &fd) == 0) {
        sock_writer_start(w, fd, iov, n);
        return 0;
    }
    s->write.data = s;
    rv = uv_write(&s->write, &s->h.stream, b, (unsigned)n, listen_sock_on_write);
    s->writing = rv == 0;
    return rv;
}

ssize_t listen_sock_try_writev(struct listen_sock *s, const struct iovec *iov, int n)
{
    uv_buf_t b[LISTEN_WRITE_IOV];
    int rv = listen_sock_bufs(iov, n, b);
    /* A large write is the writer thread's whole: copying part of it into
     * the socket here would spend the loop's time, which reading the
     * other direction needs (a stream's input and its replies at once).
     * Nothing may pass a write the writer still has. */
    if (rv == 0 && listen_sock_writer_has(s))
        return 0;
    if (rv == 0 && iov_total(iov, n) >= LISTEN_WRITER_MIN && listen_sock_writer(s))
        return 0;
    if (rv == 0)
        rv = uv_try_write(&s->h.stream, b, (unsigned)n);
    if (rv == UV_EAGAIN)
        return 0;
    return rv;
}

static void listen_sock_on_linger(uv_timer_t *t)
{
    listen_sock_close_now(t->data);
}

void listen_sock_close(struct listen_sock *s, unsigned linger_ms)
{
    if (s->closing)
        return;
    s->closing = true;
    size_t got;
    (void)listen_sock_reader_end(s, &got);   /* the rest is discarded, as lingering does */
    if (linger_ms == 0 || uv_is_closing(&s->h.handle)) {
        listen_sock_close_now(s);
        return;
    }
    /* Keep reading (and discarding) so the peer's close is seen. */
    uv_read_start(&s->h.stream, listen_sock_alloc, listen_sock_on_read);
    uv_timer_start(&s->linger, listen_sock_on_linger, linger_ms, 0);
    if (listen_sock_in_flight(s))
        s->shutdown_pending = true;
    else
        listen_sock_start_shutdown(s);
}

int listen_fd_cred(int fd, bool is_unix, long *uid, long *gid)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (!is_unix || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        return -1;
    *uid = (long)cred.uid;
    *gid = (long)cred.gid;
    return 0;
}

void listen_fd_peer(int fd, bool is_unix, char *out, size_t outlen)
{
    snprintf(out, outlen, "unknown");
    if (is_unix) {
        long uid, gid;
        if (listen_fd_cred(fd, is_unix, &uid, &gid) == 0)
            snprintf(out, outlen, "uid %ld", uid);
        return;
    }
    struct sockaddr_storage sa;
    socklen_t len = sizeof(sa);
    char host[INET6_ADDRSTRLEN] = "";
    if (getpeername(fd, (struct sockaddr *)&sa, &len) != 0)
        return;
    if (sa.ss_family == AF_INET)
        uv_ip4_name((struct sockaddr_in *)&sa, host, sizeof(host));
    else if (sa.ss_family == AF_INET6)
        uv_ip6_name((struct sockaddr_in6 *)&sa, host, sizeof(host));
    if (host[0])
        snprintf(out, outlen, "address %s", host);
}

/* --- accepting ------------------------------------------------------------ */

static struct listen_sock *listen_sock_new(uv_loop_t *loop, bool is_unix)
{
    struct listen_sock *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    int rv = is_unix ? uv_pipe_init(loop, &s->h.pipe, 0) : uv_tcp_init(loop, &s->h.tcp);
    if (rv != 0) {
        free(s);
        return NULL;
    }
    uv_timer_init(loop, &s->linger);
    uv_idle_init(loop, &s->resume);
    s->h.handle.data = s;
    s->linger.data = s;
    s->resume.data = s;
    s->handles_open = 3;
    return s;
}

int listen_sock_open(uv_loop_t *loop, int fd, bool is_unix, struct listen_sock **out)
{
    struct listen_sock *s = listen_sock_new(loop, is_unix);
    if (!s) {
        close(fd);
        return UV_ENOMEM;
    }
    int rv = is_unix ? uv_pipe_open(&s->h.pipe, fd) : uv_tcp_open(&s->h.tcp, fd);
    if (rv != 0) {
        close(fd);
        listen_sock_close_now(s);
        return rv;
    }
    if (!is_unix)
        uv_tcp_nodelay(&s->h.tcp, 1);
    *out = s;
    return 0;
}

static void listen_on_readable(uv_poll_t *h, int status, int events);

static void listen_on_retry(uv_timer_t *t)
{
    struct listener *l = t->data;
    uv_poll_start(&l->poll, UV_READABLE, listen_on_readable);
}

/* Takes every connection waiting in the backlog. */
static void listen_on_readable(uv_poll_t *h, int status, int events)
{
    (void)events;
    struct listener *l = h->data;
    if (status != 0)
        return;
    for (;;) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            l->accept(fd, l->kind, l->ctx);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            /* EMFILE and the like: the connection waits in the backlog. */
            uv_poll_stop(&l->poll);
            uv_timer_start(&l->retry, listen_on_retry, LISTEN_RETRY_MS, 0);
        }
        return;
    }
}

/* --- listeners ------------------------------------------------------------ */

/* A Unix socket file nobody accepts on is left over from a crash: remove
 * it. A live one, or a file that is not a socket, is not ours to delete. */
static int listen_clear_stale(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return 0;
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(err, errlen, "%s exists and is not a socket", path);
        return -1;
    }
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    int live = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    close(fd);
    if (live) {
        snprintf(err, errlen, "%s is in use by another server", path);
        return -1;
    }
    if (unlink(path) != 0) {
        snprintf(err, errlen, "cannot remove stale socket %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

int listen_group(const char *name, long *gid, char *err, size_t errlen)
{
    *gid = -1;
    if (!*name)
        return 0;
    char *end;
    errno = 0;
    unsigned long n = strtoul(name, &end, 10);
    if (*end == '\0' && errno == 0 && n <= (gid_t)-1 - 1) {
        *gid = (long)n;
        return 0;
    }
    struct group *g = getgrnam(name);   /* startup only: a blocking lookup is fine */
    if (!g) {
        snprintf(err, errlen, "--socket-group %s: no such group", name);
        return -1;
    }
    *gid = (long)g->gr_gid;
    return 0;
}

/* The socket file is born with no permissions beyond the owner's (umask
 * around bind: the only way, since bind creates it), then gets its group
 * and mode; a client racing the start-up finds it closed, never open. */
/* Why a Unix socket could not be made at path (err from bind), with what
 * to do when it is its directory: missing (systemd's RuntimeDirectory=
 * makes /run/ampd for the service; by hand it must be made first) or not
 * writable by this user. */
static void listen_unix_bind_error(const char *path, int e, char *err, size_t errlen)
{
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    if (e == ENOENT)
        snprintf(err, errlen, "bind %s: the directory %s does not exist (create it first, or "
                 "listen elsewhere, e.g. --listen unix:/tmp/ampd.sock)", path, dir);
    else if (e == EACCES)
        snprintf(err, errlen, "bind %s: no permission to create a socket in %s (run ampd as a "
                 "user who may write there, or listen elsewhere)", path, dir);
    else
        snprintf(err, errlen, "bind %s: %s", path, strerror(e));
}

int listen_unix_fd(const char *path, const struct listen_unix_access *access, int *out, char *err,
                   size_t errlen)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof(sa.sun_path)) {
        snprintf(err, errlen, "%s: a Unix socket path has at most %zu bytes", path,
                 sizeof(sa.sun_path) - 1);
        return -1;
    }
    if (listen_clear_stale(path, err, errlen) != 0)
        return -1;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    mode_t old = umask(S_IRWXG | S_IRWXO | S_IXUSR);
    int rv = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (rv != 0) {
        listen_unix_bind_error(path, errno, err, errlen);
        close(fd);
        return -1;
    }
    const char *what = "listen";
    if ((access->gid >= 0 && (what = "chown", chown(path, (uid_t)-1, (gid_t)access->gid) != 0)) ||
        (what = "chmod", chmod(path, (mode_t)access->mode) != 0) ||
        (what = "listen", listen(fd, LISTEN_BACKLOG) != 0)) {
        snprintf(err, errlen, "%s %s (group %ld, mode %03o): %s", what, path, access->gid,
                 access->mode, strerror(errno));
        close(fd);
        unlink(path);
        return -1;
    }
    *out = fd;
    return 0;
}

static int listen_bind_unix(struct listener *l, const char *path,
                            const struct listen_unix_access *access, char *err, size_t errlen)
{
    if (listen_unix_fd(path, access, &l->fd, err, errlen) != 0)
        return -1;
    snprintf(l->unix_path, sizeof(l->unix_path), "%s", path);
    return 0;
}

int listen_tcp_fd(const struct address *addr, int *out, char *err, size_t errlen)
{
    /* Startup only, before the loop runs: a blocking lookup is fine here. */
    char port[16];
    snprintf(port, sizeof(port), "%d", addr->port);
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
    struct addrinfo *ai;
    int rv = getaddrinfo(addr->host, port, &hints, &ai);
    if (rv != 0) {
        snprintf(err, errlen, "%s: %s", addr->host, gai_strerror(rv));
        return -1;
    }
    int one = 1;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    const char *what = "socket";
    if (fd < 0 || (what = "bind", setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one)) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
        (what = "listen", listen(fd, LISTEN_BACKLOG)) != 0) {
        snprintf(err, errlen, "%s %s:%d: %s", what, addr->host, addr->port, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    *out = fd;
    return 0;
}

static void listen_on_closed(uv_handle_t *h)
{
    struct listener *l = h->data;
    if (--l->handles_open > 0)
        return;
    free(l);
}

/* Polls l->fd, bound and listening, on loop. Frees l on failure. */
static int listen_start(uv_loop_t *loop, struct listener *l, struct listener **out, char *err,
                        size_t errlen)
{
    int rv = uv_poll_init(loop, &l->poll, l->fd);
    if (rv != 0) {
        snprintf(err, errlen, "poll: %s", uv_strerror(rv));
        if (l->unix_path[0])
            unlink(l->unix_path);
        close(l->fd);
        free(l);
        return -1;
    }
    uv_timer_init(loop, &l->retry);
    l->poll.data = l->retry.data = l;
    l->handles_open = 2;
    uv_poll_start(&l->poll, UV_READABLE, listen_on_readable);
    *out = l;
    return 0;
}

static struct listener *listen_new(listen_accept_cb cb, void *ctx, char *err, size_t errlen)
{
    struct listener *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    l->accept = cb;
    l->ctx = ctx;
    return l;
}

int listen_open(uv_loop_t *loop, const struct address *addr, const struct listen_unix_access *access,
                listen_accept_cb cb, void *ctx, struct listener **out, char *err, size_t errlen)
{
    struct listener *l = listen_new(cb, ctx, err, errlen);
    if (!l)
        return -1;
    l->kind.is_unix = addr->kind == ADDRESS_UNIX;
    l->kind.tls = addr->kind == ADDRESS_TCP && addr->tls;
    int rv = l->kind.is_unix ? listen_bind_unix(l, addr->path, access, err, errlen)
                        : listen_tcp_fd(addr, &l->fd, err, errlen);
    if (rv != 0) {
        free(l);
        return -1;
    }
    return listen_start(loop, l, out, err, errlen);
}

int listen_adopt(uv_loop_t *loop, int fd, bool is_unix, listen_accept_cb cb, void *ctx,
                 struct listener **out, char *err, size_t errlen)
{
    struct listener *l = listen_new(cb, ctx, err, errlen);
    if (!l) {
        close(fd);
        return -1;
    }
    l->fd = fd;
    l->kind.is_unix = is_unix;
    return listen_start(loop, l, out, err, errlen);
}

void listen_serve_health_only(struct listener *l)
{
    l->kind.health_only = true;
}

bool listen_loopback(const struct listener *l)
{
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    if (l->kind.is_unix || getsockname(l->fd, (struct sockaddr *)&sa, &len) != 0)
        return false;
    if (sa.ss_family == AF_INET)
        return (ntohl(((struct sockaddr_in *)&sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa.ss_family != AF_INET6)
        return false;
    const struct in6_addr *a6 = &((struct sockaddr_in6 *)&sa)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a6) || (IN6_IS_ADDR_V4MAPPED(a6) && a6->s6_addr[12] == 127);
}

void listen_close(struct listener *l)
{
    if (l->unix_path[0])
        unlink(l->unix_path);
    /* Closing the poll handle takes the fd out of epoll at once, so the
     * socket can close now: a client connecting after this is refused. */
    uv_close((uv_handle_t *)&l->poll, listen_on_closed);
    uv_close((uv_handle_t *)&l->retry, listen_on_closed);
    close(l->fd);
}
