/* SPDX-License-Identifier: MIT */
/* h2.h: the daemon's HTTP/2 + gRPC server layer, with no I/O.
 *
 * An h2_session wraps one nghttp2 server session for one connection. Bytes
 * read from the socket go in with h2_session_recv(); bytes to write come out
 * of h2_session_send(). In between, the layer checks each request's HTTP/2
 * and gRPC headers, reassembles length-prefixed messages (common/grpc_frame.c)
 * and hands them to the handlers (rpc.c in the daemon, a test in the tests).
 *
 * Unary calls: one request message; a handler answers with h2_call_reply()
 * or h2_call_fail(), at once or later from the loop (a job completion); the
 * layer writes the response headers, the message and the grpc-status /
 * grpc-message trailers.
 *
 * Stream calls (H2_STREAM): any number of request messages, each handed to
 * message() in order, then end() once the client half-closed; replies are
 * queued one message at a time with h2_call_send() and the call ends with
 * h2_call_finish() or h2_call_fail(). Both directions can be held back:
 * h2_stream_pause() stops request delivery (and with it the client, through
 * the stream's flow-control window) until h2_stream_resume(); h2_call_unsent()
 * and the sent() handler let the sender keep its reply queue short.
 *
 * conn.c owns the session and moves the bytes; nothing here touches a socket,
 * which is why tests drive it with an in-memory nghttp2 client session.
 *
 * Flow control: the session runs without automatic WINDOW_UPDATE, and the
 * layer decides when DATA counts as consumed. Unary calls consume both the
 * stream's and the connection's window as soon as DATA arrives (the message
 * size limit and the daemon-wide budget bound what is buffered). Stream
 * calls consume the connection window at once too, so that one paused stream
 * never stalls its neighbours, but the stream window only for bytes fed to
 * the message reassembler while the call is not paused. A paused stream
 * therefore buffers at most the message it paused on plus one stream window
 * (H2_STREAM_WINDOW in h2.c) of raw bytes; a client that sends beyond its
 * window is a FLOW_CONTROL_ERROR in nghttp2. Once resumed, feeding the
 * buffered bytes consumes them and WINDOW_UPDATE lets the client go on.
 */
#ifndef AMPD_H2_H
#define AMPD_H2_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "status.h"

struct h2_session;
struct h2_call;

/* Kinds of call a method can be; the layer enforces the request count. */
enum h2_call_kind {
    H2_UNARY,   /* exactly one request message, then end of stream */
    H2_STREAM,  /* any number of request messages and reply messages */
};

/* Bytes of a request message's beginning that piece_start() sees: a
 * protobuf tag and a length varint fit. */
#define H2_PIECE_HEAD 11

