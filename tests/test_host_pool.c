/* SPDX-License-Identifier: MIT */
/* test_host_pool.c: the host path's worker pool (daemon/host.c) driven
 * directly. A submit wakes a sleeping worker only when none is awake or
 * the queue is long for those that are, so the ways a wake-up could be
 * lost are the cases here: jobs submitted from several threads at once
 * each complete exactly once with the right result; a lone job submitted
 * while every worker sleeps completes, thousands of times in a row (a lost
 * wake-up hangs the test); stopping runs what is queued. Each case runs
 * twice: workers that sleep as soon as the queue is empty, and workers
 * that first poll it (--busy-poll), which a submit does not wake. And a
 * submitter runs a job itself only where it overtakes none. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "dev_fixture.h"
#include "host.h"
#include "task.h"

#define WORKERS 4
#define SUBMITTERS 4
#define PER_SUBMITTER 5000
#define NJOBS (SUBMITTERS * PER_SUBMITTER)
#define LONE_ROUNDS 2000
#define NUMBERS (1 << 16)   /* a job's number fits two bytes */

/* A worker's poll after a job, by the loop test's _i. */
static const uint64_t spins_ns[] = {0, 50 * 1000};
#define NSPINS (int)(sizeof(spins_ns) / sizeof(spins_ns[0]))

struct done {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    size_t n;
    pthread_t last;               /* the thread that completed the last job */
    atomic_uint times[NUMBERS];   /* completions of job i */
};

static struct done done;

/* A 3-byte reverse whose result names job i: {lo, hi, 7} -> {7, hi, lo}. */
static struct job *numbered_job(size_t i)
{
    uint8_t in[3] = {(uint8_t)(i & 0xff), (uint8_t)(i >> 8), 7};
    struct job *job = fixture_job(1, in, sizeof in);
    job->steps[0].kind = STEP_REVERSE;
    job->task = (struct task){.kind = TASK_JOB, .job = job};
    return job;
}

static size_t job_number(const struct job *job)
{
    const uint8_t *r = job->results[0].data;
    return (size_t)r[2] | (size_t)r[1] << 8;
}

static void on_complete(struct task *t, void *ctx)
{
    (void)ctx;
    struct job *job = t->job;
    if (job->status == STATUS_OK && job->results[0].len == 3 && job->results[0].data[0] == 7) {
        size_t i = job_number(job);
        if (i < NUMBERS)
            atomic_fetch_add(&done.times[i], 1);
    }
    pthread_mutex_lock(&done.lock);
    done.n++;
    done.last = pthread_self();
    pthread_cond_broadcast(&done.cond);
    pthread_mutex_unlock(&done.lock);
}

static void done_reset(void)
{
    pthread_mutex_lock(&done.lock);
    done.n = 0;
    for (size_t i = 0; i < NUMBERS; i++)
        atomic_store(&done.times[i], 0);
    pthread_mutex_unlock(&done.lock);
}

static void done_wait(size_t n)
{
    pthread_mutex_lock(&done.lock);
    while (done.n < n)
        pthread_cond_wait(&done.cond, &done.lock);
    pthread_mutex_unlock(&done.lock);
}

struct submitter {
    struct host_pool *pool;
    struct job **jobs;
    size_t n;
};

static void *submit_all(void *arg)
{
    struct submitter *s = arg;
    for (size_t i = 0; i < s->n; i++)
        host_pool_submit(s->pool, &s->jobs[i]->task);
    return NULL;
}

/* A fresh pool of WORKERS polling spins_ns[spin], with the completion
 * counts reset. */
static struct host_pool *pool_start(int spin)
{
    done_reset();
    struct host_pool *pool =
        host_pool_start(WORKERS, spins_ns[spin], fixture_dev(), on_complete, NULL);
    ck_assert_ptr_nonnull(pool);
    return pool;
}

/* Each of jobs[0, n) completed exactly once; frees them. */
static void expect_each_once(struct job **jobs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(atomic_load(&done.times[i]) == 1, "job %zu completed %u times", i,
                      atomic_load(&done.times[i]));
        job_free(jobs[i]);
    }
}

/* Submits jobs[0, SUBMITTERS * per) from SUBMITTERS threads at once, per
 * each, and returns once all are submitted. */
static void submit_from_threads(struct host_pool *pool, struct job **jobs, size_t per)
{
    pthread_t threads[SUBMITTERS];
    struct submitter subs[SUBMITTERS];
    for (size_t k = 0; k < SUBMITTERS; k++) {
        subs[k] = (struct submitter){pool, jobs + k * per, per};
        ck_assert_int_eq(pthread_create(&threads[k], NULL, submit_all, &subs[k]), 0);
    }
    for (size_t k = 0; k < SUBMITTERS; k++)
        pthread_join(threads[k], NULL);
}

