/* h2.c: HTTP/2 + gRPC server session over nghttp2, with no I/O (see h2.h).
 *
 * nghttp2 parses frames and enforces HTTP/2; this file adds gRPC on top:
 * request headers are checked when the HEADERS frame is whole, DATA goes
 * through a grpc_frame_reader per call, and answers are either a normal
 * response (headers, messages, trailers) or Trailers-Only. Every call
 * becomes a struct h2_call hung on its nghttp2 stream, freed when nghttp2
 * closes the stream. Neighbours: conn.c moves the bytes, rpc.c handles calls.
 *
 * Stream calls feed their reader one message at a time, so that a pause in
 * message() leaves every byte behind that message unread in the call's
 * pending buffer and unconsumed in the stream's window. Handlers run only
 * inside h2_session_recv(), h2_session_send() or an outermost
 * h2_call_resume(), each of which counts as "busy": a resume asked for while
 * busy is run before that returns, and want_write waits until nothing is
 * busy (conn.c flushes from want_write, and a flush inside a handler could
 * close the stream whose handler is running).
 */
#include "h2.h"

#include <nghttp2/nghttp2.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_frame.h"

#define H2_PATH_MAX 256
/* Per-stream receive window we advertise, and the connection's: large
 * enough that a 64 MiB request is not throttled by round trips. */
#define H2_STREAM_WINDOW (4 * 1024 * 1024)
#define H2_CONN_WINDOW (16 * 1024 * 1024)
/* Request header block limit: gRPC metadata is small. */
#define H2_MAX_HEADER_LIST (64 * 1024)
/* grpc-message after percent-encoding (at most 3 bytes per input byte). */
#define H2_GRPC_MESSAGE_MAX (3 * STATUS_MSG_MAX + 1)

#define GRPC_CONTENT_TYPE "application/grpc"
#define HTTP_STATUS_OK "200"
#define HTTP_STATUS_BAD_METHOD "405"
#define HTTP_STATUS_BAD_MEDIA "415"

/* One queued reply message of a stream call. */
struct h2_out {
    struct h2_out *next;
    uint8_t *buf;      /* malloc'd prefix + message, owned */
    size_t len, pos;   /* pos <= len: bytes already taken by nghttp2 */
};

struct h2_call {
    struct h2_session *s;
    int32_t stream_id;
    struct h2_call *prev, *next;  /* the session's list of calls */
    void *user;                   /* handler's state; handler frees it in closed() */
    enum h2_call_kind kind;
    bool started;                 /* start() accepted: closed() is owed */
    bool answered;                /* a response was submitted: input is ignored */
    bool remote_ended;            /* the client half-closed */
    size_t nmessages;             /* request messages delivered */
    struct grpc_frame_reader reader;
    uint64_t reserved;            /* bytes of s->cfg.budget held for the message being read */
    /* Request headers, as collected until the HEADERS frame is whole. */
    char path[H2_PATH_MAX];
    bool path_too_long;
    bool is_post;
    char content_type[64];
    /* A failure found while feeding the reader, reported after it returns. */
    enum status_code feed_status;
    char feed_msg[STATUS_MSG_MAX];
    /* The reply: prefix + message, sent from out_pos; owned by the call. */
    uint8_t *out;
    size_t out_len, out_pos;
    /* Stream calls, request side. While held or pend is non-empty, new
     * DATA is appended to pend so that messages keep their order. */
    bool paused;             /* h2_call_pause(): deliver nothing until resumed */
    bool in_message;         /* message() of this call is running */
    bool hold_req;           /* paused inside message(): keep that message */
    bool resume_owed;        /* resumed: h2_session_run_resumes() redelivers */
    bool end_done;           /* end() was called */
    uint8_t *held;           /* malloc'd copy of the message paused on, or NULL */
    size_t held_len;
    uint64_t held_reserved;  /* budget bytes held for it */
    uint8_t *pend;           /* raw DATA behind it, neither fed nor stream-consumed yet, */
    size_t pend_off, pend_len, pend_cap; /* in pend[pend_off, pend_off + pend_len) */
    /* Stream calls, reply side. */
    bool headers_sent;       /* response submitted with h2_stream_read as provider */
    bool out_deferred;       /* the provider returned DEFERRED: resume it on new output */
    bool finishing;          /* trailers follow the last queued byte */
    bool sent_owed;          /* bytes taken since the last sent() */
    struct h2_out *out_head, *out_tail;
    size_t unsent;           /* sum of len - pos over the queue */
    enum status_code trailer_code;
    char *trailer_msg;       /* malloc'd, percent-encoded grpc-message, or NULL */
};