struct h2_handlers {
    /* A call's headers arrived and are valid gRPC. Return STATUS_OK and set
     * *kind to accept it, or a status and a message in msg (msglen bytes)
     * to answer it at once (e.g. UNIMPLEMENTED for an unknown path). */
    enum status_code (*start)(struct h2_call *call, const char *path, enum h2_call_kind *kind,
                              char *msg, size_t msglen, void *ctx);
    /* One whole request message; msg is valid only during the call. Return
     * STATUS_OK, or a status and message that fail the call. For stream
     * calls, once per request message, in order; the handler may call
     * h2_stream_pause() instead of taking the message (see there). */
    enum status_code (*message)(struct h2_call *call, const uint8_t *msg, size_t len,
                                char *err, size_t errlen, void *ctx);
    /* Optional (NULL: every message goes whole to message()). The first
     * H2_PIECE_HEAD bytes of a longer request message arrived (msg_len is
     * its length). Return the offset in the message from which the handler
     * takes the rest, to its end, in pieces through piece(); or 0 to get it
     * whole through message(). Bulk data then goes where it is needed as it
     * arrives, instead of into a message buffer first. A unary call's
     * message taken this way never reaches message(): the handler has it
     * whole once piece() took its last byte, before end(). */
    size_t (*piece_start)(struct h2_call *call, const uint8_t *head, size_t msg_len, void *ctx);
    /* The next bytes of such a message, in order, valid only during the
     * call. Returns how many it took: all of them, unless it called
     * h2_stream_pause() (streams); the rest comes again after
     * h2_stream_resume(). It may fail the call (h2_call_fail). */
    size_t (*piece)(struct h2_call *call, const uint8_t *data, size_t n, void *ctx);
    /* Optional: where the next bytes of the message being taken in pieces
     * would go, and how many fit there (*room); NULL for nowhere yet. The
     * connection may read them from the socket straight to that place
     * (h2_session_read_dest); piece() then gets that very pointer. */
    uint8_t *(*piece_dest)(struct h2_call *call, size_t *room, void *ctx);
    /* Optional: a place piece_dest gave may still be being filled outside
     * h2_session_recv() (the owner's reader thread): end that now and keep
     * its bytes for a later h2_session_recv(). Called before the call is
     * closed and from h2_call_settle_read(). */
    void (*read_settle)(void *ctx);
    /* The client half-closed after the right number of messages: the
     * request is complete and the handler should answer (now or later).
     * Stream calls: once, after every message was delivered, unless the call
     * was answered (finished or failed) before. */
    void (*end)(struct h2_call *call, void *ctx);
    /* The call is gone (answered and flushed, reset by the client, or its
     * connection closed). The handler must drop every pointer to call and
     * free what it hung on h2_call_user(). Called once per started call. */
    void (*closed)(struct h2_call *call, void *ctx);
    /* Output was queued outside h2_session_recv() (a late answer): the
     * owner should call h2_session_send() soon. May be NULL. */
    void (*want_write)(void *ctx);
    /* Stream calls: reply bytes queued with h2_call_send() were handed to the
     * connection, so h2_call_unsent(call) went down. Called outside nghttp2
     * callbacks (at the end of h2_session_send, before it returns), never for
     * unary calls, and not for messages dropped by h2_call_fail(). The
     * handler may queue more with h2_call_send() from here: the owner's next
     * h2_session_send() picks it up. May be NULL. */
    void (*sent)(struct h2_call *call, void *ctx);
    /* A call was answered, with code and msg ("" for none), started or
     * not (an unknown path, a request that is not gRPC); or a started call
     * ended unanswered because the client left: CANCELLED. Once per call;
     * path is its :path as sent. It must not touch the call. May be NULL. */
    void (*answered)(struct h2_call *call, const char *path, enum status_code code,
                     const char *msg, void *ctx);
};

struct budget;

struct h2_config {
    size_t max_message_bytes;  /* each request and reply message */
    uint32_t max_streams;      /* SETTINGS_MAX_CONCURRENT_STREAMS */
    /* What the session's calls hold (request bytes as they arrive, held and
     * pending stream input, replies not yet taken, and what handlers add
     * with h2_call_hold) is taken from this budget and its parents, and all
     * of it is given back by the time the call closes. NULL: unbounded. */
    struct budget *budget;
    /* Milliseconds on a monotonic clock; NULL: no timeouts, no activity stamps. */
    uint64_t (*now_ms)(void);
    /* --request-timeout: a request message that started arriving (or a
     * unary call not yet half-closed) must arrive within this plus its
     * bytes / min_request_rate seconds; the connection preface and a
     * HEADERS block must arrive within it. 0: no limit. */
    uint64_t request_timeout_ms;
    uint64_t min_request_rate; /* bytes per second; >= 1 when request_timeout_ms is set */
    /* Calls answered, by status code (shared by every session of every
     * I/O loop); a call the client abandoned counts as CANCELLED. NULL:
     * not counted. */
    struct status_counts *status_counts;
};

/* Creates a server session and queues its SETTINGS. handlers and ctx must
 * outlive the session. Returns NULL when out of memory. */
struct h2_session *h2_session_new(const struct h2_config *cfg, const struct h2_handlers *handlers,
                                  void *ctx);

/* Calls closed() for every call still open, then frees the session. */
void h2_session_free(struct h2_session *s);

/* Where the owner may read the next bytes from the peer, if they are the
 * payload of an unpadded DATA frame for a call taking a message in pieces
 * whose handler offers a place (piece_dest): that place, and in
 * *len at most how many bytes it takes (never past the frame or the
 * message). NULL: read into the owner's buffer. Whatever is read there
 * must then go to h2_session_recv() whole, as any read does. */
uint8_t *h2_session_read_dest(struct h2_session *s, size_t *len);

/* The handler is about to give up the place its piece_dest offered for
 * call (a stream that failed): if the session's last read_dest was that
 * place and no bytes came since, read_settle() ends that read first. */
void h2_call_settle_read(struct h2_call *call);

/* Feeds bytes read from the peer. Returns 0, or -1 when the connection is
 * beyond saving (bad preface, protocol error nghttp2 could not answer,
 * out of memory): the owner flushes what it can and closes. */
