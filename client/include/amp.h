/* SPDX-License-Identifier: MIT */
/* amp.h: libampclient, the C client of the ampd GPU job service.
 *
 * Conventions (the whole contract is this header):
 * - Every public name starts with amp_ / AMP_.
 * - Functions that can fail return 0 on success or a negative AMP_E* code;
 *   amp_strerror() names any code. When the daemon sent a detail message
 *   with a failure, amp_last_message() returns it.
 * - Buffers returned through `void **out` are malloc'd by the library and
 *   owned by the caller, who releases them with amp_free().
 * - Threads: a connection, its calls and its regions belong to one thread
 *   at a time (serialise calls, or use one connection per thread);
 *   different connections are independent. Completion callbacks
 *   (amp_call_on_done) run on the thread in amp_process() or amp_close().
 *   Nothing else is shared between connections but process-wide caches,
 *   which are thread-safe. docs/event-loop.md has the event-loop rules.
 *   A connection that is not TLS
 *   writes the bulk of large requests on a thread of its own, started
 *   on the first and joined by amp_close(); it blocks every signal and
 *   does nothing but write to the connection's socket.
 * - Structs can grow before 1.0 without breaking programs built against an
 *   older amp.h, in one of two ways:
 *   . a struct you fill and pass in on its own (amp_opts, amp_connect_opts,
 *     amp_step, amp_slice, amp_daemon_status) starts with `size`, which you
 *     set to sizeof the struct: `amp_opts o = { .size = sizeof o, ... }`.
 *     The library reads (or for amp_daemon_status writes) only the bytes
 *     your build knows, and fields added later take their defaults. A size
 *     smaller than the struct's first layout, 0 included, is AMP_EINVAL.
 *   . a struct nested by value in another (the *_params, amp_hist) or
 *     returned in an array the library allocates (amp_step_result,
 *     amp_device) keeps its size and grows into its `reserved` tail: zero
 *     it when you fill one (designated initializers and `= {0}` do; the
 *     library refuses nonzero bytes there with AMP_EINVAL), and the library
 *     zeroes it in what it returns.
 * - Errors: each function below that returns a status lists its codes;
 *   the others (void, a pointer, a count, a name) cannot fail. "Call errors"
 *   are those of any call to the daemon: AMP_EINVAL (an argument the
 *   library refuses before sending, named in amp_last_message(), or the
 *   daemon's INVALID_ARGUMENT), AMP_ENOMEM, AMP_EIO (the connection broke),
 *   AMP_EPROTO (a reply that is not HTTP/2 + gRPC), AMP_EDEADLINE
 *   (o->timeout_ms), AMP_EADDR, AMP_ECONNECT or AMP_ETLS (reconnecting, see
 *   amp_connect), and every code that mirrors a gRPC status the daemon
 *   answered with (AMP_ERROR_MAP below: AMP_EEXHAUSTED for a limit,
 *   AMP_EUNAVAIL, AMP_EUNAUTH, AMP_EPERM, ...). A NULL connection is
 *   AMP_EINVAL with no message and the outputs untouched. On failure the
 *   outputs hold what the function says, never memory the caller must
 *   free.
 */
#ifndef AMP_H
#define AMP_H

#include <stddef.h>
#include <stdint.h>

#include "amp_version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define AMP_EXTERN __attribute__((visibility("default")))
#else
#define AMP_EXTERN
#endif

/* Error codes: XX(NAME, code, gRPC status it mirrors or -1, words). Codes
 * with a gRPC status are what the daemon answered (amp_last_grpc_status()
 * has the raw status); the others are local failures. The enum,
 * amp_strerror() and amp_error_name() all expand from this one list. */
#define AMP_ERROR_MAP(XX)                                                                          \
    XX(EINVAL, -1, 3, "invalid argument")                 /* local check, or INVALID_ARGUMENT */   \
    XX(ENOMEM, -2, -1, "out of memory")                                                            \
    XX(EADDR, -3, -1, "bad or unresolvable address")                                               \
    XX(ECONNECT, -4, -1, "cannot connect to the daemon")  /* refused, timed out, ... */            \
    XX(EIO, -5, -1, "connection to the daemon broke")                                              \
    XX(EPROTO, -6, -1, "protocol error (HTTP/2 or gRPC)")                                          \
    XX(ECANCELLED, -7, 1, "cancelled")                                                             \
    XX(EDEADLINE, -8, 4, "deadline exceeded")                                                      \
    XX(EEXHAUSTED, -9, 8, "resource exhausted")           /* a limit was hit */                    \
    XX(EUNIMPL, -10, 12, "not implemented by the daemon")                                          \
    XX(EUNAVAIL, -11, 14, "the daemon is unavailable")    /* no device could take the job, ... */  \
    XX(EINTERNAL, -12, 13, "internal error in the daemon")                                         \
    XX(EUNKNOWN, -13, 2, "unknown error from the daemon") /* also statuses gRPC does not define */ \
    XX(ENOTFOUND, -14, 5, "not found")                                                             \
    XX(EEXIST, -15, 6, "already exists")                                                           \
    XX(EPERM, -16, 7, "permission denied")                                                         \
    XX(EPRECOND, -17, 9, "failed precondition")                                                    \
    XX(EABORTED, -18, 10, "aborted")                                                               \
    XX(EOUTOFRANGE, -19, 11, "out of range")              /* e.g. a region slice past its end */   \
    XX(EDATALOSS, -20, 15, "data loss")                                                            \
    XX(EUNAUTH, -21, 16, "unauthenticated")                                                       \
    XX(EPENDING, -22, -1, "the call has not finished")    /* amp_call_* before amp_wait */     \
    XX(ETLS, -23, -1, "TLS handshake with the daemon failed") /* amp_connect_with() */

