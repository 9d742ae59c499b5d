/* SPDX-License-Identifier: MIT */
/* transform.cl: per-byte add/xor/and/or/set/map over [lo, hi) of a buffer.
 *
 * Access pattern: aligned 16-byte words w0 <= w < w1, one 16-byte load and
 * store per word; grid-stride on GPUs (transform_OP: consecutive work-items
 * on consecutive words, coalesced, XFORM_UNROLL words per work-item and
 * pass) or a contiguous run of chunk words per work-item on CPU devices
 * (transform_OP_chunk). In place (src == dst) the host passes only the words
 * covering [lo, hi); out of place it passes every word and bytes outside
 * [lo, hi) are copied unchanged. A word straddling lo or hi selects per
 * lane; the last word, when n % 16 != 0, is done byte by byte, so nothing
 * outside [0, n) is touched. CPU devices do the arithmetic on uchar16
 * (add wraps modulo 256 in each byte and never carries into its
 * neighbour), which their compilers turn into byte-wise SIMD; GPU kernels
 * do it on uint4 (add as a carry-less SWAR sum, map as four byte lookups
 * per uint), in four 32-bit registers: with uchar16 arithmetic the tiled
 * GPU kernel ran at 0.86 of copy on the H100 against 1.00 for set, which
 * computes nothing.
 * The parameter block (operand at [0], map table at [16, 272)) is in
 * __constant memory; map on GPUs copies the table into __local memory first,
 * since a constant cache serialises lanes that look up different entries;
 * map on CPU devices reads it (and the byte-pair table after it) as
 * __global memory, where it is no more than a cached array.
 * Bound: memory bandwidth (one read and one write per byte).
 */
#define XFORM_UNROLL 4   /* words in flight per work-item on GPUs */

/* The ops on uint4 for GPUs (val4: the operand in every byte), as
 * kernel_abi.h's OPV_* on uchar16. */
#define OPW_ADD(v) swar_add((v), val4)
#define OPW_XOR(v) ((v) ^ val4)
#define OPW_AND(v) ((v) & val4)
#define OPW_OR(v) ((v) | val4)
#define OPW_SET(v) (val4)
#define OPW_MAP(v) MAP_UINT4(v, TAB)
#define OPS_ADD(b) ((uchar)((b) + val))
#define OPS_XOR(b) ((uchar)((b) ^ val))
#define OPS_AND(b) ((uchar)((b) & val))
#define OPS_OR(b) ((uchar)((b) | val))
#define OPS_SET(b) (val)
#define OPS_MAP(b) TAB(b)

/* Byte-wise a + b modulo 256: the low 7 bits of each byte added without
 * carrying out of it, the top bit as the xor of the tops and that carry. */
static inline uint4 swar_add(uint4 a, uint4 b)
{
    const uint4 top = (uint4)(0x80808080u);
    return ((a & ~top) + (b & ~top)) ^ ((a ^ b) & top);
}

/* Map on GPUs: the four bytes of x, and of each uint of v, looked up by
 * LOOK(b), a macro since the table is a kernel's __local array (TAB here;
 * TABR, a copy per bank, in transform_map_v2). */
#define TAB(b) (tab[(b)])
#define MAP4(x, LOOK)                                                                 \
    ((uint)LOOK((x) & 0xffu) | (uint)LOOK(((x) >> 8) & 0xffu) << 8 |                 \
     (uint)LOOK(((x) >> 16) & 0xffu) << 16 | (uint)LOOK((x) >> 24) << 24)
#define MAP_UINT4(v, LOOK)                                                            \
    ((uint4)(MAP4((v).x, LOOK), MAP4((v).y, LOOK), MAP4((v).z, LOOK), MAP4((v).w, LOOK)))

/* Word w (v: its 16 bytes as a T, evaluated only when the word lies
 * wholly inside [0, n)). */