int h2_session_recv(struct h2_session *s, const uint8_t *data, size_t len);

/* Whether h2_session_recv() failed because the peer's first bytes were not
 * HTTP/2's connection preface (an HTTP/1.1 client, TLS on a plaintext
 * port). */
bool h2_session_not_http2(const struct h2_session *s);

/* Why h2_session_expire() gives up a connection (its GOAWAY's text). */
#define H2_EXPIRED_MSG "the connection preface or a HEADERS block did not arrive within " \
                       "--request-timeout"

/* Whether the client's connection preface and first SETTINGS arrived. */
bool h2_session_settings_seen(const struct h2_session *s);

/* Most iovecs h2_session_sendv() returns at once. */
#define H2_SEND_IOV 16

/* Points iov (H2_SEND_IOV entries) at the next bytes to write, gathered
 * for one write (every frame ready, up to a bound), and returns how many
 * entries it used; 0 when there is nothing to write now, or while the
 * owner holds two writes not yet written; -1 on a fatal error. The first
 * piece is the session's copy of nghttp2's frames; it may end with the
 * header of a large DATA frame whose bytes follow in the other entries:
 * the calls' replies where they lie (messages and staging buffers, never
 * copied into nghttp2's frames). All of it stays valid until the owner
 * calls h2_session_written() for it, which it must do once it is all
 * written; writes are written, and said to be, in the order handed. */
int h2_session_sendv(struct h2_session *s, struct iovec *iov);

/* The oldest write from h2_session_sendv() is written: the messages it
 * took are freed (and staging buffers given back). No handler runs and
 * want_write is not called from inside; the owner sends next. */
void h2_session_written(struct h2_session *s);

/* h2_session_sendv() as one buffer: points *out at the next bytes to write
 * (valid until the next call into the session) and returns their count; 0
 * when there is nothing to write now; -1 on a fatal error. The write is
 * copied and counted as written (for tests and harnesses that want plain
 * bytes). */
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

/* How long a refusal's GOAWAY waits for the client's acknowledgement:
 * what a client that never sends one holds (a descriptor, a session) is
 * held this long, plus up to a sweep, before the GOAWAY and the close. */
#define H2_REFUSAL_WAIT_MS 250

/* h2_session_refuse for a connection just accepted (reason is copied): the
 * GOAWAY waits until the client acknowledges the session's SETTINGS, begins
 * a request (which is not run), or H2_REFUSAL_WAIT_MS pass (h2_session_expire).
 * grpcio takes a GOAWAY that comes with the SETTINGS as a failed attempt and
 * connects again at once, thousands of times a second until its call's
 * deadline; after the acknowledgement its call fails UNAVAILABLE at once.
 * Out of memory for the copy, the GOAWAY goes at once. */
void h2_session_refuse_acked(struct h2_session *s, const char *reason);

/* Calls open on this session. */
size_t h2_session_calls(const struct h2_session *s);

/* now_ms() of the last useful activity: a call starting, request DATA for
 * a call, reply bytes taken for sending. Pings, settings, window updates
 * and partial frames are not activity, so they keep no connection alive. */
uint64_t h2_session_active_ms(const struct h2_session *s);

/* Whether some call has reply bytes queued that nghttp2 has not taken yet
 * (the client's window or the socket holds them back): the owner's
 * --send-timeout watches such a session for write progress. */
bool h2_session_reply_waiting(const struct h2_session *s);

/* Enforces --request-timeout at now (a periodic sweep calls this): calls
 * whose request stalled below min_request_rate are answered
 * RESOURCE_EXHAUSTED. Returns -1 when the connection itself stalled (no
 * preface and SETTINGS, or an unfinished HEADERS block, within the
 * timeout): a GOAWAY is queued and the owner should flush and close.
 * Also sends a refusal's GOAWAY that waited H2_REFUSAL_WAIT_MS. */
int h2_session_expire(struct h2_session *s, uint64_t now);

/* The drain's end: every call not yet answered is answered with code and
 * msg (in trailers where a response began), and every call whose answer is
 * still being sent is reset with CANCEL, so that no call ends without a
 * status when the connection closes. */
void h2_session_fail_all(struct h2_session *s, enum status_code code, const char *msg);

/* The client's deadline from its grpc-timeout header, in milliseconds
 * (rounded up), or 0 when it sent none. A malformed one never reaches a
 * handler: the call is answered INTERNAL, as gRPC servers do. */
