/* SPDX-License-Identifier: MIT */
/* call.h: one unary gRPC call over an amp_conn (call.c).
 *
 * The call opens a new HTTP/2 stream, sends the protobuf request as one
 * length-prefixed message, and collects the reply message and the
 * grpc-status / grpc-message trailers.
 */
#ifndef AMP_CLIENT_CALL_H
#define AMP_CLIENT_CALL_H

#include <nghttp2/nghttp2.h>
#include <protobuf-c/protobuf-c.h>

#include "body.h"
#include "grpc_frame.h"

#include "conn.h"

/* Largest reply message the client accepts: what gRPC's 32-bit length
 * prefix can describe, so any limit the daemon is configured with fits. */
#define CALL_MAX_REPLY ((size_t)UINT32_MAX)

/* A streaming call's reply handler: one whole reply message (valid only
 * during the call). Returns 0, or an AMP_E* code after setting the
 * connection's message: the call then resets its stream and fails with it. */
typedef int (*call_message_cb)(const uint8_t *msg, size_t len, void *ctx);

/* A streaming call's reply in pieces (optional): piece_start sees the first
 * CALL_PIECE_HEAD bytes of a longer reply message (msg_len bytes) and
 * returns the offset from which the rest, to the message's end, goes to
 * piece() as it arrives, or 0 for the whole message through
 * call_message_cb. piece returns 0 or an AMP_E* code, as that does. */
#define CALL_PIECE_HEAD 192
typedef size_t (*call_piece_start_cb)(const uint8_t *head, size_t msg_len, void *ctx);
typedef int (*call_piece_cb)(const uint8_t *data, size_t len, void *ctx);
/* Optional: where the next piece bytes go and how many fit there (*room),
 * or NULL; the connection may then read them from the socket straight
 * there (call_read_dest), and piece() gets that very pointer. */
typedef uint8_t *(*call_piece_dest_cb)(size_t *room, void *ctx);

/* Pieces for a call (a stream's replies, or a unary reply read in place). */
struct call_pieces {
    call_piece_start_cb start;
    call_piece_cb piece;
    call_piece_dest_cb dest;   /* may be NULL */
    void *ctx;
};

/* One call on one HTTP/2 stream. Lives on its caller's stack; the session
 * callbacks find it through amp_conn.call, never through pointers nghttp2
 * keeps, so an abandoned call's memory is never touched. */
struct call {
    int32_t stream_id;          /* > 0 once submitted */
    int done;                   /* the reply ended (END_STREAM seen or stream closed) */
    struct call *next;          /* amp_conn.calls link, for calls started without waiting */
    int closed;                 /* nghttp2 closed the stream */
    uint32_t reset_code;        /* HTTP/2 error code the stream closed with */
    struct body body;           /* the request bytes to send, owned (what it borrows is the
                                 * caller's, kept until the call ends or the body drained) */
    size_t req_pos;             /* bytes of body handed to nghttp2: req_pos <= body.len */
    size_t sent_pos;            /* of those, bytes given to conn.c as DATA frames (no_copy) */
    int no_copy;                /* DATA leaves from body itself (conn_send_data), not copied
                                 * into nghttp2: bodies stay put as call_set_body() says */
    int body_open;              /* more request bytes will follow the body (streaming): an
                                 * empty body defers instead of ending */
    struct grpc_frame_reader reader;
    call_message_cb on_message; /* streaming: each reply message goes here; NULL: unary */
    void *on_message_ctx;
    call_piece_start_cb on_piece_start; /* optional: replies in pieces */
    call_piece_cb on_piece;     /* with on_message_ctx */
    call_piece_dest_cb on_piece_dest; /* optional, with on_message_ctx */
    uint64_t piece_left;        /* bytes of a reply message still to come through on_piece */
    uint8_t *reply;             /* unary: the one reply message, taken from reader, owned */
    size_t reply_len;
    int nreplies;               /* messages seen: a unary reply has exactly one */
    int http_status;            /* 0 until :status arrived */
    int grpc_status;            /* -1 until grpc-status arrived */
    int content_type_ok;        /* content-type was application/grpc[+...] */
    int err;                    /* a local failure inside a callback (AMP_E*), or 0 */
    char grpc_message[CONN_MESSAGE_MAX]; /* percent-decoded grpc-message */
    char server_timing[AMP_WIRE_SERVER_TIMING_MAX]; /* the server-timing trailer, or "" */
};

/* Makes a call that was refused before the daemon processed it ready to
 * be submitted again: its request body stays, everything it learned of
 * the reply goes. */
void call_restart(struct call *call);

/* The daemon refused the connection or the call with its GOAWAY (c->goaway,
 * a limit or a drain): fails c saying why, as the daemon did. Returns the
 * AMP_E* code. */
int call_refused(amp_conn *c);

