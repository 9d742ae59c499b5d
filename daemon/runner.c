/* SPDX-License-Identifier: MIT */
/* runner.c: the threads of one device that run its tasks (runner.h).
 *
 * The loop thread submits tasks under a mutex into one of two fair
 * queues (fairq.h: by priority, then by each client's weighted share):
 * small unary jobs into the batch lane's, everything else into the
 * runner's. The batch lane is a thread of its own that runs the small
 * jobs queued, as many as fit, as one batch on the device's batch queue
 * (dev_batch.c) and waits for it: on the runner's thread a small job
 * waited for whatever the runner was doing (starting a bulk piece, a
 * pageable copy that holds it), and on 2 CPU cores a 64 KiB job beside
 * another client's streams spent 403-707 us queued against 170-258 on
 * an ampd of its own (bench/RESULTS.md, "Where the time goes"). Between
 * the steps of a copy that holds the runner (a GPU's copy of pageable
 * memory) the runner waits for the batch in flight or queued
 * (runner_yield): a batch beside a stepping copy met each step on the
 * copy engine, and a 16 B job's run beside 32 MiB unary calls took 205
 * us, 112 with the wait (31-39 when the runner ran batches itself, but
 * queued 83-87 us, not 29).
 *
 * Where the device's batches run on the thread that waits for them (a
 * PoCL CPU device's basic device), a small job that finds the lane idle
 * runs on its submitter's thread instead (runner_batch_here), taking the
 * lane with an atomic flag and not the mutex (struct runner's lock).
 *
 * The runner thread takes its queue's tasks in order and starts each on
 * the device without waiting (dev_task_step), a piece at a time: a task
 * with more pieces to come goes back to the queue, charged its next
 * piece's cost, so a large unary job and the tasks of other clients take
 * turns piece by piece. It starts a piece while what it has in flight costs less
 * than RUNNER_FLIGHT_PIECES full pieces (dev_task_cost), and finishes
 * pieces oldest first. A task is handed to the completion callback once
 * its last piece finished, so a stream's tasks complete in the order
 * they were submitted. The thread sleeps on one condition variable
 * that both a new task and a finished device command signal (an OpenCL
 * event callback), so it never sits in a blocking wait on the device while
 * a task it could start is queued: that would serialise a stream's chunks.
 * While tasks are in flight it also wakes every RUNNER_LOOK_NS to look at
 * the oldest itself: the callbacks may come late.
 *
 * Admission: a unary job or a stream's OPEN reserves the device memory it
 * needs first (not a batch's job: it runs in the buffers the device keeps
 * for batches). One that could never fit fails with RESOURCE_EXHAUSTED; one
 * that does not fit now is parked, and so is every admission after it of
 * no higher priority (no overtaking within a priority), until a job or
 * stream releases its reservation; then the parked ones are tried again
 * first, in order. Tasks that need no new memory (a stream's chunks) keep
 * flowing meanwhile, so streams already admitted interleave with the
 * queue. Admission is where a queued job starts (job_claim): one whose
 * queue time ran out first is answered UNAVAILABLE instead.
 */
#define _GNU_SOURCE   /* pthread_setname_np */
#include "runner.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dev_task.h"
#include "fairq.h"
#include "monotonic.h"
#include "spin.h"

/* What the runner keeps in flight, in full pieces' cost (a chunk copied
 * in, transformed and copied out: dev_task_piece_cost): it starts another
 * piece while less is in flight, so up to three full pieces run at once,
 * one on each of the device's queues (copy in of one, kernels of the
 * next, copy out of the third). A task queued now waits behind at most
 * that much device work, where it waited behind eight whole tasks (eight
 * 32 MiB jobs) before. Batches of small jobs are not counted: they run
 * beside, on the batch queue. */
#define RUNNER_FLIGHT_PIECES 3
/* Slots for pieces in flight: the bound above in bytes is what limits
 * them; this only sizes the array for many tiny ones (a stream's small
 * chunks). */
#define RUNNER_FLIGHT_SLOTS 64

/* While tasks are in flight, the runner looks at the oldest at least this
 * often. Waiting for NVIDIA's event callbacks alone, a task often finished
 * only when the next one woke the runner, and a stream's last chunk,
 * which nothing follows, waited up to 20 ms: a 1 GiB stream's chunks took
 * 1.3-1.9 ms from submit to done at the 90th percentile and up to 15 ms,
 * looking every 200 us 0.7-0.9 ms and at most 3.6 (bench/RESULTS-archive.md,
 * session 14). */
