/* SPDX-License-Identifier: MIT */
/* dev_batch.c: many small unary jobs in one copy in, one launch and one
 * copy out (dev_task.h, kernels/batch.cl).
 *
 * A 16-byte job's device work takes nanoseconds; what it costs is the
 * commands around it: a copy in, a launch, a copy out and a wait, tens of
 * microseconds on the H100 whatever the size. The device's batch lane
 * (runner.c) gathers the small jobs queued for it (Triton's dynamic
 * batching, without a delay: what is queued while the previous batch runs
 * is the next batch), and
 * here they are packed into one pinned buffer: the item table, the map
 * tables, then every input, 16-byte aligned. One copy takes it to the
 * device, one launch runs a work-group per job, one copy brings every
 * output back, and each job gets its own result and status: a job that
 * fails its checks is not packed, and the others run. All three go on the
 * device's batch queue (DEV_Q_BATCH), so a batch runs beside the bulk
 * pieces already queued, not after them; on a PoCL CPU device, on the
 * queue of its batch device (d->batch_dev: dev_discover.c), which runs
 * them on the thread that waits for them: the lane's, or an I/O loop's
 * (runner.c, runner_batch_here).
 */
#include "dev_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op.h"
#include "stage_latency.h"

#define DEV_BATCH_ALIGN 16
#define DEV_BATCH_ITEM_BYTES (DEV_BATCH_ITEM_WORDS * sizeof(uint32_t))
#define DEV_BATCH_HIST_BYTES (JOB_HIST_BYTE_BINS * sizeof(uint32_t))

/* Both directions' buffers, made once per device at its first batch. */
struct dev_batch_mem {
    struct dev_pinned *pinned; /* owned: up then down, DEV_BATCH_BYTES each */
    uint8_t *up, *down;        /* host side, in pinned */
    cl_mem dev_up, dev_down;   /* owned */
    cl_kernel k;               /* d's */
    size_t wg;
};

static size_t dev_batch_align(size_t n)
{
    n = n ? n : 1;
    return (n + DEV_BATCH_ALIGN - 1) / DEV_BATCH_ALIGN * DEV_BATCH_ALIGN;
}

static const struct step *dev_batch_step(const struct task *t)
{
    return &t->job->steps[0];
}

/* Bytes a job takes in each direction: its item, map table and input up,
 * its output down. */
static void dev_batch_sizes(const struct task *t, size_t *up, size_t *down)
{
    const struct step *s = dev_batch_step(t);
    size_t len = t->job->in_len;
    *up = DEV_BATCH_ITEM_BYTES + dev_batch_align(len);
    if (s->kind == STEP_TRANSFORM && s->u.transform.op == XFORM_MAP)
        *up += sizeof s->u.transform.table;
    *down = s->kind == STEP_HISTOGRAM ? DEV_BATCH_HIST_BYTES : dev_batch_align(len);
}

bool dev_batch_takes(const struct task *t)
{
    if (t->kind != TASK_JOB)
        return false;
    const struct job *job = t->job;
    /* A job whose output goes over its own input (job_output_in_place)
     * fits: its input is packed before its result is written. */
    if (job->nsteps != 1 || job->in_len > DEV_BATCH_JOB_BYTES || job->in_region ||
        job->out_region)
        return false;
    const struct step *s = &job->steps[0];
    return s->kind == STEP_REVERSE || s->kind == STEP_TRANSFORM ||
           (s->kind == STEP_HISTOGRAM && s->u.hist.type == ELEM_U8);
}

bool dev_batch_fits(const struct dev_batch *b, const struct task *t)
{
    if (b->n == DEV_BATCH_JOBS || !dev_batch_takes(t))
        return false;
    size_t up, down;
    dev_batch_sizes(t, &up, &down);
    return b->up + up <= DEV_BATCH_BYTES && b->down + down <= DEV_BATCH_BYTES;
}

void dev_batch_add(struct dev_batch *b, struct task *t)
{
    size_t up, down;
    dev_batch_sizes(t, &up, &down);
    b->up += up;
    b->down += down;
    b->tasks[b->n++] = t;
}