struct h2_session {
    nghttp2_session *ng;
    const struct h2_handlers *h;
    void *ctx;
    struct h2_config cfg;
    struct h2_call *calls;   /* every call not yet closed by nghttp2 */
    size_t ncalls;
    int busy;                /* recv, send or a resume run in progress: no want_write */
    bool resume_pending;     /* some call has resume_owed */
    bool sent_pending;       /* some call has sent_owed */
};

/* --- calls ---------------------------------------------------------------- */

static struct h2_call *h2_call_new(struct h2_session *s, int32_t stream_id)
{
    struct h2_call *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->s = s;
    c->stream_id = stream_id;
    grpc_frame_reader_init(&c->reader, s->cfg.max_message_bytes);
    c->next = s->calls;
    if (s->calls)
        s->calls->prev = c;
    s->calls = c;
    s->ncalls++;
    return c;
}

static void h2_budget_release(struct h2_session *s, uint64_t n)
{
    if (n)
        s->cfg.budget->used -= n;
}

static void h2_call_unreserve(struct h2_call *c)
{
    h2_budget_release(c->s, c->reserved);
    c->reserved = 0;
}

static void h2_out_free_all(struct h2_call *c)
{
    while (c->out_head) {
        struct h2_out *o = c->out_head;
        c->out_head = o->next;
        free(o->buf);
        free(o);
    }
    c->out_tail = NULL;
    c->unsent = 0;
}

/* Tells the handler (if it took the call) and frees the call. */
static void h2_call_release(struct h2_call *c)
{
    struct h2_session *s = c->s;
    h2_call_unreserve(c);
    if (c->started && s->h->closed)
        s->h->closed(c, s->ctx);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->calls = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->ncalls--;
    grpc_frame_reader_free(&c->reader);
    free(c->out);
    free(c->held);
    h2_budget_release(s, c->held_reserved);
    free(c->pend);
    h2_out_free_all(c);
    free(c->trailer_msg);
    free(c);
}

void *h2_call_user(const struct h2_call *call)
{
    return call->user;
}

void h2_call_set_user(struct h2_call *call, void *user)
{
    call->user = user;
}

static void h2_session_wake(struct h2_session *s)
{
    if (s->busy == 0 && s->h->want_write)
        s->h->want_write(s->ctx);
}

