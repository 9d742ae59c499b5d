/* SPDX-License-Identifier: MIT */
/* monotonic.h: the one clock that times things (CLOCK_MONOTONIC: never
 * steps with the wall clock), for the daemon, the library and ampctl. */
#ifndef AMP_MONOTONIC_H
#define AMP_MONOTONIC_H

#include <stdint.h>

uint64_t monotonic_ns(void);
uint64_t monotonic_ms(void);

#endif
