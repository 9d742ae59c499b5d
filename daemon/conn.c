/* SPDX-License-Identifier: MIT */
/* conn.c: a connection's life: accept, bytes in, bytes out, close.
 *
 * Reads go straight into h2_session_recv(). Writes go straight from the
 * session's buffers, and reply data straight from the replies themselves,
 * to the socket while it takes them (uv_try_write of iovecs, no copy); the
 * rest of a write it refuses, and a large one whole, is written
 * asynchronously (reply data still uncopied, see conn_gather). The session
 * is asked for more while the socket has room for another write in flight
 * (listen_sock_can_write: two on the writer thread, so a stream's next
 * reply frame waits behind the one going out), so a slow reader holds at
 * most two writes here and nghttp2 keeps the rest as unsent frames. A connection
 * ends when the session wants neither to read nor to write, when the peer
 * goes away, or on a fatal protocol error (after the GOAWAY is flushed).
 * The h2 session, and with it every call, is freed only in the socket's
 * closed callback. A connection from a tls: listener runs its bytes
 * through conn_tls.c both ways: ciphertext is what the socket carries, and
 * the same one-write-in-flight rule holds for it.
 */
#include "conn.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn_tls.h"
#include "iov_send.h"
#include "log.h"
#include "sched.h"
#include "traffic.h"

/* A borrowed frame goes to the socket in one write. */
_Static_assert(H2_SEND_IOV <= LISTEN_WRITE_IOV, "a frame's iovecs fit one listen_sock write");

#define CONN_LINGER_MS 2000            /* graceful close: wait this long for the peer's EOF */
#define CONN_REASON_MAX 256
#define CONN_TLS_RECORD_HANDSHAKE 0x16 /* a TLS handshake record's first byte */
#define CONN_FIRST_BYTES_SHOWN 32      /* of a client that does not speak HTTP/2, in its log line */

struct conn {
    struct conn_set *set;
    struct conn *prev, *next;   /* set->head list */
    struct listen_sock *sock;   /* valid until closed() */
    struct h2_session *h2;      /* freed in closed() */
    struct tls_pipe *tls;       /* tls: listener: the TLS leg, freed in closed(); else NULL */
    size_t tls_writing;         /* ciphertext of the pipe's in the write in flight */
    struct budget budget;       /* what the session's calls hold; used is 0 once h2 is freed */
    char peer[LISTEN_PEER_MAX]; /* listen_fd_peer(): whose connection this is */
    struct auth_conn who;       /* conn_admit(): its uid (whose regions its calls may name),
                                 * whether calls need a token; who.peer is peer */
    bool counted;               /* admitted: counts toward --max-connections until closed() */
    bool peer_counted;          /* and toward --max-peer-connections until it is leaving */
    bool unauth;                /* and toward --max-unauthenticated-connections until a
                                 * call that needed a token passed, or it is leaving */
    uint64_t accepted_ms;       /* rpc_now_ms() when accepted: --handshake-timeout's start */
    int writing;                /* listen_sock_writev()s in flight: h2_session_written() owed
                                 * for each (a TLS connection: tls_writing's, one at most) */
    bool closing;               /* listen_sock_close() called: no more I/O */
    bool fatal;                 /* protocol error: close once the GOAWAY is out */
    bool idle_closed;           /* got its GOAWAY for --idle-timeout */
    /* --send-timeout: writes that moved bytes (counted, no clock on the
     * write path); the sweep notes the count and when it last changed or
     * found nothing owed, so a stall is timed from then. */
    uint64_t progress;
    uint64_t swept_progress;
    uint64_t stall_ms;
};

static void conn_flush(struct conn *c);

/* c is on its way out (closing, or a GOAWAY for a fault): its peer may
 * open another in its place. */
static void conn_leaving(struct conn *c)
{
    if (c->peer_counted) {
        c->peer_counted = false;
        conn_limit_leave_peer(c->set->limit, c->peer, c->unauth);
        c->unauth = false;
    }
}

/* --- h2 handlers: rpc with the set's env, and flush on late output ------- */

