/* SPDX-License-Identifier: MIT */
/* dev_task.h: running tasks (task.h) on a device, for its runner thread.
 *
 * A runner starts a task's pieces with dev_task_step(), which enqueues a
 * piece's commands and returns without waiting, so the copy in of chunk i+1, the
 * kernels of chunk i and the copy out of chunk i-1 are on the device's
 * three queues together (hazard.c orders them by what they read and
 * write). dev_task_finish() waits for one task's commands only.
 * dev_stream.c keeps a streamed job's device state between its tasks.
 */
#ifndef AMPD_DEV_TASK_H
#define AMPD_DEV_TASK_H

#include <stdbool.h>
#include <stdint.h>

#include "dev.h"
#include "task.h"

struct dev_exec;

/* Device bytes t must have reserved before it starts (TASK_JOB, TASK_OPEN;
 * 0 for the others). A task whose steps cannot run on d at all gets a
 * failure status here and needs nothing. */
uint64_t dev_task_memory(struct dev *d, struct task *t);

/* Starts t's next piece on d and sets *more to whether t has pieces left
 * after it. Returns what to wait for, or NULL when the piece is done
 * already. A stream's task is one piece. A unary or region job larger than
 * a piece (dev_piece_wanted: input or a step's output over --chunk-bytes)
 * is many, each bounded device work (dev_piece.c), so the runner can start
 * another task between two; a smaller one runs to the end here, as do
 * CLOSE, failures and tasks of a cancelled job. A job whose call ended
 * stops at its next piece. The runner queues t again after a piece with
 * more to come, admits its memory at the first piece only, and finishes
 * its pieces in the order they started. */
struct dev_exec *dev_task_step(struct dev *d, struct task *t, bool *more);

/* Bytes t's next piece moves and its kernels touch (the scheduler charges
 * a task this, piece by piece): a copy counts its bytes, a kernel the
 * bytes it reads and writes. */
uint64_t dev_task_cost(const struct dev *d, const struct task *t);
/* The cost of a full piece: a chunk copied in, transformed and copied out
 * (the unit the runner bounds what it has in flight with). */
uint64_t dev_task_piece_cost(const struct dev *d);

/* Non-blocking: have x's commands all finished? */
bool dev_task_ready(const struct dev_exec *x);

/* A wake-up for the runner: fn(arg) is called from a driver thread each
 * time one of a task's commands finishes. */
struct dev_notify {
    void (*fn)(void *arg);
    void *arg;
};
/* How many commands x has. */
size_t dev_task_events(const struct dev_exec *x);
/* Registers n on every command of x; returns how many calls are owed
 * (fewer than dev_task_events(x) where registering failed). */
size_t dev_task_notify(struct dev_exec *x, const struct dev_notify *n);

/* n->fn(n->arg) is called between the steps of a copy that holds the
 * calling thread until it is done (a GPU's copy of pageable memory,
 * dev_exec.c), so that the runner may let the batch queued meanwhile have
 * the device first; NULL: none. n must outlive its use; the runner sets
 * it while it runs. */
void dev_task_set_yield(struct dev *d, const struct dev_notify *n);

/* Waits for x's commands (x may be NULL) and frees x; after t's last
 * piece (last), sets t's status and results and frees its device side. */
void dev_task_finish(struct dev *d, struct task *t, struct dev_exec *x, bool last);

/* Small unary jobs run many at a time (dev_batch.c): jobs of one step (a
 * reverse, a transform or a byte histogram) over at most
 * DEV_BATCH_JOB_BYTES of input in memory of the daemon's own; a batch
 * takes at most DEV_BATCH_JOBS of them and DEV_BATCH_BYTES each way. */
