/* SPDX-License-Identifier: MIT */
/* h2_reply.c: every call's replies (see h2.h): a queue of messages per
 * call, handed to nghttp2 by one data provider, then the trailers.
 *
 * A unary reply is a queue of one message on a call that is finishing
 * (h2_call_reply, or h2_call_reply_body for one that borrows its bulk
 * bytes, a job's results, where they lie); a stream call queues messages as they come (h2_call_send, h2_call_send_ref)
 * and ends with h2_call_finish() or a failure. The provider gives nghttp2
 * as much of the queue as a DATA frame takes, several small messages per
 * frame; it defers while the queue is empty and the call is not finishing,
 * and submits the trailers once it is. Reply bytes are never copied into
 * nghttp2's frames: a DATA frame is the session's header and iovecs over
 * the queued messages' pieces (common/body.h; NO_COPY), and messages it
 * took wait in the session's write until the owner has written it
 * (h2_session_written, h2_reply_write_done). Neighbours: h2.c owns the session,
 * the nghttp2 callbacks and the calls' life; h2_stream.c the request side
 * of stream calls; h2_internal.h holds what they share.
 */
#include <nghttp2/nghttp2.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "body.h"
#include "grpc_frame.h"
#include "h2.h"
#include "h2_internal.h"

/* One queued reply message of a call. */
struct h2_out {
    struct h2_out *next;
    struct body body;  /* the gRPC prefix and the message: owned pieces, and borrowed ones
                        * (a staging buffer, a job's results) that stay put until release */
    uint64_t held;     /* bytes of the budget it holds, given back when it is freed */
    void (*release)(void *ctx); /* gives the borrowed pieces back; NULL: none */
    void *release_ctx;
    size_t pos;        /* pos <= body.len: taken by nghttp2 */
};

/* Frees o, gives its borrowed pieces back and its bytes back to the
 * session's budget (its client's got them back when it left its call). */
static void h2_out_release(struct h2_session *s, struct h2_out *o)
{
    h2_give_session(s, o->held);
    body_free(&o->body);
    if (o->release)
        o->release(o->release_ctx);
    free(o);
}

/* o, a message that left its call's queue after a DATA frame took some
 * of it: held until the writes that may point into it are written, by the
 * write being built (which is written after every write before it), or by
 * the newest in flight; freed now when there is neither. */
static void h2_out_defer(struct h2_session *s, struct h2_out *o)
{
    struct h2_write *w = s->building ? h2_write_next(s)
                         : s->write_n > 0
                             ? &s->writes[(s->write_first + s->write_n - 1) % H2_WRITES]
                             : NULL;
    if (!w) {
        h2_out_release(s, o);
        return;
    }
    o->next = w->done;
    w->done = o;
}

void h2_reply_defer_all(struct h2_session *s, struct h2_out *list)
{
    while (list) {
        struct h2_out *o = list;
        list = o->next;
        h2_out_defer(s, o);
    }
}

/* Drops o, a message of c that left c's queue. One that a DATA frame
 * still on its way to the socket may point into (begun) waits for its
 * write instead, whatever happens to c meanwhile. */
static void h2_out_free(struct h2_call *c, struct h2_out *o)
{
    struct h2_session *s = c->s;
    c->out_held -= o->held;
    h2_give_share(c, o->held);
    if (o->pos > 0) {
        h2_out_defer(s, o);
        return;
    }
    h2_out_release(s, o);
}

void h2_reply_free_all(struct h2_call *c)
{
    while (c->out_head) {
        struct h2_out *o = c->out_head;
        c->out_head = o->next;
        h2_out_free(c, o);
    }
    c->out_tail = NULL;
    c->unsent = 0;
}

int h2_reply_send_data(nghttp2_session *ng, nghttp2_frame *frame, const uint8_t *framehd,
                       size_t length, nghttp2_data_source *source, void *user_data)
{
    (void)ng;
    (void)source;
    struct h2_write *w = h2_write_next(user_data);
    if (frame->data.padlen > 0 || w->frame_n == 0 || length != w->frame_len)
        return NGHTTP2_ERR_CALLBACK_FAILURE;   /* no padding is ever asked for */
    memcpy(w->frame_hd, framehd, sizeof(w->frame_hd));
    w->frame[0] = (struct iovec){ w->frame_hd, sizeof(w->frame_hd) };
    w->frame_ready = true;
    return NGHTTP2_ERR_PAUSE;
}

