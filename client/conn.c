/* SPDX-License-Identifier: MIT */
/* conn.c: a libampclient connection: one socket and one nghttp2 client
 * session. This is the only file of the library that touches the socket,
 * but for the writer thread it hands large batches to (conn_writer.c).
 *
 * The socket is non-blocking and driven by poll(): conn_pump() writes what
 * the session queued and feeds what arrives back into it, in both
 * directions at once, so a large request never deadlocks against a daemon
 * that is sending window updates or an early error. On a plain socket,
 * output of CONN_WRITER_MIN bytes or more (a 1 MiB DATA frame) is written
 * by the writer thread while this thread reads: the two kernel copies of
 * a stream's both directions then run at once. The session stays on this
 * thread; while the writer holds a batch the next is taken from nghttp2
 * into a second set of output and handed behind it (conn.h, outs), nothing
 * is written here, and a batch's end (an eventfd in the poll set) is taken
 * here as an inline write's is (conn_batch_take). Calls (call.c) are
 * sequential; each opens a new stream on the same session. Over TLS
 * (tls.c sets it up) the same loop moves ciphertext: what nghttp2 makes
 * is sealed into the connection's tls_pipe while nothing sealed waits,
 * and what arrives is opened record by record into the session; the
 * handshake runs as the connection opens (amp_connect_with(), and each
 * reconnection), so a certificate that does not verify fails there.
 */
#include "conn.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "abi.h"
#include "address.h"
#include "call.h"
#include "call_class.h"
#include "connect.h"
#include "data_frame.h"
#include "grow.h"
#include "heap.h"
#include "iov_send.h"
#include "monotonic.h"
#include "sock_writer.h"
#include "spin.h"
#include "tls.h"

_Static_assert(CONN_OUT_IOV <= SOCK_WRITER_IOV, "a set of output fits one writer batch");
_Static_assert(CONN_OUTS == SOCK_WRITER_QUEUE, "a set for each batch the writer takes");

#define CONN_OUT_BATCH (1024 * 1024)     /* stop pulling frames from nghttp2 past this */
#define CONN_OUT_INITIAL (64 * 1024)
/* A deadline (CLOCK_MONOTONIC ms) that passed long ago: conn_pump_once()
 * with it polls without waiting. */
#define CONN_LONG_PAST 1
/* Receive windows: large, so a big reply streams without waiting for a
 * WINDOW_UPDATE round trip every 64 KiB. Memory stays bounded because
 * nghttp2 hands data to call.c as it arrives. */
#define CONN_STREAM_WINDOW (16 * 1024 * 1024)
#define CONN_SESSION_WINDOW (64 * 1024 * 1024)

/* Why this thread's last amp_connect() failed: its amp_conn is gone by
 * the time the caller asks, so the message is kept here. */
static _Thread_local char conn_connect_message[CONN_MESSAGE_MAX];

long long conn_now_ms(void)
{
    return (long long)monotonic_ms();
}

int conn_fail(amp_conn *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->message, sizeof c->message, fmt, ap);
    va_end(ap);
    return code;
}

void conn_begin(amp_conn *c)
{
    c->message[0] = '\0';
    c->device[0] = '\0';
    c->grpc_status = -1;
}

/* --- opening ----------------------------------------------------------------- */

/* nghttp2 found the peer breaking HTTP/2 (it then ends the session with
 * GOAWAY): remember why, so the call reports AMP_EPROTO with a reason
 * instead of a bare "session ended". */
static int conn_on_error(nghttp2_session *s, int lib_error_code, const char *msg, size_t len,
                         void *user_data)
{
    (void)s;
    (void)lib_error_code;
    amp_conn *c = user_data;
    c->proto_error = 1;
    snprintf(c->proto_message, sizeof c->proto_message, "HTTP/2 error from the daemon: %.*s",
             (int)len, msg);
    return 0;
}

/* Makes room in o for more bytes past len. */
static int conn_out_reserve(struct conn_out *o, size_t more)
{
    return grow_bytes(&o->buf, &o->cap, CONN_OUT_INITIAL, o->len + more);
}

/* The set nghttp2's frames go into next: the one after those handed to
 * the writer; NULL while it holds as many as it takes. */
static struct conn_out *conn_out_filling(amp_conn *c)
{
    int handed = conn_writer_handed(&c->writer);
    return handed < CONN_OUTS ? &c->outs[(c->out_first + handed) % CONN_OUTS] : NULL;
}

static int conn_frame_pending(const struct conn_out *o)
{
    return o->frame_i < o->frame_n;
}

static int conn_out_pending(const struct conn_out *o)
{
    return o->pos < o->len || conn_frame_pending(o);
}

/* Forgets what o had to write: its bytes (kept allocated) and frame. */
static void conn_out_clear(struct conn_out *o)
{
    o->pos = o->len = 0;
    o->frame_i = o->frame_n = 0;
}

