/* SPDX-License-Identifier: MIT */
/* test_kernel_pipeline.c: multi-step jobs on device-resident data against
 * the CPU reference of each step: transform then histogram (both results
 * checked), a histogram between two data steps (it leaves the data
 * unchanged), fill feeding later steps, and a failing step failing the
 * whole job without partial results. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "host_step.h"
#include "dev_fixture.h"
#include "dev_internal.h"

static struct transform_params xform(enum transform_op op, uint8_t v, uint64_t off,
                                     uint64_t len)
{
    struct transform_params p;
    memset(&p, 0, sizeof p);
    p.op = op;
    p.value = v;
    p.offset = off;
    p.length = len;
    for (int i = 0; i < 256; i++)
        p.table[i] = (uint8_t)(255 - i);
    return p;
}

static void expect_counts(const struct hist_result *got, const struct hist_result *want)
{
    ck_assert_uint_eq(got->bins, want->bins);
    ck_assert_mem_eq(got->counts, want->counts, want->bins * sizeof(uint64_t));
    ck_assert_uint_eq(got->below, want->below);
    ck_assert_uint_eq(got->above, want->above);
    ck_assert_uint_eq(got->nan, want->nan);
}

START_TEST(transform_then_histogram)
{
    size_t n = (1u << 20) + 77;
    uint8_t *in = malloc(n), *want = malloc(n);
    fixture_random(in, n, 1);
    struct transform_params tp = xform(XFORM_ADD, 200, 1000, n - 2000);
    struct hist_params hp = {.type = ELEM_U8, .bins = 256};
    memcpy(want, in, n);
    host_step_transform(&tp, want, n);
    struct hist_result hwant;
    ck_assert_int_eq(host_step_hist(&hp, want, n, &hwant), 0);

    struct job *job = fixture_job(2, in, n);
    job->steps[0].kind = STEP_TRANSFORM;
    job->steps[0].u.transform = tp;
    job->steps[1].kind = STEP_HISTOGRAM;
    job->steps[1].u.hist = hp;
    fixture_run(job);
    ck_assert_msg(job->status == STATUS_OK, "%s", job->msg);
    ck_assert_uint_eq(job->results[0].len, n);
    fixture_expect_bytes(job->results[0].data, want, n, "transform result");
    expect_counts(&job->results[1].hist, &hwant);
    job_free(job);
    free(hwant.counts);
    free(in);
    free(want);
}
END_TEST

START_TEST(histogram_between_data_steps)
{
    /* The histogram's input must be whole floats: n is a multiple of 4. */
    size_t n = 50020;
    uint8_t *in = malloc(n), *rev = malloc(n), *want = malloc(n);
    fixture_random(in, n, 2);
    host_step_reverse(in, rev, n);
    struct hist_params hp = {.type = ELEM_F32, .bins = 50, .lo = -1e3, .hi = 1e3};
    struct hist_result hwant;
    ck_assert_int_eq(host_step_hist(&hp, rev, n, &hwant), 0);
    struct transform_params tp = xform(XFORM_MAP, 0, 3, n - 3);
    memcpy(want, rev, n);
    host_step_transform(&tp, want, n);

    struct job *job = fixture_job(3, in, n);
    job->steps[0].kind = STEP_REVERSE;
    job->steps[1].kind = STEP_HISTOGRAM;
    job->steps[1].u.hist = hp;
    job->steps[2].kind = STEP_TRANSFORM;
    job->steps[2].u.transform = tp;
    fixture_run(job);
    ck_assert_msg(job->status == STATUS_OK, "%s", job->msg);
    fixture_expect_bytes(job->results[0].data, rev, n, "reverse");
    expect_counts(&job->results[1].hist, &hwant);
    ck_assert_ptr_null(job->results[1].data);
    fixture_expect_bytes(job->results[2].data, want, n, "map after histogram");
    job_free(job);
    free(hwant.counts);
    free(in);
    free(rev);
    free(want);
}
END_TEST

START_TEST(fill_feeds_later_steps)
{
    struct fill_params fp = {.type = ELEM_I32, .count = 10007, .tile = 64, .start = -5000,
                             .step = 1};
    size_t len = fp.count * 4;
    uint8_t *filled = malloc(len), *rev = malloc(len);
    host_step_fill(&fp, filled);
    host_step_reverse(filled, rev, len);
    struct hist_params hp = {.type = ELEM_I32, .bins = 10, .lo = -5000, .hi = 5000,
                             .clamp = true};
    struct hist_result hwant;
    ck_assert_int_eq(host_step_hist(&hp, filled, len, &hwant), 0);

    uint8_t ignored[5] = {9, 9, 9, 9, 9};
    struct job *job = fixture_job(3, ignored, sizeof ignored);
    job->steps[0].kind = STEP_FILL;
    job->steps[0].u.fill = fp;
    job->steps[1].kind = STEP_HISTOGRAM;
    job->steps[1].u.hist = hp;
    job->steps[2].kind = STEP_REVERSE;
    fixture_run(job);
    ck_assert_msg(job->status == STATUS_OK, "%s", job->msg);
    fixture_expect_bytes(job->results[0].data, filled, len, "fill");
    expect_counts(&job->results[1].hist, &hwant);
    ck_assert_uint_eq(job->results[1].hist.counts[9], 1000 + 7);
    fixture_expect_bytes(job->results[2].data, rev, len, "reverse of fill");
    job_free(job);
    free(hwant.counts);
    free(filled);
    free(rev);
}
END_TEST

