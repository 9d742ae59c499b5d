/* SPDX-License-Identifier: MIT */
/* h2.c: HTTP/2 + gRPC server session over nghttp2, with no I/O (see h2.h).
 *
 * nghttp2 parses frames and enforces HTTP/2; this file adds gRPC on top:
 * request headers are checked when the HEADERS frame is whole, DATA goes
 * through a grpc_frame_reader per call, and answers are either a normal
 * response (headers, messages, trailers) or Trailers-Only. Every call
 * becomes a struct h2_call hung on its nghttp2 stream, freed when nghttp2
 * closes the stream. Neighbours: conn.c moves the bytes, rpc.c handles calls,
 * h2_stream.c does what only stream calls do on the request side, h2_reply.c
 * sends every call's replies (h2_internal.h is their share).
 *
 * Handlers run only inside h2_session_recv(), h2_session_send() or an
 * outermost h2_stream_resume(), each of which counts as "busy": a resume asked
 * for while busy is run before that returns, and want_write waits until
 * nothing is busy (conn.c flushes from want_write, and a flush inside a
 * handler could close the stream whose handler is running).
 */
#include "h2.h"

#include <nghttp2/nghttp2.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amp_wire.h"
#include "budget.h"
#include "call_class.h"
#include "data_frame.h"
#include "grow.h"
#include "grpc_frame.h"
#include "grpc_timeout.h"
#include "h2_internal.h"
#include "h2_request.h"
#include "iov_send.h"
#include "sat.h"

/* Per-stream receive window we advertise, and the connection's: large
 * enough that a 64 MiB request is not throttled by round trips. Our
 * WINDOW_UPDATE (at half a window consumed) leaves behind the reply bytes
 * already queued, up to two 1 MiB writes and the socket's buffer: with
 * 4 MiB a Unix transform stream's client stopped for 0.1-0.4 ms dozens of
 * times a GiB waiting for it, and 8 MiB ran 0.83 of the raw copy against
 * 0.79 (medians of seven interleaved runs, bench/RESULTS-archive.md, session 14). */
#define H2_STREAM_WINDOW (8 * 1024 * 1024)
#define H2_CONN_WINDOW (32 * 1024 * 1024)
/* One write gathers frames up to about this many bytes, and copies a
 * borrowed DATA frame of up to H2_GATHER_COPY_MAX bytes into it (a tiny
 * reply's message) rather than end the write there. */
#define H2_GATHER_MAX (64 * 1024)
#define H2_GATHER_COPY_MAX (16 * 1024)
/* Request header block limit: gRPC metadata is small. Advertised as
 * SETTINGS_MAX_HEADER_LIST_SIZE and held to on the decoded fields as they
 * come, each counting its name, its value and H2_FIELD_OVERHEAD (RFC 9113
 * section 6.5.2): one byte of indexed reference to a large dynamic-table
 * entry decodes to kilobytes. Passing it ends the connection (GOAWAY
 * ENHANCE_YOUR_CALM): HPACK keeps state across blocks, so a stream error
 * would still decode the rest of the block. So does a block whose own
 * bytes pass it, before they are decoded: a sane encoder's fields decode
 * to more than they take on the wire. */
/* A request message declared this long or longer gets its whole buffer
 * at once, charged to the budget as its bytes arrive (grpc_frame.h's
 * whole_min): grown by doubling, a 32 MiB one's last realloc copied 16 MiB
 * in one turn of its loop, which every other call there waited behind. */
#define H2_WHOLE_MIN (1024 * 1024)

#define H2_MAX_HEADER_LIST (64 * 1024)
#define H2_FIELD_OVERHEAD 32
#define H2_US_PER_MS 1000
/* amp-max-reply-bytes: 19 digits stay below 2^64. */
#define H2_MAX_REPLY_DIGITS 19
/* CONTINUATION frames one HEADERS block may span before nghttp2 ends the
 * connection (its default, named here: empty ones add no bytes). */
#define H2_MAX_CONTINUATIONS 8
/* Resets ampd sends because of the client (a malformed request, a window
 * or state error, a refused stream) free the stream's slot while its work
 * may go on: a client that provokes them escapes the stream limit as
 * rapid reset did (CVE-2025-8671, "MadeYouReset"; nghttp2 1.52 does not
 * count them). A well-behaved client provokes none; past H2_RESET_BURST
 * at once, refilled at H2_RESET_RATE a second, the connection gets GOAWAY
 * ENHANCE_YOUR_CALM. */
#define H2_RESET_BURST 100
#define H2_RESET_RATE 10

#define HTTP_STATUS_BAD_METHOD "405"
#define HTTP_STATUS_BAD_MEDIA "415"

/* --- the budget ---------------------------------------------------------- */

bool h2_take(struct h2_call *c, uint64_t n, char *why, size_t whylen)
{
    struct budget *full = n ? budget_take_both(c->s->cfg.budget, c->share, n) : NULL;
    if (full) {
        budget_refusal(full, n, why, whylen);
        return false;
    }
    if (c->share)
        c->share_held += n;
    return true;
}

void h2_give_session(struct h2_session *s, uint64_t n)
{
    if (s->cfg.budget && n)
        budget_give(s->cfg.budget, n);
}

void h2_give_share(struct h2_call *c, uint64_t n)
{
    if (c->share && n) {
        budget_give(c->share, n);
        c->share_held -= n;
    }
}

void h2_give(struct h2_call *c, uint64_t n)
{
    h2_give_share(c, n);
    h2_give_session(c->s, n);
}

void h2_call_share(struct h2_call *call, struct budget *share)
{
    call->share = share;
}

/* Gives back all the call holds in its client's budget, which may end
 * with closed() (client_share.h); the rest is given back, to the session's
 * budget alone, as it is freed. */
static void h2_call_unshare(struct h2_call *c)
{
    h2_give_share(c, c->share_held);
    c->share = NULL;
}

/* The reader's growth hook: request bytes are held as they arrive. */
static int h2_call_reserve(void *ctx, size_t more)
{
    struct h2_call *c = ctx;
    if (!h2_take(c, more, c->feed_msg, sizeof(c->feed_msg)))
        return -1;
    c->reserved += more;
    return 0;
}

int h2_call_hold(struct h2_call *call, uint64_t bytes, char *msg, size_t msglen)
{
    if (bytes > call->handler_held) {
        if (!h2_take(call, bytes - call->handler_held, msg, msglen))
            return -1;
    } else {
        h2_give(call, call->handler_held - bytes);
    }
    call->handler_held = bytes;
    return 0;
}

/* --- calls ---------------------------------------------------------------- */