/* nghttp2's send_data callback, for the DATA of no_copy calls: the frame
 * is queued as its header and iovecs over the call's body, to go out with
 * one writev and no copy, and nghttp2 pauses so that nothing queues
 * behind it in this set. A frame over too many pieces (small fields
 * between large ones) is copied into the set's bytes instead. */
static int conn_send_data(nghttp2_session *s, nghttp2_frame *frame, const uint8_t *framehd,
                          size_t length, nghttp2_data_source *source, void *user_data)
{
    (void)s;
    (void)source;
    amp_conn *c = user_data;
    struct conn_out *o = conn_out_filling(c);   /* never NULL: only conn_fill_out sends */
    if (frame->data.padlen > 0 || !o)
        return NGHTTP2_ERR_CALLBACK_FAILURE;   /* never asked for: no padding callback */
    int32_t id = frame->hd.stream_id;
    int n = call_body_iov(c, id, length, o->frame + 1, CONN_FRAME_IOV - 1);
    if (n == -1) {
        if (conn_out_reserve(o, CONN_FRAME_HD + length) != 0)
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        if (call_body_copy(c, id, length, o->buf + o->len + CONN_FRAME_HD) != 0)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        memcpy(o->buf + o->len, framehd, CONN_FRAME_HD);
        o->len += CONN_FRAME_HD + length;
        return 0;
    }
    if (n < 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;   /* the call is gone: reset */
    memcpy(o->frame_hd, framehd, CONN_FRAME_HD);
    o->frame[0] = (struct iovec){ o->frame_hd, CONN_FRAME_HD };
    o->frame_i = 0;
    o->frame_n = n + 1;
    return NGHTTP2_ERR_PAUSE;
}

static int conn_open_session(amp_conn *c)
{
    nghttp2_session_callbacks *cbs;
    if (nghttp2_session_callbacks_new(&cbs) != 0)
        return conn_fail(c, AMP_ENOMEM, "out of memory");
    call_session_callbacks(cbs);
    nghttp2_session_callbacks_set_error_callback2(cbs, conn_on_error);
    nghttp2_session_callbacks_set_data_source_read_length_callback(cbs, data_frame_len);
    nghttp2_session_callbacks_set_send_data_callback(cbs, conn_send_data);
    int rv = nghttp2_session_client_new(&c->h2, cbs, c);
    nghttp2_session_callbacks_del(cbs);
    if (rv != 0)
        return conn_fail(c, AMP_ENOMEM, "nghttp2: %s", nghttp2_strerror(rv));
    nghttp2_settings_entry iv[] = {
        { NGHTTP2_SETTINGS_ENABLE_PUSH, 0 },
        { NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, CONN_STREAM_WINDOW },
        { NGHTTP2_SETTINGS_MAX_FRAME_SIZE, DATA_FRAME_MAX },
    };
    rv = nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, iv, sizeof iv / sizeof iv[0]);
    if (rv == 0)
        rv = nghttp2_session_set_local_window_size(c->h2, NGHTTP2_FLAG_NONE, 0,
                                                   CONN_SESSION_WINDOW);
    if (rv != 0)
        return conn_fail(c, AMP_ENOMEM, "nghttp2: %s", nghttp2_strerror(rv));
    return 0;
}

static int conn_tls_handshake(amp_conn *c, const struct address *a);
static void conn_shut(amp_conn *c);
static void conn_batch_stop(amp_conn *c);

/* Opens c's socket, its TLS if asked for, and its HTTP/2 session to a. */
static int conn_open_one(amp_conn *c, const struct address *a)
{
    char err[256];
    int tls = a->tls || c->tls_opts.on;
    if (tls && a->kind == ADDRESS_UNIX)
        return conn_fail(c, AMP_EINVAL, "TLS needs a TCP address, not unix:%s", a->path);
    c->region_path[0] = '\0';
    int rc = connect_open(c, a, c->connect_timeout_ms);
    if (rc == 0 && a->kind == ADDRESS_UNIX &&
        address_region_path(a, c->region_path, sizeof c->region_path) != 0)
        c->region_path[0] = '\0';   /* too long a path: no regions */
    if (rc == 0 && tls) {
        rc = tls_client_new(a->host, &c->tls_opts, &c->tls, err, sizeof err);
        if (rc != 0)
            conn_fail(c, rc, "%s", err);
        else
            rc = conn_tls_handshake(c, a);
    }
    if (rc == 0)
        rc = conn_open_session(c);
    if (rc == 0)
        conn_flush_nowait(c); /* the preface and settings; replies are read with the first call */
    return rc;
}

/* Opens c to its current target, or else to the next that can be opened,
 * each tried once. */
static int conn_open(amp_conn *c)
{
    int rc = conn_open_one(c, &c->targets[c->target]);
    for (size_t tried = 1; rc != 0 && tried < c->ntargets; tried++) {
        conn_shut(c);
        c->target = (c->target + 1) % c->ntargets;
        rc = conn_open_one(c, &c->targets[c->target]);
    }
    if (rc != 0 && c->ntargets > 1) {
        char why[CONN_MESSAGE_MAX];
        snprintf(why, sizeof why, "%s", c->message);
        conn_fail(c, rc, "none of the %zu addresses could be opened; the last: %s", c->ntargets,
                  why);
    }
    return rc;
}

