/* SPDX-License-Identifier: MIT */
/* hist_bin.h: which bin a value falls in, defined once for the host, the
 * CPU reference of the tests and (mirrored line by line) kernels/hist.cl.
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

/* Slots beyond the bins: the counters of out-of-range values. */
#define HIST_SLOT_BELOW(bins) (bins)
#define HIST_SLOT_ABOVE(bins) ((bins) + 1)
#define HIST_SLOT_NAN(bins) ((bins) + 2)

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
    uint32_t i = t > 0.0f ? (t < b->bins_f ? (uint32_t)t : b->bins - 1) : 0;
    return i < b->bins - 1 ? i : b->bins - 1;
}

/* Slot of an integer element (uint32 or int32, widened without loss). */
static inline uint32_t hist_bin_slot_int(const struct hist_bin *b, int64_t x)
{
    if (x < b->lo_t)
        return HIST_SLOT_BELOW(b->bins);
    if (x >= b->hi_t)
        return HIST_SLOT_ABOVE(b->bins);
    return hist_bin_index(b, (float)x);
}

static inline uint32_t hist_bin_slot_float(const struct hist_bin *b, float x)
{
    if (isnan(x))
        return HIST_SLOT_NAN(b->bins);
    if (x < b->lo_c)
        return HIST_SLOT_BELOW(b->bins);
    if (x >= b->hi_c)
        return HIST_SLOT_ABOVE(b->bins);
    return hist_bin_index(b, x);
}

#endif
