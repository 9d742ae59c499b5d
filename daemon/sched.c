/* sched.c: placement, daemon-wide limits and completions (see scheduler.h).
 *
 * Runner threads finish tasks and call sched_on_complete() on their own
 * thread; it appends the task to `done` under a mutex and wakes the loop
 * with uv_async_send() (which coalesces: one wake-up may carry many). The
 * loop's async callback takes the whole list and calls each task's done(),
 * which for a unary job is job->done(). Counters and reservations are
 * touched only on the loop thread.
 */
#include "scheduler.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev_task.h"
#include "runner.h"
#include "sat.h"
#include "staging.h"


struct sched {
    uv_loop_t *loop;
    uv_async_t wake;           /* runner threads -> loop */
    uv_mutex_t lock;           /* guards done_head/done_tail only */
    struct task *done_head, *done_tail; /* completed tasks not yet delivered */

    struct dev **devs;         /* not owned */
    struct runner **runners;   /* runners[i] runs devs[i] */
    struct staging_pool **staging; /* staging[i]: devs[i]'s pinned buffers */
    bool stopped;              /* runners are gone: tasks are finished here */
    size_t ndevs;
    size_t default_index;
    struct sched_limits limits;

    /* Loop thread only. */
    uint32_t in_flight;        /* jobs submitted and not yet delivered */
    uint32_t abandoned;        /* of those, unary jobs whose call ended (sched_abandon) */
    uint64_t completed, failed;
};

/* --- placement ------------------------------------------------------------ */

static bool sched_is_index(const char *sel)
{
    if (!*sel)
        return false;
    for (const char *p = sel; *p; p++)
        if (!isdigit((unsigned char)*p))
            return false;
    return true;
}

/* "gpu"/"cpu"/"accelerator" -> type; -1 otherwise. */
static int sched_type_named(const char *sel)
{
    static const enum dev_type types[] = { DEV_GPU, DEV_CPU, DEV_ACCEL };
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (strcmp(sel, dev_type_name(types[i])) == 0)
            return (int)types[i];
    return -1;
}

int sched_pick_default(struct dev **devs, size_t ndevs, const char *sel, size_t *index,
                       char *err, size_t errlen)
{
    if (ndevs == 0) {
        snprintf(err, errlen, "no devices");
        return -1;
    }
    if (!*sel) {
        *index = 0; /* dev_open_all() lists GPUs first */
        return 0;
    }
    if (sched_is_index(sel)) {
        unsigned long i = strtoul(sel, NULL, 10);
        if (i >= ndevs) {
            snprintf(err, errlen, "--device %s: there are %zu devices (0..%zu)", sel, ndevs, ndevs - 1);
            return -1;
        }
        *index = i;
        return 0;
    }
    int type = sched_type_named(sel);
    if (type < 0) {
        snprintf(err, errlen, "--device %s: expected a device index, \"gpu\" or \"cpu\"", sel);
        return -1;
    }
    for (size_t i = 0; i < ndevs; i++) {
        if ((int)dev_info(devs[i])->type == type) {
            *index = i;
            return 0;
        }
    }
    snprintf(err, errlen, "--device %s: no %s device", sel, sel);
    return -1;
}

/* Least-loaded device of type; the default device wins ties. -1 if none. */
static long sched_least_loaded(const struct sched *s, enum dev_type type)
{
    long best = -1;
    size_t best_load = 0;
    for (size_t i = 0; i < s->ndevs; i++) {
        if (dev_info(s->devs[i])->type != type)
            continue;
        size_t load = runner_load(s->runners[i]);
        bool better = best < 0 || load < best_load
                      || (load == best_load && i == s->default_index);
        if (better) {
            best = (long)i;
            best_load = load;
        }
    }
    return best;
}