uint64_t h2_call_timeout_ms(const struct h2_call *call);

/* Most bytes of an authorization header value the layer keeps: a bearer
 * token of any sane length fits with room to spare. */
#define H2_AUTHORIZATION_MAX 1024

/* The request's authorization header (gRPC metadata for credentials):
 * H2_AUTHORIZATION_PRESENT with its value in *value (NUL-terminated, *len
 * bytes, valid while the call is), H2_AUTHORIZATION_NONE, or
 * H2_AUTHORIZATION_BAD when it was longer than H2_AUTHORIZATION_MAX or
 * sent more than once (*value NULL). For start(), which checks it (auth.h). */
enum h2_authorization { H2_AUTHORIZATION_NONE, H2_AUTHORIZATION_PRESENT, H2_AUTHORIZATION_BAD };
enum h2_authorization h2_call_authorization(const struct h2_call *call, const char **value,
                                            size_t *len);

/* The call's scheduling metadata (common/call_class.h), as received: a
 * value that did not parse, or a header sent twice, is marked bad for
 * start() to refuse, naming it. */
struct h2_call_class {
    int priority;           /* amp-priority: 0..CALL_CLASS_PRIORITIES-1; -1: none sent */
    bool priority_bad;
    uint64_t max_queue_us;  /* amp-max-queue-time (grpc_timeout.h), rounded up; 0: none sent */
    bool max_queue_bad;     /* malformed, zero, or sent twice */
    uint64_t max_reply;     /* amp-max-reply-bytes (amp_wire.h); 0: none sent */
    bool max_reply_bad;     /* not a positive decimal, or sent twice */
    bool server_timing;     /* amp-server-timing: 1 */
    bool server_timing_bad; /* another value, or sent twice */
};
const struct h2_call_class *h2_call_class(const struct h2_call *call);

/* Sets the bytes the handler holds for this call (a decoded request, a
 * job's input and output) to bytes, taking the difference from the
 * session's budget or giving it back. Returns 0, or -1 with the limit that
 * refused in msg (nothing changed). The layer gives whatever is held back
 * just before closed(). */
int h2_call_hold(struct h2_call *call, uint64_t bytes, char *msg, size_t msglen);

/* Inside message() of a unary call: takes the message's buffer (malloc'd,
 * at least len + 1 bytes; msg points at its start) from the layer, which
 * would free it when message() returns, so that the handler can keep
 * views into it (a request's bulk bytes) instead of copying them. The
 * *held bytes the layer held for the buffer become the handler's hold
 * (h2_call_hold, which was 0 before the message), which the handler then
 * manages; it frees the buffer. Returns NULL outside message() or on a
 * stream call. */
uint8_t *h2_call_take_message(struct h2_call *call, uint64_t *held);

/* In start(), before the call holds anything: what it holds from now on
 * (as h2_config.budget says) is taken from share too, its client's budget
 * (a chain apart from the session's: one connection may carry calls of
 * several clients), and given back to it just before closed(). share must
 * stay valid until then. */
void h2_call_share(struct h2_call *call, struct budget *share);

/* The server-timing trailer a call's reply ends with (W3C Server-Timing
 * syntax: "queue;dur=0.012, run;dur=0.034"); text of
 * AMP_WIRE_SERVER_TIMING_MAX or longer is not sent. Set before the reply's
 * last bytes go out. */
void h2_call_set_server_timing(struct h2_call *call, const char *text);

/* Per-call slot for the handler's state; NULL until set. */
void *h2_call_user(const struct h2_call *call);
void h2_call_set_user(struct h2_call *call, void *user);

/* Answers with one message (the protobuf bytes, without the gRPC prefix)
 * and grpc-status 0 (on a stream call: h2_call_send() then
 * h2_call_finish()). Takes ownership of buf, which must have been malloc'd
 * with GRPC_FRAME_HEADER free bytes before the message: buf[0..4] is
 * overwritten with the prefix; len counts only the message. Returns 0, or
 * -1 (buf freed, call failed with INTERNAL). */
int h2_call_reply(struct h2_call *call, uint8_t *buf, size_t len);

struct body;

/* h2_call_reply for a message in pieces (common/body.h: body_encode()
 * with its gRPC prefix), which it takes over (b is left empty): its owned
 * pieces are freed with it, and its borrowed pieces (large bytes fields,
 * e.g. a job's results) are written from where they lie, which must stay
 * put until release(ctx) (may be NULL) is called: exactly once, when the
 * layer no longer needs them (written, or dropped: as h2_call_send_ref's
 * release, and from inside this call if it fails). Every byte of the
 * message, borrowed ones included, is held in the budget until then.
 * Returns 0 or -1 as h2_call_reply. */