#define RUNNER_LOOK_NS 200000

struct runner_flight {
    struct task *t;
    struct dev_exec *x;             /* NULL: the piece finished when it started */
    uint64_t cost;                  /* dev_task_cost() when it started */
    bool more;                      /* t has pieces after this one */
};

struct runner {
    struct dev *dev;                /* not owned */
    runner_complete_cb complete;
    void *ctx;
    pthread_t thread;
    /* Guards the queues, kicked, callbacks and mem_used. An I/O loop
     * running a small job itself (runner_batch_here) takes it only when
     * the lane is contended: on 2 cores a boosted loop woke, preempted a
     * runner holding it, then slept on it until the runner got a CPU
     * again, 1-8 ms ten times a second beside another client's 32 MiB
     * unary calls (`perf sched`), none on an ampd of its own. */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct fairq *queue;            /* queued tasks, but small jobs */
    atomic_uint jobs_queued;        /* JOB and OPEN tasks submitted, not yet admitted */
    atomic_uint jobs_running;       /* jobs with job->dev_running set */
    atomic_bool stopping;
    bool kicked;                    /* a device command finished since the last look */
    struct dev_notify yield;        /* runner_yield, for the device (dev_task_set_yield) */
    atomic_uint news;               /* submits and kicks: what a polling runner watches */
    uint64_t spin_ns;               /* --busy-poll */
    size_t callbacks;               /* event callbacks owed: r lives until they are 0 */
    struct dev_notify notify;       /* what the event callbacks call: runner_kick(r) */

    /* Runner thread only. */
    struct task *parked, *parked_tail; /* waiting for device memory, in order */
    bool retry_parked;              /* memory was released: try the parked first */
    struct runner_flight flight[RUNNER_FLIGHT_SLOTS]; /* oldest first */
    size_t nflight;
    uint64_t flight_cost;           /* of the pieces in flight; guarded by lock (read by
                                     * runner_has_work) */
    uint64_t flight_max;            /* RUNNER_FLIGHT_PIECES full pieces */
    uint64_t mem_used;              /* device bytes reserved: <= capacity; written here only */

    /* The batch lane: small jobs (dev_batch_takes), on a thread of their own. */
    pthread_t batcher;
    pthread_cond_t batch_wake;
    struct fairq *batches;          /* queued small jobs */
    atomic_size_t batches_queued;   /* fairq_len(batches), read without the lock */
    atomic_uint batch_news;         /* their submits: what a polling lane watches */
    atomic_bool lane_busy;          /* a batch taken, by the lane or a submitter
                                     * (runner_batch_here), not yet ended */
    atomic_uint_fast64_t batches_done; /* batches ended */
    atomic_uint yield_waiters;      /* runner_yield's, on batch_done */
    pthread_cond_t batch_done;      /* batches_done moved on */
};

/* The tasks that begin a job (a unary job's first piece, or a stream's
 * OPEN) and end it. */
static bool runner_begins_job(const struct task *t)
{
    return (t->kind == TASK_JOB && !t->job->dev_running) || t->kind == TASK_OPEN;
}

static bool runner_ends_job(const struct task *t)
{
    return t->kind == TASK_JOB || t->kind == TASK_CLOSE;
}

/* Moves t's job out of the queued count: admitted (now running) or not
 * (it failed before it could run). */
static void runner_count_admitted(struct runner *r, struct task *t, bool admitted)
{
    atomic_fetch_sub(&r->jobs_queued, 1);
    if (admitted) {
        atomic_fetch_add(&r->jobs_running, 1);
        t->job->dev_running = true;
    }
}

static void runner_hand_back(struct runner *r, struct task *t)
{
    /* Read before complete(), which may free the job; counted until it
     * returns. */
    bool ended = runner_ends_job(t) && t->job->dev_running;
    if (ended)
        t->job->dev_running = false;
    r->complete(t, r->ctx);
    if (ended)
        atomic_fetch_sub(&r->jobs_running, 1);
}

static void runner_fail(struct task *t, enum status_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void runner_fail(struct task *t, enum status_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->msg, sizeof t->msg, fmt, ap);
    va_end(ap);
    t->status = code;
    if (t->kind == TASK_JOB)
        job_fail(t->job, code, "%s", t->msg);   /* a unary job reports through itself */
}

