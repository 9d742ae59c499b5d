/* SPDX-License-Identifier: MIT */
/* fuzz_backend.h: the in-memory backend fuzz_conn puts under the rpc layer.
 *
 * In the daemon, rpc_*.c hand jobs and stream tasks to the scheduler
 * (sched.c), which queues them on device runner threads and delivers their
 * completions on the loop. Here the same interface (sched.h,
 * staging.h) is implemented without threads, OpenCL or a loop:
 *   fuzz_sched.c   sched.h: placement over two fake devices, the
 *                  daemon-wide limits, one FIFO of queued tasks that the
 *                  harness completes when its input says so;
 *   fuzz_staging.c staging.h: malloc'd staging buffers; waiters are woken
 *                  by fuzz_staging_idle(), the harness's stand-in for the
 *                  loop turn that wakes them in the daemon;
 *   fuzz_device.c  what a runner does with a task, on the CPU
 *                  (tests/support/host_step.c computes the steps).
 * The counters below are what fuzz_conn checks once a connection is gone.
 */
#ifndef AMP_FUZZ_BACKEND_H
#define AMP_FUZZ_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "sched.h"
#include "staging.h"
#include "task.h"

struct fuzz_sched_limits {
    uint32_t max_jobs;          /* as --max-jobs */
    size_t staging_count;       /* staging buffers per device */
    size_t chunk_bytes;         /* each of them */
    uint64_t device_memory;     /* what one fake device admits per job or stream */
};

/* Life counts, for the invariants: each pair must match once quiet. */
struct fuzz_sched_counts {
    uint64_t jobs_submitted, jobs_done;    /* unary jobs accepted / delivered */
    uint64_t streams_begun, streams_ended; /* sched_stream_begin / _end */
    uint64_t opens, closes;                /* TASK_OPEN / TASK_CLOSE submitted */
    uint64_t tasks_run;                    /* every task completed */
};

/* A scheduler port (the daemon's view of it from one loop) over two fake devices ("0: fuzz gpu", "1: fuzz cpu"), each
 * with its own staging pool. Returns NULL when out of memory. */
struct sched_port *fuzz_sched_new(const struct fuzz_sched_limits *limits);

/* Frees s; traps unless fuzz_sched_check_quiet() would pass. */
void fuzz_sched_free(struct sched_port *s);

/* Completes up to n queued tasks, oldest first (the order every runner
 * keeps), delivering each to its done() as the loop would. With fail, the
 * first of them fails as a device error would. Tasks submitted by those
 * completions join the queue's tail. Returns how many were completed. */
size_t fuzz_sched_complete(struct sched_port *s, size_t n, bool fail);

/* Tasks queued and not yet completed. */
size_t fuzz_sched_queued(const struct sched_port *s);

/* The loop's idle turn: wakes the staging waiters that free buffers can
 * serve. Returns whether any was woken. */
bool fuzz_sched_idle(struct sched_port *s);

const struct fuzz_sched_counts *fuzz_sched_counts(const struct sched_port *s);

/* Traps unless nothing is queued or in flight, every job and stream that
 * began has ended, every OPEN had its CLOSE and every staging buffer is in
 * its pool. */
void fuzz_sched_check_quiet(const struct sched_port *s);

/* staging.h's port over malloc'd buffers (fuzz_staging.c): each port is a
 * pool of its own, as the one loop of fuzz_conn sees it. Returns 0, or -1
 * with a reason in err. */
int fuzz_staging_new(size_t count, size_t size, struct staging_port **out, char *err,
                     size_t errlen);
/* Traps unless every buffer is back. NULL is a no-op. */
void fuzz_staging_free(struct staging_port *p);
bool fuzz_staging_idle(struct staging_port *p);

/* Runs t as a device runner would (fuzz_device.c): sets t->status, msg and
 * out_len, a unary job's results, a stream's device side. device_memory is
 * what the device admits for one job or stream; fail makes it a device
 * error. Does not call t->done. */
void fuzz_device_run(struct task *t, uint64_t device_memory, bool fail);

/* An invariant did not hold: says which on stderr and stops, so that
 * libFuzzer saves the input. */
__attribute__((noreturn)) static inline void fuzz_backend_trap(const char *what)
{
    fprintf(stderr, "fuzz invariant failed: %s\n", what);
    abort();
}

#endif