static struct h2_call *h2_call_new(struct h2_session *s, int32_t stream_id)
{
    struct h2_call *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->s = s;
    c->cls.priority = -1;   /* none sent */
    c->stream_id = stream_id;
    c->created_ms = h2_now(s);
    grpc_frame_reader_init(&c->reader, s->cfg.max_message_bytes);
    c->reader.reserve = h2_call_reserve;
    c->reader.reserve_ctx = c;
    c->reader.whole_min = H2_WHOLE_MIN;
    c->reader.compressed_ok = true;   /* h2_call_inflate judges grpc-encoding */
    c->next = s->calls;
    if (s->calls)
        s->calls->prev = c;
    s->calls = c;
    s->ncalls++;
    return c;
}
/* Tells the handler (if it took the call) and frees the call. */
static void h2_call_release(struct h2_call *c)
{
    struct h2_session *s = c->s;
    h2_call_settle_read(c);   /* before closed() gives up its places */
    h2_call_unreserve(c);
    /* Before closed(): a handler whose job outlives the call takes what the
     * job holds from the daemon's budget alone (rpc.c). */
    h2_call_hold(c, 0, NULL, 0);
    h2_call_unshare(c);
    if (c->started && !c->answered)
        h2_count_status(c, STATUS_CANCELLED, "the client left first");
    if (c->started && s->h->closed)
        s->h->closed(c, s->ctx);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->calls = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->ncalls--;
    free(c->authorization);
    free(c->inflated);
    grpc_frame_reader_free(&c->reader);
    free(c->held);
    h2_give(c, c->held_reserved);
    h2_give(c, c->pend_cap);
    free(c->pend);
    h2_reply_free_all(c);
    h2_give(c, c->out_held);
    free(c->trailer_msg);
    free(c);
}

uint8_t *h2_call_take_message(struct h2_call *call, uint64_t *held)
{
    if (call->kind != H2_UNARY)
        return NULL;
    uint8_t *msg = call->inflated ? call->inflated : grpc_frame_take(&call->reader);
    call->inflated = NULL;
    if (msg) {
        *held = call->reserved;
        call->handler_held += call->reserved;
        call->reserved = 0;
    }
    return msg;
}

void *h2_call_user(const struct h2_call *call)
{
    return call->user;
}

void h2_call_set_user(struct h2_call *call, void *user)
{
    call->user = user;
}

void h2_call_set_server_timing(struct h2_call *call, const char *text)
{
    size_t n = strlen(text);
    if (n >= sizeof call->server_timing)
        n = 0;
    memcpy(call->server_timing, text, n);
    call->server_timing[n] = '\0';
}

size_t h2_percent_encode(const char *msg, char *out, size_t outlen)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    if (outlen == 0)
        return 0;
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
        bool plain = *p >= 0x20 && *p <= 0x7e && *p != '%';
        size_t need = plain ? 1 : 3;
        if (o + need >= outlen)
            break;
        if (plain) {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 0xf];
        }
    }
    out[o] = '\0';
    return o;
}

/* Submits a Trailers-Only response (or a bare HTTP error with gRPC status
 * fields, for requests that are not gRPC at all). */
int h2_call_answer_status(struct h2_call *c, const char *http_status, enum status_code code,
                          const char *msg)
{
    if (c->answered)
        return -1;
    c->answered = true;
    h2_count_status(c, code, msg);
    if (c->kind == H2_STREAM)
        h2_stream_drop_input(c);
    char status[16], encoded[H2_GRPC_MESSAGE_MAX];
    snprintf(status, sizeof(status), "%d", (int)code);
    h2_percent_encode(msg ? msg : "", encoded, sizeof(encoded));
    nghttp2_nv nv[] = {
        H2_NV(":status", http_status),
        H2_NV("content-type", GRPC_CONTENT_TYPE),
        H2_NV("grpc-accept-encoding", H2_ACCEPT_ENCODING),
        H2_NV("grpc-status", status),
        H2_NV("grpc-message", encoded),
    };
    size_t n = sizeof(nv) / sizeof(nv[0]);
    if (!encoded[0])
        n--;
    int rv = nghttp2_submit_response(c->s->ng, c->stream_id, nv, n, NULL);
    if (rv != 0)
        return -1;
    h2_session_wake(c->s);
    return 0;
}

int h2_call_fail(struct h2_call *call, enum status_code code, const char *msg)
{
    if (call->headers_sent)
        return h2_reply_fail(call, code, msg);
    return h2_call_answer_status(call, HTTP_STATUS_OK, code, msg);
}

/* --- request side ------------------------------------------------------- */

void h2_call_vfailf(struct h2_call *c, enum status_code code, const char *fmt, va_list ap)
{
    char msg[STATUS_MSG_MAX];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    h2_call_fail(c, code, msg);
}

void h2_call_failf(struct h2_call *c, enum status_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    h2_call_vfailf(c, code, fmt, ap);
    va_end(ap);
}

static bool h2_content_type_ok(const char *ct)
{
    /* "application/grpc" alone or with a subtype: +proto, ;params. */
    size_t n = strlen(GRPC_CONTENT_TYPE);
    if (strncmp(ct, GRPC_CONTENT_TYPE, n) != 0)
        return false;
    return ct[n] == '\0' || ct[n] == '+' || ct[n] == ';';
}

/* The HEADERS frame of a request is whole: is it a gRPC call we serve? */
static void h2_call_headers_done(struct h2_call *c)
{
    struct h2_session *s = c->s;
    if (!c->is_post) {
        h2_call_answer_status(c, HTTP_STATUS_BAD_METHOD, STATUS_INTERNAL,
                              "gRPC requires the POST method");
        return;
    }
    if (!h2_content_type_ok(c->content_type)) {
        char msg[STATUS_MSG_MAX];
        snprintf(msg, sizeof(msg), "content-type \"%s\" is not application/grpc", c->content_type);
        h2_call_answer_status(c, HTTP_STATUS_BAD_MEDIA, STATUS_INTERNAL, msg);
        return;
    }
    if (c->path_too_long) {
        h2_call_fail(c, STATUS_UNIMPLEMENTED, "unknown method (path too long)");
        return;
    }
    if (c->timeout_bad) {
        h2_call_fail(c, STATUS_INTERNAL,
                     "malformed grpc-timeout: want 1 to 8 digits and a unit (H, M, S, m, u or n)");
        return;
    }
    if (c->encoding == H2_ENCODING_UNKNOWN) {
        h2_call_fail(c, STATUS_UNIMPLEMENTED,
                     "grpc-encoding is not one ampd takes (grpc-accept-encoding: "
                     H2_ACCEPT_ENCODING ")");
        return;
    }
    if (c->timeout_expired) {
        h2_call_fail(c, STATUS_DEADLINE_EXCEEDED,
                     "grpc-timeout is zero: the deadline passed before the request arrived");
        return;
    }
    char msg[STATUS_MSG_MAX] = "";
    s->active_ms = h2_now(s);
    enum status_code code = s->h->start(c, c->path, &c->kind, msg, sizeof(msg), s->ctx);
    free(c->authorization);   /* start() was its one reader */
    c->authorization = NULL;
    if (code != STATUS_OK) {
        h2_call_fail(c, code, msg);
        return;
    }
    c->started = true;
}