#define XFORM_WORD(w, v, T, OPV, OPS)                                                 \
    do {                                                                              \
        const ulong start = (w) * KERNEL_WORD;                                               \
        if (start + KERNEL_WORD <= n) {                                                      \
            const T v_ = (v);                                                         \
            const T t = OPV(v_);                                                      \
            if (start < lo || start + KERNEL_WORD > hi)                                      \
                ((__global uchar16 *)dst)[w] =                                        \
                    select(as_uchar16(v_), as_uchar16(t), lane_mask(start, lo, hi));  \
            else                                                                      \
                ((__global T *)dst)[w] = t;                                           \
        } else {                                                                      \
            for (ulong i = start; i < n; i++) {                                       \
                const uchar b = src[i];                                               \
                dst[i] = (i >= lo && i < hi) ? OPS(b) : b;                            \
            }                                                                         \
        }                                                                             \
    } while (0)

/* CPU devices: words [w0 + id * chunk, + chunk) in order. */
#define XFORM_CHUNK(OPV, OPS)                                                         \
    const uchar val = params[0];                                                      \
    __global const uchar16 *s16 = (__global const uchar16 *)src;                      \
    const ulong first = w0 + get_global_id(0) * chunk;                                \
    const ulong last = min(w1, first + chunk);                                        \
    for (ulong w = first; w < last; w++)                                              \
        XFORM_WORD(w, s16[w], uchar16, OPV, OPS);

/* GPUs: grid-stride, XFORM_UNROLL words per work-item and pass
 * (w + k * global_size), all loaded before the first store so that each
 * work-item has several reads in flight. */
#define XFORM_GRID(OPW, OPS)                                                          \
    const uchar val = params[0];                                                      \
    const uint4 val4 = (uint4)(val * 0x01010101u);                                    \
    __global const uint4 *s16 = (__global const uint4 *)src;                          \
    const ulong g = get_global_size(0), full = min(w1, n / KERNEL_WORD);                     \
    for (ulong w = w0 + get_global_id(0); w < w1; w += XFORM_UNROLL * g) {            \
        uint4 v[XFORM_UNROLL];                                                      \
        for (uint k = 0; k < XFORM_UNROLL; k++)                                       \
            if (w + k * g < full)                                                     \
                v[k] = s16[w + k * g];                                                \
        for (uint k = 0; k < XFORM_UNROLL; k++)                                       \
            if (w + k * g < w1)                                                       \
                XFORM_WORD(w + k * g, v[k], uint4, OPW, OPS);                         \
    }

/* GPUs, second kernel (transform_OP_v2, variant 2): per pass a work-group takes a tile of
 * KERNEL_XFORM_V2_WORDS * local_size consecutive words, work-item i words
 * tile + i + k * local_size, and groups stride over tiles. Against
 * transform_OP: twice the words in flight per work-item, a group's loads all
 * within one 32 KiB stretch instead of four runs a grid apart, and a tile
 * wholly inside [lo, hi) and [0, n) (all but at most two tiles) takes a
 * path without the per-word bounds and lane tests. The host launches one
 * group per tile (op_tile_grid), so the loop usually runs once and the
 * launch is many short waves rather than one resident wave. The loops over
 * v[] are unrolled by force: map's body is long enough that NVIDIA's
 * compiler otherwise kept v[] in (off-chip) local memory, a 128-byte
 * stack frame, and ran at 0.64 of copy. READY runs once, after the first
 * tile's loads are issued: map fills its table there, so that a group's
 * first loads are not held up behind it (groups of one tile each pay it). */