/* Driver thread: one of a task's commands finished. */
static void runner_kick(void *arg)
{
    struct runner *r = arg;
    pthread_mutex_lock(&r->lock);
    r->kicked = true;
    r->callbacks--;
    atomic_fetch_add(&r->news, 1);
    pthread_cond_broadcast(&r->wake);
    pthread_mutex_unlock(&r->lock);
}

static void runner_release(struct runner *r, struct job *job)
{
    if (!job->dev_reserved)
        return;
    pthread_mutex_lock(&r->lock);
    r->mem_used -= job->dev_reserved;
    pthread_mutex_unlock(&r->lock);
    job->dev_reserved = 0;
    r->retry_parked = r->parked != NULL;
}

/* Parks t behind the parked tasks of its priority or higher, or, first
 * (a retried task that still does not fit), back at the front. */
static void runner_park(struct runner *r, struct task *t, bool first)
{
    struct task **at = &r->parked;
    while (!first && *at && (*at)->job->cls.priority >= t->job->cls.priority)
        at = &(*at)->next;
    t->next = *at;
    *at = t;
    if (!t->next)
        r->parked_tail = t;
}

/* The next task to begin: the parked ones first, in order, once memory
 * was released, else the queue's choice. Called with the lock held. */
static struct task *runner_next(struct runner *r, bool *retried)
{
    *retried = r->retry_parked && r->parked;
    if (*retried)
        return task_pop(&r->parked, &r->parked_tail);
    return fairq_pop(r->queue);
}

/* Whether t's job may not start: its queue time ran out (claimed here,
 * the job answered UNAVAILABLE), or the loop's timer claimed it first
 * (its call ended; the job is only skipped). With start, a job that may
 * start is claimed as started. */
static bool runner_expired(struct task *t, bool start)
{
    struct job *job = t->job;
    char msg[STATUS_MSG_MAX];
    if (job_queue_late(job, monotonic_ns(), msg, sizeof msg)) {
        runner_fail(t, STATUS_UNAVAILABLE, "%s", msg);
        return true;
    }
    if (atomic_load(&job->queue_state) == JOB_EXPIRED || (start && !job_claim(job, JOB_STARTED))) {
        runner_fail(t, STATUS_CANCELLED, JOB_CANCELLED_MSG);
        return true;
    }
    return false;
}

/* Reserves t's device memory. Returns false when t was parked (retried:
 * t was the first parked, and goes back there), or true, with t's status
 * set when it failed (failed tasks are handed back in order). */
static bool runner_admit(struct runner *r, struct task *t, bool retried)
{
    if (!runner_begins_job(t))
        return true;
    if (runner_expired(t, false)) {
        runner_count_admitted(r, t, false);
        return true;   /* started below, it only reports the failure */
    }
    uint64_t need = dev_task_memory(r->dev, t);
    uint64_t cap = dev_memory_capacity(r->dev);
    if (need > cap) {
        runner_fail(t, STATUS_RESOURCE_EXHAUSTED,
                    "the job needs %" PRIu64 " bytes of device memory; device %u admits at "
                    "most %" PRIu64 " (--max-device-memory)",
                    need, dev_info(r->dev)->index, cap);
        runner_count_admitted(r, t, false);
        return true;
    }
    /* No overtaking within a priority: a big job is not starved by the
     * small ones behind it. */
    bool behind = !retried && r->parked &&
                  r->parked->job->cls.priority >= t->job->cls.priority;
    if (behind || need > cap - r->mem_used) {
        runner_park(r, t, retried);
        if (retried)
            r->retry_parked = false;
        return false;
    }
    if (runner_expired(t, true)) {
        runner_count_admitted(r, t, false);
        return true;
    }
    pthread_mutex_lock(&r->lock);
    r->mem_used += need;
    pthread_mutex_unlock(&r->lock);
    t->job->dev_reserved = need;
    runner_count_admitted(r, t, true);
    return true;
}

static bool runner_retire(struct runner *r, bool block);

