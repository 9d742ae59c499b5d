/* SPDX-License-Identifier: MIT */
/* op.c: what the kernel families share (op.h): their work-group sizes, the
 * tile grid of the GPU kernels that take a tile per group, and the cap of
 * grid-stride launches whose groups hold __local memory. */
#include "op.h"

size_t op_wg(const struct dev *d, cl_kernel k)
{
    return dev_kernel_wg(d, k, d->shape == DEV_SHAPE_CPU ? OP_WG_CPU : OP_WG_GPU);
}

struct dev_grid op_tile_grid(const struct dev *d, uint64_t units, size_t wg, uint64_t per_item)
{
    struct dev_grid g = {0, wg ? wg : 1, 0};
    uint64_t tile = per_item * g.local;
    uint64_t groups = (units + tile - 1) / tile;
    uint64_t cap = d->launch_items_max / g.local;
    if (groups > cap)
        groups = cap;
    if (groups == 0)
        groups = 1;
    g.global = (size_t)(groups * g.local);
    return g;
}

/* Local memory one GPU multiprocessor shares among its resident work-groups
 * (Hopper has 228 KiB; less elsewhere, costing only speed), and the most
 * groups per multiprocessor a launch needs. */
#define OP_CU_LOCAL_BYTES (192u << 10)
#define OP_GROUPS_PER_CU_MAX 8

size_t op_resident_cap(const struct dev *d, size_t global, size_t wg, uint64_t local,
                       unsigned groups)
{
    uint64_t per_cu = groups ? groups : local ? OP_CU_LOCAL_BYTES / local : OP_GROUPS_PER_CU_MAX;
    if (per_cu > OP_GROUPS_PER_CU_MAX)
        per_cu = OP_GROUPS_PER_CU_MAX;
    if (per_cu == 0)
        per_cu = 1;
    uint64_t resident = per_cu * d->info.compute_units;
    return global / wg > resident ? (size_t)(resident * wg) : global;
}