void dev_batch_free(struct dev *d)
{
    struct dev_batch_mem *m = d->batch;
    if (!m)
        return;
    if (m->dev_up)
        clReleaseMemObject(m->dev_up);
    if (m->dev_down)
        clReleaseMemObject(m->dev_down);
    dev_pinned_free(m->pinned);
    free(m);
    d->batch = NULL;
}

static struct dev_batch_mem *dev_batch_mem(struct dev *d)
{
    if (d->batch)
        return d->batch;
    struct dev_batch_mem *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    d->batch = m;
    cl_int rc = CL_SUCCESS;
    m->k = dev_kernel(d, "batch_run");
    m->up = dev_pinned_alloc(d, 2 * (size_t)DEV_BATCH_BYTES, &m->pinned);
    if (m->up) {
        m->down = m->up + DEV_BATCH_BYTES;
        m->dev_up = clCreateBuffer(d->ctx, CL_MEM_READ_ONLY, DEV_BATCH_BYTES, NULL, &rc);
    }
    if (m->dev_up)
        m->dev_down = clCreateBuffer(d->ctx, CL_MEM_WRITE_ONLY, DEV_BATCH_BYTES, NULL, &rc);
    if (!m->k || !m->dev_down) {
        dev_batch_free(d);
        return NULL;
    }
    m->wg = dev_kernel_wg(d, m->k, d->shape == DEV_SHAPE_GPU ? 256 : 64);
    return d->batch;
}

/* Starts a job of the batch: the same checks and bookkeeping as dev_run.
 * Returns whether it is to be packed. */
static bool dev_batch_begin(struct dev *d, struct task *t)
{
    struct job *job = t->job;
    job->t_start = stage_latency_now_ns();
    dev_name_job(&d->info, job);
    if (atomic_load(&job->cancelled)) {
        job_fail(job, STATUS_CANCELLED, JOB_CANCELLED_MSG);
        return false;
    }
    return job_run_begin(job) == STATUS_OK && dev_check_steps(d, job, job->in_len, NULL) ==
                                                  STATUS_OK;
}

/* Writes the items, map tables and inputs of the jobs to run into m->up;
 * returns the bytes used, and each job's output offset in down_off. */
static size_t dev_batch_pack(struct dev_batch_mem *m, struct task **run, size_t n,
                             size_t *down_off)
{
    size_t tables = 0;
    for (size_t i = 0; i < n; i++) {
        const struct step *s = dev_batch_step(run[i]);
        tables += s->kind == STEP_TRANSFORM && s->u.transform.op == XFORM_MAP;
    }
    size_t tab = dev_batch_align(n * DEV_BATCH_ITEM_BYTES);
    size_t in = tab + tables * sizeof(((struct transform_params *)0)->table), down = 0;
    for (size_t i = 0; i < n; i++) {
        const struct job *job = run[i]->job;
        const struct step *s = dev_batch_step(run[i]);
        uint32_t w[DEV_BATCH_ITEM_WORDS] = {(uint32_t)s->kind, (uint32_t)in,
                                            (uint32_t)job->in_len, (uint32_t)down};
        if (s->kind == STEP_TRANSFORM) {
            const struct transform_params *p = &s->u.transform;
            w[4] = (uint32_t)p->op;
            w[5] = p->value;
            w[6] = (uint32_t)p->offset;
            w[7] = (uint32_t)(p->offset + p->length);
            if (p->op == XFORM_MAP) {
                memcpy(m->up + tab, p->table, sizeof p->table);
                w[5] = (uint32_t)tab;
                tab += sizeof p->table;
            }
        }
        memcpy(m->up + i * DEV_BATCH_ITEM_BYTES, w, sizeof w);
        if (job->in_len)
            memcpy(m->up + in, job->in, job->in_len);
        in += dev_batch_align(job->in_len);
        down_off[i] = down;
        down += s->kind == STEP_HISTOGRAM ? DEV_BATCH_HIST_BYTES : dev_batch_align(job->in_len);
    }
    down_off[n] = down;
    return in;
}

/* One copy in, one launch, one copy out on bd, where d's batches run;
 * returns the first CL error. */