int conn_move_on(amp_conn *c)
{
    if (c->ntargets < 2 || c->no_reconnect || c->calls)
        return 0;
    conn_shut(c);
    c->broken = 1;   /* conn_ready() opens the next */
    c->target = (c->target + 1) % c->ntargets;
    return 1;
}

/* Ends c's session, TLS and socket, keeping the connection's settings. */
static void conn_shut(amp_conn *c)
{
    conn_batch_stop(c);   /* the GOAWAY goes after what the writer took, if the socket takes it */
    if (c->h2 && !c->broken) {
        nghttp2_session_terminate_session(c->h2, NGHTTP2_NO_ERROR);
        conn_flush_nowait(c);
    }
    loop_forget(c);                /* amp_fd() stops watching what closes here */
    conn_writer_end(&c->writer);   /* before the socket it writes to closes */
    nghttp2_session_del(c->h2);
    c->h2 = NULL;
    region_link_put(c->regions);   /* regions still held keep their registrations */
    c->regions = NULL;
    tls_pipe_free(c->tls);
    c->tls = NULL;
    c->tls_unsent = 0;
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    for (int i = 0; i < CONN_OUTS; i++)
        conn_out_clear(&c->outs[i]);
    c->out_first = 0;
    c->broken = c->proto_error = 0;
    c->goaway[0] = '\0';
    c->goaway_error = NGHTTP2_NO_ERROR;
    c->sent = 0;
}

/* The authorization header for amp_connect_opts.token (NULL or "": none),
 * checked to be a header value that cannot end or split the header. */
static int conn_token_set(amp_conn *c, const amp_connect_opts *o)
{
    const char *token = o && ABI_HAS(o, amp_connect_opts, token) ? o->token : NULL;
    if (!token || !token[0])
        return 0;
    for (const char *p = token; *p; p++)
        if (*p <= ' ' || *p > '~')
            return conn_fail(c, AMP_EINVAL,
                             "opts.token must be visible ASCII without spaces (byte %zu is not)",
                             (size_t)(p - token));
    size_t n = strlen(CONN_BEARER) + strlen(token) + 1;
    c->authorization = malloc(n);
    if (!c->authorization)
        return AMP_ENOMEM;
    snprintf(c->authorization, n, "%s%s", CONN_BEARER, token);
    return 0;
}

/* amp_connect_opts.priority, max_queue_us and server_timing, kept as the
 * metadata every call sends (call_submit). */
static int conn_class_set(amp_conn *c, const amp_connect_opts *o)
{
    const char *priority = o && ABI_HAS(o, amp_connect_opts, priority) ? o->priority : NULL;
    if (priority) {
        int p = call_class_priority_parse(priority, strlen(priority));
        if (p < 0)
            return conn_fail(c, AMP_EINVAL, "opts.priority must be low, normal or high");
        c->priority = call_class_priority_name(p);
    }
    if (o && ABI_HAS(o, amp_connect_opts, max_queue_us) && o->max_queue_us)
        grpc_timeout_format(c->max_queue, o->max_queue_us);
    c->ask_server_timing = o && ABI_HAS(o, amp_connect_opts, server_timing) && o->server_timing;
    return 0;
}

int amp_connect_with(const char *address, const amp_connect_opts *o, amp_conn **out)
{
    if (!out) {
        snprintf(conn_connect_message, sizeof conn_connect_message, "out must not be NULL");
        return AMP_EINVAL;
    }
    *out = NULL;
    snprintf(conn_connect_message, sizeof conn_connect_message, "out of memory");
    amp_conn *c = calloc(1, sizeof *c);
    if (!c)
        return AMP_ENOMEM;
    c->fd = -1;
    c->grpc_status = -1;
    c->loop = (struct conn_loop){ .epfd = -1, .wake = -1, .sock = -1, .writer = -1 };
    c->in = malloc(CONN_READ_CHUNK);
    c->address = strdup(address ? address : AMP_DEFAULT_ADDRESS);
    int rc = !c->in || !c->address ? AMP_ENOMEM : 0;
    char err[CONN_MESSAGE_MAX];
    if (rc == 0 && address_parse_list(c->address, c->targets, ADDRESS_LIST_MAX, &c->ntargets, err,
                                      sizeof err) != 0)
        rc = conn_fail(c, AMP_EADDR, "%s", err);
    c->target = connect_rotation(c->ntargets);
    if (rc == 0 && o && abi_check_size(c, "opts", o->size, ABI_CONNECT_OPTS_MIN) != 0)
        rc = AMP_EINVAL;
    else if (rc == 0 && o && o->timeout_ms < 0)
        rc = conn_fail(c, AMP_EINVAL, "opts.timeout_ms must be >= 0, got %d", o->timeout_ms);
    int poll_us = o && ABI_HAS(o, amp_connect_opts, busy_poll_us) ? o->busy_poll_us : 0;
    if (rc == 0 && poll_us > AMP_BUSY_POLL_MAX_US)
        rc = conn_fail(c, AMP_EINVAL, "opts.busy_poll_us must be at most %d, got %d",
                       AMP_BUSY_POLL_MAX_US, poll_us);
    if (rc == 0) {
        c->connect_timeout_ms = o && o->timeout_ms ? o->timeout_ms : AMP_CONNECT_TIMEOUT_MS;
        c->no_reconnect = o ? o->no_reconnect : 0;
        c->busy_poll_ns = poll_us < 0 ? 0 : (uint64_t)(poll_us ? poll_us : AMP_BUSY_POLL_US) * 1000;
        rc = tls_client_opts_set(&c->tls_opts, o);
    }
    if (rc == 0)
        rc = conn_token_set(c, o);
    if (rc == 0)
        rc = conn_class_set(c, o);
    if (rc == 0)
        rc = conn_open(c);
    if (rc != 0) {
        if (rc != AMP_ENOMEM)
            snprintf(conn_connect_message, sizeof conn_connect_message, "%s", c->message);
        amp_close(c);
        return rc;
    }
    conn_connect_message[0] = '\0';
    *out = c;
    return 0;
}

