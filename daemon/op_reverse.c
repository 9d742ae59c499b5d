/* SPDX-License-Identifier: MIT */
/* op_reverse.c: the reverse step (kernels/reverse.cl), out of place so
 * that a copy out of the input can run beside it. */
#include "op.h"

/* GPUs run reverse_bytes (v1: grid-stride, 4 words in flight per
 * work-item) or reverse_bytes_v2 (a group's tile of 8 x 256 consecutive
 * output words, 8 in flight per work-item, one group per tile), as the
 * device's variants say (dev_internal.h). */

enum status_code op_reverse_range(struct dev_exec *x, struct dev_buf *src, struct dev_buf *dst,
                                  uint64_t first, uint64_t end)
{
    /* Grid-stride on GPUs, one contiguous chunk per work-item on CPUs
     * (see kernels/reverse.cl). */
    bool cpu = x->d->shape == DEV_SHAPE_CPU;
    bool v2 = x->d->variants.reverse == DEV_VARIANT_V2;
    const char *name = cpu ? "reverse_bytes_chunk" : v2 ? "reverse_bytes_v2" : "reverse_bytes";
    cl_kernel k = dev_kernel(x->d, name);
    cl_ulong n = src->size;
    if (n == 0 || first >= end)
        return STATUS_OK;
    /* Units are output words; at least one item, for the edges. */
    uint64_t words = end - first;
    struct dev_grid g = dev_grid_plan(x->d, words + 1, op_wg(x->d, k));
    if (!cpu && v2)
        g = op_tile_grid(x->d, words + 1, g.local, KERNEL_REVERSE_V2_WORDS);
    cl_ulong chunk = g.chunk, wfirst = first, wend = end;
    cl_uint i = 0;
    dev_exec_arg(x, k, name, i++, sizeof(cl_mem), &src->mem);
    dev_exec_arg(x, k, name, i++, sizeof(cl_mem), &dst->mem);
    dev_exec_arg(x, k, name, i++, sizeof n, &n);
    if (cpu)
        dev_exec_arg(x, k, name, i++, sizeof chunk, &chunk);
    dev_exec_arg(x, k, name, i++, sizeof wfirst, &wfirst);
    dev_exec_arg(x, k, name, i, sizeof wend, &wend);
    const struct dev_access acc[] = {{src, HAZARD_READ}, {dst, HAZARD_WRITE}};
    return dev_exec_kernel(x, k, name, g.global, g.local, acc, 2);
}

enum status_code op_reverse(struct dev_exec *x, struct dev_buf *src, struct dev_buf *dst)
{
    return op_reverse_range(x, src, dst, 0, src->size / KERNEL_WORD + 1);
}
