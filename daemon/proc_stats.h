/* SPDX-License-Identifier: MIT */
/* proc_stats.h: the daemon's own process figures, read from /proc/self
 * for /metrics' process_* series (the names Prometheus' client libraries
 * use, so dashboards made for them work as they are). */
#ifndef AMPD_PROC_STATS_H
#define AMPD_PROC_STATS_H

#include <stdint.h>

struct proc_stats {
    double cpu_seconds;        /* user + system */
    double start_time_s;       /* since the epoch */
    uint64_t resident_bytes;
    uint64_t virtual_bytes;
    uint64_t threads;
    uint64_t open_fds;
    uint64_t max_fds;          /* the soft RLIMIT_NOFILE */
};

/* Reads them now. Returns 0, or -1 when /proc could not be read. */
int proc_stats_read(struct proc_stats *out);

#endif