int amp_connect(const char *address, amp_conn **out)
{
    return amp_connect_with(address, NULL, out);
}

void amp_close(amp_conn *c)
{
    if (!c)
        return;
    async_close(c);
    conn_shut(c);
    loop_close(c);
    tls_client_opts_free(&c->tls_opts);
    free(c->authorization);
    for (int i = 0; i < CONN_OUTS; i++)
        free(c->outs[i].buf);
    free(c->in);
    free(c->address);
    free(c);
}

int amp_last_grpc_status(const amp_conn *c)
{
    return c ? c->grpc_status : -1;
}

const char *amp_last_message(const amp_conn *c)
{
    return c ? c->message : conn_connect_message;
}

const char *amp_last_device(const amp_conn *c)
{
    return c ? c->device : "";
}

const char *amp_last_server_timing(const amp_conn *c)
{
    return c ? c->server_timing : "";
}

void amp_free(void *p)
{
    heap_give(p);
}

/* --- moving bytes ------------------------------------------------------------ */

static int conn_broke(amp_conn *c, int code, const char *what, int err)
{
    c->broken = 1;
    /* Nothing more goes out on a broken connection; what the writer did
     * write counts in c->sent now, for the retry rule (call.c). */
    conn_batch_stop(c);
    if (err)
        return conn_fail(c, code, "%s: %s", what, strerror(err));
    if (code == AMP_EPROTO && what != c->proto_message) {
        c->proto_error = 1;   /* kept: such a peer is not reconnected to */
        snprintf(c->proto_message, sizeof c->proto_message, "%s", what);
    }
    return conn_fail(c, code, "%s", what);
}

/* Appends the session's pending frames to the set being filled (up to a
 * batch), and stops at a borrowed DATA frame (conn_send_data). Takes
 * nothing while the writer holds every set. */
static int conn_fill_out(amp_conn *c)
{
    struct conn_out *o = conn_out_filling(c);
    if (!o)
        return 0;
    if (o->pos == o->len)
        o->pos = o->len = 0;
    while (!conn_frame_pending(o) && o->len < CONN_OUT_BATCH) {
        const uint8_t *data;
        ssize_t n = nghttp2_session_mem_send(c->h2, &data);
        if (n < 0)
            return conn_broke(c, AMP_EPROTO, nghttp2_strerror((int)n), 0);
        if (n == 0)
            break;   /* nothing left, or paused at a borrowed frame */
        if (conn_out_reserve(o, (size_t)n) != 0)
            return conn_broke(c, AMP_ENOMEM, "out of memory", 0);
        memcpy(o->buf + o->len, data, (size_t)n);
        o->len += (size_t)n;
    }
    return 0;
}

/* Moves o's cursors past w written bytes: its bytes first, then the
 * borrowed frame. */
static void conn_advance(struct conn_out *o, size_t w)
{
    size_t k = o->len - o->pos < w ? o->len - o->pos : w;
    o->pos += k;
    w -= k;
    while (w > 0 && conn_frame_pending(o)) {
        struct iovec *v = &o->frame[o->frame_i];
        size_t m = v->iov_len < w ? v->iov_len : w;
        v->iov_base = (uint8_t *)v->iov_base + m;
        v->iov_len -= m;
        w -= m;
        if (v->iov_len == 0)
            o->frame_i++;
    }
    if (!conn_frame_pending(o))
        o->frame_i = o->frame_n = 0;
}

/* One non-blocking sendmsg of n iovecs (n > 0) on c's socket: the bytes
 * it took (0: none now), or an AMP_E* code when the connection broke. */