/* Picks the runner index for a job's device request. */
static enum status_code sched_place(const struct sched *s, const char *req, size_t *index,
                                    char *msg, size_t msglen)
{
    long i;
    if (!*req) {
        /* Stay on the default device's type: a GPU host never silently
         * falls back to the CPU device. */
        i = sched_least_loaded(s, dev_info(s->devs[s->default_index])->type);
    } else if (sched_is_index(req)) {
        unsigned long n = strtoul(req, NULL, 10);
        if (n >= s->ndevs) {
            snprintf(msg, msglen, "device: no device matches \"%s\"", req);
            return STATUS_INVALID_ARGUMENT;
        }
        i = (long)n;
    } else {
        int type = sched_type_named(req);
        if (type < 0) {
            snprintf(msg, msglen, "device: no device matches \"%s\"", req);
            return STATUS_INVALID_ARGUMENT;
        }
        i = sched_least_loaded(s, (enum dev_type)type);
        if (i < 0) {
            snprintf(msg, msglen, "no %s device", req);
            return STATUS_UNAVAILABLE;
        }
    }
    *index = (size_t)i;
    return STATUS_OK;
}

/* --- limits --------------------------------------------------------------- */

/* Host memory is not counted here: the caller holds a job's bytes in its
 * client's budget (budget.h) before submitting. */
static enum status_code sched_admit(const struct sched *s, char *msg, size_t msglen)
{
    if (s->in_flight - s->abandoned >= s->limits.max_jobs) {
        snprintf(msg, msglen, "--max-jobs (%" PRIu32 ") jobs are already queued or running",
                 s->limits.max_jobs);
        return STATUS_RESOURCE_EXHAUSTED;
    }
    return STATUS_OK;
}

enum status_code sched_submit(struct sched *s, struct job *job, char *msg, size_t msglen)
{
    size_t index;
    enum status_code code = sched_place(s, job->device_req, &index, msg, msglen);
    if (code != STATUS_OK)
        return code;
    code = sched_admit(s, msg, msglen);
    if (code != STATUS_OK)
        return code;
    s->in_flight++;
    job->task = (struct task){ .kind = TASK_JOB, .job = job };
    runner_submit(s->runners[index], &job->task);
    return STATUS_OK;
}

/* --- streams ---------------------------------------------------------------- */

enum status_code sched_stream_begin(struct sched *s, struct job *job, size_t *index, char *msg,
                                    size_t msglen)
{
    enum status_code code = sched_place(s, job->device_req, index, msg, msglen);
    if (code != STATUS_OK)
        return code;
    code = sched_admit(s, msg, msglen);
    if (code != STATUS_OK)
        return code;
    job->chunk_bytes = staging_buf_size(s->staging[*index]);
    s->in_flight++;
    return STATUS_OK;
}

void sched_stream_end(struct sched *s, bool ok)
{
    s->in_flight--;
    if (ok)
        s->completed++;
    else
        s->failed++;
}

static void sched_push_done(struct sched *s, struct task *t);

void sched_stream_task(struct sched *s, size_t index, struct task *t)
{
    if (!s->stopped) {
        runner_submit(s->runners[index], t);
        return;
    }
    /* Shutting down: no runner is left to race with, so CLOSE frees the
     * device side here; anything else is cancelled. */
    t->out_len = 0;
    t->msg[0] = '\0';
    t->status = STATUS_OK;
    if (t->kind == TASK_CLOSE)
        dev_stream_close(t->job);
    else {
        t->status = STATUS_CANCELLED;
        snprintf(t->msg, sizeof t->msg, "the daemon is shutting down");
    }
    sched_push_done(s, t);
}

struct staging_pool *sched_staging(struct sched *s, size_t index)
{
    return s->staging[index];
}

/* --- completions ---------------------------------------------------------- */

static void sched_push_done(struct sched *s, struct task *t)
{
    t->next = NULL;
    uv_mutex_lock(&s->lock);
    if (s->done_tail)
        s->done_tail->next = t;
    else
        s->done_head = t;
    s->done_tail = t;
    uv_mutex_unlock(&s->lock);
    uv_async_send(&s->wake);
}