/* Calls method path ("/amp.v1.Amp/Reverse") with req. timeout_ms > 0 sets
 * a deadline (sent as grpc-timeout and enforced locally). On success
 * *reply is the unpacked reply (free with protobuf_c_message_free_unpacked).
 * Returns 0 or an AMP_E* code with c->message set; a gRPC status from the
 * daemon maps to its AMP_E* code and keeps the daemon's message. */
int call_unary(amp_conn *c, const char *path, const ProtobufCMessage *req, int timeout_ms,
               const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply);

/* call_unary() without the decoding: on success *reply is the reply
 * message as it arrived (malloc'd, at least *reply_len + 1 bytes; the
 * caller frees it), for callers that read it in place. */
int call_unary_raw(amp_conn *c, const char *path, const ProtobufCMessage *req, int timeout_ms,
                   uint8_t **reply, size_t *reply_len);

/* call_unary_raw() that offers a long reply message to pieces first (its
 * ctx is their context): when pieces took it, *reply is NULL. */
int call_unary_pieces(amp_conn *c, const char *path, const ProtobufCMessage *req, int timeout_ms,
                      const struct call_pieces *pieces, uint8_t **reply, size_t *reply_len);

/* Feeds len bytes of a reply's DATA to the call: to its reader, which
 * hands each whole message to on_message (or keeps a unary reply), or,
 * from a long message's head on, to on_piece when on_piece_start takes
 * it. Returns 0, a grpc_frame error, or a positive value when a handler
 * failed (its code in call->err). Called by the session's data callback. */
int call_feed(struct call *call, const uint8_t *data, size_t len);

/* For conn.c's next read: where the bytes should go when they are the
 * payload of a DATA frame of the call in progress that is taking a reply
 * message in pieces and offers a place (on_piece_dest), and in *len how
 * many at most (never past the frame or the message); NULL: read into the
 * connection's buffer, at most *len bytes, which it lowers to
 * CALL_HEAD_READ while the call takes data in place (only what leads to
 * the next piece goes through the buffer). */
#define CALL_HEAD_READ 512   /* a frame header, a short message, a long one's head */
uint8_t *call_read_dest(amp_conn *c, size_t *len);

/* --- the pieces of a call, for streaming calls (stream.c) --------------- */

/* Prepares call (unary unless on_message is set afterwards). */
void call_init(struct call *call);

/* Frees what the call holds (reader, reply copy). */
void call_release(struct call *call);

/* Packs req behind a gRPC message prefix into a malloc'd *buf (caller frees). */
int call_encode(amp_conn *c, const ProtobufCMessage *req, uint8_t **buf, size_t *len);

/* Opens the call's stream: request headers (grpc-timeout when timeout_ms
 * > 0; the connection's amp-priority and amp-max-queue-time when it has
 * them) with call->req as the body so far. Returns 0 or an AMP_E* code. */
int call_submit(amp_conn *c, struct call *call, const char *path, int timeout_ms);

/* Replaces the drained body with len bytes at req; more: further bytes
 * will follow, else the body ends (half-close) after these. The caller
 * keeps req until call_body_drained(), and for a no_copy call (whose DATA
 * frames point into the body until written) also until the CONN_OUTS-th
 * body after this one is drained: at most CONN_OUTS frames are ever on
 * their way (conn.h), and once a body is drained they are of it and the
 * CONN_OUTS - 1 bodies before it. */
void call_set_body(amp_conn *c, struct call *call, const uint8_t *req, size_t len, int more);

/* call_set_body() for a body of two pieces: head_len bytes at head, then
 * len bytes at data, both kept by the caller as call_set_body() says.
 * Returns 0, or AMP_ENOMEM. */
int call_set_body2(amp_conn *c, struct call *call, const uint8_t *head, size_t head_len,
                   const uint8_t *data, size_t len, int more);

/* True once nghttp2 has taken every byte of the current body. */
int call_body_drained(const struct call *call);

/* conn.c's DATA sender for no_copy calls: points up to max iovecs at the
 * next len bytes of the body of the call on stream_id. Returns the count,
 * -1 when max is too few, or -2 when no call owns the stream. */
int call_body_iov(amp_conn *c, int32_t stream_id, size_t len, struct iovec *iov, int max);

/* The same bytes copied to dst (when they take more than max iovecs).
 * Returns 0, or -2 when no call owns the stream. */
int call_body_copy(amp_conn *c, int32_t stream_id, size_t len, uint8_t *dst);

/* After the reply ended: 0, or the AMP_E* code of its status (the daemon's
 * message kept), a local failure, or a malformed reply. */
int call_outcome(amp_conn *c, struct call *call);

/* Detaches call from the connection and resets its stream if it is still
 * open (deadline, abort, early trailers). */
void call_abandon(amp_conn *c, struct call *call);

/* Installs the session callbacks call.c needs (headers, data, close). */
void call_session_callbacks(nghttp2_session_callbacks *cbs);

#endif
