/* SPDX-License-Identifier: MIT */
/* h2_internal.h: what h2.c, h2_stream.c and h2_reply.c share, and nothing else includes.
 *
 * The call and session structs, the few constants the files build replies
 * from, and the helpers that cross between them: h2.c owns the session,
 * nghttp2's callbacks, a call's life and request reassembly; h2_stream.c
 * owns what only H2_STREAM calls do on the request side (pause/resume, held
 * messages); h2_reply.c every call's reply queue. The public contract stays
 * in h2.h.
 */
#ifndef AMPD_H2_INTERNAL_H
#define AMPD_H2_INTERNAL_H

#include <nghttp2/nghttp2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "amp_wire.h"
#include "grpc_frame.h"
#include "h2.h"
#include "h2_deflate.h"
#include "h2_inflate.h"
#include "h2_request.h"

#define H2_PATH_MAX 256
/* grpc-message after percent-encoding (at most 3 bytes per input byte). */
#define H2_GRPC_MESSAGE_MAX (3 * STATUS_MSG_MAX + 1)

#define GRPC_CONTENT_TYPE "application/grpc"
#define HTTP_STATUS_OK "200"

/* One queued reply message of a call (defined in h2_reply.c). */
struct h2_out;

struct h2_call {
    struct h2_session *s;
    int32_t stream_id;
    struct h2_call *prev, *next;  /* the session's list of calls */
    void *user;                   /* handler's state; handler frees it in closed() */
    enum h2_call_kind kind;
    bool started;                 /* start() accepted: closed() is owed */
    bool answered;                /* a response was submitted, or the stream reset
                                   * (h2_call_reset): input is ignored */
    bool remote_ended;            /* the client half-closed */
    size_t nmessages;             /* request messages delivered */
    struct grpc_frame_reader reader;
    /* Bytes of s->cfg.budget this call holds, by what holds them; all are
     * given back in h2_call_release(). */
    uint64_t reserved;            /* the reader's buffer (its msg_cap, as it grew) */
    uint64_t handler_held;        /* h2_call_hold() */
    uint64_t out_held;            /* reply bytes queued and not yet taken by nghttp2 */
    struct budget *share;         /* its client's budget (h2_call_share), also taken from;
                                   * NULL: none, or given back before closed() */
    uint64_t share_held;          /* bytes of share held: what the counters above sum to
                                   * since share was set */
    uint64_t created_ms;          /* HEADERS began: they must end within the timeout */
    uint64_t wait_ms;             /* the call began waiting for request bytes; 0: not waiting */
    uint64_t wait_bytes;          /* request bytes that arrived since */
    /* Request headers, as collected until the HEADERS frame is whole. */
    struct h2_request request;    /* the HTTP/2 rules kept so far */
    uint64_t header_list_bytes;   /* decoded size of the block so far (RFC 9113 section
                                   * 6.5.2); trailers count afresh */
    char path[H2_PATH_MAX];
    bool path_too_long;
    bool is_post;
    char content_type[64];
    uint64_t timeout_ms;     /* grpc-timeout, 0 if none */
    bool timeout_bad;        /* grpc-timeout did not parse */
    bool timeout_expired;    /* grpc-timeout of zero: the deadline passed before it came */
    char *authorization;     /* malloc'd value, NUL-terminated; NULL when absent or bad */
    enum h2_encoding encoding; /* grpc-encoding of its request messages */
    enum h2_encoding reply_encoding; /* of its replies (h2_deflate.h's rule) */
    uint8_t *inflated;       /* the message being delivered, inflated (h2_on_message) */
    struct h2_call_class cls; /* amp-priority and amp-max-queue-time, as received */
    size_t authorization_len;
    bool authorization_bad;  /* over H2_AUTHORIZATION_MAX, or repeated */
    /* A failure found while feeding the reader, reported after it returns. */
    enum status_code feed_status;
    char feed_msg[STATUS_MSG_MAX];
    /* Stream calls, request side. While held or pend is non-empty, new
     * DATA is appended to pend so that messages keep their order. */
    bool paused;             /* h2_stream_pause(): deliver nothing until resumed */
    bool in_message;         /* message() of this call is running */
    bool hold_req;           /* paused inside message(): keep that message */
    bool resume_owed;        /* resumed: h2_stream_run_resumes() redelivers */
    bool end_done;           /* end() was called */
    uint64_t piece_left;     /* bytes of a message still to come through piece() */
    uint8_t *held;           /* malloc'd copy of the message paused on, or NULL */
    size_t held_len;
    uint64_t held_reserved;  /* budget bytes held for it */
    uint8_t *pend;           /* raw DATA behind it, neither fed nor stream-consumed yet, */
    size_t pend_off, pend_len, pend_cap; /* in pend[pend_off, pend_off + pend_len); pend_cap
                                          * bytes are held in the budget */
    /* Reply side, every call (h2_reply.c); a unary reply is a queue of one. */
    bool headers_sent;       /* response submitted with h2_reply_read as provider */
    bool out_deferred;       /* the provider returned DEFERRED: resume it on new output */
    bool finishing;          /* trailers follow the last queued byte */
    bool sent_owed;          /* bytes taken since the last sent() */
    struct h2_out *out_head, *out_tail;
    size_t unsent;           /* sum of len - pos over the queue */
    enum status_code trailer_code;
    char *trailer_msg;       /* malloc'd, percent-encoded grpc-message, or NULL */
    char server_timing[AMP_WIRE_SERVER_TIMING_MAX];   /* the server-timing trailer; "" none */
};

