/* SPDX-License-Identifier: MIT */
/* host.c: the host path (host.h).
 *
 * One queue under one mutex, and a condition variable the workers sleep
 * on: the jobs are tiny, so a worker takes one, runs it to the end and
 * takes the next; nothing here waits on a device. The queue is a fair
 * one (fairq.h), as a runner's is: by priority, then by each client's
 * weighted share, so a client flooding the pool delays another's job by
 * about one job per busy client, not by the flood. A submit wakes a
 * sleeping worker only when no worker is awake or the queue is long for
 * those that are (HOST_QUEUE_PER_WORKER): a job takes a microsecond or
 * two, waking a thread several, so under load a few awake workers drain
 * the queue without a futex call per job on either side, and a lone call
 * still wakes one at once.
 */
#define _GNU_SOURCE   /* pthread_setname_np */
#include "host.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev.h"
#include "dev_task.h"
#include "fairq.h"
#include "host_step.h"
#include "job.h"
#include "monotonic.h"
#include "sat.h"
#include "spin.h"
#include "stage_latency.h"
#include "task.h"

/* Queued jobs per awake worker before a submit wakes another. */
#define HOST_QUEUE_PER_WORKER 4

struct host_pool {
    pthread_mutex_t lock;       /* guards what follows, to stopping */
    pthread_cond_t wake;
    struct fairq *queue;        /* queued TASK_JOBs */
    atomic_size_t queued;       /* tasks in that queue; read unlocked by a polling worker */
    atomic_size_t running;      /* tasks taken and not yet complete, a submitter's too:
                                 * raised under the lock, lowered without it */
    size_t sleeping;            /* workers waiting on wake and not yet woken */
    size_t wakes;               /* woken by a submit and not yet up: each takes one */
    atomic_bool stopping;
    uint64_t spin_ns;           /* --busy-poll */
    atomic_bool polling;        /* a worker polls: the others sleep */
    struct dev *check;          /* whose rules jobs are checked by */
    void (*complete)(struct task *t, void *ctx);
    void *ctx;
    size_t nthreads;
    pthread_t threads[];
};

bool host_job_fits(const struct job *job, uint64_t max_bytes)
{
    if (job->in_len > max_bytes)
        return false;
    for (size_t i = 0; i < job->nsteps; i++) {
        const struct step *s = &job->steps[i];
        if (s->kind == STEP_FILL && job_step_output_len(s, 0) > max_bytes)
            return false;
    }
    return true;
}

/* Runs one data step from cur (len bytes) into r, a result of out_len
 * bytes. In place (r->data == cur: the job's output over its input) a
 * reverse swaps and a transform works where the bytes are. */
static enum status_code host_data_step(struct job *job, const struct step *s, const uint8_t *cur,
                                       size_t len, size_t out_len, struct step_result *r)
{
    enum status_code st = job_result_alloc(job, r, out_len);
    if (st != STATUS_OK)
        return st;
    switch (s->kind) {
    case STEP_REVERSE:
        if (r->data == cur) {
            for (size_t i = 0, j = len ? len - 1 : 0; i < j; i++, j--) {
                uint8_t t = r->data[i];
                r->data[i] = r->data[j];
                r->data[j] = t;
            }
        } else {
            host_step_reverse(cur, r->data, len);
        }
        break;
    case STEP_TRANSFORM:
        if (r->data != cur && len)
            memcpy(r->data, cur, len);
        host_step_transform(&s->u.transform, r->data, len);
        break;
    case STEP_FILL:
        host_step_fill(&s->u.fill, r->data);
        break;
    case STEP_HISTOGRAM:
        break;
    }
    return STATUS_OK;
}

static void host_run(struct dev *check, struct job *job)
{
    snprintf(job->device, sizeof job->device, "%s", HOST_DEVICE_NAME);
    enum status_code st = job_run_begin(job);
    size_t *out_len = calloc(job->nsteps ? job->nsteps : 1, sizeof(*out_len));
    if (st == STATUS_OK && !out_len) {
        job_fail(job, STATUS_RESOURCE_EXHAUSTED, "out of host memory");
    } else if (st == STATUS_OK && dev_check_steps(check, job, job->in_len, out_len) == STATUS_OK) {
        const uint8_t *cur = job->in;
        size_t len = job->in_len;
        for (size_t i = 0; i < job->nsteps && job->status == STATUS_OK; i++) {
            const struct step *s = &job->steps[i];
            struct step_result *r = &job->results[i];
            if (s->kind == STEP_HISTOGRAM) {
                if (host_step_hist(&s->u.hist, cur, len, &r->hist) != 0)
                    job_fail(job, STATUS_RESOURCE_EXHAUSTED, "out of host memory for a histogram");
                continue;
            }
            if (host_data_step(job, s, cur, len, out_len[i], r) == STATUS_OK) {
                cur = r->data;
                len = r->len;
            }
        }
    }
    if (job->status != STATUS_OK && job->results)
        job_drop_results(job);
    free(out_len);
}

/* Waits up to spin_ns for a queued job without sleeping (spin.h): an
 * awake worker is not signalled, so the submit that queues it costs no
 * wake-up. One worker at a time, so that polling never takes more than a
 * CPU from the I/O loops. */
