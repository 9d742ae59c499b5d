/* fill.cl: A[k] = start + k*step for k in [first, n), one element per
 * work-item.
 *
 * Access pattern: work-item i of a launch writes element first + i, so a
 * work-group (the caller's tile) writes one contiguous, coalesced run. The
 * host pads the grid to a multiple of the tile; items past n write nothing.
 * Integers wrap to their width: the value is computed in 64-bit unsigned
 * arithmetic (no signed overflow) and truncated, which is the same modulo
 * 2^32 for int32 and uint32 (so they share fill_u32). Floats are
 * fma((float)k, step, start), correctly rounded like C's fmaf.
 * Bound: memory bandwidth (writes only).
 */
__kernel void fill_u32(__global uint *dst, ulong first, ulong n, ulong start, ulong step)
{
    const ulong k = first + get_global_id(0);
    if (k < n)
        dst[k] = (uint)(start + k * step);
}

__kernel void fill_u64(__global ulong *dst, ulong first, ulong n, ulong start, ulong step)
{
    const ulong k = first + get_global_id(0);
    if (k < n)
        dst[k] = start + k * step;
}

__kernel void fill_f32(__global float *dst, ulong first, ulong n, float start, float step)
{
    const ulong k = first + get_global_id(0);
    if (k < n)
        dst[k] = fma((float)k, step, start);
}
