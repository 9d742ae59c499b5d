/* reverse.cl: dst[i] = src[n-1-i] for any n, out of place.
 *
 * Access pattern: grid-stride over 16-byte output words at aligned
 * addresses; consecutive work-items write consecutive words (coalesced).
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
                            ulong n)
{
    const ulong nw = n / WORD;
    const uint r = (uint)(n % WORD);
    const ulong stride = get_global_size(0);
    const uchar16 rev = (uchar16)(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const uchar16 mask = rev + (uchar16)((uchar)r);
    __global const uchar16 *s16 = (__global const uchar16 *)src;
    __global uchar16 *d16 = (__global uchar16 *)dst;

    for (ulong w = get_global_id(0); w < nw; w += stride) {
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