static cl_int dev_batch_launch(const struct dev *d, struct dev *bd, struct dev_batch_mem *m,
                               size_t n, size_t up, size_t down)
{
    cl_command_queue q = bd->q[DEV_Q_BATCH];
    cl_event done = NULL;
    size_t global = n * m->wg;
    cl_int rc = clEnqueueWriteBuffer(q, m->dev_up, CL_FALSE, 0, up, m->up, 0, NULL, NULL);
    if (rc == CL_SUCCESS)
        rc = clSetKernelArg(m->k, 0, sizeof(cl_mem), &m->dev_up);
    if (rc == CL_SUCCESS)
        rc = clSetKernelArg(m->k, 1, sizeof(cl_mem), &m->dev_down);
    if (rc == CL_SUCCESS)
        rc = d->launch_fault ? d->launch_fault
                             : clEnqueueNDRangeKernel(q, m->k, 1, NULL, &global, &m->wg, 0, NULL,
                                                      NULL);
    if (rc == CL_SUCCESS)
        rc = clEnqueueReadBuffer(q, m->dev_down, CL_FALSE, 0, down, m->down, 0, NULL, &done);
    if (rc == CL_SUCCESS)
        clFlush(q);
    else
        clFinish(q);   /* what was enqueued still reads m->up: the next batch reuses it */
    if (done) {
        cl_int wait = clWaitForEvents(1, &done);
        cl_int st = dev_event_status(done);
        clReleaseEvent(done);
        rc = wait != CL_SUCCESS ? wait : st < 0 ? st : CL_SUCCESS;
    }
    return rc;
}

/* A job's result from its slice of m->down. */
static void dev_batch_unpack(struct dev_batch_mem *m, struct task *t, size_t off)
{
    struct job *job = t->job;
    const struct step *s = dev_batch_step(t);
    struct step_result *r = &job->results[0];
    if (s->kind != STEP_HISTOGRAM) {
        if (job_result_alloc(job, r, job->in_len) == STATUS_OK)
            memcpy(r->data, m->down + off, job->in_len);
        return;
    }
    uint64_t slots[OP_HIST_SLOTS(JOB_HIST_BYTE_BINS)] = {0};
    uint32_t counts[JOB_HIST_BYTE_BINS];
    memcpy(counts, m->down + off, sizeof counts);
    for (size_t b = 0; b < JOB_HIST_BYTE_BINS; b++)
        slots[b] = counts[b];
    op_hist_result(&s->u.hist, slots, &r->hist, job);
}

bool dev_batch_here(const struct dev *d)
{
    return d->batch_dev != NULL;
}

bool dev_batch_run(struct dev *d, struct dev_batch *b)
{
    struct dev *bd = d->batch_dev ? d->batch_dev : d;
    struct dev_batch_mem *m = dev_batch_mem(bd);
    if (!m)
        return false;
    struct task *run[DEV_BATCH_JOBS];
    size_t down_off[DEV_BATCH_JOBS + 1], n = 0;
    for (size_t i = 0; i < b->n; i++)
        if (dev_batch_begin(d, b->tasks[i]))
            run[n++] = b->tasks[i];
    if (n) {
        size_t up = dev_batch_pack(m, run, n, down_off);
        cl_int rc = dev_batch_launch(d, bd, m, n, up, down_off[n]);
        for (size_t i = 0; i < n; i++) {
            if (rc == CL_SUCCESS)
                dev_batch_unpack(m, run[i], down_off[i]);
            else
                job_fail(run[i]->job, dev_cl_status(rc), "a batch of %zu jobs on device %u: %s",
                         n, d->info.index, dev_cl_error_name(rc));
        }
    }
    uint64_t now = stage_latency_now_ns();
    for (size_t i = 0; i < b->n; i++) {
        struct task *t = b->tasks[i];
        struct job *job = t->job;
        if (job->status != STATUS_OK && job->results)
            job_drop_results(job);   /* no partial results on failure */
        job->t_done = now;
        t->out_len = 0;
        t->status = job->status;
        snprintf(t->msg, sizeof t->msg, "%s", job->msg);
    }
    return true;
}
