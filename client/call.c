/* SPDX-License-Identifier: MIT */
/* call.c: one unary gRPC call on a new HTTP/2 stream of an amp_conn.
 *
 * Request: HEADERS (:method POST, :scheme http, :path, content-type
 * application/grpc, te trailers, grpc-timeout when there is a deadline),
 * then one length-prefixed protobuf message and END_STREAM. Reply: HEADERS,
 * DATA holding one length-prefixed message (common/grpc_frame.c
 * reassembles it), then trailers with grpc-status and a percent-encoded
 * grpc-message; or a trailers-only reply for errors. The session callbacks
 * below fill a struct call; conn.c moves the bytes.
 */
#include "call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amp_wire.h"
#include "call_class.h"
#include "error.h"
#include "grpc_frame.h"
#include "grpc_timeout.h"
#include "heap.h"

#define CALL_USER_AGENT "ampclient/" AMP_VERSION_STRING
#define CALL_US_PER_MS 1000
#define CALL_HTTP_OK 200
/* A reply buffer this size or smaller is reused for the next message of
 * the call (a stream's chunks): no fresh pages to fault in each time. */
#define CALL_KEEP_REPLY (8u * 1024 * 1024)
/* A reply message declared up to this long gets its whole buffer at once
 * (grpc_frame.h's prealloc_max): a 32 MiB reply grown by doubling would
 * be copied about once more on its way in. Beyond it the buffer grows as
 * the bytes come, so a daemon that declares 4 GiB does not get it for free. */
#define CALL_PREALLOC_MAX (256u * 1024 * 1024)
#define CALL_MSG_ABORT 1 /* from call_on_message: positive, unlike grpc_frame_err codes */


/* The call that owns stream_id: the blocking call in progress or one of
 * the calls started without waiting (async.c); NULL for streams of
 * abandoned calls. */
static struct call *call_of(void *user_data, int32_t stream_id)
{
    amp_conn *c = user_data;
    if (c->call && c->call->stream_id == stream_id)
        return c->call;
    for (struct call *call = c->calls; call; call = call->next)
        if (call->stream_id == stream_id)
            return call;
    return NULL;
}

static int call_hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* grpc-message is percent-encoded; malformed escapes are kept verbatim. */
static void call_percent_decode(char *dst, size_t cap, const uint8_t *src, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len && o + 1 < cap; i++) {
        int hi, lo;
        if (src[i] == '%' && i + 2 < len && (hi = call_hexval((char)src[i + 1])) >= 0 &&
            (lo = call_hexval((char)src[i + 2])) >= 0) {
            dst[o++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            dst[o++] = (char)src[i];
        }
    }
    dst[o] = '\0';
}

/* Non-negative decimal header value, or -1. */
static int call_parse_int(const uint8_t *v, size_t len)
{
    if (len == 0 || len > 9)
        return -1;
    int n = 0;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
        n = n * 10 + (v[i] - '0');
    }
    return n;
}

static int call_name_is(const uint8_t *name, size_t len, const char *want)
{
    return len == strlen(want) && memcmp(name, want, len) == 0;
}

/* --- nghttp2 callbacks ------------------------------------------------------ */

static int call_on_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                          size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                          void *user_data)
{
    (void)s;
    (void)flags;
    struct call *call = call_of(user_data, frame->hd.stream_id);
    if (!call || frame->hd.type != NGHTTP2_HEADERS)
        return 0;
    if (call_name_is(name, namelen, ":status")) {
        call->http_status = call_parse_int(value, valuelen);
    } else if (call_name_is(name, namelen, "grpc-status")) {
        call->grpc_status = call_parse_int(value, valuelen);
        if (call->grpc_status < 0)
            call->err = conn_fail(user_data, AMP_EPROTO, "bad grpc-status '%.*s'",
                                  (int)(valuelen > 32 ? 32 : valuelen), (const char *)value);
    } else if (call_name_is(name, namelen, "grpc-message")) {
        call_percent_decode(call->grpc_message, sizeof call->grpc_message, value, valuelen);
    } else if (call_name_is(name, namelen, AMP_WIRE_SERVER_TIMING_TRAILER)) {
        size_t n = valuelen < sizeof call->server_timing ? valuelen : 0;   /* longer: dropped */
        memcpy(call->server_timing, value, n);
        call->server_timing[n] = '\0';
    } else if (call_name_is(name, namelen, "content-type")) {
        static const char grpc_type[] = "application/grpc";
        size_t n = sizeof grpc_type - 1;
        call->content_type_ok = valuelen >= n && memcmp(value, grpc_type, n) == 0 &&
                                (valuelen == n || value[n] == '+' || value[n] == ';');
    }
    return 0;
}

