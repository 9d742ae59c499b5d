/* SPDX-License-Identifier: MIT */
/* dev_discover.c: finding and opening OpenCL devices (dev.h).
 *
 * Every device of every platform that --devices picks (dev_select.h; all
 * of them for dev_open_all) is opened: a context, three in-order queues
 * (dev_internal.h) and every program of kernels/NAME.cl built for it,
 * every device at once, each on a thread of its own (dev_open_each).
 * The list is ordered GPUs, then accelerators, then CPUs, whatever order the
 * ICD loader reports platforms in (on a GPU host PoCL may come first). A
 * device that cannot be opened is skipped with a warning; dev_run.c and op_*.c
 * run jobs on the devices opened here.
 *
 * PoCL offers the CPU through two drivers: pthread, whose worker threads
 * run every queue's commands in one order, and basic, which runs them on
 * the thread that waits for them. Where the environment names none
 * (POCL_DEVICES), ampd's main asks for both and dev_set_pocl_batches():
 * the pthread device is the one listed; the basic device of its platform
 * is not, and runs its batches of small jobs (batch_dev), so that a small
 * job neither waits behind bulk commands in the workers' order nor for a
 * worker to wake: on 2 cores a 16-byte job ran 2.6-3.4x as many calls a
 * second alone, and its run part beside a neighbour's streams fell from
 * 240-800 us to 5-30 (bench/RESULTS.md). Where the platform has only a
 * basic device, or POCL_DEVICES named the drivers, every device PoCL
 * shows is listed.
 */
#include "dev_internal.h"

#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "dev_select.h"
#include "kernels.h"
#include "log.h"
#include "monotonic.h"
#include "prog_cache.h"

/* OpenCL C 1.2 everywhere: NVIDIA's driver offers no more to C kernels. */
#define DEV_CL_STD "-cl-std=CL1.2"
/* Default cap on work-items per launch; far below any device's limit on a
 * global size, large enough that splitting is rare. */
#define DEV_LAUNCH_ITEMS_DEFAULT (1ull << 30)
#define DEV_MAX_PLATFORMS 16
#define DEV_MAX_DEVICES_PER_PLATFORM 64

struct dev_candidate {
    cl_platform_id platform;
    cl_device_id id;
    enum dev_type type;
    cl_device_id batch_id;   /* where its batches run (dev->batch_dev), or NULL */
};

const struct dev_info *dev_info(const struct dev *d)
{
    return &d->info;
}

void dev_set_constant_limit_for_test(struct dev *d, uint64_t bytes)
{
    d->info.max_constant_buffer_size = bytes;
}

void dev_set_launch_items_max_for_test(struct dev *d, uint64_t items)
{
    d->launch_items_max = items ? items : 1;
}

void dev_set_chunk_bytes_for_test(struct dev *d, size_t bytes)
{
    d->chunk_bytes = bytes ? bytes : (size_t)AMPD_DEFAULT_CHUNK_BYTES;
}

void dev_set_shape_for_test(struct dev *d, enum dev_shape shape)
{
    d->shape = shape;
}

void dev_set_launch_fault_for_test(struct dev *d, cl_int err)
{
    d->launch_fault = err;
}

/* How d's copies of pageable memory go (dev_exec_copy): a GPU's hold
 * their thread, in DEV_PAGEABLE_STEP steps; a CPU device's are memcpys
 * that do not. A step given holds them in steps of that many bytes. */
static void dev_pageable(struct dev *d, size_t step)
{
    d->pageable_holds = step || d->info.type != DEV_CPU;
    d->pageable_step = step ? step : DEV_PAGEABLE_STEP;
}

void dev_set_pageable_step_for_test(struct dev *d, size_t step)
{
    dev_pageable(d, step);
}

static enum dev_type dev_type_of(cl_device_type t)
{
    if (t & CL_DEVICE_TYPE_GPU)
        return DEV_GPU;
    if (t & CL_DEVICE_TYPE_CPU)
        return DEV_CPU;
    return DEV_ACCEL;
}

/* Rank in the device list: GPUs, then accelerators, then CPUs. */
static int dev_type_rank(enum dev_type t)
{
    switch (t) {
    case DEV_GPU: return 0;
    case DEV_ACCEL: return 1;
    case DEV_CPU: return 2;
    }
    return 3;
}

