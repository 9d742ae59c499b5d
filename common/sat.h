/* SPDX-License-Identifier: MIT */
/* sat.h: size arithmetic that cannot wrap.
 *
 * Every byte count the daemon adds or multiplies from client-given numbers
 * (lengths, element counts, bins) goes through these: a result past
 * UINT64_MAX saturates there, and since no limit is that large, a
 * saturated estimate is refused by the same check that refuses a merely
 * large one. Used by daemon and client alike; header-only.
 */
#ifndef AMP_SAT_H
#define AMP_SAT_H

#include <stdint.h>

static inline uint64_t sat_add_u64(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

static inline uint64_t sat_mul_u64(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

#endif
