/* SPDX-License-Identifier: MIT */
/* job.h: a job as the device runner sees it, independent of gRPC.
 *
 * rpc_*.c decode and validate requests into a struct job; the scheduler
 * hands it to a device runner; the runner fills in results and status and
 * hands it back. Every job is a list of steps over device-resident bytes:
 * the data output of step i is the input of step i+1, so a one-step job
 * and a pipeline are the same thing.
 */
#ifndef AMPD_JOB_H
#define AMPD_JOB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "task.h"

struct budget;
struct region;

enum step_kind { STEP_REVERSE, STEP_TRANSFORM, STEP_HISTOGRAM, STEP_FILL };

enum transform_op { XFORM_ADD, XFORM_XOR, XFORM_AND, XFORM_OR, XFORM_SET, XFORM_MAP };

enum elem_type { ELEM_U8, ELEM_U32, ELEM_I32, ELEM_F32, ELEM_I64 };

/* Bytes of one element of each elem_type. */
size_t elem_size(enum elem_type t);

/* Bytes of a map's lookup table (the protocol's; amp.h has the client's
 * AMP_MAP_TABLE_LEN). */
#define JOB_MAP_TABLE_LEN 256

struct transform_params {
    enum transform_op op;
    uint8_t value;        /* operand of add/xor/and/or/set */
    uint8_t table[JOB_MAP_TABLE_LEN]; /* map only */
    uint64_t offset;      /* sub-range [offset, offset+length) of the input */
    uint64_t length;      /* offset + length <= input length (validated) */
};

/* Bins of a byte histogram: one per byte value. */
#define JOB_HIST_BYTE_BINS 256

struct hist_params {
    enum elem_type type;  /* ELEM_U8: 256 bins, one per byte; else U32/I32/F32 */
    uint32_t bins;        /* >= 1; 256 for ELEM_U8 */
    double lo, hi;        /* lo < hi; unused for ELEM_U8 */
    bool clamp;           /* also count out-of-range values in the edge bins */
};

struct fill_params {
    enum elem_type type;  /* ELEM_I32, ELEM_U32, ELEM_I64 or ELEM_F32 */
    uint64_t count;       /* elements to write */
    uint32_t tile;        /* work-group size; 0 lets the runner choose */
    int64_t start, step;  /* integer types; arithmetic wraps to the width */
    float start_f, step_f;/* ELEM_F32: A[k] = fma((float)k, step_f, start_f) */
};

struct step {
    enum step_kind kind;
    union {
        struct transform_params transform;
        struct hist_params hist;
        struct fill_params fill;
    } u;
};

/* Bytes of struct job's device, its NUL included: the name a reply
 * carries is at most one less (rpc_reply_bound.h counts on it). */
#define JOB_DEVICE_MAX 128

struct hist_result {
    uint64_t *counts;     /* bins entries, malloc'd; owned by the step_result */
    uint32_t bins;
    uint64_t below, above, nan;
};

struct step_result {
    uint8_t *data;        /* malloc'd output bytes (reverse/transform/fill) */
    size_t len;
    struct hist_result hist; /* histogram steps */
};

/* Scheduling classes (fairq.h): a job's priority; higher goes first at
 * admission, in a device's queue and in the host workers. */
enum job_priority { JOB_PRIORITY_LOW, JOB_PRIORITY_NORMAL, JOB_PRIORITY_HIGH };
#define JOB_PRIORITIES 3

/* A job's weight beside other clients' when none is configured, and the
 * most one may have. */
#define JOB_WEIGHT_DEFAULT 1
#define JOB_WEIGHT_MAX 1000

/* How the scheduler treats a job: whose work it is, that client's weight,
 * the call's priority and how long it may wait to start. rpc.c sets it
 * from the call (its client, token or uid, and its metadata); job_new()
 * makes it flow 0 at JOB_WEIGHT_DEFAULT and JOB_PRIORITY_NORMAL. */