int h2_call_reply_body(struct h2_call *call, struct body *b, void (*release)(void *ctx),
                       void *ctx);

/* Answers with an error status and message (percent-encoded on the wire):
 * a Trailers-Only response if nothing was sent yet. On a stream call that
 * already queued messages with h2_call_send(), the status goes in trailers:
 * messages not yet begun are dropped (a client that stopped reading must
 * not hold the error back), the one partly handed to nghttp2 is completed so
 * that the client's framing stays whole, then the trailers follow. Request
 * input is ignored from here on. Returns 0, or -1 (already answered). */
int h2_call_fail(struct h2_call *call, enum status_code code, const char *msg);
/* h2_call_fail() with a printf-style message of at most STATUS_MSG_MAX
 * bytes, for a layer's own variadic fail (rpc_fail). */
void h2_call_vfailf(struct h2_call *call, enum status_code code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Stream calls, request side. Inside message() the handler may call
 * h2_stream_pause(call) instead of taking the message (it still returns
 * STATUS_OK): the layer keeps that message and any bytes behind it, stops
 * giving the stream's flow-control window back to the client (so the client
 * must stop sending once the window is used up), and delivers no further
 * message and no end() for the call until h2_stream_resume(call). Called
 * outside message() it holds back the messages still to come (none is kept
 * then). A no-op on unary or answered calls. */
void h2_stream_pause(struct h2_call *call);

/* Redelivers the held message, then any complete messages behind it, then
 * end() if the client had half-closed, and gives the window back for what
 * was taken. Safe to call from any handler callback of any call of any
 * session, or from outside (a job completion on the loop): it never
 * re-enters a handler of the same call recursively; delivery is deferred
 * until the current h2_session_recv(), h2_session_send() or outer
 * h2_stream_resume() of this session is done with its handlers. A no-op if the
 * call is not paused. If output results outside those, want_write is called
 * as usual. */
void h2_stream_resume(struct h2_call *call);

/* Request bytes the layer holds for a stream call that is paused (or being
 * resumed): the held message plus raw DATA behind it. Bounded by that
 * message and the stream window. */
size_t h2_stream_buffered(const struct h2_call *call);

/* Stream calls, reply side: queues one reply message. buf as for
 * h2_call_reply (malloc'd with GRPC_FRAME_HEADER free bytes in front, len
 * counts only the message; ownership passes, freed on error). Response
 * headers go out before the first message. A message over
 * max_message_bytes fails the call with RESOURCE_EXHAUSTED. Returns 0, or -1
 * (unary or answered call, too large, out of memory). */
int h2_call_send(struct h2_call *call, uint8_t *buf, size_t len);

/* h2_call_send for a message whose tail, body_len bytes at body, the
 * caller keeps (a staging buffer): the layer writes it from there (the
 * frame h2_session_sendv borrows), not first into one message buffer. head is as buf for
 * h2_call_send (GRPC_FRAME_HEADER free bytes in front, ownership passes);
 * head_len counts the message bytes before body. release(ctx) is called
 * exactly once, when the layer no longer needs body: once it is all
 * written (h2_session_written), or when the message is dropped (the call
 * fails, closes, or this call fails - then from inside it; after a close,
 * possibly after closed(); a message begun while a frame is being written
 * waits for that frame).
 * Returns 0 or -1 as h2_call_send. */
int h2_call_send_ref(struct h2_call *call, uint8_t *head, size_t head_len, const uint8_t *body,
                     size_t body_len, void (*release)(void *ctx), void *ctx);

/* Reply bytes (prefixes included) queued by h2_call_send and not yet taken
 * by nghttp2. */
size_t h2_call_unsent(const struct h2_call *call);

/* Ends a stream call with grpc-status 0 once every queued message is out
 * (Trailers-Only if none was queued). Request input is ignored from here
 * on. Returns 0, or -1 (unary or already answered call). */
int h2_call_finish(struct h2_call *call);

/* Percent-encodes msg for grpc-message into out (outlen bytes, always
 * NUL-terminated, truncated at a whole escape). Returns the length. */
size_t h2_percent_encode(const char *msg, char *out, size_t outlen);

#endif
