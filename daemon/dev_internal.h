/* SPDX-License-Identifier: MIT */
/* dev_internal.h: what the device files share (dev_discover.c, dev_exec.c,
 * dev_run.c, op_*.c) and nobody else needs: struct dev itself, one job's run
 * on a device (struct dev_exec), device buffers with their hazard state,
 * and the test-only limit setters.
 */
#ifndef AMPD_DEV_INTERNAL_H
#define AMPD_DEV_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <CL/cl.h>

#include "dev.h"
#include "dev_task.h"
#include "hazard.h"
#include "job.h"

/* The in-order queues of a device. Copies in, kernels and copies out
 * each get their own so hazard.c can let them overlap. Batches of tiny
 * jobs (dev_batch.c) get a fourth: on the kernel queue a batch waited
 * behind a bulk piece's kernel, which waits for its 4 MiB copy in, so a
 * client's 16 B call waited for another client's copy. */
enum dev_queue { DEV_Q_IN, DEV_Q_KERNEL, DEV_Q_OUT, DEV_Q_BATCH, DEV_NQUEUES };

/* Kernel shapes: GPUs get work-groups with local-memory sub-histograms and
 * grid-stride loops; CPU devices (PoCL) get one work-item per large chunk,
 * since their local atomics are slow. Chosen once per device at open. */
enum dev_shape { DEV_SHAPE_GPU, DEV_SHAPE_CPU };

/* Most kernels one device's programs may hold (all kernels/NAME.cl together). */
#define DEV_MAX_KERNELS 64

struct dev_kernel {
    char name[64];
    cl_kernel k;        /* owned by the dev */
};

/* The GPU kernel each family runs where it has more than one (op_*.c say
 * what each does; bench/RESULTS-archive.md "Kernel variants" how they measured).
 * A device starts from DEV_VARIANTS_SERVING's; a GPU's are then its own
 * tuning's (dev_tune.c), and it builds only those: each
 * kernels/NAME.cl compiles a family's other GPU kernels only under
 * AMP_ALL_VARIANTS, which dev_set_variants_for_test() turns on (for
 * bench_kernels and the kernel tests) when a device is to run another.
 * Values are the kernels' build options: 1, 2, 3 for v1, v2, v3. */
enum dev_variant { DEV_VARIANT_V1 = 1, DEV_VARIANT_V2, DEV_VARIANT_V3 };
struct dev_variants {
    enum dev_variant reverse;    /* reverse_bytes, reverse_bytes_v2 */
    enum dev_variant transform;  /* transform_OP, transform_OP_v2 (not map) */
    enum dev_variant hist256;    /* hist256_local, hist256_bytes, hist256_inc */
    enum dev_variant map;        /* transform_map, transform_map_v2, transform_map_v3 */
    enum dev_variant histn;      /* histn_local_T, histn_inc_T (N bins in local memory) */
    size_t map_min;              /* map runs its variant from this many bytes (v1 below) */
    /* Work-groups per compute unit of the histogram kernels that count in
     * local memory (grid-stride over what is launched at once); 0: as
     * many as their local memory lets one hold (op_resident_cap). */
    unsigned hist256_groups, histn_groups;
};
#define DEV_VARIANTS_SERVING                                                                   \
    ((struct dev_variants){DEV_VARIANT_V2, DEV_VARIANT_V2, DEV_VARIANT_V3, DEV_VARIANT_V2,     \
                           DEV_VARIANT_V1, (size_t)128 << 20, 0, 0})

/* Blocks a device keeps (dev_const.c): this many, each of at most
 * DEV_CONST_MAX_BYTES (a transform's parameter block is 264 bytes; the
 * CPU map's pair table, 128 KiB, is made for each launch). */
#define DEV_CONST_KEEP 8
#define DEV_CONST_MAX_BYTES 4096

struct dev_const_entry {
    uint8_t *bytes;                   /* owned: what mem holds */
    size_t size;
    cl_mem mem;                       /* owned: one reference */
    uint64_t used;                    /* dev_const.tick when last handed out */
};

struct dev_const {
    pthread_mutex_t lock;             /* runners and tests may share a device */
    uint64_t tick;
    struct dev_const_entry e[DEV_CONST_KEEP];
};

