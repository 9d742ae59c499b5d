/* SPDX-License-Identifier: MIT */
/* dev.c: running a job's steps on one device (dev_run, see dev.h).
 *
 * The input is copied in once; each data step writes a new device buffer
 * that becomes the next step's input and is copied back as that step's
 * result; histogram steps only read. All commands go through dev_exec.c,
 * whose hazard tracking lets step i's copy out run while step i+1 reads the
 * same buffer. Steps are validated against the device before anything is
 * enqueued. The kernels themselves are driven by op_*.c.
 */
#include "op.h"
#include "region.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum status_code dev_check_steps(struct dev *d, struct job *job, uint64_t in_len, size_t *out_len)
{
    size_t len = (size_t)in_len;
    for (size_t i = 0; i < job->nsteps; i++) {
        const struct step *s = &job->steps[i];
        enum status_code st = STATUS_OK;
        switch (s->kind) {
        case STEP_REVERSE:
            break;
        case STEP_TRANSFORM:
            st = op_transform_check(d, &s->u.transform, len, job);
            break;
        case STEP_HISTOGRAM:
            st = op_hist_check(d, &s->u.hist, len, job);
            break;
        case STEP_FILL:
            st = op_fill_check(d, &s->u.fill, job);
            break;
        default:
            st = job_fail(job, STATUS_INVALID_ARGUMENT, "steps[%zu]: unknown step kind %d", i,
                          (int)s->kind);
        }
        if (st != STATUS_OK)
            return st;
        len = (size_t)job_step_output_len(s, len);   /* a fill's, checked above */
        if (out_len)
            out_len[i] = len;
    }
    return STATUS_OK;
}

/* Host memory for a data result (job_result_alloc); a failure fails the
 * whole execution. */
/* Where job's input lies for d: a region d has pinned, or d's staging (a
 * pinned request), else pageable memory. */
static enum dev_host dev_job_in_host(const struct dev *d, const struct job *job)
{
    if (job->in_region)
        return region_is_pinned(job->in_region, d->info.index) ? DEV_HOST_PINNED
                                                               : DEV_HOST_PAGEABLE;
    return job->in_pinned_dev == (int)d->info.index ? DEV_HOST_PINNED : DEV_HOST_PAGEABLE;
}

/* Where job's results lie for d: its output region, its input's memory
 * (job_output_in_place), or malloc'd. */
static enum dev_host dev_job_out_host(const struct dev *d, const struct job *job)
{
    if (job->out_region)
        return region_is_pinned(job->out_region, d->info.index) ? DEV_HOST_PINNED
                                                                : DEV_HOST_PAGEABLE;
    return job->out ? dev_job_in_host(d, job) : DEV_HOST_PAGEABLE;
}

static enum status_code dev_result_alloc(struct dev_exec *x, struct step_result *r, size_t len)
{
    enum status_code st = job_result_alloc(x->job, r, len);
    if (st != STATUS_OK)
        x->failed = true;
    return st;
}

/* Runs a data-producing step from *cur into a new buffer, queues its copy
 * out, and makes the new buffer *cur. */
static enum status_code dev_data_step(struct dev_exec *x, const struct step *s,
                                      struct dev_buf *cur, bool cur_is_result, size_t out_len,
                                      struct step_result *r)
{
    struct dev_buf out;
    enum status_code st;
    if (s->kind == STEP_TRANSFORM && !cur_is_result) {
        /* Nobody else reads cur: transform it in place, touching only the
         * sub-range. */
        out = *cur;
        memset(cur, 0, sizeof(*cur));
        st = op_transform(x, &s->u.transform, &out, &out);
    } else {
        st = dev_buf_create(x, &out, out_len, "a step's output buffer");
        if (st == STATUS_OK) {
            if (s->kind == STEP_REVERSE)
                st = op_reverse(x, cur, &out);
            else if (s->kind == STEP_TRANSFORM)
                st = op_transform(x, &s->u.transform, cur, &out);
            else
                st = op_fill(x, &s->u.fill, &out);
        }
        /* Deferred by OpenCL until the commands using it have run. */
        dev_buf_release(cur);
    }
    *cur = out;
    if (st == STATUS_OK)
        st = dev_result_alloc(x, r, out_len);
    if (st == STATUS_OK)
        st = dev_exec_read(x, cur, r->data, 0, out_len, dev_job_out_host(x->d, x->job));
    return st;
}

static void dev_free_slots(uint64_t **slots, size_t n)
{
    if (!slots)
        return;
    for (size_t i = 0; i < n; i++)
        free(slots[i]);
    free(slots);
}

