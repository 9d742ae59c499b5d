/* SPDX-License-Identifier: MIT */
/* job.c: life of a struct job (see job.h). */
#include "job.h"

#include "call_class.h"
#include "region.h"
#include "sat.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t elem_size(enum elem_type t)
{
    switch (t) {
    case ELEM_U8: return 1;
    case ELEM_U32:
    case ELEM_I32:
    case ELEM_F32: return 4;
    case ELEM_I64: return 8;
    }
    return 1;
}

struct job *job_new(size_t nsteps)
{
    struct job *job = calloc(1, sizeof(*job));
    if (!job)
        return NULL;
    job->steps = calloc(nsteps ? nsteps : 1, sizeof(*job->steps));
    if (!job->steps) {
        free(job);
        return NULL;
    }
    job->nsteps = nsteps;
    job->device_index = -1;
    job->in_pinned_dev = -1;
    job->cls.weight = JOB_WEIGHT_DEFAULT;
    job->cls.priority = JOB_PRIORITY_NORMAL;
    atomic_init(&job->queue_state, JOB_QUEUED);
    return job;
}

bool job_claim(struct job *job, enum job_queue_state state)
{
    int expected = JOB_QUEUED;
    return atomic_compare_exchange_strong(&job->queue_state, &expected, (int)state);
}

#define JOB_NS_PER_US 1000
#define JOB_US_PER_MS 1000

/* us microseconds as milliseconds, exact ("12 ms", "0.2 ms"). */
static void job_ms_text(uint64_t us, char *out, size_t outlen)
{
    if (us % JOB_US_PER_MS == 0)
        snprintf(out, outlen, "%llu ms", (unsigned long long)(us / JOB_US_PER_MS));
    else
        snprintf(out, outlen, "%.3f ms", (double)us / JOB_US_PER_MS);
}

void job_queue_expired_msg(const struct job *job, uint64_t now_ns, char *msg, size_t msglen)
{
    const struct job_class *c = &job->cls;
    uint64_t limit_ns = c->queue_limit_us * JOB_NS_PER_US;
    uint64_t queued_ns = c->queue_deadline_ns - limit_ns;
    uint64_t waited_us = now_ns > queued_ns ? (now_ns - queued_ns) / JOB_NS_PER_US : 0;
    char waited[32], limit[32];
    job_ms_text(waited_us, waited, sizeof waited);
    job_ms_text(c->queue_limit_us, limit, sizeof limit);
    if (c->queue_limit_default)
        snprintf(msg, msglen, "the job could not start in time: it waited %s in the queue, "
                 "over the daemon's --max-queue-time of %s for %s priority (the call sent no "
                 "amp-max-queue-time)", waited, limit, call_class_priority_name((int)c->priority));
    else
        snprintf(msg, msglen, "the job could not start in time: it waited %s in the queue, "
                 "over its amp-max-queue-time of %s", waited, limit);
}

bool job_queue_late(struct job *job, uint64_t now_ns, char *msg, size_t msglen)
{
    if (!job->cls.queue_deadline_ns || now_ns < job->cls.queue_deadline_ns ||
        !job_claim(job, JOB_EXPIRED))
        return false;
    job_queue_expired_msg(job, now_ns, msg, msglen);
    return true;
}

enum job_priority job_priority(const struct job *job)
{
    enum job_priority p = job->cls.priority;
    return (unsigned)p < JOB_PRIORITIES ? p : JOB_PRIORITY_NORMAL;
}

uint32_t job_weight(const struct job *job)
{
    uint32_t w = job->cls.weight;
    return w == 0 ? JOB_WEIGHT_DEFAULT : w > JOB_WEIGHT_MAX ? JOB_WEIGHT_MAX : w;
}

static void job_free_input(struct job *job)
{
    if (job->in_mem_free)
        job->in_mem_free(job->in_mem);
    else
        free(job->in_mem);
}

void job_free(struct job *job)
{
    if (!job)
        return;
    if (job->results) {
        for (size_t i = 0; i < job->nsteps; i++) {
            if (!job->out)
                free(job->results[i].data);
            free(job->results[i].hist.counts);
        }
        free(job->results);
    }
    free(job->steps);
    job_free_input(job);
    region_put(job->in_region);
    region_put(job->out_region);
    free(job);
}

