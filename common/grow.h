/* SPDX-License-Identifier: MIT */
/* grow.h: the one rule by which a growing buffer or array picks its new
 * capacity: double from the current one (from first when it has none)
 * until need fits. Doubling keeps a buffer that grows byte by byte at a
 * constant cost per byte. grow_bytes() applies it to a byte buffer. Used
 * by daemon, client and ampctl alike; header-only. */
#ifndef AMP_GROW_H
#define AMP_GROW_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* The capacity to grow cap to so that need fits (cap itself when it
 * does); need when doubling would wrap. first > 0. */
static inline size_t grow_cap(size_t cap, size_t first, size_t need)
{
    size_t c = cap ? cap : first;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return need;
        c *= 2;
    }
    return c;
}

/* Grows the byte buffer *buf of *cap bytes by that rule so that need
 * bytes fit (nothing when they do). Returns 0, or -1 out of memory with
 * *buf and *cap as they were. */
static inline int grow_bytes(uint8_t **buf, size_t *cap, size_t first, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t c = grow_cap(*cap, first, need);
    uint8_t *b = realloc(*buf, c);
    if (!b)
        return -1;
    *buf = b;
    *cap = c;
    return 0;
}

#endif
