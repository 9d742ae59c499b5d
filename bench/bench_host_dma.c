/* SPDX-License-Identifier: MIT */
/* bench_host_dma: how fast bytes move between a client's shared memory (a
 * memfd mapped MAP_SHARED, as a region is) and a device buffer, by each way
 * OpenCL offers, beside the pinned-memory copy that is the PCIe limit.
 *
 *   pinned        clEnqueueWrite/ReadBuffer from a CL_MEM_ALLOC_HOST_PTR
 *                 buffer mapped once (the limit)
 *   pageable      clEnqueueWrite/ReadBuffer straight from the memfd mapping
 *   pageable async  the same, non-blocking, then clFinish (as a daemon
 *                 that queues copies and kernels together would)
 *   pinned region   pageable async again, once a CL_MEM_USE_HOST_PTR
 *                 buffer over the mapping exists (it pins the pages; the
 *                 copies do not use it): what ampd does (dev_pinned.c)
 *   use_host_ptr  that buffer used: per copy a map/unmap (so the driver
 *                 sees what the host wrote, or the host what the device
 *                 wrote) and a clEnqueueCopyBuffer to or from the device
 *                 buffer
 * The pageable rows run before the USE_HOST_PTR buffer is made: after it,
 * the same calls copy from pinned pages.
 *   memcpy xT     T threads copying the mapping into pinned memory (what a
 *                 daemon staging through its pinned pool pays before DMA)
 *
 * Every way is checked: the host changes the region between repetitions
 * and the device must see the new bytes (a driver-cached copy that went
 * stale shows up as "STALE").
 *
 *   bench_host_dma [--size 1G] [--reps 5] [--device N]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "dev_internal.h"

struct dma_ctx {
    struct dev *d;
    size_t size;
    uint8_t *region;     /* memfd mapping */
    cl_mem dev;          /* device buffer */
    cl_mem pinned;       /* ALLOC_HOST_PTR */
    uint8_t *pinned_p;
    cl_mem uhp;          /* USE_HOST_PTR over region, or NULL */
    uint8_t *check;      /* host copy for verification */
};

static void dma_die(const char *what, cl_int rc)
{
    fprintf(stderr, "bench_host_dma: %s: %s\n", what, dev_cl_error_name(rc));
    exit(1);
}

/* Reads the device buffer back through pinned memory and compares the
 * whole of it with want. */
static bool dma_device_has(struct dma_ctx *c, const uint8_t *want)
{
    cl_int rc = clEnqueueReadBuffer(c->d->q[DEV_Q_OUT], c->dev, CL_TRUE, 0, c->size, c->check,
                                    0, NULL, NULL);
    if (rc != CL_SUCCESS)
        dma_die("read back", rc);
    return memcmp(c->check, want, c->size) == 0;
}

enum dma_way { WAY_PINNED, WAY_PAGEABLE, WAY_PAGEABLE_ASYNC, WAY_PINNED_REGION, WAY_UHP };
static const char *const dma_way_name[] = {"pinned", "pageable", "pageable async",
                                           "pinned region", "use_host_ptr"};

/* One host-to-device copy by way; returns seconds. */
static double dma_in(struct dma_ctx *c, enum dma_way way)
{
    cl_command_queue q = c->d->q[DEV_Q_IN];
    cl_int rc = CL_SUCCESS;
    double t0 = bench_now();
    if (way == WAY_PINNED) {
        rc = clEnqueueWriteBuffer(q, c->dev, CL_TRUE, 0, c->size, c->pinned_p, 0, NULL, NULL);
    } else if (way == WAY_PAGEABLE) {
        rc = clEnqueueWriteBuffer(q, c->dev, CL_TRUE, 0, c->size, c->region, 0, NULL, NULL);
    } else if (way == WAY_PAGEABLE_ASYNC || way == WAY_PINNED_REGION) {
        rc = clEnqueueWriteBuffer(q, c->dev, CL_FALSE, 0, c->size, c->region, 0, NULL, NULL);
        if (rc == CL_SUCCESS)
            rc = clFinish(q);
    } else {
        /* The host wrote the region: a write map + unmap tells the driver. */
        void *p = clEnqueueMapBuffer(q, c->uhp, CL_TRUE, CL_MAP_WRITE, 0, c->size, 0, NULL, NULL,
                                     &rc);
        if (rc == CL_SUCCESS)
            rc = clEnqueueUnmapMemObject(q, c->uhp, p, 0, NULL, NULL);
        if (rc == CL_SUCCESS)
            rc = clEnqueueCopyBuffer(q, c->uhp, c->dev, 0, 0, c->size, 0, NULL, NULL);
        if (rc == CL_SUCCESS)
            rc = clFinish(q);
    }
    if (rc != CL_SUCCESS)
        dma_die("copy in", rc);
    return bench_now() - t0;
}