bool h2_call_fail_truncated(struct h2_call *c)
{
    if (c->piece_left) {
        h2_call_failf(c, STATUS_INTERNAL,
                      "request stream ended inside a message (%llu bytes of it missing)",
                      (unsigned long long)c->piece_left);
        return true;
    }
    if (!grpc_frame_pending(&c->reader))
        return false;
    h2_call_failf(c, STATUS_INTERNAL,
                  "request stream ended inside a message (declared %zu bytes, got %zu)",
                  c->reader.hdr_have < GRPC_FRAME_HEADER ? (size_t)0 : c->reader.msg_len,
                  c->reader.msg_have);
    return true;
}

/* Ends a request found malformed after its HEADERS (RFC 9113 section
 * 8.1.1): RST_STREAM(PROTOCOL_ERROR), which gRPC clients read as INTERNAL,
 * counted so with why; no more of its input is looked at. */
static void h2_call_reset(struct h2_call *c, const char *why)
{
    if (c->answered)
        return;
    c->answered = true;
    h2_count_status(c, STATUS_INTERNAL, why);
    if (c->started && c->kind == H2_STREAM)
        h2_stream_drop_input(c);
    nghttp2_submit_rst_stream(c->s->ng, NGHTTP2_FLAG_NONE, c->stream_id, NGHTTP2_PROTOCOL_ERROR);
}

/* The client half-closed: check the request's shape and let the handler answer. */
static void h2_call_remote_end(struct h2_call *c)
{
    c->remote_ended = true;
    if (!c->answered && !h2_request_end(&c->request))
        h2_call_reset(c, "content-length is more than the DATA the request carried");
    if (c->answered || !c->started)
        return;
    if (c->kind == H2_STREAM) {
        h2_stream_try_end(c);
        return;
    }
    if (h2_call_fail_truncated(c))
        return;
    if (c->kind == H2_UNARY && c->nmessages != 1) {
        h2_call_failf(c, STATUS_UNIMPLEMENTED,
                      "unary method needs exactly one request message, got %zu", c->nmessages);
        return;
    }
    c->s->h->end(c, c->s->ctx);
}

/* A compressed message (flag 1): inflates it into c->inflated, in the
 * call's budget and under --max-message-bytes. False with feed_status set. */
static bool h2_call_inflate(struct h2_call *c, const uint8_t *msg, size_t len, size_t *out_len)
{
    if (c->encoding == H2_ENCODING_IDENTITY) {
        c->feed_status = STATUS_INTERNAL;
        snprintf(c->feed_msg, sizeof(c->feed_msg),
                 "compressed message flag set without a grpc-encoding");
        return false;
    }
    size_t max = c->s->cfg.max_message_bytes;
    int rv = h2_inflate(c->encoding, msg, len, max, h2_call_reserve, c, &c->inflated, out_len);
    switch (rv) {
    case H2_INFLATE_OK:
        return true;
    case H2_INFLATE_TOO_LARGE:
        c->feed_status = STATUS_RESOURCE_EXHAUSTED;
        snprintf(c->feed_msg, sizeof(c->feed_msg),
                 "request message inflates past --max-message-bytes (%zu)", max);
        return false;
    case H2_INFLATE_CORRUPT:
        c->feed_status = STATUS_INTERNAL;
        snprintf(c->feed_msg, sizeof(c->feed_msg),
                 "request message is not valid %s data",
                 c->encoding == H2_ENCODING_GZIP ? "gzip" : "deflate");
        return false;
    case H2_INFLATE_REFUSED:
        c->feed_status = STATUS_RESOURCE_EXHAUSTED;   /* h2_call_reserve wrote why */
        return false;
    default:
        c->feed_status = STATUS_RESOURCE_EXHAUSTED;
        snprintf(c->feed_msg, sizeof(c->feed_msg), "out of memory inflating the request message");
        return false;
    }
}

/* Hands one message on: to the stream, or to the unary handler. */
static int h2_on_plain_message(struct h2_call *c, const uint8_t *msg, size_t len)
{
    struct h2_session *s = c->s;
    if (c->kind == H2_STREAM)
        return h2_stream_message(c, msg, len);
    c->nmessages++;
    if (c->kind == H2_UNARY && c->nmessages > 1) {
        h2_call_unreserve(c);
        c->feed_status = STATUS_UNIMPLEMENTED;
        snprintf(c->feed_msg, sizeof(c->feed_msg),
                 "unary method needs exactly one request message, got more");
        return 1;
    }
    /* The raw message stays held while the handler decodes it (and holds
     * the decoded copy): both exist at once. */
    c->feed_status = s->h->message(c, msg, len, c->feed_msg, sizeof(c->feed_msg), s->ctx);
    h2_call_unreserve(c);
    return c->feed_status != STATUS_OK;
}

static int h2_on_message(const uint8_t *msg, size_t len, void *ctx)
{
    struct h2_call *c = ctx;
    if (!grpc_frame_compressed(&c->reader))
        return h2_on_plain_message(c, msg, len);
    size_t n = 0;
    if (!h2_call_inflate(c, msg, len, &n)) {
        h2_call_unreserve(c);
        return 1;
    }
    int rv = h2_on_plain_message(c, c->inflated, n);
    free(c->inflated);   /* NULL if the handler took it */
    c->inflated = NULL;
    return rv;
}

/* Turns a grpc_frame_feed() error into the call's status (gRPC's status
 * code table: oversize is RESOURCE_EXHAUSTED, an unsupported compression
 * UNIMPLEMENTED, a broken prefix INTERNAL). */