static enum status_code conn_h2_start(struct h2_call *call, const char *path,
                                      enum h2_call_kind *kind, char *msg, size_t msglen, void *ctx)
{
    struct conn *c = ctx;
    enum status_code code = rpc_h2_start(call, path, kind, msg, msglen, c->set->env, &c->who);
    /* A call that needed a token passed: the connection is authenticated
     * and leaves the pool kept for those that are not. */
    if (code == STATUS_OK && c->unauth && !auth_path_open(path)) {
        conn_limit_authenticated(c->set->limit, c->peer);
        c->unauth = false;
    }
    return code;
}

static void conn_h2_want_write(void *ctx)
{
    conn_flush(ctx);
}

static void conn_h2_answered(struct h2_call *call, const char *path, enum status_code code,
                             const char *msg, void *ctx)
{
    (void)call;
    struct conn *c = ctx;
    traffic_answered(c->set->traffic, path, code, msg, c->peer);
}

/* A stream gives up the staging buffer the reader thread may be filling
 * (listen.h); a closing socket has ended its reader already. */
static void conn_h2_read_settle(void *ctx)
{
    struct conn *c = ctx;
    if (!c->closing)
        listen_sock_read_settle(c->sock);
}

static const struct h2_handlers conn_h2_handlers = {
    .start = conn_h2_start,
    .message = rpc_h2_message,
    .piece_start = rpc_h2_piece_start,
    .piece = rpc_h2_piece,
    .piece_dest = rpc_h2_piece_dest,
    .read_settle = conn_h2_read_settle,
    .end = rpc_h2_end,
    .closed = rpc_h2_closed,
    .sent = rpc_h2_sent,
    .want_write = conn_h2_want_write,
    .answered = conn_h2_answered,
};

/* --- closing -------------------------------------------------------------- */

static void conn_close(struct conn *c, unsigned linger_ms)
{
    if (c->closing)
        return;
    c->closing = true;
    conn_leaving(c);
    listen_sock_close(c->sock, linger_ms);
}

static void conn_sock_closed(void *ctx)
{
    struct conn *c = ctx;
    struct conn_set *set = c->set;
    h2_session_free(c->h2); /* closes every call; jobs in flight lose their owner */
    tls_pipe_free(c->tls);
    if (c->prev)
        c->prev->next = c->next;
    else
        set->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    conn_leaving(c);
    if (c->counted)
        conn_limit_leave(set->limit);
    atomic_fetch_sub(set->live, 1);
    free(c);
    if (set->draining && !set->head && set->empty)
        set->empty(set->ctx);
}

/* --- bytes ---------------------------------------------------------------- */

static void conn_count_out(struct conn *c, size_t len)
{
    if (c->set->traffic)
        traffic_wrote(c->set->traffic, len);
}

/* Moves queued output to the socket while it takes it, with no copy: the
 * session's frames as they are, and DATA frames straight from the replies
 * (staging buffers, reply messages: h2_session_sendv borrows them, and
 * keeps each write until h2_session_written). What the socket refuses,
 * and a large write whole, goes as an async write, and the session is
 * asked for more while the socket can take another in flight. Returns 0,
 * or -1 on a fatal session or socket error. */
static int conn_gather(struct conn *c)
{
    while (listen_sock_can_write(c->sock)) {
        struct iovec iov[H2_SEND_IOV];
        int n = h2_session_sendv(c->h2, iov);
        if (n <= 0)
            return n;   /* 0: all written or in flight; -1: fatal */
        size_t len = iov_total(iov, n);
        ssize_t w = listen_sock_try_writev(c->sock, iov, n);
        if (w < 0)
            return -1;
        conn_count_out(c, len);   /* written, or the rest queued below */
        c->progress += w > 0;
        if ((size_t)w == len) {
            h2_session_written(c->h2);
            continue;
        }
        int i = iov_skip(iov, n, (size_t)w);
        if (listen_sock_writev(c->sock, iov + i, n - i) != 0)
            return -1;
        c->writing++;
    }
    return 0;
}