static void dev_get_string(cl_device_id id, cl_device_info what, char *buf, size_t len)
{
    buf[0] = '\0';
    if (clGetDeviceInfo(id, what, len, buf, NULL) != CL_SUCCESS)
        snprintf(buf, len, "?");
    buf[len - 1] = '\0';
}

/* One numeric device property of size bytes into out; on failure the
 * reason goes into err and -1 is returned: a device that cannot say how
 * much memory it has is not one to schedule jobs on. */
static int dev_get_num(cl_device_id id, cl_device_info what, const char *name, void *out,
                       size_t size, char *err, size_t errlen)
{
    memset(out, 0, size);
    cl_int rc = clGetDeviceInfo(id, what, size, out, NULL);
    if (rc != CL_SUCCESS) {
        snprintf(err, errlen, "clGetDeviceInfo(%s): %s", name, dev_cl_error_name(rc));
        return -1;
    }
    return 0;
}

/* Share of global memory jobs may reserve: the rest is for the driver,
 * kernels' scratch and the staging buffers' device side. */
#define DEV_MEM_CAPACITY_TENTHS 9

#define DEV_GET_NUM(id, what, out) dev_get_num(id, what, #what, out, sizeof *(out), err, errlen)

static int dev_fill_info(struct dev *d, char *err, size_t errlen)
{
    struct dev_info *in = &d->info;
    dev_get_string(d->id, CL_DEVICE_NAME, in->name, sizeof in->name);
    dev_get_string(d->id, CL_DEVICE_VENDOR, in->vendor, sizeof in->vendor);
    in->platform[0] = '\0';
    clGetPlatformInfo(d->platform, CL_PLATFORM_NAME, sizeof in->platform, in->platform, NULL);
    in->platform[sizeof in->platform - 1] = '\0';
    cl_ulong global = 0, constant = 0, alloc = 0, local = 0;
    size_t wg = 0;
    cl_uint cu = 0;
    if (DEV_GET_NUM(d->id, CL_DEVICE_GLOBAL_MEM_SIZE, &global) < 0 ||
        DEV_GET_NUM(d->id, CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE, &constant) < 0 ||
        DEV_GET_NUM(d->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, &alloc) < 0 ||
        DEV_GET_NUM(d->id, CL_DEVICE_LOCAL_MEM_SIZE, &local) < 0 ||
        DEV_GET_NUM(d->id, CL_DEVICE_MAX_WORK_GROUP_SIZE, &wg) < 0 ||
        DEV_GET_NUM(d->id, CL_DEVICE_MAX_COMPUTE_UNITS, &cu) < 0)
        return -1;
    in->global_mem_size = global;
    in->max_constant_buffer_size = constant;
    in->max_mem_alloc_size = alloc;
    in->max_work_group_size = wg;
    in->compute_units = cu ? cu : 1;
    d->local_mem_size = local;
    d->shape = in->type == DEV_CPU ? DEV_SHAPE_CPU : DEV_SHAPE_GPU;
    d->launch_items_max = DEV_LAUNCH_ITEMS_DEFAULT;
    d->chunk_bytes = (size_t)AMPD_DEFAULT_CHUNK_BYTES;
    dev_pageable(d, 0);
    d->mem_capacity = in->global_mem_size / 10 * DEV_MEM_CAPACITY_TENTHS;
    return 0;
}

/* Options appended to every build (dev_set_build_options_for_bench). */
static char dev_extra_options[256];

void dev_set_build_options_for_bench(const char *options)
{
    snprintf(dev_extra_options, sizeof dev_extra_options, "%s", options ? options : "");
}

/* The build options: the language version, and the host's codes that
 * kernels read from their arguments (job.h's step kinds and transform
 * ops) as macros, so each code has one definition. */