static ssize_t conn_send_iov(amp_conn *c, struct iovec *iov, int n)
{
    struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
    for (;;) {
        ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w >= 0)
            return w;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        if (errno != EINTR)
            return conn_broke(c, AMP_EIO, "write to daemon", errno);
    }
}

/* Sends the pipe's ciphertext while the socket takes it. */
static int conn_tls_send(amp_conn *c)
{
    for (;;) {
        const uint8_t *p;
        size_t n = tls_pipe_out(c->tls, &p);
        if (n == 0)
            return 0;
        ssize_t w = conn_send_iov(c, &(struct iovec){ (void *)p, n }, 1);
        if (w <= 0)
            return (int)w;
        tls_pipe_out_done(c->tls, (size_t)w);
        c->sent += c->tls_unsent;   /* some of their records may have reached the daemon */
        c->tls_unsent = 0;
    }
}

/* What o has waiting to be written, in order: the rest of its bytes,
 * then the unwritten part of the borrowed frame. Returns the iovecs used. */
static int conn_pending_iov(const struct conn_out *o, struct iovec iov[CONN_OUT_IOV])
{
    int n = 0;
    if (o->pos < o->len)
        iov[n++] = (struct iovec){ o->buf + o->pos, o->len - o->pos };
    for (int i = o->frame_i; i < o->frame_n; i++)
        iov[n++] = o->frame[i];
    return n;
}

/* For each of the writer's batches that ended, oldest first, does what an
 * inline write does after writing: counts the bytes and moves the oldest
 * set's cursors past them (a set written whole gives way to the next); a
 * socket failure breaks the connection as it would inline (unless it
 * broke already, whose reason stays). A batch stopped behind one that did
 * not finish wrote nothing: its set stays as it is, behind the first. */
static int conn_batch_take(amp_conn *c)
{
    size_t w;
    int err, rc = 0;
    while (conn_writer_take(&c->writer, &w, &err)) {
        struct conn_out *o = &c->outs[c->out_first];
        c->sent += (uint64_t)w;
        conn_advance(o, w);
        if (!conn_out_pending(o))
            c->out_first = (c->out_first + 1) % CONN_OUTS;
        if (err && !c->broken)
            rc = conn_broke(c, AMP_EIO, "write to daemon", err);
    }
    return rc;
}

/* Ends the writer's batches now, wherever they got to, and takes their
 * results. */
static void conn_batch_stop(amp_conn *c)
{
    conn_writer_stop(&c->writer);
    conn_batch_take(c);
}

/* Hands the set being filled to the writer thread on a plain socket: a
 * large batch, or, behind a batch the writer has, one that can take no
 * more (it ends at a borrowed frame), so that the next frame can be made
 * while the writer is busy. Returns whether the writer holds a batch. */
static int conn_batch_hand(amp_conn *c)
{
    if (c->tls)
        return 0;
    int handed = conn_writer_handed(&c->writer);
    struct conn_out *o = conn_out_filling(c);
    if (!o)
        return handed;
    struct iovec batch[CONN_OUT_IOV];   /* the writer keeps its own copy */
    int n = conn_pending_iov(o, batch);
    int hand = n > 0 && (iov_total(batch, n) >= CONN_WRITER_MIN ||
                         (handed > 0 && conn_frame_pending(o)));
    if (hand && conn_writer_hand(&c->writer, c->fd, batch, n) == 0)
        handed++;
    return handed;
}

/* conn_write_some over TLS: the set's bytes and borrowed frame are sealed
 * whole once what was sealed before has gone, so at most one batch of
 * ciphertext waits, and the frame's memory is free as soon as it is. (A
 * TLS connection has no writer: its one set is outs[out_first].) */
static int conn_tls_write_some(amp_conn *c)
{
    struct conn_out *o = &c->outs[c->out_first];
    for (;;) {
        int rc = conn_tls_send(c);
        if (rc != 0 || tls_pipe_pending(c->tls) > 0)
            return rc;
        struct iovec iov[CONN_OUT_IOV];
        int n = conn_pending_iov(o, iov);
        if (n == 0)
            return 0;
        size_t len = iov_total(iov, n);
        if (tls_pipe_write(c->tls, iov, n) != 0)
            return conn_broke(c, AMP_EIO, tls_pipe_why(c->tls), 0);
        c->tls_unsent += len;
        conn_advance(o, len);
    }
}

/* Writes as much of the output as the socket takes now, or hands a large
 * batch of it to the writer; nothing here while the writer holds one. */
static int conn_write_some(amp_conn *c)
{
    if (c->tls)
        return conn_tls_write_some(c);
    if (conn_batch_hand(c))
        return 0;
    struct conn_out *o = &c->outs[c->out_first];   /* with the writer idle, the only set */
    for (;;) {
        struct iovec iov[CONN_OUT_IOV];
        int n = conn_pending_iov(o, iov);
        if (n == 0)
            return 0;
        ssize_t w = conn_send_iov(c, iov, n);
        if (w <= 0)
            return (int)w;
        c->sent += (uint64_t)w;
        conn_advance(o, (size_t)w);
    }
}

