/* SPDX-License-Identifier: MIT */
/* dev_task.c: one task on a device (dev_task.h): a unary job larger than a
 * piece runs a piece per step through dev_piece.c, a smaller one to the end
 * through dev_run(); streamed tasks go to dev_stream.c. */
#include "dev_task.h"

#include <stdio.h>
#include <string.h>

#include "job.h"
#include "op.h"
#include "sat.h"
#include "stage_latency.h"


uint64_t dev_job_memory(const struct job *job)
{
    uint64_t total = job->in_len, len = job->in_len;
    for (size_t i = 0; i < job->nsteps; i++) {
        const struct step *st = &job->steps[i];
        if (st->kind == STEP_HISTOGRAM)
            continue;
        len = job_step_output_len(st, len);
        total = sat_add_u64(total, len);
    }
    return sat_add_u64(total, op_hist_job_bytes(job));
}

uint64_t dev_task_memory(struct dev *d, struct task *t)
{
    if (t->kind == TASK_JOB)
        return dev_piece_wanted(d, t->job) ? dev_piece_memory(d, t->job)
                                           : dev_job_memory(t->job);
    if (t->kind == TASK_OPEN)
        return dev_stream_memory(d, t->job);
    return 0;
}

static void dev_task_status(struct task *t, enum status_code code, const char *msg)
{
    t->status = code;
    snprintf(t->msg, sizeof t->msg, "%s", msg);
}

/* Bytes a whole unary job moves and its kernels touch: its input in, and
 * per step its input read and its output written and copied out. */
static uint64_t dev_job_cost(const struct job *job)
{
    uint64_t total = job->in_len, len = job->in_len;
    for (size_t i = 0; i < job->nsteps; i++) {
        const struct step *st = &job->steps[i];
        uint64_t out = job_step_output_len(st, len);
        total = sat_add_u64(total, len);
        if (st->kind != STEP_HISTOGRAM)
            total = sat_add_u64(total, sat_mul_u64(out, 2));
        len = out;
    }
    return total;
}

uint64_t dev_task_cost(const struct dev *d, const struct task *t)
{
    if (t->kind != TASK_JOB)
        return dev_stream_cost(t);
    if (t->job->piece || dev_piece_wanted(d, t->job))
        return dev_piece_cost(d, t->job);
    return dev_job_cost(t->job);
}

uint64_t dev_task_piece_cost(const struct dev *d)
{
    return dev_piece_cost_full(d);
}

struct dev_exec *dev_task_step(struct dev *d, struct task *t, bool *more)
{
    struct job *job = t->job;
    *more = false;
    t->out_len = 0;
    t->t_begin = stage_latency_now_ns();
    if (t->kind == TASK_CLOSE) {
        dev_stream_close(job);
        dev_task_status(t, STATUS_OK, "");
        return NULL;
    }
    /* Its call is gone (the client left, or its deadline passed): nothing
     * would receive the result, so a job in pieces stops at the next one.
     * A unary job reports through itself. */
    if (atomic_load(&job->cancelled)) {
        if (t->kind == TASK_JOB)
            job_fail(job, STATUS_CANCELLED, JOB_CANCELLED_MSG);
        dev_task_status(t, STATUS_CANCELLED, JOB_CANCELLED_MSG);
        return NULL;
    }
    if (t->kind != TASK_JOB)
        return dev_stream_start(d, t, more);
    if (!job->piece)
        job->t_start = stage_latency_now_ns();   /* its first piece, or the whole job */
    if (job->piece || dev_piece_wanted(d, job))
        return dev_piece_step(d, job, more);
    dev_run(d, job);
    return NULL;
}

bool dev_task_ready(const struct dev_exec *x)
{
    return dev_exec_ready(x);
}

size_t dev_task_events(const struct dev_exec *x)
{
    return x->nevents;
}

size_t dev_task_notify(struct dev_exec *x, const struct dev_notify *n)
{
    return dev_exec_notify(x, n);
}

void dev_task_set_yield(struct dev *d, const struct dev_notify *n)
{
    d->yield = n;
}

void dev_task_finish(struct dev *d, struct task *t, struct dev_exec *x, bool last)
{
    if (t->kind != TASK_JOB) {
        if (x)
            dev_stream_finish(d, t, x);
        return;
    }
    if (x)
        dev_piece_finish(x);
    if (!last)
        return;
    struct job *job = t->job;
    dev_piece_end(job);   /* results, or none on failure; the device side freed */
    if (job->t_start)
        job->t_done = stage_latency_now_ns();
    dev_task_status(t, job->status, job->msg);
}
