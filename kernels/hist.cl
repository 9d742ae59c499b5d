/* SPDX-License-Identifier: MIT */
/* hist.cl: histograms. 256 bins over bytes; N uniform bins over
 * uint32/int32/float32 in [lo, hi), plus below/above/nan counters.
 *
 * Counting happens in 32-bit counters (the host splits launches so that no
 * counter can overflow) into per-row partial counts; hist_reduce adds the
 * rows into the 64-bit result. Three shapes, chosen by the host per device:
 *  - *_local (GPUs): grid-stride over 16-byte words (coalesced), counts in
 *    several interleaved copies of the histogram in __local memory
 *    (work-item i uses copy i % copies, so lanes hitting one bin hit
 *    different banks), one partial row per work-group. For 256 bins there
 *    are other GPU kernels: hist256_bytes (8-bit counters per work-item,
 *    no atomics while counting) and hist256_inc (hist256_local without
 *    the run test: one atomic per byte); the device's variants choose
 *    (daemon/dev_internal.h).
 *    N bins in local memory have histn_local (runs, as above) and
 *    histn_inc (one atomic increment per element, slots four at a time).
 *  - histn_global (GPUs, bins too many for local memory): global atomics
 *    into one row.
 *  - *_private / histn_rows (CPU devices): one work-item per contiguous
 *    chunk counting without atomics into its own private or global row;
 *    local atomics are slow there and a chunk streams through the cache.
 * The atomic shapes count runs of equal values in a register and add a run
 * at once, so all-equal (adversarial) input costs one atomic per work-item
 * instead of serialising on one counter. histn_rows computes 16 bins at
 * once as one SIMD vector, a block of 256 into a private buffer, and
 * counts the previous block from it meanwhile; a block of one slot is
 * added at once (see there). hist256_private adds a 64-byte block of one
 * repeated byte at once and counts other blocks into four
 * sub-histograms (see there).
 * The bin of a value is kernel_abi.h's KERNEL_HIST_BIN, as on the host
 * (daemon/hist_bin.h says why they agree).
 * Bound: memory bandwidth on random data (each element read once); local
 * atomic throughput on GPUs for many distinct values per word; on CPU
 * devices the counter increments (a load and a store each, plus the
 * index's load in histn_rows: about 1 cycle per increment and core).
 */
#pragma OPENCL FP_CONTRACT OFF

#ifndef HIST_UNROLL          /* a knob: bench_kernels --build-options -DHIST_UNROLL=8 */
#define HIST_UNROLL 4        /* 16-byte words (4-element vectors) in flight per work-item on GPUs */
#endif

/* Adds one value to a run; flushes the previous run with FLUSH(slot, n). */
#define RUN_ADD(x, FLUSH)                                                       \
    do {                                                                        \
        const uint x_ = (x);                                                    \
        if (x_ == last) {                                                       \
            run++;                                                              \
        } else {                                                                \
            if (run)                                                            \
                FLUSH(last, run);                                               \
            last = x_;                                                          \
            run = 1;                                                            \
        }                                                                       \
    } while (0)

#define RUN_WORD(wd, FLUSH)                                                     \
    do {                                                                        \
        RUN_ADD((wd) & 0xffu, FLUSH);                                           \
        RUN_ADD(((wd) >> 8) & 0xffu, FLUSH);                                    \
        RUN_ADD(((wd) >> 16) & 0xffu, FLUSH);                                   \
        RUN_ADD((wd) >> 24, FLUSH);                                             \
    } while (0)

#define RUN_UINT4(v, FLUSH)                                                     \
    do {                                                                        \
        RUN_WORD((v).s0, FLUSH);                                                \
        RUN_WORD((v).s1, FLUSH);                                                \
        RUN_WORD((v).s2, FLUSH);                                                \
        RUN_WORD((v).s3, FLUSH);                                                \
    } while (0)

/* ---- 256 bins over bytes ------------------------------------------------ */

#define FLUSH_LOCAL256(s, n) atomic_add(&h[(s) * KERNEL_HIST256_COPIES + copy], (n))

/* row[b] = the sum of bin b's copies (h[b * 32 + c]). Each work-item
 * starts at a different copy: in the same order for all, the 32 lanes of a
 * warp read one bank at a time, a 32-way conflict that cost every group
 * about 25 us at the end of the H100's 1 GiB histogram (10% of it). */
static inline void hist256_copies_out(__local const uint *h, uint lid, uint lsz,
                                      __global uint *row)
{
    for (uint b = lid; b < 256; b += lsz) {
        uint s = 0;
        for (uint c = 0; c < KERNEL_HIST256_COPIES; c++)
            s += h[b * KERNEL_HIST256_COPIES + (c + b) % KERNEL_HIST256_COPIES];
        row[b] = s;
    }
}