/* Writes the owner may hold at once: a stream's next reply frame is
 * made while the one before is still going out (common/sock_writer.h). */
#define H2_WRITES 2

/* One write h2_session_sendv() hands the owner: nghttp2's frames copied
 * into gather, and small borrowed DATA frames with them, so that a tiny
 * call's reply (HEADERS, DATA, trailers) leaves in one write; it may end
 * with a large DATA frame sent from reply memory (NO_COPY, h2_reply.c):
 * frame[0] is its header, copied to frame_hd; frame[1..frame_n) point at
 * frame_len bytes of queued messages. h2_reply_read builds the frame,
 * h2_reply_send_data completes it (frame_ready). Messages the write's
 * frames point into that left their call's queue meanwhile (taken whole,
 * or dropped with their call) wait in done until it is written. */
struct h2_write {
    uint8_t *gather;         /* owned */
    size_t gather_len, gather_cap;
    uint8_t frame_hd[9];
    struct iovec frame[H2_SEND_IOV];
    int frame_n;             /* 0: no borrowed frame */
    size_t frame_len;
    bool frame_ready;
    struct h2_out *done;
};

/* Where the client's bytes are in HTTP/2's framing, as h2_frames_scan
 * follows it: preface_left bytes of the preface, then frames; hd holds
 * hd_have bytes of a frame header, payload_left bytes of the last frame
 * are still to come, and block sums the HEADERS block being read. */
struct h2_frames {
    size_t preface_left;
    uint8_t hd[9];
    size_t hd_have;
    size_t payload_left;
    size_t block;
};

struct h2_session {
    nghttp2_session *ng;
    const struct h2_handlers *h;
    void *ctx;
    struct h2_config cfg;
    struct h2_call *calls;   /* every call not yet closed by nghttp2 */
    size_t ncalls;
    int busy;                /* recv, send or a resume run in progress: no want_write */
    uint64_t created_ms;     /* the preface and SETTINGS must arrive within the timeout */
    uint64_t active_ms;      /* last useful activity (h2_session_active_ms) */
    bool settings_seen;      /* the client's first SETTINGS arrived */
    bool not_http2;          /* its first bytes were not HTTP/2's connection preface */
    char *refusal;           /* h2_session_refuse_acked's reason until its GOAWAY goes */
    struct h2_frames frames; /* the client's frame headers, followed (h2_frames_scan) */
    /* Resets ampd sent because of the client (h2_reset_spend): a token
     * bucket of H2_RESET_BURST refilled at H2_RESET_RATE a second. */
    uint64_t reset_milli;    /* tokens left, in thousandths, as of reset_ms */
    uint64_t reset_ms;
    const char *calm;        /* why the connection ends with ENHANCE_YOUR_CALM; NULL: it
                              * does not (static text: it goes out as GOAWAY debug data) */
    bool resume_pending;     /* some call has resume_owed */
    bool sent_pending;       /* some call has sent_owed */
    /* The unpadded DATA frame whose payload is being read: its stream and
     * the payload bytes not yet seen (h2_session_read_dest). */
    int32_t data_stream;
    size_t data_left;
    /* The call whose place h2_session_read_dest gave last, until bytes
     * come (h2_session_recv) or it is settled (h2_call_settle_read). */
    struct h2_call *dest_call;
    /* Writes handed to the owner and not yet written (h2_session_sendv,
     * h2_session_written): writes[write_first .. + write_n), a ring; the
     * next is built in the slot after them, h2_write_next(). */
    struct h2_write writes[H2_WRITES];
    int write_first, write_n;
    bool building;           /* inside h2_session_sendv: h2_write_next() is being filled */
    uint8_t *flat;           /* h2_session_send()'s one-buffer copy of a frame, owned */
    size_t flat_cap;
};

