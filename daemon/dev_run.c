/* SPDX-License-Identifier: MIT */
/* dev_run.c: running a job's steps on one device (dev_run, see dev.h).
 *
 * A job larger than a piece runs in pieces (dev_piece.c). Otherwise the
 * input is copied in once; each data step writes a new device buffer
 * that becomes the next step's input and is copied back as that step's
 * result; histogram steps only read. All commands go through dev_exec.c,
 * whose hazard tracking lets step i's copy out run while step i+1 reads the
 * same buffer. Steps are validated against the device before anything is
 * enqueued. The kernels themselves are driven by op_*.c.
 */
#include "dev_task.h"
#include "log.h"
#include "monotonic.h"
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

enum dev_host dev_job_in_host(const struct dev *d, const struct job *job)
{
    if (job->in_region)
        return region_is_pinned(job->in_region, d->info.index) ? DEV_HOST_PINNED
                                                               : DEV_HOST_PAGEABLE;
    return job->in_pinned_dev == (int)d->info.index ? DEV_HOST_PINNED : DEV_HOST_PAGEABLE;
}

enum dev_host dev_job_out_host(const struct dev *d, const struct job *job)
{
    if (job->out_region)
        return region_is_pinned(job->out_region, d->info.index) ? DEV_HOST_PINNED
                                                                : DEV_HOST_PAGEABLE;
    return job->out ? dev_job_in_host(d, job) : DEV_HOST_PAGEABLE;
}

/* Host memory for a data result (job_result_alloc); a failure fails the
 * whole execution. */
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

void dev_set_piece_bytes(struct dev *d, size_t bytes)
{
    d->chunk_bytes = bytes;
}

void dev_pin_region(struct dev *d, struct region *r)
{
    if (!r || d->info.type == DEV_CPU || !region_pin_claim(r, d->info.index))
        return;   /* pinned, or being pinned by another thread */
    uint8_t *base = region_pin_view(r, d->info.index);
    size_t size = region_size(r);
    uint64_t t0 = monotonic_ns();
    struct dev_pinned *p = dev_pinned_wrap(d, base, size);
    region_pin_set(r, d->info.index, p);
    /* Per call (a client's regions), rate-limited: without a pin, its
     * copies run at pageable speed and the next job tries again. */
    log_call(p ? LOG_DEBUG : LOG_WARN, "device %u: %s a region of %zu bytes in %.1f ms",
             d->info.index, p ? "pinned" : "could not pin", size, (monotonic_ns() - t0) / 1e6);
}

void dev_job_regions(struct dev *d, struct job *job)
{
    dev_pin_region(d, job->in_region);
    dev_pin_region(d, job->out_region);
    if (job->in_region)
        job->in = region_view(job->in_region, d->info.index, job->in);
    if (job->out_region)
        job->out = region_view(job->out_region, d->info.index, job->out);
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

/* --- jobs in pieces ---------------------------------------------------------- */

/* Pieces dev_run keeps started ahead of the one it waits for: enough for
 * the copy in, kernels and copy out of consecutive pieces to overlap on
 * the three queues (a 1 GiB region transform on the H100 in one piece was
 * copy in, kernel, copy out one after the other: 43 ms, where each copy
 * alone takes 20). */
#define DEV_RUN_AHEAD 4

/* A job larger than a piece, blocking: the same pieces a runner starts one
 * by one (dev_piece.c), all started here. */
static void dev_run_pieces(struct dev *d, struct job *job)
{
    struct dev_exec *ahead[DEV_RUN_AHEAD];
    size_t n = 0;
    for (bool more = true; more;) {
        if (n == DEV_RUN_AHEAD) {
            dev_piece_finish(ahead[0]);
            memmove(ahead, ahead + 1, (n - 1) * sizeof(*ahead));
            n--;
        }
        struct dev_exec *x = dev_piece_step(d, job, &more);
        if (x)
            ahead[n++] = x;
    }
    for (size_t i = 0; i < n; i++)
        dev_piece_finish(ahead[i]);
    dev_piece_end(job);
}

static void dev_collect_hists(struct job *job, uint64_t **slots)
{
    for (size_t i = 0; i < job->nsteps && job->status == STATUS_OK; i++)
        if (job->steps[i].kind == STEP_HISTOGRAM)
            op_hist_result(&job->steps[i].u.hist, slots[i], &job->results[i].hist, job);
}

void dev_run(struct dev *d, struct job *job)
{
    if (dev_piece_wanted(d, job)) {
        dev_run_pieces(d, job);
        return;
    }
    dev_name_job(&d->info, job);
    enum status_code st = job_run_begin(job);
    size_t *out_len = calloc(job->nsteps ? job->nsteps : 1, sizeof(*out_len));
    uint64_t **slots = calloc(job->nsteps ? job->nsteps : 1, sizeof(*slots));
    if (st == STATUS_OK && (!out_len || !slots)) {
        job_fail(job, STATUS_RESOURCE_EXHAUSTED, "out of host memory");
    } else if (st == STATUS_OK && dev_check_steps(d, job, job->in_len, out_len) == STATUS_OK) {
        struct dev_exec x;
        dev_exec_init(&x, d, job);
        dev_job_regions(d, job);
        dev_enqueue_steps(&x, out_len, slots);
        if (dev_exec_finish(&x) == STATUS_OK)
            dev_collect_hists(job, slots);
    }
    if (job->status != STATUS_OK && job->results)
        job_drop_results(job);   /* no partial results on failure */
    dev_free_slots(slots, job->nsteps);
    free(out_len);
}