static void dev_build_options(const struct dev_variants *v, bool all, char *buf, size_t len)
{
    snprintf(buf, len,
             DEV_CL_STD " -DSTEP_REVERSE=%d -DSTEP_TRANSFORM=%d -DSTEP_HISTOGRAM=%d"
                        " -DXFORM_ADD=%d -DXFORM_XOR=%d -DXFORM_AND=%d -DXFORM_OR=%d"
                        " -DXFORM_SET=%d -DXFORM_MAP=%d -DBATCH_ITEM_WORDS=%d"
                        " -DREVERSE_GPU=%d -DXFORM_GPU=%d -DHIST256_GPU=%d -DMAP_GPU=%d"
                        " -DHISTN_GPU=%d -DAMP_ALL_VARIANTS=%d%s%s",
             STEP_REVERSE, STEP_TRANSFORM, STEP_HISTOGRAM, XFORM_ADD, XFORM_XOR, XFORM_AND,
             XFORM_OR, XFORM_SET, XFORM_MAP, DEV_BATCH_ITEM_WORDS, (int)v->reverse,
             (int)v->transform, (int)v->hist256, (int)v->map, (int)v->histn, all,
             dev_extra_options[0] ? " " : "", dev_extra_options);
}

/* Builds kernels/<name>.cl for d with variants v (all: every variant),
 * or takes it from the program cache (dev_cache.c; *hits counts those);
 * on failure err holds the build log's head. What is built from source is
 * kept in the cache. */
