/* SPDX-License-Identifier: MIT */
/* test_runner.c: a device's runner thread (daemon/runner.c): one
 * client's jobs run in submission order on one thread that is not the
 * submitter's, every job completes exactly once, the load counts queued
 * and running jobs, stopping completes queued jobs with STATUS_CANCELLED,
 * and so does a job cancelled before it ran. Between clients the queue is
 * fair (fairq.c): another client's job queued behind a flood goes next,
 * a higher priority first; a tiny job's batch runs, on the batch lane,
 * while a bulk job's pieces fill what may be in flight and while a bulk
 * copy holds the runner's thread, and such a copy lets a batch queued
 * before it go first; a job whose queue time ran out ends
 * UNAVAILABLE, one the loop expired first is skipped; where a device's
 * batch buffers cannot be made, tiny jobs run on the runner's thread;
 * where its batches run on the thread that waits for them (PoCL's basic
 * device), one submitted to an idle lane runs on the submitter's. */
#define _GNU_SOURCE   /* pthread_getname_np */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check_run.h"
#include "dev_fixture.h"
#include "dev_internal.h"
#include "monotonic.h"
#include "runner.h"

#define NJOBS 40

/* Fault injection: the program links with --wrap=dev_pinned_alloc
 * (tests/CMakeLists.txt), and while refuse_batch_buffers is set the
 * device's batch buffers (both directions in one pinned allocation,
 * dev_batch.c) cannot be made. */
static atomic_bool refuse_batch_buffers;
static atomic_int batch_buffers_refused;
void *__real_dev_pinned_alloc(struct dev *d, size_t size, struct dev_pinned **out);
void *__wrap_dev_pinned_alloc(struct dev *d, size_t size, struct dev_pinned **out);
void *__wrap_dev_pinned_alloc(struct dev *d, size_t size, struct dev_pinned **out)
{
    if (atomic_load(&refuse_batch_buffers) && size == 2 * DEV_BATCH_BYTES) {
        atomic_fetch_add(&batch_buffers_refused, 1);
        return NULL;
    }
    return __real_dev_pinned_alloc(d, size, out);
}

struct completions {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct job *order[NJOBS];
    pthread_t threads[NJOBS]; /* the thread each completion ran on */
    size_t n;
    pthread_t thread;         /* the thread completions ran on */
    bool other_thread;        /* a completion came from a different thread */
    bool block_first;         /* hold the first completion until released */
    bool released;
};

static void on_complete(struct task *t, void *ctx)
{
    struct completions *c = ctx;
    struct job *job = t->job;
    pthread_mutex_lock(&c->lock);
    if (c->n == 0)
        c->thread = pthread_self();
    else if (!pthread_equal(c->thread, pthread_self()))
        c->other_thread = true;
    if (c->n < NJOBS) {
        c->order[c->n] = job;
        c->threads[c->n] = pthread_self();
    }
    c->n++;
    pthread_cond_broadcast(&c->cond);
    while (c->block_first && c->n == 1 && !c->released)
        pthread_cond_wait(&c->cond, &c->lock);
    pthread_mutex_unlock(&c->lock);
}

static void completions_init(struct completions *c)
{
    memset(c, 0, sizeof(*c));
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
}

static void completions_wait(struct completions *c, size_t n)
{
    pthread_mutex_lock(&c->lock);
    while (c->n < n)
        pthread_cond_wait(&c->cond, &c->lock);
    pthread_mutex_unlock(&c->lock);
}

/* Waits up to secs for n completions; false if they did not all come
 * (a job that can never start would otherwise hang the test). */
static bool completions_wait_for(struct completions *c, size_t n, int secs)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += secs;
    pthread_mutex_lock(&c->lock);
    while (c->n < n && pthread_cond_timedwait(&c->cond, &c->lock, &until) == 0)
        ;
    bool all = c->n >= n;
    pthread_mutex_unlock(&c->lock);
    return all;
}