/* conn_gather for a TLS connection: the pipe's ciphertext to the socket
 * while it takes it, sealing the session's frames (conn_tls_seal) each
 * time it is all gone; what the socket refuses is written from the pipe's
 * buffer, which stays put until then: one write in flight at most.
 * Returns as conn_gather. */
static int conn_gather_tls(struct conn *c)
{
    while (!c->writing) {
        const uint8_t *out;
        size_t len = tls_pipe_out(c->tls, &out);
        if (len == 0) {
            int rv = conn_tls_seal(c->tls, c->h2);
            if (rv <= 0)
                return rv;
            continue;
        }
        struct iovec iov = { (void *)out, len };
        ssize_t w = listen_sock_try_writev(c->sock, &iov, 1);
        if (w < 0)
            return -1;
        conn_count_out(c, len);
        c->progress += w > 0;
        if ((size_t)w == len) {
            tls_pipe_out_done(c->tls, len);
            continue;
        }
        iov = (struct iovec){ (void *)(out + w), len - (size_t)w };
        if (listen_sock_writev(c->sock, &iov, 1) != 0)
            return -1;
        tls_pipe_out_done(c->tls, (size_t)w);
        c->tls_writing = len - (size_t)w;
        c->writing++;
    }
    return 0;
}

static void conn_flush(struct conn *c)
{
    if (c->closing)
        return;
    int rv = c->tls ? conn_gather_tls(c) : conn_gather(c);
    if (rv < 0) {
        conn_close(c, 0);
        return;
    }
    if (c->writing)
        return;   /* the end waits until what is in flight is out */
    if (c->fatal || (!h2_session_want_read(c->h2) && !h2_session_want_write(c->h2))) {
        /* TLS ends with a close_notify, so the peer can tell the end from
         * a cut connection; it leaves before the socket closes. */
        if (c->tls && tls_pipe_ready(c->tls) && tls_pipe_close_notify(c->tls) == 0 &&
            tls_pipe_pending(c->tls)) {
            conn_flush(c);
            return;
        }
        conn_close(c, CONN_LINGER_MS);
    }
}

/* A connection that failed before HTTP/2 began: counted and logged with
 * what it sent (conn_refusal.h). Later protocol errors are the session's
 * to answer, not a refusal. */
static void conn_note_failed(struct conn *c, int rv, const uint8_t *data, size_t len)
{
    struct conn_refusals *r = &c->set->limit->refusals;
    if (c->tls && rv == CONN_TLS_FAILED && !h2_session_settings_seen(c->h2)) {
        conn_refusal_note(r, CONN_REFUSED_TLS_FAILED, c->peer, tls_pipe_why(c->tls));
        return;
    }
    if (!h2_session_not_http2(c->h2))
        return;
    if (!c->tls && len && data[0] == CONN_TLS_RECORD_HANDSHAKE) {
        conn_refusal_note(r, CONN_REFUSED_TLS_ON_PLAINTEXT, c->peer,
                          "a TLS handshake on a plaintext port (a tls: address takes TLS)");
        return;
    }
    char shown[CONN_FIRST_BYTES_SHOWN + 1] = "";
    for (size_t i = 0; !c->tls && i < len && i < CONN_FIRST_BYTES_SHOWN; i++)
        shown[i] = data[i] >= 0x20 && data[i] < 0x7f ? (char)data[i] : '.';
    char what[CONN_REASON_MAX];
    snprintf(what, sizeof what, "its first bytes%s%s%s are not HTTP/2's connection preface",
             shown[0] ? " \"" : "", shown, shown[0] ? "\"" : "");
    conn_refusal_note(r, CONN_REFUSED_NOT_HTTP2, c->peer, what);
}

static void conn_sock_read(void *ctx, const uint8_t *data, size_t len)
{
    struct conn *c = ctx;
    if (c->set->traffic)
        traffic_read(c->set->traffic, len);
    if (c->fatal)
        return;
    int rv = c->tls ? (int)conn_tls_recv(c->tls, c->h2, data, len) : h2_session_recv(c->h2, data, len);
    if (rv == CONN_TLS_EOF) {
        conn_close(c, 0);
        return;
    }
    if (rv != 0) {
        conn_note_failed(c, rv, data, len);
        c->fatal = true;
        conn_leaving(c);
    }
    if (c->set->env && c->set->env->sched)
        sched_port_deliver(c->set->env->sched);   /* a small job run during the read */
    conn_flush(c);
}

