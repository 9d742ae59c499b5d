/* runner.c: one thread per device running its jobs in order (runner.h).
 *
 * The loop thread (sched.c) submits jobs under a mutex; the runner thread
 * sleeps on a condition variable, runs each job with dev_run() and hands it
 * to the completion callback. On stop, the job in hand finishes and the
 * jobs still queued are completed with STATUS_CANCELLED, on the runner
 * thread like every other completion.
 */
#include "runner.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct runner {
    struct dev *dev;                /* not owned */
    runner_complete_cb complete;
    void *ctx;
    pthread_t thread;
    pthread_mutex_t lock;           /* guards everything below */
    pthread_cond_t wake;
    struct job *head, *tail;        /* queued jobs, linked through job->next */
    size_t load;                    /* queued + running */
    bool stopping;
};

static struct job *runner_pop(struct runner *r)
{
    struct job *job = r->head;
    if (job) {
        r->head = job->next;
        if (!r->head)
            r->tail = NULL;
        job->next = NULL;
    }
    return job;
}

static void runner_cancel_queued(struct runner *r)
{
    for (;;) {
        pthread_mutex_lock(&r->lock);
        struct job *job = runner_pop(r);
        pthread_mutex_unlock(&r->lock);
        if (!job)
            return;
        job_fail(job, STATUS_CANCELLED, "the daemon is shutting down");
        r->complete(job, r->ctx);
        pthread_mutex_lock(&r->lock);
        r->load--;
        pthread_mutex_unlock(&r->lock);
    }
}

static void *runner_main(void *arg)
{
    struct runner *r = arg;
    pthread_mutex_lock(&r->lock);
    for (;;) {
        while (!r->head && !r->stopping)
            pthread_cond_wait(&r->wake, &r->lock);
        if (r->stopping)
            break;
        struct job *job = runner_pop(r);
        pthread_mutex_unlock(&r->lock);
        dev_run(r->dev, job);
        r->complete(job, r->ctx);
        pthread_mutex_lock(&r->lock);
        r->load--;
    }
    pthread_mutex_unlock(&r->lock);
    runner_cancel_queued(r);
    return NULL;
}

struct runner *runner_start(struct dev *d, runner_complete_cb complete, void *ctx)
{
    struct runner *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->dev = d;
    r->complete = complete;
    r->ctx = ctx;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->wake, NULL);
    if (pthread_create(&r->thread, NULL, runner_main, r) != 0) {
        pthread_cond_destroy(&r->wake);
        pthread_mutex_destroy(&r->lock);
        free(r);
        return NULL;
    }
    return r;
}

void runner_submit(struct runner *r, struct job *job)
{
    job->next = NULL;
    pthread_mutex_lock(&r->lock);
    if (r->tail)
        r->tail->next = job;
    else
        r->head = job;
    r->tail = job;
    r->load++;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
}

size_t runner_load(struct runner *r)
{
    pthread_mutex_lock(&r->lock);
    size_t n = r->load;
    pthread_mutex_unlock(&r->lock);
    return n;
}

struct dev *runner_dev(struct runner *r)
{
    return r->dev;
}

void runner_stop(struct runner *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    r->stopping = true;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->lock);
    free(r);
}
