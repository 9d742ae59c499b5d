/* SPDX-License-Identifier: MIT */
/* test_sched_split.c: the scheduler with two PoCL devices
 * (POCL_DEVICES="pthread pthread"), in one process: a large job left to
 * the daemon is split over both and gives the CPU reference's histogram;
 * when one device breaks (every kernel launch fails, as a lost GPU's
 * would), a job that touches it fails INTERNAL naming that device, while
 * jobs on the other device keep running, and it serves again once it
 * works; streams placed at the same instant go to different devices. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "check_run.h"
#include "dev_fixture.h"
#include "dev_internal.h"
#include "host_step.h"
#include "sched.h"

#define CHUNK 65536

static struct dev **devs;
static size_t ndevs;
static struct sched *sched;
static struct sched_port *port;
static uv_loop_t loop;
static char split_name[128];   /* "0+1: " (fixture_split_name) */

struct outcome {
    bool done;
    enum status_code status;
    char msg[STATUS_MSG_MAX];
    char device[128];
    uint64_t counts[256];
};

static void on_done(struct job *job)
{
    struct outcome *o = job->owner;
    o->done = true;
    o->status = job->status;
    snprintf(o->msg, sizeof o->msg, "%s", job->msg);
    snprintf(o->device, sizeof o->device, "%s", job->device);
    if (job->status == STATUS_OK && job->steps[0].kind == STEP_HISTOGRAM)
        memcpy(o->counts, job->results[0].hist.counts, sizeof o->counts);
    job_free(job);
}

/* A byte histogram of len random bytes (seed), on device (""=any). */
static struct job *hist_job(size_t len, uint64_t seed, const char *device, struct outcome *o)
{
    struct job *job = job_new(1);
    ck_assert_ptr_nonnull(job);
    job->steps[0].kind = STEP_HISTOGRAM;
    job->steps[0].u.hist = (struct hist_params){ .type = ELEM_U8, .bins = 256 };
    job->in = job->in_mem = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(job->in);
    job->in_len = job->in_mem_len = len;
    fixture_random(job->in, len, seed);
    snprintf(job->device_req, sizeof job->device_req, "%s", device);
    memset(o, 0, sizeof *o);
    job->done = on_done;
    job->owner = o;
    return job;
}

static void expect_counts(const struct outcome *o, size_t len, uint64_t seed)
{
    uint8_t *in = malloc(len);
    ck_assert_ptr_nonnull(in);
    fixture_random(in, len, seed);
    struct hist_params hp = { .type = ELEM_U8, .bins = 256 };
    struct hist_result want;
    ck_assert_int_eq(host_step_hist(&hp, in, len, &want), 0);
    ck_assert_mem_eq(o->counts, want.counts, sizeof o->counts);
    free(want.counts);
    free(in);
}

/* Submits jobs[0..n) and runs the loop until every one is done. */
static void run_all(struct job **jobs, struct outcome **outs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char msg[256];
        ck_assert_msg(sched_submit(port, jobs[i], msg, sizeof msg) == STATUS_OK, "%s", msg);
    }
    for (size_t i = 0; i < n; i++)
        while (!outs[i]->done)
            uv_run(&loop, UV_RUN_ONCE);
}