/* grpc_frame_feed callback: hand a streaming call's message on, or take
 * the buffer of a unary call's (single) reply message from the reader. */
static int call_on_message(const uint8_t *msg, size_t len, void *ctx)
{
    struct call *call = ctx;
    call->nreplies++;
    if (call->on_message) {
        int rc = call->on_message(msg, len, call->on_message_ctx);
        if (rc == 0)
            return 0;
        call->err = rc; /* the callback set the connection's message */
        return CALL_MSG_ABORT;
    }
    if (call->nreplies > 1)
        return AMP_EPROTO;
    call->reply = grpc_frame_take(&call->reader);
    call->reply_len = len;
    return 0;
}

static const char *call_frame_error(int rc)
{
    switch (rc) {
    case GRPC_FRAME_TOO_LARGE: return "reply message too large";
    case GRPC_FRAME_COMPRESSED: return "compressed reply (no encoding was offered)";
    case GRPC_FRAME_BAD_FLAG: return "bad gRPC message flag";
    case GRPC_FRAME_NOMEM: return "out of memory";
    case AMP_EPROTO: return "more than one message in a unary reply";
    default: return "out of memory";
    }
}

/* Bytes the reader should get next: the rest of its prefix, the head of a
 * reply message that may go in pieces, or the rest of the message, never
 * more: past its end the reader would take the next message whole, though
 * that one may be long enough to go in pieces (a stream's replies: a short
 * message, then a chunk's, in one DATA frame). */
static size_t call_feed_need(const struct call *call, size_t len)
{
    const struct grpc_frame_reader *r = &call->reader;
    size_t n;
    if (r->hdr_have < GRPC_FRAME_HEADER)
        n = GRPC_FRAME_HEADER - r->hdr_have;
    else if (call->on_piece_start && r->msg_len > CALL_PIECE_HEAD && r->msg_have < CALL_PIECE_HEAD)
        n = CALL_PIECE_HEAD - r->msg_have;
    else
        n = r->msg_len - r->msg_have;
    return n > 0 && n < len ? n : len;
}

/* The reader holds a long reply message's head: pieces from here on, if
 * the handler wants them. Returns 0 or CALL_MSG_ABORT. */
static int call_piece_begin(struct call *call)
{
    struct grpc_frame_reader *r = &call->reader;
    if (!call->on_piece_start || r->hdr_have < GRPC_FRAME_HEADER ||
        r->msg_len <= CALL_PIECE_HEAD || r->msg_have != CALL_PIECE_HEAD)
        return 0;
    size_t off = call->on_piece_start(r->msg, r->msg_len, call->on_message_ctx);
    if (off == 0 || off > CALL_PIECE_HEAD)
        return 0;
    call->nreplies++;
    call->piece_left = r->msg_len - CALL_PIECE_HEAD;
    int rc = call->on_piece(r->msg + off, CALL_PIECE_HEAD - off, call->on_message_ctx);
    grpc_frame_skip_body(r);
    if (rc != 0) {
        call->err = rc;
        return CALL_MSG_ABORT;
    }
    return 0;
}

int call_feed(struct call *call, const uint8_t *data, size_t len)
{
    while (len > 0) {
        size_t n;
        int rc;
        if (call->piece_left) {
            n = len < call->piece_left ? len : (size_t)call->piece_left;
            call->piece_left -= n;
            rc = call->on_piece(data, n, call->on_message_ctx);
            if (rc != 0) {
                call->err = rc;
                return CALL_MSG_ABORT;
            }
        } else {
            n = call_feed_need(call, len);
            rc = grpc_frame_feed(&call->reader, data, n, call_on_message, call);
            if (rc == 0)
                rc = call_piece_begin(call);
            if (rc != 0)
                return rc;
        }
        data += n;
        len -= n;
    }
    return 0;
}