#if AMP_ALL_VARIANTS || HIST256_GPU != 3
/* src + first is 16-byte aligned (the host splits at multiples of 16).
 * Copy c of bin b is at h[b * 32 + c] and work-item i uses copy i % 32, so
 * the 32 lanes of a warp always hit 32 different banks whatever their bins
 * (with 8 copies, lanes 8 apart shared a bank and random bytes ran at 0.46
 * of copy on the H100). 32 KiB per work-group: the host launches no more
 * groups than fit at once (op_hist.c). HIST_UNROLL words are loaded before
 * any is counted. */
__kernel void hist256_local(__global const uchar *src, ulong first, ulong count,
                            __global uint *partials)
{
    __local uint h[256 * KERNEL_HIST256_COPIES];
    const uint lid = get_local_id(0), lsz = get_local_size(0);
    const uint copy = lid % KERNEL_HIST256_COPIES;
    for (uint i = lid; i < 256 * KERNEL_HIST256_COPIES; i += lsz)
        h[i] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);

    __global const uint4 *s4 = (__global const uint4 *)(src + first);
    const ulong nw = count / KERNEL_WORD, g = get_global_size(0);
    uint last = 0, run = 0;
    for (ulong w = get_global_id(0); w < nw; w += HIST_UNROLL * g) {
        uint4 v[HIST_UNROLL];
        for (uint k = 0; k < HIST_UNROLL; k++)
            if (w + k * g < nw)
                v[k] = s4[w + k * g];
        for (uint k = 0; k < HIST_UNROLL; k++)
            if (w + k * g < nw)
                RUN_UINT4(v[k], FLUSH_LOCAL256);
    }
    if (get_global_id(0) == 0)
        for (ulong i = nw * KERNEL_WORD; i < count; i++)
            RUN_ADD(src[first + i], FLUSH_LOCAL256);
    if (run)
        FLUSH_LOCAL256(last, run);
    barrier(CLK_LOCAL_MEM_FENCE);
    hist256_copies_out(h, lid, lsz, partials + (ulong)get_group_id(0) * 256);
}
#endif

#if AMP_ALL_VARIANTS || HIST256_GPU == 3
/* GPUs, third kernel (variant 3): hist256_local's copies
 * and loads without the run test: one atomic increment per byte, one
 * shared-memory access (hist256_bytes needs a load and a store,
 * hist256_local's run test ~7 instructions more). All-equal input costs
 * the same: a warp's 32 lanes still hit 32 banks. Counter b of this lane's
 * copy is at byte b * 128 + mine: the byte of x shifted straight to
 * b * 128, masked and or-ed with mine, two instructions per byte before
 * the atomic where indexing h[] took four. */
#if HIST256_INC_ADD   /* a knob (bench_kernels --build-options): atomic_add(p, 1) instead */
#define INC_AT(b128) atomic_add((__local uint *)(hb + ((b128) | mine)), 1u)
#else
#define INC_AT(b128) atomic_inc((__local uint *)(hb + ((b128) | mine)))
#endif
__kernel void hist256_inc(__global const uchar *src, ulong first, ulong count,
                          __global uint *partials)
{
    __local uint h[256 * KERNEL_HIST256_COPIES];
    const uint lid = get_local_id(0), lsz = get_local_size(0);
    __local uchar *hb = (__local uchar *)h;
    const uint mine = lid % KERNEL_HIST256_COPIES * 4;   /* byte offset of this lane's copy */
    for (uint i = lid; i < 256 * KERNEL_HIST256_COPIES; i += lsz)
        h[i] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);

    __global const uint4 *s4 = (__global const uint4 *)(src + first);
    const ulong nw = count / KERNEL_WORD, g = get_global_size(0);
    for (ulong w = get_global_id(0); w < nw; w += HIST_UNROLL * g) {
        uint4 v[HIST_UNROLL];
#pragma unroll
        for (uint k = 0; k < HIST_UNROLL; k++)
            if (w + k * g < nw)
                v[k] = s4[w + k * g];
#pragma unroll
        for (uint k = 0; k < HIST_UNROLL; k++)
            if (w + k * g < nw)
                for (uint j = 0; j < 4; j++) {
                    const uint x = j == 0 ? v[k].s0 : j == 1 ? v[k].s1 : j == 2 ? v[k].s2 : v[k].s3;
                    INC_AT((x << 7) & 0x7f80u);
                    INC_AT((x >> 1) & 0x7f80u);
                    INC_AT((x >> 9) & 0x7f80u);
                    INC_AT((x >> 17) & 0x7f80u);
                }
    }
    if (get_global_id(0) == 0)
        for (ulong i = nw * KERNEL_WORD; i < count; i++)
            INC_AT((uint)src[first + i] << 7);
    barrier(CLK_LOCAL_MEM_FENCE);
    hist256_copies_out(h, lid, lsz, partials + (ulong)get_group_id(0) * 256);
}
#endif