enum {
    AMP_OK = 0,
#define AMP_ERROR_ENUM_(name, code, grpc, words) AMP_##name = code,
    AMP_ERROR_MAP(AMP_ERROR_ENUM_)
#undef AMP_ERROR_ENUM_
};

/* Default address of the daemon: its Unix socket. */
#define AMP_DEFAULT_ADDRESS "unix:/run/ampd/ampd.sock"

/* How long amp_connect() waits for the connection to be accepted. */
#define AMP_CONNECT_TIMEOUT_MS 30000

typedef struct amp_conn amp_conn;

/* Per-call options; pass NULL for the defaults. */
typedef struct amp_opts {
    size_t size;           /* sizeof(amp_opts) in your build (see the top of this file) */
    const char *device;    /* "" or NULL: daemon's choice; "gpu", "cpu", or an index */
    int timeout_ms;        /* 0: no deadline */
} amp_opts;

/* Connection options; pass NULL for the defaults. */
typedef struct amp_connect_opts {
    size_t size;           /* sizeof(amp_connect_opts) in your build */
    int timeout_ms;        /* bound on connecting (also when the daemon does not accept, e.g.
                              its accept queue is full); 0: AMP_CONNECT_TIMEOUT_MS */
    int no_reconnect;      /* nonzero: a broken connection stays broken (every later call
                              fails with AMP_EIO) instead of being reopened */
    /* TLS: appended, so a size that ends before them means none. Any
     * tls_* field asks for TLS, as a "tls:HOST:PORT" address does. The
     * strings are copied; the files are read again at each reconnection. */
    int tls;               /* nonzero: TLS over a HOST:PORT address */
    const char *tls_ca;    /* PEM file of the CAs that may sign the daemon's certificate;
                              NULL: the system's */
    const char *tls_cert;  /* PEM client certificate (then its chain), for a daemon that
                              asks for one (ampd --tls-client-ca); NULL: none */
    const char *tls_key;   /* PEM private key of tls_cert; required with it */
    const char *tls_server_name; /* the name the daemon's certificate must carry (and SNI);
                                    NULL: the address's host (a name or an IP address) */
    /* A bearer token from the daemon's --token-file, sent with every call
     * as "authorization: Bearer TOKEN" (ampd needs one on TCP); copied.
     * Visible ASCII without spaces; NULL or "": none. Send it only over
     * TLS or loopback: plaintext shows it to the network. A wrong or
     * missing one makes calls fail with AMP_EUNAUTH. */
    const char *token;
    /* Microseconds a small blocking call (a unary request of at most
     * AMP_BUSY_POLL_MAX_REQUEST bytes) waiting for the daemon polls the
     * socket before it sleeps: a tiny call's reply comes back in tens of
     * microseconds, and waking a sleeping thread costs several. The
     * calling thread's CPU is spent meanwhile, until another thread wants
     * it: then the call sleeps. Only a call made within busy_poll_us of
     * the connection's last bytes from the daemon polls (calls back to
     * back): the daemon polls as long after a reply, and a call made later
     * wakes it, which Linux may run on the caller's CPU, where a poll
     * would hold it off. Streams, larger calls and a connection with calls
     * started without waiting in flight do not poll, and at most one
     * thread per four CPUs of the process polls at once (the others sleep
     * at once).
     * 0: AMP_BUSY_POLL_US; < 0: never poll; at most AMP_BUSY_POLL_MAX_US. */
    int busy_poll_us;
    /* Scheduling class (appended): sent with every call of the connection
     * as gRPC metadata, amp-priority and amp-max-queue-time (ampd(8)).
     * priority: "low", "normal" or "high" (NULL: none sent, the daemon's
     * normal); a priority above what the daemon grants the token or uid
     * fails each call with AMP_EPERM. max_queue_us: microseconds a job may
     * wait in the daemon's queue before it starts; one that cannot start
     * in time fails with AMP_EUNAVAIL (0: none sent, the daemon's
     * default for the priority). */
    const char *priority;
    unsigned max_queue_us;
    /* Appended: nonzero asks the daemon to say, with each unary job call's
     * reply, where the call's time in it went (amp_last_server_timing);
     * 0: not asked, which saves tiny calls a few hundred bytes each. */
    int server_timing;
} amp_connect_opts;

/* amp_connect_opts.busy_poll_us's default and limit, and the largest
 * request that polls. */
#define AMP_BUSY_POLL_US 50
#define AMP_BUSY_POLL_MAX_US 10000
#define AMP_BUSY_POLL_MAX_REQUEST (64 * 1024)

/* The version of the library the program runs with, as AMP_VERSION_HEX
 * (0xMMmmpp) and as a static string "MAJOR.MINOR.PATCH". */
AMP_EXTERN unsigned amp_version(void);
AMP_EXTERN const char *amp_version_string(void);

/* Returns a static string describing code ("deadline exceeded"). Never NULL. */
AMP_EXTERN const char *amp_strerror(int code);

/* Returns a static string naming code ("AMP_EDEADLINE"), "AMP_OK" for 0,
 * or "AMP_E?" for a number that is no code. Never NULL. */
AMP_EXTERN const char *amp_error_name(int code);