void h2_reply_write_done(struct h2_session *s, struct h2_write *w)
{
    h2_write_forget_frame(w);
    while (w->done) {
        struct h2_out *o = w->done;
        w->done = o->next;
        h2_out_release(s, o);
    }
}

/* Lets nghttp2 call h2_reply_read again after it returned DEFERRED. */
static void h2_reply_kick(struct h2_call *c)
{
    if (c->out_deferred) {
        c->out_deferred = false;
        nghttp2_session_resume_data(c->s->ng, c->stream_id);
    }
}

/* Data provider of every call: the queued messages in order, several per
 * DATA frame when they are small; DEFERRED while the queue is empty and the
 * call is not finishing; trailers once it is. The bytes are not copied into
 * nghttp2's frame (NO_COPY): the session's frame points at them, and the
 * owner writes them from there (h2_session_sendv). */
static ssize_t h2_reply_read(nghttp2_session *ng, int32_t stream_id, uint8_t *buf, size_t length,
                             uint32_t *flags, nghttp2_data_source *source, void *user_data)
{
    (void)buf;
    (void)user_data;
    struct h2_call *c = source->ptr;
    struct h2_write *w = h2_write_next(c->s);
    size_t n = 0;
    w->frame_n = 1;   /* frame[0]: the header, from h2_reply_send_data */
    while (n < length && c->out_head && w->frame_n < H2_SEND_IOV) {
        struct h2_out *o = c->out_head;
        size_t k = o->body.len - o->pos;
        if (k > length - n)
            k = length - n;
        w->frame_n += body_iov_some(&o->body, o->pos, k, w->frame + w->frame_n,
                                    H2_SEND_IOV - w->frame_n, &k);
        o->pos += k;
        n += k;
        if (o->pos == o->body.len) {
            c->out_head = o->next;
            if (!c->out_head)
                c->out_tail = NULL;
            h2_out_free(c, o);   /* waits in w->done until written */
        }
    }
    w->frame_len = n;
    if (n)
        *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    else
        w->frame_n = 0;   /* an empty frame (the end) goes the usual way */
    if (n) {
        c->unsent -= n;
        c->sent_owed = c->kind == H2_STREAM;   /* sent() is for stream calls only */
        c->s->sent_pending |= c->sent_owed;
        c->s->active_ms = h2_now(c->s);
    }
    if (c->out_head)
        return (ssize_t)n;
    if (!c->finishing) {
        if (n)
            return (ssize_t)n;
        c->out_deferred = true;
        return NGHTTP2_ERR_DEFERRED;
    }
    *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    char status[16];
    snprintf(status, sizeof(status), "%d", (int)c->trailer_code);
    nghttp2_nv trailers[3] = {H2_NV("grpc-status", status)};
    size_t nt = 1;
    if (c->trailer_msg && c->trailer_msg[0])
        trailers[nt++] = (nghttp2_nv)H2_NV("grpc-message", c->trailer_msg);
    if (c->server_timing[0])
        trailers[nt++] = (nghttp2_nv)H2_NV(AMP_WIRE_SERVER_TIMING_TRAILER, c->server_timing);
    if (nghttp2_submit_trailer(ng, stream_id, trailers, nt) != 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    return (ssize_t)n;
}

/* Queues o (its prefix already written) and starts the response if need be. */
static int h2_reply_queue(struct h2_call *call, struct h2_out *o)
{
    if (call->out_tail)
        call->out_tail->next = o;
    else
        call->out_head = o;
    call->out_tail = o;
    call->unsent += o->body.len;
    if (!call->headers_sent) {
        const char *encoding = h2_deflate_name(call->reply_encoding);
        nghttp2_nv nv[] = {
            H2_NV(":status", HTTP_STATUS_OK),
            H2_NV("content-type", GRPC_CONTENT_TYPE),
            H2_NV("grpc-accept-encoding", H2_ACCEPT_ENCODING),
            H2_NV("grpc-encoding", encoding),
        };
        size_t nnv = sizeof(nv) / sizeof(nv[0]);
        if (call->reply_encoding == H2_ENCODING_IDENTITY)
            nnv--;   /* no grpc-encoding: every message goes uncompressed */
        nghttp2_data_provider dp = { .source.ptr = call, .read_callback = h2_reply_read };
        if (nghttp2_submit_response(call->s->ng, call->stream_id, nv, nnv, &dp)
            != 0) {
            /* No way to send a status: reset the stream instead. */
            nghttp2_submit_rst_stream(call->s->ng, NGHTTP2_FLAG_NONE, call->stream_id,
                                      NGHTTP2_INTERNAL_ERROR);
            call->answered = true;
            h2_stream_drop_input(call);
            h2_reply_free_all(call);
            h2_session_wake(call->s);
            return -1;
        }
        call->headers_sent = true;
    }
    h2_reply_kick(call);
    h2_session_wake(call->s);
    return 0;
}

/* Checks a message of len bytes can be queued on call. Returns 0, or -1
 * (the call failed where the size is the reason). */
static int h2_reply_can_send(struct h2_call *call, size_t len)
{
    if (call->answered)
        return -1;
    if (len > call->s->cfg.max_message_bytes) {
        char msg[STATUS_MSG_MAX];
        snprintf(msg, sizeof(msg), "reply message of %zu bytes exceeds --max-message-bytes (%zu)",
                 len, call->s->cfg.max_message_bytes);
        h2_call_fail(call, STATUS_RESOURCE_EXHAUSTED, msg);
        return -1;
    }
    return 0;
}

/* A queue entry that holds `held` bytes in the budget until it is taken
 * or dropped. NULL: the call failed. */
static struct h2_out *h2_out_new(struct h2_call *call, size_t held)
{
    char why[STATUS_MSG_MAX];
    if (!h2_take(call, held, why, sizeof(why))) {
        h2_call_failf(call, STATUS_RESOURCE_EXHAUSTED, "no room for a %zu-byte reply: %s",
                      held, why);
        return NULL;
    }
    struct h2_out *o = calloc(1, sizeof(*o));
    if (!o) {
        h2_give(call, held);
        h2_call_fail(call, STATUS_RESOURCE_EXHAUSTED, "out of memory for a reply message");
        return NULL;
    }
    o->held = held;
    call->out_held += held;
    return o;
}

/* Queues o as a unary call's one reply, then the trailers (a stream call:
 * as a message, then finishes). */
static int h2_reply_answer(struct h2_call *call, struct h2_out *o)
{
    if (call->kind == H2_STREAM) {
        if (h2_reply_queue(call, o) != 0)
            return -1;
        return h2_call_finish(call);
    }
    /* Answered and finishing before it is queued: queueing may send it all
     * at once (want_write), trailers included, and close the call. */
    call->answered = true;
    call->finishing = true;
    call->trailer_code = STATUS_OK;
    h2_count_status(call, STATUS_OK, NULL);
    return h2_reply_queue(call, o);
}

/* Writes buf's prefix, first compressing its len message bytes by the
 * rule in h2_deflate.h; *buf and *len may change (the old buffer freed).
 * The compressor's output is held in the budget while both exist. */
static void h2_reply_pack(struct h2_call *call, uint8_t **buf, size_t *len)
{
    char why[STATUS_MSG_MAX];
    uint8_t *out = NULL;
    size_t n = 0, cap = *len - 1;   /* it must come out smaller */
    bool packed = call->reply_encoding != H2_ENCODING_IDENTITY && *len >= H2_DEFLATE_MIN_BYTES &&
                  h2_take(call, GRPC_FRAME_HEADER + cap, why, sizeof(why));
    if (packed) {
        out = malloc(GRPC_FRAME_HEADER + cap);
        packed = out && h2_deflate(call->reply_encoding, *buf + GRPC_FRAME_HEADER, *len,
                                   out + GRPC_FRAME_HEADER, cap, &n) == 0;
        h2_give(call, GRPC_FRAME_HEADER + cap);
    }
    if (!packed) {
        free(out);   /* not worth it, or no room: the message goes as it is */
        grpc_frame_header(*buf, *len);
        return;
    }
    free(*buf);
    *buf = out;
    *len = n;
    grpc_frame_header(out, n);
    grpc_frame_mark_compressed(out);
}

int h2_call_reply(struct h2_call *call, uint8_t *buf, size_t len)
{
    struct h2_out *o = NULL;
    if (h2_reply_can_send(call, len) != 0 || !(o = h2_out_new(call, len + GRPC_FRAME_HEADER))) {
        free(buf);
        return -1;
    }
    h2_reply_pack(call, &buf, &len);
    body_adopt(&o->body, buf, len + GRPC_FRAME_HEADER);
    return h2_reply_answer(call, o);
}

int h2_call_reply_body(struct h2_call *call, struct body *b, void (*release)(void *ctx),
                       void *ctx)
{
    struct h2_out *o = NULL;
    if (b->len < GRPC_FRAME_HEADER || h2_reply_can_send(call, b->len - GRPC_FRAME_HEADER) != 0 ||
        !(o = h2_out_new(call, b->len))) {
        body_free(b);
        if (release)
            release(ctx);
        return -1;
    }
    body_move(&o->body, b);
    o->release = release;
    o->release_ctx = ctx;
    return h2_reply_answer(call, o);
}

int h2_call_send(struct h2_call *call, uint8_t *buf, size_t len)
{
    struct h2_out *o = NULL;
    if (call->kind != H2_STREAM || h2_reply_can_send(call, len) != 0 ||
        !(o = h2_out_new(call, len + GRPC_FRAME_HEADER))) {
        free(buf);
        return -1;
    }
    h2_reply_pack(call, &buf, &len);
    body_adopt(&o->body, buf, len + GRPC_FRAME_HEADER);
    return h2_reply_queue(call, o);
}

int h2_call_send_ref(struct h2_call *call, uint8_t *head, size_t head_len, const uint8_t *body,
                     size_t body_len, void (*release)(void *ctx), void *ctx)
{
    struct h2_out *o = NULL;
    if (call->kind != H2_STREAM || h2_reply_can_send(call, head_len + body_len) != 0 ||
        !(o = h2_out_new(call, head_len + GRPC_FRAME_HEADER))) {
        free(head);
        release(ctx);
        return -1;
    }
    grpc_frame_header(head, head_len + body_len);
    body_adopt(&o->body, head, head_len + GRPC_FRAME_HEADER);
    if (body_lend(&o->body, body, body_len) != 0) {
        h2_out_free(call, o);   /* nothing of it was taken: freed now */
        release(ctx);
        h2_call_fail(call, STATUS_RESOURCE_EXHAUSTED, "out of memory for a reply message");
        return -1;
    }
    o->release = release;
    o->release_ctx = ctx;
    return h2_reply_queue(call, o);
}

size_t h2_call_unsent(const struct h2_call *call)
{
    return call->unsent;
}

int h2_call_finish(struct h2_call *call)
{
    if (call->kind != H2_STREAM || call->answered)
        return -1;
    if (!call->headers_sent)
        return h2_call_answer_status(call, HTTP_STATUS_OK, STATUS_OK, NULL);
    call->answered = true;
    call->finishing = true;
    call->trailer_code = STATUS_OK;
    h2_count_status(call, STATUS_OK, NULL);
    h2_stream_drop_input(call);
    h2_reply_kick(call);
    h2_session_wake(call->s);
    return 0;
}

/* h2_call_fail() once headers are out: the status goes in trailers after
 * the message nghttp2 has begun; messages not begun are dropped. */
int h2_reply_fail(struct h2_call *c, enum status_code code, const char *msg)
{
    if (c->answered)
        return -1;
    c->answered = true;
    c->finishing = true;
    c->trailer_code = code;
    h2_count_status(c, code, msg);
    char encoded[H2_GRPC_MESSAGE_MAX];
    h2_percent_encode(msg ? msg : "", encoded, sizeof(encoded));
    c->trailer_msg = strdup(encoded); /* NULL: the status alone still goes out */
    h2_stream_drop_input(c);
    struct h2_out *keep = c->out_head && c->out_head->pos > 0 ? c->out_head : NULL;
    if (keep) {
        c->out_head = keep->next;
        keep->next = NULL;
    }
    h2_reply_free_all(c);
    if (keep) {
        c->out_head = c->out_tail = keep;
        c->unsent = keep->body.len - keep->pos;
    }
    h2_reply_kick(c);
    h2_session_wake(c->s);
    return 0;
}


/* Tells handlers whose reply bytes nghttp2 took. */
void h2_reply_notify_sent(struct h2_session *s)
{
    if (!s->sent_pending)
        return;
    s->sent_pending = false;
    for (struct h2_call *c = s->calls; c; c = c->next) {
        if (!c->sent_owed)
            continue;
        c->sent_owed = false;
        if (s->h->sent)
            s->h->sent(c, s->ctx);
    }
}

bool h2_session_reply_waiting(const struct h2_session *s)
{
    for (const struct h2_call *c = s->calls; c; c = c->next)
        if (c->out_head)
            return true;
    return false;
}