/* Notes an unpadded DATA frame's payload as it begins (call_read_dest). */
static int call_on_begin_frame(nghttp2_session *s, const nghttp2_frame_hd *hd, void *user_data)
{
    (void)s;
    amp_conn *c = user_data;
    int plain = hd->type == NGHTTP2_DATA && !(hd->flags & NGHTTP2_FLAG_PADDED);
    c->data_stream = plain ? hd->stream_id : 0;
    c->data_left = plain ? hd->length : 0;
    return 0;
}

/* The blocking call in progress takes reply data in place: the bytes that
 * lead to its next piece (a frame header, the rest of a short message, a
 * message head) are then read alone, so that the piece's own are read
 * straight where they go, not into the connection's buffer and copied. */
static void call_read_head(amp_conn *c, size_t *len)
{
    struct call *call = c->call;
    size_t room = 0;
    if (call && !call->err && call->on_piece_dest &&
        call->on_piece_dest(&room, call->on_message_ctx) && room > 0 && *len > CALL_HEAD_READ)
        *len = CALL_HEAD_READ;
}

uint8_t *call_read_dest(amp_conn *c, size_t *len)
{
    struct call *call = c->data_left ? call_of(c, c->data_stream) : NULL;
    uint8_t *p = NULL;
    size_t n = 0;
    if (call && !call->err && call->piece_left && call->on_piece_dest) {
        size_t room = 0;
        p = call->on_piece_dest(&room, call->on_message_ctx);
        n = c->data_left < room ? c->data_left : room;
        if (n > call->piece_left)
            n = (size_t)call->piece_left;
    }
    if (!p || n == 0) {
        call_read_head(c, len);
        return NULL;
    }
    *len = n;
    return p;
}

static int call_on_data(nghttp2_session *s, uint8_t flags, int32_t stream_id,
                        const uint8_t *data, size_t len, void *user_data)
{
    (void)flags;
    amp_conn *c = user_data;
    c->data_left = stream_id == c->data_stream && len < c->data_left ? c->data_left - len : 0;
    struct call *call = call_of(user_data, stream_id);
    if (!call || call->err)
        return 0;
    /* A reply that is not gRPC (a proxy's HTML error page) holds no gRPC
     * messages: its body is dropped and call_outcome judges it by its HTTP
     * status, as gRPC's clients do. */
    if (call->http_status != CALL_HTTP_OK || !call->content_type_ok)
        return 0;
    int rc = call_feed(call, data, len);
    if (rc == CALL_MSG_ABORT) {
        nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
    } else if (rc != 0) {
        int code = rc == GRPC_FRAME_NOMEM || rc == AMP_ENOMEM ? AMP_ENOMEM : AMP_EPROTO;
        call->err = conn_fail(user_data, code, "%s", call_frame_error(rc));
        nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
    }
    return 0;
}

/* The daemon refused the call with its GOAWAY: say why, as it did (a
 * limit: "RESOURCE_EXHAUSTED: --max-peer-connections (64) reached for uid
 * 1000"; a drain: "server is shutting down"). */
int call_refused(amp_conn *c)
{
    static const char exhausted[] = "RESOURCE_EXHAUSTED";
    if (strncmp(c->goaway, exhausted, sizeof exhausted - 1) == 0)
        return conn_fail(c, AMP_EEXHAUSTED,
                         "the daemon refused the connection: %s", c->goaway);
    if (c->goaway[0])
        return conn_fail(c, AMP_EUNAVAIL, "the daemon refused the call: %s", c->goaway);
    return conn_fail(c, AMP_EUNAVAIL, "the daemon refused the call");
}

static int call_on_frame(nghttp2_session *s, const nghttp2_frame *frame, void *user_data)
{
    (void)s;
    if (frame->hd.type == NGHTTP2_GOAWAY) {
        amp_conn *c = user_data;
        snprintf(c->goaway, sizeof c->goaway, "%.*s", (int)frame->goaway.opaque_data_len,
                 (const char *)frame->goaway.opaque_data);
        c->goaway_error = frame->goaway.error_code;
        return 0;
    }
    struct call *call = call_of(user_data, frame->hd.stream_id);
    if (!call)
        return 0;
    if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        call->done = 1;
    return 0;
}

