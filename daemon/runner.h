/* SPDX-License-Identifier: MIT */
/* runner.h: the threads of one device that run its tasks (task.h:
 * unary jobs and the pieces of streamed ones) in order: the runner, which
 * owns the device, and its batch lane, which runs small unary jobs in
 * batches beside it.
 *
 * The loop thread submits tasks; the runner thread starts them on the
 * device, admits their device memory, and calls the completion callback,
 * on its own thread (the batch lane on its), as each finishes. sched.c
 * turns that into a uv_async wake-up so results are written from the
 * loop thread.
 */
#ifndef AMPD_RUNNER_H
#define AMPD_RUNNER_H

#include <stdbool.h>
#include <stddef.h>

#include "dev.h"
#include "job.h"
#include "task.h"

struct runner;

typedef void (*runner_complete_cb)(struct task *t, void *ctx);

/* Starts the threads for d. complete(t, ctx) runs on one of them after
 * each task, in submission order for the tasks of one job. Once one has
 * nothing to do, it polls for spin_ns before it sleeps (0: never).
 * Returns NULL on failure. The runner does not own d. */
struct runner *runner_start(struct dev *d, uint64_t spin_ns, runner_complete_cb complete,
                            void *ctx);

/* Queues t; never blocks on the device. Thread-safe. Returns true when t
 * ran instead, on this thread, and completed (a small job on a device
 * whose batches run here: runner.c, runner_batch_here). */
bool runner_submit(struct runner *r, struct task *t);

/* Jobs queued or running on the device (a stream counts from its OPEN to
 * its CLOSE, idle or not): the placement load metric. Thread-safe. */
size_t runner_load(struct runner *r);
/* The device's jobs and memory now (dev.h), for Status and ListDevices.
 * Thread-safe. */
void runner_dev_load(struct runner *r, struct dev_load *out);

struct dev *runner_dev(struct runner *r);

/* Whether what is in flight leaves no room for another piece (tests: a
 * tiny job's batch must run all the same). Thread-safe. */
bool runner_flight_full(struct runner *r);

/* Asks r to stop without waiting for it: it finishes the tasks in flight
 * and completes queued ones with STATUS_CANCELLED (a CLOSE still frees its
 * stream), as runner_stop() does, so several runners can drain at once. */
void runner_stop_begin(struct runner *r);
/* runner_stop_begin() if not yet asked, then joins the thread and frees r.
 * NULL is a no-op. */
void runner_stop(struct runner *r);

#endif
