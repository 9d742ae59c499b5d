/* SPDX-License-Identifier: MIT */
/* hist_bin.h: which bin a value falls in, for the host and the CPU
 * reference of the tests; the counters' layout and the bin formula are
 * kernels/kernel_abi.h's, which kernels/hist.cl uses too.
 *
 * Whether a value is in [lo, hi) is decided exactly: integers against
 * integer thresholds (x < lo iff x < ceil(lo)), floats against float
 * thresholds (the smallest floats >= lo and >= hi). Only the bin of an
 * in-range value is computed in single precision, since GPUs may lack fast
 * fp64: t = ((float)x - lo_f) * scale_f with lo_f = (float)lo and
 * scale_f = (float)(bins / (hi - lo)) (the division in double, on the
 * host), bin = (uint)t clamped to [0, bins-1]. Subtraction, multiplication
 * and int-to-float conversion are correctly rounded (round to nearest even)
 * in IEEE C and in OpenCL C alike, and neither side may contract them into
 * an fma, so the kernel and the reference agree bit for bit. The clamp
 * absorbs rounding at the range's edges: a value at or above hi is always
 * "above", never in the last bin; NaN is "nan".
 */
#ifndef AMPD_HIST_BIN_H
#define AMPD_HIST_BIN_H

#include <math.h>
#include <stdint.h>

#include "kernel_abi.h"

struct hist_bin {
    uint32_t bins;
    int64_t lo_t, hi_t;   /* integer data: below iff x < lo_t, above iff x >= hi_t */
    float lo_c, hi_c;     /* float data: below iff x < lo_c, above iff x >= hi_c */
    float lo_f, scale_f;  /* bin of an in-range x: ((float)x - lo_f) * scale_f */
    float bins_f;         /* (float)bins, for the upper clamp */
};

/* Derives the thresholds and factors for bins uniform bins over [lo, hi)
 * (finite, lo < hi, bins >= 1). */
void hist_bin_init(struct hist_bin *b, uint32_t bins, double lo, double hi);

static inline uint32_t hist_bin_index(const struct hist_bin *b, float x)
{
    float t = (x - b->lo_f) * b->scale_f;
    return KERNEL_HIST_BIN(t, b->bins_f, b->bins);
}

/* Slot of an integer element (uint32 or int32, widened without loss). */
static inline uint32_t hist_bin_slot_int(const struct hist_bin *b, int64_t x)
{
    if (x < b->lo_t)
        return KERNEL_HIST_SLOT_BELOW(b->bins);
    if (x >= b->hi_t)
        return KERNEL_HIST_SLOT_ABOVE(b->bins);
    return hist_bin_index(b, (float)x);
}

static inline uint32_t hist_bin_slot_float(const struct hist_bin *b, float x)
{
    if (isnan(x))
        return KERNEL_HIST_SLOT_NAN(b->bins);
    if (x < b->lo_c)
        return KERNEL_HIST_SLOT_BELOW(b->bins);
    if (x >= b->hi_c)
        return KERNEL_HIST_SLOT_ABOVE(b->bins);
    return hist_bin_index(b, x);
}

#endif