static void runner_begin(struct runner *r, struct task *t, bool retried)
{
    t->status = STATUS_OK;
    t->msg[0] = '\0';
    if (!runner_admit(r, t, retried))
        return;
    /* CLOSE frees host memory that earlier tasks' copies may still be
     * writing into: let everything before it finish first. */
    if (t->kind == TASK_CLOSE)
        while (runner_retire(r, true))
            ;
    struct dev_exec *x = NULL;
    uint64_t cost = dev_task_cost(r->dev, t);
    bool more = false;
    if (t->status == STATUS_OK)
        x = dev_task_step(r->dev, t, &more);
    if (x) {
        /* Counted before registering: a callback may run at once. */
        pthread_mutex_lock(&r->lock);
        r->callbacks += dev_task_events(x);
        pthread_mutex_unlock(&r->lock);
        size_t owed = dev_task_notify(x, &r->notify);
        pthread_mutex_lock(&r->lock);
        r->callbacks -= dev_task_events(x) - owed;
        pthread_mutex_unlock(&r->lock);
    }
    if (t->kind == TASK_CLOSE)
        runner_release(r, t->job);   /* it ran to the end in step */
    r->flight[r->nflight++] = (struct runner_flight){t, x, cost, more};
    pthread_mutex_lock(&r->lock);
    r->flight_cost += cost;
    if (more)   /* its next piece takes its turn, charged what it costs */
        fairq_requeue(r->queue, t, dev_task_cost(r->dev, t));
    pthread_mutex_unlock(&r->lock);
}

/* The next queued small job. Called with the lock held. */
static struct task *runner_batch_pop(struct runner *r)
{
    struct task *t = fairq_pop(r->batches);
    if (t)
        atomic_fetch_sub(&r->batches_queued, 1);
    return t;
}

/* Batch lane: t and, with more, the small jobs queued behind it that fit
 * run as one batch (dev_batch.c). Each is admitted without device memory
 * (it runs in the batch buffers), so past jobs parked for memory it does
 * not take, unless its queue time ran out. They are handed back as soon
 * as the batch is done: a unary job's completion is ordered against
 * nothing. */
static void runner_batch(struct runner *r, struct task *t, bool more)
{
    struct dev_batch b;
    b.n = b.up = b.down = 0;
    while (t) {
        t->status = STATUS_OK;
        t->msg[0] = '\0';
        bool admitted = !runner_expired(t, true);
        runner_count_admitted(r, t, admitted);
        if (admitted)
            dev_batch_add(&b, t);
        else
            runner_hand_back(r, t);
        if (!more)
            break;
        pthread_mutex_lock(&r->lock);
        struct task *next = fairq_peek(r->batches);
        t = next && dev_batch_fits(&b, next) ? runner_batch_pop(r) : NULL;
        pthread_mutex_unlock(&r->lock);
    }
    if (b.n && !dev_batch_run(r->dev, &b)) {
        /* No batch buffers: the runner runs them one by one, since only
         * its thread may set the device's other kernels' arguments. They
         * are admitted already (dev_running), so it takes no memory. */
        pthread_mutex_lock(&r->lock);
        for (size_t i = 0; i < b.n; i++)
            fairq_push(r->queue, b.tasks[i], dev_task_cost(r->dev, b.tasks[i]));
        atomic_fetch_add(&r->news, 1);
        pthread_mutex_unlock(&r->lock);
        pthread_cond_signal(&r->wake);
        return;
    }
    for (size_t i = 0; i < b.n; i++)
        runner_hand_back(r, b.tasks[i]);
}

/* Finishes the oldest task in flight if it is done (or, with block,
 * once it is). Returns whether one was finished. */
static bool runner_retire(struct runner *r, bool block)
{
    if (r->nflight == 0)
        return false;
    struct runner_flight f = r->flight[0];
    if (f.x && !block && !dev_task_ready(f.x))
        return false;
    dev_task_finish(r->dev, f.t, f.x, !f.more);
    r->nflight--;
    for (size_t i = 0; i < r->nflight; i++)
        r->flight[i] = r->flight[i + 1];
    pthread_mutex_lock(&r->lock);
    r->flight_cost -= f.cost;
    pthread_mutex_unlock(&r->lock);
    if (f.more)
        return true;
    if (f.t->kind == TASK_JOB)
        runner_release(r, f.t->job);   /* its last piece ran */
    runner_hand_back(r, f.t);
    return true;
}

/* On stop: t, queued, is cancelled. */
static void runner_cancel(struct runner *r, struct task *t)
{
    runner_fail(t, STATUS_CANCELLED, "the daemon is shutting down");
    if (runner_begins_job(t))
        runner_count_admitted(r, t, false);
    if (t->kind == TASK_JOB) {
        /* Between two pieces: its device side goes, its memory too. */
        dev_task_finish(r->dev, t, NULL, true);
        runner_release(r, t->job);
    }
    runner_hand_back(r, t);
}

