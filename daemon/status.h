/* SPDX-License-Identifier: MIT */
/* status.h: gRPC status codes, the one error vocabulary of the daemon.
 *
 * Every layer that can refuse a request (decoding, validation, the device
 * runner) reports one of these plus a human message; the gRPC layer turns
 * them into grpc-status / grpc-message trailers. One list
 * (common/grpc_status.h, shared with the client) makes the enum and the
 * names, so a code and its name cannot drift.
 */
#ifndef AMPD_STATUS_H
#define AMPD_STATUS_H

#include <stdatomic.h>
#include <stdint.h>

#include "grpc_status.h"

enum status_code {
#define STATUS_ENUM(name, value) STATUS_##name = value,
    GRPC_STATUS_MAP(STATUS_ENUM)
#undef STATUS_ENUM
    STATUS_CODE_COUNT
};

/* Longest message kept with a status; longer ones are truncated. */
#define STATUS_MSG_MAX 256

/* "RESOURCE_EXHAUSTED" for STATUS_RESOURCE_EXHAUSTED; "?" for a value
 * outside the list. */
const char *status_name(enum status_code code);

/* Calls answered, by status (Status's calls_by_status): one set for the
 * whole daemon, counted by every I/O loop at once, so each count is an
 * atomic (relaxed: totals, not an order between threads). Zeroed memory is
 * a set of zero counts. */
struct status_counts {
    atomic_uint_least64_t by_code[STATUS_CODE_COUNT];
};

/* One more call answered with code; a code outside the list is not
 * counted. NULL counts nothing. */
void status_count(struct status_counts *c, enum status_code code);

/* Calls answered with code so far. */
uint64_t status_counted(const struct status_counts *c, enum status_code code);

#endif
