/* SPDX-License-Identifier: MIT */
/* test_kernel_batch.c: small jobs run as one batch (dev_batch.c) on the
 * default OpenCL device, against host_step.c: every kind the batch takes,
 * lengths around every word boundary and random ones, map tables and
 * sub-ranges, with both work-group shapes; a cancelled and an invalid job
 * inside a batch fail alone; what a batch must not take; a batch runs
 * while the bulk queues are held (its own queue, not behind their work);
 * and where a PoCL basic device runs the batches, they run there
 * (test_kernel_batch_basic, tests/CMakeLists.txt). */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_run.h"
#include "dev_fixture.h"
#include "dev_internal.h"
#include "host_step.h"
#include "op.h"

static struct job *batch_job(enum step_kind kind, size_t len, uint64_t *seed)
{
    uint8_t *in = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(in);
    fixture_random(in, len, fixture_rand64(seed));
    struct job *job = fixture_job(1, in, len);
    free(in);
    struct step *s = &job->steps[0];
    s->kind = kind;
    if (kind == STEP_HISTOGRAM) {
        s->u.hist.type = ELEM_U8;
        s->u.hist.bins = 256;
    } else if (kind == STEP_TRANSFORM) {
        struct transform_params *p = &s->u.transform;
        p->op = (enum transform_op)(fixture_rand64(seed) % (XFORM_MAP + 1));
        p->value = (uint8_t)fixture_rand64(seed);
        fixture_random(p->table, sizeof p->table, fixture_rand64(seed));
        p->offset = len ? fixture_rand64(seed) % len : 0;
        p->length = len - p->offset ? fixture_rand64(seed) % (len - p->offset + 1) : 0;
    }
    job->task.kind = TASK_JOB;
    job->task.job = job;
    return job;
}

/* What host_step.c gives for job's step. */
static void batch_expect(const struct job *job)
{
    const struct step *s = &job->steps[0];
    ck_assert_msg(job->status == STATUS_OK, "kind %d, %zu bytes: %s", s->kind, job->in_len,
                  job->msg);
    if (s->kind == STEP_HISTOGRAM) {
        struct hist_result want;
        ck_assert_int_eq(host_step_hist(&s->u.hist, job->in, job->in_len, &want), 0);
        ck_assert_uint_eq(job->results[0].hist.bins, 256);
        ck_assert_mem_eq(job->results[0].hist.counts, want.counts, 256 * sizeof(uint64_t));
        free(want.counts);
        return;
    }
    uint8_t *want = malloc(job->in_len ? job->in_len : 1);
    ck_assert_ptr_nonnull(want);
    if (s->kind == STEP_REVERSE) {
        host_step_reverse(job->in, want, job->in_len);
    } else {
        if (job->in_len)
            memcpy(want, job->in, job->in_len);
        host_step_transform(&s->u.transform, want, job->in_len);
    }
    ck_assert_uint_eq(job->results[0].len, job->in_len);
    fixture_expect_bytes(job->results[0].data, want, job->in_len, "batch output");
    free(want);
}

/* Runs jobs[0..n) in as many batches as they need, in order. */
static void batch_run_all(struct job **jobs, size_t n)
{
    struct dev *d = fixture_dev();
    for (size_t i = 0; i < n;) {
        struct dev_batch b = {.n = 0};
        while (i < n && dev_batch_fits(&b, &jobs[i]->task))
            dev_batch_add(&b, &jobs[i++]->task);
        ck_assert_uint_gt(b.n, 0);
        ck_assert(dev_batch_run(d, &b));
        for (size_t k = 0; k < b.n; k++)
            ck_assert_int_eq(b.tasks[k]->status, b.tasks[k]->job->status);
    }
}

static void batch_mixed(uint64_t seed, size_t n, size_t max_len)
{
    static const size_t edges[] = {0, 1, 2, 15, 16, 17, 31, 33, 255, 256, 257, 4095, 4097};
    struct job **jobs = calloc(n, sizeof(*jobs));
    ck_assert_ptr_nonnull(jobs);
    for (size_t i = 0; i < n; i++) {
        size_t len = i < sizeof edges / sizeof edges[0] * 3
                         ? edges[i % (sizeof edges / sizeof edges[0])]
                         : (size_t)(fixture_rand64(&seed) % (max_len + 1));
        jobs[i] = batch_job((enum step_kind)(i % 3), len, &seed);
    }
    batch_run_all(jobs, n);
    for (size_t i = 0; i < n; i++) {
        batch_expect(jobs[i]);
        ck_assert(strncmp(jobs[i]->device, "0: ", 3) == 0);
        job_free(jobs[i]);
    }
    free(jobs);
}