static void host_pool_poll(struct host_pool *h)
{
    if (atomic_exchange(&h->polling, true))
        return;
    struct spin s;
    spin_start(&s, h->spin_ns);
    while (!atomic_load_explicit(&h->queued, memory_order_relaxed) &&
           !atomic_load_explicit(&h->stopping, memory_order_relaxed) && spin_on(&s)) {
    }
    atomic_store(&h->polling, false);
}

/* A queued task, or NULL once stopping with none left. A worker that
 * finds none sleeps until a submit wakes it (it takes one of `wakes`) or
 * the pool stops; a spurious wake-up sleeps on, still counted asleep.
 * After a job (polled), it first polls the queue (host_pool_poll). */
static struct task *host_pool_next(struct host_pool *h, bool polled)
{
    if (polled && h->spin_ns)
        host_pool_poll(h);
    pthread_mutex_lock(&h->lock);
    while (!fairq_len(h->queue) && !h->stopping) {
        h->sleeping++;
        while (!h->wakes && !h->stopping)
            pthread_cond_wait(&h->wake, &h->lock);
        if (h->wakes)
            h->wakes--;      /* another worker may have taken its job: look again */
        else
            h->sleeping--;   /* stopping, not woken by a submit */
    }
    struct task *t = fairq_pop(h->queue);
    if (t) {
        h->queued--;
        h->running++;
    }
    pthread_mutex_unlock(&h->lock);
    return t;
}

/* Runs t, taken from the queue or by its submitter, and completes it. */
static void host_pool_run(struct host_pool *h, struct task *t)
{
    struct job *job = t->job;
    t->out_len = 0;
    char msg[STATUS_MSG_MAX];
    if (job_queue_late(job, monotonic_ns(), msg, sizeof msg)) {
        job_fail(job, STATUS_UNAVAILABLE, "%s", msg);
    } else if (atomic_load(&job->cancelled) || !job_claim(job, JOB_STARTED)) {
        job_fail(job, STATUS_CANCELLED, JOB_CANCELLED_MSG);
    } else {
        job->t_start = stage_latency_now_ns();
        host_run(h->check, job);
        job->t_done = stage_latency_now_ns();
    }
    t->status = job->status;
    snprintf(t->msg, sizeof t->msg, "%s", job->msg);
    atomic_fetch_sub(&h->running, 1);   /* a submitter that misses it only queues its job */
    h->complete(t, h->ctx);
}

static void *host_pool_main(void *arg)
{
    struct host_pool *h = arg;
    struct task *t;
    bool polled = false;
    while ((t = host_pool_next(h, polled))) {
        polled = true;
        host_pool_run(h, t);
    }
    return NULL;
}

struct host_pool *host_pool_start(size_t threads, uint64_t spin_ns, struct dev *check,
                                  void (*complete)(struct task *t, void *ctx), void *ctx)
{
    struct host_pool *h = calloc(1, sizeof(*h) + threads * sizeof(pthread_t));
    if (!h)
        return NULL;
    h->spin_ns = spin_ns;
    h->check = check;
    h->complete = complete;
    h->ctx = ctx;
    h->queue = fairq_new();
    if (!h->queue) {
        free(h);
        return NULL;
    }
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->wake, NULL);
    for (; h->nthreads < threads; h->nthreads++) {
        if (pthread_create(&h->threads[h->nthreads], NULL, host_pool_main, h) != 0) {
            host_pool_stop(h);
            return NULL;
        }
        char name[16];
        snprintf(name, sizeof name, "ampd-host%zu", h->nthreads);
        pthread_setname_np(h->threads[h->nthreads], name);
    }
    return h;
}

void host_pool_submit(struct host_pool *h, struct task *t)
{
    pthread_mutex_lock(&h->lock);
    fairq_push(h->queue, t, dev_task_cost(h->check, t));
    h->queued++;
    size_t awake = h->nthreads - h->sleeping;
    bool wake = h->sleeping > 0 && (awake == 0 || h->queued > HOST_QUEUE_PER_WORKER * awake);
    if (wake) {
        h->sleeping--;
        h->wakes++;
    }
    pthread_mutex_unlock(&h->lock);
    if (!wake)
        return;
    /* After the unlock: a worker woken under the lock would only wait for
     * it. The pool outlives this call (sched.c's `life` lock). */
    pthread_cond_signal(&h->wake);
}

bool host_pool_run_here(struct host_pool *h, struct task *t)
{
    pthread_mutex_lock(&h->lock);
    bool here = !h->stopping && !h->queued && !h->running;
    if (here)
        h->running++;
    pthread_mutex_unlock(&h->lock);
    if (here)
        host_pool_run(h, t);
    return here;
}

void host_pool_stop(struct host_pool *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->lock);
    h->stopping = true;
    pthread_cond_broadcast(&h->wake);
    pthread_mutex_unlock(&h->lock);
    for (size_t i = 0; i < h->nthreads; i++)
        pthread_join(h->threads[i], NULL);
    pthread_cond_destroy(&h->wake);
    pthread_mutex_destroy(&h->lock);
    fairq_free(h->queue);
    free(h);
}