static void setup(void)
{
    setenv("POCL_DEVICES", "pthread pthread", 1);
    char err[256];
    ck_assert_msg(dev_open_all(&devs, &ndevs, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(ndevs >= 2, "POCL_DEVICES gave %zu device(s), not two", ndevs);
    struct sched_limits lim = { .max_jobs = 64, .staging_bytes = 4 * CHUNK, .chunk_bytes = CHUNK };
    ck_assert_msg(sched_new(devs, ndevs, 0, &lim, &sched, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    port = sched_port_new(sched, &loop);
    ck_assert_ptr_nonnull(port);
}

static void teardown(void)
{
    sched_stop(sched);
    sched_port_close(port);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    sched_free(sched);
    dev_close_all(devs, ndevs);
}

START_TEST(large_job_split_over_both)
{
    struct outcome o;
    struct job *job = hist_job(10 * CHUNK + 333, 1, "", &o);
    struct outcome *po = &o;
    run_all(&job, &po, 1);
    ck_assert_msg(o.status == STATUS_OK, "%s", o.msg);
    ck_assert_msg(strncmp(o.device, split_name, strlen(split_name)) == 0, "device '%s', want %s",
                  o.device, split_name);
    expect_counts(&o, 10 * CHUNK + 333, 1);
}
END_TEST

START_TEST(a_broken_device_fails_only_its_jobs)
{
    dev_set_launch_fault_for_test(devs[1], CL_INVALID_COMMAND_QUEUE);
    struct outcome o[4];
    struct outcome *po[4] = { &o[0], &o[1], &o[2], &o[3] };
    struct job *jobs[4] = {
        hist_job(10 * CHUNK, 2, "", &o[0]),    /* split: its part on device 1 fails */
        hist_job(10 * CHUNK, 3, "0", &o[1]),   /* whole, on the good device */
        hist_job(100, 4, "1", &o[2]),          /* a small (batched) job on the broken one */
        hist_job(100, 5, "0", &o[3]),          /* and on the good one */
    };
    run_all(jobs, po, 4);
    ck_assert_int_eq(o[0].status, STATUS_INTERNAL);
    ck_assert_msg(strstr(o[0].msg, "device 1"), "%s", o[0].msg);
    ck_assert_int_eq(o[2].status, STATUS_INTERNAL);
    ck_assert_msg(strstr(o[2].msg, "device 1"), "%s", o[2].msg);
    ck_assert_msg(o[1].status == STATUS_OK, "%s", o[1].msg);
    expect_counts(&o[1], 10 * CHUNK, 3);
    ck_assert_msg(o[3].status == STATUS_OK, "%s", o[3].msg);
    expect_counts(&o[3], 100, 5);

    dev_set_launch_fault_for_test(devs[1], 0);   /* repaired: it serves again */
    struct job *again = hist_job(10 * CHUNK, 6, "", &o[0]);
    run_all(&again, po, 1);
    ck_assert_msg(o[0].status == STATUS_OK, "%s", o[0].msg);
    ck_assert_msg(strncmp(o[0].device, split_name, strlen(split_name)) == 0,
                  "device '%s', want %s", o[0].device, split_name);
    expect_counts(&o[0], 10 * CHUNK, 6);
}
END_TEST

/* Streams placed at the same instant from several loops: each is counted
 * on its device when placed, not only once its OPEN reaches the runner, so
 * the next one placed before that goes elsewhere (without it, all went to
 * device 0 on a four-GPU host). A stream that ends unopened lets its
 * placement go. */
START_TEST(streams_placed_together_spread)
{
    size_t same = 0;
    for (size_t i = 0; i < ndevs; i++)
        same += dev_info(devs[i])->type == dev_info(devs[0])->type;
    struct job *jobs[8];
    size_t index[8], per_device[8] = {0};
    size_t n = same < 8 ? same : 8;
    char msg[256];
    for (size_t i = 0; i < n; i++) {
        ck_assert_ptr_nonnull(jobs[i] = job_new(1));
        ck_assert_msg(sched_stream_begin(port, jobs[i], &index[i], msg, sizeof msg) == STATUS_OK,
                      "%s", msg);
        ck_assert_uint_lt(index[i], n);
        per_device[index[i]]++;
    }
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(per_device[i] == 1, "device %zu got %zu of %zu streams", i, per_device[i], n);
    for (size_t i = 0; i < n; i++) {
        sched_stream_end(port, jobs[i], index[i], false, 0, false);
        job_free(jobs[i]);
    }
    struct job *again = job_new(1);
    ck_assert_ptr_nonnull(again);
    ck_assert_int_eq(sched_stream_begin(port, again, &index[0], msg, sizeof msg), STATUS_OK);
    ck_assert_uint_eq(index[0], 0);   /* every device idle again: the default wins */
    sched_stream_end(port, again, index[0], false, 0, false);
    job_free(again);
}
END_TEST

int main(void)
{
    setenv("POCL_DEVICES", "pthread pthread", 1);
    /* One GPU: nothing to split over. */
    fixture_split_name(fixture_need_twins(), split_name, sizeof split_name);
    Suite *s = suite_create("sched_split");
    const TTest *const tests[] = {
        large_job_split_over_both,
        a_broken_device_fails_only_its_jobs,
        streams_placed_together_spread,
        NULL,
    };
    TCase *tc = check_run_case(s, "split", tests);
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    return check_run(s, CK_FORK_GETENV);
}
