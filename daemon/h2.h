/* h2.h: the daemon's HTTP/2 + gRPC server layer, with no I/O.
 *
 * An h2_session wraps one nghttp2 server session for one connection. Bytes
 * read from the socket go in with h2_session_recv(); bytes to write come out
 * of h2_session_send(). In between, the layer checks each request's HTTP/2
 * and gRPC headers, reassembles length-prefixed messages (common/grpc_frame.c)
 * and hands them to the handlers (rpc.c in the daemon, a test in the tests).
 * A handler answers a call with h2_call_reply() or h2_call_fail(), at once or
 * later from the loop (a job completion); the layer writes the response
 * headers, the message and the grpc-status / grpc-message trailers.
 *
 * conn.c owns the session and moves the bytes; nothing here touches a socket,
 * which is why tests drive it with an in-memory nghttp2 client session.
 *
 * Flow control: the session runs without automatic WINDOW_UPDATE, and the
 * layer tells nghttp2 a stream's DATA is consumed once it has been taken in.
 * Streaming calls can later delay that to push back on a fast sender.
 */
#ifndef AMPD_H2_H
#define AMPD_H2_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "status.h"

struct h2_session;
struct h2_call;

/* Kinds of call a method can be; the layer enforces the request count. */
enum h2_call_kind {
    H2_UNARY,   /* exactly one request message, then end of stream */
};

struct h2_handlers {
    /* A call's headers arrived and are valid gRPC. Return STATUS_OK and set
     * *kind to accept it, or a status and a message in msg (msglen bytes)
     * to answer it at once (e.g. UNIMPLEMENTED for an unknown path). */
    enum status_code (*start)(struct h2_call *call, const char *path, enum h2_call_kind *kind,
                              char *msg, size_t msglen, void *ctx);
    /* One whole request message; msg is valid only during the call. Return
     * STATUS_OK, or a status and message that fail the call. */
    enum status_code (*message)(struct h2_call *call, const uint8_t *msg, size_t len,
                                char *err, size_t errlen, void *ctx);
    /* The client half-closed after the right number of messages: the
     * request is complete and the handler should answer (now or later). */
    void (*end)(struct h2_call *call, void *ctx);
    /* The call is gone (answered and flushed, reset by the client, or its
     * connection closed). The handler must drop every pointer to call and
     * free what it hung on h2_call_user(). Called once per started call. */
    void (*closed)(struct h2_call *call, void *ctx);
    /* Output was queued outside h2_session_recv() (a late answer): the
     * owner should call h2_session_send() soon. May be NULL. */
    void (*want_write)(void *ctx);
};

/* Request bytes being received, shared by every session of the daemon, so
 * that many slow senders cannot make it buffer without bound. A message's
 * declared length is reserved when its prefix arrives (before its body is
 * buffered) and released once it has been handed over. */
struct h2_budget {
    uint64_t used;  /* used <= max */
    uint64_t max;   /* --max-job-memory */
};

struct h2_config {
    size_t max_message_bytes;  /* each request and reply message */
    uint32_t max_streams;      /* SETTINGS_MAX_CONCURRENT_STREAMS */
    struct h2_budget *budget;  /* NULL: no daemon-wide bound */
};

/* Creates a server session and queues its SETTINGS. handlers and ctx must
 * outlive the session. Returns NULL when out of memory. */
struct h2_session *h2_session_new(const struct h2_config *cfg, const struct h2_handlers *handlers,
                                  void *ctx);

/* Calls closed() for every call still open, then frees the session. */
void h2_session_free(struct h2_session *s);

/* Feeds bytes read from the peer. Returns 0, or -1 when the connection is
 * beyond saving (bad preface, protocol error nghttp2 could not answer,
 * out of memory): the owner flushes what it can and closes. */
int h2_session_recv(struct h2_session *s, const uint8_t *data, size_t len);

/* Points *out at the next bytes to write (valid until the next call into the
 * session) and returns their count; 0 when there is nothing to write now;
 * -1 on a fatal error. */
ssize_t h2_session_send(struct h2_session *s, const uint8_t **out);

/* True while the session wants to read, or has something to write. When
 * both are false the connection is finished. */
int h2_session_want_read(const struct h2_session *s);
int h2_session_want_write(const struct h2_session *s);

/* Graceful shutdown: GOAWAY naming the last stream taken, so calls already
 * started finish and new ones are refused. */
void h2_session_goaway(struct h2_session *s);

/* Refuses the whole connection at once: GOAWAY with code ENHANCE_YOUR_CALM and
 * reason as debug data (e.g. the connection limit). */
void h2_session_refuse(struct h2_session *s, const char *reason);

/* Calls open on this session. */
size_t h2_session_calls(const struct h2_session *s);

/* Per-call slot for the handler's state; NULL until set. */
void *h2_call_user(const struct h2_call *call);
void h2_call_set_user(struct h2_call *call, void *user);

/* Answers with one message (the protobuf bytes, without the gRPC prefix)
 * and grpc-status 0. Takes ownership of buf, which must have been malloc'd
 * with GRPC_FRAME_HEADER free bytes before the message: buf[0..4] is
 * overwritten with the prefix; len counts only the message. Returns 0, or
 * -1 (buf freed, call failed with INTERNAL). */
int h2_call_reply(struct h2_call *call, uint8_t *buf, size_t len);

/* Answers with an error status and message (percent-encoded on the wire):
 * a Trailers-Only response if nothing was sent yet. Returns 0 or -1. */
int h2_call_fail(struct h2_call *call, enum status_code code, const char *msg);

/* Percent-encodes msg for grpc-message into out (outlen bytes, always
 * NUL-terminated, truncated at a whole escape). Returns the length. */
size_t h2_percent_encode(const char *msg, char *out, size_t outlen);

#endif
