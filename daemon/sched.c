/* SPDX-License-Identifier: MIT */
/* sched.c: placement, daemon-wide limits and completions (see sched.h).
 *
 * Runner threads finish tasks and call sched_on_complete() on their own
 * thread; it appends the task to its home port's `done` list under that
 * port's mutex and wakes the port's loop (loop_wake.h, which coalesces:
 * one wake-up may carry many). The loop's wake-up callback takes
 * the whole list and calls each task's done(), which for a unary job is
 * job->done(). So a completion always runs on the loop that submitted
 * it, and ports never touch each other's lists.
 *
 * Shared state has three locks, each held briefly: `counts` guards the
 * daemon-wide job counters (admission is a check and an increment under
 * it); `place` makes choosing the least-loaded device and counting the
 * job on it one step, so that jobs placed at the same instant from
 * several loops spread instead of all seeing the same idle device; and
 * `life` is taken for reading by every use of the runners and for
 * writing by sched_stop(), so no loop submits to a runner that is being
 * stopped and freed.
 */
#include "sched.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call_class.h"
#include "dev_task.h"
#include "host.h"
#include "loop_wake.h"
#include "monotonic.h"
#include "runner.h"
#include "sat.h"
#include "split.h"
#include "stage_latency.h"
#include "staging.h"
#include "tenant_stats.h"

struct sched {
    struct dev **devs;         /* not owned */
    struct runner **runners;   /* runners[i] runs devs[i]; NULL once stopped */
    struct staging_pool **staging; /* staging[i]: devs[i]'s pinned buffers */
    struct host_pool *host;    /* the host path's workers; NULL when off or stopped */
    size_t ndevs;
    size_t default_index;
    struct sched_limits limits;

    uv_mutex_t place;          /* guards placing */
    uint32_t *placing;         /* placing[i]: jobs placed on devs[i] whose first task
                                * has not reached its runner (runner_load counts it then) */

    uv_rwlock_t life;          /* read: using runners; write: stopping them */
    bool stopped;              /* under life: runners are gone, tasks are finished here */

    uv_mutex_t counts;         /* guards the counters below */
    uint32_t in_flight;        /* jobs submitted and not yet delivered, every loop's */
    uint32_t abandoned;        /* of those, unary jobs whose call ended (sched_abandon) */
    uint64_t completed, failed;

    struct tenant_stats *tenants; /* queue and device time by client (its own lock) */
};

struct sched_port {
    struct sched *s;
    struct loop_wake wake;     /* runner threads (and this loop) -> this loop */
    uv_mutex_t lock;           /* guards done_head/done_tail only */
    struct task *done_head, *done_tail; /* completed tasks not yet delivered */
    struct staging_port **staging; /* staging[i]: devs[i]'s pool as this loop sees it */
    uint64_t stirred_ns;       /* the loop's thread: a task last went out or came back */
    bool ran_here;             /* the loop's thread: a job ran on it and awaits delivery */
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
            snprintf(err, errlen, "--device %s: no device %s among the %zu ampd opened "
                     "(0..%zu; --devices chose them)", sel, sel, ndevs, ndevs - 1);
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
    snprintf(err, errlen, "--device %s: no %s device among those opened (--devices chose "
             "them; auto opens the CPU only where there is no GPU or accelerator)", sel, sel);
    return -1;
}

/* Least-loaded device of type, with s->place held; the default device
 * wins ties. -1 if none. */
static long sched_least_loaded(const struct sched *s, enum dev_type type)
{
    long best = -1;
    size_t best_load = 0;
    for (size_t i = 0; i < s->ndevs; i++) {
        if (dev_info(s->devs[i])->type != type)
            continue;
        size_t load = runner_load(s->runners[i]) + s->placing[i];
        bool better = best < 0 || load < best_load
                      || (load == best_load && i == s->default_index);
        if (better) {
            best = (long)i;
            best_load = load;
        }
    }
    return best;
}

/* Picks the runner index for a job's device request, with s->place held. */
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

/* Each priority below the highest leaves this share of --max-jobs more
 * to those above it (a sixteenth: normal jobs may fill 15/16 of the
 * slots, low ones 14/16), so that a flood of low-priority calls cannot
 * keep a high-priority job from being admitted at all. */
#define SCHED_HEADROOM_DIV 16

/* The --max-jobs slots jobs of priority prio (a valid one: job_priority) may fill. */
static uint32_t sched_job_slots(uint32_t max_jobs, enum job_priority prio)
{
    unsigned above = (unsigned)(JOB_PRIORITIES - 1) - (unsigned)prio;
    return max_jobs - above * (max_jobs / SCHED_HEADROOM_DIV);
}