static int call_on_close(nghttp2_session *s, int32_t stream_id, uint32_t error_code,
                         void *user_data)
{
    (void)s;
    struct call *call = call_of(user_data, stream_id);
    if (call) {
        call->closed = 1;
        call->done = 1;
        call->reset_code = error_code;
    }
    return 0;
}

/* Supplies the framed request as DATA. Looked up through the connection,
 * not the source pointer, so an abandoned call's stack is never touched.
 * A no_copy call only counts the bytes: conn_send_data() writes them from
 * the body itself (call_body_iov). */
static ssize_t call_read_body(nghttp2_session *s, int32_t stream_id, uint8_t *buf, size_t length,
                              uint32_t *data_flags, nghttp2_data_source *source, void *user_data)
{
    (void)s;
    (void)source;
    struct call *call = call_of(user_data, stream_id);
    if (!call)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    size_t n = call->body.len - call->req_pos;
    if (n == 0 && call->body_open)
        return NGHTTP2_ERR_DEFERRED; /* call_set_body() resumes it */
    if (n > length)
        n = length;
    if (call->no_copy)
        *data_flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    else if (n)
        body_copy(&call->body, call->req_pos, buf, n);
    call->req_pos += n;
    if (call->req_pos == call->body.len && !call->body_open)
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

int call_body_iov(amp_conn *c, int32_t stream_id, size_t len, struct iovec *iov, int max)
{
    struct call *call = call_of(c, stream_id);
    if (!call || call->sent_pos + len > call->req_pos)
        return -2;
    int n = body_iov(&call->body, call->sent_pos, len, iov, max);
    if (n >= 0)
        call->sent_pos += len;
    return n;
}

int call_body_copy(amp_conn *c, int32_t stream_id, size_t len, uint8_t *dst)
{
    struct call *call = call_of(c, stream_id);
    if (!call || call->sent_pos + len > call->req_pos)
        return -2;
    body_copy(&call->body, call->sent_pos, dst, len);
    call->sent_pos += len;
    return 0;
}

/* The body just replaced: from its start, and nghttp2 asked for it. */
static void call_body_restart(amp_conn *c, struct call *call, int more)
{
    call->req_pos = 0;
    call->sent_pos = 0;
    call->body_open = more;
    /* Fails harmlessly when the body was not deferred (nghttp2 has not yet
     * asked for more): it will ask. */
    nghttp2_session_resume_data(c->h2, call->stream_id);
}

void call_set_body(amp_conn *c, struct call *call, const uint8_t *req, size_t len, int more)
{
    body_borrow(&call->body, req, len);
    call_body_restart(c, call, more);
}

int call_set_body2(amp_conn *c, struct call *call, const uint8_t *head, size_t head_len,
                   const uint8_t *data, size_t len, int more)
{
    body_borrow(&call->body, head, head_len);
    if (body_lend(&call->body, data, len) != 0)
        return conn_fail(c, AMP_ENOMEM, "out of memory for a request body");
    call_body_restart(c, call, more);
    return 0;
}

int call_body_drained(const struct call *call)
{
    return call->req_pos == call->body.len;
}

void call_session_callbacks(nghttp2_session_callbacks *cbs)
{
    nghttp2_session_callbacks_set_on_header_callback(cbs, call_on_header);
    nghttp2_session_callbacks_set_on_begin_frame_callback(cbs, call_on_begin_frame);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, call_on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, call_on_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, call_on_close);
}

/* --- the call ------------------------------------------------------------- */

int call_encode(amp_conn *c, const ProtobufCMessage *req, uint8_t **buf, size_t *len)
{
    size_t n = protobuf_c_message_get_packed_size(req);
    if (n > UINT32_MAX)
        return conn_fail(c, AMP_EINVAL, "request of %zu bytes exceeds gRPC's 4 GiB message limit",
                         n);
    *buf = malloc(GRPC_FRAME_HEADER + n);
    if (!*buf)
        return conn_fail(c, AMP_ENOMEM, "out of memory for a %zu-byte request", n);
    grpc_frame_header(*buf, n);
    protobuf_c_message_pack(req, *buf + GRPC_FRAME_HEADER);
    *len = GRPC_FRAME_HEADER + n;
    return 0;
}