START_TEST(many_submitters_each_job_once)
{
    struct host_pool *pool = pool_start(_i);
    struct job **jobs = malloc(NJOBS * sizeof(*jobs));
    for (size_t i = 0; i < NJOBS; i++)
        jobs[i] = numbered_job(i);
    submit_from_threads(pool, jobs, PER_SUBMITTER);
    done_wait(NJOBS);
    host_pool_stop(pool);
    ck_assert_uint_eq(done.n, NJOBS);
    expect_each_once(jobs, NJOBS);
    free(jobs);
}
END_TEST

START_TEST(lone_job_wakes_a_sleeping_worker)
{
    struct host_pool *pool = pool_start(_i);
    for (size_t i = 0; i < LONE_ROUNDS; i++) {
        struct job *job = numbered_job(i);
        host_pool_submit(pool, &job->task);
        done_wait(i + 1);   /* every worker goes back to sleep before the next */
        ck_assert_uint_eq(atomic_load(&done.times[i]), 1);
        job_free(job);
    }
    host_pool_stop(pool);
}
END_TEST

/* Bursts from several threads, then lone jobs, on one pool, round after
 * round: a worker woken for a job another worker took must go back to
 * sleep, not leave (the pool would run out of workers and hang here). */
START_TEST(bursts_then_lone_jobs)
{
    enum { ROUNDS = 100, BURST = 50, LONE = 5, PER_ROUND = SUBMITTERS * BURST + LONE };
    struct host_pool *pool = pool_start(_i);
    struct job **jobs = malloc(ROUNDS * PER_ROUND * sizeof(*jobs));
    for (size_t r = 0; r < ROUNDS; r++) {
        struct job **round = jobs + r * PER_ROUND;
        for (size_t i = 0; i < PER_ROUND; i++)
            round[i] = numbered_job(r * PER_ROUND + i);
        submit_from_threads(pool, round, BURST);
        done_wait(r * PER_ROUND + SUBMITTERS * BURST);
        for (size_t i = SUBMITTERS * BURST; i < PER_ROUND; i++) {
            host_pool_submit(pool, &round[i]->task);
            done_wait(r * PER_ROUND + i + 1);
        }
    }
    host_pool_stop(pool);
    expect_each_once(jobs, ROUNDS * PER_ROUND);
    free(jobs);
}
END_TEST

START_TEST(stop_runs_what_is_queued)
{
    struct host_pool *pool = pool_start(_i);
    enum { N = 1000 };
    struct job *jobs[N];
    for (size_t i = 0; i < N; i++) {
        jobs[i] = numbered_job(i);
        host_pool_submit(pool, &jobs[i]->task);
    }
    host_pool_stop(pool);   /* returns once the workers ran the queue and left */
    ck_assert_uint_eq(done.n, N);
    expect_each_once(jobs, N);
}
END_TEST

/* An idle pool lets the submitter run a job on its own thread, done
 * when the call returns; a pool with a job queued (no workers here, so
 * it stays) does not, and leaves the job to be submitted. */
START_TEST(runs_here_only_when_idle)
{
    struct host_pool *pool = pool_start(_i);
    struct job *job = numbered_job(0);
    ck_assert(host_pool_run_here(pool, &job->task));
    ck_assert_uint_eq(done.n, 1);
    ck_assert_uint_eq(atomic_load(&done.times[0]), 1);
    ck_assert(pthread_equal(done.last, pthread_self()));
    host_pool_stop(pool);
    job_free(job);

    done_reset();
    struct host_pool *busy = host_pool_start(0, spins_ns[_i], fixture_dev(), on_complete, NULL);
    ck_assert_ptr_nonnull(busy);
    struct job *queued = numbered_job(1), *next = numbered_job(2);
    host_pool_submit(busy, &queued->task);
    ck_assert(!host_pool_run_here(busy, &next->task));
    ck_assert_uint_eq(done.n, 0);
    host_pool_stop(busy);
    job_free(queued);
    job_free(next);
}
END_TEST

int main(void)
{
    pthread_mutex_init(&done.lock, NULL);
    pthread_cond_init(&done.cond, NULL);
    Suite *s = suite_create("host_pool");
    const TTest *const tests[] = {
        many_submitters_each_job_once,
        lone_job_wakes_a_sleeping_worker,
        bursts_then_lone_jobs,
        stop_runs_what_is_queued,
        runs_here_only_when_idle,
        NULL,
    };
    TCase *tc = check_run_loop_case(s, "host_pool", tests, 0, NSPINS);
    tcase_add_unchecked_fixture(tc, NULL, fixture_close);
    return check_run(s, CK_NOFORK);
}