#define JOB_CLIENT_MAX 96
struct job_class {
    uint64_t flow;              /* the client's number (client_share.h); 0: no client */
    char client[JOB_CLIENT_MAX]; /* its name as client_share.h has it ("token alice",
                                  * "uid 1000"), for metrics and logs; "": none */
    uint32_t weight;            /* 1..JOB_WEIGHT_MAX */
    enum job_priority priority;
    uint64_t queue_deadline_ns; /* monotonic_ns(): not started by then, the job ends
                                 * UNAVAILABLE (job_claim); 0: it waits as long as it must */
    uint64_t queue_limit_us;    /* the queue time that set queue_deadline_ns, for its message */
    bool queue_limit_default;   /* it is --max-queue-time's, the call having sent no
                                 * amp-max-queue-time */
};

/* Who starts a queued job: its runner or host worker (JOB_STARTED), or
 * the queue-time limit (JOB_EXPIRED), whichever claims it first. */
enum job_queue_state { JOB_QUEUED, JOB_STARTED, JOB_EXPIRED };

/* The length a stream's steps are checked against while its input's is
 * unknown (total_len 0): any offset passes; rpc_stream.c checks the real
 * length when the input ends. A multiple of 16, far below overflow. */
#define JOB_UNKNOWN_LEN (UINT64_MAX / 4 / 16 * 16)

struct job {
    struct step *steps;   /* nsteps >= 1, malloc'd, owned by the job */
    size_t nsteps;
    uint8_t *in;          /* input bytes: in in_mem, or in a region when in_region is
                           * set; may be NULL if in_len == 0 */
    size_t in_len;
    void *in_mem;         /* memory holding in, owned by the job: the request message
                           * whose bulk bytes in points into (rpc.c), or a copy; NULL for a
                           * region's input or none */
    size_t in_mem_len;    /* bytes at in_mem (job_memory counts them, not in_len) */
    void (*in_mem_free)(void *in_mem); /* how in_mem is freed; NULL: free() (a pinned
                           * run: rpc_bulk_rx_free, any thread) */
    int in_pinned_dev;    /* the device whose pinned staging holds in_mem (a pinned run);
                           * -1: none */
    /* Region jobs (region.h): the job holds a reference on each region it
     * names until it is freed. With out set, each data step's result goes
     * into out[0..out_cap) one after another (results[i].data points
     * there, not owned): an output region, or the input's own memory
     * (job_output_in_place). */
    struct region *in_region;
    struct region *out_region;
    uint8_t *out;
    size_t out_cap;
    size_t out_used;      /* runner: bytes of out the results took so far */
    char device_req[32];  /* "", "gpu", "cpu" or a device index */

    /* Filled by the runner. results has nsteps entries once status is set. */
    struct step_result *results;
    enum status_code status;
    char msg[STATUS_MSG_MAX];
    char device[JOB_DEVICE_MAX]; /* "index: name" of the device that ran the job */
    int device_index;     /* that index (dev_name_job); -1: none, or the host */

    /* Scheduler bookkeeping: the loop side's completion hook. */
    void (*done)(struct job *job);
    void *owner;          /* what done() reports to, e.g. the waiting stream */
    struct job *next;     /* queue link; owned by whichever queue holds the job */
    struct task task;     /* a unary job's TASK_JOB, how the runner sees it */

    /* Streamed jobs (task.h). */
    uint64_t total_len;   /* input bytes announced by the client; 0: unknown */
    uint64_t in_cap;      /* a stream that needs its whole input at once (dev_stream.c's
                           * resident) with total_len 0: the most input its device buffer
                           * takes (--max-unknown-length); 0: none, total_len is the size */
    size_t chunk_bytes;   /* staging buffer size: the most one IN carries */
    atomic_bool cancelled;/* set by the loop when the job's call ended (client
                           * gone, deadline passed): the runner drops the
                           * job's queued tasks, a unary job's too */

    /* Loop thread: bytes of held_in (the daemon's budget) that the job keeps
     * after its call closed, given back when it completes (rpc.c). */
    struct budget *held_in;
    uint64_t held;
    bool abandoned;       /* counted by sched_abandon() */

    struct job_class cls;
    atomic_int queue_state; /* enum job_queue_state: job_claim() */

    /* stage_latency.h stamps (ns): submitted (loop), started and done (runner or
     * host worker). */
    uint64_t t_submit, t_start, t_done;

