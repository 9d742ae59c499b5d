/* SPDX-License-Identifier: MIT */
/* dev_const.c: small read-only device buffers a device keeps by content
 * (dev_const_get, dev_internal.h).
 *
 * NVIDIA's driver gives a new buffer its device memory at the first launch
 * that uses it, and that launch waits there for the work queued before it.
 * A transform's parameter block made for each 4 MiB piece of a region job
 * held the runner 100 us of its 164 us per piece (4xH200: one GPU made 21
 * GB/s of the 45 its copies allow; with blocks kept, four GPUs went from
 * 33.8 to 75.5 GB/s). A job's pieces and a stream's chunks pass the same
 * bytes every time, so each device keeps its last DEV_CONST_KEEP blocks
 * and hands one out again while its bytes are the same.
 */
#include "dev_internal.h"

#include <stdlib.h>
#include <string.h>

void dev_const_init(struct dev *d)
{
    pthread_mutex_init(&d->consts.lock, NULL);
}

void dev_const_free(struct dev *d)
{
    for (size_t i = 0; i < DEV_CONST_KEEP; i++) {
        struct dev_const_entry *e = &d->consts.e[i];
        if (e->mem)
            clReleaseMemObject(e->mem);
        free(e->bytes);
        *e = (struct dev_const_entry){0};
    }
    pthread_mutex_destroy(&d->consts.lock);
}

/* A new buffer holding bytes, kept in the least recently used slot (a
 * reference for the caller too), or made for this caller alone where
 * there is no memory to keep it. Called with the lock held. */
static cl_mem dev_const_make(struct dev *d, const void *bytes, size_t size, cl_int *rc)
{
    cl_mem mem = clCreateBuffer(d->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, size,
                                (void *)(uintptr_t)bytes, rc);
    uint8_t *copy = *rc == CL_SUCCESS ? malloc(size) : NULL;
    if (!copy)
        return mem;
    struct dev_const_entry *old = &d->consts.e[0];
    for (size_t i = 1; i < DEV_CONST_KEEP; i++)
        if (d->consts.e[i].used < old->used)
            old = &d->consts.e[i];
    if (old->mem)
        clReleaseMemObject(old->mem);   /* launches that hold it keep theirs */
    free(old->bytes);
    memcpy(copy, bytes, size);
    clRetainMemObject(mem);
    *old = (struct dev_const_entry){copy, size, mem, ++d->consts.tick};
    return mem;
}

cl_mem dev_const_get(struct dev *d, const void *bytes, size_t size, cl_int *rc)
{
    if (size > DEV_CONST_MAX_BYTES)
        return clCreateBuffer(d->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, size,
                              (void *)(uintptr_t)bytes, rc);
    pthread_mutex_lock(&d->consts.lock);
    cl_mem mem = NULL;
    for (size_t i = 0; i < DEV_CONST_KEEP && !mem; i++) {
        struct dev_const_entry *e = &d->consts.e[i];
        if (e->mem && e->size == size && memcmp(e->bytes, bytes, size) == 0) {
            e->used = ++d->consts.tick;
            clRetainMemObject(e->mem);
            mem = e->mem;
            *rc = CL_SUCCESS;
        }
    }
    if (!mem)
        mem = dev_const_make(d, bytes, size, rc);
    pthread_mutex_unlock(&d->consts.lock);
    return mem;
}
