/* SPDX-License-Identifier: MIT */
/* h2_stream.c: what only H2_STREAM calls do on the request side (see h2.h's
 * stream calls).
 *
 * Stream calls feed their reader one message at a time, so that a pause in
 * message() leaves every byte behind that message unread in the call's
 * pending buffer and unconsumed in the stream's window; a resume redelivers
 * the held message, then the pending bytes, then end(). Neighbours: h2.c
 * owns the session, the nghttp2 callbacks and the calls' life, and routes
 * stream calls here; h2_reply.c sends every call's replies; h2_internal.h
 * holds what they share.
 */
#include <nghttp2/nghttp2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "grpc_frame.h"
#include "h2.h"
#include "h2_internal.h"

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
        h2_give(c, reserved);
        return c->feed_status != STATUS_OK;
    }
    c->held = malloc(len + 1);
    if (!c->held) {
        h2_give(c, reserved);
        c->feed_status = STATUS_RESOURCE_EXHAUSTED;
        snprintf(c->feed_msg, sizeof(c->feed_msg), "out of memory for a held request message");
        return 1;
    }
    memcpy(c->held, msg, len);
    c->held_len = len;
    c->held_reserved = reserved;
    return 0;
}

/* Feeds DATA to a stream call's reader (or its handler's pieces) until it
 * is taken, the call pauses or is answered; gives back the stream window
 * for what was fed. Returns the bytes taken. */
static size_t h2_stream_take(struct h2_call *c, const uint8_t *data, size_t len)
{
    size_t taken = h2_call_input(c, data, len);
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
        size_t cap = grow_cap(c->pend_cap, 4096, c->pend_len + len);
        if (!h2_take(c, cap - c->pend_cap, c->feed_msg, sizeof(c->feed_msg)))
            return -1;
        uint8_t *nb = realloc(c->pend, cap);
        if (!nb) {
            h2_give(c, cap - c->pend_cap);
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
    h2_give(c, c->pend_cap);
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
    h2_give(c, c->held_reserved);
    c->held_reserved = 0;
    if (c->pend_len)
        nghttp2_session_consume_stream(c->s->ng, c->stream_id, c->pend_len);
    h2_stream_pend_free(c);
    c->paused = false;
    c->hold_req = false;
    c->piece_left = 0;
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
        h2_give(c, reserved);
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
            h2_give(c, cap);
            free(pend);
        }
    }
    h2_stream_try_end(c);
}

/* Runs the resumes asked for while the session was busy (or just now). */
void h2_stream_run_resumes(struct h2_session *s)
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

void h2_stream_pause(struct h2_call *call)
{
    if (call->kind != H2_STREAM || !call->started || call->answered)
        return;
    call->paused = true;
    if (call->in_message)
        call->hold_req = true;
}

void h2_stream_resume(struct h2_call *call)
{
    if (!call->paused)
        return;
    struct h2_session *s = call->s;
    call->paused = false;
    call->resume_owed = true;
    s->resume_pending = true;
    if (s->busy)
        return;
    h2_stream_run_resumes(s);
    if (nghttp2_session_want_write(s->ng))
        h2_session_wake(s);
}

size_t h2_stream_buffered(const struct h2_call *call)
{
    return (call->held ? call->held_len : 0) + call->pend_len;
}
