/* SPDX-License-Identifier: MIT */
/* stage_latency.h: where a unary job call's time goes, as latency histograms, and
 * how long Stream calls take.
 *
 * A call is stamped as it passes each stage (rpc.c, sched.c, the runner's
 * dev_task.c and the host path): its request arriving whole and decoded,
 * its job waiting for a runner or host worker, running, its completion
 * reaching the loop again, and its reply leaving. When the call closes,
 * each stage's time goes into that stage's histogram of power-of-two
 * microsecond buckets, daemon-wide (every I/O loop's calls), with atomic
 * counters (relaxed: totals, no order between threads). Status reports
 * them, so the next slowdown is found by reading them, not by guessing.
 */
#ifndef AMPD_STAGE_LATENCY_H
#define AMPD_STAGE_LATENCY_H

#include <stdatomic.h>
#include <stdint.h>

enum stage {
    STAGE_REQUEST,  /* headers to the whole request decoded (reading, decoding) */
    STAGE_QUEUE,    /* job submitted to a runner or host worker taking it */
    STAGE_RUN,      /* the job run (device or host) */
    STAGE_DELIVER,  /* its completion back on the call's loop */
    STAGE_REPLY,    /* the reply encoded and written, the call closed */
    STAGE_TOTAL,    /* headers to close */
    STAGE_STREAM,   /* a Stream call that succeeded: headers to close (not in TOTAL) */
    STAGE_LOOP_TURN,/* not a call's: an I/O loop's turn, its wait for events ending to the
                     * next (io_loop.c), which every call on that loop waits behind */
    STAGE_COUNT
};

/* Bucket i holds times in [2^(i-1), 2^i) us (bucket 0: under 1 us); the
 * last holds everything longer. */
#define STAGE_BUCKETS 24

struct stage_latency {
    atomic_uint_least64_t calls[STAGE_COUNT];
    atomic_uint_least64_t sum_us[STAGE_COUNT];
    atomic_uint_least64_t buckets[STAGE_COUNT][STAGE_BUCKETS];
};

/* The bucket a time of us microseconds falls in. */
unsigned stage_latency_bucket(uint64_t us);

/* Nanoseconds on CLOCK_MONOTONIC. */
uint64_t stage_latency_now_ns(void);

/* The stage's name in Status ("request", "queue", ...). */
const char *stage_latency_name(enum stage st);

/* Counts one call's time in st: to - from nanoseconds (0 if to < from).
 * s may be NULL (not counted). */
void stage_latency_record(struct stage_latency *s, enum stage st, uint64_t from, uint64_t to);

/* Adds n times of stage st, summing sum_us, buckets[i] of them in bucket
 * i: a histogram counted apart, on one thread, added at once. */
void stage_latency_add(struct stage_latency *s, enum stage st, uint64_t n, uint64_t sum_us,
                       const uint32_t buckets[STAGE_BUCKETS]);

#endif
