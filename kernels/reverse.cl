/* SPDX-License-Identifier: MIT */
/* reverse.cl: dst[i] = src[n-1-i] for any n, out of place.
 *
 * Both kernels write 16-byte output words at aligned addresses. Output word
 * w is the reversal of the 16 source bytes ending at n-16w; with r = n % 16
 * those straddle the aligned source words a = nw-1-w and a+1, both loaded
 * whole (neighbouring work-items share them, so each is fetched from DRAM
 * once). Only two places need care: the r trailing output bytes (tail) and,
 * when r != 0, word 0, whose second source word would run past n; both use
 * byte accesses, by work-item 0. Nothing reads or writes outside [0, n).
 * Bound: memory bandwidth (n bytes read, n written).
 *
 * Each kernel writes the output words [wfirst, wend) only, so that a long
 * reverse runs as several bounded launches (op_reverse_range); the launch
 * whose range starts at word 0 also writes the edges.
 */

#ifndef __ENDIAN_LITTLE__
#error "reverse_bytes assembles words from little-endian 32-bit lanes"
#endif

/* Output words per work-item and pass in reverse_bytes: their loads are
 * all issued before the first store, so each work-item keeps this many
 * 32-byte reads in flight (one in flight left the H100 at 0.79 of copy). */
#define REV_UNROLL 4

/* The 16 window bytes starting r bytes into a (then b), reversed. q = r / 4
 * and sh = 8 * (r % 4) are the same for every work-item, so the selects
 * below never diverge; funnel shifts and a constant byte swizzle replace a
 * shuffle2 with a run-time mask, which compilers may lower to byte-wise
 * indexing through memory. */
static inline uint4 rev_window(uint4 a, uint4 b, uint q, uint sh)
{
    const uint4 p = q == 0 ? a
                  : q == 1 ? (uint4)(a.s123, b.s0)
                  : q == 2 ? (uint4)(a.s23, b.s01)
                           : (uint4)(a.s3, b.s012);
    const uint e = q == 0 ? b.s0 : q == 1 ? b.s1 : q == 2 ? b.s2 : b.s3;
    const uint4 nx = (uint4)(p.s123, e);
    /* (nx << 1) << (31 - sh) is nx << (32 - sh), and 0 when sh == 0
     * (OpenCL takes shift counts modulo the width, so << 32 would not be). */
    const uint4 y = (p >> sh) | ((nx << 1) << (31 - sh));
    return (uint4)(as_uint(as_uchar4(y.s3).s3210), as_uint(as_uchar4(y.s2).s3210),
                   as_uint(as_uchar4(y.s1).s3210), as_uint(as_uchar4(y.s0).s3210));
}

/* Word 0 when r != 0 and the r-byte tail, byte by byte. */
static inline void rev_edges(__global const uchar *src, __global uchar *dst, ulong n)
{
    const ulong nw = n / KERNEL_WORD;
    const uint r = (uint)(n % KERNEL_WORD);
    if (r != 0 && nw != 0)
        for (uint j = 0; j < KERNEL_WORD; j++)
            dst[j] = src[n - 1 - j];
    for (uint j = 0; j < r; j++)
        dst[nw * KERNEL_WORD + j] = src[r - 1 - j];
}

#if AMP_ALL_VARIANTS || REVERSE_GPU == 1
/* GPUs: grid-stride, REV_UNROLL words per work-item and pass, word
 * w + k * global_size for k < REV_UNROLL, so every load and store of a
 * wavefront is one coalesced run. */
__kernel void reverse_bytes(__global const uchar *restrict src, __global uchar *restrict dst,
                            ulong n, ulong wfirst, ulong wend)
{
    const ulong nw = min(n / KERNEL_WORD, wend);
    const uint r = (uint)(n % KERNEL_WORD);
    const uint q = r / 4, sh = 8 * (r % 4);
    const ulong g = get_global_size(0);
    /* Word 0 is an edge when r != 0. */
    const ulong w_lo = max(wfirst, (ulong)(r && wfirst == 0 ? 1 : 0));
    const ulong na = n / KERNEL_WORD;   /* aligned source words */
    __global const uint4 *s4 = (__global const uint4 *)src;
    __global uint4 *d4 = (__global uint4 *)dst;

    for (ulong w = w_lo + get_global_id(0); w < nw; w += REV_UNROLL * g) {
        uint4 a[REV_UNROLL], b[REV_UNROLL];
#pragma unroll
        for (uint k = 0; k < REV_UNROLL; k++) {
            const ulong wk = w + k * g;
            if (wk < nw) {
                a[k] = s4[na - 1 - wk];
                /* For r == 0 the window is a alone; b is never used. */
                b[k] = r ? s4[na - wk] : a[k];
            }
        }
#pragma unroll
        for (uint k = 0; k < REV_UNROLL; k++) {
            const ulong wk = w + k * g;
            if (wk < nw)
                d4[wk] = rev_window(a[k], b[k], q, sh);
        }
    }
    if (get_global_id(0) == 0 && wfirst == 0)
        rev_edges(src, dst, n);
}
#endif

