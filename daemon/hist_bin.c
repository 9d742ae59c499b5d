/* SPDX-License-Identifier: MIT */
/* hist_bin.c: the host side of the bin definition in hist_bin.h. */
#include "hist_bin.h"

/* Integer thresholds beyond any int32/uint32 value, so clamping them
 * changes no comparison. */
#define HIST_BIN_INT_LIMIT 0x100000000000LL

static int64_t hist_bin_int_threshold(double v)
{
    double c = ceil(v);
    if (c < (double)-HIST_BIN_INT_LIMIT)
        return -HIST_BIN_INT_LIMIT;
    if (c > (double)HIST_BIN_INT_LIMIT)
        return HIST_BIN_INT_LIMIT;
    return (int64_t)c;
}

/* The smallest float >= v: for a float x, x < v iff x < this. */
static float hist_bin_float_threshold(double v)
{
    float f = (float)v;
    if ((double)f < v)
        f = nextafterf(f, INFINITY);
    return f;
}

void hist_bin_init(struct hist_bin *b, uint32_t bins, double lo, double hi)
{
    b->bins = bins ? bins : 1;
    b->lo_t = hist_bin_int_threshold(lo);
    b->hi_t = hist_bin_int_threshold(hi);
    b->lo_c = hist_bin_float_threshold(lo);
    b->hi_c = hist_bin_float_threshold(hi);
    b->lo_f = (float)lo;
    b->scale_f = (float)((double)b->bins / (hi - lo));
    b->bins_f = (float)b->bins;
}
