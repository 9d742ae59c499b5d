/* SPDX-License-Identifier: MIT */
/* test_client_region.c: jobs over shared-memory regions (amp_region_*,
 * amp_run_region) through a real ampd, against the CPU reference: every
 * step kind, a pipeline whose outputs land one after another, a transform
 * in place (input and output the same bytes), a histogram of float32s, a
 * fill with no input; regions outliving amp_close(); and the refusals: a
 * slice past the end (locally), an output slice too small and too many
 * regions (by the daemon, --max-regions 4), and data steps with no output
 * region. test_regions.py covers the region socket's protocol and the
 * daemon's refusals from another language.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "amp.h"
#include "client_fixture.h"
#include "host_step.h"

#define REGION_TEST_MAX_REGIONS "4"

static amp_region *region_new(size_t size, uint64_t seed)
{
    amp_region *r = NULL;
    CLIENT_CHECK_OK(amp_region_create(client_conn, size, &r));
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(amp_region_size(r), size);
    if (seed) {
        uint8_t *src = client_fixture_random(size, seed);
        memcpy(amp_region_data(r), src, size);
        free(src);
    }
    return r;
}

static const uint8_t *region_at(amp_region *r, uint64_t off)
{
    return (const uint8_t *)amp_region_data(r) + off;
}

START_TEST(every_kind)
{
    size_t n = (3u << 20) + 13;
    amp_region *in = region_new(n + 100, 7), *out = region_new(3 * n + 300, 0);
    uint8_t *orig = malloc(n);
    memcpy(orig, region_at(in, 100), n);

    /* reverse, transform (xor), histogram, into out one after another */
    amp_step steps[3];
    memset(steps, 0, sizeof steps);
    steps[0].size = sizeof steps[0];
    steps[0].kind = AMP_STEP_REVERSE;
    steps[1].size = sizeof steps[1];
    steps[1].kind = AMP_STEP_TRANSFORM;
    steps[1].transform = (amp_transform_params){ .op = AMP_OP_XOR, .value = 0x5a };
    steps[2].size = sizeof steps[2];
    steps[2].kind = AMP_STEP_HISTOGRAM;
    steps[2].hist = (amp_hist_params){ .type = AMP_TYPE_UINT8 };
    amp_slice si = { .size = sizeof si, .region = in, .offset = 100, .length = n };
    amp_slice so = { .size = sizeof so, .region = out, .offset = 300, .length = 3 * n };
    amp_step_result *r = NULL;
    CLIENT_CHECK_OK(amp_run_region(client_conn, NULL, steps, 3, &si, &so, &r));

    uint8_t *want = malloc(n);
    host_step_reverse(orig, want, n);
    ck_assert_ptr_null(r[0].data);
    ck_assert_uint_eq(r[0].len, n);
    ck_assert_uint_eq(r[0].region_offset, 300);
    ck_assert_int_eq(memcmp(region_at(out, 300), want, n), 0);
    struct transform_params tp = { .op = XFORM_XOR, .value = 0x5a, .length = n };
    host_step_transform(&tp, want, n);
    ck_assert_uint_eq(r[1].len, n);
    ck_assert_uint_eq(r[1].region_offset, 300 + n);
    ck_assert_int_eq(memcmp(region_at(out, 300 + n), want, n), 0);
    struct hist_params hp = { .type = ELEM_U8, .bins = 256 };
    client_fixture_expect_hist(&r[2].hist, &hp, want, n);
    /* the input was only read */
    ck_assert_int_eq(memcmp(region_at(in, 100), orig, n), 0);
    amp_step_results_free(r, 3);
    free(want);
    free(orig);
    amp_region_release(in);
    amp_region_release(out);
}
END_TEST

START_TEST(transform_in_place)
{
    size_t n = 1u << 20;
    amp_region *reg = region_new(n, 9);
    uint8_t *want = malloc(n);
    memcpy(want, amp_region_data(reg), n);
    uint8_t table[256];
    for (int i = 0; i < 256; i++)
        table[i] = (uint8_t)(255 - i);
    amp_step s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    s.kind = AMP_STEP_TRANSFORM;
    s.transform = (amp_transform_params){ .op = AMP_OP_MAP, .table = table, .table_len = 256,
                                          .offset = 10, .length = n - 20, .has_length = 1 };
    amp_slice all = { .size = sizeof all, .region = reg, .length = n };
    amp_step_result *r = NULL;
    CLIENT_CHECK_OK(amp_run_region(client_conn, NULL, &s, 1, &all, &all, &r));
    struct transform_params tp = { .op = XFORM_MAP, .offset = 10, .length = n - 20 };
    memcpy(tp.table, table, 256);
    host_step_transform(&tp, want, n);
    ck_assert_int_eq(memcmp(amp_region_data(reg), want, n), 0);
    amp_step_results_free(r, 1);
    free(want);
    amp_region_release(reg);
}
END_TEST