static void h2_call_feed_error(struct h2_call *c, int err)
{
    size_t max = c->s->cfg.max_message_bytes;
    switch (err) {
    case GRPC_FRAME_REFUSED:
        h2_call_failf(c, STATUS_RESOURCE_EXHAUSTED,
                      "no room for the request message of %zu bytes: %s", c->reader.msg_len,
                      c->feed_msg);
        break;
    case GRPC_FRAME_TOO_LARGE:
        h2_call_failf(c, STATUS_RESOURCE_EXHAUSTED,
                      "request message of %zu bytes exceeds --max-message-bytes (%zu)",
                      c->reader.msg_len, max);
        break;
    case GRPC_FRAME_BAD_FLAG:
        h2_call_failf(c, STATUS_INTERNAL, "invalid message flag byte 0x%02x", c->reader.hdr[0]);
        break;
    case GRPC_FRAME_NOMEM:
        h2_call_fail(c, STATUS_RESOURCE_EXHAUSTED, "out of memory for the request message");
        break;
    default:
        h2_call_fail(c, c->feed_status, c->feed_msg);
        break;
    }
    grpc_frame_reader_free(&c->reader);
    h2_call_unreserve(c);
}

/* Feeds DATA to the call's reader, within the message size limit; the
 * reader's buffer is held in the budget as it grows (h2_call_reserve). */
static int h2_call_feed(struct h2_call *c, const uint8_t *data, size_t len)
{
    c->wait_bytes += len;
    return grpc_frame_feed(&c->reader, data, len, h2_on_message, c);
}

/* Bytes the reader needs to finish its prefix or its message: feeding no
 * more than that delivers at most one message per feed. */
static size_t h2_call_need(const struct grpc_frame_reader *r)
{
    if (r->hdr_have < GRPC_FRAME_HEADER)
        return GRPC_FRAME_HEADER - r->hdr_have;
    return r->msg_len - r->msg_have;
}

/* At the start of a message body longer than H2_PIECE_HEAD, with its head
 * in data: asks the handler whether it takes the body in pieces. Returns
 * the bytes of data the head used (0: the message goes to the reader). A
 * unary call's second message never does: the reader refuses it. */
static size_t h2_call_piece_start(struct h2_call *c, const uint8_t *data, size_t len)
{
    struct grpc_frame_reader *r = &c->reader;
    const struct h2_handlers *h = c->s->h;
    if (!h->piece_start || r->hdr_have < GRPC_FRAME_HEADER || r->msg_have != 0 ||
        r->msg_len <= H2_PIECE_HEAD || len < H2_PIECE_HEAD || grpc_frame_compressed(r) ||
        (c->kind == H2_UNARY && c->nmessages != 0))
        return 0;   /* a head split across DATA frames goes the usual way too */
    size_t off = h->piece_start(c, data, r->msg_len, c->s->ctx);
    if (off == 0 || off > H2_PIECE_HEAD)
        return 0;
    c->piece_left = r->msg_len - off;
    c->nmessages++;
    c->wait_bytes += off;
    grpc_frame_skip_body(r);
    h2_give(c, c->reserved);   /* the body buffer the prefix bought */
    c->reserved = 0;
    return off;
}

/* The next bytes of a message taken in pieces; returns those taken. */
static size_t h2_call_piece(struct h2_call *c, const uint8_t *data, size_t len)
{
    size_t n = len < c->piece_left ? len : (size_t)c->piece_left;
    size_t k = c->s->h->piece(c, data, n, c->s->ctx);
    c->piece_left -= k;
    c->wait_bytes += k;
    return k;
}

size_t h2_call_input(struct h2_call *c, const uint8_t *data, size_t len)
{
    size_t taken = 0;
    while (taken < len && !c->paused && !c->held && !c->answered) {
        if (c->piece_left) {
            size_t k = h2_call_piece(c, data + taken, len - taken);
            taken += k;
            if (k == 0)
                break;   /* paused */
            continue;
        }
        size_t head = h2_call_piece_start(c, data + taken, len - taken);
        if (head) {
            taken += head;
            continue;
        }
        size_t n = h2_call_need(&c->reader);
        if (n == 0 || n > len - taken)
            n = len - taken;
        int rv = h2_call_feed(c, data + taken, n);
        taken += n;
        if (rv != GRPC_FRAME_OK)
            h2_call_feed_error(c, rv);
    }
    return taken;
}

/* --- resets and their budget -------------------------------------------- */

/* Ends the connection for a client's misbehaviour: GOAWAY ENHANCE_YOUR_CALM
 * with why (static text), no more input read, and a close once the
 * output is out (h2_session_want_read). */
static void h2_session_calm(struct h2_session *s, const char *why)
{
    if (s->calm)
        return;
    s->calm = why;
    int32_t last = nghttp2_session_get_last_proc_stream_id(s->ng);
    nghttp2_submit_goaway(s->ng, NGHTTP2_FLAG_NONE, last, NGHTTP2_ENHANCE_YOUR_CALM,
                          (const uint8_t *)why, strlen(why));
}

/* Sends h2_session_refuse_acked's GOAWAY, if it waits. */
static void h2_session_refusal_send(struct h2_session *s)
{
    if (!s->refusal)
        return;
    h2_session_refuse(s, s->refusal);
    free(s->refusal);
    s->refusal = NULL;
    h2_session_wake(s);
}

/* A RST_STREAM with code went out: one the client caused (anything but
 * NO_ERROR, sent after an early answer, and CANCEL, ours at a drain) takes
 * a token. False when none was left. */
static bool h2_reset_spend(struct h2_session *s, uint32_t code)
{
    if (code == NGHTTP2_NO_ERROR || code == NGHTTP2_CANCEL)
        return true;
    uint64_t now = h2_now(s);
    uint64_t full = (uint64_t)H2_RESET_BURST * 1000;
    s->reset_milli = sat_add_u64(s->reset_milli, sat_mul_u64(now - s->reset_ms, H2_RESET_RATE));
    if (s->reset_milli > full)
        s->reset_milli = full;
    s->reset_ms = now;
    if (s->reset_milli < 1000)
        return false;
    s->reset_milli -= 1000;
    return true;
}

/* --- nghttp2 callbacks ---------------------------------------------------- */

static struct h2_call *h2_stream_call(nghttp2_session *ng, int32_t stream_id)
{
    return nghttp2_session_get_stream_user_data(ng, stream_id);
}

static int h2_on_begin_headers(nghttp2_session *ng, const nghttp2_frame *frame, void *user_data)
{
    struct h2_session *s = user_data;
    if (frame->hd.type != NGHTTP2_HEADERS)
        return 0;
    if (frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
        struct h2_call *t = h2_stream_call(ng, frame->hd.stream_id);
        if (t)
            t->header_list_bytes = 0;   /* trailers are a header list of their own */
        return 0;
    }
    if (s->refusal) {
        /* A refused connection runs no call: the GOAWAY, last stream 0,
         * says this one was not processed. */
        h2_session_refusal_send(s);
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* resets the stream */
    }
    struct h2_call *c = h2_call_new(s, frame->hd.stream_id);
    if (!c)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    nghttp2_session_set_stream_user_data(ng, frame->hd.stream_id, c);
    return 0;
}

