/* SPDX-License-Identifier: MIT */
/* dev_pinned.c: pinned host memory: a device's staging buffers, and
 * regions' mappings.
 *
 * Staging: a CL_MEM_ALLOC_HOST_PTR buffer mapped once and kept mapped:
 * drivers back it with page-locked memory, so copies between it and the
 * device run as DMA at full bus speed (55 GB/s measured on the H100,
 * against as low as 6 GB/s from pageable malloc memory). On PoCL it is
 * ordinary host memory.
 *
 * Regions: a CL_MEM_USE_HOST_PTR buffer over the mapping, never used in a
 * command, only kept: NVIDIA's driver pins the pages when it is made, and
 * from then on clEnqueueRead/WriteBuffer to or from any address in them
 * runs at the pinned speed (H100, 1 GiB: 7 GB/s in and 11 out before,
 * 52 and 54 after; making it takes ~35 ms per GiB). Since no command uses
 * the buffer, no driver copy of it can go stale.
 */
#include "dev_internal.h"

#include <stdlib.h>

struct dev_pinned {
    struct dev *d;
    cl_mem mem;     /* owned */
    void *host;     /* mapped for the buffer's whole life; NULL for a wrap */
};

void *dev_pinned_alloc(struct dev *d, size_t size, struct dev_pinned **out)
{
    struct dev_pinned *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    cl_int rc;
    p->d = d;
    p->mem = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, size, NULL, &rc);
    if (rc == CL_SUCCESS)
        p->host = clEnqueueMapBuffer(d->q[DEV_Q_IN], p->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE,
                                     0, size, 0, NULL, NULL, &rc);
    if (rc != CL_SUCCESS || !p->host) {
        if (p->mem)
            clReleaseMemObject(p->mem);
        free(p);
        return NULL;
    }
    *out = p;
    return p->host;
}

struct dev_pinned *dev_pinned_wrap(struct dev *d, void *host, size_t size)
{
    struct dev_pinned *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    cl_int rc;
    p->d = d;
    p->mem = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, size, host, &rc);
    if (rc != CL_SUCCESS) {
        free(p);
        return NULL;
    }
    return p;
}

void dev_pinned_free(struct dev_pinned *p)
{
    if (!p)
        return;
    cl_event ev = NULL;
    if (p->host && clEnqueueUnmapMemObject(p->d->q[DEV_Q_IN], p->mem, p->host, 0, NULL, &ev) == CL_SUCCESS) {
        clWaitForEvents(1, &ev);
        clReleaseEvent(ev);
    }
    clReleaseMemObject(p->mem);
    free(p);
}
