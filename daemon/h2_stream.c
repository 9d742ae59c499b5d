/* h2_stream.c: what only H2_STREAM calls do (see h2.h's stream calls).
 *
 * Request side: stream calls feed their reader one message at a time, so
 * that a pause in message() leaves every byte behind that message unread in
 * the call's pending buffer and unconsumed in the stream's window; a resume
 * redelivers the held message, then the pending bytes, then end(). Reply
 * side: messages queue on the call and a DEFERRED data provider hands them
 * to nghttp2, with trailers once the call finishes or fails. Neighbours:
 * h2.c owns the session, the nghttp2 callbacks and the calls' life, and
 * routes stream calls here; h2_internal.h holds what the two share.
 */
#include <nghttp2/nghttp2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_frame.h"
#include "h2.h"
#include "h2_internal.h"

/* One queued reply message of a stream call. */
struct h2_out {
    struct h2_out *next;
    uint8_t *buf;      /* malloc'd prefix + message (or its head), owned */
    size_t buf_len;    /* bytes at buf */
    const uint8_t *body; /* h2_call_send_ref: the message's tail, borrowed */
    void (*release)(void *ctx); /* gives body back; NULL for h2_call_send */
    void *release_ctx;
    size_t len, pos;   /* len = buf_len + body length; pos <= len: taken by nghttp2 */
};

/* Frees o, a message of c, gives its borrowed body back and its bytes
 * back to the budget. */
static void h2_out_free(struct h2_call *c, struct h2_out *o)
{
    c->out_held -= o->buf_len;
    h2_give(c->s, o->buf_len);
    free(o->buf);
    if (o->release)
        o->release(o->release_ctx);
    free(o);
}

/* Copies k bytes of o from o->pos on, across its two parts. */
static void h2_out_copy(struct h2_out *o, uint8_t *dst, size_t k)
{
    size_t pos = o->pos;
    if (pos < o->buf_len) {
        size_t a = o->buf_len - pos < k ? o->buf_len - pos : k;
        memcpy(dst, o->buf + pos, a);
        dst += a;
        pos += a;
        k -= a;
    }
    if (k)
        memcpy(dst, o->body + (pos - o->buf_len), k);
}

void h2_out_free_all(struct h2_call *c)
{
    while (c->out_head) {
        struct h2_out *o = c->out_head;
        c->out_head = o->next;
        h2_out_free(c, o);
    }
    c->out_tail = NULL;
    c->unsent = 0;
}

/* --- stream calls, reply side ------------------------------------------- */

/* Lets nghttp2 call h2_stream_read again after it returned DEFERRED. */
static void h2_stream_kick(struct h2_call *c)
{
    if (c->out_deferred) {
        c->out_deferred = false;
        nghttp2_session_resume_data(c->s->ng, c->stream_id);
    }
}

/* Data provider of a stream call: the queued messages in order, several per
 * DATA frame when they are small; DEFERRED while the queue is empty and the
 * call is not finishing; trailers once it is. */
