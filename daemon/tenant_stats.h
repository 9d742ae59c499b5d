/* SPDX-License-Identifier: MIT */
/* tenant_stats.h: queue time and device time per client and priority.
 *
 * Where a job's time goes, told apart by whose job it was (its class's
 * client, "token alice", "uid 1000") and the priority it ran at: time
 * queued (submitted to started: a unary job's runner or host worker
 * taking it, a stream's OPEN starting) and device time (started to done;
 * a stream's, the time any of its tasks was on the device). sched.c
 * records each job as its completion reaches the loop, and each stream
 * as rpc_stream.c ends it; metrics_render.c and Status (rpc_info.c)
 * read a snapshot. Histograms use stage_latency.h's power-of-two microsecond
 * buckets, so every latency figure the daemon reports reads the same
 * way.
 *
 * The number of clients is bounded: the first TENANT_STATS_CLIENTS
 * distinct clients get their own rows, later ones are counted together
 * as TENANT_STATS_OTHER. A client is anyone who can connect (an address
 * over TCP without tokens), so an unbounded label would let clients grow
 * the daemon's memory and every scrape without limit; Prometheus also
 * wants a series set that does not grow with traffic.
 */
#ifndef AMPD_TENANT_STATS_H
#define AMPD_TENANT_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"
#include "stage_latency.h"

/* Distinct clients with rows of their own; the rest share "other". */
#define TENANT_STATS_CLIENTS 32
/* The row of every client past the first TENANT_STATS_CLIENTS. */
#define TENANT_STATS_OTHER "other"
/* The row of jobs without a client (job_class's client ""). */
#define TENANT_STATS_NONE "none"
/* Rows a snapshot can hold: every client's, "other" and "none". */
#define TENANT_STATS_ROWS (TENANT_STATS_CLIENTS + 2)

/* One histogram: count jobs, their summed microseconds, and buckets[i]
 * the jobs in [2^(i-1), 2^i) us (stage_latency.h's buckets). */
struct tenant_hist {
    uint64_t count;
    uint64_t sum_us;
    uint64_t buckets[STAGE_BUCKETS];
};

/* One client's figures at each priority. */
struct tenant_row {
    char client[JOB_CLIENT_MAX];             /* its name, TENANT_STATS_OTHER or _NONE */
    struct tenant_hist queue[JOB_PRIORITIES]; /* by enum job_priority */
    struct tenant_hist device[JOB_PRIORITIES];
};

struct tenant_stats;

/* NULL when out of memory. */
struct tenant_stats *tenant_stats_new(void);
/* NULL is a no-op. */
void tenant_stats_free(struct tenant_stats *ts);

/* Counts one job of client (job_class's client; "" for none) at prio: it
 * waited queue_ns and ran device_ns. Any thread; a short lock. ts may be
 * NULL (not counted). */
void tenant_stats_record(struct tenant_stats *ts, const char *client, enum job_priority prio,
                         uint64_t queue_ns, uint64_t device_ns);

/* Copies every row that counted a job into rows (room for
 * TENANT_STATS_ROWS), first-come order, "other" and "none" last; returns
 * how many. Any thread. */
size_t tenant_stats_snapshot(struct tenant_stats *ts, struct tenant_row *rows);

#endif