#define H2_NV(name, value)                                                      \
    {                                                                            \
        (uint8_t *)(name), (uint8_t *)(value), sizeof(name) - 1, strlen(value), \
            NGHTTP2_NV_FLAG_NO_COPY_NAME                                         \
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

static void h2_stream_drop_input(struct h2_call *c);

/* Submits a Trailers-Only response (or a bare HTTP error with gRPC status
 * fields, for requests that are not gRPC at all). */
static int h2_call_answer_status(struct h2_call *c, const char *http_status,
                                 enum status_code code, const char *msg)
{
    if (c->answered)
        return -1;
    c->answered = true;
    if (c->kind == H2_STREAM)
        h2_stream_drop_input(c);
    char status[16], encoded[H2_GRPC_MESSAGE_MAX];
    snprintf(status, sizeof(status), "%d", (int)code);
    h2_percent_encode(msg ? msg : "", encoded, sizeof(encoded));
    nghttp2_nv nv[] = {
        H2_NV(":status", http_status),
        H2_NV("content-type", GRPC_CONTENT_TYPE),
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

static int h2_stream_fail(struct h2_call *c, enum status_code code, const char *msg);

int h2_call_fail(struct h2_call *call, enum status_code code, const char *msg)
{
    if (call->kind == H2_STREAM && call->headers_sent)
        return h2_stream_fail(call, code, msg);
    return h2_call_answer_status(call, HTTP_STATUS_OK, code, msg);
}

static ssize_t h2_reply_read(nghttp2_session *ng, int32_t stream_id, uint8_t *buf, size_t length,
                             uint32_t *flags, nghttp2_data_source *source, void *user_data)
{
    (void)user_data;
    struct h2_call *c = source->ptr;
    size_t n = c->out_len - c->out_pos;
    if (n > length)
        n = length;
    memcpy(buf, c->out + c->out_pos, n);
    c->out_pos += n;
    if (c->out_pos == c->out_len) {
        *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        nghttp2_nv trailers[] = { H2_NV("grpc-status", "0") };
        if (nghttp2_submit_trailer(ng, stream_id, trailers, 1) != 0)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return (ssize_t)n;
}

int h2_call_reply(struct h2_call *call, uint8_t *buf, size_t len)
{
    if (call->kind == H2_STREAM) {
        if (h2_call_send(call, buf, len) != 0)
            return -1;
        return h2_call_finish(call);
    }
    if (call->answered) {
        free(buf);
        return -1;
    }
    if (len > call->s->cfg.max_message_bytes) {
        free(buf);
        char msg[STATUS_MSG_MAX];
        snprintf(msg, sizeof(msg), "reply message of %zu bytes exceeds --max-message-bytes (%zu)",
                 len, call->s->cfg.max_message_bytes);
        h2_call_fail(call, STATUS_RESOURCE_EXHAUSTED, msg);
        return -1;
    }
    grpc_frame_header(buf, len);
    call->out = buf;
    call->out_len = len + GRPC_FRAME_HEADER;
    call->out_pos = 0;
    call->answered = true;
    nghttp2_nv nv[] = {
        H2_NV(":status", HTTP_STATUS_OK),
        H2_NV("content-type", GRPC_CONTENT_TYPE),
        H2_NV("grpc-accept-encoding", "identity"),
    };
    nghttp2_data_provider dp = { .source.ptr = call, .read_callback = h2_reply_read };
    if (nghttp2_submit_response(call->s->ng, call->stream_id, nv, sizeof(nv) / sizeof(nv[0]), &dp)
        != 0)
        return -1;
    h2_session_wake(call->s);
    return 0;
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
        memcpy(buf + n, o->buf + o->pos, k);
        o->pos += k;
        n += k;
        if (o->pos == o->len) {
            c->out_head = o->next;
            if (!c->out_head)
                c->out_tail = NULL;
            free(o->buf);
            free(o);
        }
    }
    if (n) {
        c->unsent -= n;
        c->sent_owed = true;
        c->s->sent_pending = true;
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

int h2_call_send(struct h2_call *call, uint8_t *buf, size_t len)
{
    if (call->kind != H2_STREAM || call->answered) {
        free(buf);
        return -1;
    }
    if (len > call->s->cfg.max_message_bytes) {
        free(buf);
        char msg[STATUS_MSG_MAX];
        snprintf(msg, sizeof(msg), "reply message of %zu bytes exceeds --max-message-bytes (%zu)",
                 len, call->s->cfg.max_message_bytes);
        h2_call_fail(call, STATUS_RESOURCE_EXHAUSTED, msg);
        return -1;
    }
    struct h2_out *o = malloc(sizeof(*o));
    if (!o) {
        free(buf);
        h2_call_fail(call, STATUS_RESOURCE_EXHAUSTED, "out of memory for a reply message");
        return -1;
    }
    grpc_frame_header(buf, len);
    *o = (struct h2_out){ .buf = buf, .len = len + GRPC_FRAME_HEADER };
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
    h2_stream_drop_input(call);
    h2_stream_kick(call);
    h2_session_wake(call->s);
    return 0;
}

/* h2_call_fail() once headers are out: the status goes in trailers after
 * the message nghttp2 has begun; messages not begun are dropped. */
static int h2_stream_fail(struct h2_call *c, enum status_code code, const char *msg)
{
    if (c->answered)
        return -1;
    c->answered = true;
    c->finishing = true;
    c->trailer_code = code;
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

/* --- request side ------------------------------------------------------- */

static void h2_call_failf(struct h2_call *c, enum status_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void h2_call_failf(struct h2_call *c, enum status_code code, const char *fmt, ...)
{
    char msg[STATUS_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    h2_call_fail(c, code, msg);
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
    char msg[STATUS_MSG_MAX] = "";
    enum status_code code = s->h->start(c, c->path, &c->kind, msg, sizeof(msg), s->ctx);
    if (code != STATUS_OK) {
        h2_call_fail(c, code, msg);
        return;
    }
    c->started = true;
}

static void h2_stream_try_end(struct h2_call *c);

/* The client half-closed: check the request's shape and let the handler answer. */
static void h2_call_remote_end(struct h2_call *c)
{
    c->remote_ended = true;
    if (c->answered || !c->started)
        return;
    if (c->kind == H2_STREAM) {
        h2_stream_try_end(c);
        return;
    }
    if (grpc_frame_pending(&c->reader)) {
        h2_call_failf(c, STATUS_INTERNAL,
                      "request stream ended inside a message (declared %zu bytes, got %zu)",
                      c->reader.hdr_have < GRPC_FRAME_HEADER ? (size_t)0 : c->reader.msg_len,
                      c->reader.msg_have);
        return;
    }
    if (c->kind == H2_UNARY && c->nmessages != 1) {
        h2_call_failf(c, STATUS_UNIMPLEMENTED,
                      "unary method needs exactly one request message, got %zu", c->nmessages);
        return;
    }
    c->s->h->end(c, c->s->ctx);
}

static int h2_stream_message(struct h2_call *c, const uint8_t *msg, size_t len);

static int h2_on_message(const uint8_t *msg, size_t len, void *ctx)
{
    struct h2_call *c = ctx;
    struct h2_session *s = c->s;
    if (c->kind == H2_STREAM)
        return h2_stream_message(c, msg, len);
    h2_call_unreserve(c);
    c->nmessages++;
    if (c->kind == H2_UNARY && c->nmessages > 1) {
        c->feed_status = STATUS_UNIMPLEMENTED;
        snprintf(c->feed_msg, sizeof(c->feed_msg),
                 "unary method needs exactly one request message, got more");
        return 1;
    }
    c->feed_status = s->h->message(c, msg, len, c->feed_msg, sizeof(c->feed_msg), s->ctx);
    return c->feed_status != STATUS_OK;
}

/* Turns a grpc_frame_feed() error into the call's status (gRPC's status
 * code table: oversize is RESOURCE_EXHAUSTED, an unsupported compression
 * UNIMPLEMENTED, a broken prefix INTERNAL). */
static void h2_call_feed_error(struct h2_call *c, int err)
{
    size_t max = c->s->cfg.max_message_bytes;
    struct h2_budget *b = c->s->cfg.budget;
    switch (err) {
    case GRPC_FRAME_TOO_LARGE:
        if (c->reader.msg_len <= max) {
            h2_call_failf(c, STATUS_RESOURCE_EXHAUSTED,
                          "--max-job-memory (%llu) is taken by requests being received; this "
                          "message declares %zu bytes",
                          (unsigned long long)b->max, c->reader.msg_len);
            break;
        }
        h2_call_failf(c, STATUS_RESOURCE_EXHAUSTED,
                      "request message of %zu bytes exceeds --max-message-bytes (%zu)",
                      c->reader.msg_len, max);
        break;
    case GRPC_FRAME_COMPRESSED:
        h2_call_fail(c, STATUS_UNIMPLEMENTED,
                     "compressed messages are not supported (grpc-accept-encoding: identity)");
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

/* Feeds DATA to the call's reader, within the message size limit and what
 * is left of the daemon-wide budget; reserves a message that is now being
 * buffered. */
static int h2_call_feed(struct h2_call *c, const uint8_t *data, size_t len)
{
    struct h2_budget *b = c->s->cfg.budget;
    size_t room = c->s->cfg.max_message_bytes;
    if (b && !c->reserved && b->max - b->used < room)
        room = (size_t)(b->max - b->used);
    c->reader.max_len = room;
    int rv = grpc_frame_feed(&c->reader, data, len, h2_on_message, c);
    if (rv == GRPC_FRAME_OK && b && c->reader.msg && !c->reserved) {
        c->reserved = c->reader.msg_len;
        b->used += c->reserved;
    }
    return rv;
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
static int h2_stream_message(struct h2_call *c, const uint8_t *msg, size_t len)
{
    uint64_t reserved = c->reserved;
    c->reserved = 0;
    c->nmessages++;
    bool hold;
    c->feed_status = h2_stream_handle(c, msg, len, &hold);
    if (!hold) {
        h2_budget_release(c->s, reserved);
        return c->feed_status != STATUS_OK;
    }
    c->held = malloc(len + 1);
    if (!c->held) {
        h2_budget_release(c->s, reserved);
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
 * it: none of it is consumed until it is fed. */
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
        uint8_t *nb = realloc(c->pend, cap);
        if (!nb)
            return -1;
        c->pend = nb;
        c->pend_cap = cap;
    }
    memcpy(c->pend + c->pend_off + c->pend_len, data, len);
    c->pend_len += len;
    return 0;
}

static void h2_stream_pend_free(struct h2_call *c)
{
    free(c->pend);
    c->pend = NULL;
    c->pend_off = c->pend_len = c->pend_cap = 0;
}

/* DATA for a stream call that is still taking input. */
static void h2_stream_data(struct h2_call *c, const uint8_t *data, size_t len)
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
        h2_call_fail(c, STATUS_RESOURCE_EXHAUSTED, "out of memory for request data");
    }
}

/* The call was answered: nothing more is delivered, so what it holds goes,
 * and the window it held back is given back (the client may still be
 * sending until it sees the answer). */
static void h2_stream_drop_input(struct h2_call *c)
{
    free(c->held);
    c->held = NULL;
    h2_budget_release(c->s, c->held_reserved);
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
static void h2_stream_try_end(struct h2_call *c)
{
    if (!c->remote_ended || c->answered || c->end_done || c->paused || c->held || c->pend_len)
        return;
    if (grpc_frame_pending(&c->reader)) {
        h2_call_failf(c, STATUS_INTERNAL,
                      "request stream ended inside a message (declared %zu bytes, got %zu)",
                      c->reader.hdr_have < GRPC_FRAME_HEADER ? (size_t)0 : c->reader.msg_len,
                      c->reader.msg_have);
        return;
    }
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
        h2_budget_release(c->s, reserved);
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
            free(pend);
        }
    }
    h2_stream_try_end(c);
}

/* Runs the resumes asked for while the session was busy (or just now). */
static void h2_session_run_resumes(struct h2_session *s)
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
static void h2_session_notify_sent(struct h2_session *s)
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

/* --- nghttp2 callbacks ---------------------------------------------------- */

static struct h2_call *h2_stream_call(nghttp2_session *ng, int32_t stream_id)
{
    return nghttp2_session_get_stream_user_data(ng, stream_id);
}

static int h2_on_begin_headers(nghttp2_session *ng, const nghttp2_frame *frame, void *user_data)
{
    struct h2_session *s = user_data;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    struct h2_call *c = h2_call_new(s, frame->hd.stream_id);
    if (!c)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* resets the stream */
    nghttp2_session_set_stream_user_data(ng, frame->hd.stream_id, c);
    return 0;
}

static bool h2_name_is(const uint8_t *name, size_t namelen, const char *want)
{
    return namelen == strlen(want) && memcmp(name, want, namelen) == 0;
}

static int h2_on_header(nghttp2_session *ng, const nghttp2_frame *frame, const uint8_t *name,
                        size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                        void *user_data)
{
    (void)flags;
    (void)user_data;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    struct h2_call *c = h2_stream_call(ng, frame->hd.stream_id);
    if (!c)
        return 0;
    if (h2_name_is(name, namelen, ":method")) {
        c->is_post = valuelen == 4 && memcmp(value, "POST", 4) == 0;
    } else if (h2_name_is(name, namelen, ":path")) {
        if (valuelen >= sizeof(c->path)) {
            c->path_too_long = true;
        } else {
            memcpy(c->path, value, valuelen);
            c->path[valuelen] = '\0';
        }
    } else if (h2_name_is(name, namelen, "content-type")) {
        size_t n = valuelen < sizeof(c->content_type) - 1 ? valuelen : sizeof(c->content_type) - 1;
        memcpy(c->content_type, value, n);
        c->content_type[n] = '\0';
    }
    return 0;
}

static int h2_on_frame_recv(nghttp2_session *ng, const nghttp2_frame *frame, void *user_data)
{
    (void)user_data;
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
        return 0;
    struct h2_call *c = h2_stream_call(ng, frame->hd.stream_id);
    if (!c)
        return 0;
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST)
        h2_call_headers_done(c);
    if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
        h2_call_remote_end(c);
    return 0;
}

static int h2_on_data_chunk(nghttp2_session *ng, uint8_t flags, int32_t stream_id,
                            const uint8_t *data, size_t len, void *user_data)
{
    (void)flags;
    (void)user_data;
    struct h2_call *c = h2_stream_call(ng, stream_id);
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
    int rv = h2_call_feed(c, data, len);
    if (rv != GRPC_FRAME_OK)
        h2_call_feed_error(c, rv);
    return 0;
}

static int h2_on_frame_send(nghttp2_session *ng, const nghttp2_frame *frame, void *user_data)
{
    (void)user_data;
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
    nghttp2_session_callbacks_set_on_frame_send_callback(cbs, h2_on_frame_send);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, h2_on_stream_close);
    nghttp2_option *opt;
    if (nghttp2_option_new(&opt) != 0) {
        nghttp2_session_callbacks_del(cbs);
        return -1;
    }
    nghttp2_option_set_no_auto_window_update(opt, 1);
    int rv = nghttp2_session_server_new2(&s->ng, cbs, s, opt);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cbs);
    if (rv != 0)
        return -1;
    nghttp2_settings_entry iv[] = {
        { NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, s->cfg.max_streams },
        { NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_STREAM_WINDOW },
        { NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, H2_MAX_HEADER_LIST },
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
    nghttp2_session_del(s->ng);
    free(s);
}

int h2_session_recv(struct h2_session *s, const uint8_t *data, size_t len)
{
    s->busy++;
    ssize_t rv = nghttp2_session_mem_recv(s->ng, data, len);
    if (rv >= 0)
        h2_session_run_resumes(s);
    s->busy--;
    if (rv < 0) {
        /* Bad preface or an error nghttp2 could not turn into a GOAWAY
         * itself: send one, then the owner closes after flushing. */
        nghttp2_session_terminate_session(s->ng, NGHTTP2_PROTOCOL_ERROR);
        return -1;
    }
    return 0;
}

ssize_t h2_session_send(struct h2_session *s, const uint8_t **out)
{
    s->busy++;
    ssize_t n = nghttp2_session_mem_send(s->ng, out);
    /* Handlers told here may queue more: with bytes in hand the owner calls
     * again anyway; with none, look once more before saying "nothing". */
    while (n >= 0 && (s->sent_pending || s->resume_pending)) {
        h2_session_notify_sent(s);
        h2_session_run_resumes(s);
        if (n > 0)
            break;
        n = nghttp2_session_mem_send(s->ng, out);
    }
    s->busy--;
    return n < 0 ? -1 : n;
}

int h2_session_want_read(const struct h2_session *s)
{
    return nghttp2_session_want_read(s->ng);
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

size_t h2_session_calls(const struct h2_session *s)
{
    return s->ncalls;
}
