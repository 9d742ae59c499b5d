/* grow.h: the one rule by which a growing buffer or array picks its new
 * capacity: double from the current one (from first when it has none)
 * until need fits. Doubling keeps a buffer that grows byte by byte at a
 * constant cost per byte. Used by daemon, client and ampctl alike;
 * header-only. */
#ifndef AMP_GROW_H
#define AMP_GROW_H

#include <stddef.h>
#include <stdint.h>

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

#endif