/* Connects to address: "unix:/path", "unix:///path", "HOST:PORT" or
 * "[V6]:PORT" (gRPC target syntax), or "tls:HOST:PORT" for TCP over TLS
 * with the system's CAs; NULL means AMP_DEFAULT_ADDRESS.
 *
 * Several daemons: address may be a comma-separated list of such
 * addresses (at most 16; a Unix path in a list cannot hold a comma), and a
 * HOST may have several DNS records. As gRPC's round_robin policy does,
 * connections spread over them: each new connection (and reconnection)
 * starts at the next address of the list, or record of the name, in turn
 * across the process, and goes on to the others when one cannot be
 * opened. A unary call refused UNAVAILABLE (a draining daemon, one with no
 * device free, a proxy's 503) is sent again to the next address of the
 * list, each at most once, unless calls started without waiting
 * (amp_start_*) are in flight on the connection. Streams are never sent
 * twice (their input is read once).
 * On success *out is a new connection the caller closes with amp_close().
 * Waits at most AMP_CONNECT_TIMEOUT_MS for the daemon to take it.
 *
 * A connection reopens itself: when a call finds it broken, or closed by
 * the daemon (its restart, its idle timeout's GOAWAY, a drain), the call
 * connects again to the same address first. A call is sent again on a new
 * connection only when the daemon cannot have acted on it: it refused the
 * call's stream (REFUSED_STREAM, or a GOAWAY whose last stream is older),
 * or the connection broke before any of the call's bytes were written.
 * Once a byte may have reached the daemon, the failure is returned (the
 * job may have run). Regions (below) belong to the connection they were
 * made on and do not follow it to a new daemon.
 *
 * Returns 0; AMP_EINVAL (out NULL), AMP_ENOMEM, AMP_EADDR (a malformed or
 * unresolvable address), AMP_ECONNECT (no address took the connection
 * within the timeout), AMP_ETLS (tls: addresses). On failure *out is NULL
 * (out not NULL) and amp_last_message(NULL) says why. */
AMP_EXTERN int amp_connect(const char *address, amp_conn **out);

/* amp_connect() with options o (NULL: the defaults). TLS (o->tls, any
 * tls_* field, or a "tls:" address) needs a TCP address (AMP_EINVAL
 * otherwise). The daemon's certificate must chain to a trusted CA and
 * carry the server name; TLS 1.2 or 1.3 with ALPN "h2". The handshake
 * happens here, and again at each reconnection: AMP_ETLS, with OpenSSL's
 * reason in amp_last_message(), when it fails. Returns amp_connect()'s
 * codes, and AMP_EINVAL for options it refuses (o->size, a negative
 * timeout, a token that is not visible ASCII, a priority that is not
 * "low", "normal" or "high", TLS over a Unix address);
 * *out as there. */
AMP_EXTERN int amp_connect_with(const char *address, const amp_connect_opts *o, amp_conn **out);

/* Closes the connection and frees it. NULL is a no-op. */
AMP_EXTERN void amp_close(amp_conn *c);

/* The daemon's message for the last failed call on c, or a local
 * description; "" when there is none. Valid until the next call on c.
 * With c == NULL: why the calling thread's last amp_connect() failed
 * (e.g. "connect to unix:/x.sock: No such file or directory"), valid until
 * its next amp_connect(). */
AMP_EXTERN const char *amp_last_message(const amp_conn *c);

/* The gRPC status (0..16, or what the daemon sent beyond) that ended the
 * last call on c, or -1 when it ended without one (a local failure, a
 * broken connection). A non-200 HTTP status without grpc-status (a
 * proxy's error page) counts as the gRPC status gRPC's HTTP mapping gives
 * it (400 INTERNAL, 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, 404
 * UNIMPLEMENTED, 429/502/503/504 UNAVAILABLE, others UNKNOWN), its body is
 * ignored, and amp_last_message() says "not a gRPC reply: HTTP status N". */
AMP_EXTERN int amp_last_grpc_status(const amp_conn *c);

/* Name of the device that ran the last successful job on c ("" if none).
 * Valid until the next call on c. */
AMP_EXTERN const char *amp_last_device(const amp_conn *c);

/* Where the last call's time in the daemon went, on a connection made
 * with amp_connect_opts.server_timing, as the daemon's reply said in its
 * server-timing trailer (W3C Server-Timing syntax, durations in
 * milliseconds): "request;dur=0.012, queue;dur=0.003, run;dur=0.041,
 * deliver;dur=0.002, total;dur=0.061" for a unary job, from its headers
 * read to its reply ready. A call's latency less total is the sockets'
 * and the hosts' part. "" when the daemon sent none (not asked, a failed
 * call, a stream, an older daemon). Valid until the next call on c. */
AMP_EXTERN const char *amp_last_server_timing(const amp_conn *c);

/* Frees memory the library returned. NULL is a no-op. A buffer of 1 MiB or
 * more may be kept (four at most, 256 MiB in all, for the life of the
 * process) and reused for a later reply, whose pages are then already
 * mapped: writing a large reply into fresh memory costs a page fault per
 * 4 KiB. */
AMP_EXTERN void amp_free(void *p);

/* --- jobs ------------------------------------------------------------------ */

typedef enum amp_op {
    AMP_OP_ADD = 1, AMP_OP_XOR, AMP_OP_AND, AMP_OP_OR, AMP_OP_SET, AMP_OP_MAP
} amp_op;

typedef enum amp_type {
    AMP_TYPE_UINT8 = 1, AMP_TYPE_UINT32, AMP_TYPE_INT32, AMP_TYPE_FLOAT32, AMP_TYPE_INT64
} amp_type;

/* Bytes of a map's lookup table: byte b becomes table[b]. */
#define AMP_MAP_TABLE_LEN 256

typedef struct amp_transform_params {
    amp_op op;
    uint8_t value;          /* add/xor/and/or/set operand */
    const uint8_t *table;   /* map: table_len bytes (AMP_MAP_TABLE_LEN) */
    size_t table_len;
    uint64_t offset;        /* sub-range start */
    uint64_t length;        /* sub-range length, if has_length */
    int has_length;         /* 0: the range runs to the end of the data */
    uint64_t reserved[4];   /* zero (see the top of this file) */
} amp_transform_params;