/* Appends the n pieces of iov to o's bytes. Returns 0, or -1 out of
 * memory. */
static int conn_out_append(struct conn_out *o, const struct iovec *iov, int n)
{
    if (n == 0)
        return 0;
    if (conn_out_reserve(o, iov_total(iov, n)) != 0)
        return -1;
    for (int i = 0; i < n; i++) {
        memcpy(o->buf + o->len, iov[i].iov_base, iov[i].iov_len);
        o->len += iov[i].iov_len;
    }
    return 0;
}

void conn_own_output(amp_conn *c)
{
    int framed = 0;
    for (int i = 0; i < CONN_OUTS; i++)
        framed |= conn_frame_pending(&c->outs[i]);
    if (!framed)
        return;
    /* The writer lets go of the frames; what it wrote is written. What is
     * left, in order, becomes the oldest set's own bytes: its frame, then
     * each later set's bytes and frame. */
    conn_batch_stop(c);
    struct conn_out *o = &c->outs[c->out_first];
    int rc = conn_out_append(o, o->frame + o->frame_i, o->frame_n - o->frame_i);
    o->frame_i = o->frame_n = 0;
    for (int i = 1; i < CONN_OUTS; i++) {
        struct conn_out *from = &c->outs[(c->out_first + i) % CONN_OUTS];
        struct iovec iov[CONN_OUT_IOV];
        if (rc == 0)
            rc = conn_out_append(o, iov, conn_pending_iov(from, iov));
        conn_out_clear(from);
    }
    if (rc != 0)
        conn_broke(c, AMP_ENOMEM, "out of memory", 0);   /* half a frame cannot be taken back */
}

/* Opens the records that arrived and feeds their plaintext to the session. */
static int conn_tls_open(amp_conn *c, const uint8_t *data, size_t len)
{
    if (tls_pipe_recv(c->tls, data, len) != 0)
        return conn_broke(c, AMP_ENOMEM, "out of memory", 0);
    for (;;) {
        /* A reply's bulk bytes are opened straight where the call wants them. */
        size_t room;
        uint8_t *dest = call_read_dest(c, &room);
        const uint8_t *plain = dest;
        ssize_t n = dest ? tls_pipe_read_into(c->tls, dest, room) : tls_pipe_read(c->tls, &plain);
        if (n == TLS_PIPE_AGAIN)
            return conn_tls_send(c);   /* what reading made (a key update's answer) */
        if (n == TLS_PIPE_EOF && c->goaway[0]) {
            /* A refusal (a limit, a drain) is a GOAWAY saying why, then
             * the end of TLS: the why is the news. */
            c->broken = 1;
            conn_batch_stop(c);
            return call_refused(c);
        }
        if (n == TLS_PIPE_EOF)
            return conn_broke(c, AMP_EIO, "the daemon ended TLS", 0);
        if (n < 0) {
            conn_tls_send(c);   /* the alert, if the socket takes it */
            c->broken = 1;
            return conn_fail(c, AMP_EIO, "TLS from the daemon: %s", tls_pipe_why(c->tls));
        }
        ssize_t used = nghttp2_session_mem_recv(c->h2, plain, (size_t)n);
        if (used < 0)
            return conn_broke(c, AMP_EPROTO, nghttp2_strerror((int)used), 0);
    }
}

/* Reads what is available and feeds it to the session. */
static int conn_read_some(amp_conn *c)
{
    /* A reply's bulk bytes may go straight where the call wants them;
     * over TLS, the ciphertext straight into the pipe's input buffer. */
    size_t want = CONN_READ_CHUNK;   /* either may lower it, call_read_dest also for c->in */
    uint8_t *buf = c->tls ? tls_pipe_recv_dest(c->tls, &want) : call_read_dest(c, &want);
    if (!buf)
        buf = c->in;
    ssize_t n = recv(c->fd, buf, want, MSG_DONTWAIT);
    if (n < 0) {
        if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        return conn_broke(c, AMP_EIO, "read from daemon", errno);
    }
    if (n == 0)
        return conn_broke(c, AMP_EIO, "the daemon closed the connection", 0);
    c->heard_ns = monotonic_ns();
    if (c->tls)
        return conn_tls_open(c, buf, (size_t)n);
    ssize_t used = nghttp2_session_mem_recv(c->h2, buf, (size_t)n);
    if (used < 0)
        return conn_broke(c, AMP_EPROTO, nghttp2_strerror((int)used), 0);
    return 0;
}

void conn_flush_nowait(amp_conn *c)
{
    if (c->broken)
        return;
    if (conn_fill_out(c) == 0)
        conn_write_some(c);
}

static int conn_poll_timeout(long long deadline_ms)
{
    if (deadline_ms == 0)
        return -1;
    long long left = deadline_ms - conn_now_ms();
    return left <= 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left;
}

