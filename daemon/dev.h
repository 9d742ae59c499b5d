/* SPDX-License-Identifier: MIT */
/* dev.h: one OpenCL device: discovery, its context, queues and programs,
 * and running a job's steps on it.
 *
 * Nothing here knows about sockets or gRPC. dev_run() blocks, so only a
 * device's runner thread (runner.c) or a test calls it, never the loop.
 */
#ifndef AMPD_DEV_H
#define AMPD_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "job.h"

enum dev_type { DEV_GPU, DEV_CPU, DEV_ACCEL };

/* Room for dev_info.kernels: "reverse v2, transform v2, hist256 v3". */
#define DEV_KERNELS_TEXT 48

struct dev_info {
    unsigned index;               /* position in the daemon's device list */
    char name[128];
    char vendor[64];
    char platform[64];
    enum dev_type type;
    uint64_t global_mem_size;
    uint64_t max_constant_buffer_size; /* refused above this: see job params */
    uint64_t max_work_group_size;
    uint64_t max_mem_alloc_size;
    unsigned compute_units;
    char kernels[DEV_KERNELS_TEXT];   /* which variants its jobs run (dev_tune_describe) */
};

/* What one device is doing now, as its runner counts it (runner.h): a
 * unary job or a stream is queued from its submission until the runner
 * admits it (reserves its device memory), then running until it ends. */
struct dev_load {
    uint32_t jobs_running;
    uint32_t jobs_queued;
    uint64_t memory_in_use;       /* device bytes reserved by running jobs */
    uint64_t memory_capacity;     /* what the runner admits at most (--max-device-memory) */
};

struct dev;

/* With on, a PoCL basic device beside other CPU devices of its platform is
 * not listed but runs their batches of small jobs (dev_discover.c says
 * why): ampd's main sets it where it chose PoCL's drivers itself. */
void dev_set_pocl_batches(bool on);

/* Finds every OpenCL device of every platform and opens it (context, queues,
 * programs built). *devs is a malloc'd array of *n devices ordered GPUs
 * first, then accelerators, then CPUs; index i of the list is dev_info()->index.
 * Returns 0, or -1 with a message in err when no device can be opened. */
int dev_open_all(struct dev ***devs, size_t *n, char *err, size_t errlen);

/* dev_open_all() for the devices that select (--devices: "auto", "all",
 * or a list of types and indices into dev_open_all()'s list; dev_select.h)
 * picks, chosen before any is opened. The opened ones are numbered
 * 0..*n-1 in the same order. Fails with a message naming --devices when
 * the selection is malformed or matches no device. */
int dev_open_selected(const char *select, struct dev ***devs, size_t *n, char *err,
                      size_t errlen);
/* Devices opened from now on take their built programs from c and keep
 * new ones there (prog_cache.h); NULL: build every program from source.
 * c must outlive the devices opened; set before the thread that opens them
 * starts. */
struct prog_cache;
void dev_use_prog_cache(struct prog_cache *c);
/* Devices opened from now on measure their kernel variants anew (--retune)
 * instead of reading the choice kept in the program cache (dev_tune.c). */
void dev_use_retune(bool again);

/* The list order of n devices of the given types: order[k] is the index in
 * types of the k-th device listed. GPUs, then accelerators, then CPUs;
 * devices of one type keep their order (the platforms', as reported). */
void dev_order_by_type(const enum dev_type *types, size_t n, size_t *order);

/* Closes every device of a list from dev_open_all() and frees the list. */
void dev_close_all(struct dev **devs, size_t n);

const struct dev_info *dev_info(const struct dev *d);

/* Names the device in info as the one that ran job ("index: name", the
 * reply's device field). Inline: the loop side names a stream's device
 * too, and the fuzz build links no device code. */
static inline void dev_name_job(const struct dev_info *info, struct job *job)
{
    snprintf(job->device, sizeof job->device, "%u: %.100s", info->index, info->name);
    job->device_index = (int)info->index;
}

/* Type name as shown to clients: "gpu", "cpu" or "accelerator". */
const char *dev_type_name(enum dev_type t);

/* Runs every step of job on d, blocking until done. Sets job->status (and
 * job->msg on failure), job->device, and job->results (nsteps entries)
 * on success. Device-dependent validation (constant buffer size, tile
 * size) happens here and fails with STATUS_INVALID_ARGUMENT. */
void dev_run(struct dev *d, struct job *job);

/* Pins region r's mapping for d once (a GPU copies between its buffers and
 * the mapping: from pageable pages the H100 copies at 7 GB/s, from pinned
 * ones at 52; a CPU device gains nothing, reading regions in place). Done
 * off the loop right after registration, and by the runner before a job
 * should that come first. Any thread; costs ~95 ms per GiB once. */
struct region;
void dev_pin_region(struct dev *d, struct region *r);

/* Pinned host memory of size bytes for d's staging buffers (dev_pinned.c):
 * returns its address and the handle to free it with, or NULL. Not
 * thread-safe against other calls for the same device: call it before the
 * device's runner starts. */
struct dev_pinned;
void *dev_pinned_alloc(struct dev *d, size_t size, struct dev_pinned **out);
/* Pins size bytes of host memory that is not d's own (a region's mapping)
 * for d: copies between it and d's buffers then run as DMA. NULL when the
 * driver refuses; copies still work, at pageable speed. */
struct dev_pinned *dev_pinned_wrap(struct dev *d, void *host, size_t size);
/* Frees what dev_pinned_alloc or dev_pinned_wrap made. Any thread. */
void dev_pinned_free(struct dev_pinned *p);

/* Sets how many device bytes jobs may hold reserved at once on d (by
 * default 90% of its global memory); --max-device-memory. */
void dev_set_memory_capacity(struct dev *d, uint64_t bytes);

/* Sets the bytes of one piece of a job run in pieces on d (dev_piece.c):
 * --chunk-bytes, before d's runner starts. */
void dev_set_piece_bytes(struct dev *d, size_t bytes);

/* Checks every step of job against d for an input of in_len bytes and,
 * if out_len is not NULL, stores the data length flowing out of each;
 * fails the job (and returns its status) on the first it refuses. The
 * host path (host.c) checks its jobs with the default device's rules. */
enum status_code dev_check_steps(struct dev *d, struct job *job, uint64_t in_len,
                                 size_t *out_len);

#endif