/* GPUs, second kernel (variant 2): no
 * atomics while counting. Each work-item owns a column of 256 8-bit
 * counters in __local memory and increments them with a plain byte load,
 * add and store (one work-item per column, so no other lane touches them).
 * Counter b of column col is at c[b * KERNEL_HIST256B_WG + col]; work-item t of
 * a 128-item group owns column (t % 32) * 4 + t / 32, so lane l of any
 * warp always hits 32-bit word b * 32 + l, bank l, whatever the bins: a
 * warp's 32 byte increments are one conflict-free access each for the load
 * and the store (hist256_local's atomics measured 0.45 of copy on the H100
 * on random bytes, with every warp conflict-free already).
 * A counter must not pass 255: every HIST256B_ROUND words per work-item
 * (15 words, at most 240 increments of one bin) the group stops at a
 * barrier and flushes: work-item t adds up the rows of bins t and t + 128
 * (128 counters each, read 16 at a time) into two private 32-bit totals and
 * clears them. Rounds are the same for the whole group (counted from its
 * first work-item, which has the most words), so every work-item reaches
 * every barrier. The count % 16 tail bytes (at most 15) are counted by
 * work-item 0 before its first round: 15 + 240 = 255 still fits.
 * Tried on the H100 and not kept (bench/RESULTS.md): the four bytes of a
 * 32-bit word counted at once (loads first, equal bytes found by SWAR
 * compares: 0.52 against this kernel's 0.67), and no rounds, a wrapping
 * counter adding 256 to the row by an atomic (0.46-0.56; 16-bit counters
 * in groups of 64: 0.36). */
#define HIST256B_ROUND 15                     /* words per work-item per flush */
#define HIST256B_UNROLL 5                     /* words in flight; divides the round */
#define HIST256B_ROW4 (KERNEL_HIST256B_WG / 16)      /* uint4s in one bin's row */

#define B_CNT(b) (c[(b) * KERNEL_HIST256B_WG + col]++)
#define B_CNT_UINT(x)                                                           \
    do {                                                                        \
        B_CNT((x) & 0xffu);                                                     \
        B_CNT(((x) >> 8) & 0xffu);                                              \
        B_CNT(((x) >> 16) & 0xffu);                                             \
        B_CNT((x) >> 24);                                                       \
    } while (0)

#if AMP_ALL_VARIANTS || HIST256_GPU == 2
/* Sum of the 128 byte counters of bin b's row (each <= 255), clearing
 * them. Lanes start at different uint4s of their rows (8 per 128-byte
 * bank row) so that neighbouring lanes read different banks. Byte pairs
 * are summed in 16-bit lanes: 32 uints of at most 2 * 255 stay < 65536. */
static inline uint hist256b_flush_row(__local uint4 *c4, uint b, uint lid)
{
    uint4 acc = (uint4)(0);
    for (uint j = 0; j < HIST256B_ROW4; j++) {
        __local uint4 *q = &c4[b * HIST256B_ROW4 + ((j + lid) % HIST256B_ROW4)];
        const uint4 v = *q;
        *q = (uint4)(0);
        acc += (v & 0x00ff00ffu) + ((v >> 8) & 0x00ff00ffu);
    }
    const uint s = acc.s0 + acc.s1 + acc.s2 + acc.s3;
    return (s & 0xffffu) + (s >> 16);
}