#define DEV_BATCH_JOBS 256
#define DEV_BATCH_JOB_BYTES ((size_t)64 << 10)
#define DEV_BATCH_BYTES ((size_t)2 << 20)
struct dev_batch {
    struct task *tasks[DEV_BATCH_JOBS];
    size_t n;
    size_t up, down;   /* bytes the tasks take each way */
};
/* Whether t is a job of a batch's shape (any batch with room takes one). */
bool dev_batch_takes(const struct task *t);
/* Whether t may join b: dev_batch_takes(t), and room left in b. */
bool dev_batch_fits(const struct dev_batch *b, const struct task *t);
void dev_batch_add(struct dev_batch *b, struct task *t);
/* Runs every task of b to the end on d, blocking: each gets its own status
 * and results, as dev_task_step gives a TASK_JOB. Returns false, having
 * run none, when d has no batch buffers (they could not be made): the
 * caller runs them one by one. Uses only the batch queue and kernel, so
 * it may run beside the thread that runs d's other tasks. */
bool dev_batch_run(struct dev *d, struct dev_batch *b);
/* Whether d's batches run on the thread that waits for them, in
 * microseconds (a PoCL CPU device's batch device, PoCL's basic driver):
 * a submitter may run one itself rather than wake another thread. */
bool dev_batch_here(const struct dev *d);

/* A unary job's device buffers at their peak when run whole, counted
 * generously: the input and every step's output alive at once. */
uint64_t dev_job_memory(const struct job *job);

/* Unary and region jobs in pieces: dev_piece.c. */
bool dev_piece_wanted(const struct dev *d, const struct job *job);
/* Device bytes such a job reserves: a ring of chunks for transforms and
 * histograms, its whole buffers when a step needs all of its data. */
uint64_t dev_piece_memory(const struct dev *d, const struct job *job);
uint64_t dev_piece_cost(const struct dev *d, const struct job *job);
uint64_t dev_piece_cost_full(const struct dev *d);
/* The range step s's launches cover over in_len bytes of input,
 * [*base, *base + span): a fill's output, a transform's sub-range, the
 * whole input otherwise. */
uint64_t dev_piece_step_span(const struct step *s, uint64_t in_len, uint64_t *base);
/* One piece of step s over device-resident data *cur: its launches over
 * [base + off, base + off + len) of its span, len at most a chunk. At the
 * step's first piece a reverse's or fill's output (*next, out_len bytes)
 * is made, or a histogram's counts (acc) begun; at its last the counts
 * go to slots, or *next becomes *cur. Shared by unary jobs in pieces and
 * a resident stream's RUN. */
struct dev_buf;
struct op_hist_acc;
enum status_code dev_piece_launch(struct dev_exec *x, const struct step *s, struct dev_buf *cur,
                                  struct dev_buf *next, struct op_hist_acc *acc, uint64_t *slots,
                                  size_t out_len, uint64_t off, size_t len);
/* Starts job's next piece (the first sets up its device side). */
struct dev_exec *dev_piece_step(struct dev *d, struct job *job, bool *more);
/* Waits for one piece and frees x; returns its status. */
enum status_code dev_piece_finish(struct dev_exec *x);
/* After the last piece: histogram results, or no results on failure; frees
 * the device side. Any unary job may pass through (nothing to free). */
void dev_piece_end(struct job *job);

/* Streamed jobs: dev_stream.c. */
uint64_t dev_stream_memory(struct dev *d, struct job *job);
uint64_t dev_stream_cost(const struct task *t);
/* A stream's task; RUN is a piece per step of its launches (*more). */
struct dev_exec *dev_stream_start(struct dev *d, struct task *t, bool *more);
void dev_stream_finish(struct dev *d, struct task *t, struct dev_exec *x);
void dev_stream_close(struct job *job);
/* Frees the device side of every stream still open on d (its runner,
 * stopping: a CLOSE that comes later finds nothing to free, so no other
 * thread ever releases a stream's OpenCL buffers). */
void dev_stream_close_all(struct dev *d);

/* Device memory jobs may reserve on d (admission, runner.c). */
uint64_t dev_memory_capacity(const struct dev *d);

#endif