/* Host memory is not counted here: the caller holds a job's bytes in its
 * client's budget (budget.h) before submitting. Counts the job in when it
 * is admitted: the check and the count are one step under the lock. */
static enum status_code sched_admit(struct sched *s, enum job_priority prio, char *msg,
                                    size_t msglen)
{
    enum status_code code = STATUS_OK;
    uv_mutex_lock(&s->counts);
    uint32_t slots = sched_job_slots(s->limits.max_jobs, prio);
    if (s->in_flight - s->abandoned >= slots) {
        if (slots == s->limits.max_jobs)
            snprintf(msg, msglen, "--max-jobs (%" PRIu32 ") jobs are already queued or running",
                     s->limits.max_jobs);
        else
            snprintf(msg, msglen,
                     "%" PRIu32 " jobs are already queued or running: of --max-jobs (%" PRIu32
                     "), %s priority may fill %" PRIu32 ", the rest are kept for higher ones",
                     s->in_flight - s->abandoned, s->limits.max_jobs, call_class_priority_name((int)prio),
                     slots);
        code = STATUS_RESOURCE_EXHAUSTED;
    } else {
        s->in_flight++;
    }
    uv_mutex_unlock(&s->counts);
    return code;
}

/* A job or stream admitted ends: it leaves the counters. */
static void sched_count_end(struct sched *s, bool abandoned, bool ok)
{
    uv_mutex_lock(&s->counts);
    s->in_flight--;
    if (abandoned)
        s->abandoned--;
    if (ok)
        s->completed++;
    else
        s->failed++;
    uv_mutex_unlock(&s->counts);
}

/* A job placed on device index by sched_take reached its runner, or
 * will not. */
static void sched_placed(struct sched *s, size_t index)
{
    uv_mutex_lock(&s->place);
    s->placing[index]--;
    uv_mutex_unlock(&s->place);
}

/* Places and admits a job (with s->life held for reading). */
static enum status_code sched_take(struct sched *s, const struct job *job, size_t *index,
                                   char *msg, size_t msglen)
{
    if (s->stopped) {
        snprintf(msg, msglen, "the daemon is shutting down");
        return STATUS_UNAVAILABLE;
    }
    uv_mutex_lock(&s->place);
    enum status_code code = sched_place(s, job->device_req, index, msg, msglen);
    if (code == STATUS_OK)
        s->placing[*index]++;
    uv_mutex_unlock(&s->place);
    if (code != STATUS_OK)
        return code;
    code = sched_admit(s, job_priority(job), msg, msglen);
    if (code != STATUS_OK)
        sched_placed(s, *index);
    return code;
}

/* sched_take for the host path: no placement, the same admission. */
static enum status_code sched_take_host(struct sched *s, const struct job *job, char *msg,
                                        size_t msglen)
{
    if (s->stopped) {
        snprintf(msg, msglen, "the daemon is shutting down");
        return STATUS_UNAVAILABLE;
    }
    return sched_admit(s, job_priority(job), msg, msglen);
}

/* A job left to the daemon that is smaller than a device launch costs
 * goes to the host path (host.h); a named device is always that device. */
static bool sched_on_host(const struct sched *s, const struct job *job)
{
    return s->host && !job->device_req[0] && host_job_fits(job, s->limits.host_max_bytes);
}

/* A job left to the daemon that is larger than a chunk runs on every
 * device of the default type at once, a part on each (split.h), with
 * s->life held for reading and the job admitted. Returns false when it
 * is to run whole instead: one such device, or no memory to split. */
static bool sched_split(struct sched_port *p, struct job *job)
{
    struct sched *s = p->s;
    if (!split_fits(job, s->limits.chunk_bytes))
        return false;
    enum dev_type type = dev_info(s->devs[s->default_index])->type;
    size_t n = 0;
    for (size_t i = 0; i < s->ndevs; i++)
        n += dev_info(s->devs[i])->type == type;
    struct split *sp = n >= 2 ? split_new(job, n) : NULL;
    if (!sp)
        return false;
    for (size_t i = 0, k = 0; i < s->ndevs; i++) {
        if (dev_info(s->devs[i])->type != type)
            continue;
        struct job *part = split_part(sp, k++);
        part->task = (struct task){ .kind = TASK_JOB, .job = part, .home = p };
        runner_submit(s->runners[i], &part->task);
    }
    return true;
}