__kernel __attribute__((reqd_work_group_size(KERNEL_HIST256B_WG, 1, 1)))
void hist256_bytes(__global const uchar *src, ulong first, ulong count,
                   __global uint *partials)
{
    __local uint4 c4[256 * HIST256B_ROW4];
    __local uchar *c = (__local uchar *)c4;
    const uint lid = get_local_id(0);
    const uint col = ((lid % 32) << 2) | (lid / 32);
    for (uint i = lid; i < 256 * HIST256B_ROW4; i += KERNEL_HIST256B_WG)
        c4[i] = (uint4)(0);
    barrier(CLK_LOCAL_MEM_FENCE);

    __global const uint4 *s4 = (__global const uint4 *)(src + first);
    const ulong nw = count / KERNEL_WORD, g = get_global_size(0), gid = get_global_id(0);
    const ulong lead = get_group_id(0) * (ulong)KERNEL_HIST256B_WG;
    const ulong steps = lead < nw ? (nw - lead + g - 1) / g : 0;
    if (gid == 0)
        for (ulong i = nw * KERNEL_WORD; i < count; i++)
            B_CNT(src[first + i]);
    uint lo_total = 0, hi_total = 0;   /* bins lid and lid + 128 */
    /* At least one round, so the tail is flushed even when nw == 0. */
    for (ulong s0 = 0; s0 == 0 || s0 < steps; s0 += HIST256B_ROUND) {
        for (uint p = 0; p < HIST256B_ROUND; p += HIST256B_UNROLL) {
            const ulong w = gid + (s0 + p) * g;
            uint4 v[HIST256B_UNROLL];
            for (uint k = 0; k < HIST256B_UNROLL; k++)
                if (w + k * g < nw)
                    v[k] = s4[w + k * g];
            for (uint k = 0; k < HIST256B_UNROLL; k++)
                if (w + k * g < nw) {
                    B_CNT_UINT(v[k].s0);
                    B_CNT_UINT(v[k].s1);
                    B_CNT_UINT(v[k].s2);
                    B_CNT_UINT(v[k].s3);
                }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        lo_total += hist256b_flush_row(c4, lid, lid);
        hi_total += hist256b_flush_row(c4, lid + KERNEL_HIST256B_WG, lid);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    __global uint *row = partials + (ulong)get_group_id(0) * 256;
    row[lid] = lo_total;
    row[lid + KERNEL_HIST256B_WG] = hi_total;
}
#endif

/* One work-item per chunk of chunk bytes (a multiple of 16), counting into
 * four private sub-histograms by byte position, so that increments of one
 * bin form four independent chains instead of one serial chain through
 * memory; a 64-byte block of one repeated byte is added at once (one test
 * per block rather than a run test per byte: testing each 16-byte word
 * cost random data 6% on PoCL, a block costs it about nothing). */
#define HIST256_SUBS 4
#define SUBS_WORD(v)                                                            \
    do {                                                                        \
        h[(v) & 0xffu]++;                                                       \
        h[256 + (((v) >> 8) & 0xffu)]++;                                        \
        h[512 + (((v) >> 16) & 0xffu)]++;                                       \
        h[768 + ((v) >> 24)]++;                                                 \
    } while (0)
__kernel void hist256_private(__global const uchar *src, ulong first, ulong count, ulong chunk,
                              __global uint *partials)
{
    uint h[HIST256_SUBS * 256];
    for (uint i = 0; i < HIST256_SUBS * 256; i++)
        h[i] = 0;
    const ulong begin = get_global_id(0) * chunk;
    const ulong end = min(count, begin + chunk);
    if (begin < end) {
        __global const uint4 *s4 = (__global const uint4 *)(src + first + begin);
        const ulong nw = (end - begin) / KERNEL_WORD, nb = nw / 4;
        for (ulong k = 0; k < nb; k++) {
            const uint4 v0 = s4[4 * k], v1 = s4[4 * k + 1], v2 = s4[4 * k + 2],
                        v3 = s4[4 * k + 3];
            const uint b = v0.s0 & 0xffu;
            const uint4 e = (uint4)(b * 0x01010101u);
            if (all((v0 == e) & (v1 == e) & (v2 == e) & (v3 == e))) {
                h[b] += 4 * KERNEL_WORD;
            } else {
                SUBS_WORD(v0.s0); SUBS_WORD(v0.s1); SUBS_WORD(v0.s2); SUBS_WORD(v0.s3);
                SUBS_WORD(v1.s0); SUBS_WORD(v1.s1); SUBS_WORD(v1.s2); SUBS_WORD(v1.s3);
                SUBS_WORD(v2.s0); SUBS_WORD(v2.s1); SUBS_WORD(v2.s2); SUBS_WORD(v2.s3);
                SUBS_WORD(v3.s0); SUBS_WORD(v3.s1); SUBS_WORD(v3.s2); SUBS_WORD(v3.s3);
            }
        }
        for (ulong w = nb * 4; w < nw; w++) {
            const uint4 v = s4[w];
            SUBS_WORD(v.s0); SUBS_WORD(v.s1); SUBS_WORD(v.s2); SUBS_WORD(v.s3);
        }
        for (ulong i = begin + nw * KERNEL_WORD; i < end; i++)
            h[src[first + i]]++;
    }
    __global uint *row = partials + get_global_id(0) * 256;
    for (uint b = 0; b < 256; b++)
        row[b] = h[b] + h[256 + b] + h[512 + b] + h[768 + b];
}

/* out[b] += sum of rows (out[b] = sum for a histogram's first launch,
 * add == 0); out holds the 64-bit counts across launches.
 * A work-group covers KERNEL_HIST_REDUCE_LANES consecutive bins (a warp's lanes:
 * coalesced reads) with local_size / KERNEL_HIST_REDUCE_LANES slices of the rows,
 * each work-item summing every slices-th row with several loads in flight;
 * the slices are added in __local memory. One work-item per bin, summing
 * all ~800 rows of a GPU launch one L2 load after another, cost about
 * 35 us per launch on the H100 (5% of a 1 GiB histogram). The host
 * launches ceil(width / lanes) groups of at most KERNEL_HIST_REDUCE_WG. */
__kernel void hist_reduce(__global const uint *partials, uint rows, uint width,
                          __global ulong *out, uint add)
{
    __local ulong part[KERNEL_HIST_REDUCE_WG];
    const uint lid = get_local_id(0), lsz = get_local_size(0);
    const uint lanes = min(lsz, (uint)KERNEL_HIST_REDUCE_LANES), slices = lsz / lanes;
    const uint lane = lid % lanes, slice = lid / lanes;
    const ulong b = (ulong)get_group_id(0) * lanes + lane;
    ulong s = 0;
    if (b < width && slice < slices) {
#pragma unroll 8
        for (uint r = slice; r < rows; r += slices)
            s += partials[(ulong)r * width + b];
    }
    part[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (slice == 0 && b < width) {
        ulong t = 0;
        for (uint k = 0; k < slices; k++)
            t += part[k * lanes + lane];
        out[b] = add ? out[b] + t : t;
    }
}

/* ---- N uniform bins over 32-bit elements --------------------------------- */

#define HISTN_PARAMS                                                            \
    uint bins, long lo_t, long hi_t, float lo_c, float hi_c, float lo_f, float scale_f, \
        float bins_f
#define HISTN_PASS bins, lo_t, hi_t, lo_c, hi_c, lo_f, scale_f, bins_f

static inline uint bin_index(float x, float lo_f, float scale_f, float bins_f, uint bins)
{
    const float t = (x - lo_f) * scale_f;
    return KERNEL_HIST_BIN(t, bins_f, bins);
}

static inline uint slot_u32(uint x, HISTN_PARAMS)
{
    const long v = (long)x;
    if (v < lo_t)
        return KERNEL_HIST_SLOT_BELOW(bins);
    if (v >= hi_t)
        return KERNEL_HIST_SLOT_ABOVE(bins);
    return bin_index((float)x, lo_f, scale_f, bins_f, bins);
}

static inline uint slot_i32(int x, HISTN_PARAMS)
{
    const long v = (long)x;
    if (v < lo_t)
        return KERNEL_HIST_SLOT_BELOW(bins);
    if (v >= hi_t)
        return KERNEL_HIST_SLOT_ABOVE(bins);
    return bin_index((float)x, lo_f, scale_f, bins_f, bins);
}

static inline uint slot_f32(float x, HISTN_PARAMS)
{
    if (isnan(x))
        return KERNEL_HIST_SLOT_NAN(bins);
    if (x < lo_c)
        return KERNEL_HIST_SLOT_BELOW(bins);
    if (x >= hi_c)
        return KERNEL_HIST_SLOT_ABOVE(bins);
    return bin_index(x, lo_f, scale_f, bins_f, bins);
}

/* The same bins for N elements at once (N = 16 on CPU devices, which run
 * them as SIMD instructions; 4 in histn_inc on GPUs, where the selects
 * are cheaper than the scalar functions' 64-bit compares and branches),
 * lane for lane equal to the scalar functions above (float conversions
 * round the same way, select() keeps their order of tests).
 * The conversion needs no saturation: only lanes with 0 < t < bins_f <=
 * 2^32 keep it, and (uint)t is exact there.
 * Integer elements are compared in 32 bits against lo_t and hi_t clamped
 * to their type's range (x < lo_t iff x < lo or lo_t is above the range;
 * x >= hi_t iff x >= hi and hi_t is not above it): widening 16 lanes to
 * 64 bits for the compares was half of the binning's instructions:
 * HISTN_SLOT_INT makes slotN_SUF for the integers T in [TMIN, TMAX]. */
#define HISTN_SLOT_INT(N, SUF, T, TMIN, TMAX)                                   \
static inline uint##N slot##N##_##SUF(T##N x, HISTN_PARAMS)                     \
{                                                                               \
    const T lo = (T)clamp(lo_t, TMIN, TMAX);                                    \
    const T hi = (T)clamp(hi_t, TMIN, TMAX);                                    \
    const int##N below_all = (int##N)(lo_t > TMAX ? -1 : 0);                    \
    const int##N above_none = (int##N)(hi_t > TMAX ? -1 : 0);                   \
    uint##N s = bin_index##N(convert_float##N(x), lo_f, scale_f, bins_f, bins); \
    s = select(s, (uint##N)KERNEL_HIST_SLOT_ABOVE(bins), (x >= hi) & ~above_none); \
    return select(s, (uint##N)KERNEL_HIST_SLOT_BELOW(bins), (x < lo) | below_all); \
}

#define HISTN_SLOTS_VEC(N)                                                      \
static inline uint##N bin_index##N(float##N x, float lo_f, float scale_f, float bins_f, \
                                   uint bins)                                   \
{                                                                               \
    const float##N t = (x - lo_f) * scale_f;                                    \
    uint##N i = select((uint##N)(bins - 1), convert_uint##N(t), t < bins_f);    \
    i = select((uint##N)0, i, t > 0.0f);                                        \
    return min(i, (uint##N)(bins - 1));                                         \
}                                                                               \
                                                                                \
HISTN_SLOT_INT(N, u32, uint, 0L, (long)UINT_MAX)                                \
HISTN_SLOT_INT(N, i32, int, (long)INT_MIN, (long)INT_MAX)                       \
                                                                                \
static inline uint##N slot##N##_f32(float##N x, HISTN_PARAMS)                   \
{                                                                               \
    uint##N s = bin_index##N(x, lo_f, scale_f, bins_f, bins);                   \
    s = select(s, (uint##N)KERNEL_HIST_SLOT_ABOVE(bins), x >= hi_c);            \
    s = select(s, (uint##N)KERNEL_HIST_SLOT_BELOW(bins), x < lo_c);             \
    return select(s, (uint##N)KERNEL_HIST_SLOT_NAN(bins), isnan(x));            \
}

HISTN_SLOTS_VEC(16)
HISTN_SLOTS_VEC(4)

/* Runs over 16 slots computed at once. Plain increments of the 16 slots
 * instead ran 6x slower on PoCL (LLVM 15). */
#define RUN_VEC16(s, FLUSH)                                                     \
    do {                                                                        \
        RUN_ADD((s).s0, FLUSH); RUN_ADD((s).s1, FLUSH);                         \
        RUN_ADD((s).s2, FLUSH); RUN_ADD((s).s3, FLUSH);                         \
        RUN_ADD((s).s4, FLUSH); RUN_ADD((s).s5, FLUSH);                         \
        RUN_ADD((s).s6, FLUSH); RUN_ADD((s).s7, FLUSH);                         \
        RUN_ADD((s).s8, FLUSH); RUN_ADD((s).s9, FLUSH);                         \
        RUN_ADD((s).sa, FLUSH); RUN_ADD((s).sb, FLUSH);                         \
        RUN_ADD((s).sc, FLUSH); RUN_ADD((s).sd, FLUSH);                         \
        RUN_ADD((s).se, FLUSH); RUN_ADD((s).sf, FLUSH);                         \
    } while (0)

/* histn_rows, HISTN_BLOCK elements per step, in two overlapped halves:
 * it computes one block's slots, 16 at once, into half of a private
 * buffer while it counts the previous block's from the other half, one
 * plain increment per slot. Increments indexed straight from vector
 * registers (the bins of 16 elements extracted lane by lane) ran at about
 * 8 cycles each on the AMD EPYC (Zen 4) this was tuned on, C with that
 * shape too, and about 1 when the index is loaded from memory that a
 * vector store left long before; interleaving lets the SIMD binning and
 * the scalar increments share the core instead of taking turns. A block
 * of one slot is added at once: all-equal input would otherwise be one
 * serial chain of increments. */
#define HISTN_BLOCK 256
#define HISTN_VECS (HISTN_BLOCK / 16)

/* Whether the lanes of lo (a running minimum) and hi (a running maximum)
 * span one value. */
static inline bool histn_one_value(uint16 lo, uint16 hi)
{
    const uint8 l8 = min(lo.lo, lo.hi), h8 = max(hi.lo, hi.hi);
    const uint4 l4 = min(l8.lo, l8.hi), h4 = max(h8.lo, h8.hi);
    const uint2 l2 = min(l4.lo, l4.hi), h2 = max(h4.lo, h4.hi);
    return min(l2.s0, l2.s1) == max(h2.s0, h2.s1);
}

/* row[p[k]]++ for the 16 slots at p. */
static inline void histn_count16(__global uint *row, const uint *p)
{
    for (uint k = 0; k < 16; k++)
        row[p[k]]++;
}

#define RUN_VEC4(v, SLOT, FLUSH)                                                \
    do {                                                                        \
        RUN_ADD(SLOT((v).s0, HISTN_PASS), FLUSH);                               \
        RUN_ADD(SLOT((v).s1, HISTN_PASS), FLUSH);                               \
        RUN_ADD(SLOT((v).s2, HISTN_PASS), FLUSH);                               \
        RUN_ADD(SLOT((v).s3, HISTN_PASS), FLUSH);                               \
    } while (0)

#define FLUSH_LOCALN(s, n) atomic_add(&h[(s) * copies + copy], (n))
#define FLUSH_GLOBALN(s, n) atomic_add(&counts[(s)], (n))
#define FLUSH_ROWN(s, n) (row[(s)] += (n))

/* Clears the group's copies of width counters, before any is counted. */
static inline void histn_copies_zero(__local uint *h, uint width, uint copies)
{
    for (uint i = get_local_id(0); i < copies * width; i += get_local_size(0))
        h[i] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* row[s] = the sum of slot s's copies (h[s * copies + c]), staggered as
 * in hist256_copies_out. */
static inline void histn_copies_out(__local const uint *h, uint width, uint copies,
                                    __global uint *row)
{
    for (uint s = get_local_id(0); s < width; s += get_local_size(0)) {
        uint sum = 0;
        for (uint c = 0; c < copies; c++)
            sum += h[s * copies + (c + s) % copies];
        row[s] = sum;
    }
}

/* src + first is 16-byte aligned (the host splits at multiples of 4
 * elements); h holds copies * (bins + 3) counters.
 * histn_local (GPUs, variant 1) counts runs of equal slots (RUN_ADD);
 * histn_inc (variant 2) one atomic increment per element, its four slots
 * computed at once by slot4_T (selects, 32-bit compares, 32-bit indices:
 * a launch holds at most 2^31 elements, op_hist.c), and the HIST_UNROLL
 * vectors of a pass in one block, without a test for each, where all lie
 * in range. On the H200
 * histn_local ran at 0.60-0.63 of copy on random data, at the H100's
 * absolute rate: bound by its instructions (the run test, 64-bit compares
 * and branches per element), not by memory. All-equal input costs
 * histn_inc the lanes that share a copy (32 / copies) queueing on one
 * counter. */
#if AMP_ALL_VARIANTS || HISTN_GPU == 2
/* Counts the four elements of e (a T4). */
#define HISTN_INC4(e, SUF)                                                      \
    do {                                                                        \
        const uint4 at = slot4_##SUF((e), HISTN_PASS) * copies + copy;          \
        atomic_inc(&h[at.x]);                                                   \
        atomic_inc(&h[at.y]);                                                   \
        atomic_inc(&h[at.z]);                                                   \
        atomic_inc(&h[at.w]);                                                   \
    } while (0)
#define HISTN_INC_KERNEL(SUF, T, T4)                                            \
__kernel void histn_inc_##SUF(__global const T *src, ulong first, ulong count,  \
                              HISTN_PARAMS, __local uint *h, uint copies,       \
                              __global uint *partials)                          \
{                                                                               \
    const uint width = bins + 3, copy = get_local_id(0) % copies;               \
    histn_copies_zero(h, width, copies);                                        \
    __global const T4 *s4 = (__global const T4 *)(src + first);                 \
    const uint nq = (uint)(count / 4), g = (uint)get_global_size(0);            \
    for (uint q = (uint)get_global_id(0); q < nq; q += HIST_UNROLL * g) {       \
        T4 v[HIST_UNROLL];                                                      \
        if (q + (HIST_UNROLL - 1) * g < nq) { /* all in range: one block */     \
            _Pragma("unroll") for (uint k = 0; k < HIST_UNROLL; k++)            \
                v[k] = s4[q + k * g];                                           \
            _Pragma("unroll") for (uint k = 0; k < HIST_UNROLL; k++)            \
                HISTN_INC4(v[k], SUF);                                          \
        } else {                                                                \
            _Pragma("unroll") for (uint k = 0; k < HIST_UNROLL; k++)            \
                if (q + k * g < nq)                                             \
                    v[k] = s4[q + k * g];                                       \
            _Pragma("unroll") for (uint k = 0; k < HIST_UNROLL; k++)            \
                if (q + k * g < nq)                                             \
                    HISTN_INC4(v[k], SUF);                                      \
        }                                                                       \
    }                                                                           \
    if (get_global_id(0) == 0)                                                  \
        for (ulong i = (ulong)nq * 4; i < count; i++)                           \
            atomic_inc(&h[slot_##SUF(src[first + i], HISTN_PASS) * copies + copy]); \
    barrier(CLK_LOCAL_MEM_FENCE);                                               \
    histn_copies_out(h, width, copies, partials + (ulong)get_group_id(0) * width); \
}
#else
#define HISTN_INC_KERNEL(SUF, T, T4)
#endif

#define HISTN_KERNELS(SUF, T, T4, SLOT)                                         \
HISTN_INC_KERNEL(SUF, T, T4)                                                    \
__kernel void histn_local_##SUF(__global const T *src, ulong first, ulong count, \
                                HISTN_PARAMS, __local uint *h, uint copies,     \
                                __global uint *partials)                        \
{                                                                               \
    const uint width = bins + 3, copy = get_local_id(0) % copies;               \
    histn_copies_zero(h, width, copies);                                        \
    __global const T4 *s4 = (__global const T4 *)(src + first);                 \
    const ulong nq = count / 4, g = get_global_size(0);                         \
    uint last = 0, run = 0;                                                     \
    for (ulong q = get_global_id(0); q < nq; q += HIST_UNROLL * g) {            \
        T4 v[HIST_UNROLL];                                                      \
        for (uint k = 0; k < HIST_UNROLL; k++)                                  \
            if (q + k * g < nq)                                                 \
                v[k] = s4[q + k * g];                                           \
        for (uint k = 0; k < HIST_UNROLL; k++)                                  \
            if (q + k * g < nq)                                                 \
                RUN_VEC4(v[k], SLOT, FLUSH_LOCALN);                             \
    }                                                                           \
    if (get_global_id(0) == 0)                                                  \
        for (ulong i = nq * 4; i < count; i++)                                  \
            RUN_ADD(SLOT(src[first + i], HISTN_PASS), FLUSH_LOCALN);            \
    if (run)                                                                    \
        FLUSH_LOCALN(last, run);                                                \
    barrier(CLK_LOCAL_MEM_FENCE);                                               \
    histn_copies_out(h, width, copies, partials + (ulong)get_group_id(0) * width); \
}                                                                               \
                                                                                \
__kernel void histn_global_##SUF(__global const T *src, ulong first, ulong count, \
                                 HISTN_PARAMS, __global uint *counts)           \
{                                                                               \
    __global const T4 *s4 = (__global const T4 *)(src + first);                 \
    const ulong nq = count / 4;                                                 \
    uint last = 0, run = 0;                                                     \
    for (ulong q = get_global_id(0); q < nq; q += get_global_size(0)) {         \
        const T4 v = s4[q];                                                     \
        RUN_VEC4(v, SLOT, FLUSH_GLOBALN);                                       \
    }                                                                           \
    if (get_global_id(0) == 0)                                                  \
        for (ulong i = nq * 4; i < count; i++)                                  \
            RUN_ADD(SLOT(src[first + i], HISTN_PASS), FLUSH_GLOBALN);           \
    if (run)                                                                    \
        FLUSH_GLOBALN(last, run);                                               \
}                                                                               \
                                                                                \
__kernel void histn_rows_##SUF(__global const T *src, ulong first, ulong count, \
                               ulong chunk, HISTN_PARAMS, __global uint *rows)  \
{                                                                               \
    __global uint *row = rows + get_global_id(0) * (ulong)(bins + 3);           \
    const ulong begin = get_global_id(0) * chunk;                               \
    const ulong end = min(count, begin + chunk);                                \
    uint last = 0, run = 0;                                                     \
    ulong i = begin;                                                            \
    uint buf[2 * HISTN_BLOCK];                                                  \
    uint *out = buf, *in = buf + HISTN_BLOCK;                                   \
    bool pending = false;   /* in holds a block's slots, not counted yet */    \
    for (; i + HISTN_BLOCK <= end; i += HISTN_BLOCK) {                          \
        uint16 lo = (uint16)(UINT_MAX), hi = (uint16)(0);                       \
        for (uint j = 0; j < HISTN_VECS; j++) {                                 \
            const uint16 s = slot16_##SUF(vload16(j, src + first + i), HISTN_PASS); \
            vstore16(s, j, out);                                                \
            lo = min(lo, s);                                                    \
            hi = max(hi, s);                                                    \
            if (pending)                                                        \
                histn_count16(row, in + 16 * j);                                \
        }                                                                       \
        pending = !histn_one_value(lo, hi);                                     \
        if (!pending)                                                           \
            row[out[0]] += HISTN_BLOCK;                                         \
        uint *t = in;                                                           \
        in = out;                                                               \
        out = t;                                                                \
    }                                                                           \
    for (uint j = 0; pending && j < HISTN_VECS; j++)                            \
        histn_count16(row, in + 16 * j);                                        \
    for (; i + 16 <= end; i += 16) {                                            \
        const uint16 s = slot16_##SUF(vload16(0, src + first + i), HISTN_PASS); \
        RUN_VEC16(s, FLUSH_ROWN);                                               \
    }                                                                           \
    for (; i < end; i++)                                                        \
        RUN_ADD(SLOT(src[first + i], HISTN_PASS), FLUSH_ROWN);                  \
    if (run)                                                                    \
        FLUSH_ROWN(last, run);                                                  \
}

HISTN_KERNELS(u32, uint, uint4, slot_u32)
HISTN_KERNELS(i32, int, int4, slot_i32)
HISTN_KERNELS(f32, float, float4, slot_f32)