/* Stream data the session can take in place (h2_session_read_dest) is
 * read from the socket straight into its staging buffer; a TLS
 * connection's ciphertext straight into the pipe's input buffer. */
static uint8_t *conn_sock_read_dest(void *ctx, size_t *len)
{
    struct conn *c = ctx;
    if (c->fatal)
        return NULL;
    return c->tls ? tls_pipe_recv_dest(c->tls, len) : h2_session_read_dest(c->h2, len);
}

/* A large read into a call's place goes to the socket's reader thread
 * while other connections share this one's loop: their calls then wait
 * for no upload. Alone on its loop, the loop reads it itself, with no
 * thread hop between frames: on the H200 host a reader cost each of four
 * 1 GiB streams on loops of their own about 10% (4.7 GB/s each). A
 * call's places outlive its reads (h2_call_settle_read); a TLS
 * connection's place is the pipe's ciphertext buffer, read on the loop. */
static bool conn_sock_reader_wanted(void *ctx)
{
    struct conn *c = ctx;
    return !c->tls && atomic_load(c->set->live) > 1;
}

static void conn_sock_eof(void *ctx)
{
    conn_close(ctx, 0);
}

static void conn_sock_written(void *ctx, int status)
{
    struct conn *c = ctx;
    c->writing--;
    if (c->tls) {
        tls_pipe_out_done(c->tls, c->tls_writing);
        c->tls_writing = 0;
    } else {
        h2_session_written(c->h2);
    }
    if (status != 0) {
        conn_close(c, 0);
        return;
    }
    c->progress++;
    conn_flush(c);
}

static const struct listen_sock_cbs conn_sock_cbs = {
    .read = conn_sock_read,
    .read_dest = conn_sock_read_dest,
    .reader_wanted = conn_sock_reader_wanted,
    .eof = conn_sock_eof,
    .written = conn_sock_written,
    .closed = conn_sock_closed,
};

/* --- accept and drain ----------------------------------------------------- */

void conn_admit(struct conn_limit *limit, const struct auth *auth, int fd, struct listen_kind kind,
                struct conn_admission *out)
{
    listen_fd_peer(fd, kind.is_unix, out->peer, sizeof(out->peer));
    auth_admit(auth, fd, kind.is_unix, &out->who);
    out->who.health_only = kind.health_only;
    /* A Unix-socket peer is known by its credentials from the start. */
    out->authenticated = kind.is_unix && !out->who.denied;
    out->verdict = conn_limit_admit(limit, out->peer, out->authenticated, &out->marked);
}

void conn_unadmit(struct conn_limit *limit, const struct conn_admission *a)
{
    if (a->verdict != CONN_LIMIT_OK)
        return;
    conn_limit_leave_peer(limit, a->peer, !a->authenticated);
    conn_limit_leave(limit);
}

/* Whether c is refused: admitted (counted toward the limits) or not, with
 * the reason for its GOAWAY in reason. */
static bool conn_refused_why(struct conn_set *set, struct conn *c, const struct conn_admission *a,
                             char *reason, size_t len)
{
    if (set->draining) {
        conn_unadmit(set->limit, a);
        snprintf(reason, len, "server is shutting down");
        return true;
    }
    switch (a->verdict) {
    case CONN_LIMIT_OK:
        c->counted = c->peer_counted = true;
        c->unauth = !a->authenticated;
        return false;
    case CONN_LIMIT_FULL:
        snprintf(reason, len, "RESOURCE_EXHAUSTED: --max-connections (%u) reached",
                 set->limit->max);
        break;
    case CONN_LIMIT_PEER_FULL:
        snprintf(reason, len, "RESOURCE_EXHAUSTED: --max-peer-connections (%u) reached for %s",
                 set->limit->max_per_peer, c->peer);
        break;
    case CONN_LIMIT_UNAUTH_FULL:
        snprintf(reason, len, "RESOURCE_EXHAUSTED: --max-unauthenticated-connections (%u) reached "
                 "and %s holds no fewer of them than any other peer", set->limit->max_unauth,
                 c->peer);
        break;
    case CONN_LIMIT_UNAUTH_BUSY:
        snprintf(reason, len, "RESOURCE_EXHAUSTED: --max-unauthenticated-connections (%u) reached "
                 "and as many are giving their places to others; try again",
                 set->limit->max_unauth);
        break;
    case CONN_LIMIT_NO_MEMORY:
        snprintf(reason, len, "RESOURCE_EXHAUSTED: out of memory");
        break;
    }
    return true;
}