#if AMP_ALL_VARIANTS || REVERSE_GPU == 2
/* GPUs, second kernel (the device's variants pick one, dev_internal.h):
 * per pass a work-group writes a tile of KERNEL_REVERSE_V2_WORDS * local_size
 * consecutive output words, work-item i words tile + i + k * local_size,
 * groups striding over tiles; twice reverse_bytes' words in flight, a
 * group's reads and writes each within one 32 KiB stretch instead of four
 * runs a grid apart, and one group per tile (op_tile_grid). */

__kernel void reverse_bytes_v2(__global const uchar *restrict src,
                               __global uchar *restrict dst, ulong n, ulong wfirst, ulong wend)
{
    const ulong nw = min(n / KERNEL_WORD, wend);
    const uint r = (uint)(n % KERNEL_WORD);
    const uint q = r / 4, sh = 8 * (r % 4);
    const ulong lsz = get_local_size(0), tile = KERNEL_REVERSE_V2_WORDS * lsz;
    const ulong stride = get_num_groups(0) * tile;
    /* Word 0 is an edge when r != 0. */
    const ulong w_lo = max(wfirst, (ulong)(r && wfirst == 0 ? 1 : 0));
    const ulong na = n / KERNEL_WORD;   /* aligned source words */
    __global const uint4 *s4 = (__global const uint4 *)src;
    __global uint4 *d4 = (__global uint4 *)dst;

    for (ulong t0 = w_lo + get_group_id(0) * tile; t0 < nw; t0 += stride) {
        const ulong w = t0 + get_local_id(0);
        uint4 a[KERNEL_REVERSE_V2_WORDS], b[KERNEL_REVERSE_V2_WORDS];
#pragma unroll
        for (uint k = 0; k < KERNEL_REVERSE_V2_WORDS; k++) {
            const ulong wk = w + k * lsz;
            if (wk < nw) {
                a[k] = s4[na - 1 - wk];
                b[k] = r ? s4[na - wk] : a[k];
            }
        }
#pragma unroll
        for (uint k = 0; k < KERNEL_REVERSE_V2_WORDS; k++) {
            const ulong wk = w + k * lsz;
            if (wk < nw)
                d4[wk] = rev_window(a[k], b[k], q, sh);
        }
    }
    if (get_global_id(0) == 0 && wfirst == 0)
        rev_edges(src, dst, n);
}
#endif

/* CPU devices: one contiguous run of chunk words per work-item (a
 * work-item is a loop on one core, where a stride would defeat the caches
 * and prefetchers); shuffle2 vectorises well there. */
__kernel void reverse_bytes_chunk(__global const uchar *restrict src,
                                  __global uchar *restrict dst, ulong n, ulong chunk,
                                  ulong wfirst, ulong wend)
{
    const ulong nw = n / KERNEL_WORD;
    const uint r = (uint)(n % KERNEL_WORD);
    const ulong begin = wfirst + get_global_id(0) * chunk;
    const ulong end = min(min(nw, wend), begin + chunk);
    const uchar16 rev = (uchar16)(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const uchar16 mask = rev + (uchar16)((uchar)r);
    __global const uchar16 *s16 = (__global const uchar16 *)src;
    __global uchar16 *d16 = (__global uchar16 *)dst;

    for (ulong w = max(begin, (ulong)(r ? 1 : 0)); w < end; w++) {
        const ulong a = nw - 1 - w;
        d16[w] = r == 0 ? shuffle(s16[a], rev) : shuffle2(s16[a], s16[a + 1], mask);
    }
    if (get_global_id(0) == 0 && wfirst == 0)
        rev_edges(src, dst, n);
}