/* A CPU device reads a region's input where it lies (bench_host_dma and
 * bench_data_path: on PoCL a copy into a fresh buffer costs more than the
 * kernels; on the H100 a copy from the mapping runs at pinned speed while
 * a USE_HOST_PTR buffer reads at half of it, so GPUs copy). The kernels
 * load 16-byte words: the input must be aligned for them. */
#define DEV_SHARED_ALIGN 128
static bool dev_input_in_place(const struct dev *d, const struct job *job)
{
    return d->info.type == DEV_CPU && job->in_region && job->steps[0].kind != STEP_FILL &&
           (uintptr_t)job->in % DEV_SHARED_ALIGN == 0;
}

uint64_t dev_memory_capacity(const struct dev *d)
{
    return d->mem_capacity;
}

void dev_set_memory_capacity(struct dev *d, uint64_t bytes)
{
    d->mem_capacity = bytes;
}

void dev_pin_region(struct dev *d, struct region *r)
{
    if (!r || d->info.type == DEV_CPU || !region_pin_claim(r, d->info.index))
        return;   /* pinned, or being pinned by another thread */
    uint8_t *base;
    size_t size;
    region_span(r, &base, &size);
    region_pin_set(r, d->info.index, dev_pinned_wrap(d, base, size));
}

static enum status_code dev_enqueue_steps(struct dev_exec *x, const size_t *out_len,
                                          uint64_t **slots)
{
    struct job *job = x->job;
    struct dev_buf cur;
    /* cur_is_result: others read cur (a result being copied out, or the
     * client's own input region), so no step may change it in place. */
    bool cur_is_result = dev_input_in_place(x->d, job);
    enum status_code st;
    if (cur_is_result) {
        st = dev_buf_wrap(x, &cur, job->in, job->in_len, "the job's input region");
    } else {
        st = dev_buf_create(x, &cur, job->in_len, "the job's input");
        if (st == STATUS_OK && job->steps[0].kind != STEP_FILL)
            st = dev_exec_write(x, &cur, job->in, job->in_len, dev_job_in_host(x->d, job));
    }
    for (size_t i = 0; i < job->nsteps && st == STATUS_OK; i++) {
        const struct step *s = &job->steps[i];
        if (s->kind == STEP_HISTOGRAM) {
            slots[i] = calloc(OP_HIST_SLOTS(s->u.hist.bins), sizeof(uint64_t));
            if (!slots[i]) {
                x->failed = true;
                st = job_fail(job, STATUS_RESOURCE_EXHAUSTED, "no host memory for %u bins",
                              s->u.hist.bins);
                break;
            }
            st = op_hist(x, &s->u.hist, &cur, slots[i]);
            continue;
        }
        st = dev_data_step(x, s, &cur, cur_is_result, out_len[i], &job->results[i]);
        cur_is_result = true;
    }
    dev_buf_release(&cur);
    return st;
}

/* --- chunked jobs ----------------------------------------------------------- */

/* A GPU job of histograms and at most one transform (so one data result)
 * whose input spans several chunks runs chunk by chunk through a ring of
 * device buffers: the copy in of one chunk overlaps the kernels and the
 * copy out of those before it, so both directions of the bus work at once.
 * In one piece, a 1 GiB region transform on the H100 was copy in, kernel,
 * copy out one after the other: 43 ms, where each copy alone takes 20.
 * CPU devices gain nothing: their copies are memcpys on the same cores.
 * Chunks are d->chunk_bytes (DEV_CHUNK_BYTES, dev_internal.h). */
#define DEV_CHUNK_RING 4

static bool dev_chunked(const struct dev *d, const struct job *job)
{
    if (d->shape == DEV_SHAPE_CPU || job->in_len / 2 < d->chunk_bytes)
        return false;
    size_t transforms = 0;
    for (size_t i = 0; i < job->nsteps; i++) {
        if (job->steps[i].kind == STEP_TRANSFORM)
            transforms++;
        else if (job->steps[i].kind != STEP_HISTOGRAM)
            return false;
    }
    return transforms <= 1;
}