typedef struct amp_hist_params {
    amp_type type;          /* AMP_TYPE_UINT8: 256 bins; or UINT32/INT32/FLOAT32 */
    uint32_t bins;
    double lo, hi;          /* bin range [lo, hi) */
    int clamp;              /* nonzero: out-of-range values go to the edge bins */
    uint64_t reserved[4];   /* zero */
} amp_hist_params;

typedef struct amp_hist {
    uint64_t *counts;       /* bins entries; free with amp_hist_free() */
    uint32_t bins;
    uint64_t below, above, nan;
    uint64_t reserved[4];   /* zeroed by the library */
} amp_hist;

typedef struct amp_fill_params {
    amp_type type;          /* INT32, UINT32, INT64 or FLOAT32 */
    uint64_t count;
    uint32_t tile;          /* work-group size, 0: daemon's choice */
    int64_t start, step;    /* integer types (wrapping) */
    float start_f, step_f;  /* FLOAT32 */
    uint64_t reserved[4];   /* zero */
} amp_fill_params;

/* Frees h->counts and clears *h. */
AMP_EXTERN void amp_hist_free(amp_hist *h);

/* Reverses len bytes of in. On success *out (malloc'd, caller frees with
 * amp_free) holds *out_len == len bytes. Returns 0 or a call error
 * (AMP_EINVAL also for out or out_len NULL, in NULL with len > 0); on
 * failure *out is NULL and *out_len 0 (when both are given). */
AMP_EXTERN int amp_reverse(amp_conn *c, const amp_opts *o, const void *in, size_t len,
                           void **out, size_t *out_len);

/* Applies p to the bytes of in; *out as for amp_reverse. Returns 0 or a
 * call error (AMP_EINVAL also for p NULL, an op that is no amp_op, a map
 * without its AMP_MAP_TABLE_LEN-byte table, nonzero reserved bytes, and
 * the daemon's INVALID_ARGUMENT for a range past the data); *out and
 * *out_len on failure as for amp_reverse. */
AMP_EXTERN int amp_transform(amp_conn *c, const amp_opts *o, const amp_transform_params *p,
                             const void *in, size_t len, void **out, size_t *out_len);

/* Histogram of in (little-endian elements of p->type) into *h, which the
 * caller releases with amp_hist_free(). Returns 0 or a call error
 * (AMP_EINVAL also for h or p NULL, a type that is no amp_type, nonzero
 * reserved bytes, and the daemon's INVALID_ARGUMENT for bins or range);
 * on failure *h is zeroed (h not NULL). */
AMP_EXTERN int amp_histogram(amp_conn *c, const amp_opts *o, const amp_hist_params *p,
                             const void *in, size_t len, amp_hist *h);

/* Fills p->count elements (little-endian) into *out. Returns 0 or a call
 * error (AMP_EINVAL also for p NULL, a type that is no amp_type, nonzero
 * reserved bytes); *out and *out_len on failure as for amp_reverse. */
AMP_EXTERN int amp_fill(amp_conn *c, const amp_opts *o, const amp_fill_params *p,
                        void **out, size_t *out_len);

/* --- pipelines ------------------------------------------------------------- */

/* One step of a job. The output bytes of a step are the input of the next;
 * a histogram step passes its input on unchanged; a fill step ignores its
 * input. Only the params member matching kind is read. */
typedef enum amp_step_kind {
    AMP_STEP_REVERSE = 1, AMP_STEP_TRANSFORM, AMP_STEP_HISTOGRAM, AMP_STEP_FILL
} amp_step_kind;

typedef struct amp_step {
    size_t size;                    /* sizeof(amp_step); the same in every step of an array */
    amp_step_kind kind;
    amp_transform_params transform; /* AMP_STEP_TRANSFORM */
    amp_hist_params hist;           /* AMP_STEP_HISTOGRAM */
    amp_fill_params fill;           /* AMP_STEP_FILL */
} amp_step;

typedef struct amp_step_result {
    void *data;             /* reverse/transform/fill: output bytes (malloc'd, never NULL); else
                               NULL, and NULL for jobs that write into a region */
    size_t len;
    amp_hist hist;          /* histogram steps; zeroed for the others */
    uint64_t region_offset; /* amp_run_region: where in the output region data went */
    uint64_t reserved[4];   /* zeroed by the library */
} amp_step_result;

/* Runs nsteps (>= 1) steps over len bytes of in as one job (the unary
 * Pipeline call: input and every result travel in one message each). On
 * success *results is a malloc'd array of nsteps entries in step order,
 * which the caller releases with amp_step_results_free(*results, nsteps);
 * on failure *results is NULL (results not NULL). Returns 0 or a call
 * error (AMP_EINVAL also for results NULL, no steps, a step the library
 * refuses as the one-step functions do, steps of different sizes). */
AMP_EXTERN int amp_pipeline(amp_conn *c, const amp_opts *o, const amp_step *steps, size_t nsteps,
                            const void *in, size_t len, amp_step_result **results);

/* Frees every entry's data and histogram, then r. NULL is a no-op. */
AMP_EXTERN void amp_step_results_free(amp_step_result *r, size_t n);

/* --- streaming --------------------------------------------------------------- */

/* Bytes of input sent per Stream data message. */
#define AMP_STREAM_CHUNK (1024 * 1024)

/* Input source: copy up to cap bytes into buf; return the count, 0 at end
 * of input, or a negative AMP_E* code to abort the stream. */
typedef long (*amp_read_cb)(void *ctx, void *buf, size_t cap);

/* Output sink: take len bytes of the last data-producing step's output, in
 * order (buf is valid only during the call); return 0, or a negative AMP_E*
 * code to abort the stream. */
typedef int (*amp_write_cb)(void *ctx, const void *buf, size_t len);