START_TEST(mixed_small_jobs_match_host)
{
    batch_mixed(1, 300, 300);
}
END_TEST

START_TEST(mixed_up_to_the_size_limit)
{
    /* Several batches: the byte limit, not the job count, ends each. */
    batch_mixed(2, 120, DEV_BATCH_JOB_BYTES);
}
END_TEST

/* Where the default device's batches run: on it, or on its batch device
 * (dev_discover.c), as $AMP_TEST_POCL_BASIC says (tests/CMakeLists.txt). */
static struct dev *batch_dev(void)
{
    struct dev *d = fixture_dev();
    return d->batch_dev ? d->batch_dev : d;
}

START_TEST(both_group_shapes)
{
    struct dev *d = batch_dev();
    enum dev_shape own = d->shape;
    const enum dev_shape shapes[] = {DEV_SHAPE_GPU, DEV_SHAPE_CPU};
    for (size_t s = 0; s < 2; s++) {
        dev_set_shape_for_test(d, shapes[s]);
        dev_batch_free(d);   /* its group size is chosen by shape when made */
        batch_mixed(10 + s, 100, 5000);
    }
    dev_set_shape_for_test(d, own);
    dev_batch_free(d);
}
END_TEST

/* A batch's buffers are made where it runs: on PoCL's basic device when
 * the default device has one beside it, else on the device. */
START_TEST(runs_on_its_batch_device)
{
    struct dev *d = fixture_dev();
    const char *basic = getenv("AMP_TEST_POCL_BASIC");
    if (basic && strcmp(basic, "batches") == 0)
        ck_assert_ptr_nonnull(d->batch_dev);
    dev_batch_free(d);
    dev_batch_free(batch_dev());
    batch_mixed(20, 10, 100);
    ck_assert_ptr_nonnull(batch_dev()->batch);
    if (d->batch_dev)
        ck_assert_ptr_null(d->batch);
}
END_TEST

START_TEST(a_bad_job_fails_alone)
{
    uint64_t seed = 3;
    struct job *jobs[5];
    for (size_t i = 0; i < 5; i++)
        jobs[i] = batch_job(STEP_REVERSE, 100 + i, &seed);
    atomic_store(&jobs[1]->cancelled, true);
    jobs[3]->steps[0].kind = STEP_HISTOGRAM;   /* bytes have 256 bins, not 100 */
    jobs[3]->steps[0].u.hist.type = ELEM_U8;
    jobs[3]->steps[0].u.hist.bins = 100;
    batch_run_all(jobs, 5);
    ck_assert_int_eq(jobs[1]->status, STATUS_CANCELLED);
    ck_assert_int_eq(jobs[3]->status, STATUS_INVALID_ARGUMENT);
    ck_assert_msg(strstr(jobs[3]->msg, "bins"), "%s", jobs[3]->msg);
    ck_assert_ptr_null(jobs[3]->results[0].data);
    for (size_t i = 0; i < 5; i++) {
        if (i != 1 && i != 3)
            batch_expect(jobs[i]);
        job_free(jobs[i]);
    }
}
END_TEST

START_TEST(output_over_its_input)
{
    /* rpc_jobs.c lets a unary reverse or transform write over its input. */
    uint64_t seed = 5;
    struct job *jobs[2] = {batch_job(STEP_REVERSE, 33, &seed),
                           batch_job(STEP_TRANSFORM, 40, &seed)};
    uint8_t want[2][40];
    host_step_reverse(jobs[0]->in, want[0], 33);
    memcpy(want[1], jobs[1]->in, 40);
    host_step_transform(&jobs[1]->steps[0].u.transform, want[1], 40);
    for (size_t i = 0; i < 2; i++) {
        job_output_in_place(jobs[i]);
        ck_assert_ptr_nonnull(jobs[i]->out);
    }
    batch_run_all(jobs, 2);
    for (size_t i = 0; i < 2; i++) {
        ck_assert_msg(jobs[i]->status == STATUS_OK, "%s", jobs[i]->msg);
        ck_assert_ptr_eq(jobs[i]->results[0].data, jobs[i]->out);
        fixture_expect_bytes(jobs[i]->results[0].data, want[i], jobs[i]->in_len, "in place");
        job_free(jobs[i]);
    }
}
END_TEST

