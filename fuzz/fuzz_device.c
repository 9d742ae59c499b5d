/* SPDX-License-Identifier: MIT */
/* fuzz_device.c: a fake device that runs tasks on the CPU, for fuzz_conn.
 *
 * It plays the part of runner.c + dev_task.c + dev_stream.c: a unary job
 * gets every step's real result (tests/support/host_step.c), and a stream
 * gets a device side of its own (struct dev_stream, which the daemon leaves
 * to dev_stream.c and nothing else sees) from OPEN to CLOSE. Real results
 * matter because their sizes drive what the rpc and h2 layers do next:
 * reply sizes against --max-message-bytes, the OUT tasks of a resident
 * stream, the histogram replies at the end.
 *
 * What a device decides on its own is modelled simply: a job or stream
 * whose memory (counted below, generously, like the runner's admission)
 * exceeds device_memory fails RESOURCE_EXHAUSTED; a task of a cancelled job
 * is dropped (CANCELLED), as the runner does; after a failed task, the
 * job's later tasks fail too, as dev_stream.c's do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_step.h"
#include "fuzz_backend.h"
#include "sat.h"

/* Device buffers a chunked stream keeps, as dev_stream.c's ring. */
#define FUZZ_DEVICE_RING 4

struct dev_stream {
    bool resident;            /* a reverse or fill step: the whole data is kept */
    bool has_data;            /* some step outputs bytes */
    uint8_t *data;            /* resident: the input, then RUN's result; malloc'd */
    size_t size;
    struct hist_result *acc;  /* chunked: nsteps entries; histogram steps' running counts */
};

static uint64_t fuzz_device_fill_bytes(const struct fill_params *p)
{
    return sat_mul_u64(p->count, elem_size(p->type));
}

static uint64_t fuzz_device_hist_bytes(const struct step *st)
{
    return st->kind == STEP_HISTOGRAM ? sat_mul_u64(st->u.hist.bins, sizeof(uint64_t)) : 0;
}

static bool fuzz_device_is_resident(const struct job *job)
{
    for (size_t i = 0; i < job->nsteps; i++)
        if (job->steps[i].kind == STEP_REVERSE || job->steps[i].kind == STEP_FILL)
            return true;
    return false;
}

/* A resident stream's input buffer, as dev_stream.c sizes it: its
 * total_len, or in_cap when the header gave none. */
static uint64_t fuzz_device_stream_input(const struct job *job)
{
    return job->total_len ? job->total_len : job->in_cap;
}

/* Bytes a unary job (from in_len) or a resident stream (from its input
 * buffer) holds at its peak: the input and every step's output at once. */
static uint64_t fuzz_device_job_memory(const struct job *job, uint64_t in_len)
{
    uint64_t total = in_len, len = in_len;
    for (size_t i = 0; i < job->nsteps; i++) {
        const struct step *st = &job->steps[i];
        if (st->kind == STEP_FILL)
            len = fuzz_device_fill_bytes(&st->u.fill);
        total = sat_add_u64(total, st->kind == STEP_HISTOGRAM ? fuzz_device_hist_bytes(st) : len);
    }
    return total;
}

static uint64_t fuzz_device_stream_memory(const struct job *job)
{
    if (fuzz_device_is_resident(job))
        return fuzz_device_job_memory(job, fuzz_device_stream_input(job));
    uint64_t total = FUZZ_DEVICE_RING * (uint64_t)job->chunk_bytes;
    for (size_t i = 0; i < job->nsteps; i++)
        total = sat_add_u64(total, fuzz_device_hist_bytes(&job->steps[i]));
    return total;
}

static void fuzz_device_status(struct task *t, enum status_code code, const char *msg)
{
    t->status = code;
    snprintf(t->msg, sizeof t->msg, "%s", msg);
}

/* A failure of the job as a whole: later tasks of a stream see it too. */
static void fuzz_device_fail(struct task *t, enum status_code code, const char *msg)
{
    job_fail(t->job, code, "%s", msg);
    fuzz_device_status(t, code, msg);
}

/* --- steps over a whole buffer -------------------------------------------- */

/* Runs step st over *data (len bytes); a step with a data output replaces
 * *data with it (malloc'd; the old one is the caller's) and sets *len. A
 * histogram fills hist and passes its input on. Returns 0 or -1 (out of
 * memory). */
static int fuzz_device_step(const struct step *st, uint8_t **data, size_t *len,
                            struct hist_result *hist)
{
    if (st->kind == STEP_HISTOGRAM)
        return host_step_hist(&st->u.hist, *data, *len, hist);
    size_t n = st->kind == STEP_FILL ? (size_t)fuzz_device_fill_bytes(&st->u.fill) : *len;
    uint8_t *out = malloc(n ? n : 1);
    if (!out)
        return -1;
    switch (st->kind) {
    case STEP_REVERSE:
        host_step_reverse(*data, out, n);
        break;
    case STEP_TRANSFORM:
        if (n)
            memcpy(out, *data, n);
        host_step_transform(&st->u.transform, out, n);
        break;
    case STEP_FILL:
        host_step_fill(&st->u.fill, out);
        break;
    case STEP_HISTOGRAM:
        break;
    }
    *data = out;
    *len = n;
    return 0;
}