#define XFORM_TILE(OPW, OPS, READY)                                                   \
    const uchar val = params[0];                                                      \
    const uint4 val4 = (uint4)(val * 0x01010101u);                                    \
    __global const uint4 *s16 = (__global const uint4 *)src;                          \
    __global uint4 *d16 = (__global uint4 *)dst;                                      \
    const ulong lsz = get_local_size(0), tile = KERNEL_XFORM_V2_WORDS * lsz;                  \
    const ulong full = min(w1, n / KERNEL_WORD);                                             \
    /* Words [in0, in1) lie wholly inside [lo, hi) and [0, n). */                     \
    const ulong in0 = (lo + KERNEL_WORD - 1) / KERNEL_WORD, in1 = min(full, hi / KERNEL_WORD);             \
    const ulong stride = get_num_groups(0) * tile;                                    \
    ulong t0 = w0 + get_group_id(0) * tile;                                           \
    uint4 v[KERNEL_XFORM_V2_WORDS];                                                           \
    /* The first tile's loads go out before READY (map's table fill): they */         \
    /* need nothing from it. */                                                       \
    bool loaded = t0 < w1 && t0 >= in0 && t0 + tile <= in1;                           \
    if (loaded) {                                                                     \
        _Pragma("unroll") for (uint k = 0; k < KERNEL_XFORM_V2_WORDS; k++)                    \
            v[k] = s16[t0 + get_local_id(0) + k * lsz];                               \
    }                                                                                 \
    READY                                                                             \
    for (; t0 < w1; t0 += stride) {                                                   \
        const ulong w = t0 + get_local_id(0);                                         \
        if (t0 >= in0 && t0 + tile <= in1) {                                          \
            if (!loaded) {                                                            \
                _Pragma("unroll") for (uint k = 0; k < KERNEL_XFORM_V2_WORDS; k++)            \
                    v[k] = s16[w + k * lsz];                                          \
            }                                                                         \
            loaded = false;                                                           \
            _Pragma("unroll") for (uint k = 0; k < KERNEL_XFORM_V2_WORDS; k++)                \
                d16[w + k * lsz] = OPW(v[k]);                                         \
        } else {                                                                      \
            _Pragma("unroll") for (uint k = 0; k < KERNEL_XFORM_V2_WORDS; k++)                \
                if (w + k * lsz < full)                                               \
                    v[k] = s16[w + k * lsz];                                          \
            _Pragma("unroll") for (uint k = 0; k < KERNEL_XFORM_V2_WORDS; k++)                \
                if (w + k * lsz < w1)                                                 \
                    XFORM_WORD(w + k * lsz, v[k], uint4, OPW, OPS);                   \
        }                                                                             \
    }

#define XFORM_ARGS                                                                    \
    __global const uchar *src, __global uchar *dst, ulong n, ulong lo, ulong hi,      \
        ulong w0, ulong w1, ulong chunk, __constant uchar *params

/* transform_OP and transform_OP_v2 for GPUs (chunk is 0), each built
 * where the device's variants ask for it (dev_internal.h), and
 * transform_OP_chunk for CPU devices. */
#if AMP_ALL_VARIANTS || XFORM_GPU == 1
#define XFORM_KERNEL_V1(NAME, OPW, OPS)                                               \
    __kernel void transform_##NAME(XFORM_ARGS) { XFORM_GRID(OPW, OPS) }
#else
#define XFORM_KERNEL_V1(NAME, OPW, OPS)
#endif
#if AMP_ALL_VARIANTS || XFORM_GPU == 2
#define XFORM_KERNEL_V2(NAME, OPW, OPS)                                               \
    __kernel void transform_##NAME##_v2(XFORM_ARGS) { XFORM_TILE(OPW, OPS, ) }
#else
#define XFORM_KERNEL_V2(NAME, OPW, OPS)
#endif
#define XFORM_KERNELS(NAME, OPV, OPW, OPS)                                            \
    XFORM_KERNEL_V1(NAME, OPW, OPS)                                                   \
    XFORM_KERNEL_V2(NAME, OPW, OPS)                                                   \
    __kernel void transform_##NAME##_chunk(XFORM_ARGS) { XFORM_CHUNK(OPV, OPS) }

XFORM_KERNELS(add, OPV_ADD, OPW_ADD, OPS_ADD)
XFORM_KERNELS(xor, OPV_XOR, OPW_XOR, OPS_XOR)
XFORM_KERNELS(and, OPV_AND, OPW_AND, OPS_AND)
XFORM_KERNELS(or, OPV_OR, OPW_OR, OPS_OR)
XFORM_KERNELS(set, OPV_SET, OPW_SET, OPS_SET)

/* The table in __local memory: a constant cache serialises lanes that look
 * up different entries. Every device builds it: smaller maps run it
 * whichever variant the others are. */
