/* SPDX-License-Identifier: MIT */
/* monotonic.c: see monotonic.h. */
#include "monotonic.h"

#include <time.h>

uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t monotonic_ms(void)
{
    return monotonic_ns() / 1000000u;
}