static struct job *reverse_job(uint8_t tag)
{
    uint8_t in[3] = {tag, 1, 2};
    struct job *job = fixture_job(1, in, sizeof in);
    job->steps[0].kind = STEP_REVERSE;
    job->task = (struct task){.kind = TASK_JOB, .job = job};
    return job;
}

/* A runner's poll once idle, by the loop test's _i: none, and
 * --busy-poll's default. */
static const uint64_t spins_ns[] = {0, 50 * 1000};
#define NSPINS (int)(sizeof(spins_ns) / sizeof(spins_ns[0]))

START_TEST(runs_in_order_on_its_thread)
{
    struct completions c;
    completions_init(&c);
    struct runner *r = runner_start(fixture_dev(), spins_ns[_i], on_complete, &c);
    ck_assert_ptr_nonnull(r);
    ck_assert_ptr_eq(runner_dev(r), fixture_dev());
    struct job *jobs[NJOBS];
    for (int i = 0; i < NJOBS; i++) {
        jobs[i] = reverse_job((uint8_t)i);
        runner_submit(r, &jobs[i]->task);
    }
    completions_wait(&c, NJOBS);
    ck_assert(!c.other_thread);
    ck_assert(!pthread_equal(c.thread, pthread_self()));
    for (int i = 0; i < NJOBS; i++) {
        ck_assert_ptr_eq(c.order[i], jobs[i]);
        ck_assert_int_eq(jobs[i]->status, STATUS_OK);
        ck_assert_uint_eq(jobs[i]->results[0].data[2], (uint8_t)i);
    }
    runner_stop(r);
    ck_assert_uint_eq(c.n, NJOBS);
    for (int i = 0; i < NJOBS; i++)
        job_free(jobs[i]);
}
END_TEST

/* A job whose call has ended before it ran (rpc.c cancels it) completes
 * CANCELLED without running; the jobs around it run. */
START_TEST(cancelled_job_is_not_run)
{
    struct completions c;
    completions_init(&c);
    struct runner *r = runner_start(fixture_dev(), spins_ns[_i], on_complete, &c);
    ck_assert_ptr_nonnull(r);
    struct job *jobs[3];
    for (int i = 0; i < 3; i++)
        jobs[i] = reverse_job((uint8_t)i);
    atomic_store(&jobs[1]->cancelled, true);
    for (int i = 0; i < 3; i++)
        runner_submit(r, &jobs[i]->task);
    completions_wait(&c, 3);
    runner_stop(r);
    ck_assert_int_eq(jobs[0]->status, STATUS_OK);
    ck_assert_int_eq(jobs[1]->status, STATUS_CANCELLED);
    ck_assert_ptr_null(jobs[1]->results);   /* dev_run() never saw it */
    ck_assert_int_eq(jobs[2]->status, STATUS_OK);
    ck_assert_uint_eq(jobs[2]->results[0].data[2], 2);
    for (int i = 0; i < 3; i++)
        job_free(jobs[i]);
}
END_TEST

START_TEST(stop_cancels_queued_jobs)
{
    struct completions c;
    completions_init(&c);
    c.block_first = true;
    struct runner *r = runner_start(fixture_dev(), spins_ns[_i], on_complete, &c);
    ck_assert_ptr_nonnull(r);
    struct job *jobs[NJOBS];
    jobs[0] = reverse_job(0);
    runner_submit(r, &jobs[0]->task);
    completions_wait(&c, 1);   /* the runner is now held in job 0's completion */
    for (int i = 1; i < NJOBS; i++) {
        jobs[i] = reverse_job((uint8_t)i);
        runner_submit(r, &jobs[i]->task);
    }
    ck_assert_uint_eq(runner_load(r), NJOBS);
    /* Ask it to stop while it is held in job 0's completion, then let the
     * completion return: it must cancel every job still queued. */
    runner_stop_begin(r);
    pthread_mutex_lock(&c.lock);
    c.released = true;
    pthread_cond_broadcast(&c.cond);
    pthread_mutex_unlock(&c.lock);
    runner_stop(r);
    ck_assert_uint_eq(c.n, NJOBS);
    ck_assert_int_eq(jobs[0]->status, STATUS_OK);
    for (int i = 0; i < NJOBS; i++) {
        ck_assert_ptr_eq(c.order[i], jobs[i]);
        if (i > 0) {
            ck_assert_msg(jobs[i]->status == STATUS_CANCELLED, "job %d: status %d", i,
                          jobs[i]->status);
            ck_assert(jobs[i]->msg[0] != '\0');
        }
        job_free(jobs[i]);
    }
}
END_TEST

