/* SPDX-License-Identifier: MIT */
/* test_kernel_fill.c: fill on the default device against host_step_fill for
 * every element type, tiles 1, 7, 64, 256 and the device maximum (with a
 * prime count, so the last work-group is partly padding), the tile limit
 * refusal, wrapping arithmetic, and the launch-splitting path; the good
 * paths again with the GPU kernels (dev_set_shape_for_test). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "host_step.h"
#include "dev_fixture.h"
#include "dev_internal.h"

#define PRIME_COUNT 104729

static const enum elem_type fill_types[] = {ELEM_I32, ELEM_U32, ELEM_I64, ELEM_F32};
#define NTYPES (sizeof fill_types / sizeof fill_types[0])

static struct fill_params fill(enum elem_type t, uint64_t count, uint32_t tile)
{
    struct fill_params p = {.type = t, .count = count, .tile = tile, .start = -12345,
                            .step = 7, .start_f = -3.25f, .step_f = 0.1f};
    return p;
}

static struct job *run_fill(const struct fill_params *p)
{
    struct job *job = fixture_job(1, NULL, 0);
    job->steps[0].kind = STEP_FILL;
    job->steps[0].u.fill = *p;
    fixture_run(job);
    return job;
}

static void check_fill(const struct fill_params *p)
{
    size_t len = (size_t)p->count * elem_size(p->type);
    uint8_t *want = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(want);
    host_step_fill(p, want);
    struct job *job = run_fill(p);
    ck_assert_msg(job->status == STATUS_OK, "type %d tile %u: %s", p->type, p->tile, job->msg);
    ck_assert_uint_eq(job->results[0].len, len);
    char what[64];
    snprintf(what, sizeof what, "fill type %d count %llu tile %u", p->type,
             (unsigned long long)p->count, p->tile);
    fixture_expect_bytes(job->results[0].data, want, len, what);
    job_free(job);
    free(want);
}

START_TEST(tiles_and_types)
{
    const uint32_t tiles[] = {0, 1, 7, 64, 256};
    for (size_t t = 0; t < NTYPES; t++)
        for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
            struct fill_params p = fill(fill_types[t], PRIME_COUNT, tiles[i]);
            check_fill(&p);
        }
}
END_TEST

START_TEST(device_max_tile)
{
    struct dev *d = fixture_dev();
    cl_kernel k = dev_kernel(d, d->shape == DEV_SHAPE_CPU ? "fill_u32_scalar" : "fill_u32");
    size_t max = dev_kernel_wg_max(d, k);
    struct fill_params p = fill(ELEM_U32, PRIME_COUNT, (uint32_t)max);
    check_fill(&p);
    p = fill(ELEM_F32, PRIME_COUNT, (uint32_t)max);
    check_fill(&p);
}
END_TEST

START_TEST(tile_over_limit_refused)
{
    struct dev *d = fixture_dev();
    uint64_t devmax = dev_info(d)->max_work_group_size;
    struct fill_params p = fill(ELEM_I32, 100, (uint32_t)devmax + 1);
    struct job *job = run_fill(&p);
    ck_assert_int_eq(job->status, STATUS_INVALID_ARGUMENT);
    char lim[32];
    snprintf(lim, sizeof lim, "%llu", (unsigned long long)devmax);
    ck_assert_msg(strstr(job->msg, "fill.tile") && strstr(job->msg, lim), "%s", job->msg);
    job_free(job);
    /* Within the device limit but over the kernel's, if they differ. */
    size_t kmax = dev_kernel_wg_max(d, dev_kernel(d, "fill_u64"));
    if (kmax < devmax) {
        p = fill(ELEM_I64, 100, (uint32_t)kmax + 1);
        job = run_fill(&p);
        ck_assert_int_eq(job->status, STATUS_INVALID_ARGUMENT);
        ck_assert_msg(strstr(job->msg, "fill_u64"), "%s", job->msg);
        job_free(job);
    }
}
END_TEST

START_TEST(small_counts)
{
    for (size_t t = 0; t < NTYPES; t++)
        for (uint64_t n = 0; n < 20; n++) {
            struct fill_params p = fill(fill_types[t], n, 8);
            check_fill(&p);
        }
}
END_TEST