static int dev_build_program(struct dev *d, const struct kernel_source *ks,
                             const struct dev_variants *v, bool all, cl_program *out,
                             size_t *hits, char *err, size_t errlen)
{
    char options[1024];
    dev_build_options(v, all, options, sizeof options);
    struct prog_cache_key key;
    dev_cache_key(d, ks->source, options, &key);
    if ((*out = dev_cache_load(d, ks->name, &key, options))) {
        (*hits)++;
        return 0;
    }
    cl_int rc;
    const char *src = ks->source;
    cl_program p = clCreateProgramWithSource(d->ctx, 1, &src, NULL, &rc);
    if (rc != CL_SUCCESS) {
        snprintf(err, errlen, "clCreateProgramWithSource(%s): %s", ks->name,
                 dev_cl_error_name(rc));
        return -1;
    }
    rc = clBuildProgram(p, 1, &d->id, options, NULL, NULL);
    if (rc != CL_SUCCESS) {
        char log[2048] = "";
        clGetProgramBuildInfo(p, d->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        log[sizeof log - 1] = '\0';
        snprintf(err, errlen, "building kernels/%s.cl: %s: %s", ks->name,
                 dev_cl_error_name(rc), log);
        clReleaseProgram(p);
        return -1;
    }
    dev_cache_store(&key, p);
    *out = p;
    return 0;
}

static int dev_add_kernels(struct dev *d, cl_program p, char *err, size_t errlen)
{
    cl_kernel ks[DEV_MAX_KERNELS];
    cl_uint n = 0;
    cl_int rc = clCreateKernelsInProgram(p, 0, NULL, &n);
    if (rc == CL_SUCCESS && d->nkernels + n > DEV_MAX_KERNELS) {
        snprintf(err, errlen, "more than %d kernels", DEV_MAX_KERNELS);
        return -1;
    }
    if (rc == CL_SUCCESS)
        rc = clCreateKernelsInProgram(p, n, ks, NULL);
    if (rc != CL_SUCCESS) {
        snprintf(err, errlen, "clCreateKernelsInProgram: %s", dev_cl_error_name(rc));
        return -1;
    }
    for (cl_uint i = 0; i < n; i++) {
        struct dev_kernel *k = &d->kernels[d->nkernels++];
        k->k = ks[i];
        k->name[0] = '\0';
        clGetKernelInfo(ks[i], CL_KERNEL_FUNCTION_NAME, sizeof k->name, k->name, NULL);
        k->name[sizeof k->name - 1] = '\0';
    }
    return 0;
}

/* Builds (or loads from the cache) d's programs: every kernels/NAME.cl,
 * or only the one named only, and counts d->cache_hits. */
static int dev_build_sources(struct dev *d, const char *only, char *err, size_t errlen)
{
    size_t n = 0;
    for (size_t i = 0; kernel_sources[i].name; i++)
        n += !only || strcmp(kernel_sources[i].name, only) == 0;
    if (n == 0) {
        snprintf(err, errlen, "no kernels/%s.cl", only ? only : "*");
        return -1;
    }
    d->programs = calloc(n, sizeof(*d->programs));
    if (!d->programs) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t hits = 0;
    for (size_t i = 0; kernel_sources[i].name; i++) {
        if (only && strcmp(kernel_sources[i].name, only) != 0)
            continue;
        cl_program *p = &d->programs[d->nprograms];
        if (dev_build_program(d, &kernel_sources[i], &d->variants, d->all_variants, p, &hits,
                              err, errlen) < 0)
            return -1;
        d->nprograms++;
        if (dev_add_kernels(d, *p, err, errlen) < 0)
            return -1;
    }
    d->cache_hits = hits;
    return 0;
}

static int dev_build_all(struct dev *d, char *err, size_t errlen)
{
    if (dev_build_sources(d, NULL, err, errlen) < 0)
        return -1;
    struct dev *b = d->batch_dev;   /* its program counts among d's */
    dev_cache_report(d, d->cache_hits + (b ? b->cache_hits : 0),
                     d->nprograms + (b ? b->nprograms : 0));
    return 0;
}

/* What the serving build's thread reads: d's identity and context, which
 * do not change while d is open, and its own copy of the choice. */
struct dev_serving_build {
    struct dev *d;
    struct dev_variants v;
};

static void *dev_serving_build_main(void *arg)
{
    struct dev_serving_build *b = arg;
    uint64_t t0 = monotonic_ns();
    size_t hits = 0, i;
    char err[512] = "";
    for (i = 0; kernel_sources[i].name; i++) {
        cl_program p;
        if (dev_build_program(b->d, &kernel_sources[i], &b->v, false, &p, &hits, err,
                              sizeof err) < 0)
            break;
        clReleaseProgram(p);
    }
    if (kernel_sources[i].name)
        log_msg(LOG_WARN, "%s: building the chosen kernels for the next start: %s",
                b->d->info.name, err);
    else
        log_msg(LOG_INFO, "%s: the chosen kernels built for the next start in %.1f s",
                b->d->info.name, (double)(monotonic_ns() - t0) / 1e9);
    free(b);
    return NULL;
}

void dev_serving_build_start(struct dev *d)
{
    struct dev_serving_build *b;
    if (!dev_cache_get() || d->serving_building || !(b = malloc(sizeof *b)))
        return;
    b->d = d;
    b->v = d->variants;
    if (pthread_create(&d->serving_build, NULL, dev_serving_build_main, b) != 0) {
        log_msg(LOG_WARN, "%s: no thread to build the chosen kernels for the next start",
                d->info.name);
        free(b);
        return;
    }
    d->serving_building = true;
}

void dev_serving_build_wait(struct dev *d)
{
    if (d->serving_building)
        pthread_join(d->serving_build, NULL);
    d->serving_building = false;
}

/* Releases d's kernels and programs (closing it, or building anew). */
static void dev_release_programs(struct dev *d)
{
    dev_batch_free(d);   /* holds one of the kernels */
    for (size_t i = 0; i < d->nkernels; i++)
        clReleaseKernel(d->kernels[i].k);
    d->nkernels = 0;
    for (size_t i = 0; i < d->nprograms; i++)
        clReleaseProgram(d->programs[i]);
    free(d->programs);
    d->programs = NULL;
    d->nprograms = 0;
}

int dev_build_programs(struct dev *d, char *err, size_t errlen)
{
    dev_release_programs(d);
    return dev_build_all(d, err, errlen);
}

int dev_set_variants_for_test(struct dev *d, const struct dev_variants *v, char *err,
                              size_t errlen)
{
    d->variants = *v;
    if (d->all_variants)
        return 0;
    d->all_variants = true;
    return dev_build_programs(d, err, errlen);
}

static void dev_close(struct dev *d)
{
    if (!d)
        return;
    dev_close(d->batch_dev);
    dev_serving_build_wait(d);
    dev_release_programs(d);
    dev_const_free(d);
    for (int q = 0; q < DEV_NQUEUES; q++)
        if (d->q[q])
            clReleaseCommandQueue(d->q[q]);
    if (d->ctx)
        clReleaseContext(d->ctx);
    free(d);
}

/* Device id of platform, with its context and queues, no programs yet;
 * NULL with why in err. */
static struct dev *dev_open_queues(cl_platform_id platform, cl_device_id id, enum dev_type type,
                                   bool profiling, char *err, size_t errlen)
{
    struct dev *d = calloc(1, sizeof(*d));
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    dev_const_init(d);
    d->platform = platform;
    d->id = id;
    d->info.type = type;
    d->profiling = profiling;
    d->variants = DEV_VARIANTS_SERVING;
    if (dev_fill_info(d, err, errlen) < 0)
        goto fail;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
    cl_int rc;
    d->ctx = clCreateContext(props, 1, &id, NULL, NULL, &rc);
    if (rc != CL_SUCCESS) {
        snprintf(err, errlen, "clCreateContext: %s", dev_cl_error_name(rc));
        goto fail;
    }
    for (int q = 0; q < DEV_NQUEUES; q++) {
        d->q[q] = clCreateCommandQueue(d->ctx, d->id,
                                       profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &rc);
        if (rc != CL_SUCCESS) {
            snprintf(err, errlen, "clCreateCommandQueue: %s", dev_cl_error_name(rc));
            goto fail;
        }
    }
    return d;
fail:
    dev_close(d);
    return NULL;
}

/* d's batch device (c->batch_id), with batch.cl's program only; where it
 * cannot open, d's batches run on d, as on any other device. */
static void dev_open_batch_dev(struct dev *d, const struct dev_candidate *c)
{
    char err[2400] = "";
    struct dev *b = dev_open_queues(c->platform, c->batch_id, DEV_CPU, d->profiling, err,
                                    sizeof err);
    if (b && dev_build_sources(b, "batch", err, sizeof err) == 0) {
        d->batch_dev = b;
        log_msg(LOG_INFO, "%s: its batches of small jobs run on %s", d->info.name, b->info.name);
        return;
    }
    log_msg(LOG_WARN, "%s: its batches run on it: %s", d->info.name, err);
    dev_close(b);
}

static struct dev *dev_open(const struct dev_candidate *c, bool profiling, char *err,
                            size_t errlen)
{
    struct dev *d = dev_open_queues(c->platform, c->id, c->type, profiling, err, errlen);
    if (!d)
        return NULL;
    if (c->batch_id)
        dev_open_batch_dev(d, c);
    /* A GPU not tuned before (or --retune) builds every variant once to
     * measure them; one tuned before builds, or loads, its choice only. */
    bool tune = d->shape == DEV_SHAPE_GPU && !dev_tune_load(d);
    if (tune ? dev_tune_run(d, err, errlen) < 0 : dev_build_all(d, err, errlen) < 0) {
        dev_close(d);
        return NULL;
    }
    dev_tune_describe(d, d->info.kernels, sizeof d->info.kernels);
    log_msg(LOG_INFO, "%s: %s%s", d->info.name, d->info.kernels, tune ? " (tuned now)" : "");
    return d;
}

/* One candidate's opening, on a thread of its own (dev_open_each). */
struct dev_opening {
    const struct dev_candidate *cand;
    bool profiling;
    pthread_t thread;
    bool threaded;          /* thread was started (else it ran on the caller's) */
    struct dev *d;          /* the device, or NULL with why */
    char why[2400];
};

static void *dev_opening_main(void *arg)
{
    struct dev_opening *o = arg;
    o->d = dev_open(o->cand, o->profiling, o->why, sizeof o->why);
    return NULL;
}

/* Opens every candidate at once, each on a thread of its own: a device's
 * programs load from the cache in 0.13-0.17 s on an H200, and a host's
 * four GPUs took 0.6 s of a 1.33 s start one after another
 * (bench/RESULTS.md, "Start-up and footprint"). Each device has its own
 * context, queues and programs; the program cache writes each entry
 * through a file of its own (prog_cache.c), so two GPUs of one model that
 * build the same entry at once leave one whole. One candidate opens on
 * the caller's thread, as does any whose thread cannot start. */
static struct dev_opening *dev_open_each(const struct dev_candidate *cands, size_t n,
                                         bool profiling)
{
    struct dev_opening *o = calloc(n ? n : 1, sizeof(*o));
    if (!o)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        o[i] = (struct dev_opening){.cand = &cands[i], .profiling = profiling};
        o[i].threaded = n > 1 && pthread_create(&o[i].thread, NULL, dev_opening_main, &o[i]) == 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (o[i].threaded)
            pthread_join(o[i].thread, NULL);
        else
            dev_opening_main(&o[i]);
    }
    return o;
}