    struct split *split;  /* the split this job is a part of (split.h); NULL: a
                           * whole job. Loop thread. */

    /* Runner thread only. */
    struct dev_stream *stream; /* device side of a stream, OPEN to CLOSE */
    struct dev_piece *piece;   /* device side of a unary job in pieces (dev_piece.c) */
    uint64_t dev_reserved;     /* device bytes admitted for this job */
    bool dev_running;          /* admitted by its runner and not yet ended: counted in the
                                * device's jobs_running (runner thread only) */
};

/* p's sub-range as seen from the chunk [off, off+len) of the input (a
 * stream's chunk, a chunked job's), in *out; false when the chunk holds
 * none of it. */
bool job_transform_clip(const struct transform_params *p, uint64_t off, size_t len,
                        struct transform_params *out);

/* Bytes of data flowing out of step st given in_len flowing in: a fill's
 * elements, else its input (a histogram passes its input on), saturating
 * at UINT64_MAX (sat.h). The one place a step's output size is known. */
uint64_t job_step_output_len(const struct step *st, uint64_t in_len);

/* Why a runner or host worker skips a job whose call ended (cancelled). */
#define JOB_CANCELLED_MSG "the call ended before its job ran"

struct job *job_new(size_t nsteps);
/* Frees the job, its input, steps and every result. NULL is a no-op. */
void job_free(struct job *job);
/* Lets a job whose one data step keeps its input's length (a transform or
 * a reverse, around histograms) write that output over its input, where it
 * owns the input's memory and names no output region: no second buffer,
 * and a pinned input stays pinned for the copy back. */
void job_output_in_place(struct job *job);
/* Frees in_mem once the job ran (its results no longer need the input,
 * unless they were written over it); in and in_len are cleared unless the
 * input is in a region. */
void job_drop_input(struct job *job);
/* Host bytes a unary job holds while in flight: its input's memory and
 * every step's output (histogram counts included), but not what lives in
 * a client's region; saturating at UINT64_MAX (sat.h). */
uint64_t job_memory(const struct job *job);

/* A run of job starts (dev_run, host_run; the caller names the device):
 * status cleared, results (nsteps entries) allocated or, for a job run
 * again, emptied. Returns STATUS_OK, or fails the job: out of memory, or
 * no steps. */
enum status_code job_run_begin(struct job *job);

/* Host memory for a data result of len bytes, never NULL (even for 0
 * bytes, so callers may memcpy to it): the next len bytes of out when the
 * job has one (an output region or its input's memory, checked to fit by
 * rpc_jobs.c and job_output_in_place), else malloc'd. Fails the job (and
 * returns its status) when that cannot be. */
enum status_code job_result_alloc(struct job *job, struct step_result *r, size_t len);

/* A job that failed keeps its results array but no result data. */
void job_drop_results(struct job *job);

/* Claims a queued job for state (JOB_STARTED or JOB_EXPIRED): true for
 * the first claim, false when the other came first. Any thread. */
bool job_claim(struct job *job, enum job_queue_state state);

/* Whether job, still queued, is past its queue time at now_ns
 * (monotonic_ns()): then it is claimed as JOB_EXPIRED here and msg says
 * why (job_queue_expired_msg). False when it has time left, has no limit
 * or was claimed already; for a runner or host worker about to start it. */
bool job_queue_late(struct job *job, uint64_t now_ns, char *msg, size_t msglen);

/* The message of a job that the queue-time limit ended at now_ns
 * (monotonic_ns()), for the runner, a host worker and the call's timer
 * alike (status UNAVAILABLE): how long it waited, and which limit. */
void job_queue_expired_msg(const struct job *job, uint64_t now_ns, char *msg, size_t msglen);

/* The weight and priority job->cls asks for, made valid: a weight of 0
 * is JOB_WEIGHT_DEFAULT, one past JOB_WEIGHT_MAX is JOB_WEIGHT_MAX. */
uint32_t job_weight(const struct job *job);
/* The priority job->cls asks for, made valid: out of range is normal. */
enum job_priority job_priority(const struct job *job);

/* Sets status and a printf-style message; returns the status for chaining. */
enum status_code job_fail(struct job *job, enum status_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
