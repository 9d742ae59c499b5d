/* runner.h: one thread per device that owns it and runs its jobs in order.
 *
 * The loop thread submits jobs; the runner thread calls dev_run() and then
 * the completion callback, on the runner thread. sched.c turns that into a
 * uv_async wake-up so results are written from the loop thread.
 */
#ifndef AMPD_RUNNER_H
#define AMPD_RUNNER_H

#include <stddef.h>

#include "dev.h"
#include "job.h"

struct runner;

typedef void (*runner_complete_cb)(struct job *job, void *ctx);

/* Starts a thread for d. complete(job, ctx) runs on that thread after each
 * job. Returns NULL on failure. The runner does not own d. */
struct runner *runner_start(struct dev *d, runner_complete_cb complete, void *ctx);

/* Queues job; never blocks on the device. Thread-safe. */
void runner_submit(struct runner *r, struct job *job);

/* Jobs queued or running: the placement load metric. Thread-safe. */
size_t runner_load(struct runner *r);

struct dev *runner_dev(struct runner *r);

/* Finishes the job in hand, completes queued ones with STATUS_CANCELLED,
 * joins the thread and frees r. */
void runner_stop(struct runner *r);

#endif