/* What a Stream call runs over what (amp_stream_run): set size to
 * sizeof(amp_stream_args) (see the top of this file).
 * steps, nsteps: the job, as for amp_pipeline.
 * total_length: input bytes that will follow (0: unknown: with a reverse
 * step, the daemon then takes at most its --max-unknown-length, 256 MiB by
 * default; it refuses a count different from one given).
 * in: called for input until it returns 0; NULL means no input (e.g. a
 * lone fill step). out: receives the output of the last data-producing
 * step; NULL discards it.
 * hists: room for one amp_hist per histogram step, filled in step order;
 * nhists must equal the number of histogram steps. On success the caller
 * frees each with amp_hist_free(); on failure they are left zeroed. */
typedef struct amp_stream_args {
    size_t size;
    const amp_step *steps;
    size_t nsteps;
    uint64_t total_length;
    amp_read_cb in;
    void *in_ctx;
    amp_write_cb out;
    void *out_ctx;
    amp_hist *hists;
    size_t nhists;
} amp_stream_args;

/* Runs a's steps over an input of any size in chunks (the Stream call),
 * with bounded memory on both sides. Input is read only as fast as the
 * daemon takes it (HTTP/2 flow control) and output is delivered as it
 * arrives. An abort from a->in or a->out resets the stream and returns that
 * code; the connection stays usable. o->timeout_ms bounds the whole stream.
 * Returns 0, a call error (AMP_EINVAL also for a NULL a, a->size too small,
 * steps the library refuses, nhists not the number of histogram steps), or
 * the code in or out aborted with; output already handed to out stays
 * delivered. */
AMP_EXTERN int amp_stream_run(amp_conn *c, const amp_opts *o, const amp_stream_args *a);

/* amp_stream_run with the arguments one by one, as before amp_stream_args. */
AMP_EXTERN int amp_stream(amp_conn *c, const amp_opts *o, const amp_step *steps, size_t nsteps,
                          uint64_t total_length, amp_read_cb in, void *in_ctx,
                          amp_write_cb out, void *out_ctx, amp_hist *hists, size_t nhists);

/* amp_stream over an input that is in memory already: len bytes at in,
 * sent from where they lie (no copy into the library's buffers; in must
 * stay unchanged until the call returns). The total length is len.
 * Codes and hists as for amp_stream (AMP_EINVAL also for in NULL with
 * len > 0). */
AMP_EXTERN int amp_stream_mem(amp_conn *c, const amp_opts *o, const amp_step *steps,
                              size_t nsteps, const void *in, size_t len, amp_write_cb out,
                              void *out_ctx, amp_hist *hists, size_t nhists);

/* amp_stream_mem with the output written into out (out_cap bytes) as it
 * arrives, most of it read from the socket straight there: no callback and
 * no copy in between, for moving memory to memory at the socket's speed.
 * *out_len gets the output's length, on failure what of it arrived. Output
 * longer than out_cap resets the stream (AMP_EINVAL, naming out_cap); out
 * may be NULL with out_cap 0 for jobs without data output (histograms).
 * Otherwise codes and hists as for amp_stream_mem (AMP_EINVAL also for
 * out_len NULL). */
AMP_EXTERN int amp_stream_mem_into(amp_conn *c, const amp_opts *o, const amp_step *steps,
                                   size_t nsteps, const void *in, size_t len, void *out,
                                   size_t out_cap, size_t *out_len, amp_hist *hists,
                                   size_t nhists);

/* amp_stream over file descriptors: in_fd is read to EOF, out_fd gets the
 * output; -1 for no input / no data output. Neither is closed. A read or
 * write failure returns AMP_EIO with the reason in amp_last_message();
 * otherwise codes and hists as for amp_stream. */
AMP_EXTERN int amp_stream_fd(amp_conn *c, const amp_opts *o, const amp_step *steps, size_t nsteps,
                             uint64_t total_length, int in_fd, int out_fd, amp_hist *hists,
                             size_t nhists);

/* --- many calls in flight -------------------------------------------------- */

/* A job started without waiting for it: many run at once on one
 * connection (each on its own HTTP/2 stream), and amp_wait() hands them
 * back as they finish. Thread rules: a connection and its calls belong to
 * one thread at a time; a blocking call on the same connection moves the
 * started ones too. The input (and a map table) is borrowed: it must stay
 * unchanged until the call has finished. A started call is never sent
 * twice (no retry after a reconnection). */
typedef struct amp_call amp_call;

/* Start a reverse, transform or histogram; *call is the caller's (free it
 * with amp_call_free). Return 0, or (nothing started; *call NULL when c
 * and call are given) AMP_EINVAL for c or call NULL and for the arguments the
 * blocking function refuses, AMP_ENOMEM, AMP_EIO (the connection broke
 * with calls in flight: amp_wait them first), or the errors of opening
 * the connection (AMP_EADDR, AMP_ECONNECT, AMP_ETLS). The daemon's answer
 * comes later, from amp_call_status(). */
AMP_EXTERN int amp_start_reverse(amp_conn *c, const amp_opts *o, const void *in, size_t len,
                                 amp_call **call);
AMP_EXTERN int amp_start_transform(amp_conn *c, const amp_opts *o,
                                   const amp_transform_params *p, const void *in, size_t len,
                                   amp_call **call);
AMP_EXTERN int amp_start_histogram(amp_conn *c, const amp_opts *o, const amp_hist_params *p,
                                   const void *in, size_t len, amp_call **call);

/* Calls started on c that amp_wait has not handed back yet (0 for NULL). */
AMP_EXTERN size_t amp_in_flight(const amp_conn *c);