static ssize_t h2_stream_read(nghttp2_session *ng, int32_t stream_id, uint8_t *buf, size_t length,
                              uint32_t *flags, nghttp2_data_source *source, void *user_data)
{
    (void)user_data;
    struct h2_call *c = source->ptr;
    size_t n = 0;
    while (n < length && c->out_head) {
        struct h2_out *o = c->out_head;
        size_t k = o->len - o->pos;
        if (k > length - n)
            k = length - n;
        h2_out_copy(o, buf + n, k);
        o->pos += k;
        n += k;
        if (o->pos == o->len) {
            c->out_head = o->next;
            if (!c->out_head)
                c->out_tail = NULL;
            h2_out_free(c, o);
        }
    }
    if (n) {
        c->unsent -= n;
        c->sent_owed = true;
        c->s->sent_pending = true;
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
    nghttp2_nv trailers[] = {
        H2_NV("grpc-status", status),
        H2_NV("grpc-message", c->trailer_msg ? c->trailer_msg : ""),
    };
    size_t nt = c->trailer_msg && c->trailer_msg[0] ? 2 : 1;
    if (nghttp2_submit_trailer(ng, stream_id, trailers, nt) != 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    return (ssize_t)n;
}

/* Queues o (its prefix already written) and starts the response if need be. */
static int h2_stream_queue(struct h2_call *call, struct h2_out *o)
{
    if (call->out_tail)
        call->out_tail->next = o;
    else
        call->out_head = o;
    call->out_tail = o;
    call->unsent += o->len;
    if (!call->headers_sent) {
        nghttp2_nv nv[] = {
            H2_NV(":status", HTTP_STATUS_OK),
            H2_NV("content-type", GRPC_CONTENT_TYPE),
            H2_NV("grpc-accept-encoding", "identity"),
        };
        nghttp2_data_provider dp = { .source.ptr = call, .read_callback = h2_stream_read };
        if (nghttp2_submit_response(call->s->ng, call->stream_id, nv, sizeof(nv) / sizeof(nv[0]),
                                    &dp)
            != 0) {
            /* No way to send a status: reset the stream instead. */
            nghttp2_submit_rst_stream(call->s->ng, NGHTTP2_FLAG_NONE, call->stream_id,
                                      NGHTTP2_INTERNAL_ERROR);
            call->answered = true;
            h2_stream_drop_input(call);
            h2_out_free_all(call);
            h2_session_wake(call->s);
            return -1;
        }
        call->headers_sent = true;
    }
    h2_stream_kick(call);
    h2_session_wake(call->s);
    return 0;
}

/* Checks a message of len bytes can be queued on call. Returns 0, or -1
 * (the call failed where the size is the reason). */
static int h2_stream_can_send(struct h2_call *call, size_t len)
{
    if (call->kind != H2_STREAM || call->answered)
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

/* A queue entry for a message whose own buffer is buf_len bytes, held in
 * the budget until it is taken or dropped. NULL: the call failed. */
static struct h2_out *h2_out_new(struct h2_call *call, size_t buf_len)
{
    char why[STATUS_MSG_MAX];
    if (!h2_take(call->s, buf_len, why, sizeof(why))) {
        h2_call_failf(call, STATUS_RESOURCE_EXHAUSTED, "no room for a %zu-byte reply: %s",
                      buf_len, why);
        return NULL;
    }
    struct h2_out *o = calloc(1, sizeof(*o));
    if (!o) {
        h2_give(call->s, buf_len);
        h2_call_fail(call, STATUS_RESOURCE_EXHAUSTED, "out of memory for a reply message");
        return NULL;
    }
    o->buf_len = buf_len;
    call->out_held += buf_len;
    return o;
}

int h2_call_send(struct h2_call *call, uint8_t *buf, size_t len)
{
    struct h2_out *o = NULL;
    if (h2_stream_can_send(call, len) != 0 || !(o = h2_out_new(call, len + GRPC_FRAME_HEADER))) {
        free(buf);
        return -1;
    }
    grpc_frame_header(buf, len);
    o->buf = buf;
    o->len = o->buf_len;
    return h2_stream_queue(call, o);
}

int h2_call_send_ref(struct h2_call *call, uint8_t *head, size_t head_len, const uint8_t *body,
                     size_t body_len, void (*release)(void *ctx), void *ctx)
{
    struct h2_out *o = NULL;
    if (h2_stream_can_send(call, head_len + body_len) != 0 ||
        !(o = h2_out_new(call, head_len + GRPC_FRAME_HEADER))) {
        free(head);
        release(ctx);
        return -1;
    }
    grpc_frame_header(head, head_len + body_len);
    o->buf = head;
    o->body = body;
    o->len = o->buf_len + body_len;
    o->release = release;
    o->release_ctx = ctx;
    return h2_stream_queue(call, o);
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
    h2_count_status(call->s, STATUS_OK);
    h2_stream_drop_input(call);
    h2_stream_kick(call);
    h2_session_wake(call->s);
    return 0;
}

/* h2_call_fail() once headers are out: the status goes in trailers after
 * the message nghttp2 has begun; messages not begun are dropped. */
int h2_stream_fail(struct h2_call *c, enum status_code code, const char *msg)
{
    if (c->answered)
        return -1;
    c->answered = true;
    c->finishing = true;
    c->trailer_code = code;
    h2_count_status(c->s, code);
    char encoded[H2_GRPC_MESSAGE_MAX];
    h2_percent_encode(msg ? msg : "", encoded, sizeof(encoded));
    c->trailer_msg = strdup(encoded); /* NULL: the status alone still goes out */
    h2_stream_drop_input(c);
    struct h2_out *keep = c->out_head && c->out_head->pos > 0 ? c->out_head : NULL;
    if (keep) {
        c->out_head = keep->next;
        keep->next = NULL;
    }
    h2_out_free_all(c);
    if (keep) {
        c->out_head = c->out_tail = keep;
        c->unsent = keep->len - keep->pos;
    }
    h2_stream_kick(c);
    h2_session_wake(c->s);
    return 0;
}

/* --- stream calls, request side ------------------------------------------ */

/* Calls message() for one request message of a stream call. Returns the
 * status; *hold is set when the handler paused inside, asking the layer to
 * keep the message. */
static enum status_code h2_stream_handle(struct h2_call *c, const uint8_t *msg, size_t len,
                                         bool *hold)
{
    struct h2_session *s = c->s;
    c->feed_msg[0] = '\0';
    c->in_message = true;
    enum status_code st = s->h->message(c, msg, len, c->feed_msg, sizeof(c->feed_msg), s->ctx);
    c->in_message = false;
    *hold = c->hold_req && st == STATUS_OK && !c->answered;
    c->hold_req = false;
    return st;
}

/* Reader callback for stream calls: the budget reserved for the message is
 * released once the handler took it, or moves to the held copy. */
int h2_stream_message(struct h2_call *c, const uint8_t *msg, size_t len)
{
    uint64_t reserved = c->reserved;
    c->reserved = 0;
    c->nmessages++;
    bool hold;
    c->feed_status = h2_stream_handle(c, msg, len, &hold);
    if (!hold) {
        h2_give(c->s, reserved);
        return c->feed_status != STATUS_OK;
    }
    c->held = malloc(len + 1);
    if (!c->held) {
        h2_give(c->s, reserved);
        c->feed_status = STATUS_RESOURCE_EXHAUSTED;
        snprintf(c->feed_msg, sizeof(c->feed_msg), "out of memory for a held request message");
        return 1;
    }
    memcpy(c->held, msg, len);
    c->held_len = len;
    c->held_reserved = reserved;
    return 0;
}

/* Bytes the reader needs to finish its prefix or its message: feeding no
 * more than that delivers at most one message per feed. */
static size_t h2_stream_need(const struct grpc_frame_reader *r)
{
    if (r->hdr_have < GRPC_FRAME_HEADER)
        return GRPC_FRAME_HEADER - r->hdr_have;
    return r->msg_len - r->msg_have;
}

/* Feeds DATA to a stream call's reader until it is taken, the call pauses
 * or is answered; gives back the stream window for what was fed. Returns
 * the bytes taken. */
static size_t h2_stream_take(struct h2_call *c, const uint8_t *data, size_t len)
{
    size_t taken = 0;
    while (taken < len && !c->paused && !c->held && !c->answered) {
        size_t n = h2_stream_need(&c->reader);
        if (n == 0 || n > len - taken)
            n = len - taken;
        int rv = h2_call_feed(c, data + taken, n);
        taken += n;
        if (rv != GRPC_FRAME_OK)
            h2_call_feed_error(c, rv);
    }
    if (taken)
        nghttp2_session_consume_stream(c->s->ng, c->stream_id, taken);
    return taken;
}

/* Keeps DATA that arrived behind a held message. The stream window bounds
 * it: none of it is consumed until it is fed. Its buffer is held in the
 * budget; -1 with why in c->feed_msg when there is no room. */
static int h2_stream_pend(struct h2_call *c, const uint8_t *data, size_t len)
{
    if (c->pend_off && c->pend_off + c->pend_len + len > c->pend_cap) {
        memmove(c->pend, c->pend + c->pend_off, c->pend_len);
        c->pend_off = 0;
    }
    if (c->pend_len + len > c->pend_cap) {
        size_t cap = c->pend_cap ? c->pend_cap : 4096;
        while (cap < c->pend_len + len)
            cap *= 2;
        if (!h2_take(c->s, cap - c->pend_cap, c->feed_msg, sizeof(c->feed_msg)))
            return -1;
        uint8_t *nb = realloc(c->pend, cap);
        if (!nb) {
            h2_give(c->s, cap - c->pend_cap);
            snprintf(c->feed_msg, sizeof(c->feed_msg), "out of memory");
            return -1;
        }
        c->pend = nb;
        c->pend_cap = cap;
    }
    memcpy(c->pend + c->pend_off + c->pend_len, data, len);
    c->pend_len += len;
    return 0;
}

static void h2_stream_pend_free(struct h2_call *c)
{
    h2_give(c->s, c->pend_cap);
    free(c->pend);
    c->pend = NULL;
    c->pend_off = c->pend_len = c->pend_cap = 0;
}

/* DATA for a stream call that is still taking input. */
void h2_stream_data(struct h2_call *c, const uint8_t *data, size_t len)
{
    size_t taken = 0;
    if (!c->paused && !c->held && !c->pend_len)
        taken = h2_stream_take(c, data, len);
    if (taken == len)
        return;
    if (c->answered) {
        nghttp2_session_consume_stream(c->s->ng, c->stream_id, len - taken);
        return;
    }
    if (h2_stream_pend(c, data + taken, len - taken) != 0) {
        nghttp2_session_consume_stream(c->s->ng, c->stream_id, len - taken);
        h2_call_failf(c, STATUS_RESOURCE_EXHAUSTED, "no room for request data: %s", c->feed_msg);
    }
}

/* The call was answered: nothing more is delivered, so what it holds goes,
 * and the window it held back is given back (the client may still be
 * sending until it sees the answer). */
void h2_stream_drop_input(struct h2_call *c)
{
    free(c->held);
    c->held = NULL;
    h2_give(c->s, c->held_reserved);
    c->held_reserved = 0;
    if (c->pend_len)
        nghttp2_session_consume_stream(c->s->ng, c->stream_id, c->pend_len);
    h2_stream_pend_free(c);
    c->paused = false;
    c->hold_req = false;
    grpc_frame_reader_free(&c->reader);
    h2_call_unreserve(c);
}

/* end() once the client half-closed and every message was delivered. */
void h2_stream_try_end(struct h2_call *c)
{
    if (!c->remote_ended || c->answered || c->end_done || c->paused || c->held || c->pend_len)
        return;
    if (h2_call_fail_truncated(c))
        return;
    c->end_done = true;
    c->s->h->end(c, c->s->ctx);
}

/* A resumed call: the held message, then what is pending, then end(). */
static void h2_stream_redeliver(struct h2_call *c)
{
    if (c->answered || c->paused)
        return;
    if (c->held) {
        uint8_t *msg = c->held;
        size_t len = c->held_len;
        uint64_t reserved = c->held_reserved;
        c->held = NULL;
        c->held_reserved = 0;
        bool hold;
        enum status_code st = h2_stream_handle(c, msg, len, &hold);
        if (hold) {
            c->held = msg;
            c->held_reserved = reserved;
            return;
        }
        free(msg);
        h2_give(c->s, reserved);
        if (st != STATUS_OK) {
            h2_call_fail(c, st, c->feed_msg);
            return;
        }
    }
    if (c->pend_len && !c->answered && !c->paused) {
        /* Detached while feeding: a failure inside drops input, and the
         * bytes not taken go back. */
        uint8_t *pend = c->pend;
        size_t off = c->pend_off, len = c->pend_len, cap = c->pend_cap;
        c->pend = NULL;
        c->pend_off = c->pend_len = c->pend_cap = 0;
        size_t taken = h2_stream_take(c, pend + off, len);
        if (taken < len && c->answered)
            nghttp2_session_consume_stream(c->s->ng, c->stream_id, len - taken);
        if (taken < len && !c->answered) {
            c->pend = pend;
            c->pend_off = off + taken;
            c->pend_len = len - taken;
            c->pend_cap = cap;
        } else {
            h2_give(c->s, cap);
            free(pend);
        }
    }
    h2_stream_try_end(c);
}

/* Runs the resumes asked for while the session was busy (or just now). */
void h2_session_run_resumes(struct h2_session *s)
{
    s->busy++;
    while (s->resume_pending) {
        s->resume_pending = false;
        for (struct h2_call *c = s->calls; c; c = c->next) {
            if (!c->resume_owed)
                continue;
            c->resume_owed = false;
            h2_stream_redeliver(c);
        }
    }
    s->busy--;
}

void h2_call_pause(struct h2_call *call)
{
    if (call->kind != H2_STREAM || !call->started || call->answered)
        return;
    call->paused = true;
    if (call->in_message)
        call->hold_req = true;
}

void h2_call_resume(struct h2_call *call)
{
    if (!call->paused)
        return;
    struct h2_session *s = call->s;
    call->paused = false;
    call->resume_owed = true;
    s->resume_pending = true;
    if (s->busy)
        return;
    h2_session_run_resumes(s);
    if (nghttp2_session_want_write(s->ng))
        h2_session_wake(s);
}

size_t h2_call_buffered(const struct h2_call *call)
{
    return (call->held ? call->held_len : 0) + call->pend_len;
}

/* Tells handlers whose reply bytes nghttp2 took. */
void h2_session_notify_sent(struct h2_session *s)
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