/* On stop: what is in flight finishes; queued and parked tasks are
 * cancelled, except CLOSE, which still frees its stream. */
static void runner_drain_tasks(struct runner *r)
{
    while (runner_retire(r, true))
        ;
    for (;;) {
        pthread_mutex_lock(&r->lock);
        struct task *t = r->parked ? task_pop(&r->parked, &r->parked_tail) : fairq_pop(r->queue);
        pthread_mutex_unlock(&r->lock);
        if (!t)
            return;
        if (t->kind == TASK_CLOSE) {
            runner_begin(r, t, false);
            runner_retire(r, true);
            continue;
        }
        runner_cancel(r, t);
    }
}

static void runner_drain(struct runner *r)
{
    runner_drain_tasks(r);
    dev_stream_close_all(r->dev);   /* streams whose CLOSE has not come */
}

/* Between the steps of a copy that holds the runner's thread (a GPU's
 * copy of pageable memory, dev_exec.c): the batch in flight, or the next
 * if small jobs are queued, runs before the next step, as it did when
 * the runner ran batches itself. One batch at most, so a flood of small
 * jobs cannot hold a bulk copy. On the runner's thread only. */
static void runner_yield(void *arg)
{
    struct runner *r = arg;
    if (!pthread_equal(pthread_self(), r->thread))
        return;
    pthread_mutex_lock(&r->lock);
    atomic_fetch_add(&r->yield_waiters, 1);   /* before reading batches_done: runner_batch_ended */
    uint64_t until = atomic_load(&r->batches_done) +
                     (atomic_load(&r->lane_busy) || fairq_len(r->batches) ? 1 : 0);
    while (atomic_load(&r->batches_done) < until && !atomic_load(&r->stopping))
        pthread_cond_wait(&r->batch_done, &r->lock);
    atomic_fetch_sub(&r->yield_waiters, 1);
    pthread_mutex_unlock(&r->lock);
}

/* Room in flight for another piece. Called with the lock held. */
static bool runner_has_room(const struct runner *r)
{
    return r->nflight < RUNNER_FLIGHT_SLOTS && r->flight_cost < r->flight_max;
}

/* The task runner_next() would give, left where it is; NULL when none.
 * Called with the lock held. */
static const struct task *runner_peek(const struct runner *r)
{
    return r->retry_parked && r->parked ? r->parked : fairq_peek(r->queue);
}

/* Whether the task runner_next() would give may start now: one is
 * queued and there is room in flight. Called with the lock held. */
static bool runner_can_start(const struct runner *r)
{
    return runner_peek(r) && runner_has_room(r);
}

/* Something to do: a task to start, or a command finished so the oldest
 * task may be done. Called with the lock held. */
static bool runner_has_work(const struct runner *r)
{
    return r->stopping || runner_can_start(r) || (r->kicked && r->nflight);
}

/* Waits up to r->spin_ns for news after `seen` (read under the lock,
 * when there was no work) without sleeping (spin.h), so that the next
 * tiny job costs no wake-up (--busy-poll). Called without the lock. */
static void runner_poll(const struct runner *r, atomic_uint *news, unsigned seen)
{
    struct spin s;
    spin_start(&s, r->spin_ns);
    while (atomic_load_explicit(news, memory_order_relaxed) == seen && spin_on(&s)) {
    }
}

/* Sleeps until signalled, or, with tasks in flight, at most
 * RUNNER_LOOK_NS, after which the oldest is looked at as if its callback
 * had come. Returns whether it woke for that look. Called with the lock
 * held. */
static bool runner_sleep(struct runner *r)
{
    if (!r->nflight) {
        pthread_cond_wait(&r->wake, &r->lock);
        return false;
    }
    uint64_t at = monotonic_ns() + RUNNER_LOOK_NS;
    struct timespec until = { (time_t)(at / 1000000000u), (long)(at % 1000000000u) };
    if (pthread_cond_timedwait(&r->wake, &r->lock, &until) != ETIMEDOUT)
        return false;
    r->kicked = true;
    return true;
}