/* One device-to-host copy by way into the region (pinned: into pinned). */
static double dma_out(struct dma_ctx *c, enum dma_way way)
{
    cl_command_queue q = c->d->q[DEV_Q_OUT];
    cl_int rc = CL_SUCCESS;
    double t0 = bench_now();
    if (way == WAY_PINNED) {
        rc = clEnqueueReadBuffer(q, c->dev, CL_TRUE, 0, c->size, c->pinned_p, 0, NULL, NULL);
    } else if (way == WAY_PAGEABLE) {
        rc = clEnqueueReadBuffer(q, c->dev, CL_TRUE, 0, c->size, c->region, 0, NULL, NULL);
    } else if (way == WAY_PAGEABLE_ASYNC || way == WAY_PINNED_REGION) {
        rc = clEnqueueReadBuffer(q, c->dev, CL_FALSE, 0, c->size, c->region, 0, NULL, NULL);
        if (rc == CL_SUCCESS)
            rc = clFinish(q);
    } else {
        rc = clEnqueueCopyBuffer(q, c->dev, c->uhp, 0, 0, c->size, 0, NULL, NULL);
        void *p = rc == CL_SUCCESS ? clEnqueueMapBuffer(q, c->uhp, CL_TRUE, CL_MAP_READ, 0,
                                                        c->size, 0, NULL, NULL, &rc)
                                   : NULL;
        if (rc == CL_SUCCESS)
            rc = clEnqueueUnmapMemObject(q, c->uhp, p, 0, NULL, NULL);
        if (rc == CL_SUCCESS)
            rc = clFinish(q);
    }
    if (rc != CL_SUCCESS)
        dma_die("copy out", rc);
    return bench_now() - t0;
}

struct memcpy_part {
    uint8_t *dst;
    const uint8_t *src;
    size_t len;
};

static void *dma_memcpy_part(void *arg)
{
    struct memcpy_part *p = arg;
    memcpy(p->dst, p->src, p->len);
    return NULL;
}