/* One job at a time, each submitted once the last completed: the runner
 * has gone idle (polling or asleep) before every submit, and a submit it
 * missed would hang here. */
START_TEST(lone_jobs_one_after_another)
{
    enum { ROUNDS = 500 };
    struct completions c;
    completions_init(&c);
    struct runner *r = runner_start(fixture_dev(), spins_ns[_i], on_complete, &c);
    ck_assert_ptr_nonnull(r);
    struct job *jobs[ROUNDS];
    for (int i = 0; i < ROUNDS; i++) {
        jobs[i] = reverse_job((uint8_t)i);
        runner_submit(r, &jobs[i]->task);
        completions_wait(&c, (size_t)i + 1);
        ck_assert_int_eq(jobs[i]->status, STATUS_OK);
        ck_assert_uint_eq(jobs[i]->results[0].data[2], (uint8_t)i);
    }
    runner_stop(r);   /* the runner may still hold a task its completion returned */
    for (int i = 0; i < ROUNDS; i++)
        job_free(jobs[i]);
}
END_TEST

/* Holds a runner in job 0's completion while tasks queue, then lets it
 * go: what queued meanwhile runs in the queue's order. */
static struct runner *held_runner(struct completions *c, struct job **first, uint64_t spin_ns)
{
    completions_init(c);
    c->block_first = true;
    struct runner *r = runner_start(fixture_dev(), spin_ns, on_complete, c);
    ck_assert_ptr_nonnull(r);
    *first = reverse_job(0);
    runner_submit(r, &(*first)->task);
    completions_wait(c, 1);
    return r;
}

