/* SPDX-License-Identifier: MIT */
/* fuzz_sched.c: sched.h without threads or devices, for fuzz_conn.
 *
 * Placement and admission follow the daemon's rules closely enough that
 * the rpc layer sees every answer sched.c can give (a bad device name, no
 * device of a type, --max-jobs, --max-job-memory). Accepted work waits in
 * one FIFO until the harness completes it with fuzz_sched_complete(): one
 * queue for both devices keeps each device's order, which is all a stream
 * relies on, and lets the input decide how far completions lag behind the
 * requests. Every job and stream is counted in and out for the invariants.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_backend.h"
#include "sat.h"
#include "tenant_stats.h"

#define FUZZ_SCHED_NDEVS 2

struct sched_port {
    struct fuzz_sched_limits limits;
    struct dev_info info[FUZZ_SCHED_NDEVS];
    struct staging_port *pools[FUZZ_SCHED_NDEVS];
    struct task *head, *tail;   /* queued tasks, oldest first, linked through next */
    size_t queued;
    uint32_t in_flight;         /* unary jobs and streams, as sched.c counts them */
    uint32_t abandoned;         /* of those, jobs whose call ended (sched_abandon) */
    uint64_t completed, failed;
    struct fuzz_sched_counts counts;
    struct tenant_stats *tenants; /* each job and stream done, for Status (rpc_info.c) */
};

static void fuzz_sched_release(struct sched_port *s)
{
    for (size_t i = 0; i < FUZZ_SCHED_NDEVS; i++)
        fuzz_staging_free(s->pools[i]);
    tenant_stats_free(s->tenants);
    free(s);
}

struct sched_port *fuzz_sched_new(const struct fuzz_sched_limits *limits)
{
    static const struct { const char *name; enum dev_type type; } devs[FUZZ_SCHED_NDEVS] = {
        { "fuzz gpu", DEV_GPU },
        { "fuzz cpu", DEV_CPU },
    };
    struct sched_port *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->limits = *limits;
    if (!(s->tenants = tenant_stats_new())) {
        free(s);
        return NULL;
    }
    for (size_t i = 0; i < FUZZ_SCHED_NDEVS; i++) {
        struct dev_info *di = &s->info[i];
        di->index = (unsigned)i;
        snprintf(di->name, sizeof di->name, "%s", devs[i].name);
        snprintf(di->vendor, sizeof di->vendor, "fuzz");
        snprintf(di->platform, sizeof di->platform, "fuzz");
        di->type = devs[i].type;
        di->global_mem_size = limits->device_memory;
        di->max_mem_alloc_size = limits->device_memory;
        di->compute_units = 1;
        char err[64];
        if (fuzz_staging_new(limits->staging_count, limits->chunk_bytes, &s->pools[i], err,
                             sizeof err) != 0) {
            fuzz_sched_release(s);
            return NULL;
        }
    }
    return s;
}

void fuzz_sched_free(struct sched_port *s)
{
    if (!s)
        return;
    fuzz_sched_check_quiet(s);
    fuzz_sched_release(s);
}

/* --- placement and admission ---------------------------------------------- */

static bool fuzz_sched_is_index(const char *req)
{
    if (!*req)
        return false;
    for (const char *p = req; *p; p++)
        if (*p < '0' || *p > '9')
            return false;
    return true;
}