enum status_code sched_submit(struct sched_port *p, struct job *job, char *msg, size_t msglen)
{
    struct sched *s = p->s;
    size_t index = 0;
    uv_rwlock_rdlock(&s->life);
    bool host = sched_on_host(s, job);
    enum status_code code = host ? sched_take_host(s, job, msg, msglen)
                                 : sched_take(s, job, &index, msg, msglen);
    if (code == STATUS_OK) {
        job->task = (struct task){ .kind = TASK_JOB, .job = job, .home = p };
        p->stirred_ns = monotonic_ns();
        if (host) {
            if (host_pool_run_here(s->host, &job->task))
                p->ran_here = true;
            else
                host_pool_submit(s->host, &job->task);
        } else {
            if (!sched_split(p, job) && runner_submit(s->runners[index], &job->task))
                p->ran_here = true;
            sched_placed(s, index);
        }
    }
    uv_rwlock_rdunlock(&s->life);
    return code;
}

/* --- streams ---------------------------------------------------------------- */

enum status_code sched_stream_begin(struct sched_port *p, struct job *job, size_t *index,
                                    char *msg, size_t msglen)
{
    struct sched *s = p->s;
    uv_rwlock_rdlock(&s->life);
    enum status_code code = sched_take(s, job, index, msg, msglen);
    uv_rwlock_rdunlock(&s->life);
    if (code != STATUS_OK)
        return code;
    job->chunk_bytes = staging_buf_size(p->staging[*index]);
    return STATUS_OK;
}

/* A job that started: its queue and device time, for its client. */
static void sched_count_times(struct sched *s, const struct job *job, uint64_t device_ns)
{
    if (!job->t_start || job->t_start < job->t_submit)
        return;
    tenant_stats_record(s->tenants, job->cls.client, job->cls.priority,
                        job->t_start - job->t_submit, device_ns);
}

void sched_stream_end(struct sched_port *p, const struct job *job, size_t index, bool opened,
                      uint64_t device_ns, bool ok)
{
    if (!opened)
        sched_placed(p->s, index);
    sched_count_times(p->s, job, device_ns);
    sched_count_end(p->s, false, ok);
}

static void sched_push_done(struct sched_port *p, struct task *t);

/* Shutting down: the runners are gone. A CLOSE has nothing left to free
 * (a stopping runner frees every stream's device side, so the loop never
 * releases OpenCL buffers); anything else is cancelled. */
static void sched_finish_here(struct sched_port *p, struct task *t)
{
    t->out_len = 0;
    t->msg[0] = '\0';
    t->status = STATUS_OK;
    if (t->kind != TASK_CLOSE) {
        t->status = STATUS_CANCELLED;
        snprintf(t->msg, sizeof t->msg, "the daemon is shutting down");
    }
    sched_push_done(p, t);
}

void sched_stream_task(struct sched_port *p, size_t index, struct task *t)
{
    struct sched *s = p->s;
    t->home = p;
    p->stirred_ns = monotonic_ns();
    uv_rwlock_rdlock(&s->life);
    bool stopped = s->stopped;
    if (!stopped)
        runner_submit(s->runners[index], t);
    if (t->kind == TASK_OPEN)
        sched_placed(s, index);   /* the stream's first task (sched_stream_begin placed it) */
    uv_rwlock_rdunlock(&s->life);
    if (stopped)
        sched_finish_here(p, t);
}

struct staging_port *sched_staging(struct sched_port *p, size_t index)
{
    return p->staging[index];
}

/* --- completions ---------------------------------------------------------- */

static void sched_push_done(struct sched_port *p, struct task *t)
{
    uv_mutex_lock(&p->lock);
    task_append(&p->done_head, &p->done_tail, t);
    uv_mutex_unlock(&p->lock);
    loop_wake_send(&p->wake);
}

/* Runner thread: back to the loop that submitted it. */
static void sched_on_complete(struct task *t, void *ctx)
{
    (void)ctx;
    t->t_end = stage_latency_now_ns();
    sched_push_done(t->home, t);
}

void sched_abandon(struct sched_port *p, struct job *job)
{
    if (job->abandoned)
        return;
    job->abandoned = true;
    uv_mutex_lock(&p->s->counts);
    p->s->abandoned++;
    uv_mutex_unlock(&p->s->counts);
}

