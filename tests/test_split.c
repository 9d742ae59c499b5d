/* SPDX-License-Identifier: MIT */
/* test_split.c: one large job over every device of the default type
 * (daemon/split.c), through a real ampd with two PoCL devices
 * (POCL_DEVICES="pthread pthread") and 64 KiB chunks: histograms of bytes
 * and of floats with NaNs and clamping, a map over a sub-range that
 * crosses the parts' boundary, and a transform feeding a histogram give
 * the CPU reference's results and name every device (both, or all four
 * GPUs of a four-GPU host); a job that names a
 * device, one no larger than a chunk, and a reverse run whole on one. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "amp.h"
#include "client_fixture.h"
#include "dev_fixture.h"
#include "host_step.h"

#define SPLIT_CHUNK 65536

static char split_name[128];   /* "0+1: " (fixture_split_name) */

static void expect_split(int split)
{
    const char *dev = amp_last_device(client_conn);
    ck_assert_msg((strncmp(dev, split_name, strlen(split_name)) == 0) == split,
                  "device '%s', want %s", dev, split ? split_name : "one device");
}

static amp_step_result *run(const amp_step *steps, size_t n, const void *in, size_t len,
                            const char *device)
{
    amp_opts o = { .size = sizeof o, .device = device };
    amp_step_result *r = NULL;
    CLIENT_CHECK_OK(amp_pipeline(client_conn, &o, steps, n, in, len, &r));
    return r;
}

START_TEST(histogram_of_bytes)
{
    size_t n = (1u << 20) + 77;
    uint8_t *in = client_fixture_random(n, 1);
    amp_step st = { .size = sizeof st, .kind = AMP_STEP_HISTOGRAM,
                    .hist = { .type = AMP_TYPE_UINT8 } };
    amp_step_result *r = run(&st, 1, in, n, NULL);
    expect_split(1);
    struct hist_params hp = { .type = ELEM_U8, .bins = 256 };
    client_fixture_expect_hist(&r[0].hist, &hp, in, n);
    amp_step_results_free(r, 1);
    free(in);
}
END_TEST

START_TEST(histogram_of_floats)
{
    size_t count = 300001, n = count * 4;
    float *v = malloc(n);
    ck_assert_ptr_nonnull(v);
    uint8_t *bits = client_fixture_random(count, 2);
    for (size_t i = 0; i < count; i++)
        v[i] = i % 1001 == 0 ? NAN : (float)bits[i] - 20.5f;
    free(bits);
    for (int clamp = 0; clamp < 2; clamp++) {
        amp_step st = { .size = sizeof st, .kind = AMP_STEP_HISTOGRAM,
                        .hist = { .type = AMP_TYPE_FLOAT32, .bins = 17, .lo = 0, .hi = 200,
                                  .clamp = clamp } };
        amp_step_result *r = run(&st, 1, v, n, NULL);
        expect_split(1);
        struct hist_params hp = { .type = ELEM_F32, .bins = 17, .lo = 0, .hi = 200,
                                  .clamp = clamp != 0 };
        client_fixture_expect_hist(&r[0].hist, &hp, (const uint8_t *)v, n);
        ck_assert_uint_gt(r[0].hist.nan, 0);
        ck_assert_uint_gt(r[0].hist.below, 0);
        amp_step_results_free(r, 1);
    }
    free(v);
}
END_TEST

/* A map over [1000, n - 1000): the parts' boundary falls inside it. */
static amp_step map_step(uint8_t *table, size_t n)
{
    for (int i = 0; i < 256; i++)
        table[i] = (uint8_t)(i * 13 + 5);
    amp_step st = { .size = sizeof st, .kind = AMP_STEP_TRANSFORM,
                    .transform = { .op = AMP_OP_MAP, .table = table, .table_len = 256,
                                   .offset = 1000, .length = n - 2000, .has_length = 1 } };
    return st;
}

static uint8_t *map_want(const uint8_t *in, const uint8_t *table, size_t n)
{
    struct transform_params tp = { .op = XFORM_MAP, .offset = 1000, .length = n - 2000 };
    memcpy(tp.table, table, 256);
    uint8_t *want = malloc(n);
    ck_assert_ptr_nonnull(want);
    memcpy(want, in, n);
    host_step_transform(&tp, want, n);
    return want;
}

START_TEST(map_across_the_boundary)
{
    size_t n = 3 * SPLIT_CHUNK + 5;
    uint8_t *in = client_fixture_random(n, 3), table[256];
    amp_step st = map_step(table, n);
    amp_step_result *r = run(&st, 1, in, n, NULL);
    expect_split(1);
    uint8_t *want = map_want(in, table, n);
    ck_assert_uint_eq(r[0].len, n);
    ck_assert_mem_eq(r[0].data, want, n);
    amp_step_results_free(r, 1);
    free(want);
    free(in);
}
END_TEST

START_TEST(map_then_histogram)
{
    size_t n = (2u << 20) + 3;
    uint8_t *in = client_fixture_random(n, 4), table[256];
    amp_step st[2] = { map_step(table, n),
                       { .size = sizeof st[1], .kind = AMP_STEP_HISTOGRAM,
                         .hist = { .type = AMP_TYPE_UINT8 } } };
    amp_step_result *r = run(st, 2, in, n, NULL);
    expect_split(1);
    uint8_t *want = map_want(in, table, n);
    ck_assert_mem_eq(r[0].data, want, n);
    struct hist_params hp = { .type = ELEM_U8, .bins = 256 };
    client_fixture_expect_hist(&r[1].hist, &hp, want, n);
    amp_step_results_free(r, 2);
    free(want);
    free(in);
}
END_TEST

START_TEST(whole_on_one_device)
{
    size_t n = 4 * SPLIT_CHUNK;
    uint8_t *in = client_fixture_random(n, 5), table[256];
    amp_step st = map_step(table, n);
    amp_step_result *r = run(&st, 1, in, n, "1");   /* named */
    expect_split(0);
    ck_assert(strncmp(amp_last_device(client_conn), "1: ", 3) == 0);
    uint8_t *want = map_want(in, table, n);
    ck_assert_mem_eq(r[0].data, want, n);
    amp_step_results_free(r, 1);
    free(want);
    st = map_step(table, SPLIT_CHUNK);
    r = run(&st, 1, in, SPLIT_CHUNK, NULL);   /* one chunk */
    expect_split(0);
    amp_step_results_free(r, 1);
    amp_step rev = { .size = sizeof rev, .kind = AMP_STEP_REVERSE };
    r = run(&rev, 1, in, n, NULL);   /* needs all of its input at once */
    expect_split(0);
    amp_step_results_free(r, 1);
    free(in);
}
END_TEST

int main(void)
{
    setenv("POCL_DEVICES", "pthread pthread", 1);
    /* One GPU: nothing to split over. */
    fixture_split_name(fixture_need_twins(), split_name, sizeof split_name);
    Suite *s = suite_create("split");
    const TTest *const tests[] = {
        histogram_of_bytes,
        histogram_of_floats,
        map_across_the_boundary,
        map_then_histogram,
        whole_on_one_device,
        NULL,
    };
    TCase *tc = check_run_case(s, "split", tests);
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, client_fixture_open, client_fixture_close);
    static const char *const args[] = { "--chunk-bytes", "65536", NULL };
    return client_fixture_run(s, args);
}