static void release(struct completions *c)
{
    pthread_mutex_lock(&c->lock);
    c->released = true;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

/* Client 1 queues a flood; client 2's one job, queued last, runs second
 * (fairq gives it the start tag of the task in service); then client 3's
 * high-priority one, queued after it, runs first of all. */
START_TEST(other_client_passes_a_flood)
{
    enum { FLOOD = 20 };
    struct completions c;
    struct job *jobs[FLOOD + 3];
    struct runner *r = held_runner(&c, &jobs[0], spins_ns[_i]);
    for (int i = 1; i <= FLOOD; i++) {
        jobs[i] = reverse_job((uint8_t)i);
        jobs[i]->cls.flow = 1;
        runner_submit(r, &jobs[i]->task);
    }
    struct job *other = jobs[FLOOD + 1] = reverse_job(100);
    other->cls.flow = 2;
    runner_submit(r, &other->task);
    struct job *high = jobs[FLOOD + 2] = reverse_job(101);
    high->cls.flow = 3;
    high->cls.priority = JOB_PRIORITY_HIGH;
    runner_submit(r, &high->task);
    release(&c);
    completions_wait(&c, FLOOD + 3);
    runner_stop(r);
    ck_assert_ptr_eq(c.order[1], high);
    /* Behind at most one of the flood's jobs. */
    ck_assert(c.order[2] == other || c.order[3] == other);
    for (int i = 1, seen = 0; i < FLOOD + 3; i++)
        if (c.order[i]->cls.flow == 1) {
            ck_assert_ptr_eq(c.order[i], jobs[1 + seen]);   /* the flood keeps its order */
            seen++;
        }
    for (int i = 0; i < FLOOD + 3; i++) {
        ck_assert_int_eq(jobs[i]->status, STATUS_OK);
        job_free(jobs[i]);
    }
}
END_TEST

/* A user event that d's queues first..last wait on from now: what is
 * enqueued there later runs once the test sets it (clSetUserEventStatus). */
static cl_event gate_queues(struct dev *d, enum dev_queue first, enum dev_queue last)
{
    cl_int err;
    cl_event gate = clCreateUserEvent(d->ctx, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    for (unsigned q = first; q <= last; q++)
        ck_assert_int_eq(clEnqueueBarrierWithWaitList(d->q[q], 1, &gate, NULL), CL_SUCCESS);
    return gate;
}

/* Client flow's job adding value to each of the len bytes at in. */
static struct job *add_job(const uint8_t *in, size_t len, uint8_t value, uint64_t flow)
{
    struct job *job = fixture_job(1, in, len);
    job->steps[0].kind = STEP_TRANSFORM;
    job->steps[0].u.transform =
        (struct transform_params){.op = XFORM_ADD, .value = value, .length = len};
    job->task = (struct task){.kind = TASK_JOB, .job = job};
    job->cls.flow = flow;
    return job;
}

/* Checks that job ended well with its input plus value, byte by byte. */
static void check_added(const struct job *job, const uint8_t *in, size_t len, uint8_t value)
{
    ck_assert_int_eq(job->status, STATUS_OK);
    ck_assert_uint_eq(job->results[0].len, len);
    for (size_t i = 0; i < len; i++)
        if (job->results[0].data[i] != (uint8_t)(in[i] + value))
            ck_abort_msg("byte %zu: %u, not %u", i, job->results[0].data[i],
                         (uint8_t)(in[i] + value));
}

/* A bulk job's pieces fill the flight and cannot end (the device's piece
 * queues wait on a user event; a second bulk job keeps its client busy
 * in the queue); another client's tiny job, queued next, still runs, as
 * a batch on the batch queue, and completes first. */
START_TEST(batch_passes_a_full_flight)
{
    enum { CHUNK = 4096, BULK = 256 * 1024, NBULK = 2 };   /* above a batch's most */
    struct dev *d = fixture_dev();
    dev_set_chunk_bytes_for_test(d, CHUNK);
    /* The batch lane held in a first tiny job's completion: its batch
     * made the batch's buffers before the gate. */
    struct completions c;
    struct job *warm;
    struct runner *r = held_runner(&c, &warm, spins_ns[_i]);
    cl_event gate = gate_queues(d, DEV_Q_IN, DEV_Q_OUT);
    uint8_t *in = malloc(BULK);
    ck_assert_ptr_nonnull(in);
    fixture_random(in, BULK, 5);
    struct job *bulk[NBULK];
    for (int i = 0; i < NBULK; i++) {
        bulk[i] = add_job(in, BULK, 0x5a, 1);
        runner_submit(r, &bulk[i]->task);
    }
    release(&c);
    while (!runner_flight_full(r))
        sched_yield();
    struct job *tiny = reverse_job(1);
    tiny->cls.flow = 2;
    runner_submit(r, &tiny->task);
    bool passed = completions_wait_for(&c, 2, 60);
    ck_assert_int_eq(clSetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
    completions_wait(&c, 2 + NBULK);
    runner_stop(r);
    clReleaseEvent(gate);
    dev_set_chunk_bytes_for_test(d, 0);
    ck_assert_msg(passed, "the tiny job waited for the bulk pieces in flight");
    ck_assert_ptr_eq(c.order[1], tiny);
    ck_assert_int_eq(tiny->status, STATUS_OK);
    ck_assert_uint_eq(tiny->results[0].data[0], 2);   /* {1, 1, 2} reversed */
    for (int i = 0; i < NBULK; i++) {
        ck_assert_ptr_eq(c.order[2 + i], bulk[i]);
        check_added(bulk[i], in, BULK, 0x5a);
        job_free(bulk[i]);
    }
    free(in);
    job_free(warm);
    job_free(tiny);
}
END_TEST

/* The two tests below: the batch lane held in a warm job's completion,
 * the device's queue q gated (a user event), then a bulk job of 64 KiB
 * pieces whose copies hold the runner, as a GPU's of pageable memory do
 * (here in 4 KiB steps), and another client's tiny job queued (the tiny
 * one first with tiny_first), then the lane let go. */
struct gated {
    struct completions c;
    struct runner *r;
    cl_event gate;
    uint8_t *in;
    uint8_t value;
    struct job *warm, *bulk, *tiny;
};

enum { GATED_CHUNK = 64 * 1024, GATED_STEP = 4096, GATED_BULK = 256 * 1024 };

static void gated_start(struct gated *g, enum dev_queue q, bool tiny_first, uint8_t value,
                        uint64_t spin_ns)
{
    struct dev *d = fixture_dev();
    dev_set_chunk_bytes_for_test(d, GATED_CHUNK);
    dev_set_pageable_step_for_test(d, GATED_STEP);
    g->r = held_runner(&g->c, &g->warm, spin_ns);
    g->gate = gate_queues(d, q, q);
    g->in = malloc(GATED_BULK);
    ck_assert_ptr_nonnull(g->in);
    fixture_random(g->in, GATED_BULK, value);
    g->value = value;
    g->bulk = add_job(g->in, GATED_BULK, value, 1);
    g->tiny = reverse_job(1);
    g->tiny->cls.flow = 2;
    runner_submit(g->r, tiny_first ? &g->tiny->task : &g->bulk->task);
    runner_submit(g->r, tiny_first ? &g->bulk->task : &g->tiny->task);
    release(&g->c);
}

/* Opens the gate, waits for both jobs and stops the runner. */
static void gated_stop(struct gated *g)
{
    struct dev *d = fixture_dev();
    ck_assert_int_eq(clSetUserEventStatus(g->gate, CL_COMPLETE), CL_SUCCESS);
    completions_wait(&g->c, 3);
    runner_stop(g->r);
    clReleaseEvent(g->gate);
    dev_set_pageable_step_for_test(d, 0);
    dev_set_chunk_bytes_for_test(d, 0);
}

/* Checks that the tiny job ended first, and both well; frees them. */
static void gated_check(struct gated *g)
{
    ck_assert_ptr_eq(g->c.order[1], g->tiny);
    ck_assert_ptr_eq(g->c.order[2], g->bulk);
    ck_assert_int_eq(g->tiny->status, STATUS_OK);
    ck_assert_uint_eq(g->tiny->results[0].data[0], 2);   /* {1, 1, 2} reversed */
    check_added(g->bulk, g->in, GATED_BULK, g->value);
    free(g->in);
    job_free(g->warm);
    job_free(g->bulk);
    job_free(g->tiny);
}

/* The bulk job's kernels cannot run, so the copy out of its first piece
 * holds the runner until the gate opens; the tiny job, queued right
 * behind it, still runs first: on the batch lane. */
START_TEST(batch_passes_a_held_runner)
{
    struct gated g;
    gated_start(&g, DEV_Q_KERNEL, false, 3, spins_ns[_i]);
    bool passed = completions_wait_for(&g.c, 2, 60);
    gated_stop(&g);
    ck_assert_msg(passed, "the tiny job waited for the runner's bulk copy");
    gated_check(&g);
}
END_TEST

/* A bulk copy that holds the runner lets the batch queued before it have
 * the device first: the tiny job's batch cannot end (the batch queue is
 * gated), and the bulk job, behind it, must not end either until the
 * gate opens. Without the wait it ends in milliseconds. */
START_TEST(stepping_copy_waits_for_a_batch)
{
    struct gated g;
    gated_start(&g, DEV_Q_BATCH, true, 9, spins_ns[_i]);
    bool ended = completions_wait_for(&g.c, 2, 2);
    gated_stop(&g);
    ck_assert_msg(!ended, "a job ended while the batch queued before the bulk copy could not");
    gated_check(&g);
}
END_TEST

/* A job queued past its queue time ends UNAVAILABLE without running, and
 * says why; one the loop's timer expired first (its call already ended)
 * is skipped; jobs with time left run. */
START_TEST(queue_time_runs_out)
{
    struct completions c;
    struct job *jobs[4];
    struct runner *r = held_runner(&c, &jobs[0], spins_ns[_i]);
    jobs[1] = reverse_job(1);
    jobs[1]->cls.queue_limit_us = 1;
    jobs[1]->cls.queue_deadline_ns = monotonic_ns() + 1000;
    jobs[2] = reverse_job(2);
    ck_assert(job_claim(jobs[2], JOB_EXPIRED));
    jobs[3] = reverse_job(3);
    jobs[3]->cls.queue_deadline_ns = monotonic_ns() + 3600ull * 1000000000;
    for (int i = 1; i < 4; i++)
        runner_submit(r, &jobs[i]->task);
    release(&c);
    completions_wait(&c, 4);
    runner_stop(r);
    ck_assert_int_eq(jobs[1]->status, STATUS_UNAVAILABLE);
    ck_assert_ptr_nonnull(strstr(jobs[1]->msg, "amp-max-queue-time of 0.001 ms"));
    ck_assert_ptr_null(jobs[1]->results);
    ck_assert_int_eq(jobs[2]->status, STATUS_CANCELLED);
    ck_assert_ptr_null(jobs[2]->results);
    ck_assert_int_eq(jobs[3]->status, STATUS_OK);
    ck_assert_int_eq(atomic_load(&jobs[3]->queue_state), JOB_STARTED);
    ck_assert_uint_eq(jobs[3]->results[0].data[2], 3);
    for (int i = 0; i < 4; i++)
        job_free(jobs[i]);
}
END_TEST

/* Without batch buffers the lane hands its tiny jobs to the runner, whose
 * thread alone may set the arguments of the device's other kernels: they
 * all complete there, in order and right. */
START_TEST(batch_without_buffers_runs_on_the_runner)
{
    struct dev *d = fixture_dev();
    dev_batch_free(d);   /* an earlier case's batch made them */
    atomic_store(&batch_buffers_refused, 0);
    atomic_store(&refuse_batch_buffers, true);
    struct completions c;
    completions_init(&c);
    struct runner *r = runner_start(d, spins_ns[_i], on_complete, &c);
    ck_assert_ptr_nonnull(r);
    struct job *jobs[NJOBS];
    for (int i = 0; i < NJOBS; i++) {
        jobs[i] = reverse_job((uint8_t)i);
        runner_submit(r, &jobs[i]->task);
    }
    bool all = completions_wait_for(&c, NJOBS, 60);
    char name[16] = "";
    if (all)
        pthread_getname_np(c.thread, name, sizeof name);   /* still running */
    runner_stop(r);
    atomic_store(&refuse_batch_buffers, false);
    ck_assert_msg(all, "%zu of %d tiny jobs completed", c.n, NJOBS);
    ck_assert_int_gt(atomic_load(&batch_buffers_refused), 0);
    ck_assert_str_eq(name, "ampd-runner");
    ck_assert(!c.other_thread);
    for (int i = 0; i < NJOBS; i++) {
        ck_assert_ptr_eq(c.order[i], jobs[i]);
        ck_assert_int_eq(jobs[i]->status, STATUS_OK);
        ck_assert_uint_eq(jobs[i]->results[0].data[2], (uint8_t)i);
        job_free(jobs[i]);
    }
}
END_TEST

struct submit_from {
    struct runner *r;
    struct job *job;
};

static void *submit_from_main(void *arg)
{
    struct submit_from *f = arg;
    runner_submit(f->r, &f->job->task);
    return NULL;
}

/* Where the device's batches run on the thread that waits for them
 * (PoCL's basic device: the ctest entry test_runner_basic), a tiny job
 * submitted while the lane is idle runs on its submitter's thread, and
 * one submitted while that runs goes to the lane, which takes it once the
 * first is done; the load counts both in and out. Elsewhere both run on
 * the lane. The first completion is held until the second is submitted. */
START_TEST(small_job_runs_on_its_submitter_where_batches_do)
{
    struct dev *d = fixture_dev();
    struct completions c;
    completions_init(&c);
    c.block_first = true;
    struct runner *r = runner_start(d, spins_ns[_i], on_complete, &c);
    ck_assert_ptr_nonnull(r);
    struct job *first = reverse_job(1), *second = reverse_job(2);
    struct submit_from f = {r, first};
    pthread_t submitter;
    ck_assert_int_eq(pthread_create(&submitter, NULL, submit_from_main, &f), 0);
    completions_wait(&c, 1);
    runner_submit(r, &second->task);
    pthread_mutex_lock(&c.lock);
    c.released = true;
    pthread_cond_broadcast(&c.cond);
    pthread_mutex_unlock(&c.lock);
    completions_wait(&c, 2);
    char lane[16] = "";
    pthread_getname_np(c.threads[1], lane, sizeof lane);   /* the lane's: still running */
    pthread_join(submitter, NULL);
    /* Each counted in once and out once, wherever it ran: a job leaves the
     * load just after its completion returns. */
    size_t load = runner_load(r);
    for (int i = 0; load != 0 && i < 10000; i++) {
        usleep(1000);
        load = runner_load(r);
    }
    runner_stop(r);
    ck_assert_uint_eq(load, 0);
    ck_assert_ptr_eq(c.order[0], first);
    ck_assert_ptr_eq(c.order[1], second);
    const char *basic = getenv("AMP_TEST_POCL_BASIC");
    bool here = basic && strcmp(basic, "batches") == 0;   /* as dev_fixture.c reads it */
    ck_assert_int_eq(dev_batch_here(d), here);
    ck_assert_msg(pthread_equal(c.threads[0], submitter) == here,
                  "the first ran %s its submitter's thread", here ? "off" : "on");
    ck_assert_str_eq(lane, "ampd-batch");
    ck_assert_int_eq(first->status, STATUS_OK);
    ck_assert_int_eq(second->status, STATUS_OK);
    ck_assert_uint_eq(first->results[0].data[2], 1);
    ck_assert_uint_eq(second->results[0].data[2], 2);
    job_free(first);
    job_free(second);
}
END_TEST

START_TEST(stop_idle_runner)
{
    struct completions c;
    completions_init(&c);
    struct runner *r = runner_start(fixture_dev(), spins_ns[_i], on_complete, &c);
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(runner_load(r), 0);
    runner_stop(r);
    ck_assert_uint_eq(c.n, 0);
    runner_stop(NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runner");
    const TTest *const tests[] = {
        runs_in_order_on_its_thread,
        stop_cancels_queued_jobs,
        cancelled_job_is_not_run,
        lone_jobs_one_after_another,
        stop_idle_runner,
        other_client_passes_a_flood,
        batch_passes_a_full_flight,
        batch_passes_a_held_runner,
        stepping_copy_waits_for_a_batch,
        queue_time_runs_out,
        batch_without_buffers_runs_on_the_runner,
        small_job_runs_on_its_submitter_where_batches_do,
        NULL,
    };
    TCase *tc = check_run_loop_case(s, "runner", tests, 0, NSPINS);
    tcase_add_unchecked_fixture(tc, NULL, fixture_close);
    return check_run(s, CK_NOFORK);
}