static void sched_job_done(struct sched *s, struct job *job)
{
    if (job->split) {
        /* A part: its job is done once every part is back. */
        if (!split_part_back(job->split))
            return;
        job = split_end(job->split);
    }
    sched_count_times(s, job, job->t_done > job->t_start ? job->t_done - job->t_start : 0);
    sched_count_end(s, job->abandoned, job->status == STATUS_OK);
    job->done(job); /* frees the job */
}

/* Loop thread: delivers every completed task, including those that the
 * deliveries themselves complete (a CLOSE after shutdown). */
static void sched_deliver(struct sched_port *p)
{
    for (;;) {
        uv_mutex_lock(&p->lock);
        struct task *t = p->done_head;
        p->done_head = p->done_tail = NULL;
        uv_mutex_unlock(&p->lock);
        if (!t)
            return;
        p->stirred_ns = monotonic_ns();
        while (t) {
            struct task *next = t->next;
            t->next = NULL;
            if (t->kind == TASK_JOB)
                sched_job_done(p->s, t->job);
            else
                t->done(t);
            t = next;
        }
    }
}

void sched_port_deliver(struct sched_port *p)
{
    if (!p->ran_here)
        return;   /* the others wait for the loop's turn: their replies leave together */
    p->ran_here = false;
    sched_deliver(p);
}

static void sched_on_wake(struct loop_wake *w)
{
    sched_deliver(w->poll.data);
}

bool sched_port_busy(const struct sched_port *p, uint64_t now_ns, uint64_t window_ns)
{
    return now_ns - p->stirred_ns < window_ns;
}

/* --- life ----------------------------------------------------------------- */