static bool dev_pocl_batches;

void dev_set_pocl_batches(bool on)
{
    dev_pocl_batches = on;
}

/* Whether id is PoCL's basic CPU device: PoCL names its CPU devices after
 * the driver ("basic-skylake-avx512-...", "pthread-..."). */
static bool dev_pocl_basic(cl_device_id id, enum dev_type type)
{
    char name[64];
    dev_get_string(id, CL_DEVICE_NAME, name, sizeof name);
    return type == DEV_CPU && strncmp(name, "basic-", 6) == 0;
}

/* Appends every device of every platform to *cands (malloc'd). */
static int dev_list_candidates(struct dev_candidate **cands, size_t *n, char *err, size_t errlen)
{
    cl_platform_id plats[DEV_MAX_PLATFORMS];
    cl_uint nplats = 0;
    cl_int rc = clGetPlatformIDs(DEV_MAX_PLATFORMS, plats, &nplats);
    if (rc != CL_SUCCESS || nplats == 0) {
        snprintf(err, errlen, "no OpenCL platform found (clGetPlatformIDs: %s): install a driver "
                 "and its ICD file (/etc/OpenCL/vendors): pocl-opencl-icd for the CPU, or the "
                 "GPU's, e.g. nvidia-opencl-icd",
                 rc == CL_SUCCESS ? "0 platforms" : dev_cl_error_name(rc));
        return -1;
    }
    if (nplats > DEV_MAX_PLATFORMS)
        nplats = DEV_MAX_PLATFORMS;
    *cands = calloc((size_t)nplats * DEV_MAX_DEVICES_PER_PLATFORM, sizeof(**cands));
    if (!*cands) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *n = 0;
    for (cl_uint p = 0; p < nplats; p++) {
        cl_device_id ids[DEV_MAX_DEVICES_PER_PLATFORM];
        cl_uint nids = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, DEV_MAX_DEVICES_PER_PLATFORM, ids,
                           &nids) != CL_SUCCESS)
            continue;
        if (nids > DEV_MAX_DEVICES_PER_PLATFORM)
            nids = DEV_MAX_DEVICES_PER_PLATFORM;
        size_t first = *n;
        cl_device_id basic = NULL;
        for (cl_uint i = 0; i < nids; i++) {
            cl_device_type t = 0;
            if (clGetDeviceInfo(ids[i], CL_DEVICE_TYPE, sizeof t, &t, NULL) != CL_SUCCESS)
                continue;   /* of no known type: nothing can be placed on it */
            if (dev_pocl_batches && !basic && dev_pocl_basic(ids[i], dev_type_of(t)))
                basic = ids[i];
            else
                (*cands)[(*n)++] = (struct dev_candidate){plats[p], ids[i], dev_type_of(t), NULL};
        }
        /* PoCL's basic device runs the batches of its platform's other CPU
         * devices; with none, it is a device of its own. */
        bool taken = false;
        for (size_t i = first; basic && i < *n; i++)
            if ((*cands)[i].type == DEV_CPU) {
                (*cands)[i].batch_id = basic;
                taken = true;
            }
        if (basic && !taken)
            (*cands)[(*n)++] = (struct dev_candidate){plats[p], basic, DEV_CPU, NULL};
    }
    return 0;
}