void job_output_in_place(struct job *job)
{
    if (!job->in_mem || job->out)
        return;
    size_t data_steps = 0;
    for (size_t i = 0; i < job->nsteps; i++) {
        enum step_kind k = job->steps[i].kind;
        if (k == STEP_FILL)
            return;
        data_steps += k != STEP_HISTOGRAM;
    }
    if (data_steps != 1)
        return;
    job->out = job->in;
    job->out_cap = job->in_len;
}

void job_drop_input(struct job *job)
{
    if (!job->in_mem || (job->out && !job->out_region))
        return;
    job_free_input(job);
    job->in_mem = NULL;
    job->in_mem_len = 0;
    job->in = NULL;
    job->in_len = 0;
}

enum status_code job_run_begin(struct job *job)
{
    job->status = STATUS_OK;
    job->msg[0] = '\0';
    if (job->results)
        job_drop_results(job);   /* a job run again starts afresh */
    else
        job->results = calloc(job->nsteps ? job->nsteps : 1, sizeof(*job->results));
    if (!job->results)
        return job_fail(job, STATUS_RESOURCE_EXHAUSTED, "out of host memory");
    if (job->nsteps == 0)
        return job_fail(job, STATUS_INVALID_ARGUMENT, "steps: a job needs at least one step");
    return STATUS_OK;
}

enum status_code job_result_alloc(struct job *job, struct step_result *r, size_t len)
{
    r->len = len;
    if (job->out) {
        if (len > job->out_cap - job->out_used)
            return job_fail(job, STATUS_OUT_OF_RANGE,
                            "output_region: %zu bytes do not fit in the %zu left", len,
                            job->out_cap - job->out_used);
        r->data = job->out + job->out_used;
        job->out_used += len;
        return STATUS_OK;
    }
    r->data = malloc(len ? len : 1);
    if (!r->data)
        return job_fail(job, STATUS_RESOURCE_EXHAUSTED, "no host memory for a %zu-byte result",
                        len);
    return STATUS_OK;
}

void job_drop_results(struct job *job)
{
    job->out_used = 0;
    for (size_t i = 0; i < job->nsteps; i++) {
        if (!job->out)
            free(job->results[i].data);
        free(job->results[i].hist.counts);
        memset(&job->results[i], 0, sizeof(job->results[i]));
    }
}

enum status_code job_fail(struct job *job, enum status_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(job->msg, sizeof(job->msg), fmt, ap);
    va_end(ap);
    job->status = code;
    return code;
}

uint64_t job_step_output_len(const struct step *st, uint64_t in_len)
{
    if (st->kind == STEP_FILL)
        return sat_mul_u64(st->u.fill.count, elem_size(st->u.fill.type));
    return in_len;
}

uint64_t job_memory(const struct job *job)
{
    /* Bytes in a client's region are the client's memory, not ours; output
     * written over the input takes none. */
    uint64_t total = job->in_mem_len, len = job->in_len;
    uint64_t data = job->out ? 0 : 1;
    for (size_t i = 0; i < job->nsteps; i++) {
        const struct step *st = &job->steps[i];
        len = job_step_output_len(st, len);
        switch (st->kind) {
        case STEP_FILL:
            total = sat_add_u64(total, sat_mul_u64(len, data));
            break;
        case STEP_HISTOGRAM:
            total = sat_add_u64(total, sat_mul_u64(st->u.hist.bins, sizeof(uint64_t)));
            break;
        case STEP_REVERSE:
        case STEP_TRANSFORM:
            total = sat_add_u64(total, sat_mul_u64(len, data));
            break;
        }
    }
    return total;
}

bool job_transform_clip(const struct transform_params *p, uint64_t off, size_t len,
                        struct transform_params *out)
{
    uint64_t lo = p->offset > off ? p->offset : off;
    uint64_t end = sat_add_u64(p->offset, p->length);
    uint64_t hi = end < off + len ? end : off + len;
    if (hi <= lo)
        return false;
    *out = *p;
    out->offset = lo - off;
    out->length = hi - lo;
    return true;
}