int sched_new(struct dev **devs, size_t ndevs, size_t default_index,
              const struct sched_limits *limits, struct sched **out, char *err, size_t errlen)
{
    struct sched *s = calloc(1, sizeof(*s));
    if (!s || !(s->runners = calloc(ndevs ? ndevs : 1, sizeof(*s->runners))) ||
        !(s->staging = calloc(ndevs ? ndevs : 1, sizeof(*s->staging))) ||
        !(s->placing = calloc(ndevs ? ndevs : 1, sizeof(*s->placing)))) {
        if (s) {
            free(s->runners);
            free(s->staging);
        }
        free(s);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->devs = devs;
    s->ndevs = ndevs;
    s->default_index = default_index;
    s->limits = *limits;
    if (!(s->tenants = tenant_stats_new())) {
        free(s->runners);
        free(s->staging);
        free(s->placing);
        free(s);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    uv_rwlock_init(&s->life);
    uv_mutex_init(&s->counts);
    uv_mutex_init(&s->place);
    for (size_t i = 0; i < ndevs; i++) {
        if (limits->max_device_memory && limits->max_device_memory < dev_memory_capacity(devs[i]))
            dev_set_memory_capacity(devs[i], limits->max_device_memory);
        dev_set_piece_bytes(devs[i], limits->chunk_bytes);   /* the streams' chunk */
        if (staging_pool_new(devs[i], limits->staging_bytes / limits->chunk_bytes,
                             limits->chunk_bytes, &s->staging[i], err, errlen) != 0) {
            sched_stop(s);
            sched_free(s);
            return -1;
        }
        s->runners[i] = runner_start(devs[i], limits->busy_poll_ns, sched_on_complete, s);
        if (!s->runners[i]) {
            snprintf(err, errlen, "cannot start the runner thread of device %zu", i);
            sched_stop(s);
            sched_free(s);
            return -1;
        }
    }
    if (ndevs && limits->host_max_bytes) {
        s->host = host_pool_start(limits->host_threads ? limits->host_threads : 1,
                                  limits->busy_poll_ns,
                                  devs[default_index], sched_on_complete, s);
        if (!s->host) {
            snprintf(err, errlen, "cannot start the host path's worker threads");
            sched_stop(s);
            sched_free(s);
            return -1;
        }
    }
    *out = s;
    return 0;
}

/* Frees a port that did not start: its first n staging ports, and it. */
static void sched_port_unmake(struct sched_port *p, size_t n)
{
    while (n--)
        staging_port_free(p->staging[n]);
    free(p->staging);
    free(p);
}

struct sched_port *sched_port_new(struct sched *s, uv_loop_t *loop)
{
    struct sched_port *p = calloc(1, sizeof(*p));
    if (!p || !(p->staging = calloc(s->ndevs ? s->ndevs : 1, sizeof(*p->staging)))) {
        free(p);
        return NULL;
    }
    p->s = s;
    for (size_t i = 0; i < s->ndevs; i++) {
        p->staging[i] = staging_port_new(s->staging[i], loop);
        if (!p->staging[i]) {
            sched_port_unmake(p, i);
            return NULL;
        }
    }
    if (loop_wake_init(loop, &p->wake, sched_on_wake, p) != 0) {
        sched_port_unmake(p, s->ndevs);
        return NULL;
    }
    uv_mutex_init(&p->lock);
    return p;
}

size_t sched_ndevs(const struct sched_port *p)
{
    return p->s->ndevs;
}

const struct dev_info *sched_dev_info(const struct sched_port *p, size_t i)
{
    return dev_info(p->s->devs[i]);
}

size_t sched_default(const struct sched_port *p)
{
    return p->s->default_index;
}

/* Device i's jobs and memory now, from any thread: nothing once the
 * runners are stopped. */
static void sched_load_of(struct sched *s, size_t i, struct dev_load *out)
{
    *out = (struct dev_load){ 0 };
    uv_rwlock_rdlock(&s->life);
    if (!s->stopped)
        runner_dev_load(s->runners[i], out);
    uv_rwlock_rdunlock(&s->life);
}

void sched_dev_load(const struct sched_port *p, size_t i, struct dev_load *out)
{
    sched_load_of(p->s, i, out);
}

void sched_totals(struct sched *s, struct sched_stats *out)
{
    uv_mutex_lock(&s->counts);
    out->jobs_in_flight = s->in_flight;
    out->jobs_completed = s->completed;
    out->jobs_failed = s->failed;
    uv_mutex_unlock(&s->counts);
}

void sched_stats(const struct sched_port *p, struct sched_stats *out)
{
    sched_totals(p->s, out);
}

int sched_device_usage(struct sched *s, size_t i, struct sched_device_usage *out)
{
    if (i >= s->ndevs)
        return -1;
    const struct dev_info *di = dev_info(s->devs[i]);
    struct dev_load load;
    sched_load_of(s, i, &load);
    *out = (struct sched_device_usage){
        .index = di->index,
        .name = di->name,
        .jobs_queued = load.jobs_queued,
        .jobs_running = load.jobs_running,
        .memory_reserved = load.memory_in_use,
        .memory_capacity = dev_memory_capacity(s->devs[i]),
        .staging_in_use = staging_pool_in_use(s->staging[i]),
        .staging_bytes = staging_pool_bytes(s->staging[i]),
    };
    return 0;
}

void sched_set_max_jobs(struct sched *s, uint32_t max_jobs)
{
    uv_mutex_lock(&s->counts);
    s->limits.max_jobs = max_jobs;
    uv_mutex_unlock(&s->counts);
}

/* Runners take no scheduler lock (their completions take only a port's),
 * so joining them with `life` held for writing cannot wait on a loop. */
void sched_stop(struct sched *s)
{
    uv_rwlock_wrlock(&s->life);
    host_pool_stop(s->host);   /* runs what is queued: tiny jobs */
    s->host = NULL;
    for (size_t i = 0; i < s->ndevs; i++)   /* every device drains at once */
        if (s->runners[i])
            runner_stop_begin(s->runners[i]);
    for (size_t i = 0; i < s->ndevs; i++) {
        runner_stop(s->runners[i]);   /* completions reach their ports */
        s->runners[i] = NULL;
    }
    s->stopped = true;
    uv_rwlock_wrunlock(&s->life);
}

static void sched_port_on_closed(uv_handle_t *h)
{
    struct sched_port *p = h->data;
    uv_mutex_destroy(&p->lock);
    free(p->staging);
    free(p);
}

void sched_port_close(struct sched_port *p)
{
    /* The runners are joined: what they completed last is in the list. */
    sched_deliver(p);
    for (size_t i = 0; i < p->s->ndevs; i++)
        staging_port_free(p->staging[i]);
    loop_wake_close(&p->wake, sched_port_on_closed);
}

void sched_free(struct sched *s)
{
    for (size_t i = 0; i < s->ndevs; i++)
        staging_pool_free(s->staging[i]);
    uv_mutex_destroy(&s->counts);
    uv_mutex_destroy(&s->place);
    uv_rwlock_destroy(&s->life);
    tenant_stats_free(s->tenants);
    free(s->runners);
    free(s->staging);
    free(s->placing);
    free(s);
}

struct tenant_stats *sched_tenants(struct sched *s)
{
    return s->tenants;
}

struct tenant_stats *sched_port_tenants(const struct sched_port *p)
{
    return p->s->tenants;
}
