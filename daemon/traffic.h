/* SPDX-License-Identifier: MIT */
/* traffic.h: what clients sent and got, daemon-wide: calls answered by
 * method and status, and bytes read from and written to their sockets.
 *
 * conn.c reports each answered call (h2.h's answered handler) and each
 * read and write; every I/O loop does at once, so the counts are atomics
 * (relaxed: totals, no order between threads), read by the metrics
 * listener's thread (metrics.c). Each answered call that was refused or
 * failed is also logged here, one line at the level traffic_log_level()
 * gives its status (log.h's per-call rate limit applies).
 */
#ifndef AMPD_TRAFFIC_H
#define AMPD_TRAFFIC_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "log.h"
#include "status.h"

struct traffic {
    size_t nmethods;   /* rpc.c's methods, and one more last for paths that are none */
    atomic_uint_least64_t (*calls)[STATUS_CODE_COUNT]; /* calls[method][code], nmethods rows */
    atomic_uint_least64_t bytes_in, bytes_out;
};

/* Sizes t for rpc.c's method table. Returns 0, or -1 out of memory. */
int traffic_init(struct traffic *t);
void traffic_destroy(struct traffic *t);

/* The method row i counts: "amp.v1.Amp/Reverse" (its path without the
 * leading slash), or "unknown" for the last row. */
const char *traffic_method_name(const struct traffic *t, size_t i);

/* One call to path answered with code and msg; peer says whose (conn.c's
 * "uid N" or "address A"). A NULL t counts nothing but still logs. */
void traffic_answered(struct traffic *t, const char *path, enum status_code code, const char *msg,
                      const char *peer);


/* n bytes read from, or handed to, a client's socket (TLS included). */
void traffic_read(struct traffic *t, uint64_t n);
void traffic_wrote(struct traffic *t, uint64_t n);

#endif
