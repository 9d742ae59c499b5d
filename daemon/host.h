/* SPDX-License-Identifier: MIT */
/* host.h: the host path: jobs smaller than a device launch costs run on
 * the daemon's own CPU worker threads.
 *
 * A 16-byte Reverse through the GPU costs its queue, a launch, a device
 * round trip and a completion wake-up (about 300 us on the H100 host) for
 * nanoseconds of work. When the caller leaves the device to the daemon and
 * a job's bytes are at most --host-max-bytes, sched.c hands it to this pool
 * instead of a runner: a worker checks it as the default device would
 * (dev_check_steps: a job the device would refuse is refused the same way),
 * runs its steps with host_step.c and completes it like a runner does
 * (sched's complete callback, onto the loop that submitted it). The reply
 * names the device "host". A caller that names a device always gets it.
 * Workers are never an I/O loop's thread; but a job that would find every
 * worker idle runs on its submitter's thread, the I/O loop
 * (host_pool_run_here), as a CPU device's small job does (runner.c).
 */
#ifndef AMPD_HOST_H
#define AMPD_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dev;
struct job;
struct task;
struct host_pool;

/* What the reply's device field says for a job run here. */
#define HOST_DEVICE_NAME "host"

/* True when every byte the job reads or writes fits in max_bytes (0: the
 * host path is off). */
bool host_job_fits(const struct job *job, uint64_t max_bytes);

/* Starts threads workers that run TASK_JOB tasks (job's steps on the
 * worker's thread, after check's validation; results, status and device
 * filled as dev_run does) against
 * check and hand each to complete(t, ctx). A worker that finished a job
 * polls the queue for spin_ns before it sleeps (0: never). NULL on
 * failure. */
struct host_pool *host_pool_start(size_t threads, uint64_t spin_ns, struct dev *check,
                                  void (*complete)(struct task *t, void *ctx), void *ctx);

/* Queues t (a TASK_JOB); any thread. */
void host_pool_submit(struct host_pool *h, struct task *t);

/* Runs t (a TASK_JOB) on this thread, the submitter's, when no other job
 * is queued or running, so that it overtakes nobody and holds its loop
 * for its own run only: a hand-over to a worker costs two thread
 * wake-ups (a 16 B call on 2 cores: ~30 us against ~10), or where
 * polling threads outnumber the CPUs, the wait for one. Completes it
 * as a worker would (complete(t, ctx)). Returns false, having done
 * nothing, when t is to be submitted. */
bool host_pool_run_here(struct host_pool *h, struct task *t);

/* Runs what is queued, then stops and frees the workers. NULL is a no-op. */
void host_pool_stop(struct host_pool *h);

#endif
