/* SPDX-License-Identifier: MIT */
/* op_transform.c: the byte transform step (kernels/transform.cl).
 *
 * The operand and the map table travel in a small read-only parameter
 * block that the kernel reads as __constant memory; a block larger than the
 * device's constant buffer is refused before anything runs. In place, only
 * the words covering the sub-range are touched; out of place (when the
 * input is also being copied back), every byte is written.
 */
#include "op.h"

#include <stdlib.h>
#include <string.h>

#define OP_XFORM_TABLE 256
/* CPU devices' map of at least OP_XFORM_PAIRS_MIN bytes also gets the
 * table for byte pairs (header byte KERNEL_XFORM_HAS_PAIRS set): entry v (two
 * bytes, at KERNEL_XFORM_PAIRS_AT + 2v) is table[v & 255], table[v >> 8].
 * Building it costs the host ~50 us and its first lookups miss the cache,
 * which a small input does not win back. */
#define OP_XFORM_PAIRS 65536
#define OP_XFORM_PAIRS_MIN (1u << 20)

/* GPUs run transform_OP (v1: grid-stride, 4 words in flight per
 * work-item) or transform_OP_v2 (a group's tile of 8 x 256 consecutive
 * words, 8 in flight, no per-word tests inside the range, one group per
 * tile: op_tile_grid), as the device's variants say (dev_internal.h).
 * Map has its own: transform_map (v1's loop, a 256-byte table),
 * transform_map_v2 (v2's tiles, several per group, a table per bank) and
 * transform_map_v3 (v2's tiles, one per group, v1's table); a map smaller
 * than variants.map_min runs v1 whatever the variant. */

/* transform_OP_v2's tiles per group for map (KERNEL_XFORM_V2_WORDS words
 * per work-item): map's groups take several tiles each, since each first
 * fills an 8 KiB table. */
#define OP_XFORM_V2_MAP_TILES 4
#define OP_XFORM_V2_MAP_GROUPS_PER_CU 8
/* transform_OP and transform_OP_v2 on GPUs, transform_OP_chunk on CPU
 * devices (transform.cl). */
enum { OP_XFORM_GPU_V1, OP_XFORM_GPU_V2, OP_XFORM_GPU_V3, OP_XFORM_CPU };
static const char *const op_xform_kernels[][4] = {
    [XFORM_ADD] = {"transform_add", "transform_add_v2", NULL, "transform_add_chunk"},
    [XFORM_XOR] = {"transform_xor", "transform_xor_v2", NULL, "transform_xor_chunk"},
    [XFORM_AND] = {"transform_and", "transform_and_v2", NULL, "transform_and_chunk"},
    [XFORM_OR] = {"transform_or", "transform_or_v2", NULL, "transform_or_chunk"},
    [XFORM_SET] = {"transform_set", "transform_set_v2", NULL, "transform_set_chunk"},
    [XFORM_MAP] = {"transform_map", "transform_map_v2", "transform_map_v3",
                   "transform_map_chunk"},
};


/* transform_OP_v2's tiles per work-group: one, but map's groups take up
 * to OP_XFORM_V2_MAP_TILES while that still leaves
 * OP_XFORM_V2_MAP_GROUPS_PER_CU groups per compute unit (4 tiles for all
 * sizes left a 1 MiB map 8 groups: 0.46 of copy on the H100). */
static uint64_t op_xform_tiles_per_group(const struct dev *d, const struct transform_params *p,
                                         uint64_t words, size_t wg)
{
    if (p->op != XFORM_MAP)
        return 1;
    uint64_t tiles = words / (KERNEL_XFORM_V2_WORDS * wg);
    uint64_t per = tiles / ((uint64_t)d->info.compute_units * OP_XFORM_V2_MAP_GROUPS_PER_CU);
    return per < 1 ? 1 : per > OP_XFORM_V2_MAP_TILES ? OP_XFORM_V2_MAP_TILES : per;
}

static size_t op_xform_block_size(enum transform_op op)
{
    return KERNEL_XFORM_TABLE_AT + (op == XFORM_MAP ? OP_XFORM_TABLE : 0);
}

enum status_code op_transform_check(const struct dev *d, const struct transform_params *p,
                                    size_t len, struct job *job)
{
    if ((unsigned)p->op > XFORM_MAP)
        return job_fail(job, STATUS_INVALID_ARGUMENT, "transform.op: unknown operation %d",
                        (int)p->op);
    if (p->offset > len || p->length > len - p->offset)
        return job_fail(job, STATUS_INVALID_ARGUMENT,
                        "transform.offset+length (%llu+%llu) exceeds the input length %zu",
                        (unsigned long long)p->offset, (unsigned long long)p->length, len);
    size_t block = op_xform_block_size(p->op);
    if (block > d->info.max_constant_buffer_size)
        return job_fail(job, STATUS_INVALID_ARGUMENT,
                        "transform parameters (%zu bytes) exceed device %u's "
                        "max_constant_buffer_size of %llu bytes",
                        block, d->info.index, (unsigned long long)d->info.max_constant_buffer_size);
    return STATUS_OK;
}