/* Threads of this process polling at once (conn_busy_poll), and at most
 * how many may: more would take CPUs from the daemon they wait on when
 * it runs on the same host (16 blocking connections on 16 CPUs lost a
 * fifth of their calls/s to polling). */
static atomic_int conn_pollers;
static atomic_int conn_pollers_max;

static int conn_pollers_limit(void)
{
    int max = atomic_load_explicit(&conn_pollers_max, memory_order_relaxed);
    if (!max) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        max = cpus >= 2 * CONN_CPUS_PER_POLLER ? (int)(cpus / CONN_CPUS_PER_POLLER) : 1;
        atomic_store_explicit(&conn_pollers_max, max, memory_order_relaxed);
    }
    return max;
}

/* Whether the call in progress is one a wake-up would slow: a blocking
 * unary call with a small request. With calls started without waiting in
 * flight, answers keep arriving and polling only took CPU (on the H100,
 * 4 x 64 calls/s fell by a sixth); a stream or a large call is bound by
 * its bytes, and polling between its reads took CPU from the daemon (a
 * 1 GiB transform stream: 2.42-2.51 -> 2.12-2.18 GB/s). */
static int conn_call_polls(const amp_conn *c)
{
    return c->call && !c->call->on_message && !c->calls &&
           c->call->body.len <= AMP_BUSY_POLL_MAX_REQUEST;
}

/* Whether the daemon's loop is likely still polling: it polls for a
 * while after each reply, on its own CPU, and a call made then finds it
 * awake. A call made later wakes it, and Linux runs a thread a socket
 * write woke on the writer's CPU when it can: a caller polling there
 * holds off the very loop it waits for until its poll ends (a call every
 * ms on 2 idle cores took 160 us polling, 75 us not). */
static int conn_daemon_awake(const amp_conn *c)
{
    return monotonic_ns() - c->heard_ns < c->busy_poll_ns;
}

/* poll() without sleeping for up to busy_poll_ns, or until another
 * thread wants the CPU (spin.h): what poll() returned, 0 when nothing
 * came in that time or the call does not poll (conn_call_polls, and
 * conn_daemon_awake); at most conn_pollers_limit() threads at once. */
static int conn_busy_poll(amp_conn *c, struct pollfd *pfd, nfds_t n)
{
    if (!c->busy_poll_ns || !conn_call_polls(c) || !conn_daemon_awake(c))
        return 0;
    if (atomic_fetch_add(&conn_pollers, 1) >= conn_pollers_limit()) {
        atomic_fetch_sub(&conn_pollers, 1);
        return 0;
    }
    struct spin s;
    spin_start(&s, c->busy_poll_ns);
    int got;
    while ((got = poll(pfd, n, 0)) == 0 && spin_on(&s)) {
    }
    atomic_fetch_sub(&conn_pollers, 1);
    return got;
}