static double dma_memcpy(uint8_t *dst, const uint8_t *src, size_t size, int threads)
{
    pthread_t th[64];
    struct memcpy_part parts[64];
    size_t per = (size / threads + 4095) & ~(size_t)4095;
    double t0 = bench_now();
    for (int i = 0; i < threads; i++) {
        size_t off = per * i < size ? per * i : size;
        size_t len = off + per <= size ? per : size - off;
        parts[i] = (struct memcpy_part){dst + off, src + off, len};
        pthread_create(&th[i], NULL, dma_memcpy_part, &parts[i]);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    return bench_now() - t0;
}

int main(int argc, char **argv)
{
    uint64_t size = 1ull << 30;
    int reps = 5;
    unsigned devno = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--size") && i + 1 < argc)
            size = bench_parse_size(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--device") && i + 1 < argc)
            devno = (unsigned)atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_host_dma [--size 1G] [--reps 5] [--device N]\n");
            return 2;
        }
    }
    if (!size || reps < 1 || reps > 100) {
        fprintf(stderr, "bench_host_dma: bad --size or --reps\n");
        return 2;
    }
    struct dev **devs;
    size_t ndev;
    char err[256];
    if (dev_open_all(&devs, &ndev, err, sizeof err) != 0 || devno >= ndev) {
        fprintf(stderr, "bench_host_dma: %s\n", ndev ? "no such device" : err);
        return 1;
    }
    struct dma_ctx c = {.d = devs[devno], .size = size};
    printf("device %s, %llu bytes, %d reps\n", c.d->info.name, (unsigned long long)size, reps);

    int fd = memfd_create("bench_region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
        perror("memfd");
        return 1;
    }
    c.region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    c.check = malloc(size);
    if (c.region == MAP_FAILED || !c.check) {
        perror("mmap");
        return 1;
    }
    cl_int rc;
    c.dev = clCreateBuffer(c.d->ctx, CL_MEM_READ_WRITE, size, NULL, &rc);
    if (rc != CL_SUCCESS)
        dma_die("device buffer", rc);
    c.pinned = clCreateBuffer(c.d->ctx, CL_MEM_ALLOC_HOST_PTR, size, NULL, &rc);
    if (rc != CL_SUCCESS)
        dma_die("pinned buffer", rc);
    c.pinned_p = clEnqueueMapBuffer(c.d->q[DEV_Q_IN], c.pinned, CL_TRUE,
                                    CL_MAP_READ | CL_MAP_WRITE, 0, size, 0, NULL, NULL, &rc);
    if (rc != CL_SUCCESS)
        dma_die("map pinned", rc);
    bench_random(c.region, size, 1);
    memcpy(c.pinned_p, c.region, size);

    printf("%-14s %10s %10s %10s %8s  %s\n", "way", "first in", "in GB/s", "out GB/s", "in/pin",
           "check");
    double pin_in = 0;
    double *ti = calloc(reps, sizeof(double)), *to = calloc(reps, sizeof(double));
    for (enum dma_way w = WAY_PINNED; w <= WAY_UHP; w++) {
        if (w == WAY_PINNED_REGION) {
            double t0 = bench_now();
            c.uhp = clCreateBuffer(c.d->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, size,
                                   c.region, &rc);
            double t = bench_now() - t0;
            if (rc != CL_SUCCESS) {
                printf("use_host_ptr: clCreateBuffer failed: %s\n", dev_cl_error_name(rc));
                c.uhp = NULL;
            } else {
                printf("(use_host_ptr buffer made in %.3f ms)\n", t * 1e3);
            }
        }
        if (w >= WAY_PINNED_REGION && !c.uhp)
            continue;
        bool ok = true;
        for (int r = 0; r < reps; r++) {
            /* New bytes each repetition: a stale copy would show. */
            uint8_t *src = w == WAY_PINNED ? c.pinned_p : c.region;
            bench_random(src, size, 100 + r * 3 + w);
            ti[r] = dma_in(&c, w);
            if (!dma_device_has(&c, src))
                ok = false;
            memset(src, 0, size);
            to[r] = dma_out(&c, w);
            if (memcmp(src, c.check, size) != 0)
                ok = false;
        }
        /* The first copy from fresh pages may pay for pinning them. */
        double first = size / ti[0] / 1e9;
        double in = size / bench_median(ti, reps) / 1e9, out = size / bench_median(to, reps) / 1e9;
        if (w == WAY_PINNED)
            pin_in = in;
        printf("%-14s %10.2f %10.2f %10.2f %8.2f  %s\n", dma_way_name[w], first, in, out,
               in / pin_in, ok ? "ok" : "STALE");
    }
    int threads[] = {1, 2, 4, 8};
    for (size_t k = 0; k < sizeof threads / sizeof *threads; k++) {
        for (int r = 0; r < reps; r++)
            ti[r] = dma_memcpy(c.pinned_p, c.region, size, threads[k]);
        double in = size / bench_median(ti, reps) / 1e9;
        printf("memcpy x%-6d %10s %10.2f %10s %8.2f  %s\n", threads[k], "", in, "", in / pin_in,
               memcmp(c.pinned_p, c.region, size) ? "WRONG" : "ok");
    }
    if (c.uhp)
        clReleaseMemObject(c.uhp);
    clEnqueueUnmapMemObject(c.d->q[DEV_Q_IN], c.pinned, c.pinned_p, 0, NULL, NULL);
    clFinish(c.d->q[DEV_Q_IN]);
    clReleaseMemObject(c.pinned);
    clReleaseMemObject(c.dev);
    munmap(c.region, size);
    close(fd);
    free(c.check);
    free(ti);
    free(to);
    dev_close_all(devs, ndev);
    return 0;
}