/* Stable insertion sort by type rank: platform order is kept within a type. */
void dev_order_by_type(const enum dev_type *types, size_t n, size_t *order)
{
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        while (j > 0 && dev_type_rank(types[order[j - 1]]) > dev_type_rank(types[i])) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
}

static int dev_sort_candidates(struct dev_candidate *c, size_t n)
{
    enum dev_type *types = malloc((n ? n : 1) * sizeof(*types));
    size_t *order = malloc((n ? n : 1) * sizeof(*order));
    struct dev_candidate *sorted = malloc((n ? n : 1) * sizeof(*sorted));
    int rc = types && order && sorted ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++)
        types[i] = c[i].type;
    if (rc == 0)
        dev_order_by_type(types, n, order);
    for (size_t k = 0; rc == 0 && k < n; k++)
        sorted[k] = c[order[k]];
    if (rc == 0 && n)
        memcpy(c, sorted, n * sizeof(*c));
    free(types);
    free(order);
    free(sorted);
    return rc;
}

/* Keeps the candidates that --devices (text; NULL: all) picks, in order,
 * logging those left out with the index that names them: before any is
 * opened, so a device left out costs no kernel build. */
static int dev_select_candidates(struct dev_candidate *c, size_t *n, const char *text, char *err,
                                 size_t errlen)
{
    struct dev_select sel;
    if (!text)
        return 0;
    if (dev_select_parse(text, &sel, err, errlen) < 0)
        return -1;
    struct dev_select_cand *sc = calloc(*n ? *n : 1, sizeof(*sc));
    char (*names)[128] = calloc(*n ? *n : 1, sizeof(*names));
    bool *chosen = calloc(*n ? *n : 1, sizeof(*chosen));
    long picked = -1;
    if (!sc || !names || !chosen)
        snprintf(err, errlen, "out of memory");
    for (size_t i = 0; sc && names && chosen && i < *n; i++) {
        dev_get_string(c[i].id, CL_DEVICE_NAME, names[i], sizeof names[i]);
        sc[i] = (struct dev_select_cand){c[i].type, names[i]};
    }
    if (sc && names && chosen)
        picked = dev_select_pick(&sel, text, sc, *n, chosen, err, errlen);
    size_t kept = 0;
    for (size_t i = 0; picked > 0 && i < *n; i++) {
        if (chosen[i])
            c[kept++] = c[i];
        else
            log_msg(LOG_INFO, "leaving out OpenCL device %zu: %s (%s): --devices %s", i,
                    names[i], dev_type_name(c[i].type), text);
    }
    if (picked > 0)
        *n = kept;
    free(sc);
    free(names);
    free(chosen);
    return picked > 0 ? 0 : -1;
}