/* A malformed request (h2_request.h) ends as nghttp2's own checks would end
 * it: RST_STREAM(PROTOCOL_ERROR), and no more of its fields. */
static int h2_reset_malformed(nghttp2_session *ng, int32_t stream_id)
{
    nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_PROTOCOL_ERROR);
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
}

static bool h2_name_is(const uint8_t *name, size_t namelen, const char *want)
{
    return namelen == strlen(want) && memcmp(name, want, namelen) == 0;
}

/* grpc-timeout (grpc_timeout.h) in milliseconds, rounded up so that a
 * short timeout does not become none. */
static bool h2_parse_timeout(const uint8_t *v, size_t len, uint64_t *ms)
{
    uint64_t us;
    if (!grpc_timeout_parse(v, len, &us))
        return false;
    *ms = us / H2_US_PER_MS + (us % H2_US_PER_MS != 0);
    return true;
}

const struct h2_call_class *h2_call_class(const struct h2_call *call)
{
    return &call->cls;
}

/* amp-priority and amp-max-queue-time: kept for start(), which refuses a
 * bad one (rpc.c); a second copy spoils either, as for authorization. */
static void h2_call_keep_class(struct h2_call *c, bool is_priority, const uint8_t *value,
                               size_t len)
{
    struct h2_call_class *k = &c->cls;
    if (is_priority) {
        k->priority_bad |= k->priority >= 0;
        int p = call_class_priority_parse((const char *)value, len);
        k->priority_bad |= p < 0;
        k->priority = p;
        return;
    }
    uint64_t us = 0;
    k->max_queue_bad |= k->max_queue_us != 0 || !grpc_timeout_parse(value, len, &us) || us == 0;
    k->max_queue_us = us;
}

/* amp-max-reply-bytes: decimal digits, more than 0; kept for rpc.c,
 * which refuses a bad one. */
static void h2_call_keep_max_reply(struct h2_call *c, const uint8_t *value, size_t len)
{
    struct h2_call_class *k = &c->cls;
    uint64_t n = 0;
    bool bad = len == 0 || len > H2_MAX_REPLY_DIGITS || k->max_reply != 0;
    for (size_t i = 0; i < len && !bad; i++) {
        bad = value[i] < '0' || value[i] > '9';
        n = n * 10 + (uint64_t)(value[i] - '0');
    }
    k->max_reply_bad |= bad || n == 0;
    k->max_reply = n;
}

uint64_t h2_call_timeout_ms(const struct h2_call *call)
{
    return call->timeout_ms;
}

enum h2_authorization h2_call_authorization(const struct h2_call *call, const char **value,
                                            size_t *len)
{
    *value = call->authorization;
    *len = call->authorization_len;
    if (call->authorization_bad)
        return H2_AUTHORIZATION_BAD;
    return call->authorization ? H2_AUTHORIZATION_PRESENT : H2_AUTHORIZATION_NONE;
}

/* Keeps the authorization header's value for start(); a second one, or
 * one too long to be a token, spoils it (no guessing which counts). */
static void h2_call_keep_authorization(struct h2_call *c, const uint8_t *value, size_t len)
{
    if (c->authorization || c->authorization_bad || len > H2_AUTHORIZATION_MAX) {
        free(c->authorization);
        c->authorization = NULL;
        c->authorization_len = 0;
        c->authorization_bad = true;
        return;
    }
    c->authorization = malloc(len + 1);
    if (!c->authorization) {
        c->authorization_bad = true;   /* refused, not let through */
        return;
    }
    memcpy(c->authorization, value, len);
    c->authorization[len] = '\0';
    c->authorization_len = len;
}

/* Adds a field to the call's header list as it is decoded. False once the
 * list passed H2_MAX_HEADER_LIST. */
static bool h2_call_header_list_add(struct h2_call *c, size_t namelen, size_t valuelen)
{
    c->header_list_bytes += (uint64_t)namelen + valuelen + H2_FIELD_OVERHEAD;
    return c->header_list_bytes <= H2_MAX_HEADER_LIST;
}

static int h2_on_header(nghttp2_session *ng, const nghttp2_frame *frame, const uint8_t *name,
                        size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                        void *user_data)
{
    (void)flags;
    struct h2_session *s = user_data;
    if (frame->hd.type != NGHTTP2_HEADERS)
        return 0;
    struct h2_call *c = h2_stream_call(ng, frame->hd.stream_id);
    if (c && !h2_call_header_list_add(c, namelen, valuelen)) {
        h2_session_calm(s, "a header list passed SETTINGS_MAX_HEADER_LIST_SIZE");
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    if (frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
        if (!h2_request_trailer_field(name, namelen, value, valuelen))
            return h2_reset_malformed(ng, frame->hd.stream_id);
        return 0;
    }
    if (!c)
        return 0;
    if (!h2_request_field(&c->request, name, namelen, value, valuelen))
        return h2_reset_malformed(ng, frame->hd.stream_id);
    if (h2_name_is(name, namelen, ":method")) {
        c->is_post = valuelen == 4 && memcmp(value, "POST", 4) == 0;
    } else if (h2_name_is(name, namelen, ":path")) {
        if (valuelen >= sizeof(c->path)) {
            c->path_too_long = true;
        } else {
            memcpy(c->path, value, valuelen);
            c->path[valuelen] = '\0';
        }
    } else if (h2_name_is(name, namelen, "grpc-timeout")) {
        c->timeout_bad = !h2_parse_timeout(value, valuelen, &c->timeout_ms);
        /* Any other value rounds up to at least 1 ms. */
        c->timeout_expired = !c->timeout_bad && c->timeout_ms == 0;
    } else if (h2_name_is(name, namelen, "authorization")) {
        h2_call_keep_authorization(c, value, valuelen);
    } else if (h2_name_is(name, namelen, CALL_CLASS_PRIORITY_HEADER) ||
               h2_name_is(name, namelen, CALL_CLASS_MAX_QUEUE_HEADER)) {
        h2_call_keep_class(c, h2_name_is(name, namelen, CALL_CLASS_PRIORITY_HEADER), value,
                           valuelen);
    } else if (h2_name_is(name, namelen, AMP_WIRE_MAX_REPLY_HEADER)) {
        h2_call_keep_max_reply(c, value, valuelen);
    } else if (h2_name_is(name, namelen, AMP_WIRE_SERVER_TIMING_HEADER)) {
        c->cls.server_timing_bad |= c->cls.server_timing || valuelen != 1 || value[0] != '1';
        c->cls.server_timing = true;
    } else if (h2_name_is(name, namelen, "grpc-accept-encoding")) {
        c->reply_encoding = h2_deflate_choose(value, valuelen);
    } else if (h2_name_is(name, namelen, "grpc-encoding")) {
        c->encoding = h2_inflate_encoding(value, valuelen);
    } else if (h2_name_is(name, namelen, "content-type")) {
        size_t n = valuelen < sizeof(c->content_type) - 1 ? valuelen : sizeof(c->content_type) - 1;
        memcpy(c->content_type, value, n);
        c->content_type[n] = '\0';
    }
    return 0;
}

static int h2_on_frame_recv(nghttp2_session *ng, const nghttp2_frame *frame, void *user_data)
{
    struct h2_session *s = user_data;
    if (frame->hd.type == NGHTTP2_SETTINGS && !(frame->hd.flags & NGHTTP2_FLAG_ACK))
        s->settings_seen = true;
    if (frame->hd.type == NGHTTP2_SETTINGS && (frame->hd.flags & NGHTTP2_FLAG_ACK))
        h2_session_refusal_send(s);
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
        return 0;
    struct h2_call *c = h2_stream_call(ng, frame->hd.stream_id);
    if (!c)
        return 0;
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
        if (!h2_request_complete(&c->request)) {
            h2_reset_malformed(ng, frame->hd.stream_id);
            return 0;
        }
        h2_call_headers_done(c);
    } else if (frame->hd.type == NGHTTP2_HEADERS && !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
        /* Trailers must end the request. */
        h2_reset_malformed(ng, frame->hd.stream_id);
        return 0;
    }
    if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
        h2_call_remote_end(c);
    return 0;
}