/* A unary job: every step's result into job->results, as dev_run(). */
static void fuzz_device_job(struct task *t, uint64_t device_memory)
{
    struct job *job = t->job;
    if (fuzz_device_job_memory(job, job->in_len) > device_memory) {
        fuzz_device_fail(t, STATUS_RESOURCE_EXHAUSTED, "fuzz: the job exceeds the device memory");
        return;
    }
    job->results = calloc(job->nsteps, sizeof(*job->results));
    if (!job->results) {
        fuzz_device_fail(t, STATUS_RESOURCE_EXHAUSTED, "fuzz: out of memory");
        return;
    }
    uint8_t *data = job->in;
    size_t len = job->in_len;
    for (size_t i = 0; i < job->nsteps; i++) {
        struct step_result *r = &job->results[i];
        uint8_t *in = data;
        if (fuzz_device_step(&job->steps[i], &data, &len, &r->hist) != 0) {
            fuzz_device_fail(t, STATUS_RESOURCE_EXHAUSTED, "fuzz: out of memory");
            return;
        }
        if (data != in && job->out) {
            /* Results go into out one after another, as dev_run.c puts them. */
            if (len > job->out_cap - job->out_used) {
                free(data);
                fuzz_device_fail(t, STATUS_OUT_OF_RANGE, "fuzz: a result does not fit in out");
                return;
            }
            memcpy(job->out + job->out_used, data, len);
            free(data);
            data = job->out + job->out_used;
            job->out_used += len;
        }
        if (data != in) {
            r->data = data;   /* owned by the result from here on, unless in out */
            r->len = len;
        }
    }
    fuzz_device_status(t, STATUS_OK, "");
}

/* --- streams --------------------------------------------------------------- */

static void fuzz_device_open(struct task *t, uint64_t device_memory)
{
    struct job *job = t->job;
    if (fuzz_device_stream_memory(job) > device_memory) {
        fuzz_device_status(t, STATUS_RESOURCE_EXHAUSTED, "fuzz: the stream exceeds the device memory");
        return;
    }
    struct dev_stream *ds = calloc(1, sizeof(*ds));
    if (!ds) {
        fuzz_device_fail(t, STATUS_RESOURCE_EXHAUSTED, "fuzz: out of memory");
        return;
    }
    job->stream = ds;
    ds->resident = fuzz_device_is_resident(job);
    for (size_t i = 0; i < job->nsteps; i++)
        ds->has_data |= job->steps[i].kind != STEP_HISTOGRAM;
    if (!job->results)
        job->results = calloc(job->nsteps, sizeof(*job->results));
    ds->acc = calloc(job->nsteps, sizeof(*ds->acc));
    ds->size = ds->resident ? (size_t)fuzz_device_stream_input(job) : 0;
    ds->data = calloc(ds->size ? ds->size : 1, 1);
    if (!job->results || !ds->acc || !ds->data) {
        fuzz_device_fail(t, STATUS_RESOURCE_EXHAUSTED, "fuzz: out of memory");
        return;
    }
    fuzz_device_status(t, STATUS_OK, "");
}

/* Adds the counts of one chunk into a histogram step's running counts. */
static int fuzz_device_hist_add(const struct hist_params *p, const uint8_t *buf, size_t len,
                                struct hist_result *acc)
{
    struct hist_result h;
    if (host_step_hist(p, buf, len, &h) != 0)
        return -1;
    if (!acc->counts) {
        *acc = h;
        return 0;
    }
    for (uint32_t b = 0; b < h.bins; b++)
        acc->counts[b] += h.counts[b];
    acc->below += h.below;
    acc->above += h.above;
    acc->nan += h.nan;
    free(h.counts);
    return 0;
}

static void fuzz_device_chunk(struct task *t)
{
    struct job *job = t->job;
    struct dev_stream *ds = job->stream;
    for (size_t i = 0; i < job->nsteps; i++) {
        const struct step *st = &job->steps[i];
        struct transform_params clip;
        if (st->kind == STEP_HISTOGRAM) {
            if (fuzz_device_hist_add(&st->u.hist, t->buf, t->len, &ds->acc[i]) != 0) {
                fuzz_device_fail(t, STATUS_RESOURCE_EXHAUSTED, "fuzz: out of memory");
                return;
            }
        } else if (st->kind == STEP_TRANSFORM &&
                   job_transform_clip(&st->u.transform, t->offset, t->len, &clip)) {
            host_step_transform(&clip, t->buf, t->len);
        }
    }
    if (ds->has_data)
        t->out_len = t->len;
}