static int dev_open_list(struct dev ***devs, size_t *n, const char *select, bool profiling,
                         char *err, size_t errlen)
{
    struct dev_candidate *cands = NULL;
    size_t ncands = 0;
    *devs = NULL;
    *n = 0;
    if (dev_list_candidates(&cands, &ncands, err, errlen) < 0) {
        free(cands);
        return -1;
    }
    if (dev_sort_candidates(cands, ncands) != 0) {
        free(cands);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (dev_select_candidates(cands, &ncands, select, err, errlen) < 0) {
        free(cands);
        return -1;
    }
    struct dev **list = calloc(ncands ? ncands : 1, sizeof(*list));
    struct dev_opening *each = list ? dev_open_each(cands, ncands, profiling) : NULL;
    if (!each) {
        free(list);
        free(cands);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* In the candidates' order, whichever finished first: an index names
     * the same device at every start. */
    size_t opened = 0;
    for (size_t i = 0; i < ncands; i++) {
        struct dev *d = each[i].d;
        if (!d) {
            char name[128];
            dev_get_string(cands[i].id, CL_DEVICE_NAME, name, sizeof name);
            log_msg(LOG_WARN, "skipping OpenCL device '%s': %s", name, each[i].why);
            continue;
        }
        d->info.index = (unsigned)opened;
        list[opened++] = d;
    }
    free(each);
    free(cands);
    if (opened == 0) {
        free(list);
        snprintf(err, errlen, "no usable OpenCL device (%zu found, none could be opened)",
                 ncands);
        return -1;
    }
    *devs = list;
    *n = opened;
    return 0;
}

int dev_open_all(struct dev ***devs, size_t *n, char *err, size_t errlen)
{
    return dev_open_list(devs, n, NULL, false, err, errlen);
}

int dev_open_selected(const char *select, struct dev ***devs, size_t *n, char *err,
                      size_t errlen)
{
    return dev_open_list(devs, n, select, false, err, errlen);
}

int dev_open_all_profiled(struct dev ***devs, size_t *n, char *err, size_t errlen)
{
    return dev_open_list(devs, n, NULL, true, err, errlen);
}

void dev_close_all(struct dev **devs, size_t n)
{
    if (!devs)
        return;
    for (size_t i = 0; i < n; i++)
        dev_close(devs[i]);
    free(devs);
}
