/* SPDX-License-Identifier: MIT */
/* dev_stream.c: the device side of a streamed job, between its OPEN and
 * CLOSE tasks (task.h).
 *
 * Two ways to run one. A job of transforms and histograms only is run
 * chunk by chunk ("chunked"): each IN copies its staging buffer into one of
 * a small ring of device buffers, transforms it in place, adds it to the
 * histograms' device-resident counts and copies the bytes back into the
 * same staging buffer, so device memory stays a few chunks whatever the
 * input size. A job with a reverse or fill step needs all of its data at
 * once ("resident"): IN copies each chunk to its place in one device
 * buffer, RUN runs the steps on it, OUT copies pieces of the result out.
 *
 * Each task's commands go through their own dev_exec (dev_exec.c), whose
 * hazard tracking on the long-lived buffers orders chunk i+RING's copy in
 * after chunk i's copy out (write after read) and lets the rest overlap.
 */
#include "dev_task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev_internal.h"
#include "op.h"
#include "sat.h"

/* Device buffers of a chunked stream: one being copied in, one in the
 * kernels, one being copied out, and a spare so the copy in never waits. */
#define DEV_STREAM_RING 4

struct dev_stream {
    struct dev *d;
    struct job *job;                     /* whose stream this is */
    struct dev_stream *prev, *next;      /* d's open streams (d->streams) */
    bool resident;                       /* whole input on the device */
    bool has_data;                       /* some step outputs bytes */
    struct dev_buf ring[DEV_STREAM_RING];/* chunked: chunk_bytes each */
    uint64_t chunks;                     /* chunked: INs started, picks the ring slot */
    struct dev_buf data;                 /* resident: the input, then RUN's result */
    struct dev_buf run_out;              /* resident: a reverse's or fill's output in RUN */
    bool running;                        /* resident: RUN's first piece has run */
    size_t run_step;                     /* resident: the step RUN's next piece serves */
    uint64_t run_off;                    /*   and how much of its span is done */
    struct op_hist_acc *accs;            /* chunked: nsteps entries, histogram steps used */
    uint64_t **slots;                    /* nsteps entries: histogram steps' host counts */
};

static bool dev_stream_is_resident(const struct job *job)
{
    for (size_t i = 0; i < job->nsteps; i++)
        if (job->steps[i].kind == STEP_REVERSE || job->steps[i].kind == STEP_FILL)
            return true;
    return false;
}

/* Bytes of a resident stream's input buffer: its announced length, or
 * the most an input of unknown length may bring (job->in_cap). */
static uint64_t dev_stream_input_bytes(const struct job *job)
{
    return job->total_len ? job->total_len : job->in_cap;
}

uint64_t dev_stream_memory(struct dev *d, struct job *job)
{
    (void)d;
    if (!dev_stream_is_resident(job))
        return sat_add_u64(DEV_STREAM_RING * (uint64_t)job->chunk_bytes, op_hist_job_bytes(job));
    /* The input and every reverse/fill output alive at once, counted
     * generously (transforms run in place). */
    uint64_t total = dev_stream_input_bytes(job), len = total;
    for (size_t i = 0; i < job->nsteps; i++) {
        const struct step *st = &job->steps[i];
        len = job_step_output_len(st, len);
        if (st->kind == STEP_FILL || st->kind == STEP_REVERSE)
            total = sat_add_u64(total, len);
    }
    return sat_add_u64(total, op_hist_job_bytes(job));
}

uint64_t dev_stream_cost(const struct task *t)
{
    const struct job *job = t->job;
    uint64_t kernels = sat_mul_u64(t->len, job->nsteps);   /* each step over a chunk */
    switch (t->kind) {
    case TASK_IN:
        /* A chunk in; a chunked stream's through every step and back out. */
        return dev_stream_is_resident(job) ? t->len : sat_add_u64(sat_mul_u64(t->len, 2), kernels);
    case TASK_RUN:
        /* A piece: one chunk's range of a step, read and written. */
        return sat_mul_u64(t->len < job->chunk_bytes ? t->len : job->chunk_bytes, 2);
    case TASK_OUT: return t->len;
    default: return 0;
    }
}

static struct dev_exec *dev_stream_exec(struct dev *d, struct job *job)
{
    struct dev_exec *x = malloc(sizeof(*x));
    if (x)
        dev_exec_init(x, d, job);
    return x;
}

/* --- OPEN ------------------------------------------------------------------ */

static enum status_code dev_stream_alloc(struct job *job, struct dev_stream *ds)
{
    ds->accs = calloc(job->nsteps, sizeof(*ds->accs));
    ds->slots = calloc(job->nsteps, sizeof(*ds->slots));
    if (!job->results)
        job->results = calloc(job->nsteps, sizeof(*job->results));
    if (!ds->accs || !ds->slots || !job->results)
        return job_fail(job, STATUS_RESOURCE_EXHAUSTED, "out of host memory for a stream");
    for (size_t i = 0; i < job->nsteps; i++) {
        const struct step *st = &job->steps[i];
        if (st->kind != STEP_HISTOGRAM) {
            ds->has_data = true;
            continue;
        }
        ds->slots[i] = calloc(OP_HIST_SLOTS(st->u.hist.bins), sizeof(uint64_t));
        if (!ds->slots[i])
            return job_fail(job, STATUS_RESOURCE_EXHAUSTED, "no host memory for %u bins",
                            st->u.hist.bins);
    }
    return STATUS_OK;
}