#define CALL_NV(n, v) \
    { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE }

int call_submit(amp_conn *c, struct call *call, const char *path, int timeout_ms)
{
    char timeout[GRPC_TIMEOUT_TEXT];
    grpc_timeout_format(timeout, timeout_ms > 0 ? (uint64_t)timeout_ms * CALL_US_PER_MS : 0);
    /* The library takes replies of any size gRPC can frame: the daemon then
     * refuses only what its --max-message-bytes would (amp_wire.h). */
    char max_reply[24];
    snprintf(max_reply, sizeof max_reply, "%zu", CALL_MAX_REPLY);
    nghttp2_nv nv[] = {
        CALL_NV(":method", "POST"),
        CALL_NV(":scheme", "http"),
        CALL_NV(":path", path),
        CALL_NV(":authority", "ampd"),
        CALL_NV("content-type", "application/grpc"),
        CALL_NV("te", "trailers"),
        CALL_NV("user-agent", CALL_USER_AGENT),
        CALL_NV(AMP_WIRE_MAX_REPLY_HEADER, max_reply),
        CALL_NV("grpc-timeout", timeout),
        CALL_NV("authorization", ""),
        CALL_NV(CALL_CLASS_PRIORITY_HEADER, ""),
        CALL_NV(CALL_CLASS_MAX_QUEUE_HEADER, ""),
        CALL_NV(AMP_WIRE_SERVER_TIMING_HEADER, "1"),
    };
    size_t nnv = sizeof nv / sizeof nv[0] - 5;
    if (timeout_ms > 0)
        nnv++;
    if (c->priority)
        nv[nnv++] = (nghttp2_nv)CALL_NV(CALL_CLASS_PRIORITY_HEADER, c->priority);
    if (c->max_queue[0])
        nv[nnv++] = (nghttp2_nv)CALL_NV(CALL_CLASS_MAX_QUEUE_HEADER, c->max_queue);
    if (c->ask_server_timing)
        nv[nnv++] = (nghttp2_nv)CALL_NV(AMP_WIRE_SERVER_TIMING_HEADER, "1");
    if (c->authorization) {
        /* A secret: never in HPACK's table (RFC 7541 7.1.3). */
        nv[nnv] = (nghttp2_nv)CALL_NV("authorization", c->authorization);
        nv[nnv++].flags = NGHTTP2_NV_FLAG_NO_INDEX;
    }
    nghttp2_data_provider body = { .source = { .ptr = call }, .read_callback = call_read_body };
    int32_t id = nghttp2_submit_request(c->h2, NULL, nv, nnv, &body, NULL);
    if (id < 0) {
        /* Out of stream ids or memory: this session cannot start calls. */
        c->broken = 1;
        return conn_fail(c, id == NGHTTP2_ERR_NOMEM ? AMP_ENOMEM : AMP_EIO,
                         "cannot start a call: %s", nghttp2_strerror(id));
    }
    call->stream_id = id;
    return 0;
}

