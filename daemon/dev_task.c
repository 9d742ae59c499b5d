/* SPDX-License-Identifier: MIT */
/* dev_task.c: one task on a device (dev_task.h): a unary job runs to the
 * end through dev_run(), streamed tasks go to dev_stream.c. */
#include "dev_task.h"

#include <stdio.h>
#include <string.h>

#include "job.h"
#include "op.h"
#include "sat.h"
#include "stage.h"


uint64_t dev_hist_bytes(const struct job *job)
{
    uint64_t total = 0;
    for (size_t i = 0; i < job->nsteps; i++)
        if (job->steps[i].kind == STEP_HISTOGRAM)
            total = sat_add_u64(total, OP_HIST_SLOTS((uint64_t)job->steps[i].u.hist.bins) *
                                           sizeof(cl_ulong));
    return total;
}

/* A unary job's device buffers at their peak, counted generously: the input
 * and every step's output alive at once. */
static uint64_t dev_job_memory(const struct job *job)
{
    uint64_t total = job->in_len, len = job->in_len;
    for (size_t i = 0; i < job->nsteps; i++) {
        const struct step *st = &job->steps[i];
        if (st->kind == STEP_HISTOGRAM)
            continue;
        len = job_step_output_len(st, len);
        total = sat_add_u64(total, len);
    }
    return sat_add_u64(total, dev_hist_bytes(job));
}

uint64_t dev_task_memory(struct dev *d, struct task *t)
{
    if (t->kind == TASK_JOB)
        return dev_job_memory(t->job);
    if (t->kind == TASK_OPEN)
        return dev_stream_memory(d, t->job);
    return 0;
}

static void dev_task_status(struct task *t, enum status_code code, const char *msg)
{
    t->status = code;
    snprintf(t->msg, sizeof t->msg, "%s", msg);
}

struct dev_exec *dev_task_start(struct dev *d, struct task *t)
{
    struct job *job = t->job;
    t->out_len = 0;
    if (t->kind == TASK_CLOSE) {
        dev_stream_close(job);
        dev_task_status(t, STATUS_OK, "");
        return NULL;
    }
    /* Its call is gone (the client left, or its deadline passed): nothing
     * would receive the result. A unary job reports through itself. */
    if (atomic_load(&job->cancelled)) {
        if (t->kind == TASK_JOB)
            job_fail(job, STATUS_CANCELLED, JOB_CANCELLED_MSG);
        dev_task_status(t, STATUS_CANCELLED, JOB_CANCELLED_MSG);
        return NULL;
    }
    if (t->kind == TASK_JOB) {
        job->t_start = stage_now_ns();
        dev_run(d, job);
        job->t_done = stage_now_ns();
        dev_task_status(t, job->status, job->msg);
        return NULL;
    }
    return dev_stream_start(d, t);
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

void dev_task_finish(struct dev *d, struct task *t, struct dev_exec *x)
{
    dev_stream_finish(d, t, x);
}
