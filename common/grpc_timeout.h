/* SPDX-License-Identifier: MIT */
/* grpc_timeout.h: the duration format of gRPC's grpc-timeout header
 * (PROTOCOL-HTTP2: 1 to 8 digits and a unit, H M S m u n), with no I/O.
 *
 * The client writes it for grpc-timeout and amp-max-queue-time; the daemon
 * reads both with the same parser. Used by daemon and client alike.
 */
#ifndef AMP_GRPC_TIMEOUT_H
#define AMP_GRPC_TIMEOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GRPC_TIMEOUT_DIGITS 8                      /* the most digits a value may have */
#define GRPC_TIMEOUT_TEXT (GRPC_TIMEOUT_DIGITS + 2) /* digits, unit and NUL */

/* Parses the len bytes at v into microseconds, rounded up (a nonzero
 * value never becomes 0). False for anything but 1 to 8 digits and one of
 * the six units. */
bool grpc_timeout_parse(const uint8_t *v, size_t len, uint64_t *us);

/* Writes us microseconds in the finest unit whose value fits 8 digits,
 * rounded up so that a bound is never shortened ("250u", "4295m"). */
void grpc_timeout_format(char out[GRPC_TIMEOUT_TEXT], uint64_t us);

#endif