START_TEST(float_histogram_and_fill)
{
    /* fill 1M int32 into a region, then count them as float32 bits */
    size_t count = 1u << 20, n = count * 4;
    amp_region *reg = region_new(n, 0);
    amp_step fill;
    memset(&fill, 0, sizeof fill);
    fill.size = sizeof fill;
    fill.kind = AMP_STEP_FILL;
    fill.fill = (amp_fill_params){ .type = AMP_TYPE_FLOAT32, .count = count, .start_f = -3.5f,
                                   .step_f = 0.001f };
    amp_slice all = { .size = sizeof all, .region = reg, .length = n };
    amp_step_result *r = NULL;
    CLIENT_CHECK_OK(amp_run_region(client_conn, NULL, &fill, 1, NULL, &all, &r));
    uint8_t *want = malloc(n);
    struct fill_params fp = { .type = ELEM_F32, .count = count, .start_f = -3.5f, .step_f = 0.001f };
    host_step_fill(&fp, want);
    ck_assert_int_eq(memcmp(amp_region_data(reg), want, n), 0);
    amp_step_results_free(r, 1);

    amp_step h;
    memset(&h, 0, sizeof h);
    h.size = sizeof h;
    h.kind = AMP_STEP_HISTOGRAM;
    h.hist = (amp_hist_params){ .type = AMP_TYPE_FLOAT32, .bins = 1000, .lo = -1, .hi = 100 };
    CLIENT_CHECK_OK(amp_run_region(client_conn, NULL, &h, 1, &all, NULL, &r));
    struct hist_params hp = { .type = ELEM_F32, .bins = 1000, .lo = -1, .hi = 100 };
    client_fixture_expect_hist(&r[0].hist, &hp, want, n);
    amp_step_results_free(r, 1);
    free(want);
    amp_region_release(reg);
}
END_TEST

START_TEST(outlives_close)
{
    amp_region *reg = region_new(4096, 3);
    uint8_t want[4096];
    host_step_reverse(amp_region_data(reg), want, sizeof want);
    /* the registration stays while the region is held; another connection
     * of the same process (uid) may use it */
    client_fixture_close();
    client_fixture_open();
    amp_step s = { .size = sizeof(amp_step), .kind = AMP_STEP_REVERSE };
    amp_slice all = { .size = sizeof all, .region = reg, .length = 4096 };
    amp_step_result *r = NULL;
    CLIENT_CHECK_OK(amp_run_region(client_conn, NULL, &s, 1, &all, &all, &r));
    ck_assert_int_eq(memcmp(amp_region_data(reg), want, sizeof want), 0);
    amp_step_results_free(r, 1);
    amp_region_release(reg);
}
END_TEST

START_TEST(refusals)
{
    amp_region *reg = region_new(1000, 1);
    amp_step s = { .size = sizeof(amp_step), .kind = AMP_STEP_REVERSE };
    amp_step_result *r = NULL;
    amp_slice past = { .size = sizeof past, .region = reg, .offset = 900, .length = 101 };
    amp_slice all = { .size = sizeof all, .region = reg, .length = 1000 };
    amp_slice small = { .size = sizeof small, .region = reg, .length = 999 };
    ck_assert_int_eq(amp_run_region(client_conn, NULL, &s, 1, &past, &all, &r), AMP_EINVAL);
    ck_assert_ptr_nonnull(strstr(amp_last_message(client_conn), "past the region's end"));
    /* the daemon checks that the output fits */
    ck_assert_int_eq(amp_run_region(client_conn, NULL, &s, 1, &all, &small, &r), AMP_EOUTOFRANGE);
    ck_assert_int_eq(amp_last_grpc_status(client_conn), 11);   /* OUT_OF_RANGE, raw */
    ck_assert_ptr_nonnull(strstr(amp_last_message(client_conn), "output_region"));
    ck_assert_ptr_null(r);
    ck_assert_int_eq(amp_run_region(client_conn, NULL, &s, 1, &all, NULL, &r), AMP_EINVAL);
    ck_assert_ptr_nonnull(strstr(amp_last_message(client_conn), "out must name a region"));

    /* --max-regions: this connection holds one already */
    amp_region *more[4] = { NULL };
    for (int i = 0; i < 3; i++)
        more[i] = region_new(64, 0);
    ck_assert_int_eq(amp_region_create(client_conn, 64, &more[3]), AMP_EEXHAUSTED);
    ck_assert_ptr_nonnull(strstr(amp_last_message(client_conn), "--max-regions"));
    ck_assert_ptr_null(more[3]);
    amp_region_release(more[0]);
    more[0] = region_new(64, 0);   /* a release makes room */
    for (int i = 0; i < 3; i++)
        amp_region_release(more[i]);
    ck_assert_int_eq(amp_region_create(client_conn, 0, &more[0]), AMP_EINVAL);
    amp_region_release(reg);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_region");
    const TTest *const tests[] = {
        every_kind,
        transform_in_place,
        float_histogram_and_fill,
        outlives_close,
        refusals,
        NULL,
    };
    TCase *tc = check_run_case(s, "region", tests);
    tcase_add_checked_fixture(tc, client_fixture_open, client_fixture_close);
    const char *args[] = { "--max-regions", REGION_TEST_MAX_REGIONS, NULL };
    return client_fixture_run(s, args);
}
