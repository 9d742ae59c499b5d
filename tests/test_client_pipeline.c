/* SPDX-License-Identifier: MIT */
/* test_client_pipeline.c: amp_pipeline through a real ampd. Every step's
 * result is checked against the CPU reference (tests/support/host_step.h):
 * the intermediate bytes of data steps and the histograms, a histogram in
 * the middle that leaves the data alone, a fill feeding a histogram; and
 * bad steps refused with AMP_EINVAL and a message naming the step, locally
 * (enum values, NULL) and by the daemon (values it validates).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "amp.h"
#include "host_step.h"
#include "client_fixture.h"

/* The reference's view of the client's parameters. */
static struct transform_params ref_transform(const amp_transform_params *p, size_t n)
{
    static const enum transform_op ops[] = { [AMP_OP_ADD] = XFORM_ADD, [AMP_OP_XOR] = XFORM_XOR,
                                             [AMP_OP_AND] = XFORM_AND, [AMP_OP_OR] = XFORM_OR,
                                             [AMP_OP_SET] = XFORM_SET, [AMP_OP_MAP] = XFORM_MAP };
    struct transform_params t;
    memset(&t, 0, sizeof t);
    t.op = ops[p->op];
    t.value = p->value;
    if (p->table)
        memcpy(t.table, p->table, sizeof t.table);
    t.offset = p->offset;
    t.length = p->has_length ? p->length : n - p->offset;
    return t;
}

static struct hist_params ref_hist(const amp_hist_params *p)
{
    static const enum elem_type types[] = { [AMP_TYPE_UINT8] = ELEM_U8,
                                            [AMP_TYPE_UINT32] = ELEM_U32,
                                            [AMP_TYPE_INT32] = ELEM_I32,
                                            [AMP_TYPE_FLOAT32] = ELEM_F32 };
    struct hist_params h = { .type = types[p->type], .bins = p->type == AMP_TYPE_UINT8 ? 256 : p->bins,
                             .lo = p->lo, .hi = p->hi, .clamp = p->clamp != 0 };
    return h;
}

static void expect_bytes(const amp_step_result *r, const uint8_t *want, size_t n, const char *what)
{
    ck_assert_ptr_nonnull(r->data);
    ck_assert_uint_eq(r->len, n);
    const uint8_t *got = r->data;
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(got[i] == want[i], "%s: byte %zu is %u, want %u", what, i, got[i], want[i]);
    ck_assert_ptr_null(r->hist.counts);
}

START_TEST(transform_then_histogram)
{
    size_t n = (1u << 20) + 77;
    uint8_t *in = client_fixture_random(n, 5);
    amp_step steps[2];
    memset(steps, 0, sizeof steps);
    steps[0].size = sizeof steps[0];
    steps[0].kind = AMP_STEP_TRANSFORM;
    steps[0].transform = (amp_transform_params){ .op = AMP_OP_ADD, .value = 3, .offset = 1000,
                                                 .length = n - 2000, .has_length = 1 };
    steps[1].size = sizeof steps[1];
    steps[1].kind = AMP_STEP_HISTOGRAM;
    steps[1].hist = (amp_hist_params){ .type = AMP_TYPE_UINT8 };

    amp_step_result *r = NULL;
    CLIENT_CHECK_OK(amp_pipeline(client_conn, NULL, steps, 2, in, n, &r));
    ck_assert_ptr_nonnull(r);
    ck_assert_str_ne(amp_last_device(client_conn), "");

    uint8_t *want = malloc(n);
    memcpy(want, in, n);
    struct transform_params tp = ref_transform(&steps[0].transform, n);
    host_step_transform(&tp, want, n);
    ck_assert_int_ne(memcmp(want, in, n), 0); /* the step changed something */
    expect_bytes(&r[0], want, n, "transform step");
    ck_assert_ptr_null(r[1].data);
    struct hist_params hp = ref_hist(&steps[1].hist);
    client_fixture_expect_hist(&r[1].hist, &hp, want, n);
    amp_step_results_free(r, 2);
    free(want);
    free(in);
}
END_TEST

/* map, then a typed histogram in the middle (the data passes through it
 * unchanged), then reverse. */
