/* SPDX-License-Identifier: MIT */
/* dev_grid.c: the geometry of a launch (dev_internal.h): how many
 * work-items, in groups of how many, each covering how much. */
#include "dev_internal.h"

/* Work-groups per compute unit a grid-stride launch aims for: enough to
 * hide memory latency on a GPU, enough for load balance on a CPU. */
#define DEV_GROUPS_PER_CU_GPU 8
#define DEV_GROUPS_PER_CU_CPU 4
/* Contiguous chunks per compute unit on CPU devices: a few, so a core that
 * finishes early can take another. */
#define DEV_CHUNKS_PER_CU_CPU 4

size_t dev_grid_size(const struct dev *d, uint64_t items, size_t wg)
{
    if (wg == 0)
        wg = 1;
    uint64_t per_cu = d->shape == DEV_SHAPE_CPU ? DEV_GROUPS_PER_CU_CPU : DEV_GROUPS_PER_CU_GPU;
    uint64_t groups = (items + wg - 1) / wg;
    uint64_t fill = (uint64_t)d->info.compute_units * per_cu;
    if (groups > fill)
        groups = fill;
    uint64_t cap = d->launch_items_max / wg;
    if (groups > cap)
        groups = cap;
    if (groups == 0)
        groups = 1;
    return (size_t)(groups * wg);
}

struct dev_grid dev_grid_plan(const struct dev *d, uint64_t units, size_t wg)
{
    struct dev_grid g = {0, wg ? wg : 1, 0};
    if (d->shape != DEV_SHAPE_CPU) {
        g.global = dev_grid_size(d, units, g.local);
        return g;
    }
    uint64_t items = (uint64_t)d->info.compute_units * DEV_CHUNKS_PER_CU_CPU;
    if (items > d->launch_items_max)
        items = d->launch_items_max;
    if (items > units)
        items = units;
    if (items == 0)
        items = 1;
    g.local = 1;
    g.chunk = (units + items - 1) / items;
    if (g.chunk == 0)
        g.chunk = 1;
    g.global = (size_t)((units + g.chunk - 1) / g.chunk);
    if (g.global == 0)
        g.global = 1;
    return g;
}