static void *runner_main(void *arg)
{
    struct runner *r = arg;
    pthread_setname_np(pthread_self(), "ampd-runner");   /* as top -H shows it */
    pthread_mutex_lock(&r->lock);
    for (bool spin = false;;) {
        if (spin && r->spin_ns && !runner_has_work(r)) {
            unsigned seen = atomic_load(&r->news);
            pthread_mutex_unlock(&r->lock);
            runner_poll(r, &r->news, seen);
            pthread_mutex_lock(&r->lock);
        }
        bool looked = false;
        while (!runner_has_work(r))
            looked = runner_sleep(r);
        if (r->stopping)
            break;
        r->kicked = false;
        bool retried = false;
        struct task *t = runner_can_start(r) ? runner_next(r, &retried) : NULL;
        pthread_mutex_unlock(&r->lock);
        if (t)
            runner_begin(r, t, retried);
        bool retired = false;
        while (runner_retire(r, false))
            retired = true;
        /* A look of our own that found the oldest still running is no
         * reason to poll: after every look, a long task would keep the
         * runner spinning --busy-poll (50 us) in each 250. */
        spin = !looked || t || retired;
        pthread_mutex_lock(&r->lock);
    }
    pthread_mutex_unlock(&r->lock);
    runner_drain(r);
    return NULL;
}

/* Takes the lane for one batch, unless a batch is running. */
static bool runner_lane_take(struct runner *r)
{
    bool busy = false;
    return atomic_compare_exchange_strong(&r->lane_busy, &busy, true);
}

/* The batch taken (runner_lane_take) ran, on the lane or a submitter's
 * thread: the lane is free, and a stepping copy waiting for the batch
 * goes on (runner_yield). Called without the lock, which it takes only
 * for such a copy. Returns whether small jobs are queued for the lane. */
static bool runner_batch_ended(struct runner *r)
{
    atomic_fetch_add(&r->batches_done, 1);
    atomic_store(&r->lane_busy, false);
    if (atomic_load(&r->yield_waiters)) {
        pthread_mutex_lock(&r->lock);
        pthread_cond_broadcast(&r->batch_done);
        pthread_mutex_unlock(&r->lock);
    }
    return atomic_load(&r->batches_queued) > 0;
}

/* The batch lane's thread: a batch of what is queued, then the next;
 * on stop, what is still queued is cancelled. */
