/* SPDX-License-Identifier: MIT */
/* test_stream_tasks.c: streamed jobs on the device side (daemon/dev_stream.c
 * through a runner, daemon/runner.c): chunk by chunk transforms and
 * histograms, a reverse that keeps its whole input resident, device memory
 * admission (a job waits for memory held by a stream, one that could never
 * fit is refused), a cancelled job's tasks being dropped, and a CLOSE
 * that waits for a RUN run in pieces. Results are
 * checked against tests/support/host_step.c. */
#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "host_step.h"
#include "dev_fixture.h"
#include "dev_internal.h"
#include "dev_task.h"
#include "runner.h"

#define CHUNK (64 * 1024)
#define NCHUNKS 6                            /* 5 whole chunks and a tail */
#define TOTAL (5 * CHUNK + 1237)
#define MAX_TASKS 32

struct collector {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct task *order[MAX_TASKS];
    size_t n;
};

static void on_complete(struct task *t, void *ctx)
{
    struct collector *c = ctx;
    pthread_mutex_lock(&c->lock);
    if (c->n < MAX_TASKS)
        c->order[c->n] = t;
    c->n++;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

static void collector_wait(struct collector *c, size_t n)
{
    pthread_mutex_lock(&c->lock);
    while (c->n < n)
        pthread_cond_wait(&c->cond, &c->lock);
    pthread_mutex_unlock(&c->lock);
}

static struct collector col;
static struct runner *run;
static struct task tasks[MAX_TASKS];
static size_t ntasks;
static struct dev_pinned *pinned[NCHUNKS];
static uint8_t *staging[NCHUNKS];

static void setup(void)
{
    memset(&col, 0, sizeof col);
    pthread_mutex_init(&col.lock, NULL);
    pthread_cond_init(&col.cond, NULL);
    for (int i = 0; i < NCHUNKS; i++) {
        staging[i] = dev_pinned_alloc(fixture_dev(), CHUNK, &pinned[i]);
        ck_assert_ptr_nonnull(staging[i]);
    }
    run = runner_start(fixture_dev(), 0, on_complete, &col);
    ck_assert_ptr_nonnull(run);
    ntasks = 0;
}

static void teardown(void)
{
    runner_stop(run);
    for (int i = 0; i < NCHUNKS; i++)
        dev_pinned_free(pinned[i]);
}

static struct task *submit(struct job *job, enum task_kind kind, void *buf, uint64_t off,
                           size_t len)
{
    ck_assert_uint_lt(ntasks, MAX_TASKS);
    struct task *t = &tasks[ntasks++];
    *t = (struct task){.kind = kind, .job = job, .buf = buf, .offset = off, .len = len};
    runner_submit(run, t);
    return t;
}

static struct job *stream_job(size_t nsteps, uint64_t total)
{
    struct job *job = job_new(nsteps);
    ck_assert_ptr_nonnull(job);
    job->chunk_bytes = CHUNK;
    job->total_len = total;
    return job;
}

/* Sends in[0, TOTAL) as IN tasks of one chunk each. */
static void submit_input(struct job *job, const uint8_t *in)
{
    for (int i = 0; i < NCHUNKS; i++) {
        size_t off = (size_t)i * CHUNK, len = TOTAL - off < CHUNK ? TOTAL - off : CHUNK;
        memcpy(staging[i], in + off, len);
        submit(job, TASK_IN, staging[i], off, len);
    }
}

static void expect_all_ok(void)
{
    collector_wait(&col, ntasks);
    for (size_t i = 0; i < ntasks; i++) {
        ck_assert_ptr_eq(col.order[i], &tasks[i]);   /* in submission order */
        ck_assert_msg(tasks[i].status == STATUS_OK, "task %zu: %s", i, tasks[i].msg);
    }
}

static void expect_hist(const struct hist_result *got, const struct hist_params *p,
                        const uint8_t *data, size_t len)
{
    struct hist_result want;
    ck_assert_int_eq(host_step_hist(p, data, len, &want), 0);
    ck_assert_uint_eq(got->bins, want.bins);
    ck_assert_int_eq(memcmp(got->counts, want.counts, want.bins * sizeof(uint64_t)), 0);
    free(want.counts);
}

START_TEST(chunked_transform_then_histogram)
{
    uint8_t *in = malloc(TOTAL), *want = malloc(TOTAL);
    fixture_random(in, TOTAL, 7);
    memcpy(want, in, TOTAL);
    struct job *job = stream_job(2, 0);   /* length not announced */
    job->steps[0].kind = STEP_TRANSFORM;
    /* A sub-range that starts inside chunk 0 and ends inside the tail. */
    job->steps[0].u.transform = (struct transform_params){
        .op = XFORM_ADD, .value = 200, .offset = 100, .length = TOTAL - 150};
    job->steps[1].kind = STEP_HISTOGRAM;
    job->steps[1].u.hist = (struct hist_params){.type = ELEM_U8, .bins = 256};
    host_step_transform(&job->steps[0].u.transform, want, TOTAL);

    submit(job, TASK_OPEN, NULL, 0, 0);
    submit_input(job, in);
    submit(job, TASK_END, NULL, 0, 0);
    submit(job, TASK_CLOSE, NULL, 0, 0);
    expect_all_ok();
    for (int i = 0; i < NCHUNKS; i++) {
        struct task *t = &tasks[1 + i];
        ck_assert_uint_eq(t->out_len, t->len);
        fixture_expect_bytes(staging[i], want + t->offset, t->len, "chunk output");
    }
    expect_hist(&job->results[1].hist, &job->steps[1].u.hist, want, TOTAL);
    ck_assert_ptr_null(job->stream);
    job_free(job);
    free(in);
    free(want);
}
END_TEST

/* unsized: the header gave no length, the buffer is in_cap bytes (larger)
 * and RUN says how much came. */
static void resident_reverse_then_histogram(bool unsized)
{
    uint8_t *in = malloc(TOTAL), *want = malloc(TOTAL);
    fixture_random(in, TOTAL, 8);
    host_step_reverse(in, want, TOTAL);
    struct job *job = stream_job(2, TOTAL);
    job->steps[0].kind = STEP_REVERSE;
    job->steps[1].kind = STEP_HISTOGRAM;
    job->steps[1].u.hist = (struct hist_params){.type = ELEM_U32, .bins = 10, .lo = 0,
                                                .hi = 4e9};
    size_t even = TOTAL / 4 * 4;
    job->total_len = unsized ? 0 : even;   /* whole uint32 elements */
    job->in_cap = unsized ? TOTAL + CHUNK : 0;

    submit(job, TASK_OPEN, NULL, 0, 0);
    for (int i = 0; i < NCHUNKS; i++) {
        size_t off = (size_t)i * CHUNK, len = even - off < CHUNK ? even - off : CHUNK;
        memcpy(staging[i], in + off, len);
        submit(job, TASK_IN, staging[i], off, len);
    }
    struct task *runt = submit(job, TASK_RUN, NULL, 0, even);
    collector_wait(&col, ntasks);
    ck_assert_msg(runt->status == STATUS_OK, "%s", runt->msg);
    ck_assert_uint_eq(runt->out_len, even);
    for (int i = 0; i < NCHUNKS; i++) {
        size_t off = (size_t)i * CHUNK, len = even - off < CHUNK ? even - off : CHUNK;
        submit(job, TASK_OUT, staging[i], off, len);
    }
    submit(job, TASK_END, NULL, 0, 0);
    submit(job, TASK_CLOSE, NULL, 0, 0);
    expect_all_ok();
    host_step_reverse(in, want, even);
    for (int i = 0; i < NCHUNKS; i++) {
        struct task *t = &tasks[ntasks - 2 - NCHUNKS + (size_t)i];
        ck_assert_uint_eq(t->out_len, t->len);
        fixture_expect_bytes(staging[i], want + t->offset, t->len, "reversed piece");
    }
    expect_hist(&job->results[1].hist, &job->steps[1].u.hist, want, even);
    job_free(job);
    free(in);
    free(want);
}

START_TEST(resident_reverse_then_histogram_known_length)
{
    resident_reverse_then_histogram(false);
}
END_TEST

START_TEST(resident_reverse_then_histogram_unknown_length)
{
    resident_reverse_then_histogram(true);
}
END_TEST

START_TEST(input_past_total_length_is_refused)
{
    uint8_t in[64] = {0};
    struct job *job = stream_job(1, 32);
    job->steps[0].kind = STEP_REVERSE;
    submit(job, TASK_OPEN, NULL, 0, 0);
    memcpy(staging[0], in, sizeof in);
    struct task *t = submit(job, TASK_IN, staging[0], 0, sizeof in);
    struct task *later = submit(job, TASK_RUN, NULL, 0, sizeof in);
    submit(job, TASK_CLOSE, NULL, 0, 0);
    collector_wait(&col, ntasks);
    ck_assert_int_eq(t->status, STATUS_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(t->msg, "total_length"));
    ck_assert_int_eq(later->status, STATUS_INVALID_ARGUMENT);   /* the job stays failed */
    ck_assert_int_eq(tasks[ntasks - 1].status, STATUS_OK);      /* CLOSE still frees it */
    job_free(job);
}
END_TEST

START_TEST(job_waits_for_memory_a_stream_holds)
{
    struct dev *d = fixture_dev();
    uint64_t saved = dev_memory_capacity(d);
    struct job *stream = stream_job(1, 0);
    stream->steps[0].kind = STEP_TRANSFORM;
    stream->steps[0].u.transform = (struct transform_params){.op = XFORM_XOR, .value = 1,
                                                             .length = 1ull << 40};
    dev_set_memory_capacity(d, dev_stream_memory(d, stream) + 1024);
    uint8_t in[4096];
    fixture_random(in, sizeof in, 9);
    /* Two steps, so not a batch's (those take no device memory); it needs
     * 12 KiB: it must wait. */
    struct job *small = fixture_job(2, in, sizeof in);
    small->steps[0].kind = small->steps[1].kind = STEP_REVERSE;
    small->task = (struct task){.kind = TASK_JOB, .job = small};

    submit(stream, TASK_OPEN, NULL, 0, 0);
    collector_wait(&col, 1);
    runner_submit(run, &small->task);
    memcpy(staging[0], in, sizeof in);
    submit(stream, TASK_IN, staging[0], 0, sizeof in);   /* streams keep flowing */
    collector_wait(&col, 2);
    ck_assert_ptr_eq(col.order[1], &tasks[1]);
    ck_assert_int_eq(tasks[1].status, STATUS_OK);
    submit(stream, TASK_CLOSE, NULL, 0, 0);
    collector_wait(&col, 4);
    /* The unary job ran only once CLOSE gave the memory back. */
    ck_assert_ptr_eq(col.order[2], &tasks[2]);
    ck_assert_ptr_eq(col.order[3], &small->task);
    ck_assert_msg(small->status == STATUS_OK, "%s", small->msg);
    dev_set_memory_capacity(d, saved);
    job_free(stream);
    job_free(small);
}
END_TEST

START_TEST(job_that_could_never_fit_is_refused)
{
    struct dev *d = fixture_dev();
    uint64_t saved = dev_memory_capacity(d);
    dev_set_memory_capacity(d, 1000);
    uint8_t in[800] = {0};
    /* Two steps, not a batch's; in + two outputs = 2400 > 1000. */
    struct job *big = fixture_job(2, in, sizeof in);
    big->steps[0].kind = big->steps[1].kind = STEP_REVERSE;
    big->task = (struct task){.kind = TASK_JOB, .job = big};
    runner_submit(run, &big->task);
    collector_wait(&col, 1);
    ck_assert_int_eq(big->status, STATUS_RESOURCE_EXHAUSTED);
    ck_assert_ptr_nonnull(strstr(big->msg, "device memory"));
    dev_set_memory_capacity(d, saved);
    job_free(big);
}
END_TEST

START_TEST(cancelled_job_drops_its_tasks)
{
    struct job *job = stream_job(1, 0);
    job->steps[0].kind = STEP_HISTOGRAM;
    job->steps[0].u.hist = (struct hist_params){.type = ELEM_U8, .bins = 256};
    submit(job, TASK_OPEN, NULL, 0, 0);
    collector_wait(&col, 1);
    atomic_store(&job->cancelled, true);
    struct task *t = submit(job, TASK_IN, staging[0], 0, 16);
    submit(job, TASK_CLOSE, NULL, 0, 0);
    collector_wait(&col, 3);
    ck_assert_int_eq(t->status, STATUS_CANCELLED);
    ck_assert_int_eq(tasks[2].status, STATUS_OK);
    ck_assert_ptr_null(job->stream);
    job_free(job);
}
END_TEST

/* RUN in pieces (a chunk's range of a step each, here 4 KiB): the runner
 * puts it back into its queue between pieces, but ahead of the CLOSE
 * queued right behind it (a call failing during RUN), so RUN still
 * completes first and CLOSE frees the device side after its last piece. */
START_TEST(close_waits_for_run_in_pieces)
{
    struct dev *d = fixture_dev();
    dev_set_chunk_bytes_for_test(d, 4096);
    uint8_t *in = malloc(TOTAL);
    fixture_random(in, TOTAL, 9);
    struct job *job = stream_job(2, TOTAL);
    job->steps[0].kind = STEP_REVERSE;
    job->steps[1].kind = STEP_HISTOGRAM;
    job->steps[1].u.hist = (struct hist_params){.type = ELEM_U8, .bins = 256};
    submit(job, TASK_OPEN, NULL, 0, 0);
    submit_input(job, in);
    struct task *runt = submit(job, TASK_RUN, NULL, 0, TOTAL);
    submit(job, TASK_CLOSE, NULL, 0, 0);
    expect_all_ok();   /* in submission order: RUN before CLOSE */
    ck_assert_uint_eq(runt->out_len, TOTAL);
    ck_assert_ptr_null(job->stream);
    dev_set_chunk_bytes_for_test(d, 0);
    job_free(job);
    free(in);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream_tasks");
    const TTest *const tests[] = {
        chunked_transform_then_histogram,
        resident_reverse_then_histogram_known_length,
        resident_reverse_then_histogram_unknown_length,
        input_past_total_length_is_refused,
        job_waits_for_memory_a_stream_holds,
        job_that_could_never_fit_is_refused,
        cancelled_job_drops_its_tasks,
        close_waits_for_run_in_pieces,
        NULL,
    };
    TCase *tc = check_run_case(s, "stream_tasks", tests);
    tcase_add_unchecked_fixture(tc, NULL, fixture_close);
    tcase_add_checked_fixture(tc, setup, teardown);
    return check_run(s, CK_NOFORK);
}