int conn_pump_once(amp_conn *c, long long deadline_ms, const int *done)
{
    if (c->broken)
        return conn_fail(c, AMP_EIO, "the connection to the daemon broke earlier; reconnect");
    int rc = conn_batch_take(c);
    if (rc == 0)
        rc = conn_fill_out(c);
    if (rc != 0)
        return rc;
    if (*done) {
        conn_write_some(c); /* window updates etc.; the rest goes with the next call */
        return 0;
    }
    /* A large batch goes to the writer at once; the socket is then polled
     * for reading only, and a batch's end wakes the poll. One just handed
     * with room for another behind it: the caller queues the next (a
     * stream's next message) before anything waits. */
    int handed = conn_writer_handed(&c->writer);
    int writing = conn_batch_hand(c);
    if (writing > handed && writing < CONN_OUTS)
        return 0;
    int pending = !writing && (conn_out_pending(&c->outs[c->out_first]) ||
                               (c->tls && tls_pipe_pending(c->tls) > 0));
    if (pending) {
        /* The socket mostly takes output at once: write it before polling
         * (a poll for POLLOUT first costs a wake-up for nothing), and once
         * some went, let the caller queue more before anything waits. */
        uint64_t before = c->sent;
        rc = conn_write_some(c);
        if (rc != 0 || c->sent != before)
            return rc;
    }
    if (!writing && !pending && !nghttp2_session_want_read(c->h2)) {
        if (c->proto_error)
            return conn_broke(c, AMP_EPROTO, c->proto_message, 0);
        return conn_broke(c, AMP_EIO, "the daemon ended the HTTP/2 session", 0);
    }
    struct pollfd pfd[2] = {
        { c->fd, (short)(POLLIN | (pending ? POLLOUT : 0)), 0 },
        { writing ? conn_writer_fd(&c->writer) : -1, POLLIN, 0 },
    };
    int n = conn_busy_poll(c, pfd, writing ? 2 : 1);
    int timeout = conn_poll_timeout(deadline_ms);   /* after the polling: it took time */
    if (n == 0)
        n = poll(pfd, writing ? 2 : 1, timeout);
    if (n < 0 && errno == EINTR)
        return 0;
    if (n < 0)
        return conn_broke(c, AMP_EIO, "poll", errno);
    if (n == 0 && timeout >= 0)
        return conn_fail(c, AMP_EDEADLINE, "deadline exceeded waiting for the daemon");
    if (pfd[1].revents & POLLIN)
        rc = conn_batch_take(c);
    if (rc == 0 && (pfd[0].revents & POLLOUT))
        rc = conn_write_some(c);
    if (rc == 0 && (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
        rc = conn_read_some(c);
    return rc;
}

int conn_pump_nowait(amp_conn *c)
{
    static const int not_done = 0;
    return conn_pump_once(c, CONN_LONG_PAST, &not_done);
}

int conn_wants_write(const amp_conn *c)
{
    if (c->broken || c->fd < 0)
        return 0;
    if (c->tls)
        return tls_pipe_pending(c->tls) > 0 || conn_out_pending(&c->outs[c->out_first]);
    return !conn_writer_handed(&c->writer) && conn_out_pending(&c->outs[c->out_first]);
}

uint64_t conn_sent_mark(const amp_conn *c)
{
    uint64_t mark = c->sent + c->tls_unsent;
    for (int k = 0; k < CONN_OUTS; k++) {
        struct iovec iov[CONN_OUT_IOV];
        mark += iov_total(iov, conn_pending_iov(&c->outs[k], iov));
    }
    return mark;
}

/* Reads what the daemon sent while no call was running (a GOAWAY, the
 * end of the connection), without waiting. */
static void conn_take_idle(amp_conn *c)
{
    struct pollfd pfd = { c->fd, POLLIN, 0 };
    while (!c->broken && poll(&pfd, 1, 0) == 1 && conn_read_some(c) == 0)
        ;
}

int conn_ready(amp_conn *c)
{
    if (!c->broken)
        conn_take_idle(c);
    /* A peer that broke HTTP/2 (seen now, or by an earlier call) is no
     * daemon to reconnect to. */
    if (c->proto_error)
        return conn_broke(c, AMP_EPROTO, c->proto_message, 0);
    if (!c->broken && nghttp2_session_check_request_allowed(c->h2))
        return 0;
    if (c->no_reconnect)
        return conn_fail(c, AMP_EIO, "the connection to the daemon broke earlier; reconnect");
    conn_shut(c);
    char why[CONN_MESSAGE_MAX];
    int rc = conn_open(c);
    if (rc != 0) {
        snprintf(why, sizeof why, "%s", c->message);
        conn_fail(c, rc, "the connection to the daemon ended; reconnecting: %s", why);
        c->broken = 1;   /* the next call tries again */
    }
    return rc;
}

int conn_pump(amp_conn *c, long long deadline_ms, const int *done)
{
    for (;;) {
        int was_done = *done; /* one more round after done flushes what it queued */
        int rc = conn_pump_once(c, deadline_ms, done);
        if (rc != 0 || was_done)
            return rc;
    }
}

/* Runs the TLS handshake to its end, within the connect timeout (a
 * daemon that accepted but never answers is one that does not take the
 * connection), so that a certificate that does not verify, or a daemon
 * that does not speak TLS there, fails the connect with AMP_ETLS and the
 * reason. */
static int conn_tls_handshake(amp_conn *c, const struct address *a)
{
    long long deadline = conn_now_ms() + c->connect_timeout_ms;
    for (;;) {
        int hs = tls_pipe_handshake(c->tls);
        int rc = conn_tls_send(c);   /* what it made: hello, finished, or an alert */
        if (hs < 0)
            return conn_fail(c, AMP_ETLS, "TLS handshake with %s:%d: %s", a->host, a->port,
                             tls_pipe_why(c->tls));
        if (rc != 0)
            return rc;
        if (hs == 1)
            break;
        short events = (short)(POLLIN | (tls_pipe_pending(c->tls) > 0 ? POLLOUT : 0));
        struct pollfd pfd = { c->fd, events, 0 };
        int n = poll(&pfd, 1, conn_poll_timeout(deadline));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return conn_broke(c, AMP_EIO, "poll", errno);
        if (n == 0)
            return conn_fail(c, AMP_ETLS, "TLS handshake with %s:%d: no answer within %d ms",
                             a->host, a->port, c->connect_timeout_ms);
        if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        ssize_t got = recv(c->fd, c->in, CONN_READ_CHUNK, MSG_DONTWAIT);
        if (got < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (got <= 0)
            return conn_fail(c, AMP_ETLS, "TLS handshake with %s:%d: the daemon closed the "
                             "connection (is it a tls: listener?)", a->host, a->port);
        if (tls_pipe_recv(c->tls, c->in, (size_t)got) != 0)
            return conn_fail(c, AMP_ENOMEM, "out of memory");
    }
    char err[128];
    int rc = tls_client_check(c->tls, err, sizeof err);
    return rc == 0 ? 0 : conn_fail(c, rc, "%s", err);
}