int call_outcome(amp_conn *c, struct call *call)
{
    snprintf(c->server_timing, sizeof c->server_timing, "%s", call->server_timing);
    if (call->err)
        return call->err;
    c->grpc_status = call->grpc_status;
    if (call->grpc_status > 0) {
        int code = error_from_grpc(call->grpc_status);
        if (call->grpc_message[0])
            return conn_fail(c, code, "%s", call->grpc_message);
        return conn_fail(c, code, "the daemon answered %s", error_grpc_name(call->grpc_status));
    }
    if (call->grpc_status < 0) {
        if (call->http_status > 0 && call->http_status != CALL_HTTP_OK) {
            int g = error_grpc_from_http(call->http_status);
            c->grpc_status = g;
            return conn_fail(c, error_from_grpc(g), "not a gRPC reply: HTTP status %d (%s)",
                             call->http_status, error_grpc_name(g));
        }
        if (call->reset_code == NGHTTP2_REFUSED_STREAM)
            return call_refused(c);
        if (call->reset_code == NGHTTP2_CANCEL)
            return conn_fail(c, AMP_ECANCELLED, "the daemon cancelled the call");
        if (call->reset_code != NGHTTP2_NO_ERROR)
            return conn_fail(c, AMP_EPROTO, "the daemon reset the call: %s",
                             nghttp2_http2_strerror(call->reset_code));
        return conn_fail(c, AMP_EPROTO, "reply ended without grpc-status");
    }
    if (!call->content_type_ok)
        return conn_fail(c, AMP_EPROTO, "reply content-type is not application/grpc");
    if (grpc_frame_pending(&call->reader) || call->piece_left)
        return conn_fail(c, AMP_EPROTO, "reply has a truncated message");
    if (!call->on_message && call->nreplies != 1)
        return conn_fail(c, AMP_EPROTO, "reply has no message");
    return 0;
}

static int call_decode(amp_conn *c, const uint8_t *msg, size_t len,
                       const ProtobufCMessageDescriptor *desc, ProtobufCMessage **reply)
{
    *reply = protobuf_c_message_unpack(desc, NULL, len, msg);
    if (!*reply)
        return conn_fail(c, AMP_EPROTO, "cannot decode the %s reply", desc->name);
    return 0;
}

/* A reply's buffer: one amp_free() kept, if one fits (heap.c). */
static void *call_take(void *ctx, size_t n, size_t *cap)
{
    (void)ctx;
    return heap_take(n, cap);
}

void call_init(struct call *call)
{
    memset(call, 0, sizeof *call);
    call->grpc_status = -1;
    grpc_frame_reader_init(&call->reader, CALL_MAX_REPLY);
    call->reader.keep_max = CALL_KEEP_REPLY;
    call->reader.prealloc_max = CALL_PREALLOC_MAX;
    call->reader.take = call_take;
}

void call_restart(struct call *call)
{
    grpc_frame_reader_free(&call->reader);
    free(call->reply);
    struct call fresh;
    call_init(&fresh);
    call->reader = fresh.reader;
    call->stream_id = 0;
    call->done = call->closed = 0;
    call->reset_code = 0;
    call->req_pos = call->sent_pos = 0;
    call->piece_left = 0;
    call->reply = NULL;
    call->reply_len = 0;
    call->nreplies = 0;
    call->http_status = 0;
    call->grpc_status = -1;
    call->content_type_ok = 0;
    call->err = 0;
    call->grpc_message[0] = '\0';
    call->server_timing[0] = '\0';
}

void call_release(struct call *call)
{
    body_free(&call->body);
    grpc_frame_reader_free(&call->reader);
    free(call->reply);
    call->reply = NULL;
}

void call_abandon(amp_conn *c, struct call *call)
{
    c->call = NULL;
    /* A DATA frame half on the socket still points into the body, which
     * is about to go: the connection keeps a copy of the rest. */
    conn_own_output(c);
    if (call->stream_id > 0 && !c->broken && !call->closed) {
        /* Deadline, an abort, or trailers before our request was all sent:
         * stop the stream; the connection stays usable. */
        nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, call->stream_id, NGHTTP2_CANCEL);
        conn_flush_nowait(c);
    }
    /* A blocking call may leave output behind (its own, or calls started
     * without waiting): an event loop on amp_fd must see it wait. */
    loop_watch(c);
}

/* Drives the submitted call to its end; gives up on the stream on failure. */
static int call_run(amp_conn *c, struct call *call, int timeout_ms)
{
    long long deadline = timeout_ms > 0 ? conn_now_ms() + timeout_ms : 0;
    c->call = call;
    int rc = conn_pump(c, deadline, &call->done);
    call_abandon(c, call);
    return rc;
}

/* True when a failed call cannot have been acted on by the daemon, so
 * that sending it again cannot run its job twice: the daemon refused its
 * stream while closing gracefully (REFUSED_STREAM: HTTP/2 promises such a
 * stream was not processed; a GOAWAY with an error is a refusal that a
 * second try would only repeat), or the connection broke before any of
 * its bytes were written (sent_mark: conn_sent_mark() when it began). */