static enum status_code fuzz_sched_place(const struct sched_port *s, const char *req, size_t *index,
                                         char *msg, size_t msglen)
{
    if (!*req) {
        *index = 0;
        return STATUS_OK;
    }
    if (fuzz_sched_is_index(req)) {
        unsigned long n = strtoul(req, NULL, 10);
        if (n >= FUZZ_SCHED_NDEVS) {
            snprintf(msg, msglen, "device: no device matches \"%s\"", req);
            return STATUS_INVALID_ARGUMENT;
        }
        *index = n;
        return STATUS_OK;
    }
    bool known = false;
    for (int t = DEV_GPU; t <= DEV_ACCEL; t++) {
        if (strcmp(req, dev_type_name((enum dev_type)t)) != 0)
            continue;
        known = true;
        for (size_t i = 0; i < FUZZ_SCHED_NDEVS; i++) {
            if ((int)s->info[i].type == t) {
                *index = i;
                return STATUS_OK;
            }
        }
    }
    if (known) {
        snprintf(msg, msglen, "no %s device", req);
        return STATUS_UNAVAILABLE;
    }
    snprintf(msg, msglen, "device: no device matches \"%s\"", req);
    return STATUS_INVALID_ARGUMENT;
}

/* Host memory is the rpc layer's to count (budget.h); the scheduler only
 * bounds the jobs in flight. */
static enum status_code fuzz_sched_admit(const struct sched_port *s, char *msg, size_t msglen)
{
    if (s->in_flight - s->abandoned >= s->limits.max_jobs) {
        snprintf(msg, msglen, "--max-jobs (%" PRIu32 ") jobs are already queued or running",
                 s->limits.max_jobs);
        return STATUS_RESOURCE_EXHAUSTED;
    }
    return STATUS_OK;
}

/* --- the queue ---------------------------------------------------------------- */

static void fuzz_sched_push(struct sched_port *s, struct task *t)
{
    t->next = NULL;
    if (s->tail)
        s->tail->next = t;
    else
        s->head = t;
    s->tail = t;
    s->queued++;
}

static struct task *fuzz_sched_pop(struct sched_port *s)
{
    struct task *t = s->head;
    if (t) {
        s->head = t->next;
        if (!s->head)
            s->tail = NULL;
        t->next = NULL;
        s->queued--;
    }
    return t;
}

enum status_code sched_submit(struct sched_port *s, struct job *job, char *msg, size_t msglen)
{
    size_t index;
    enum status_code code = fuzz_sched_place(s, job->device_req, &index, msg, msglen);
    if (code != STATUS_OK)
        return code;
    code = fuzz_sched_admit(s, msg, msglen);
    if (code != STATUS_OK)
        return code;
    if (!job->done || !job->owner)
        fuzz_backend_trap("sched_submit of a job without done or owner");
    s->in_flight++;
    s->counts.jobs_submitted++;
    snprintf(job->device, sizeof job->device, "%zu: %s", index, s->info[index].name);
    job->task = (struct task){ .kind = TASK_JOB, .job = job };
    fuzz_sched_push(s, &job->task);
    return STATUS_OK;
}

enum status_code sched_stream_begin(struct sched_port *s, struct job *job, size_t *index, char *msg,
                                    size_t msglen)
{
    enum status_code code = fuzz_sched_place(s, job->device_req, index, msg, msglen);
    if (code != STATUS_OK)
        return code;
    code = fuzz_sched_admit(s, msg, msglen);
    if (code != STATUS_OK)
        return code;
    job->chunk_bytes = staging_buf_size(s->pools[*index]);
    s->in_flight++;
    s->counts.streams_begun++;
    return STATUS_OK;
}

void sched_stream_end(struct sched_port *s, const struct job *job, size_t index, bool opened,
                      uint64_t device_ns, bool ok)
{
    (void)index;
    (void)opened;
    tenant_stats_record(s->tenants, job->cls.client, job->cls.priority,
                        job->t_start > job->t_submit ? job->t_start - job->t_submit : 0, device_ns);
    if (s->in_flight == 0 || s->counts.streams_ended == s->counts.streams_begun)
        fuzz_backend_trap("sched_stream_end without a stream begun");
    s->in_flight--;
    s->counts.streams_ended++;
    if (ok)
        s->completed++;
    else
        s->failed++;
}

