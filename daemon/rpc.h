/* SPDX-License-Identifier: MIT */
/* rpc.h: the gRPC method table and what handlers share.
 *
 * rpc.c maps a request's :path to a method, decodes its one request message
 * with protobuf-c and calls the method's handler; rpc_jobs.c, rpc_info.c
 * and rpc_health.c are the handlers, one file per method family. They answer
 * through rpc_reply() / rpc_fail(), or hand a job to the scheduler and answer
 * when it completes. The rpc_h2_* functions are what a connection plugs into
 * its h2_handlers (conn.c, and the h2 tests).
 */
#ifndef AMPD_RPC_H
#define AMPD_RPC_H

#include <protobuf-c/protobuf-c.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth_file.h"
#include "config.h"
#include "h2.h"
#include "job.h"
#include "status.h"

struct sched_port;
struct auth;
struct auth_conn;
struct client_share;
struct client_share_entry;
struct conn_limit;
struct region_set;
struct Amp__V1__RegionSlice;

/* What handlers may look at: one per I/O loop (io_loop.c), shared by that
 * loop's calls; what it points at is daemon-wide unless said otherwise. */
struct rpc_env {
    struct sched_port *sched;  /* this loop's port into the scheduler; NULL while the devices
                                * open (starting) or when there are none (h2 tests): jobs get
                                * UNAVAILABLE (rpc_no_device) */
    bool starting;             /* the devices are still opening (server.c): health says
                                * NOT_SERVING until every loop has its port (io_loop_ready) */
    size_t max_message_bytes;  /* --max-message-bytes: request and reply messages */
    uint64_t max_unknown_length; /* --max-unknown-length: a whole-input stream's input when its
                                  * header has no total_length; 0: refused (rpc_stream.c) */
    bool draining;             /* shutting down: health checks say NOT_SERVING (set by the
                                * loop itself when told to drain) */
    uint64_t start_ms;         /* rpc_now_ms() at startup, for Status.uptime_ms */
    struct conn_limit *conn_limit; /* connections open now (Status); NULL: 0 */
    const atomic_uint *loop_conns; /* connections on each I/O loop (Status), daemon-wide */
    size_t nloops;             /* entries of loop_conns; 0 (h2 tests): none reported */
    struct uv_loop_s *loop;    /* this loop: runs calls' deadline timers; NULL (h2 tests): not
                                * enforced */
    struct budget *budget;     /* the daemon's (--max-job-memory): jobs of closed calls; NULL: none */
    const struct status_counts *status_counts; /* calls answered by status (h2_config); NULL: none */
    struct region_set *regions; /* clients' shared memory (region.h); NULL: regions off */
    struct stage_latency *stages; /* unary job calls' stage latencies, daemon-wide; NULL: none */
    struct rpc_health_watch *watches; /* this loop's Health/Watch calls (rpc_health.c) */
    struct auth *auth;          /* who may call (auth.h), daemon-wide; NULL: anyone */
    struct client_share *shares; /* each client's calls and jobs (client_share.h), daemon-wide;
                                  * NULL: not counted */
    uint64_t max_queue_us[AMPD_PRIORITIES]; /* --max-queue-time by priority; 0: none */
};

struct rpc_call;

/* A streaming method's handlers: each request message as it comes (the
 * method decodes it), the client's half-close, reply bytes leaving
 * (h2_call_unsent went down), and the call going away (the last call for
 * rc, which is freed after it). */
struct rpc_streaming {
    enum status_code (*message)(struct rpc_call *rc, const uint8_t *msg, size_t len, char *err,
                                size_t errlen);
    /* Optional: h2.h's piece_start() and piece() for this method's calls. */
    size_t (*piece_start)(struct rpc_call *rc, const uint8_t *head, size_t msg_len);
    size_t (*piece)(struct rpc_call *rc, const uint8_t *data, size_t n);
    uint8_t *(*piece_dest)(struct rpc_call *rc, size_t *room);
    void (*end)(struct rpc_call *rc);
    void (*sent)(struct rpc_call *rc);
    void (*closed)(struct rpc_call *rc);
    /* Fails the call from outside (its deadline passed), stopping its work. */
    void (*fail)(struct rpc_call *rc, enum status_code code, const char *msg);
    /* Optional: the job whose start the call's queue-time limit waits for
     * (submitted, not known to have started), or NULL. */
    struct job *(*queued)(struct rpc_call *rc);
};