/* Notes an unpadded DATA frame's payload as it begins: it is what
 * h2_session_read_dest may direct. */
static int h2_on_begin_frame(nghttp2_session *ng, const nghttp2_frame_hd *hd, void *user_data)
{
    (void)ng;
    struct h2_session *s = user_data;
    bool plain = hd->type == NGHTTP2_DATA && !(hd->flags & NGHTTP2_FLAG_PADDED);
    s->data_stream = plain ? hd->stream_id : 0;
    s->data_left = plain ? hd->length : 0;
    return 0;
}

static int h2_on_data_chunk(nghttp2_session *ng, uint8_t flags, int32_t stream_id,
                            const uint8_t *data, size_t len, void *user_data)
{
    (void)flags;
    struct h2_session *s = user_data;
    s->data_left = stream_id == s->data_stream && len < s->data_left ? s->data_left - len : 0;
    struct h2_call *c = h2_stream_call(ng, stream_id);
    if (c && !c->answered && !h2_request_data(&c->request, len))
        h2_call_reset(c, "DATA passed the request's content-length");
    if (c && c->started)
        s->active_ms = h2_now(s);
    if (c && c->kind == H2_STREAM && c->started && !c->answered) {
        /* The connection's share at once, so a paused stream never stalls
         * its neighbours; the stream's share as the reader takes it. */
        nghttp2_session_consume_connection(ng, len);
        h2_stream_data(c, data, len);
        return 0;
    }
    /* Unary calls (and input that is ignored): taken in at once. */
    nghttp2_session_consume(ng, stream_id, len);
    if (!c || c->answered || !c->started)
        return 0;
    h2_call_input(c, data, len);
    return 0;
}

static int h2_on_frame_send(nghttp2_session *ng, const nghttp2_frame *frame, void *user_data)
{
    struct h2_session *s = user_data;
    if (frame->hd.type == NGHTTP2_RST_STREAM && !h2_reset_spend(s, frame->rst_stream.error_code))
        h2_session_calm(s, "too many streams reset for the client's errors (CVE-2025-8671)");
    if (!(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    struct h2_call *c = h2_stream_call(ng, frame->hd.stream_id);
    /* Answered before the client finished sending (an early error): tell it
     * to stop, as HTTP/2 allows with NO_ERROR. */
    if (c && !c->remote_ended)
        nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_NO_ERROR);
    return 0;
}

static int h2_on_stream_close(nghttp2_session *ng, int32_t stream_id, uint32_t error_code,
                              void *user_data)
{
    (void)error_code;
    (void)user_data;
    struct h2_call *c = h2_stream_call(ng, stream_id);
    if (!c)
        return 0;
    nghttp2_session_set_stream_user_data(ng, stream_id, NULL);
    h2_call_release(c);
    return 0;
}

/* --- session -------------------------------------------------------------- */

static int h2_session_setup(struct h2_session *s)
{
    nghttp2_session_callbacks *cbs;
    if (nghttp2_session_callbacks_new(&cbs) != 0)
        return -1;
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, h2_on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cbs, h2_on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, h2_on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, h2_on_data_chunk);
    nghttp2_session_callbacks_set_on_begin_frame_callback(cbs, h2_on_begin_frame);
    nghttp2_session_callbacks_set_on_frame_send_callback(cbs, h2_on_frame_send);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, h2_on_stream_close);
    nghttp2_session_callbacks_set_data_source_read_length_callback(cbs, data_frame_len);
    nghttp2_session_callbacks_set_send_data_callback(cbs, h2_reply_send_data);
    nghttp2_option *opt;
    if (nghttp2_option_new(&opt) != 0) {
        nghttp2_session_callbacks_del(cbs);
        return -1;
    }
    nghttp2_option_set_no_auto_window_update(opt, 1);
    /* Its request rules live in h2_request.c, less the :authority one. */
    nghttp2_option_set_no_http_messaging(opt, 1);
    nghttp2_option_set_max_continuations(opt, H2_MAX_CONTINUATIONS);
    int rv = nghttp2_session_server_new2(&s->ng, cbs, s, opt);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cbs);
    if (rv != 0)
        return -1;
    nghttp2_settings_entry iv[] = {
        { NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, s->cfg.max_streams },
        { NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_STREAM_WINDOW },
        { NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, H2_MAX_HEADER_LIST },
        { NGHTTP2_SETTINGS_MAX_FRAME_SIZE, DATA_FRAME_MAX },
    };
    if (nghttp2_submit_settings(s->ng, NGHTTP2_FLAG_NONE, iv, sizeof(iv) / sizeof(iv[0])) != 0)
        return -1;
    if (nghttp2_session_set_local_window_size(s->ng, NGHTTP2_FLAG_NONE, 0, H2_CONN_WINDOW) != 0)
        return -1;
    return 0;
}