START_TEST(takes_only_what_it_can_run)
{
    uint64_t seed = 4;
    struct dev_batch b = {.n = 0};
    struct job *ok = batch_job(STEP_TRANSFORM, DEV_BATCH_JOB_BYTES, &seed);
    ck_assert(dev_batch_fits(&b, &ok->task));
    ck_assert(dev_batch_takes(&ok->task));
    struct job *big = batch_job(STEP_REVERSE, DEV_BATCH_JOB_BYTES + 1, &seed);
    ck_assert(!dev_batch_fits(&b, &big->task));
    struct job *typed = batch_job(STEP_HISTOGRAM, 64, &seed);
    typed->steps[0].u.hist.type = ELEM_F32;
    ck_assert(!dev_batch_fits(&b, &typed->task));
    struct job *fill = batch_job(STEP_REVERSE, 0, &seed);
    fill->steps[0].kind = STEP_FILL;
    ck_assert(!dev_batch_fits(&b, &fill->task));
    struct job *pipe = fixture_job(2, "ab", 2);
    pipe->task.kind = TASK_JOB;
    pipe->task.job = pipe;
    ck_assert(!dev_batch_fits(&b, &pipe->task));
    struct task open = {.kind = TASK_OPEN, .job = ok};
    ck_assert(!dev_batch_fits(&b, &open));
    /* The shape alone (what the runner asks of a task before any batch). */
    ck_assert(!dev_batch_takes(&big->task) && !dev_batch_takes(&typed->task) &&
              !dev_batch_takes(&fill->task) && !dev_batch_takes(&pipe->task) &&
              !dev_batch_takes(&open));
    b.n = DEV_BATCH_JOBS;   /* full */
    ck_assert(!dev_batch_fits(&b, &ok->task));
    b.n = 0;
    b.up = DEV_BATCH_BYTES - 100;   /* no room left for its bytes */
    ck_assert(!dev_batch_fits(&b, &ok->task));
    ck_assert(dev_batch_takes(&ok->task));   /* its shape still is a batch's */
    job_free(ok);
    job_free(big);
    job_free(typed);
    job_free(fill);
    job_free(pipe);
}
END_TEST

/* How long a batch may take beside held queues before the test calls it
 * stuck: a hang bound, far above any device's time for one batch. */
#define BATCH_STUCK_S 60

struct batch_beside {
    struct job **jobs;
    size_t n;
    bool done;
    pthread_mutex_t lock;
    pthread_cond_t cond;
};

static void *batch_beside_run(void *arg)
{
    struct batch_beside *b = arg;
    batch_run_all(b->jobs, b->n);
    pthread_mutex_lock(&b->lock);
    b->done = true;
    pthread_cond_signal(&b->cond);
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

START_TEST(runs_while_bulk_queues_are_held)
{
    /* Each of the copy-in, kernel and copy-out queues held by a command
     * waiting for an event set only at the end, as a bulk piece's kernel
     * waits for its copy in. */
    struct dev *d = fixture_dev();
    cl_int rc;
    cl_event hold = clCreateUserEvent(d->ctx, &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    for (int q = DEV_Q_IN; q <= DEV_Q_OUT; q++) {
        ck_assert_int_eq(clEnqueueMarkerWithWaitList(d->q[q], 1, &hold, NULL), CL_SUCCESS);
        clFlush(d->q[q]);
    }
    uint64_t seed = 7;
    struct job *jobs[3];
    for (size_t i = 0; i < 3; i++)
        jobs[i] = batch_job((enum step_kind)i, 16 + i, &seed);
    struct batch_beside b = {jobs, 3, false, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, batch_beside_run, &b), 0);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += BATCH_STUCK_S;
    pthread_mutex_lock(&b.lock);
    while (!b.done && pthread_cond_timedwait(&b.cond, &b.lock, &until) == 0)
        ;
    bool done = b.done;
    pthread_mutex_unlock(&b.lock);
    clSetUserEventStatus(hold, CL_COMPLETE);   /* frees a stuck batch, so the test can end */
    pthread_join(t, NULL);
    for (int q = DEV_Q_IN; q <= DEV_Q_OUT; q++)
        clFinish(d->q[q]);
    clReleaseEvent(hold);
    ck_assert_msg(done, "a batch waited behind the held bulk queues");
    for (size_t i = 0; i < 3; i++) {
        batch_expect(jobs[i]);
        job_free(jobs[i]);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_batch");
    const TTest *const tests[] = {
        mixed_small_jobs_match_host,
        mixed_up_to_the_size_limit,
        both_group_shapes,
        a_bad_job_fails_alone,
        output_over_its_input,
        takes_only_what_it_can_run,
        runs_while_bulk_queues_are_held,
        runs_on_its_batch_device,
        NULL,
    };
    TCase *tc = check_run_case(s, "batch", tests);
    tcase_set_timeout(tc, 120);
    tcase_add_unchecked_fixture(tc, NULL, fixture_close);
    return check_run(s, CK_NOFORK);
}