__kernel void transform_map(XFORM_ARGS)
{
    __local uchar tab[256];
    for (uint i = get_local_id(0); i < 256; i += get_local_size(0))
        tab[i] = params[KERNEL_XFORM_TABLE_AT + i];
    barrier(CLK_LOCAL_MEM_FENCE);
    XFORM_GRID(OPW_MAP, OPS_MAP)
}

#if AMP_ALL_VARIANTS || MAP_GPU == 2
/* GPUs, map's second kernel (variant 2): the table once per bank: entry b for lane l is byte
 * (b & ~3) * 32 + 4 * l + (b & 3) of tabr, in bank l whatever b, so a
 * warp's 32 lookups are one conflict-free access (a single 256-byte table
 * spreads its 64 words over the 32 banks two deep: random bytes cost about
 * two). 8 KiB per group; the host gives each group several tiles
 * (op_transform.c) so that filling it is a small part of the group's work. */
#define TABR(b) (tabr8[((b) & 0xfcu) * 32 + lane4 + ((b) & 3u)])
#define OPW_MAPR(v) MAP_UINT4(v, TABR)
#define OPS_MAPR(b) TABR((uint)(b))

#define MAP_V2_READY                                                                  \
    for (uint i = get_local_id(0); i < 64 * 32; i += get_local_size(0)) {             \
        __constant const uchar *e = params + KERNEL_XFORM_TABLE_AT + 4 * (i / 32);    \
        tabr[i] = (uint)e[0] | (uint)e[1] << 8 | (uint)e[2] << 16 | (uint)e[3] << 24; \
    }                                                                                 \
    barrier(CLK_LOCAL_MEM_FENCE);

__kernel void transform_map_v2(XFORM_ARGS)
{
    __local uint tabr[64 * 32];
    __local const uchar *tabr8 = (__local const uchar *)tabr;
    const uint lane4 = (get_local_id(0) % 32) * 4;
    XFORM_TILE(OPW_MAPR, OPS_MAPR, MAP_V2_READY)
}
#endif

#if AMP_ALL_VARIANTS || MAP_GPU == 3
/* GPUs, map's third kernel (variant 3): v2's tiles (one per group, as the
 * other transforms' v2) with v1's single 256-byte table, which a group
 * fills in one step. On the H200 v1 and v2 both ran at 0.90 of copy where
 * xor's v2 runs at 0.98: map needs 7 lookups per cycle and multiprocessor
 * there, far below what even v1's two-way bank conflicts allow, so what
 * it lacks is loads in flight while it looks up, which the short waves of
 * one-tile groups give. (A conflict-free table of 32-bit words, 32 KiB
 * per group, grid-stride, ran at 0.68.) */
#define MAP_V3_READY                                                                  \
    for (uint i = get_local_id(0); i < 256; i += get_local_size(0))                   \
        tab[i] = params[KERNEL_XFORM_TABLE_AT + i];                                   \
    barrier(CLK_LOCAL_MEM_FENCE);

__kernel void transform_map_v3(XFORM_ARGS)
{
    __local uchar tab[256];
    XFORM_TILE(OPW_MAP, OPS_MAP, MAP_V3_READY)
}
#endif

/* CPU devices: where the kernel compiler targets AVX-512BW (PoCL on x86
 * builds for its CPU, e.g. "skylake-avx512"), 64 bytes at a time through
 * byte shuffles (map_shuffle64); otherwise, and for the last < 64 bytes,
 * sixteen at a time through the table of byte pairs that op_transform.c
 * appends to the block for large inputs (entry v maps the bytes of v;
 * 128 KiB, so lookups hit L2): two 8-byte loads, eight lookups, two 8-byte
 * stores; without it, byte by byte through the table.
 * Sixteen byte lookups building a uchar16 lane by lane ran at 0.44 of copy
 * on PoCL, eight byte lookups shifted into a ulong no better, the pair
 * table 0.52-0.56 (45 instructions per 16 bytes); the shuffles 1.4. */