static void dev_stream_open(struct dev *d, struct job *job, struct dev_exec *x)
{
    struct dev_stream *ds = calloc(1, sizeof(*ds));
    if (!ds) {
        job_fail(job, STATUS_RESOURCE_EXHAUSTED, "out of host memory for a stream");
        x->failed = true;
        return;
    }
    job->stream = ds;
    ds->d = d;
    ds->job = job;
    ds->next = d->streams;
    if (d->streams)
        d->streams->prev = ds;
    d->streams = ds;
    ds->resident = dev_stream_is_resident(job);
    /* Steps are checked against the input's length where it is known (a
     * resident job's without total_length and without input reads none);
     * an unsized one's are checked again at RUN. */
    uint64_t check_len = job->total_len || (ds->resident && !job->in_cap)
                             ? job->total_len : JOB_UNKNOWN_LEN;
    enum status_code st = dev_check_steps(d, job, check_len, NULL);
    if (st == STATUS_OK)
        st = dev_stream_alloc(job, ds);
    if (st != STATUS_OK) {
        x->failed = true;
        return;
    }
    if (ds->resident) {
        dev_buf_create(x, &ds->data, (size_t)dev_stream_input_bytes(job), "the stream's input");
        return;
    }
    for (size_t i = 0; i < DEV_STREAM_RING; i++)
        dev_buf_create(x, &ds->ring[i], job->chunk_bytes, "a stream chunk buffer");
    for (size_t i = 0; i < job->nsteps; i++)
        if (job->steps[i].kind == STEP_HISTOGRAM)
            op_hist_begin(x, &job->steps[i].u.hist, &ds->accs[i]);
}

/* --- IN: one chunk ------------------------------------------------------- */

static void dev_stream_chunk(struct dev_exec *x, struct task *t)
{
    struct job *job = t->job;
    struct dev_stream *ds = job->stream;
    struct dev_buf *b = &ds->ring[ds->chunks++ % DEV_STREAM_RING];
    dev_exec_write_at(x, b, 0, t->buf, t->len, DEV_HOST_PINNED);
    for (size_t i = 0; i < job->nsteps; i++) {
        const struct step *st = &job->steps[i];
        struct transform_params clip;
        if (st->kind == STEP_HISTOGRAM)
            op_hist_add(x, &st->u.hist, b, t->len, &ds->accs[i]);
        else if (job_transform_clip(&st->u.transform, t->offset, t->len, &clip))
            op_transform(x, &clip, b, b);
    }
    if (ds->has_data) {
        dev_exec_read(x, b, t->buf, 0, t->len, DEV_HOST_PINNED);
        t->out_len = t->len;
    }
}

static void dev_stream_in(struct dev_exec *x, struct task *t)
{
    struct job *job = t->job;
    struct dev_stream *ds = job->stream;
    if (t->len > job->chunk_bytes) {
        x->failed = true;
        job_fail(job, STATUS_INTERNAL, "a stream chunk of %zu bytes exceeds the %zu-byte buffers",
                 t->len, job->chunk_bytes);
        return;
    }
    if (!ds->resident) {
        dev_stream_chunk(x, t);
        return;
    }
    if (t->offset > ds->data.size || t->len > ds->data.size - t->offset) {
        x->failed = true;
        if (job->in_cap)   /* the loop refuses such input first (rpc_stream.c) */
            job_fail(job, STATUS_RESOURCE_EXHAUSTED,
                     "the input passed --max-unknown-length (%zu bytes)", ds->data.size);
        else
            job_fail(job, STATUS_INVALID_ARGUMENT,
                     "header.total_length (%zu) is shorter than the input sent", ds->data.size);
        return;
    }
    dev_exec_write_at(x, &ds->data, (size_t)t->offset, t->buf, t->len, DEV_HOST_PINNED);
}

/* --- RUN, OUT, END -------------------------------------------------------- */

/* Resident: RUN runs every step over the whole data (t->len bytes of
 * ds->data: an unsized input's buffer is larger), a piece per step of
 * the task (dev_task_step): one chunk's range of a step's launches
 * (dev_piece_launch), so a long reverse or fill is bounded work between
 * which the runner starts other tasks. ds->data ends as the result. */