static void fuzz_device_in(struct task *t)
{
    struct job *job = t->job;
    struct dev_stream *ds = job->stream;
    if (t->len > job->chunk_bytes) {
        fuzz_device_fail(t, STATUS_INTERNAL, "fuzz: a chunk larger than the staging buffers");
        return;
    }
    if (!ds->resident) {
        fuzz_device_chunk(t);
        return;
    }
    if (t->offset > ds->size || t->len > ds->size - t->offset) {
        fuzz_device_fail(t, STATUS_INVALID_ARGUMENT, "fuzz: more input than header.total_length");
        return;
    }
    memcpy(ds->data + t->offset, t->buf, t->len);
}

static void fuzz_device_run_resident(struct task *t)
{
    struct job *job = t->job;
    struct dev_stream *ds = job->stream;
    if (t->len > ds->size) {
        fuzz_device_fail(t, STATUS_INTERNAL, "fuzz: RUN past the stream's input buffer");
        return;
    }
    ds->size = t->len;   /* RUN says how much input came (task.h) */
    for (size_t i = 0; ds->resident && i < job->nsteps; i++) {
        uint8_t *in = ds->data;
        if (fuzz_device_step(&job->steps[i], &ds->data, &ds->size, &job->results[i].hist) != 0) {
            fuzz_device_fail(t, STATUS_RESOURCE_EXHAUSTED, "fuzz: out of memory");
            return;
        }
        if (ds->data != in)
            free(in);
    }
    t->out_len = ds->has_data ? ds->size : 0;
}

static void fuzz_device_out(struct task *t)
{
    struct dev_stream *ds = t->job->stream;
    if (t->offset > ds->size || t->len > ds->size - t->offset) {
        fuzz_device_fail(t, STATUS_INTERNAL, "fuzz: copy out past the end of the result");
        return;
    }
    memcpy(t->buf, ds->data + t->offset, t->len);
    t->out_len = t->len;
}

static void fuzz_device_end(struct task *t)
{
    struct job *job = t->job;
    struct dev_stream *ds = job->stream;
    for (size_t i = 0; i < job->nsteps; i++) {
        if (job->steps[i].kind != STEP_HISTOGRAM || job->results[i].hist.counts)
            continue;
        if (!ds->acc[i].counts && host_step_hist(&job->steps[i].u.hist, NULL, 0, &ds->acc[i]) != 0) {
            fuzz_device_fail(t, STATUS_RESOURCE_EXHAUSTED, "fuzz: out of memory");
            return;
        }
        job->results[i].hist = ds->acc[i];   /* the result owns the counts now */
        memset(&ds->acc[i], 0, sizeof(ds->acc[i]));
    }
}

static void fuzz_device_close(struct job *job)
{
    struct dev_stream *ds = job->stream;
    if (!ds)
        return;
    for (size_t i = 0; ds->acc && i < job->nsteps; i++)
        free(ds->acc[i].counts);
    free(ds->acc);
    free(ds->data);
    free(ds);
    job->stream = NULL;
}

static void fuzz_device_stream(struct task *t, uint64_t device_memory)
{
    struct job *job = t->job;
    if (t->kind != TASK_OPEN && !job->stream) {
        fuzz_device_fail(t, STATUS_INTERNAL, "fuzz: a stream task before its OPEN");
        return;
    }
    fuzz_device_status(t, STATUS_OK, "");
    switch (t->kind) {
    case TASK_OPEN: fuzz_device_open(t, device_memory); break;
    case TASK_IN: fuzz_device_in(t); break;
    case TASK_RUN: fuzz_device_run_resident(t); break;
    case TASK_OUT: fuzz_device_out(t); break;
    case TASK_END: fuzz_device_end(t); break;
    default: break;
    }
}

void fuzz_device_run(struct task *t, uint64_t device_memory, bool fail)
{
    struct job *job = t->job;
    t->out_len = 0;
    fuzz_device_status(t, STATUS_OK, "");
    if (t->kind == TASK_CLOSE) {
        fuzz_device_close(job);   /* runs whatever came before, as the runner's */
        return;
    }
    if (atomic_load(&job->cancelled)) {
        if (t->kind == TASK_JOB)
            job_fail(job, STATUS_CANCELLED, "the call ended before its job ran");
        fuzz_device_status(t, STATUS_CANCELLED, "the call ended before its job ran");
        return;
    }
    if (fail) {
        fuzz_device_fail(t, STATUS_INTERNAL, "fuzz: an injected device error");
        return;
    }
    if (t->kind == TASK_JOB) {
        fuzz_device_job(t, device_memory);
        return;
    }
    if (job->status != STATUS_OK) {
        fuzz_device_status(t, job->status, job->msg);   /* an earlier task failed */
        return;
    }
    fuzz_device_stream(t, device_memory);
}