void sched_stream_task(struct sched_port *s, size_t index, struct task *t)
{
    if (index >= FUZZ_SCHED_NDEVS || !t->done || !t->job)
        fuzz_backend_trap("sched_stream_task of a task without device, done or job");
    if (t->kind == TASK_OPEN)
        s->counts.opens++;
    if (t->kind == TASK_CLOSE && ++s->counts.closes > s->counts.opens)
        fuzz_backend_trap("a stream CLOSE without its OPEN");
    fuzz_sched_push(s, t);
}

struct staging_port *sched_staging(struct sched_port *s, size_t index)
{
    return s->pools[index];
}

/* --- completions ---------------------------------------------------------------- */

void sched_abandon(struct sched_port *s, struct job *job)
{
    if (!job->abandoned) {
        job->abandoned = true;
        s->abandoned++;
    }
}

static void fuzz_sched_job_done(struct sched_port *s, struct job *job)
{
    s->in_flight--;
    if (job->abandoned)
        s->abandoned--;
    s->counts.jobs_done++;
    tenant_stats_record(s->tenants, job->cls.client, job->cls.priority, 0, 0);
    if (job->status == STATUS_OK)
        s->completed++;
    else
        s->failed++;
    job->done(job);   /* frees the job */
}

size_t fuzz_sched_complete(struct sched_port *s, size_t n, bool fail)
{
    size_t done = 0;
    struct task *t;
    while (done < n && (t = fuzz_sched_pop(s))) {
        fuzz_device_run(t, s->limits.device_memory, fail && done == 0);
        done++;
        s->counts.tasks_run++;
        if (t->kind == TASK_JOB)
            fuzz_sched_job_done(s, t->job);
        else
            t->done(t);   /* may free t */
    }
    return done;
}

size_t fuzz_sched_queued(const struct sched_port *s)
{
    return s->queued;
}

bool fuzz_sched_idle(struct sched_port *s)
{
    bool woke = false;
    for (size_t i = 0; i < FUZZ_SCHED_NDEVS; i++)
        woke |= fuzz_staging_idle(s->pools[i]);
    return woke;
}

const struct fuzz_sched_counts *fuzz_sched_counts(const struct sched_port *s)
{
    return &s->counts;
}

void fuzz_sched_check_quiet(const struct sched_port *s)
{
    const struct fuzz_sched_counts *c = &s->counts;
    if (s->queued || s->head)
        fuzz_backend_trap("tasks still queued");
    if (c->jobs_submitted != c->jobs_done)
        fuzz_backend_trap("a unary job submitted was never delivered");
    if (c->streams_begun != c->streams_ended)
        fuzz_backend_trap("a stream begun never ended (sched_stream_end)");
    if (c->opens != c->closes)
        fuzz_backend_trap("a stream OPEN without its CLOSE");
    if (s->in_flight != 0 || s->abandoned != 0)
        fuzz_backend_trap("jobs in flight once quiet");
    for (size_t i = 0; i < FUZZ_SCHED_NDEVS; i++)
        if (staging_free_count(s->pools[i]) != staging_count(s->pools[i]))
            fuzz_backend_trap("a staging buffer is not back in its pool");
}

/* --- what the info methods read --------------------------------------------------- */

size_t sched_ndevs(const struct sched_port *s)
{
    (void)s;
    return FUZZ_SCHED_NDEVS;
}

const struct dev_info *sched_dev_info(const struct sched_port *s, size_t i)
{
    return &s->info[i];
}

size_t sched_default(const struct sched_port *s)
{
    (void)s;
    return 0;
}

/* Nothing runs on a device here, so no device has load. */
void sched_dev_load(const struct sched_port *s, size_t i, struct dev_load *out)
{
    (void)s;
    (void)i;
    *out = (struct dev_load){ 0 };
}

void sched_stats(const struct sched_port *s, struct sched_stats *out)
{
    out->jobs_in_flight = s->in_flight;
    out->jobs_completed = s->completed;
    out->jobs_failed = s->failed;
}

struct tenant_stats *sched_port_tenants(const struct sched_port *s)
{
    return s->tenants;
}