START_TEST(bad_later_step_fails_whole_job)
{
    uint8_t in[64] = {0};
    struct job *job = fixture_job(2, in, sizeof in);
    job->steps[0].kind = STEP_REVERSE;
    job->steps[1].kind = STEP_HISTOGRAM;
    job->steps[1].u.hist = (struct hist_params){.type = ELEM_U32, .bins = 4, .lo = 5, .hi = 1};
    fixture_run(job);
    ck_assert_int_eq(job->status, STATUS_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(job->results);
    ck_assert_ptr_null(job->results[0].data);
    ck_assert_ptr_null(job->results[1].hist.counts);
    job_free(job);
}
END_TEST

/* GPUs run jobs of histograms and one transform in chunks (dev_run.c,
 * dev_chunked): small chunks here, with the GPU kernels, so that a sub-range
 * and histograms before and after the transform cross chunk edges. */
START_TEST(chunked_histograms_around_a_transform)
{
    struct dev *d = fixture_dev();
    enum dev_shape own = d->shape;
    dev_set_shape_for_test(d, DEV_SHAPE_GPU);
    dev_set_chunk_bytes_for_test(d, 64 << 10);
    size_t n = (1u << 20) + 77;
    uint8_t *in = malloc(n), *want = malloc(n);
    fixture_random(in, n, 7);
    struct transform_params tp = xform(XFORM_MAP, 0, 70000, n - 140001);
    struct hist_params hp = {.type = ELEM_U8, .bins = 256};
    struct hist_result before, after;
    ck_assert_int_eq(host_step_hist(&hp, in, n, &before), 0);
    memcpy(want, in, n);
    host_step_transform(&tp, want, n);
    ck_assert_int_eq(host_step_hist(&hp, want, n, &after), 0);

    struct job *job = fixture_job(3, in, n);
    job->steps[0].kind = STEP_HISTOGRAM;
    job->steps[0].u.hist = hp;
    job->steps[1].kind = STEP_TRANSFORM;
    job->steps[1].u.transform = tp;
    job->steps[2].kind = STEP_HISTOGRAM;
    job->steps[2].u.hist = hp;
    fixture_run(job);
    ck_assert_msg(job->status == STATUS_OK, "%s", job->msg);
    expect_counts(&job->results[0].hist, &before);
    fixture_expect_bytes(job->results[1].data, want, n, "chunked transform result");
    expect_counts(&job->results[2].hist, &after);
    job_free(job);

    /* Floats counted in chunks: every chunk edge falls between elements. */
    size_t nf = 100003;
    float *f = malloc(nf * sizeof(float));
    for (size_t i = 0; i < nf; i++)
        f[i] = (float)((i * 7919) % 1000) / 10.0f - 5.0f;
    struct hist_params fp = {.type = ELEM_F32, .bins = 37, .lo = 0.0, .hi = 90.0};
    struct hist_result fwant;
    ck_assert_int_eq(host_step_hist(&fp, (const uint8_t *)f, nf * sizeof(float), &fwant), 0);
    job = fixture_job(1, f, nf * sizeof(float));
    job->steps[0].kind = STEP_HISTOGRAM;
    job->steps[0].u.hist = fp;
    fixture_run(job);
    ck_assert_msg(job->status == STATUS_OK, "%s", job->msg);
    expect_counts(&job->results[0].hist, &fwant);
    job_free(job);

    dev_set_chunk_bytes_for_test(d, 0);
    dev_set_shape_for_test(d, own);
    free(in);
    free(want);
    free(f);
    free(before.counts);
    free(after.counts);
    free(fwant.counts);
}
END_TEST

START_TEST(a_job_runs_twice)
{
    /* dev_run() replaces the results of a job it ran before (a retry). */
    uint8_t in[100];
    fixture_random(in, sizeof in, 3);
    struct job *job = fixture_job(1, in, sizeof in);
    job->steps[0].kind = STEP_REVERSE;
    fixture_run(job);
    ck_assert_int_eq(job->status, STATUS_OK);
    fixture_run(job);
    ck_assert_int_eq(job->status, STATUS_OK);
    uint8_t want[100];
    host_step_reverse(in, want, sizeof in);
    fixture_expect_bytes(job->results[0].data, want, sizeof in, "second run");
    job_free(job);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_pipeline");
    const TTest *const tests[] = {
        transform_then_histogram,
        histogram_between_data_steps,
        fill_feeds_later_steps,
        bad_later_step_fails_whole_job,
        a_job_runs_twice,
        chunked_histograms_around_a_transform,
        NULL,
    };
    TCase *tc = check_run_case(s, "pipeline", tests);
    tcase_add_unchecked_fixture(tc, NULL, fixture_close);
    return check_run(s, CK_NOFORK);
}