/* Waits up to timeout_ms (0: only looks; < 0: no limit) for one of c's
 * started calls to finish and returns it in *done, oldest first among the
 * finished. Returns 0; AMP_EDEADLINE when none finished in time;
 * AMP_EINVAL when none is in flight or waiting, or c or done is NULL.
 * On failure *done is NULL (c and done given). When the connection breaks,
 * every call in flight finishes with the error (AMP_EIO, AMP_EPROTO). */
AMP_EXTERN int amp_wait(amp_conn *c, int timeout_ms, amp_call **done);

/* Stops a call: it finishes at once with AMP_ECANCELLED (unless it had
 * finished already) and amp_wait hands it back like any other. Returns 0,
 * or AMP_EINVAL for NULL. */
AMP_EXTERN int amp_cancel(amp_call *call);

/* A finished call's outcome: 0 or its AMP_E* code (a call error;
 * AMP_EPENDING while it runs; AMP_EINVAL for NULL), the daemon's message
 * on failure, and the device that ran it ("" for NULL). */
AMP_EXTERN int amp_call_status(const amp_call *call);
AMP_EXTERN const char *amp_call_message(const amp_call *call);
AMP_EXTERN const char *amp_call_device(const amp_call *call);

/* Take a finished call's result (once): a reverse's or transform's bytes
 * (free with amp_free) or a histogram (free with amp_hist_free). Return 0
 * or the call's status; AMP_EPENDING while it runs; AMP_EINVAL for a NULL
 * argument, a call of the other kind, or a result taken already. On
 * failure *out is NULL and *out_len 0, or *h zeroed (when given). */
AMP_EXTERN int amp_call_data(amp_call *call, void **out, size_t *out_len);
AMP_EXTERN int amp_call_hist(amp_call *call, amp_hist *h);

/* A pointer of the caller's, carried by the call. */
AMP_EXTERN void *amp_call_user(const amp_call *call);
AMP_EXTERN void amp_call_set_user(amp_call *call, void *user);

/* Frees a call, cancelling it first if it still runs. NULL is a no-op. */
AMP_EXTERN void amp_call_free(amp_call *call);

/* --- shared-memory regions ------------------------------------------------ */

/* A region is memory the caller and the daemon share: a sealed memfd,
 * mapped here and handed to the daemon once over its region socket (a Unix
 * socket beside the gRPC one, SCM_RIGHTS). Jobs then read their input from
 * a region and write their output into one, so the bytes never cross a
 * socket. Only over a local Unix-socket connection; the daemon releases a
 * region when amp_region_release() or amp_close() ends its registration,
 * or the process dies (never while a job still uses it). */
typedef struct amp_region amp_region;

/* Creates a region of size bytes (zero-filled), maps it into the caller
 * and registers it with the daemon c is connected to. AMP_EUNIMPL when c
 * is not a Unix-socket connection or the daemon has regions off. Returns
 * 0, AMP_EUNIMPL, AMP_EINVAL (c or out NULL, size 0), AMP_ENOMEM (the
 * memfd or its mapping), AMP_ECONNECT, AMP_EIO or AMP_EPROTO (the region
 * socket), or the code of the daemon's refusal (AMP_EEXHAUSTED past
 * --max-regions or --max-region-bytes). On failure *out is NULL (out not
 * NULL). */
AMP_EXTERN int amp_region_create(amp_conn *c, size_t size, amp_region **out);

/* The region's memory in this process, and its size. */
AMP_EXTERN void *amp_region_data(const amp_region *r);
AMP_EXTERN size_t amp_region_size(const amp_region *r);

/* Ends the registration and unmaps the region. NULL is a no-op. Every
 * region of a connection must be released before amp_close(c). */
AMP_EXTERN void amp_region_release(amp_region *r);

/* Bytes [offset, offset + length) of a region. */
typedef struct amp_slice {
    size_t size;            /* sizeof(amp_slice) in your build */
    amp_region *region;     /* NULL: the job has no region on this side */
    uint64_t offset;
    uint64_t length;
} amp_slice;

/* Runs nsteps (>= 1) steps as one job (the unary Pipeline call) over
 * regions: the input is in's bytes (in NULL or in->region NULL: no input,
 * e.g. for a lone fill), and every data step's output is written into out,
 * one after another from out->offset (out->length must hold them all).
 * On success *results (nsteps entries, release with amp_step_results_free)
 * has each data step's len and its offset in out's region (data is NULL),
 * and each histogram. in and out may be the same bytes: the job reads its
 * input before it writes any output. Returns 0 or a call error
 * (AMP_EINVAL also for a slice the library refuses, and what amp_pipeline
 * refuses of the steps); on failure *results is NULL (results not NULL). */
AMP_EXTERN int amp_run_region(amp_conn *c, const amp_opts *o, const amp_step *steps,
                              size_t nsteps, const amp_slice *in, const amp_slice *out,
                              amp_step_result **results);

/* --- more calls in flight ------------------------------------------------- */

/* Start the other jobs without waiting, as amp_start_reverse does: a fill
 * (result by amp_call_data), a pipeline and a region job (results by
 * amp_call_results), and a stream. Arguments, checks and codes as for
 * amp_fill, amp_pipeline, amp_run_region and amp_stream_run, and as for
 * amp_start_reverse for call. The steps array is read here only; what a
 * job reads later (the input, a stream's a->hists and the contexts of its
 * callbacks) is borrowed until the call has finished.
 * A started stream reads its input (a->in) and hands its output (a->out)
 * from amp_process() and amp_wait(), as the daemon takes and sends it:
 * its callbacks must not block the loop for long (a blocking call on c
 * moves its replies but not its next input). a->hists is filled as the
 * results arrive; once the call finished with 0 the caller frees each
 * with amp_hist_free(), on failure they are zeroed. */