START_TEST(integers_wrap)
{
    struct fill_params p = fill(ELEM_I32, 5000, 64);
    p.start = INT32_MAX - 10;
    p.step = 1000003;
    check_fill(&p);
    p.type = ELEM_U32;
    p.start = -1;
    p.step = -3;
    check_fill(&p);
    p.type = ELEM_I64;
    p.start = INT64_MAX - 5;
    p.step = INT64_MAX / 3;
    check_fill(&p);
    /* Spot-check the wrap itself, not only agreement with the reference. */
    p = fill(ELEM_I32, 3, 1);
    p.start = INT32_MAX;
    p.step = 1;
    struct job *job = run_fill(&p);
    ck_assert_int_eq(job->status, STATUS_OK);
    int32_t v[3];
    memcpy(v, job->results[0].data, sizeof v);
    ck_assert_int_eq(v[0], INT32_MAX);
    ck_assert_int_eq(v[1], INT32_MIN);
    ck_assert_int_eq(v[2], INT32_MIN + 1);
    job_free(job);
}
END_TEST

START_TEST(split_launches)
{
    struct dev *d = fixture_dev();
    uint64_t saved = d->launch_items_max;
    dev_set_launch_items_max_for_test(d, 1000);   /* 104729 items: many launches */
    for (size_t t = 0; t < NTYPES; t++) {
        struct fill_params p = fill(fill_types[t], PRIME_COUNT, 7);
        check_fill(&p);
        p.tile = 64;
        check_fill(&p);
    }
    /* A cap below one tile still launches whole tiles (several of them:
     * a GPU-shape launch of 64 items covers 2048 elements). */
    dev_set_launch_items_max_for_test(d, 5);
    struct fill_params p = fill(ELEM_U32, 5001, 64);
    check_fill(&p);
    dev_set_launch_items_max_for_test(d, saved);
}
END_TEST

START_TEST(bad_type_refused)
{
    struct fill_params p = fill(ELEM_U8, 10, 0);
    struct job *job = run_fill(&p);
    ck_assert_int_eq(job->status, STATUS_INVALID_ARGUMENT);
    ck_assert_msg(strstr(job->msg, "fill.type"), "%s", job->msg);
    job_free(job);
}
END_TEST

START_TEST(too_large_refused)
{
    struct dev *d = fixture_dev();
    struct fill_params p = fill(ELEM_I64, dev_info(d)->max_mem_alloc_size / 8 + 1, 0);
    struct job *job = run_fill(&p);
    ck_assert_int_eq(job->status, STATUS_RESOURCE_EXHAUSTED);
    ck_assert_msg(strstr(job->msg, "max_mem_alloc_size"), "%s", job->msg);
    job_free(job);
}
END_TEST

/* The GPU kernels (several 16-byte stores per work-item) on whatever this
 * device is; the default case runs the device's own shape. */
static enum dev_shape own_shape;

static void gpu_shape_begin(void)
{
    struct dev *d = fixture_dev();
    own_shape = d->shape;
    dev_set_shape_for_test(d, DEV_SHAPE_GPU);
}

static void gpu_shape_end(void)
{
    dev_set_shape_for_test(fixture_dev(), own_shape);
}

int main(void)
{
    Suite *s = suite_create("kernel_fill");
    const TTest *const tests[] = {
        tiles_and_types,
        device_max_tile,
        tile_over_limit_refused,
        small_counts,
        integers_wrap,
        split_launches,
        bad_type_refused,
        too_large_refused,
        NULL,
    };
    TCase *tc = check_run_case(s, "fill", tests);
    tcase_add_unchecked_fixture(tc, NULL, fixture_close);
    const TTest *const gpu_tests[] = {
        tiles_and_types,
        device_max_tile,
        small_counts,
        integers_wrap,
        split_launches,
        NULL,
    };
    TCase *gpu = check_run_case(s, "fill_gpu_shape", gpu_tests);
    tcase_add_unchecked_fixture(gpu, NULL, fixture_close);
    tcase_add_checked_fixture(gpu, gpu_shape_begin, gpu_shape_end);
    return check_run(s, CK_NOFORK);
}