/* Runner thread. */
static void sched_on_complete(struct task *t, void *ctx)
{
    sched_push_done(ctx, t);
}

void sched_abandon(struct sched *s, struct job *job)
{
    if (!job->abandoned) {
        job->abandoned = true;
        s->abandoned++;
    }
}

static void sched_job_done(struct sched *s, struct job *job)
{
    s->in_flight--;
    if (job->abandoned)
        s->abandoned--;
    if (job->status == STATUS_OK)
        s->completed++;
    else
        s->failed++;
    job->done(job); /* frees the job */
}

/* Loop thread: delivers every completed task, including those that the
 * deliveries themselves complete (a CLOSE after shutdown). */
static void sched_deliver(struct sched *s)
{
    for (;;) {
        uv_mutex_lock(&s->lock);
        struct task *t = s->done_head;
        s->done_head = s->done_tail = NULL;
        uv_mutex_unlock(&s->lock);
        if (!t)
            return;
        while (t) {
            struct task *next = t->next;
            t->next = NULL;
            if (t->kind == TASK_JOB)
                sched_job_done(s, t->job);
            else
                t->done(t);
            t = next;
        }
    }
}

static void sched_on_wake(uv_async_t *h)
{
    sched_deliver(h->data);
}

/* --- life ----------------------------------------------------------------- */

int sched_new(uv_loop_t *loop, struct dev **devs, size_t ndevs, size_t default_index,
              const struct sched_limits *limits, struct sched **out, char *err, size_t errlen)
{
    struct sched *s = calloc(1, sizeof(*s));
    if (!s || !(s->runners = calloc(ndevs ? ndevs : 1, sizeof(*s->runners))) ||
        !(s->staging = calloc(ndevs ? ndevs : 1, sizeof(*s->staging)))) {
        if (s)
            free(s->runners);
        free(s);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->loop = loop;
    s->devs = devs;
    s->ndevs = ndevs;
    s->default_index = default_index;
    s->limits = *limits;
    uv_mutex_init(&s->lock);
    uv_async_init(loop, &s->wake, sched_on_wake);
    s->wake.data = s;
    for (size_t i = 0; i < ndevs; i++) {
        if (limits->max_device_memory && limits->max_device_memory < dev_memory_capacity(devs[i]))
            dev_set_memory_capacity(devs[i], limits->max_device_memory);
        if (staging_pool_new(loop, devs[i], limits->staging_bytes / limits->chunk_bytes,
                             limits->chunk_bytes, &s->staging[i], err, errlen) != 0) {
            sched_close(s);
            return -1;
        }
        s->runners[i] = runner_start(devs[i], sched_on_complete, s);
        if (!s->runners[i]) {
            snprintf(err, errlen, "cannot start the runner thread of device %zu", i);
            sched_close(s);
            return -1;
        }
    }
    *out = s;
    return 0;
}

size_t sched_ndevs(const struct sched *s)
{
    return s->ndevs;
}

const struct dev_info *sched_dev_info(const struct sched *s, size_t i)
{
    return dev_info(s->devs[i]);
}

size_t sched_default(const struct sched *s)
{
    return s->default_index;
}

void sched_stats(const struct sched *s, struct sched_stats *out)
{
    out->jobs_in_flight = s->in_flight;
    out->jobs_completed = s->completed;
    out->jobs_failed = s->failed;
}

static void sched_on_closed(uv_handle_t *h)
{
    struct sched *s = h->data;
    uv_mutex_destroy(&s->lock);
    free(s->runners);
    free(s->staging);
    free(s);
}

void sched_close(struct sched *s)
{
    for (size_t i = 0; i < s->ndevs; i++)
        if (s->runners[i])
            runner_stop(s->runners[i]);
    s->stopped = true;
    /* Runners are joined: what they completed last is in the list. */
    sched_deliver(s);
    for (size_t i = 0; i < s->ndevs; i++)
        staging_pool_free(s->staging[i]);
    uv_close((uv_handle_t *)&s->wake, sched_on_closed);
}