AMP_EXTERN int amp_start_fill(amp_conn *c, const amp_opts *o, const amp_fill_params *p,
                              amp_call **call);
AMP_EXTERN int amp_start_pipeline(amp_conn *c, const amp_opts *o, const amp_step *steps,
                                  size_t nsteps, const void *in, size_t len, amp_call **call);
AMP_EXTERN int amp_start_region(amp_conn *c, const amp_opts *o, const amp_step *steps,
                                size_t nsteps, const amp_slice *in, const amp_slice *out,
                                amp_call **call);
AMP_EXTERN int amp_start_stream(amp_conn *c, const amp_opts *o, const amp_stream_args *a,
                                amp_call **call);

/* Take a finished pipeline's or region job's results (once), as
 * amp_pipeline and amp_run_region return them: *results has *n entries
 * (the steps started), released with amp_step_results_free(*results, *n).
 * Returns 0 or the call's status; AMP_EPENDING while it runs; AMP_EINVAL
 * for a NULL argument, a call of another kind, or results taken already.
 * On failure *results is NULL and *n 0 (when given). */
AMP_EXTERN int amp_call_results(amp_call *call, amp_step_result **results, size_t *n);

/* --- in any event loop ------------------------------------------------------ */

/* docs/event-loop.md has the design and a libuv example
 * (examples/libuv_many.c). Three pieces, as libcurl's multi interface,
 * hiredis' async context and c-ares have them:
 * - amp_fd(c): one descriptor for the application's loop to watch for
 *   reading (POLLIN, EPOLLIN, libuv's UV_READABLE; level-triggered).
 * - amp_process(c): when it is readable, advances c without blocking.
 * - amp_call_on_done(): a callback per started call, run by amp_process()
 *   when the call finished (or by amp_close()).
 * The loop never writes to c's socket itself and needs no timer: the
 * descriptor also becomes readable when c has output waiting for room in
 * the socket, a writer thread's batch ended, or a finished call's
 * callback is due. */

/* A started call finished: call is the caller's, as amp_wait() would have
 * handed it (amp_call_status() and the results are final); user is what
 * amp_call_on_done() was given. The callback may take the results, free
 * call, start calls on c and cancel others; it must not call
 * amp_process(), amp_wait(), amp_close() or a blocking call on c
 * (amp_process and amp_wait refuse with AMP_EINVAL). */
typedef void (*amp_done_cb)(amp_call *call, void *user);

/* Has cb (NULL: none again) called when call finishes, exactly once,
 * from amp_process() (or amp_close(), with AMP_EIO); such a call is never
 * handed out by amp_wait(). One that finished already (a cancel, a
 * blocking call on c that moved it) gets its callback at the next
 * amp_process(). user is also amp_call_user()'s. A call freed with
 * amp_call_free() before it finished gets no callback. Returns 0, or
 * AMP_EINVAL for call NULL or a call handed out already (by amp_wait, a
 * callback, or amp_close). */
AMP_EXTERN int amp_call_on_done(amp_call *call, amp_done_cb cb, void *user);

/* The descriptor to watch for reading: the same for the life of c,
 * across reconnections (an epoll descriptor over the connection's socket
 * and its wake-ups). The library owns it: never read, write or close it.
 * Returns it (>= 0), or AMP_EINVAL for NULL, AMP_ENOMEM or AMP_EIO when
 * it cannot be made (amp_last_message() says why). */
AMP_EXTERN int amp_fd(amp_conn *c);

/* Advances c without blocking: writes what the socket takes, reads and
 * decodes what arrived, feeds started streams their next input, and
 * calls the callbacks of the calls that finished. Does a bounded amount
 * of work per call (the descriptor stays readable when more is left), so
 * one busy connection does not starve the rest of the loop. Returns 0;
 * AMP_EINVAL for NULL; or the error that broke the connection (AMP_EIO,
 * AMP_EPROTO, ...), every call in flight having finished with it; the
 * next call started on c reconnects. AMP_EINVAL also from inside a
 * completion callback. */
AMP_EXTERN int amp_process(amp_conn *c);

/* --- devices ---------------------------------------------------------------- */

/* What a device is doing now. A unary job or a stream is queued from its
 * submission until the device admits it (reserves its device memory),
 * then running until it ends. */
typedef struct amp_device_load {
    uint32_t jobs_running;
    uint32_t jobs_queued;
    uint64_t memory_in_use;   /* device bytes reserved by running jobs */
    uint64_t memory_capacity; /* the most it admits at once (ampd --max-device-memory) */
    uint64_t reserved[2];     /* zeroed by the library */
} amp_device_load;

typedef struct amp_device {
    uint32_t index;
    char name[128];
    char vendor[64];
    char platform[64];
    char type[16];          /* "gpu", "cpu" or "accelerator" */
    uint64_t global_mem_size;
    uint64_t max_constant_buffer_size;
    uint64_t max_work_group_size;
    uint32_t compute_units;
    int is_default;
    amp_device_load load;   /* when the list was made */
    char kernels[48];       /* the kernel variants its jobs run, e.g. "rev v2, xform v2, map
                             * v3, h256 v3/3, hN v2/3" (tuned on a GPU at its first start;
                             * /N: N work-groups per compute unit) or "cpu kernels" */
    uint64_t reserved[2];   /* zeroed by the library: room for what a device may report later */
} amp_device;

/* Lists the daemon's devices into *list (*n entries, caller frees with
 * amp_free). o may be NULL; only o->timeout_ms is used. Returns 0 or a
 * call error (AMP_EINVAL also for list or n NULL); on failure *list is
 * NULL and *n 0 (when both are given). */
AMP_EXTERN int amp_devices(amp_conn *c, const amp_opts *o, amp_device **list, size_t *n);