struct rpc_method {
    const char *path;                              /* "/amp.v1.Amp/Reverse" */
    const ProtobufCMessageDescriptor *request;     /* unary: the one request's type */
    /* Unary: answers the decoded request, now or later. Must not free req;
     * its bulk bytes are in rpc_call.bulk (rpc_take_bulk). */
    void (*handle)(struct rpc_call *rc, ProtobufCMessage *req);
    const struct rpc_streaming *streaming;         /* streaming methods; NULL for unary */
    bool jobs;   /* its calls run jobs: amp-priority and amp-max-queue-time apply */
};

/* One call as the rpc layer sees it; hung on its h2_call. */
struct rpc_call {
    struct h2_call *h2;                 /* valid until the call closes; rpc_call is freed then */
    struct rpc_env *env;
    const struct rpc_method *method;
    ProtobufCMessage *req;              /* decoded request, owned; freed with the call */
    /* A request with a bulk field (rpc_bulk.h): req has it empty, and its
     * bytes are bulk[0..bulk_len) in msg, the request message's buffer,
     * owned (msg_len bytes, held in the call's budget) until a job takes
     * it (rpc_take_bulk); freed with the call. */
    uint8_t *msg;
    size_t msg_len;
    const uint8_t *bulk;
    size_t bulk_len;
    /* Or the bulk bytes arrived in pieces (rpc_bulk_rx.h), owned
     * until a job takes them (rpc_take_bulk); msg then holds only the
     * message's other fields. */
    struct rpc_bulk_rx *bulk_rx;
    struct job *job;                    /* submitted, not yet completed; job->owner == this */
    uint64_t job_held;                  /* bytes held for job (h2_call_hold) */
    void *stream;                       /* a streaming method's state (rpc_stream.c) */
    struct uv_timer_s *deadline;        /* fires at the client's grpc-timeout; NULL if none */
    /* How its jobs are scheduled (rpc_h2_start): its client's flow, name
     * and weight, the priority it asked for; each job gets a copy, its
     * queue deadline set when it is counted (rpc_job_share). */
    struct job_class cls;
    uint64_t queue_limit_us;            /* amp-max-queue-time, else --max-queue-time; 0: none */
    struct uv_timer_s *queue_timer;     /* fires at its job's queue deadline; NULL: none armed */
    long peer_uid;                      /* the client's uid on a Unix socket (whose regions it
                                         * may name); -1 on TCP */
    char client[AUTH_NAME_MAX];         /* the name of the token the call carried; "": none */
    struct client_share_entry *share;   /* its client's counts (env->shares); NULL: none */
    bool share_job;                     /* holds one of its client's --max-client-jobs */
    const struct Amp__V1__RegionSlice *output_region; /* in req: where a job's output goes */
    /* stage_latency.h stamps (ns): headers, the request whole, then its job's
     * (copied at delivery, when the job may go) and its delivery; a call
     * whose job was delivered counts its stages when it closes. */
    uint64_t t_start, t_request, t_submit, t_run, t_done, t_delivered;
};

/* The method for path, or NULL. */
const struct rpc_method *rpc_method_find(const char *path);

/* The i-th method of the table, or NULL past its end (reflection lists
 * the services they belong to). */
const struct rpc_method *rpc_method_at(size_t i);

/* The h2_handlers start() of a connection on env's loop: who is the
 * connection's standing (auth.h: its uid becomes rpc_call.peer_uid), and
 * it refuses a call it may not make (env->auth); NULL: a local test
 * harness, no uid, no checks. It ties the call to env (rpc_call.env). */
enum status_code rpc_h2_start(struct h2_call *call, const char *path, enum h2_call_kind *kind,
                              char *msg, size_t msglen, struct rpc_env *env,
                              const struct auth_conn *who);
/* The other h2_handlers, as they are: a connection plugs them in (ctx is
 * the connection's, unused: the call knows its env). */
enum status_code rpc_h2_message(struct h2_call *call, const uint8_t *msg, size_t len, char *err,
                                size_t errlen, void *ctx);
size_t rpc_h2_piece_start(struct h2_call *call, const uint8_t *head, size_t msg_len, void *ctx);
size_t rpc_h2_piece(struct h2_call *call, const uint8_t *data, size_t n, void *ctx);
uint8_t *rpc_h2_piece_dest(struct h2_call *call, size_t *room, void *ctx);
void rpc_h2_end(struct h2_call *call, void *ctx);
void rpc_h2_closed(struct h2_call *call, void *ctx);
void rpc_h2_sent(struct h2_call *call, void *ctx);