static void *runner_batch_main(void *arg)
{
    struct runner *r = arg;
    pthread_setname_np(pthread_self(), "ampd-batch");
    pthread_mutex_lock(&r->lock);
    for (bool spin = false;;) {
        if (spin && r->spin_ns && !r->stopping && !fairq_len(r->batches)) {
            unsigned seen = atomic_load(&r->batch_news);
            pthread_mutex_unlock(&r->lock);
            runner_poll(r, &r->batch_news, seen);
            pthread_mutex_lock(&r->lock);
        }
        /* One batch at a time: a submitter may be running one
         * (runner_batch_here), and signals when it ends with jobs queued. */
        while (!r->stopping && (!fairq_len(r->batches) || !runner_lane_take(r)))
            pthread_cond_wait(&r->batch_wake, &r->lock);
        if (r->stopping)
            break;
        struct task *t = runner_batch_pop(r);
        pthread_mutex_unlock(&r->lock);
        runner_batch(r, t, true);
        spin = true;
        runner_batch_ended(r);
        pthread_mutex_lock(&r->lock);
    }
    for (struct task *t; (t = runner_batch_pop(r));) {
        pthread_mutex_unlock(&r->lock);
        runner_cancel(r, t);
        pthread_mutex_lock(&r->lock);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

static void runner_free(struct runner *r)
{
    dev_task_set_yield(r->dev, NULL);
    pthread_cond_destroy(&r->batch_done);
    pthread_cond_destroy(&r->batch_wake);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->lock);
    fairq_free(r->batches);
    fairq_free(r->queue);
    free(r);
}

struct runner *runner_start(struct dev *d, uint64_t spin_ns, runner_complete_cb complete,
                            void *ctx)
{
    struct runner *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->dev = d;
    r->spin_ns = spin_ns;
    r->complete = complete;
    r->ctx = ctx;
    r->notify = (struct dev_notify){runner_kick, r};
    r->flight_max = RUNNER_FLIGHT_PIECES * dev_task_piece_cost(d);
    r->queue = fairq_new();
    r->batches = fairq_new();
    pthread_mutex_init(&r->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);   /* runner_sleep: monotonic_ns() */
    pthread_cond_init(&r->wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&r->batch_wake, NULL);
    pthread_cond_init(&r->batch_done, NULL);
    r->yield = (struct dev_notify){runner_yield, r};
    dev_task_set_yield(d, &r->yield);   /* before the thread: it reads it */
    if (!r->queue || !r->batches || pthread_create(&r->thread, NULL, runner_main, r) != 0) {
        runner_free(r);
        return NULL;
    }
    if (pthread_create(&r->batcher, NULL, runner_batch_main, r) != 0) {
        runner_stop_begin(r);
        pthread_join(r->thread, NULL);
        runner_free(r);
        return NULL;
    }
    return r;
}

/* A small job on a device whose batches run on the thread that waits for
 * them (dev_batch_here: PoCL's basic device) runs on the submitter's
 * thread, an I/O loop, when the lane has nothing queued or running: alone
 * in its batch, so it holds the loop for its own run only (5-120 us).
 * Handing it to the lane cost two thread wake-ups, ~100 us alone on 2
 * cores and 300-500 beside another client's streams, for a run of 10.
 * Returns false, having done nothing, when t is to be queued. */
static bool runner_batch_here(struct runner *r, struct task *t)
{
    if (!dev_batch_here(r->dev) || atomic_load(&r->stopping) || atomic_load(&r->batches_queued) ||
        !runner_lane_take(r))
        return false;
    atomic_fetch_add(&r->jobs_queued, 1);   /* as runner_submit counts it: admission counts it out */
    runner_batch(r, t, false);
    if (runner_batch_ended(r)) {
        /* Queued while it ran: the lane's now. Under the lock, so that
         * the lane is either waiting or yet to look (it looks under it). */
        pthread_mutex_lock(&r->lock);
        pthread_cond_signal(&r->batch_wake);
        pthread_mutex_unlock(&r->lock);
    }
    return true;
}

bool runner_submit(struct runner *r, struct task *t)
{
    bool small = dev_batch_takes(t);
    if (small && runner_batch_here(r, t))
        return true;
    pthread_mutex_lock(&r->lock);
    fairq_push(small ? r->batches : r->queue, t, dev_task_cost(r->dev, t));
    if (small)
        atomic_fetch_add(&r->batches_queued, 1);
    if (runner_begins_job(t))
        atomic_fetch_add(&r->jobs_queued, 1);
    atomic_fetch_add(small ? &r->batch_news : &r->news, 1);
    pthread_mutex_unlock(&r->lock);
    /* After the unlock: a thread woken under the lock would only wait for
     * it. The runner outlives this call (sched.c's `life` lock). */
    pthread_cond_signal(small ? &r->batch_wake : &r->wake);
    return false;
}

size_t runner_load(struct runner *r)
{
    return (size_t)atomic_load(&r->jobs_queued) + atomic_load(&r->jobs_running);
}

void runner_dev_load(struct runner *r, struct dev_load *out)
{
    pthread_mutex_lock(&r->lock);
    out->jobs_running = atomic_load(&r->jobs_running);
    out->jobs_queued = atomic_load(&r->jobs_queued);
    out->memory_in_use = r->mem_used;
    pthread_mutex_unlock(&r->lock);
    out->memory_capacity = dev_memory_capacity(r->dev);
}

struct dev *runner_dev(struct runner *r)
{
    return r->dev;
}

bool runner_flight_full(struct runner *r)
{
    pthread_mutex_lock(&r->lock);
    bool full = r->flight_cost >= r->flight_max;
    pthread_mutex_unlock(&r->lock);
    return full;
}

void runner_stop_begin(struct runner *r)
{
    pthread_mutex_lock(&r->lock);
    r->stopping = true;
    pthread_cond_signal(&r->wake);
    pthread_cond_signal(&r->batch_wake);
    pthread_cond_broadcast(&r->batch_done);
    pthread_mutex_unlock(&r->lock);
}

void runner_stop(struct runner *r)
{
    if (!r)
        return;
    runner_stop_begin(r);
    pthread_join(r->batcher, NULL);
    pthread_join(r->thread, NULL);
    /* Every task is finished, but drivers may still be inside callbacks. */
    pthread_mutex_lock(&r->lock);
    while (r->callbacks)
        pthread_cond_wait(&r->wake, &r->lock);
    pthread_mutex_unlock(&r->lock);
    runner_free(r);
}
