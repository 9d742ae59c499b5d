/* SPDX-License-Identifier: MIT */
/* test_kernel_reverse.c: the reverse step on the default OpenCL device
 * against host_step_reverse, for lengths around every word boundary, a few
 * MiB with an odd tail, and random lengths; plus job bookkeeping (device
 * name, results), both access patterns and the zero-length job. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "host_step.h"
#include "dev_fixture.h"
#include "dev_internal.h"
#include "op.h"

static void check_reverse(size_t n, uint64_t seed)
{
    uint8_t *in = malloc(n ? n : 1), *want = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(want);
    fixture_random(in, n, seed);
    host_step_reverse(in, want, n);
    struct job *job = fixture_job(1, in, n);
    job->steps[0].kind = STEP_REVERSE;
    fixture_run(job);
    ck_assert_msg(job->status == STATUS_OK, "n=%zu: status %d: %s", n, job->status, job->msg);
    ck_assert_uint_eq(job->results[0].len, n);
    ck_assert_ptr_nonnull(job->results[0].data);
    fixture_expect_bytes(job->results[0].data, want, n, "reverse");
    job_free(job);
    free(in);
    free(want);
}

START_TEST(small_lengths)
{
    static const size_t lens[] = {1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 47, 48, 49, 4095,
                                  4096, 4097};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
        check_reverse(lens[i], 100 + i);
}
END_TEST

START_TEST(every_tail_of_a_few_words)
{
    for (size_t n = 64; n < 64 + 16; n++)
        check_reverse(n, n);
}
END_TEST

START_TEST(megabytes_with_odd_tail)
{
    check_reverse((3u << 20) + 13, 7);
    check_reverse(4u << 20, 8);
}
END_TEST

START_TEST(random_lengths)
{
    uint64_t s = 42;
    for (int i = 0; i < 12; i++)
        check_reverse((size_t)(fixture_rand64(&s) % 200000), (uint64_t)i);
}
END_TEST

START_TEST(zero_length)
{
    struct job *job = fixture_job(1, NULL, 0);
    job->steps[0].kind = STEP_REVERSE;
    fixture_run(job);
    ck_assert_msg(job->status == STATUS_OK, "%s", job->msg);
    ck_assert_uint_eq(job->results[0].len, 0);
    ck_assert_ptr_nonnull(job->results[0].data);
    job_free(job);
}
END_TEST

START_TEST(reports_device)
{
    uint8_t in[3] = {1, 2, 3};
    struct job *job = fixture_job(1, in, sizeof in);
    job->steps[0].kind = STEP_REVERSE;
    fixture_run(job);
    ck_assert_int_eq(job->status, STATUS_OK);
    const struct dev_info *info = dev_info(fixture_dev());
    ck_assert_uint_eq(info->index, 0);
    ck_assert_str_eq(job->device + 3, info->name);
    ck_assert(strncmp(job->device, "0: ", 3) == 0);
    ck_assert_uint_gt(info->max_constant_buffer_size, 0);
    ck_assert_uint_gt(info->max_work_group_size, 0);
    ck_assert_uint_gt(info->max_mem_alloc_size, 0);
    ck_assert_uint_gt(info->global_mem_size, 0);
    job_free(job);
}
END_TEST

START_TEST(two_reverses_restore)
{
    uint8_t in[1000];
    fixture_random(in, sizeof in, 5);
    struct job *job = fixture_job(2, in, sizeof in);
    job->steps[0].kind = STEP_REVERSE;
    job->steps[1].kind = STEP_REVERSE;
    fixture_run(job);
    ck_assert_msg(job->status == STATUS_OK, "%s", job->msg);
    ck_assert_mem_eq(job->results[1].data, in, sizeof in);
    uint8_t want[1000];
    host_step_reverse(in, want, sizeof in);
    ck_assert_mem_eq(job->results[0].data, want, sizeof in);
    job_free(job);
}
END_TEST

START_TEST(both_access_patterns)
{
    /* The grid-stride pattern GPUs get and the chunked one CPU devices get,
     * whatever this device is. */
    struct dev *d = fixture_dev();
    enum dev_shape own = d->shape;
    struct dev_variants own_kernels = d->variants, v = d->variants;
    /* Both GPU kernels (the device's variants), then CPU. */
    const enum dev_shape shapes[] = {DEV_SHAPE_GPU, DEV_SHAPE_GPU, DEV_SHAPE_CPU};
    const enum dev_variant kernels[] = {DEV_VARIANT_V1, DEV_VARIANT_V2, DEV_VARIANT_V1};
    /* Inputs long enough for several grid-stride passes (and several of
     * reverse_bytes_v2's 2048-word tiles per group, with a partial last
     * one), then n % 16 of 0..15 in turn (the GPU kernels pick source
     * lanes by n % 16). */
    size_t lens[16 + 8] = {5,      16, 33, 4097, 100000, (1u << 20) + 3, 16 * 70001 + 9,
                           16 * 70001};
    for (size_t r = 0; r < 16; r++)
        lens[8 + r] = 16 * 40 + r;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        dev_set_shape_for_test(d, shapes[s]);
        v.reverse = kernels[s];
        fixture_variants(v);
        for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
            check_reverse(lens[i], 300 + i);
        /* Launches capped below one group per tile: groups stride. */
        uint64_t saved = d->launch_items_max;
        dev_set_launch_items_max_for_test(d, 512);
        check_reverse(16 * 70001 + 9, 400 + s);
        check_reverse(16 * 70001, 410 + s);
        dev_set_launch_items_max_for_test(d, saved);
    }
    dev_set_shape_for_test(d, own);
    fixture_variants(own_kernels);
}
END_TEST

START_TEST(input_over_alloc_limit_refused)
{
    struct dev *d = fixture_dev();
    uint64_t saved = d->info.max_mem_alloc_size;
    d->info.max_mem_alloc_size = 1000;
    uint8_t in[1001] = {0};
    struct job *job = fixture_job(1, in, sizeof in);
    job->steps[0].kind = STEP_REVERSE;
    fixture_run(job);
    d->info.max_mem_alloc_size = saved;
    ck_assert_int_eq(job->status, STATUS_RESOURCE_EXHAUSTED);
    ck_assert_msg(strstr(job->msg, "max_mem_alloc_size"), "%s", job->msg);
    ck_assert_ptr_null(job->results[0].data);
    job_free(job);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_reverse");
    const TTest *const tests[] = {
        small_lengths,
        every_tail_of_a_few_words,
        megabytes_with_odd_tail,
        random_lengths,
        zero_length,
        reports_device,
        two_reverses_restore,
        both_access_patterns,
        input_over_alloc_limit_refused,
        NULL,
    };
    TCase *tc = check_run_case(s, "reverse", tests);
    tcase_add_unchecked_fixture(tc, NULL, fixture_close);
    return check_run(s, CK_NOFORK);
}
