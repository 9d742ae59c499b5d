/* SPDX-License-Identifier: MIT */
/* conn.h: libampclient's connection, internal to the library.
 *
 * conn.c owns the socket and the nghttp2 client session and is the only
 * file that does I/O, but for the large batches it hands to its writer
 * thread (conn_writer.c); call.c runs one gRPC call over it; jobs.c and
 * devices.c encode requests and decode replies.
 */
#ifndef AMP_CLIENT_CONN_H
#define AMP_CLIENT_CONN_H

#include <nghttp2/nghttp2.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "address.h"
#include "amp.h"
#include "amp_wire.h"
#include "conn_writer.h"
#include "grpc_timeout.h"
#include "tls.h"

#define CONN_MESSAGE_MAX 512 /* longest kept detail message, NUL included */
#define CONN_DEVICE_MAX 128  /* longest kept device name, NUL included */
#define CONN_READ_CHUNK (256 * 1024) /* bytes read from the socket at once */
#define CONN_FRAME_IOV 16            /* iovecs of one borrowed DATA frame, header included */
#define CONN_OUT_IOV (CONN_FRAME_IOV + 1) /* one set's output: its bytes, then the frame */
#define CONN_OUTS 2                  /* output sets: as many as the writer takes at once */
#define CONN_FRAME_HD 9              /* an HTTP/2 frame header */
#define CONN_BEARER "Bearer "        /* amp_connect_opts.token's scheme (RFC 6750) */
#define CONN_CPUS_PER_POLLER 4       /* busy polling: one polling thread per this many CPUs */

struct call;
struct region_link;

/* amp_fd(): an epoll descriptor that stands for the connection in the
 * application's loop (loop.c). It watches the socket (for reading, and
 * for writing while output waits), the writer thread's eventfd, and wake,
 * an eventfd raised when work is due that no descriptor shows (a
 * callback due, a stream's next input). Level-triggered throughout. */
struct conn_loop {
    int epfd;              /* -1 until amp_fd() first asks; owned */
    int wake;              /* eventfd, owned with epfd; raised: woken is set */
    int woken;
    int processing;        /* amp_process runs: it does the due work itself */
    int firing;            /* completion callbacks run: amp_process and amp_wait refuse */
    int sock;              /* the socket as registered (-1: none), its events, */
    uint32_t sock_events;
    int writer;            /* and the writer's eventfd (-1: none) */
};

/* One set of output (amp_conn.outs): bytes copied from nghttp2
 * (buf[pos..len)), then perhaps a DATA frame of a no_copy call (call.h):
 * its header (copied to frame_hd) and body bytes still in the call's
 * memory. frame[frame_i..frame_n) is unwritten (frame[frame_i] maybe in
 * part); while frame_n > frame_i nothing more goes into the set, and the
 * call may not end before conn_own_output(). */
struct conn_out {
    uint8_t *buf;
    size_t pos, len, cap;
    uint8_t frame_hd[CONN_FRAME_HD];
    struct iovec frame[CONN_FRAME_IOV];
    int frame_i, frame_n;
};

struct amp_conn {
    char *address;         /* what amp_connect was given (or the default), owned */
    struct address targets[ADDRESS_LIST_MAX]; /* its addresses, in the order given */
    size_t ntargets;       /* 1..ADDRESS_LIST_MAX */
    size_t target;         /* the one connected to, or to (re)open next: < ntargets */
    int connect_timeout_ms; /* > 0 */
    int no_reconnect;      /* amp_connect_opts.no_reconnect */
    uint64_t busy_poll_ns; /* amp_connect_opts.busy_poll_us; 0: never */
    uint64_t heard_ns;     /* monotonic_ns() when the daemon's bytes last came in */
    int fd;                /* non-blocking socket, owned */
    struct tls_client_opts tls_opts; /* amp_connect_opts.tls*, copied: each (re)open uses them */
    char *authorization;   /* "Bearer TOKEN" from amp_connect_opts.token, owned; NULL: none */
    const char *priority;  /* amp_connect_opts.priority as a static name; NULL: none sent */
    int ask_server_timing; /* amp_connect_opts.server_timing: every call sends the header */
    char max_queue[GRPC_TIMEOUT_TEXT]; /* amp_connect_opts.max_queue_us as amp-max-queue-time's
                                           value; "": none sent */
    struct tls_pipe *tls;  /* TLS connections: what the socket carries is its ciphertext; owned */
    uint64_t tls_unsent;   /* plaintext bytes sealed into tls, none of whose ciphertext has gone
                              yet: they count in sent once any of it has (conn_sent_mark) */
    nghttp2_session *h2;   /* client session, owned; does no I/O itself */
    int broken;            /* set after an I/O or protocol failure: later calls fail fast */
    int proto_error;       /* nghttp2 saw the peer break HTTP/2; proto_message says how */
    char proto_message[CONN_MESSAGE_MAX];
    char goaway[CONN_MESSAGE_MAX]; /* the daemon's GOAWAY debug data (why it refused), or "" */
    uint32_t goaway_error; /* the GOAWAY's HTTP/2 error code (NO_ERROR: a drain or idle close) */
    uint64_t sent;         /* HTTP/2 bytes written to this socket (over TLS: sealed, and some
                              of their ciphertext written): tells whether a call's went out */
    int grpc_status;       /* amp_last_grpc_status(): the last call's, or -1 */
    struct call *call;     /* the call in progress or NULL; owned by its caller's stack */
    struct call *calls;    /* calls started without waiting and not yet done (async.c),
                            * linked through call->next; owned by their amp_call */
    struct amp_call *done; /* of those, done and not yet handed out by amp_wait, oldest first */
    struct amp_call *ready; /* done, with a callback amp_process has not run yet, oldest first */
    int closing;           /* amp_close runs: no call may start */
    struct conn_loop loop; /* amp_fd's descriptor and what it watches (loop.c) */
    /* What nghttp2 produced and is not yet written, in sets, oldest at
     * outs[out_first]: those handed to the writer thread (plain
     * connections, conn_writer.h), then the one being filled. A set the
     * writer holds stays as it is until conn.c takes its result; with one
     * handed, the next is filled and handed behind it, so the writer finds
     * the next DATA frame waiting when it finishes. Nothing is written
     * here while the writer holds a set. */
    struct conn_out outs[CONN_OUTS];
    int out_first;
    struct conn_writer writer;
    uint8_t *in;           /* read buffer of CONN_READ_CHUNK bytes, owned */
    /* The unpadded DATA frame whose payload is being read: its stream and
     * the payload bytes not yet seen (call.c sets them; call_read_dest). */
    int32_t data_stream;
    size_t data_left;
    char message[CONN_MESSAGE_MAX]; /* amp_last_message() */
    char device[CONN_DEVICE_MAX];   /* amp_last_device() */
    char server_timing[AMP_WIRE_SERVER_TIMING_MAX]; /* amp_last_server_timing() */
    char region_path[108];          /* the daemon's region socket (Unix connections), or "" */
    struct region_link *regions;    /* region.c: the region socket once used, or NULL */
};