struct dev {
    struct dev_info info;
    enum dev_shape shape;
    cl_platform_id platform;
    cl_device_id id;
    cl_context ctx;                   /* owned */
    cl_command_queue q[DEV_NQUEUES];  /* owned, in order */
    cl_program *programs;             /* owned, one per kernel_sources entry */
    size_t nprograms;
    struct dev_kernel kernels[DEV_MAX_KERNELS];
    size_t nkernels;
    struct dev_variants variants;     /* which GPU kernels its jobs run */
    bool all_variants;                /* its programs hold every variant */
    uint64_t local_mem_size;
    bool profiling;                   /* queues record device times (bench) */
    /* Largest global size (work-items) of one launch; splitting keeps every
     * launch at or under it. A test may lower it. */
    uint64_t launch_items_max;
    /* Bytes of one piece of a job run in pieces (dev_piece.c): the
     * streams' chunk, --chunk-bytes (dev_set_piece_bytes). */
    size_t chunk_bytes;
    /* Device bytes jobs may hold reserved at once (runner.c admits jobs
     * against it): most of global memory, or --max-device-memory. */
    uint64_t mem_capacity;
    struct dev_stream *streams;       /* streams open on it (dev_stream.c), that thread only */
    cl_int launch_fault;              /* test-only: nonzero makes every kernel launch fail
                                       * with it, as a broken device would */
    /* A copy of pageable memory holds its thread until done (a GPU's:
     * dev_exec.c says why), in steps of pageable_step bytes with yield
     * (dev_task_set_yield) called between them. */
    bool pageable_holds;
    size_t pageable_step;
    const struct dev_notify *yield;
    struct dev_batch_mem *batch;      /* dev_batch.c's buffers, made at the first batch;
                                       * the batch lane's thread only */
    /* Owned: where d's batches run when not on d, opened with it: on a
     * PoCL CPU device, PoCL's basic device of its platform, which runs a
     * queue's commands on the thread that waits for them (dev_discover.c
     * says why); NULL: on d. It builds batch.cl only. */
    struct dev *batch_dev;
    struct dev_const consts;          /* dev_const.c's kept blocks */
    /* The build of the chosen variants' programs for the cache, after a
     * tuning (dev_serving_build_start); joined when d closes. */
    pthread_t serving_build;
    bool serving_building;
    size_t cache_hits;                /* programs its last build took from the cache */
};

/* A read-only buffer holding size bytes: one d made before for the same
 * bytes, or a new one (dev_const.c says why). The caller releases its
 * reference (clReleaseMemObject); NULL with *rc set on failure. */
cl_mem dev_const_get(struct dev *d, const void *bytes, size_t size, cl_int *rc);
/* Opening and closing d. */
void dev_const_init(struct dev *d);
void dev_const_free(struct dev *d);

/* The step of a copy of pageable memory that holds its thread: a small
 * job queued meanwhile waits for one step (on the H200 ~0.07 ms), not a
 * whole piece's copy. 512 KiB rather than 1 MiB took a 16-byte job's p50
 * beside sixteen 32 MiB unary calls from 430-496 to 303-306 us (alone
 * 222-258), the unary calls' own GB/s within their noise. */
#define DEV_PAGEABLE_STEP ((size_t)512 << 10)

/* A batch item's words in kernels/batch.cl (a build option there). */
#define DEV_BATCH_ITEM_WORDS 8

/* Frees d's batch buffers (closing it). */
void dev_batch_free(struct dev *d);

/* dev_open_all() with CL_QUEUE_PROFILING_ENABLE on every queue, so that
 * dev_exec_finish() can report device time (bench/bench_kernels.c). */
int dev_open_all_profiled(struct dev ***devs, size_t *n, char *err, size_t errlen);

/* Test-only: lower the limits a test wants to exercise without a device
 * that really has them. They affect only the given device. */
void dev_set_constant_limit_for_test(struct dev *d, uint64_t bytes);
void dev_set_launch_items_max_for_test(struct dev *d, uint64_t items);
void dev_set_chunk_bytes_for_test(struct dev *d, size_t bytes);
/* Test-only: run d's jobs with the kernel shapes of another device type,
 * so a CPU-only host exercises the GPU kernels too. */
void dev_set_shape_for_test(struct dev *d, enum dev_shape shape);
/* Test-only (and bench_kernels): d's jobs run these GPU kernels from now
 * on, built first if the device has only the serving ones (which drops
 * its batch buffers: they hold a kernel). Between jobs only. Returns 0, or
 * -1 with the build's error in err. */
int dev_set_variants_for_test(struct dev *d, const struct dev_variants *v, char *err,
                              size_t errlen);
/* bench_kernels only: options (-DNAME=VALUE) appended to the kernels'
 * build options of every device opened from now on, so that a kernel's
 * compile-time knobs (hist.cl's unroll and the like) can be measured without
 * editing it; they are part of the program cache's key. */
void dev_set_build_options_for_bench(const char *options);
/* Test-only: every kernel launch on d fails with err from now on (0: none
 * does), so a test sees what a device that breaks mid-job does. */
void dev_set_launch_fault_for_test(struct dev *d, cl_int err);
/* Test-only: d's copies of pageable memory hold their thread, in steps of
 * step bytes, as a GPU's do (a CPU device's are memcpys that do not);
 * 0: as d's type has it again. */
