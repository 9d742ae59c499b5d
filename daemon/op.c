/* SPDX-License-Identifier: MIT */
/* op.c: what the kernel families share (op.h): their work-group sizes and
 * the tile grid of the GPU kernels that take a tile per group. */
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