struct h2_session *h2_session_new(const struct h2_config *cfg, const struct h2_handlers *handlers,
                                  void *ctx)
{
    struct h2_session *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->h = handlers;
    s->ctx = ctx;
    s->cfg = *cfg;
    s->created_ms = s->active_ms = s->reset_ms = h2_now(s);
    s->reset_milli = (uint64_t)H2_RESET_BURST * 1000;
    s->frames.preface_left = NGHTTP2_CLIENT_MAGIC_LEN;
    if (h2_session_setup(s) != 0) {
        h2_session_free(s);
        return NULL;
    }
    return s;
}

void h2_session_free(struct h2_session *s)
{
    if (!s)
        return;
    /* nghttp2_session_del() frees streams without close callbacks. Busy
     * for good: a closed() handler that resumes or answers another call
     * must not run handlers or flush on a session being torn down. */
    s->busy++;
    while (s->calls)
        h2_call_release(s->calls);
    for (int i = 0; i < H2_WRITES; i++) {   /* the socket is gone: what writes held goes too */
        h2_reply_write_done(s, &s->writes[i]);
        free(s->writes[i].gather);
    }
    nghttp2_session_del(s->ng);
    free(s->flat);
    free(s->refusal);
    free(s);
}

uint8_t *h2_session_read_dest(struct h2_session *s, size_t *len)
{
    if (!s->data_left || !s->h->piece_dest)
        return NULL;
    struct h2_call *c = h2_stream_call(s->ng, s->data_stream);
    if (!c || !c->started || c->answered || !c->piece_left || c->paused || c->held ||
        c->pend_len)
        return NULL;
    size_t room = 0;
    uint8_t *p = s->h->piece_dest(c, &room, s->ctx);
    size_t n = s->data_left < room ? s->data_left : room;
    if (n > c->piece_left)
        n = (size_t)c->piece_left;
    if (!p || n == 0)
        return NULL;
    *len = n;
    s->dest_call = c;
    return p;
}

void h2_call_settle_read(struct h2_call *c)
{
    struct h2_session *s = c->s;
    if (s->dest_call != c)
        return;
    s->dest_call = NULL;
    if (s->h->read_settle)
        s->h->read_settle(s->ctx);
}

/* Follows the frame headers in the client's bytes to bound each HEADERS
 * block's own size: nghttp2 decodes the CONTINUATION frames of a block it
 * ignores (a refused stream's, or the rest of one after a malformed field)
 * without telling any callback, up to 8 of SETTINGS_MAX_FRAME_SIZE each.
 * False once a block passed H2_MAX_HEADER_LIST. */
static bool h2_frames_scan(struct h2_session *s, const uint8_t *p, size_t n)
{
    struct h2_frames *f = &s->frames;
    while (n) {
        size_t skip = f->preface_left ? f->preface_left : f->payload_left;
        if (skip) {
            size_t k = n < skip ? n : skip;
            if (f->preface_left)
                f->preface_left -= k;
            else
                f->payload_left -= k;
            p += k;
            n -= k;
            continue;
        }
        f->hd[f->hd_have++] = *p++;
        n--;
        if (f->hd_have < sizeof(f->hd))
            continue;
        f->hd_have = 0;
        f->payload_left = (size_t)f->hd[0] << 16 | (size_t)f->hd[1] << 8 | f->hd[2];
        if (f->hd[3] == NGHTTP2_HEADERS)
            f->block = 0;
        else if (f->hd[3] != NGHTTP2_CONTINUATION)
            continue;
        f->block += f->payload_left;
        if (f->block > H2_MAX_HEADER_LIST)
            return false;
    }
    return true;
}

int h2_session_recv(struct h2_session *s, const uint8_t *data, size_t len)
{
    s->dest_call = NULL;   /* what a place was read into comes now, or came */
    if (s->calm)
        return -1;
    if (!h2_frames_scan(s, data, len)) {
        h2_session_calm(s, "a HEADERS block's own bytes passed SETTINGS_MAX_HEADER_LIST_SIZE");
        return -1;
    }
    s->busy++;
    ssize_t rv = nghttp2_session_mem_recv(s->ng, data, len);
    if (rv >= 0)
        h2_stream_run_resumes(s);
    s->busy--;
    if (rv < 0) {
        /* Bad preface or an error nghttp2 could not turn into a GOAWAY
         * itself: send one (unless a callback sent its own), then the
         * owner closes after flushing. */
        if (!s->calm)
            nghttp2_session_terminate_session(s->ng, NGHTTP2_PROTOCOL_ERROR);
        s->not_http2 = rv == NGHTTP2_ERR_BAD_CLIENT_MAGIC;
        return -1;
    }
    return s->calm ? -1 : 0;
}

bool h2_session_not_http2(const struct h2_session *s)
{
    return s->not_http2;
}

bool h2_session_settings_seen(const struct h2_session *s)
{
    return s->settings_seen;
}

struct h2_write *h2_write_next(struct h2_session *s)
{
    return &s->writes[(s->write_first + s->write_n) % H2_WRITES];
}

/* Appends n bytes to w's gather buffer. Returns 0, or -1 out of memory. */
static int h2_gather_add(struct h2_write *w, const void *p, size_t n)
{
    if (grow_bytes(&w->gather, &w->gather_cap, 4096, w->gather_len + n) != 0)
        return -1;
    memcpy(w->gather + w->gather_len, p, n);
    w->gather_len += n;
    return 0;
}

/* The borrowed frame nghttp2 just made: a small one is copied into the
 * gather buffer and its frame forgotten (returns 0: go on gathering; the
 * messages it took stay held by the write); a large one keeps its bytes
 * where they lie and ends the gathering, its header joining the buffer
 * (returns 1). -1: out of memory. */
static int h2_gather_frame(struct h2_write *w)
{
    if (w->frame_len > H2_GATHER_COPY_MAX)
        return h2_gather_add(w, w->frame_hd, sizeof(w->frame_hd)) != 0 ? -1 : 1;
    for (int i = 0; i < w->frame_n; i++)
        if (h2_gather_add(w, w->frame[i].iov_base, w->frame[i].iov_len) != 0)
            return -1;
    h2_write_forget_frame(w);
    return 0;
}