void dev_set_pageable_step_for_test(struct dev *d, size_t step);

/* The kernel called name in d's programs, or NULL. */
cl_kernel dev_kernel(const struct dev *d, const char *name);

/* "CL_OUT_OF_RESOURCES" and friends; "CL error <n>" for unknown codes. */
const char *dev_cl_error_name(cl_int err);

/* A device buffer and the hazard state of every command touching it. */
struct dev_buf {
    cl_mem mem;             /* owned; NULL for a zero-length buffer */
    size_t size;
    struct hazard_buf hz;
};

/* One job's run on a device: every command enqueued for it and whether it
 * has failed. Commands after a failure are not enqueued. */
struct dev_exec {
    struct dev *d;
    struct job *job;
    cl_event *events;       /* one reference each, released by dev_exec_finish */
    size_t nevents, cap;
    bool failed;            /* job->status/msg say why */
    /* Set by dev_exec_finish on profiling devices: nanoseconds the device
     * spent in kernels and fills (not copies to or from the host). */
    uint64_t device_ns;
};

/* How a command touches one buffer. */
struct dev_access {
    struct dev_buf *buf;
    enum hazard_mode mode;
};

void dev_exec_init(struct dev_exec *x, struct dev *d, struct job *job);

/* Waits for every command of x, turns the first failed command into the
 * job's status and releases the events. Returns the job's status. */
enum status_code dev_exec_finish(struct dev_exec *x);

/* Waits for x's own commands only (commands of other jobs on the same
 * queues may still run), then does what dev_exec_finish does. */
enum status_code dev_exec_wait(struct dev_exec *x);

/* Non-blocking: have all of x's commands finished (or failed)? */
bool dev_exec_ready(const struct dev_exec *x);

/* Calls n->fn(n->arg) from a driver thread as each of x's commands
 * finishes (or fails); n must outlive those calls. Returns how many calls
 * are owed. */
size_t dev_exec_notify(struct dev_exec *x, const struct dev_notify *n);

/* Buffers one device command may touch (dev_exec_kernel's nacc): more is
 * refused as a bug, never silently narrowed. */
#define DEV_CMD_MAX_ACCESS 8

/* An event's execution status (CL_COMPLETE, a later state, or a negative
 * error), a failed query counting as that query's error. */
cl_int dev_event_status(cl_event ev);

/* The status a CL error fails a job with: RESOURCE_EXHAUSTED for
 * allocation and resource errors, INTERNAL for the rest. */
enum status_code dev_cl_status(cl_int err);

/* Fails the job for a CL error: RESOURCE_EXHAUSTED for allocation and
 * resource errors, INTERNAL for the rest; the message names what and err. */
enum status_code dev_exec_cl_fail(struct dev_exec *x, const char *what, cl_int err);

/* Creates a buffer of size bytes (no allocation for 0). Refuses sizes over
 * the device's max_mem_alloc_size with RESOURCE_EXHAUSTED naming what. */
enum status_code dev_buf_create(struct dev_exec *x, struct dev_buf *b, size_t size,
                                const char *what);
/* A buffer over size bytes of host memory (CL_MEM_USE_HOST_PTR), which must
 * stay valid and unchanged until the commands using it have run. */
enum status_code dev_buf_wrap(struct dev_exec *x, struct dev_buf *b, void *host, size_t size,
                              const char *what);
/* Releases b's events and memory; the device keeps the memory alive until
 * commands already enqueued on it have run. */
void dev_buf_release(struct dev_buf *b);

/* Where a copy's host bytes lie, for a GPU. A copy of pageable memory
 * returns only once it is done: NVIDIA's driver stages such a copy on a
 * thread of its own, and a command on another queue enqueued while it is
 * pending can deadlock the driver (the runner spinning inside the enqueue,
 * the driver's threads waiting on its lock: bench/RESULTS-archive.md, "Soak").
 * Pinned memory (staging, a region pinned on the device, a pinned request)
 * is copied without waiting. */
enum dev_host {
    DEV_HOST_PAGEABLE,
    DEV_HOST_PINNED,
};

/* Pins the job's regions for d (dev_pin_region) and points job->in and
 * job->out at d's views of them (region_view): a device copies through
 * the addresses it pinned. Before a job's first copy on d. */
void dev_job_regions(struct dev *d, struct job *job);

/* Where job's input lies for d: a region d has pinned, or d's staging (a
 * pinned request), else pageable memory. */
enum dev_host dev_job_in_host(const struct dev *d, const struct job *job);
/* Where job's results lie for d: its output region, its input's memory
 * (job_output_in_place), or malloc'd. */
enum dev_host dev_job_out_host(const struct dev *d, const struct job *job);