START_TEST(histogram_between_data_steps)
{
    size_t n = 65536 * 4 + 12;
    uint8_t *in = client_fixture_random(n, 77);
    uint8_t table[256];
    for (int i = 0; i < 256; i++)
        table[i] = (uint8_t)(i * 7 + 1);
    amp_step steps[3];
    memset(steps, 0, sizeof steps);
    steps[0].size = sizeof steps[0];
    steps[0].kind = AMP_STEP_TRANSFORM;
    steps[0].transform = (amp_transform_params){ .op = AMP_OP_MAP, .table = table,
                                                 .table_len = 256 };
    steps[1].size = sizeof steps[1];
    steps[1].kind = AMP_STEP_HISTOGRAM;
    steps[1].hist = (amp_hist_params){ .type = AMP_TYPE_UINT32, .bins = 37, .lo = 1e9,
                                       .hi = 3.5e9 };
    steps[2].size = sizeof steps[2];
    steps[2].kind = AMP_STEP_REVERSE;

    amp_step_result *r = NULL;
    CLIENT_CHECK_OK(amp_pipeline(client_conn, NULL, steps, 3, in, n, &r));
    uint8_t *mapped = malloc(n), *rev = malloc(n);
    memcpy(mapped, in, n);
    struct transform_params tp = ref_transform(&steps[0].transform, n);
    host_step_transform(&tp, mapped, n);
    expect_bytes(&r[0], mapped, n, "map step");
    struct hist_params hp = ref_hist(&steps[1].hist);
    client_fixture_expect_hist(&r[1].hist, &hp, mapped, n - n % 4);
    ck_assert_uint_gt(r[1].hist.below + r[1].hist.above, 0); /* the range cuts both ends */
    host_step_reverse(mapped, rev, n);
    expect_bytes(&r[2], rev, n, "reverse step");
    amp_step_results_free(r, 3);
    free(mapped);
    free(rev);
    free(in);
}
END_TEST

START_TEST(fill_feeds_histogram)
{
    amp_step steps[2];
    memset(steps, 0, sizeof steps);
    steps[0].size = sizeof steps[0];
    steps[0].kind = AMP_STEP_FILL;
    steps[0].fill = (amp_fill_params){ .type = AMP_TYPE_INT32, .count = 10000, .start = -5000,
                                       .step = 1 };
    steps[1].size = sizeof steps[1];
    steps[1].kind = AMP_STEP_HISTOGRAM;
    steps[1].hist = (amp_hist_params){ .type = AMP_TYPE_INT32, .bins = 10, .lo = -4000,
                                       .hi = 4000 };
    amp_step_result *r = NULL;
    CLIENT_CHECK_OK(amp_pipeline(client_conn, NULL, steps, 2, NULL, 0, &r));
    ck_assert_uint_eq(r[0].len, 10000 * 4);
    const uint8_t *b = r[0].data;
    for (int k = 0; k < 10000; k++) {
        int32_t v;
        memcpy(&v, b + 4 * k, 4);
        ck_assert_int_eq(v, -5000 + k);
    }
    ck_assert_uint_eq(r[1].hist.bins, 10);
    for (int i = 0; i < 10; i++)
        ck_assert_uint_eq(r[1].hist.counts[i], 800);
    ck_assert_uint_eq(r[1].hist.below, 1000);
    ck_assert_uint_eq(r[1].hist.above, 1000);
    amp_step_results_free(r, 2);
}
END_TEST

/* --- refusals ---------------------------------------------------------------- */

/* r is the results pointer after the call (read it after the call returns). */
static void expect_einval(int rc, const char *needle, amp_step_result *const *r)
{
    ck_assert_msg(rc == AMP_EINVAL, "got %s (%s), want AMP_EINVAL", amp_strerror(rc),
                  amp_last_message(client_conn));
    ck_assert_msg(strstr(amp_last_message(client_conn), needle), "message '%s' lacks '%s'",
                  amp_last_message(client_conn), needle);
    ck_assert_ptr_null(*r);
}