/* The parameter block; for map on CPU devices, with the pair table (read
 * as __global there, so the constant-buffer limit does not apply to it). */
static enum status_code op_xform_params(struct dev_exec *x, const struct transform_params *p,
                                        cl_mem *out)
{
    bool pairs = p->op == XFORM_MAP && x->d->shape == DEV_SHAPE_CPU &&
                 p->length >= OP_XFORM_PAIRS_MIN;
    size_t size = pairs ? KERNEL_XFORM_PAIRS_AT + 2 * OP_XFORM_PAIRS : op_xform_block_size(p->op);
    uint8_t *block = calloc(1, size > KERNEL_XFORM_TABLE_AT + OP_XFORM_TABLE
                                   ? size : KERNEL_XFORM_TABLE_AT + OP_XFORM_TABLE);
    if (!block) {
        *out = NULL;
        return job_fail(x->job, STATUS_RESOURCE_EXHAUSTED,
                        "out of host memory for the transform parameter block");
    }
    block[0] = p->value;
    block[KERNEL_XFORM_HAS_PAIRS] = pairs;
    memcpy(block + KERNEL_XFORM_TABLE_AT, p->table, OP_XFORM_TABLE);
    for (size_t v = 0; pairs && v < OP_XFORM_PAIRS; v++) {
        block[KERNEL_XFORM_PAIRS_AT + 2 * v] = p->table[v & 0xff];
        block[KERNEL_XFORM_PAIRS_AT + 2 * v + 1] = p->table[v >> 8];
    }
    cl_int rc;
    *out = dev_const_get(x->d, block, size, &rc);
    free(block);
    if (rc != CL_SUCCESS) {
        *out = NULL;
        return dev_exec_cl_fail(x, "creating the transform parameter block", rc);
    }
    return STATUS_OK;
}

enum status_code op_transform(struct dev_exec *x, const struct transform_params *p,
                              struct dev_buf *src, struct dev_buf *dst)
{
    const struct dev_variants *v = &x->d->variants;
    enum dev_variant variant = p->op != XFORM_MAP      ? v->transform
                               : src->size >= v->map_min ? v->map
                                                         : DEV_VARIANT_V1;
    int which = x->d->shape == DEV_SHAPE_CPU   ? OP_XFORM_CPU
                : variant == DEV_VARIANT_V3    ? OP_XFORM_GPU_V3
                : variant == DEV_VARIANT_V2    ? OP_XFORM_GPU_V2
                                               : OP_XFORM_GPU_V1;
    const char *name = op_xform_kernels[p->op][which];
    cl_kernel k = dev_kernel(x->d, name);
    bool in_place = src == dst;
    cl_ulong n = src->size, lo = p->offset, hi = p->offset + p->length;
    /* In place, only the words holding [lo, hi) need a visit. */
    cl_ulong w0 = in_place ? lo / KERNEL_WORD : 0;
    cl_ulong w1 = in_place ? (hi + KERNEL_WORD - 1) / KERNEL_WORD
                           : (n + KERNEL_WORD - 1) / KERNEL_WORD;
    if (n == 0 || w1 <= w0)
        return STATUS_OK;
    cl_mem params;
    enum status_code st = op_xform_params(x, p, &params);
    if (st != STATUS_OK)
        return st;
    struct dev_grid g = dev_grid_plan(x->d, w1 - w0, op_wg(x->d, k));
    if (which == OP_XFORM_GPU_V2)
        g = op_tile_grid(x->d, w1 - w0, g.local,
                         KERNEL_XFORM_V2_WORDS * op_xform_tiles_per_group(x->d, p, w1 - w0, g.local));
    if (which == OP_XFORM_GPU_V3)
        g = op_tile_grid(x->d, w1 - w0, g.local, KERNEL_XFORM_V2_WORDS);
    const cl_ulong args[] = {n, lo, hi, w0, w1, g.chunk};
    dev_exec_arg(x, k, name, 0, sizeof(cl_mem), &src->mem);
    dev_exec_arg(x, k, name, 1, sizeof(cl_mem), &dst->mem);
    for (cl_uint i = 0; i < 6; i++)
        dev_exec_arg(x, k, name, 2 + i, sizeof args[i], &args[i]);
    dev_exec_arg(x, k, name, 8, sizeof(cl_mem), &params);
    const struct dev_access acc[] = {{dst, HAZARD_WRITE}, {src, HAZARD_READ}};
    st = dev_exec_kernel(x, k, name, g.global, g.local, acc, in_place ? 1 : 2);
    /* Deferred by OpenCL until the kernel has run. */
    clReleaseMemObject(params);
    return st;
}