/* conn_refused_why, the refusal counted and logged. */
static bool conn_refused(struct conn_set *set, struct conn *c, const struct conn_admission *a,
                         char *reason, size_t len)
{
    static const enum conn_refusal why[] = {
        [CONN_LIMIT_FULL] = CONN_REFUSED_MAX_CONNECTIONS,
        [CONN_LIMIT_PEER_FULL] = CONN_REFUSED_MAX_PEER_CONNECTIONS,
        [CONN_LIMIT_UNAUTH_FULL] = CONN_REFUSED_MAX_UNAUTHENTICATED,
        [CONN_LIMIT_UNAUTH_BUSY] = CONN_REFUSED_MAX_UNAUTHENTICATED,
        [CONN_LIMIT_NO_MEMORY] = CONN_REFUSED_NO_MEMORY,
    };
    bool refused = conn_refused_why(set, c, a, reason, len);
    if (refused)
        conn_refusal_note(&set->limit->refusals,
                          set->draining ? CONN_REFUSED_DRAINING : why[a->verdict], c->peer, reason);
    return refused;
}

void conn_accept(struct conn_set *set, struct listen_sock *sock, const struct conn_admission *a,
                 bool tls)
{
    struct conn *c = calloc(1, sizeof(*c));
    if (c) {
        c->budget = (struct budget){ .max = set->conn_memory, .parent = set->budget,
                                     .name = "--max-connection-memory" };
        struct h2_config cfg = set->h2cfg;
        cfg.budget = &c->budget;
        c->h2 = h2_session_new(&cfg, &conn_h2_handlers, c);
        if (tls && set->tls)
            c->tls = tls_server_accept(set->tls);
    }
    if (!c || !c->h2 || (tls && !c->tls)) {
        if (c)
            h2_session_free(c->h2);
        free(c);
        conn_unadmit(set->limit, a);
        atomic_fetch_sub(set->live, 1);
        listen_sock_close(sock, 0);
        return;
    }
    c->set = set;
    c->sock = sock;
    c->accepted_ms = rpc_now_ms();
    memcpy(c->peer, a->peer, sizeof(c->peer));
    c->who = a->who;
    c->who.peer = c->peer;
    c->next = set->head;
    if (set->head)
        set->head->prev = c;
    set->head = c;
    char reason[CONN_REASON_MAX];
    bool refused = conn_refused(set, c, a, reason, sizeof(reason));
    if (listen_sock_start(sock, &conn_sock_cbs, c) != 0) {
        conn_close(c, 0);
        return;
    }
    if (refused)
        h2_session_refuse_acked(c->h2, reason);
    conn_flush(c);
}

void conn_drain_all(struct conn_set *set)
{
    set->draining = true;
    if (!set->head) {
        if (set->empty)
            set->empty(set->ctx);
        return;
    }
    for (struct conn *c = set->head; c; c = c->next) {
        if (c->closing)
            continue;
        h2_session_goaway(c->h2);
        conn_flush(c);
    }
}

/* Whether c's replies have waited with no write progress for
 * --send-timeout: its client reads nothing (a full socket) or opens no
 * window, while what it holds counts against everyone's --max-job-memory.
 * Closing it gives all of that back at once (its calls end with it).
 * Progress is a write that moved bytes or ended; one is at most a DATA
 * frame (~1 MiB), so only a reader slower than that per timeout is cut. */
