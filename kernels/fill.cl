/* SPDX-License-Identifier: MIT */
/* fill.cl: A[k] = start + k*step for k in [first, n); on GPUs KERNEL_FILL_STORES
 * 16-byte stores per work-item, on CPU devices one element (*_scalar).
 *
 * Access pattern (GPUs): work-group g of a launch (the caller's tile of
 * work-items) owns the contiguous block of tile * KERNEL_FILL_STORES 16-byte
 * vectors starting at element first + g * that; store j of work-item i
 * writes vector j * tile + i of the block, so each store instruction of a
 * wavefront is one coalesced run. One 4-byte store per work-item left 32-bit fills at 0.56
 * of copy on the H100, and tile 64 at 0.14, bound by how fast work-groups
 * are started: each group now writes 16 * KERNEL_FILL_STORES bytes per work-item.
 * The host pads the grid to a multiple of the tile and starts each launch
 * at a multiple of a group's block (so vectors are 16-byte aligned); the
 * vector holding n is written element by element and vectors past n not at
 * all. Integers wrap to their width: values are computed in unsigned
 * arithmetic of the element's width, which equals the 64-bit value
 * truncated (so int32 and uint32 share fill_u32). Floats are
 * fma((float)k, step, start), correctly rounded like C's fmaf.
 * Bound: memory bandwidth (writes only).
 */
/* 16-byte stores per work-item; daemon/op_fill.c's OP_FILL_ITEM_BYTES is
 * 16 times this. Eight make a tile-64 group write 8 KiB. */

#define FILL_BODY(TV, V, VECTOR, VALUE)                                         \
    const ulong tile = get_local_size(0);                                       \
    const ulong block = first + get_group_id(0) * tile * (V * KERNEL_FILL_STORES);     \
    for (uint j = 0; j < KERNEL_FILL_STORES; j++) {                                    \
        const ulong k0 = block + (j * tile + get_local_id(0)) * V;              \
        if (k0 + V <= n) {                                                      \
            *(__global TV *)(dst + k0) = VECTOR(k0, VALUE);                     \
        } else {                                                                \
            for (ulong k = k0; k < n; k++)                                      \
                dst[k] = VALUE(k);                                              \
        }                                                                       \
    }

#define VECTOR4(k, F) (F(k), F((k) + 1), F((k) + 2), F((k) + 3))
#define VECTOR2(k, F) (F(k), F((k) + 1))
#define VALUE_U32(k) ((uint)start + (uint)step * (uint)(k))
#define VALUE_U64(k) (start + step * (k))
#define VALUE_F32(k) fma((float)(k), step, start)

__kernel void fill_u32(__global uint *dst, ulong first, ulong n, ulong start, ulong step)
{
    FILL_BODY(uint4, 4, (uint4)VECTOR4, VALUE_U32)
}

__kernel void fill_u64(__global ulong *dst, ulong first, ulong n, ulong start, ulong step)
{
    FILL_BODY(ulong2, 2, (ulong2)VECTOR2, VALUE_U64)
}

__kernel void fill_f32(__global float *dst, ulong first, ulong n, float start, float step)
{
    FILL_BODY(float4, 4, (float4)VECTOR4, VALUE_F32)
}

/* CPU devices: one element per work-item, work-item i of a launch writing
 * element first + i. PoCL runs a work-group as a loop over its items and
 * vectorises that loop into contiguous stores, which the strided 16-byte
 * stores above defeat (they ran at half the speed there). */
__kernel void fill_u32_scalar(__global uint *dst, ulong first, ulong n, ulong start, ulong step)
{
    const ulong k = first + get_global_id(0);
    if (k < n)
        dst[k] = VALUE_U32(k);
}

__kernel void fill_u64_scalar(__global ulong *dst, ulong first, ulong n, ulong start, ulong step)
{
    const ulong k = first + get_global_id(0);
    if (k < n)
        dst[k] = VALUE_U64(k);
}

__kernel void fill_f32_scalar(__global float *dst, ulong first, ulong n, float start, float step)
{
    const ulong k = first + get_global_id(0);
    if (k < n)
        dst[k] = VALUE_F32(k);
}