static int call_may_retry(const amp_conn *c, const struct call *call, int rc, uint64_t sent_mark)
{
    if (c->no_reconnect || call->err || call->grpc_status >= 0 || call->http_status > 0)
        return 0;
    if (call->reset_code == NGHTTP2_REFUSED_STREAM && c->goaway_error == NGHTTP2_NO_ERROR)
        return 1;
    return rc == AMP_EIO && c->broken && c->sent <= sent_mark;
}

/* One try of a unary call: *retry says whether a failure may be retried. */
static int call_unary_once(amp_conn *c, const char *path, const ProtobufCMessage *req,
                           int timeout_ms, const struct call_pieces *pieces, uint8_t **reply,
                           size_t *reply_len, int *retry)
{
    *retry = 0;
    int rc = conn_ready(c);
    if (rc != 0)
        return rc;
    struct call call;
    call_init(&call);
    call.no_copy = 1;   /* the request stays put until call_run() returns */
    if (pieces) {
        /* A long reply goes to the pieces: the reader must not take a whole
         * buffer (the one amp_free kept) for the head alone. */
        call.reader.prealloc_max = 0;
        call.on_piece_start = pieces->start;
        call.on_piece = pieces->piece;
        call.on_piece_dest = pieces->dest;
        call.on_message_ctx = pieces->ctx;
    }
    rc = body_encode(&call.body, req);
    if (rc == -2)
        rc = conn_fail(c, AMP_EINVAL, "request exceeds gRPC's 4 GiB message limit");
    else if (rc != 0)
        rc = conn_fail(c, AMP_ENOMEM, "out of memory encoding the request");
    uint64_t sent_mark = conn_sent_mark(c);
    if (rc == 0)
        rc = call_submit(c, &call, path, timeout_ms);
    if (rc == 0)
        rc = call_run(c, &call, timeout_ms);
    if (rc == 0)
        rc = call_outcome(c, &call);
    if (rc == 0) {
        *reply = call.reply;
        *reply_len = call.reply_len;
        call.reply = NULL;
    } else if (call.stream_id > 0) {
        *retry = call_may_retry(c, &call, rc, sent_mark);
    }
    call_release(&call);
    return rc;
}

int call_unary_raw(amp_conn *c, const char *path, const ProtobufCMessage *req, int timeout_ms,
                   uint8_t **reply, size_t *reply_len)
{
    return call_unary_pieces(c, path, req, timeout_ms, NULL, reply, reply_len);
}

int call_unary_pieces(amp_conn *c, const char *path, const ProtobufCMessage *req, int timeout_ms,
                      const struct call_pieces *pieces, uint8_t **reply, size_t *reply_len)
{
    *reply = NULL;
    *reply_len = 0;
    conn_begin(c);
    int retry;
    int rc = call_unary_once(c, path, req, timeout_ms, pieces, reply, reply_len, &retry);
    /* Once: the new connection is fresh. A retried call saw no reply, so
     * no piece of one was taken. */
    if (rc != 0 && retry) {
        conn_begin(c);
        rc = call_unary_once(c, path, req, timeout_ms, pieces, reply, reply_len, &retry);
    }
    /* Refused UNAVAILABLE by one of several daemons (draining, no device
     * free, a proxy's 503): the next is asked, each at most once. ampd
     * answers UNAVAILABLE only for work it did not finish, and a job is a
     * pure function of its request, so running it again is safe. */
    for (size_t tried = 1; rc == AMP_EUNAVAIL && tried < c->ntargets && conn_move_on(c); tried++) {
        conn_begin(c);
        rc = call_unary_once(c, path, req, timeout_ms, pieces, reply, reply_len, &retry);
    }
    return rc;
}

int call_unary(amp_conn *c, const char *path, const ProtobufCMessage *req, int timeout_ms,
               const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply)
{
    uint8_t *msg;
    size_t len;
    *reply = NULL;
    int rc = call_unary_raw(c, path, req, timeout_ms, &msg, &len);
    if (rc == 0)
        rc = call_decode(c, msg, len, reply_desc, reply);
    free(msg);
    return rc;
}
