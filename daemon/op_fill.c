/* SPDX-License-Identifier: MIT */
/* op_fill.c: the fill step (kernels/fill.cl).
 *
 * The caller's tile is the work-group size, checked against the device's
 * and the kernel's limits; the grid is padded to a multiple of it. Each
 * work-item writes OP_FILL_ITEM_BYTES on GPUs (16-byte stores) and one
 * element on CPU devices (see fill.cl). A count larger than one launch may
 * cover (dev->launch_items_max work-items) is split into several launches,
 * each starting at a multiple of a work-group's share.
 */
#include "op.h"

#define OP_FILL_TILE_DEFAULT 256
#define OP_FILL_ITEM_BYTES (KERNEL_WORD * KERNEL_FILL_STORES)

/* GPUs write OP_FILL_ITEM_BYTES per work-item, CPU devices one element
 * (kernels/fill.cl says why). */
static const char *op_fill_kernel_name(const struct dev *d, enum elem_type t)
{
    bool cpu = d->shape == DEV_SHAPE_CPU;
    switch (t) {
    case ELEM_I32:
    case ELEM_U32: return cpu ? "fill_u32_scalar" : "fill_u32";
    case ELEM_I64: return cpu ? "fill_u64_scalar" : "fill_u64";
    case ELEM_F32: return cpu ? "fill_f32_scalar" : "fill_f32";
    default: return NULL;
    }
}

static uint64_t op_fill_per_item(const struct dev *d, enum elem_type t)
{
    return d->shape == DEV_SHAPE_CPU ? 1 : OP_FILL_ITEM_BYTES / elem_size(t);
}

/* The tile a fill runs with: the caller's, or a default the kernel allows. */
static size_t op_fill_tile(const struct dev *d, const struct fill_params *p, cl_kernel k)
{
    return p->tile ? p->tile : dev_kernel_wg(d, k, OP_FILL_TILE_DEFAULT);
}

enum status_code op_fill_check(const struct dev *d, const struct fill_params *p,
                               struct job *job)
{
    const char *name = op_fill_kernel_name(d, p->type);
    if (!name)
        return job_fail(job, STATUS_INVALID_ARGUMENT,
                        "fill.type: only int32, uint32, int64 and float32 can be filled");
    cl_kernel k = dev_kernel(d, name);
    if (p->tile > d->info.max_work_group_size)
        return job_fail(job, STATUS_INVALID_ARGUMENT,
                        "fill.tile %u exceeds device %u's max_work_group_size of %llu", p->tile,
                        d->info.index, (unsigned long long)d->info.max_work_group_size);
    size_t kmax = dev_kernel_wg_max(d, k);
    if (p->tile > kmax)
        return job_fail(job, STATUS_INVALID_ARGUMENT,
                        "fill.tile %u exceeds the work-group limit of kernel %s on device %u "
                        "(%zu)",
                        p->tile, name, d->info.index, kmax);
    size_t esize = elem_size(p->type);
    if (p->count > d->info.max_mem_alloc_size / esize)
        return job_fail(job, STATUS_RESOURCE_EXHAUSTED,
                        "fill.count %llu elements exceed device %u's max_mem_alloc_size of %llu "
                        "bytes",
                        (unsigned long long)p->count, d->info.index,
                        (unsigned long long)d->info.max_mem_alloc_size);
    return STATUS_OK;
}

static void op_fill_values(struct dev_exec *x, cl_kernel k, const char *name,
                           const struct fill_params *p)
{
    if (p->type == ELEM_F32) {
        dev_exec_arg(x, k, name, 3, sizeof(float), &p->start_f);
        dev_exec_arg(x, k, name, 4, sizeof(float), &p->step_f);
        return;
    }
    /* Two's complement: unsigned arithmetic wraps exactly as the types do. */
    cl_ulong start = (cl_ulong)p->start, step = (cl_ulong)p->step;
    dev_exec_arg(x, k, name, 3, sizeof start, &start);
    dev_exec_arg(x, k, name, 4, sizeof step, &step);
}

enum status_code op_fill_range(struct dev_exec *x, const struct fill_params *p,
                               struct dev_buf *dst, uint64_t from, uint64_t end)
{
    const char *name = op_fill_kernel_name(x->d, p->type);
    cl_kernel k = dev_kernel(x->d, name);
    size_t tile = op_fill_tile(x->d, p, k);
    uint64_t per_item = op_fill_per_item(x->d, p->type);
    uint64_t items_max = x->d->launch_items_max / tile * tile;
    if (items_max == 0)
        items_max = tile;  /* one work-group is the smallest launch there is */
    uint64_t per_launch = items_max * per_item;
    cl_ulong n = end < p->count ? end : p->count;
    dev_exec_arg(x, k, name, 0, sizeof(cl_mem), &dst->mem);
    dev_exec_arg(x, k, name, 2, sizeof n, &n);
    op_fill_values(x, k, name, p);
    const struct dev_access acc[] = {{dst, HAZARD_WRITE}};
    for (cl_ulong first = from; first < n && !x->failed; first += per_launch) {
        uint64_t elems = n - first < per_launch ? n - first : per_launch;
        uint64_t items = (elems + per_item - 1) / per_item;
        size_t global = (size_t)((items + tile - 1) / tile * tile);
        dev_exec_arg(x, k, name, 1, sizeof first, &first);
        dev_exec_kernel(x, k, name, global, tile, acc, 1);
    }
    return x->job->status;
}

enum status_code op_fill(struct dev_exec *x, const struct fill_params *p, struct dev_buf *dst)
{
    return op_fill_range(x, p, dst, 0, p->count);
}