#define MAP_PAIRS8(x)                                                                 \
    ((ulong)pairs[(x) & 0xffff] | (ulong)pairs[((x) >> 16) & 0xffff] << 16 |          \
     (ulong)pairs[((x) >> 32) & 0xffff] << 32 | (ulong)pairs[(x) >> 48] << 48)

#ifndef __ENDIAN_LITTLE__
#error "transform_map_chunk reads byte pairs as little-endian ushorts"
#endif

#ifdef __AVX512BW__
/* 64 bytes; unaligned (the chunk's words are only 16-byte aligned). */
typedef char map_v64 __attribute__((vector_size(64), aligned(1)));

/* The lanes of a 16-byte vector, in order; four times over, they put its
 * bytes in each 128-bit lane of 64. */
#define MAP_LANES16 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15

/* Maps bytes [i, j) of src into dst, j the end of the last whole 64 bytes
 * in [i, end), and returns j. Byte x is tab[16 * hi + lo] for its nibbles
 * hi, lo: part[k] holds bytes 16k .. 16k + 15 of the table in each 128-bit
 * lane, so one vpshufb looks up lo in it for all 64 bytes, kept where
 * hi == k; 16 shuffles, compares and ORs per 64 bytes instead of 64 scalar
 * lookups. */
static ulong map_shuffle64(__global const uchar *src, __global uchar *dst,
                           __global const uchar *tab, ulong i, ulong end)
{
    if (i + 64 > end)
        return i;
    map_v64 part[16];
    for (uint k = 0; k < 16; k++) {
        const char16 c = vload16(k, (__global const char *)tab);
        part[k] = (map_v64)__builtin_shufflevector(c, c, MAP_LANES16, MAP_LANES16,
                                                   MAP_LANES16, MAP_LANES16);
    }
    for (; i + 64 <= end; i += 64) {
        const map_v64 x = *(__global const map_v64 *)(src + i);
        const map_v64 lo = x & (char)0x0f;
        const map_v64 hi = (x >> (char)4) & (char)0x0f;
        map_v64 r = x ^ x;
#pragma unroll
        for (uint k = 0; k < 16; k++)
            r |= __builtin_ia32_pshufb512(part[k], lo) & (map_v64)(hi == (char)k);
        *(__global map_v64 *)(dst + i) = r;
    }
    return i;
}
#else
static ulong map_shuffle64(__global const uchar *src, __global uchar *dst,
                           __global const uchar *tab, ulong i, ulong end)
{
    return i;
}
#endif

__kernel void transform_map_chunk(__global const uchar *src, __global uchar *dst, ulong n,
                                  ulong lo, ulong hi, ulong w0, ulong w1, ulong chunk,
                                  __global const uchar *params)
{
    __global const uchar *tab = params + KERNEL_XFORM_TABLE_AT;
    __global const ushort *pairs = (__global const ushort *)(params + KERNEL_XFORM_PAIRS_AT);
    const ulong first = w0 + get_global_id(0) * chunk;
    const ulong last = min(w1, first + chunk);
    if (first >= last)
        return;
    /* This work-item's bytes [a, b), of which [l, h) are mapped. */
    const ulong a = first * KERNEL_WORD, b = min(last * KERNEL_WORD, n);
    const ulong l = clamp(lo, a, b), h = clamp(hi, a, b);
    for (ulong i = a; i < l; i++)
        dst[i] = src[i];
    ulong i = l;
    for (; i < h && (i & 15) != 0; i++)
        dst[i] = tab[src[i]];
    i = map_shuffle64(src, dst, tab, i, h);
    if (params[KERNEL_XFORM_HAS_PAIRS])
        for (; i + 16 <= h; i += 16) {
            const ulong2 x = *(__global const ulong2 *)(src + i);
            *(__global ulong2 *)(dst + i) = (ulong2)(MAP_PAIRS8(x.s0), MAP_PAIRS8(x.s1));
        }
    for (; i < h; i++)
        dst[i] = tab[src[i]];
    for (i = h; i < b; i++)
        dst[i] = src[i];
}
