/* reverse.cl: dst[i] = src[n-1-i] for any n, out of place.
 *
 * Access pattern: 16-byte output words at aligned addresses, either
 * grid-stride (chunk == 0, GPUs: consecutive work-items write consecutive
 * words, coalesced) or one contiguous run of chunk words per work-item
 * (CPU devices, where a work-item is a loop on one core and a stride
 * would defeat the caches and prefetchers).
 * Output word w is the reversal of the 16 source bytes ending at n-16w; with
 * r = n % 16 those straddle two aligned source words, both loaded as whole
 * aligned words and combined by shuffle2 (neighbouring work-items share the
 * same source words, so each is fetched from DRAM once). Only two places
 * need care: the r trailing output bytes (tail) and, when r != 0, word 0,
 * whose second aligned source word would run past n; both use byte
 * accesses. Nothing reads or writes outside [0, n).
 * Bound: memory bandwidth (n bytes read, n written).
 */
#define WORD 16

__kernel void reverse_bytes(__global const uchar *restrict src, __global uchar *restrict dst,
                            ulong n, ulong chunk)
{
    const ulong nw = n / WORD;
    const uint r = (uint)(n % WORD);
    const ulong begin = chunk ? get_global_id(0) * chunk : get_global_id(0);
    const ulong end = chunk ? min(nw, begin + chunk) : nw;
    const ulong stride = chunk ? 1 : get_global_size(0);
    const uchar16 rev = (uchar16)(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const uchar16 mask = rev + (uchar16)((uchar)r);
    __global const uchar16 *s16 = (__global const uchar16 *)src;
    __global uchar16 *d16 = (__global uchar16 *)dst;

    for (ulong w = begin; w < end; w += stride) {
        /* Source window [base, base+16), base = 16a + r. */
        const ulong base = n - WORD * w - WORD;
        const ulong a = base / WORD;
        uchar16 v;
        if (r == 0)
            v = shuffle(s16[a], rev);
        else if (w != 0)
            v = shuffle2(s16[a], s16[a + 1], mask);
        else
            v = shuffle(vload16(0, src + base), rev);
        d16[w] = v;
    }
    if (get_global_id(0) == 0)
        for (uint j = 0; j < r; j++)
            dst[nw * WORD + j] = src[r - 1 - j];
}