/* Copies; host memory must stay valid until dev_exec_finish. */
enum status_code dev_exec_write(struct dev_exec *x, struct dev_buf *b, const void *host,
                                size_t len, enum dev_host where);
/* The same into b at byte offset off. */
enum status_code dev_exec_write_at(struct dev_exec *x, struct dev_buf *b, size_t off,
                                   const void *host, size_t len, enum dev_host where);
enum status_code dev_exec_read(struct dev_exec *x, struct dev_buf *b, void *host, size_t off,
                               size_t len, enum dev_host where);
/* Fills len bytes at off with a repeated pattern (kernel queue). */
enum status_code dev_exec_fill(struct dev_exec *x, struct dev_buf *b, const void *pattern,
                               size_t pattern_size, size_t off, size_t len);
/* Launches k (arguments set) over global items in groups of local (0: the
 * driver chooses) on the kernel queue, waiting on what acc demands. */
enum status_code dev_exec_kernel(struct dev_exec *x, cl_kernel k, const char *name,
                                 size_t global, size_t local, const struct dev_access *acc,
                                 size_t nacc);

/* clSetKernelArg with the failure reported on the job. */
enum status_code dev_exec_arg(struct dev_exec *x, cl_kernel k, const char *name, cl_uint i,
                              size_t size, const void *value);

/* A global size for a grid-stride kernel over items units of work: enough
 * work-groups of wg items to fill the device, no more than needed, at most
 * d->launch_items_max, a multiple of wg. */
size_t dev_grid_size(const struct dev *d, uint64_t items, size_t wg);

/* Geometry of a launch over units of work for a kernel that takes a chunk
 * argument: on GPUs a grid-stride launch (chunk 0) of work-groups of
 * wg items; on CPU devices one-item work-groups each running a contiguous
 * chunk of units (a work-item there is a loop on one core). */
struct dev_grid {
    size_t global, local;
    uint64_t chunk;         /* units per work-item; 0: grid-stride */
};
struct dev_grid dev_grid_plan(const struct dev *d, uint64_t units, size_t wg);

/* A work-group size for k on d: want, lowered to what the kernel and the
 * device allow. */
size_t dev_kernel_wg(const struct dev *d, cl_kernel k, size_t want);
/* CL_KERNEL_WORK_GROUP_SIZE of k on d (the device maximum if unknown). */
size_t dev_kernel_wg_max(const struct dev *d, cl_kernel k);

/* The program cache's device side (dev_cache.c; prog_cache.h). */
struct prog_cache_key;
/* The key of source built with options for d. */
void dev_cache_key(const struct dev *d, const char *source, const char *options,
                   struct prog_cache_key *key);
/* key's program for d from the cache, built; NULL when off, missing,
 * damaged or refused (logged): the caller builds from source then. */
cl_program dev_cache_load(struct dev *d, const char *name, const struct prog_cache_key *key,
                          const char *options);
/* Keeps p's binary under key (nothing when the cache is off). */
void dev_cache_store(const struct prog_cache_key *key, cl_program p);
/* Logs how many of d's programs came from the cache (when on). */
void dev_cache_report(const struct dev *d, size_t hits, size_t programs);
/* The cache devices use (dev_use_prog_cache), or NULL. */
struct prog_cache *dev_cache_get(void);

/* d's programs built (or loaded) anew for its variants and all_variants,
 * its old ones released (dev_discover.c). 0, or -1 with err. */
int dev_build_programs(struct dev *d, char *err, size_t errlen);
/* After a tuning, d serves from the programs that hold every variant; a
 * thread builds the chosen ones alone meanwhile, only to keep them in the
 * program cache for the next start (nothing without a cache). The first
 * start then compiles once before it is ready, not twice. */
void dev_serving_build_start(struct dev *d);
/* Waits for that build (test-only; closing d waits too). */
void dev_serving_build_wait(struct dev *d);

/* Kernel tuning (dev_tune.c): each family's GPU variant by measurement.
 * dev_tune_load sets d->variants from the cache's entry for d and says
 * whether there was one (never under --retune). dev_tune_run measures
 * them with every variant built, stores the choice, and leaves d serving
 * from those programs while the chosen ones are built for the cache
 * (dev_serving_build_start); 0, or -1 with err when a build fails. */
bool dev_tune_load(struct dev *d);
int dev_tune_run(struct dev *d, char *err, size_t errlen);
/* Test-only: tune on this many bytes (a CPU device is slow at the real size). */
void dev_set_tune_bytes_for_test(size_t bytes);
/* "reverse v2, transform v2, hist256 v3" (or "cpu kernels"), for logs. */
void dev_tune_describe(const struct dev *d, char *buf, size_t len);

#endif
