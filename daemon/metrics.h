/* SPDX-License-Identifier: MIT */
/* metrics.h: Prometheus metrics over HTTP (--metrics-listen), off by default.
 *
 * libmicrohttpd serves GET /metrics on its own thread, in the text
 * exposition format 0.0.4; anything else is 404 (405 for another method).
 * A scrape reads the daemon's counters where they live, each of which is
 * an atomic or taken under its own lock, so it never waits on an I/O loop:
 * calls and bytes (traffic.h), stage latencies (stage_latency.h), jobs and devices
 * (sched.h), connections (conn_limit.h), held bytes (budget.h),
 * regions (region.h) and calls per token (auth.h). The listener is a loopback address unless
 * --metrics-allow-remote is on: the numbers say who uses the daemon how.
 */
#ifndef AMPD_METRICS_H
#define AMPD_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct auth;
struct budget;
struct conn_limit;
struct region_set;
struct sched;
struct stage_latency;
struct traffic;

/* What a scrape reads; all of it must outlive metrics_stop(). */
struct metrics_sources {
    struct traffic *traffic;
    const struct stage_latency *stages;
    struct sched *sched;            /* NULL: no job or device metrics */
    struct conn_limit *conn_limit;
    const atomic_uint *loop_conns;  /* connections on each I/O loop, nloops of them */
    size_t nloops;
    struct budget *budget;
    struct region_set *regions;     /* NULL: --regions off */
    struct auth *auth;              /* NULL: no --token-file */
    uint64_t start_ms;              /* rpc_now_ms() at startup */
};

struct metrics;

/* Binds addr (a --metrics-listen HOST:PORT) and starts serving; a host
 * that is not loopback is refused unless allow_remote. Returns 0, or -1
 * with a reason naming the address in err. */
int metrics_start(const char *addr, bool allow_remote, const struct metrics_sources *src,
                  struct metrics **out, char *err, size_t errlen);

/* The address really bound ("127.0.0.1:41234": port 0 picks one). */
const char *metrics_address(const struct metrics *m);

/* Stops the thread (a scrape in progress finishes) and frees m. NULL is a
 * no-op. */
void metrics_stop(struct metrics *m);

/* The scheduler scrapes read from now on (started with none: ampd listens
 * before its devices open, and the job and device metrics appear once
 * they are). Any thread; m may be NULL. sched must outlive metrics_stop(). */
void metrics_set_sched(struct metrics *m, struct sched *sched);

/* What /ready answers from now on: 200 when ready (the daemon serves
 * jobs: health SERVING), else 503 (starting, or draining). Any thread; m
 * may be NULL. */
void metrics_set_ready(struct metrics *m, bool ready);

/* The page a scrape gets, NUL-terminated, malloc'd (the caller frees it);
 * NULL when out of memory. For tests, and the listener. */
char *metrics_render(const struct metrics_sources *src, size_t *len);

#endif