/* Packs reply and answers the call with it; a reply over --max-message-bytes
 * becomes RESOURCE_EXHAUSTED. The call may be closed and rc freed by the
 * time this returns: don't touch rc after it. */
void rpc_reply(struct rpc_call *rc, const ProtobufCMessage *reply);

/* rpc_reply for a reply whose large bytes fields (a job's results) are
 * sent from where they lie, not packed into a buffer first (body.h): they
 * must stay put until release(ctx), which is called exactly once, when
 * they are written or dropped (or from inside, when the reply fails). The
 * reply on the wire is byte for byte protobuf-c's packing of it. Same
 * lifetime rule as rpc_reply. */
void rpc_reply_ref(struct rpc_call *rc, const ProtobufCMessage *reply,
                   void (*release)(void *ctx), void *ctx);

/* Decodes a request of rc's method, which has a bulk field (rpc_bulk.h),
 * from buf (len bytes, malloc'd, held bytes of it in the call's budget),
 * which rc keeps: the bulk bytes stay in it as rc->bulk, and only the rest
 * is decoded into rc->req (and held: about as large as it is). Returns
 * STATUS_OK, or a status with its message in err. */
enum status_code rpc_decode_bulk(struct rpc_call *rc, uint8_t *buf, size_t len, uint64_t held,
                                 char *err, size_t errlen);

/* Moves the request's bulk bytes into job (its input, job->in_mem being
 * the request's buffer or its pinned run); none when the request had no
 * bulk field. */
void rpc_take_bulk(struct rpc_call *rc, struct job *job);

/* Answers the call with an error status; same lifetime rule as rpc_reply. */
void rpc_fail(struct rpc_call *rc, enum status_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Why env's loop has no scheduler (env->sched NULL): the words of the
 * UNAVAILABLE a job call gets, one definition for unary calls and streams. */
const char *rpc_no_device(const struct rpc_env *env);

/* Submits job for rc: the scheduler calls done(job) on the loop when it
 * completes, with job->owner set to rc, or NULL if the call went away. On
 * refusal the call is failed and the job freed. */
void rpc_submit(struct rpc_call *rc, struct job *job, void (*done)(struct job *job));

/* The one place a call's job becomes its client's: gives job the call's
 * scheduling class (its queue deadline from now, and the timer that ends
 * the call UNAVAILABLE if the job has not started by then), and counts it
 * for rc's client (--max-client-jobs) until the job ends or the call
 * closes. STATUS_OK (also when clients are not counted), or
 * RESOURCE_EXHAUSTED with the message in msg. */
enum status_code rpc_job_share(struct rpc_call *rc, struct job *job, char *msg, size_t msglen);

/* In a done() hook: the call the job answers, or NULL when the job failed
 * (the call has been answered with its status) or the call is gone. In both
 * NULL cases the job has been freed. */
struct rpc_call *rpc_job_call(struct job *job);

/* Milliseconds on a monotonic clock. */
uint64_t rpc_now_ms(void);

/* Method families. */
void rpc_reverse(struct rpc_call *rc, ProtobufCMessage *req);
void rpc_transform(struct rpc_call *rc, ProtobufCMessage *req);
void rpc_histogram(struct rpc_call *rc, ProtobufCMessage *req);
void rpc_fill(struct rpc_call *rc, ProtobufCMessage *req);
void rpc_pipeline(struct rpc_call *rc, ProtobufCMessage *req);
void rpc_list_devices(struct rpc_call *rc, ProtobufCMessage *req);
void rpc_status(struct rpc_call *rc, ProtobufCMessage *req);
void rpc_health_check(struct rpc_call *rc, ProtobufCMessage *req);
extern const struct rpc_streaming rpc_stream_method;  /* amp.v1.Amp/Stream */
extern const struct rpc_streaming rpc_health_watch_method;  /* grpc.health.v1.Health/Watch */
/* grpc.reflection.v1 and v1alpha ServerReflection/ServerReflectionInfo */
extern const struct rpc_streaming rpc_reflection_method;

/* The loop's drain began (env->draining was just set): Health/Watch calls
 * get NOT_SERVING and end. */
void rpc_health_drain(struct rpc_env *env);

/* Every loop runs jobs now (env->starting was just cleared): Health/Watch
 * calls get SERVING and go on. */
void rpc_health_ready(struct rpc_env *env);

#endif