int h2_session_sendv(struct h2_session *s, struct iovec *iov)
{
    if (s->write_n == H2_WRITES)
        return 0;   /* the owner holds as many as it may */
    struct h2_write *w = h2_write_next(s);
    w->gather_len = 0;
    int big = 0;
    s->busy++;
    s->building = true;
    while (w->gather_len < H2_GATHER_MAX) {
        const uint8_t *out;
        ssize_t n = nghttp2_session_mem_send(s->ng, &out);
        if (n < 0 || (n > 0 && h2_gather_add(w, out, (size_t)n) != 0)) {
            big = -1;
            break;
        }
        bool copied = w->frame_ready;   /* a small frame, unless it ends the write */
        if (copied && (big = h2_gather_frame(w)) != 0)
            break;
        /* Handlers told here may queue more, which the next round takes. */
        if (s->sent_pending || s->resume_pending) {
            h2_reply_notify_sent(s);
            h2_stream_run_resumes(s);
        } else if (n == 0 && !copied) {
            break;
        }
    }
    s->building = false;
    s->busy--;
    if (big < 0)
        return -1;   /* what w holds is freed with the session */
    if (w->gather_len == 0) {
        struct h2_out *held = w->done;
        w->done = NULL;
        h2_reply_defer_all(s, held);
        return 0;
    }
    s->write_n++;
    iov[0] = (struct iovec){ w->gather, w->gather_len };
    if (!big)
        return 1;
    memcpy(iov + 1, w->frame + 1, (size_t)(w->frame_n - 1) * sizeof(*iov));
    return w->frame_n;
}

void h2_session_written(struct h2_session *s)
{
    if (s->write_n == 0)
        return;
    s->busy++;   /* a release that queues more output must not flush from in here */
    h2_reply_write_done(s, &s->writes[s->write_first]);
    s->write_first = (s->write_first + 1) % H2_WRITES;
    s->write_n--;
    s->busy--;
}

ssize_t h2_session_send(struct h2_session *s, const uint8_t **out)
{
    struct iovec iov[H2_SEND_IOV];
    int n = h2_session_sendv(s, iov);
    if (n <= 0)
        return n;
    size_t len = iov_total(iov, n);
    if (len > s->flat_cap) {
        uint8_t *p = realloc(s->flat, len);
        if (!p)
            return -1;
        s->flat = p;
        s->flat_cap = len;
    }
    for (size_t i = 0, at = 0; i < (size_t)n; at += iov[i].iov_len, i++)
        memcpy(s->flat + at, iov[i].iov_base, iov[i].iov_len);
    h2_session_written(s);
    *out = s->flat;
    return (ssize_t)len;
}

int h2_session_want_read(const struct h2_session *s)
{
    return !s->calm && nghttp2_session_want_read(s->ng);
}

int h2_session_want_write(const struct h2_session *s)
{
    return nghttp2_session_want_write(s->ng);
}

void h2_session_goaway(struct h2_session *s)
{
    int32_t last = nghttp2_session_get_last_proc_stream_id(s->ng);
    nghttp2_submit_goaway(s->ng, NGHTTP2_FLAG_NONE, last, NGHTTP2_NO_ERROR, NULL, 0);
}

void h2_session_refuse(struct h2_session *s, const char *reason)
{
    nghttp2_submit_goaway(s->ng, NGHTTP2_FLAG_NONE, 0, NGHTTP2_ENHANCE_YOUR_CALM,
                          (const uint8_t *)reason, strlen(reason));
}

void h2_session_refuse_acked(struct h2_session *s, const char *reason)
{
    s->refusal = strdup(reason);
    if (!s->refusal)
        h2_session_refuse(s, reason);
}

size_t h2_session_calls(const struct h2_session *s)
{
    return s->ncalls;
}

uint64_t h2_session_active_ms(const struct h2_session *s)
{
    return s->active_ms;
}

/* --- timeouts and the drain's end ----------------------------------------- */

/* True while the call cannot go on until the client sends more: a unary
 * request not yet whole, or a stream message begun and not paused by us. */
static bool h2_call_waiting(const struct h2_call *c)
{
    if (!c->started || c->answered)
        return false;
    if (c->kind == H2_UNARY)
        return !c->remote_ended;
    return !c->paused && !c->held && !c->pend_len && grpc_frame_pending(&c->reader);
}

/* A waiting call must get min_request_rate bytes a second after a grace
 * of request_timeout_ms; counted from when the sweep first saw it wait. */
static void h2_call_expire(struct h2_call *c, uint64_t now)
{
    const struct h2_config *cfg = &c->s->cfg;
    if (!h2_call_waiting(c)) {
        c->wait_ms = 0;
        c->wait_bytes = 0;
        return;
    }
    if (!c->wait_ms) {
        c->wait_ms = now;
        c->wait_bytes = 0;
        return;
    }
    uint64_t allowed = sat_add_u64(cfg->request_timeout_ms,
                                   sat_mul_u64(c->wait_bytes, 1000) / cfg->min_request_rate);
    if (now - c->wait_ms <= allowed)
        return;
    h2_call_failf(c, STATUS_RESOURCE_EXHAUSTED,
                  "the request stalled: %llu bytes in %llu ms, below --min-request-rate (%llu "
                  "bytes/s) after --request-timeout (%llu ms)",
                  (unsigned long long)c->wait_bytes, (unsigned long long)(now - c->wait_ms),
                  (unsigned long long)cfg->min_request_rate,
                  (unsigned long long)cfg->request_timeout_ms);
}

int h2_session_expire(struct h2_session *s, uint64_t now)
{
    if (s->refusal && now - s->created_ms >= H2_REFUSAL_WAIT_MS)
        h2_session_refusal_send(s);
    uint64_t limit = s->cfg.request_timeout_ms;
    if (!limit)
        return 0;
    bool stalled = !s->settings_seen && now - s->created_ms > limit;
    s->busy++;
    for (struct h2_call *c = s->calls, *next; c; c = next) {
        next = c->next;   /* failing may not free c (that waits for a send), but be safe */
        if (!c->started && !c->answered && now - c->created_ms > limit)
            stalled = true;   /* a HEADERS block left unfinished holds the whole connection */
        h2_call_expire(c, now);
    }
    s->busy--;
    if (stalled)
        h2_session_refuse(s, H2_EXPIRED_MSG);
    return stalled ? -1 : 0;
}

void h2_session_fail_all(struct h2_session *s, enum status_code code, const char *msg)
{
    s->busy++;
    for (struct h2_call *c = s->calls; c; c = c->next) {
        if (c->started && !c->answered)
            h2_call_fail(c, code, msg);
        else
            nghttp2_submit_rst_stream(s->ng, NGHTTP2_FLAG_NONE, c->stream_id, NGHTTP2_CANCEL);
    }
    s->busy--;
}