START_TEST(bad_steps_refused_locally)
{
    amp_step steps[2];
    memset(steps, 0, sizeof steps);
    steps[0].size = sizeof steps[0];
    steps[0].kind = AMP_STEP_REVERSE;
    steps[1].kind = (amp_step_kind)99;
    amp_step_result *r = (amp_step_result *)&steps; /* must be cleared */
    expect_einval(amp_pipeline(client_conn, NULL, steps, 2, "ab", 2, &r), "steps[1].size", &r);
    steps[1].size = sizeof steps[1];
    expect_einval(amp_pipeline(client_conn, NULL, steps, 2, "ab", 2, &r), "steps[1].kind", &r);
    steps[0].size = 0;
    expect_einval(amp_pipeline(client_conn, NULL, steps, 2, "ab", 2, &r), "steps[0].size", &r);
    steps[0].size = sizeof steps[0];
    steps[1].kind = AMP_STEP_TRANSFORM;
    steps[1].transform.op = (amp_op)0;
    expect_einval(amp_pipeline(client_conn, NULL, steps, 2, "ab", 2, &r), "steps[1].transform.op",
                  &r);
    steps[1].transform = (amp_transform_params){ .op = AMP_OP_MAP };
    expect_einval(amp_pipeline(client_conn, NULL, steps, 2, "ab", 2, &r),
                  "steps[1].transform.table", &r);
    steps[0].size = sizeof steps[0];
    steps[0].kind = AMP_STEP_HISTOGRAM;
    steps[0].hist.type = (amp_type)42;
    expect_einval(amp_pipeline(client_conn, NULL, steps, 2, "ab", 2, &r), "steps[0].histogram.type",
                  &r);
    expect_einval(amp_pipeline(client_conn, NULL, steps, 0, "ab", 2, &r), "nsteps", &r);
    expect_einval(amp_pipeline(client_conn, NULL, NULL, 2, "ab", 2, &r), "steps", &r);
    expect_einval(amp_pipeline(client_conn, NULL, steps, 1, NULL, 2, &r), "in", &r);
    ck_assert_int_eq(amp_pipeline(client_conn, NULL, steps, 1, "ab", 2, NULL), AMP_EINVAL);
    ck_assert_int_eq(amp_pipeline(NULL, NULL, steps, 1, "ab", 2, &r), AMP_EINVAL);
}
END_TEST

START_TEST(bad_steps_refused_by_daemon)
{
    amp_step steps[3];
    memset(steps, 0, sizeof steps);
    steps[0].size = sizeof steps[0];
    steps[0].kind = AMP_STEP_REVERSE;
    steps[1].size = sizeof steps[1];
    steps[1].kind = AMP_STEP_HISTOGRAM;
    steps[1].hist = (amp_hist_params){ .type = AMP_TYPE_FLOAT32, .bins = 8, .lo = 2, .hi = 1 };
    steps[2].size = sizeof steps[2];
    steps[2].kind = AMP_STEP_REVERSE;
    amp_step_result *r = NULL;
    expect_einval(amp_pipeline(client_conn, NULL, steps, 3, "abcdefgh", 8, &r),
                  "steps[1].histogram", &r);
    steps[1].size = sizeof steps[1];
    steps[1].kind = AMP_STEP_TRANSFORM;
    steps[1].transform = (amp_transform_params){ .op = AMP_OP_ADD, .offset = 9 };
    expect_einval(amp_pipeline(client_conn, NULL, steps, 3, "abcdefgh", 8, &r),
                  "steps[1].transform", &r);
    /* The connection is still good. */
    steps[1].transform.offset = 2;
    steps[1].transform.value = 1;
    CLIENT_CHECK_OK(amp_pipeline(client_conn, NULL, steps, 3, "abcdefgh", 8, &r));
    ck_assert_mem_eq(r[0].data, "hgfedcba", 8);
    ck_assert_mem_eq(r[1].data, "hggfedcb", 8); /* bytes 2.. plus one */
    ck_assert_mem_eq(r[2].data, "bcdefggh", 8);
    amp_step_results_free(r, 3);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_pipeline");
    const TTest *const tests[] = {
        transform_then_histogram,
        histogram_between_data_steps,
        fill_feeds_histogram,
        bad_steps_refused_locally,
        bad_steps_refused_by_daemon,
        NULL,
    };
    TCase *tc = check_run_case(s, "pipeline", tests);
    tcase_add_checked_fixture(tc, client_fixture_open, client_fixture_close);
    return client_fixture_run(s, NULL);
}
