/* SPDX-License-Identifier: MIT */
/* duration_text.h: durations as people write them ("500ms", "2s", "1.5m"),
 * read from the daemon's options and ampctl's, one parser for both. */
#ifndef AMP_DURATION_TEXT_H
#define AMP_DURATION_TEXT_H

#include <stdint.h>

/* Reads text, the whole of it, as a decimal number (digits and at most one
 * point: no sign or exponent) and an optional unit: us, ms, s, m or h. A
 * bare number is in units of bare_us microseconds (0: a unit is required).
 * Into *us, rounded up to a whole microsecond (0.1us is a time, not none).
 * Returns 0, or -1 (*us unchanged) for anything else or past max_us. */
int duration_text_parse(const char *text, uint64_t bare_us, uint64_t max_us, uint64_t *us);

#endif