#define H2_NV(name, value)                                                      \
    {                                                                            \
        (uint8_t *)(name), (uint8_t *)(value), sizeof(name) - 1, strlen(value), \
            NGHTTP2_NV_FLAG_NO_COPY_NAME                                         \
    }

/* Takes n bytes for call c, from the session's budget and its client's
 * (c->share), or writes which limit refused them into why and returns
 * false. */
bool h2_take(struct h2_call *c, uint64_t n, char *why, size_t whylen);
/* Gives back n bytes taken with h2_take(). */
void h2_give(struct h2_call *c, uint64_t n);
/* The two halves of h2_give(), for a reply message that outlives its
 * queue (h2_reply.c): the client's part when it leaves the call, the
 * session's when it is freed. */
void h2_give_share(struct h2_call *c, uint64_t n);
void h2_give_session(struct h2_session *s, uint64_t n);

static inline void h2_call_unreserve(struct h2_call *c)
{
    h2_give(c, c->reserved);
    c->reserved = 0;
}

/* Milliseconds now, or 0 without a clock. */
static inline uint64_t h2_now(const struct h2_session *s)
{
    return s->cfg.now_ms ? s->cfg.now_ms() : 0;
}

/* Counts the status a call was answered with (msg: its message, or NULL)
 * and tells the handlers. */
static inline void h2_count_status(struct h2_call *c, enum status_code code, const char *msg)
{
    status_count(c->s->cfg.status_counts, code);
    if (c->s->h->answered)
        c->s->h->answered(c, c->path, code, msg ? msg : "", c->s->ctx);
}

static inline void h2_session_wake(struct h2_session *s)
{
    if (s->busy == 0 && s->h->want_write)
        s->h->want_write(s->ctx);
}

/* --- h2.c ----------------------------------------------------------------- */

/* Submits a Trailers-Only response (or a bare HTTP error with gRPC status
 * fields, for requests that are not gRPC at all). */
int h2_call_answer_status(struct h2_call *c, const char *http_status, enum status_code code,
                          const char *msg);
/* h2_call_fail() with a printf-style message. */
void h2_call_failf(struct h2_call *c, enum status_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Feeds request DATA to the call's reader, or to its handler's pieces (h2.h
 * piece_start) for a message it takes that way, until all is taken, the
 * call pauses (streams) or is answered. Returns the bytes taken. */
size_t h2_call_input(struct h2_call *c, const uint8_t *data, size_t len);
/* At the client's half-close: fails the call with INTERNAL if a message is
 * partly read (the stream ended inside it) and returns true. */
bool h2_call_fail_truncated(struct h2_call *c);

/* --- h2_reply.c ----------------------------------------------------------- */

/* Frees a call's reply queue and gives back what it held. */
void h2_reply_free_all(struct h2_call *c);
/* The slot the next write is built in (inside h2_session_sendv). */
struct h2_write *h2_write_next(struct h2_session *s);
/* Forgets w's borrowed frame: written, or copied into its gather buffer
 * (the messages it took stay in w->done either way). */
static inline void h2_write_forget_frame(struct h2_write *w)
{
    w->frame_ready = false;
    w->frame_n = 0;
    w->frame_len = 0;
}
/* The write w is written: frees the messages that left their queues while
 * it pointed into them, and forgets its frame. */
void h2_reply_write_done(struct h2_session *s, struct h2_write *w);
/* Messages that left their queues while frames may still point into them,
 * from a write that hands none after all: held by the newest write in
 * flight, or freed when none is. */
void h2_reply_defer_all(struct h2_session *s, struct h2_out *list);
/* h2_call_fail() once a call's response headers are out. */
int h2_reply_fail(struct h2_call *c, enum status_code code, const char *msg);
/* Tells handlers whose reply bytes nghttp2 took. */
void h2_reply_notify_sent(struct h2_session *s);
/* nghttp2's send_data callback: completes the session's frame and pauses. */
int h2_reply_send_data(nghttp2_session *ng, nghttp2_frame *frame, const uint8_t *framehd,
                       size_t length, nghttp2_data_source *source, void *user_data);

/* --- h2_stream.c ---------------------------------------------------------- */

/* The stream call was answered: drops what it holds, gives the window back. */
void h2_stream_drop_input(struct h2_call *c);
/* Reader callback for stream calls. */
int h2_stream_message(struct h2_call *c, const uint8_t *msg, size_t len);
/* DATA for a stream call that is still taking input. */
void h2_stream_data(struct h2_call *c, const uint8_t *data, size_t len);
/* end() once the client half-closed and every message was delivered. */
void h2_stream_try_end(struct h2_call *c);
/* Runs the resumes asked for while the session was busy. */
void h2_stream_run_resumes(struct h2_session *s);

#endif
