/* transform.cl: per-byte add/xor/and/or/set/map over [lo, hi) of a buffer.
 *
 * Access pattern: aligned 16-byte words w0 <= w < w1, one uchar16 load and
 * store per word; grid-stride (chunk == 0, GPUs: consecutive work-items on
 * consecutive words, coalesced) or a contiguous run of chunk words per
 * work-item (CPU devices). In place (src == dst) the host passes only the words
 * covering [lo, hi); out of place it passes every word and bytes outside
 * [lo, hi) are copied unchanged. A word straddling lo or hi selects per
 * lane; the last word, when n % 16 != 0, is done byte by byte, so nothing
 * outside [0, n) is touched. Arithmetic is native uchar16: add wraps modulo
 * 256 in each byte and never carries into its neighbour.
 * The parameter block (operand at [0], map table at [16, 272)) is in
 * __constant memory; map copies the table into __local memory first, since
 * a constant cache serialises lanes that look up different entries.
 * Bound: memory bandwidth (one read and one write per byte).
 */
#define WORD 16
#define TABLE_AT 16

#define OPV_ADD(v) ((v) + val)
#define OPV_XOR(v) ((v) ^ val)
#define OPV_AND(v) ((v) & val)
#define OPV_OR(v) ((v) | val)
#define OPV_SET(v) ((uchar16)val)
#define OPV_MAP(v) map16((v), tab)
#define OPS_ADD(b) ((uchar)((b) + val))
#define OPS_XOR(b) ((uchar)((b) ^ val))
#define OPS_AND(b) ((uchar)((b) & val))
#define OPS_OR(b) ((uchar)((b) | val))
#define OPS_SET(b) (val)
#define OPS_MAP(b) (tab[(b)])

/* Lanes whose byte index start+j lies in [lo, hi), as a select() mask. */
static inline char16 lane_mask(ulong start, ulong lo, ulong hi)
{
    const uchar16 lane = (uchar16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const uchar a = (uchar)(lo <= start ? 0 : min(lo - start, (ulong)WORD));
    const uchar b = (uchar)(hi <= start ? 0 : min(hi - start, (ulong)WORD));
    return (lane >= (uchar16)a) & (lane < (uchar16)b);
}

static inline uchar16 map16(uchar16 v, __local const uchar *tab)
{
    uchar16 r;
    r.s0 = tab[v.s0]; r.s1 = tab[v.s1]; r.s2 = tab[v.s2]; r.s3 = tab[v.s3];
    r.s4 = tab[v.s4]; r.s5 = tab[v.s5]; r.s6 = tab[v.s6]; r.s7 = tab[v.s7];
    r.s8 = tab[v.s8]; r.s9 = tab[v.s9]; r.sa = tab[v.sa]; r.sb = tab[v.sb];
    r.sc = tab[v.sc]; r.sd = tab[v.sd]; r.se = tab[v.se]; r.sf = tab[v.sf];
    return r;
}

#define XFORM_LOOP(OPV, OPS)                                                          \
    const uchar val = params[0];                                                      \
    const ulong first = w0 + (chunk ? get_global_id(0) * chunk : get_global_id(0));  \
    const ulong last = chunk ? min(w1, first + chunk) : w1;                          \
    const ulong stride = chunk ? 1 : get_global_size(0);                             \
    for (ulong w = first; w < last; w += stride) {                                   \
        const ulong start = w * WORD;                                                 \
        if (start + WORD <= n) {                                                      \
            const uchar16 v = ((__global const uchar16 *)src)[w];                     \
            uchar16 t = OPV(v);                                                       \
            if (start < lo || start + WORD > hi)                                      \
                t = select(v, t, lane_mask(start, lo, hi));                           \
            ((__global uchar16 *)dst)[w] = t;                                         \
        } else {                                                                      \
            for (ulong i = start; i < n; i++) {                                       \
                const uchar b = src[i];                                               \
                dst[i] = (i >= lo && i < hi) ? OPS(b) : b;                            \
            }                                                                         \
        }                                                                             \
    }

#define XFORM_ARGS                                                                    \
    __global const uchar *src, __global uchar *dst, ulong n, ulong lo, ulong hi,      \
        ulong w0, ulong w1, ulong chunk, __constant uchar *params

__kernel void transform_add(XFORM_ARGS) { XFORM_LOOP(OPV_ADD, OPS_ADD) }
__kernel void transform_xor(XFORM_ARGS) { XFORM_LOOP(OPV_XOR, OPS_XOR) }
__kernel void transform_and(XFORM_ARGS) { XFORM_LOOP(OPV_AND, OPS_AND) }
__kernel void transform_or(XFORM_ARGS) { XFORM_LOOP(OPV_OR, OPS_OR) }
__kernel void transform_set(XFORM_ARGS) { XFORM_LOOP(OPV_SET, OPS_SET) }

__kernel void transform_map(XFORM_ARGS)
{
    __local uchar tab[256];
    for (uint i = get_local_id(0); i < 256; i += get_local_size(0))
        tab[i] = params[TABLE_AT + i];
    barrier(CLK_LOCAL_MEM_FENCE);
    XFORM_LOOP(OPV_MAP, OPS_MAP)
}