/* A call on c was refused UNAVAILABLE: when c has another address to go to
 * (and no call in flight that would be cut), closes the connection and
 * makes the next address the one conn_ready() opens. Returns whether it
 * did. */
int conn_move_on(amp_conn *c);

/* Sets c->message (printf-style) and returns code, so callers can write
 * `return conn_fail(c, AMP_EINVAL, "...")`. */
int conn_fail(amp_conn *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Clears the per-call state (message, device, gRPC status) before a new call. */
void conn_begin(amp_conn *c);

/* Makes c ready to start a call: takes in what the daemon sent while the
 * connection was idle (a GOAWAY, its close), and reopens the connection to
 * the same address when it ended or can take no new stream (unless
 * no_reconnect; and never after the peer broke HTTP/2: AMP_EPROTO).
 * A TLS connection handshakes again with the options it was made with.
 * Returns 0, or AMP_EIO / AMP_EPROTO / AMP_ECONNECT / AMP_EADDR /
 * AMP_ETLS / AMP_ENOMEM with c->message set. */
int conn_ready(amp_conn *c);

/* The value c->sent will have once every byte queued so far is written:
 * a call whose bytes are queued after this mark has sent nothing while
 * c->sent <= mark. */
uint64_t conn_sent_mark(const amp_conn *c);

/* Moves bytes between the socket and the session until *done becomes
 * nonzero (set by session callbacks). deadline_ms is a CLOCK_MONOTONIC
 * time in ms, or 0 for none. Returns 0, AMP_EDEADLINE when the deadline
 * passed, AMP_EIO when the connection broke (c->broken is then set),
 * AMP_EPROTO when the peer broke HTTP/2, AMP_ENOMEM. */
int conn_pump(amp_conn *c, long long deadline_ms, const int *done);

/* One round of conn_pump(): queues what the session wants to send, then
 * (unless *done) waits once for the socket and moves what it can. Callers
 * that produce request bytes as they go (stream.c) loop on it, doing their
 * own work between rounds. Returns as conn_pump(). */
int conn_pump_once(amp_conn *c, long long deadline_ms, const int *done);

/* Writes whatever the session has queued without waiting (used after a
 * call gave up on its stream). Errors are left for the next call. */
void conn_flush_nowait(amp_conn *c);

/* Drops a reference to the region socket (region.c); the socket closes,
 * ending its registrations, when the connection and every region that
 * used it have let go. NULL is a no-op. */
void region_link_put(struct region_link *l);

/* Copies the unwritten part of a borrowed DATA frame into the
 * connection's own output, so that the call it points into can end. */
void conn_own_output(amp_conn *c);

/* Ends every call started without waiting (async.c) as the connection
 * closes: they complete with AMP_EIO, and later amp_call_* calls on them
 * no longer touch c. */
void async_close(amp_conn *c);

/* One non-blocking round of conn_pump_once(): AMP_EDEADLINE when
 * nothing was ready to move (amp_process). */
int conn_pump_nowait(amp_conn *c);

/* Whether c has output waiting for room in the socket (not counting
 * what the writer thread holds). */
int conn_wants_write(const amp_conn *c);

/* loop.c: brings amp_fd()'s watch list up to date with c's socket, its
 * output and its writer (a no-op until amp_fd() was asked for); raises
 * the wake-up when amp_process is not running; forgets the socket and
 * writer that conn_shut() closes; and closes the descriptors (amp_close). */
void loop_watch(amp_conn *c);
void loop_wake(amp_conn *c);
void loop_forget(amp_conn *c);
void loop_close(amp_conn *c);

/* Now on CLOCK_MONOTONIC, in ms. */
long long conn_now_ms(void);

#endif