/* Histogram steps' counters and the transform's result, before any chunk. */
static enum status_code dev_chunked_begin(struct dev_exec *x, const size_t *out_len,
                                          uint64_t **slots, struct op_hist_acc *accs,
                                          struct step_result **data)
{
    struct job *job = x->job;
    enum status_code st = STATUS_OK;
    for (size_t i = 0; i < job->nsteps && st == STATUS_OK; i++) {
        const struct step *s = &job->steps[i];
        if (s->kind == STEP_TRANSFORM) {
            st = dev_result_alloc(x, &job->results[i], out_len[i]);
            *data = &job->results[i];
            continue;
        }
        slots[i] = calloc(OP_HIST_SLOTS(s->u.hist.bins), sizeof(uint64_t));
        if (!slots[i]) {
            x->failed = true;
            return job_fail(job, STATUS_RESOURCE_EXHAUSTED, "no host memory for %u bins",
                            s->u.hist.bins);
        }
        st = op_hist_begin(x, &s->u.hist, &accs[i]);
    }
    return st;
}

static enum status_code dev_enqueue_chunked(struct dev_exec *x, const size_t *out_len,
                                            uint64_t **slots)
{
    struct job *job = x->job;
    struct op_hist_acc *accs = calloc(job->nsteps, sizeof(*accs));
    if (!accs) {
        x->failed = true;
        return job_fail(job, STATUS_RESOURCE_EXHAUSTED, "out of host memory");
    }
    struct dev_buf ring[DEV_CHUNK_RING];
    size_t chunk = x->d->chunk_bytes;
    for (size_t i = 0; i < DEV_CHUNK_RING; i++)
        dev_buf_create(x, &ring[i], chunk, "a chunk buffer");
    struct step_result *data = NULL;
    enum dev_host in_host = dev_job_in_host(x->d, job), out_host = dev_job_out_host(x->d, job);
    enum status_code st = dev_chunked_begin(x, out_len, slots, accs, &data);
    for (size_t off = 0, k = 0; off < job->in_len && st == STATUS_OK; off += chunk, k++) {
        size_t len = job->in_len - off < chunk ? job->in_len - off : chunk;
        struct dev_buf *b = &ring[k % DEV_CHUNK_RING];
        st = dev_exec_write_at(x, b, 0, job->in + off, len, in_host);
        for (size_t i = 0; i < job->nsteps && st == STATUS_OK; i++) {
            const struct step *s = &job->steps[i];
            struct transform_params clip;
            if (s->kind == STEP_HISTOGRAM)
                st = op_hist_add(x, &s->u.hist, b, len, &accs[i]);
            else if (job_transform_clip(&s->u.transform, off, len, &clip))
                st = op_transform(x, &clip, b, b);
        }
        if (data && st == STATUS_OK)
            st = dev_exec_read(x, b, data->data + off, 0, len, out_host);
    }
    for (size_t i = 0; i < job->nsteps; i++) {
        if (job->steps[i].kind == STEP_HISTOGRAM && st == STATUS_OK)
            st = op_hist_end(x, &accs[i], slots[i]);
        op_hist_acc_release(&accs[i]);   /* deferred by OpenCL, like the ring */
    }
    for (size_t i = 0; i < DEV_CHUNK_RING; i++)
        dev_buf_release(&ring[i]);
    free(accs);
    return st;
}

static void dev_collect_hists(struct job *job, uint64_t **slots)
{
    for (size_t i = 0; i < job->nsteps && job->status == STATUS_OK; i++)
        if (job->steps[i].kind == STEP_HISTOGRAM)
            op_hist_result(&job->steps[i].u.hist, slots[i], &job->results[i].hist, job);
}

void dev_run(struct dev *d, struct job *job)
{
    dev_name_job(&d->info, job);
    enum status_code st = job_run_begin(job);
    size_t *out_len = calloc(job->nsteps ? job->nsteps : 1, sizeof(*out_len));
    uint64_t **slots = calloc(job->nsteps ? job->nsteps : 1, sizeof(*slots));
    if (st == STATUS_OK && (!out_len || !slots)) {
        job_fail(job, STATUS_RESOURCE_EXHAUSTED, "out of host memory");
    } else if (st == STATUS_OK && dev_check_steps(d, job, job->in_len, out_len) == STATUS_OK) {
        struct dev_exec x;
        dev_exec_init(&x, d, job);
        dev_pin_region(d, job->in_region);
        dev_pin_region(d, job->out_region);
        if (dev_chunked(d, job))
            dev_enqueue_chunked(&x, out_len, slots);
        else
            dev_enqueue_steps(&x, out_len, slots);
        if (dev_exec_finish(&x) == STATUS_OK)
            dev_collect_hists(job, slots);
    }
    if (job->status != STATUS_OK && job->results)
        job_drop_results(job);   /* no partial results on failure */
    dev_free_slots(slots, job->nsteps);
    free(out_len);
}