static void dev_stream_run(struct dev_exec *x, struct task *t, bool *more)
{
    struct job *job = t->job;
    struct dev_stream *ds = job->stream;
    if (!ds->running) {
        if (t->len > ds->data.size) {
            x->failed = true;
            job_fail(job, STATUS_INTERNAL,
                     "a stream's input of %zu bytes past its %zu-byte buffer", t->len,
                     ds->data.size);
            return;
        }
        ds->data.size = t->len;   /* the buffer's bytes past it hold nothing */
        if (job->in_cap && dev_check_steps(x->d, job, t->len, NULL) != STATUS_OK) {
            x->failed = true;
            return;
        }
        ds->running = true;
    }
    if (ds->run_step < job->nsteps) {
        const struct step *st = &job->steps[ds->run_step];
        uint64_t base, span = dev_piece_step_span(st, ds->data.size, &base);
        uint64_t left = span - ds->run_off;
        size_t len = (size_t)(left < x->d->chunk_bytes ? left : x->d->chunk_bytes);
        size_t out_len = (size_t)job_step_output_len(st, ds->data.size);
        dev_piece_launch(x, st, &ds->data, &ds->run_out, &ds->accs[ds->run_step],
                         ds->slots[ds->run_step], out_len, ds->run_off, len);
        ds->run_off += len;
        if (ds->run_off >= span) {
            ds->run_step++;
            ds->run_off = 0;
        }
    }
    *more = ds->run_step < job->nsteps && !x->failed;
    if (!*more)
        t->out_len = ds->has_data ? ds->data.size : 0;
}

static void dev_stream_out(struct dev_exec *x, struct task *t)
{
    struct dev_stream *ds = t->job->stream;
    if (t->offset > ds->data.size || t->len > ds->data.size - t->offset) {
        x->failed = true;
        job_fail(t->job, STATUS_INTERNAL, "copy out past the end of a stream's result");
        return;
    }
    dev_exec_read(x, &ds->data, t->buf, (size_t)t->offset, t->len, DEV_HOST_PINNED);
    t->out_len = t->len;
}

static void dev_stream_end(struct dev_exec *x, struct task *t)
{
    struct job *job = t->job;
    struct dev_stream *ds = job->stream;
    if (ds->resident)
        return;   /* RUN read the counts already */
    for (size_t i = 0; i < job->nsteps; i++)
        if (job->steps[i].kind == STEP_HISTOGRAM)
            op_hist_end(x, &ds->accs[i], ds->slots[i]);
}

/* --- tasks ------------------------------------------------------------------ */

struct dev_exec *dev_stream_start(struct dev *d, struct task *t, bool *more)
{
    *more = false;
    struct job *job = t->job;
    struct dev_exec *x = dev_stream_exec(d, job);
    if (!x) {
        t->status = STATUS_RESOURCE_EXHAUSTED;
        snprintf(t->msg, sizeof t->msg, "out of host memory");
        return NULL;
    }
    if (job->status != STATUS_OK) {
        x->failed = true;   /* an earlier task failed: so does this one */
        return x;
    }
    if (t->kind != TASK_OPEN && !job->stream) {
        x->failed = true;
        job_fail(job, STATUS_INTERNAL, "stream task before the stream was opened");
        return x;
    }
    switch (t->kind) {
    case TASK_OPEN: dev_stream_open(d, job, x); break;
    case TASK_IN: dev_stream_in(x, t); break;
    case TASK_RUN: dev_stream_run(x, t, more); break;
    case TASK_OUT: dev_stream_out(x, t); break;
    case TASK_END: dev_stream_end(x, t); break;
    default: break;
    }
    return x;
}

/* END's counts into job->results, clamp applied. */
static void dev_stream_results(struct job *job)
{
    struct dev_stream *ds = job->stream;
    for (size_t i = 0; i < job->nsteps && job->status == STATUS_OK; i++)
        if (job->steps[i].kind == STEP_HISTOGRAM && !job->results[i].hist.counts)
            op_hist_result(&job->steps[i].u.hist, ds->slots[i], &job->results[i].hist, job);
}

void dev_stream_finish(struct dev *d, struct task *t, struct dev_exec *x)
{
    (void)d;
    struct job *job = t->job;
    enum status_code st = dev_exec_wait(x);
    free(x);
    if (st == STATUS_OK && t->kind == TASK_END)
        dev_stream_results(job);
    if (st == STATUS_OK && job->status != STATUS_OK)
        st = job->status;
    t->status = st;
    snprintf(t->msg, sizeof t->msg, "%s", st == STATUS_OK ? "" : job->msg);
    if (st != STATUS_OK)
        t->out_len = 0;
}

void dev_stream_close(struct job *job)
{
    struct dev_stream *ds = job->stream;
    if (!ds)
        return;
    if (ds->prev)
        ds->prev->next = ds->next;
    else
        ds->d->streams = ds->next;
    if (ds->next)
        ds->next->prev = ds->prev;
    for (size_t i = 0; i < DEV_STREAM_RING; i++)
        dev_buf_release(&ds->ring[i]);
    dev_buf_release(&ds->data);
    dev_buf_release(&ds->run_out);
    for (size_t i = 0; i < job->nsteps; i++) {
        if (ds->accs)
            op_hist_acc_release(&ds->accs[i]);
        if (ds->slots)
            free(ds->slots[i]);
    }
    free(ds->accs);
    free(ds->slots);
    free(ds);
    job->stream = NULL;
}

void dev_stream_close_all(struct dev *d)
{
    while (d->streams)
        dev_stream_close(d->streams->job);
}