/* --- daemon status and health -------------------------------------------- */

/* Devices whose load amp_status() reports; amp_devices() lists them all. */
#define AMP_STATUS_DEVICES 16

/* I/O loops whose connections amp_status() reports (ampd's --io-threads
 * allows as many). */
#define AMP_STATUS_LOOPS 64

/* gRPC's status codes run 0 (OK) to 16 (UNAUTHENTICATED). */
#define AMP_STATUS_CODES 17

/* Stages of a unary job call the daemon times: "request" (headers to the
 * request read and decoded), "queue" (waiting for a device runner or host
 * worker), "run", "deliver" (the completion back on the connection's
 * thread), "reply" (encoded and written) and "total". */
#define AMP_STAGES 6

/* The daemon's latency histograms' buckets: bucket i holds times of
 * [2^(i-1), 2^i) microseconds, bucket 0 under 1 us, the last the rest. */
#define AMP_LATENCY_BUCKETS 24

/* One stage's times since the daemon started. The percentiles are the
 * upper edges of the power-of-two microsecond buckets the daemon keeps
 * (p50_us 64: half the calls took under 64 us). */
typedef struct amp_stage_latency {
    char stage[16];
    uint64_t calls;
    uint64_t sum_us;
    uint64_t p50_us, p90_us, p99_us;
    uint64_t reserved[4];   /* zeroed by the library */
} amp_stage_latency;

/* Client and priority entries amp_status() reports at most: the
 * daemon's rows (its first 32 clients, "other" and "none") at each of
 * three priorities. */
#define AMP_STATUS_CLIENT_TIMES 102

/* One client's jobs at one priority since the daemon started: time
 * queued (submitted to started) and on the device (started to done; a
 * stream's, the time any of its chunks was on it), percentiles as in amp_stage_latency. */
typedef struct amp_client_times {
    char client[96];        /* "token alice", "uid 1000", "address 10.0.0.7"; "other":
                             * clients past the daemon's cap; "none": no client */
    char priority[8];       /* "low", "normal" or "high" */
    uint64_t jobs;
    uint64_t queue_sum_us, queue_p50_us, queue_p99_us;
    uint64_t device_sum_us, device_p50_us, device_p99_us;
    uint64_t reserved[4];   /* zeroed by the library */
} amp_client_times;

typedef struct amp_daemon_status {
    size_t size;                       /* set by you: sizeof(amp_daemon_status) */
    char version[32];
    uint64_t uptime_ms;
    uint32_t connections;
    uint32_t jobs_in_flight;
    uint64_t jobs_completed;
    uint64_t jobs_failed;
    uint64_t peak_rss_bytes;           /* the daemon's peak resident memory */
    uint64_t held_bytes;               /* bytes it holds for clients now (--max-job-memory) */
    uint64_t calls[AMP_STATUS_CODES];  /* calls it answered, by gRPC status code */
    uint64_t staging_bytes_in_use;     /* pinned staging memory taken now, all devices */
    size_t nstages;                    /* entries of stages the daemon reported */
    amp_stage_latency stages[AMP_STAGES];
    size_t ndevices;                   /* entries of devices the daemon reported */
    amp_device_load devices[AMP_STATUS_DEVICES]; /* devices[i]: device i's load */
    size_t nloops;                     /* entries of loop_connections the daemon reported */
    uint32_t loop_connections[AMP_STATUS_LOOPS]; /* connections I/O loop i serves now */
    size_t nclient_times;              /* entries of client_times the daemon reported */
    amp_client_times client_times[AMP_STATUS_CLIENT_TIMES]; /* first-come clients' order */
    /* Appended: the daemon's I/O loops' turns since it started (stage
     * "loop_turn", calls counting turns): a turn is a loop's run from one
     * wait for events to the next, and a call that arrives on the loop
     * meanwhile waits for it to end. loop_turn_buckets[i]: turns of
     * [2^(i-1), 2^i) us (0: under 1 us; the last: that or longer), so that
     * two calls' difference is a histogram of what came between. */
    amp_stage_latency loop_turns;
    uint64_t loop_turn_buckets[AMP_LATENCY_BUCKETS];
} amp_daemon_status;

/* The name of gRPC status code ("RESOURCE_EXHAUSTED" for 8); "UNKNOWN"
 * outside 0..AMP_STATUS_CODES-1. The string is static. */
AMP_EXTERN const char *amp_status_code_name(int code);

/* Asks the daemon for its counters (amp.v1.Amp/Status) into *st, whose
 * size the caller sets; the library writes the rest (st->size bytes).
 * o may be NULL; only o->timeout_ms is used. Returns 0 or a call error
 * (AMP_EINVAL also for st NULL or st->size too small); on failure the
 * fields after size are zeroed, once st->size was accepted. */
AMP_EXTERN int amp_status(amp_conn *c, const amp_opts *o, amp_daemon_status *st);

/* grpc.health.v1 serving states, as the daemon reports them. */
enum {
    AMP_HEALTH_UNKNOWN = 0,
    AMP_HEALTH_SERVING = 1,
    AMP_HEALTH_NOT_SERVING = 2,
    AMP_HEALTH_SERVICE_UNKNOWN = 3,
};

/* Standard health check (grpc.health.v1.Health/Check) of service ("" or
 * NULL: the whole daemon). On success *serving holds an AMP_HEALTH_* value.
 * o may be NULL; only o->timeout_ms is used. Returns 0 or a call error
 * (AMP_EINVAL also for serving NULL); on failure *serving is
 * AMP_HEALTH_UNKNOWN (serving not NULL). */
AMP_EXTERN int amp_health(amp_conn *c, const amp_opts *o, const char *service, int *serving);

#ifdef __cplusplus
}
#endif
#endif