static bool conn_send_stalled(struct conn *c, uint64_t now_ms)
{
    bool owed = c->writing > 0 || h2_session_reply_waiting(c->h2);
    if (!owed || c->progress != c->swept_progress) {
        c->swept_progress = c->progress;
        c->stall_ms = now_ms;
        return false;
    }
    return c->set->send_timeout_ms && now_ms - c->stall_ms >= c->set->send_timeout_ms;
}

/* Whether c, unauthenticated, is the one its peer gives up to a newcomer
 * (conn_limit.h): it gets a GOAWAY saying so, and closes. */
static bool conn_evicted(struct conn *c)
{
    if (!c->unauth || !conn_limit_evict_take(c->set->limit, c->peer))
        return false;
    char reason[CONN_REASON_MAX];
    snprintf(reason, sizeof reason, "RESOURCE_EXHAUSTED: --max-unauthenticated-connections (%u) "
             "reached: this connection gave its place to another peer", c->set->limit->max_unauth);
    h2_session_refuse(c->h2, reason);
    conn_refusal_note(&c->set->limit->refusals, CONN_REFUSED_EVICTED, c->peer, reason);
    c->fatal = true;   /* closes once its GOAWAY is out */
    conn_leaving(c);
    return true;
}

void conn_evict(struct conn_set *set)
{
    for (struct conn *c = set->head, *next; c; c = next) {
        next = c->next;   /* a flush may close c, but frees it only in a later callback */
        if (!c->closing && !c->fatal && conn_evicted(c))
            conn_flush(c);
    }
}

void conn_sweep(struct conn_set *set, uint64_t now_ms, uint64_t idle_ms, uint64_t handshake_ms)
{
    for (struct conn *c = set->head, *next; c; c = next) {
        next = c->next;   /* a flush may close c, but frees it only in a later callback */
        if (c->closing)
            continue;
        if (conn_send_stalled(c, now_ms)) {
            log_msg(LOG_WARN, "closing the connection of %s: its replies made no write progress "
                    "for --send-timeout (%" PRIu64 " s), %" PRIu64 " bytes held",
                    c->peer, set->send_timeout_ms / 1000, budget_used(&c->budget));
            conn_close(c, 0);
            continue;
        }
        if (c->fatal)
            continue;
        if (c->tls && handshake_ms && !tls_pipe_ready(c->tls) &&
            now_ms - c->accepted_ms >= handshake_ms) {
            char what[CONN_REASON_MAX];
            snprintf(what, sizeof what, "TLS handshake unfinished after --handshake-timeout "
                     "(%llu ms); closed", (unsigned long long)handshake_ms);
            conn_refusal_note(&set->limit->refusals, CONN_REFUSED_TLS_TIMEOUT, c->peer, what);
            conn_close(c, 0);
            continue;
        }
        if (conn_evicted(c)) {
            conn_flush(c);
            continue;
        }
        if (h2_session_expire(c->h2, now_ms) != 0) {
            conn_refusal_note(&set->limit->refusals, CONN_REFUSED_REQUEST_TIMEOUT, c->peer,
                              H2_EXPIRED_MSG);
            c->fatal = true;   /* closes once its GOAWAY is out */
            conn_leaving(c);
        }
        if (idle_ms && !c->idle_closed && h2_session_calls(c->h2) == 0 &&
            now_ms - h2_session_active_ms(c->h2) >= idle_ms) {
            c->idle_closed = true;
            h2_session_goaway(c->h2);   /* no call open: it closes once the GOAWAY is out */
        }
        conn_flush(c);
    }
}

void conn_fail_all(struct conn_set *set, enum status_code code, const char *msg)
{
    for (struct conn *c = set->head; c; c = c->next) {
        if (c->closing)
            continue;
        h2_session_fail_all(c->h2, code, msg);
        conn_flush(c);
    }
}

void conn_close_all(struct conn_set *set)
{
    for (struct conn *c = set->head; c; c = c->next)
        conn_close(c, 0);
}
