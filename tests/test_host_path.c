/* SPDX-License-Identifier: MIT */
/* test_host_path.c: the host path (daemon/host.c) against the device path,
 * through a real ampd and libampclient. Every job kind and its edge cases
 * (sizes 0, 1, 15, 16, 17 and odd tails; every transform op and sub-ranges;
 * histogram edges, infinities and NaNs, clamping; fills that wrap) run twice:
 * with no device named (small jobs: the host path, whose replies name the
 * device "host") and on device 0, the default device (its kernels, "0: ...").
 * The two must agree byte for byte, and a job the device refuses must be
 * refused the same way by the host path. The daemon runs with
 * --host-max-bytes 4096, so a larger job with no device named goes to the
 * device; ampd must exit 0 (under ASan: nothing leaked). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "client_fixture.h"

#define HOST_MAX 4096
#define HOST_MAX_TEXT "4096"

static const size_t sizes[] = { 0, 1, 15, 16, 17, 1027 };
#define NSIZES (sizeof sizes / sizeof sizes[0])

/* Runs steps over in on the host path (no device named) and on device 0,
 * and fails unless both succeed with the same results, or both fail with
 * the same status and message. Returns the status. */
static int same_both_ways(const amp_step *steps, size_t n, const uint8_t *in, size_t len)
{
    amp_step_result *host = NULL, *dev = NULL;
    int rc_host = amp_pipeline(client_conn, NULL, steps, n, in, len, &host);
    char msg_host[512], device[128];
    snprintf(msg_host, sizeof msg_host, "%s", amp_last_message(client_conn));
    snprintf(device, sizeof device, "%s", amp_last_device(client_conn));
    const amp_opts on_dev = { .size = sizeof(amp_opts), .device = "0" };
    int rc_dev = amp_pipeline(client_conn, &on_dev, steps, n, in, len, &dev);
    ck_assert_msg(rc_host == rc_dev, "host: %s (%s); device: %s (%s)", amp_strerror(rc_host),
                  msg_host, amp_strerror(rc_dev), amp_last_message(client_conn));
    if (rc_host != 0) {
        ck_assert_str_eq(msg_host, amp_last_message(client_conn));
        return rc_host;
    }
    ck_assert_str_eq(device, "host");
    ck_assert_ptr_nonnull(strchr(amp_last_device(client_conn), ':'));
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_eq(host[i].len, dev[i].len);
        if (host[i].len)
            ck_assert_msg(memcmp(host[i].data, dev[i].data, host[i].len) == 0,
                          "step %zu: host and device differ", i);
        ck_assert_uint_eq(host[i].hist.bins, dev[i].hist.bins);
        for (uint32_t b = 0; b < host[i].hist.bins; b++)
            ck_assert_uint_eq(host[i].hist.counts[b], dev[i].hist.counts[b]);
        ck_assert_uint_eq(host[i].hist.below, dev[i].hist.below);
        ck_assert_uint_eq(host[i].hist.above, dev[i].hist.above);
        ck_assert_uint_eq(host[i].hist.nan, dev[i].hist.nan);
    }
    amp_step_results_free(host, n);
    amp_step_results_free(dev, n);
    return 0;
}

START_TEST(reverse_every_size)
{
    for (size_t k = 0; k < NSIZES; k++) {
        uint8_t *in = client_fixture_random(sizes[k], k + 1);
        amp_step s = { .size = sizeof(amp_step), .kind = AMP_STEP_REVERSE };
        ck_assert_int_eq(same_both_ways(&s, 1, in, sizes[k]), 0);
        free(in);
    }
}
END_TEST

START_TEST(transform_every_op_and_range)
{
    uint8_t table[256];
    for (int i = 0; i < 256; i++)
        table[i] = (uint8_t)(i * 37 + 11);
    static const amp_op ops[] = { AMP_OP_ADD, AMP_OP_XOR, AMP_OP_AND,
                                  AMP_OP_OR,  AMP_OP_SET, AMP_OP_MAP };
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        for (size_t k = 0; k < NSIZES; k++) {
            size_t n = sizes[k];
            uint8_t *in = client_fixture_random(n, 100 + k);
            amp_step s = { .size = sizeof(amp_step), .kind = AMP_STEP_TRANSFORM };
            s.transform.op = ops[o];
            s.transform.value = 0x5b;
            s.transform.table = table;
            s.transform.table_len = sizeof table;
            ck_assert_int_eq(same_both_ways(&s, 1, in, n), 0);
            if (n > 2) {   /* a sub-range: the bytes around it stay */
                s.transform.offset = 1;
                s.transform.length = n - 2;
                s.transform.has_length = 1;
                ck_assert_int_eq(same_both_ways(&s, 1, in, n), 0);
            }
            free(in);
        }
    }
}
END_TEST

START_TEST(histogram_bytes_and_typed_edges)
{
    for (size_t k = 0; k < NSIZES; k++) {
        uint8_t *in = client_fixture_random(sizes[k], 200 + k);
        amp_step s = { .size = sizeof(amp_step), .kind = AMP_STEP_HISTOGRAM };
        s.hist.type = AMP_TYPE_UINT8;
        s.hist.bins = 256;
        ck_assert_int_eq(same_both_ways(&s, 1, in, sizes[k]), 0);
        free(in);
    }
    /* Floats at and around the edges, infinities and NaNs. */
    const float f[] = { -3.5f, -3.5000002f, 100.25f, 100.24999f, 0.0f, -0.0f, 42.0f,
                        INFINITY, -INFINITY, NAN, 1e30f, -1e30f, 7.0f, 99.9f, -3.0f, 50.125f, 3.25f };
    const int32_t i32[] = { -4, -3, 0, 99, 100, 101, INT32_MIN, INT32_MAX, 7, 42, -1, 13, 77 };
    const uint32_t u32[] = { 0, 3, 4, 99, 100, 101, UINT32_MAX, 50, 7, 8, 9, 10, 2000000000u };
    struct {
        amp_type type;
        const void *data;
        size_t len;
    } typed[] = {
        { AMP_TYPE_FLOAT32, f, sizeof f },
        { AMP_TYPE_INT32, i32, sizeof i32 },
        { AMP_TYPE_UINT32, u32, sizeof u32 },
    };
    for (size_t t = 0; t < sizeof typed / sizeof typed[0]; t++) {
        for (int clamp = 0; clamp <= 1; clamp++) {
            amp_step s = { .size = sizeof(amp_step), .kind = AMP_STEP_HISTOGRAM };
            s.hist.type = typed[t].type;
            s.hist.bins = 7;
            s.hist.lo = -3.5;
            s.hist.hi = 100.25;
            s.hist.clamp = clamp;
            ck_assert_int_eq(same_both_ways(&s, 1, typed[t].data, typed[t].len), 0);
        }
    }
}
END_TEST

START_TEST(fill_every_type)
{
    static const amp_type types[] = { AMP_TYPE_INT32, AMP_TYPE_UINT32, AMP_TYPE_INT64,
                                      AMP_TYPE_FLOAT32 };
    static const uint64_t counts[] = { 0, 1, 17, 500 };
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
            amp_step s = { .size = sizeof(amp_step), .kind = AMP_STEP_FILL };
            s.fill.type = types[t];
            s.fill.count = counts[k];
            s.fill.start = INT64_MAX - 3;   /* wraps in every integer width */
            s.fill.step = 977;
            s.fill.start_f = -1.5f;
            s.fill.step_f = 0.1f;
            s.fill.tile = k % 2 ? 32 : 0;
            ck_assert_int_eq(same_both_ways(&s, 1, NULL, 0), 0);
        }
    }
}
END_TEST

/* Several steps, each reading the last data step's output, in place where
 * the job owns its input. */
START_TEST(pipelines)
{
    uint8_t *in = client_fixture_random(1027, 300);
    amp_step s[4] = { { .size = sizeof(amp_step), .kind = AMP_STEP_TRANSFORM },
                      { .size = sizeof(amp_step), .kind = AMP_STEP_HISTOGRAM },
                      { .size = sizeof(amp_step), .kind = AMP_STEP_REVERSE },
                      { .size = sizeof(amp_step), .kind = AMP_STEP_HISTOGRAM } };
    s[0].transform.op = AMP_OP_XOR;
    s[0].transform.value = 0xa5;
    s[1].hist.type = s[3].hist.type = AMP_TYPE_UINT8;
    s[1].hist.bins = s[3].hist.bins = 256;
    ck_assert_int_eq(same_both_ways(s, 4, in, 1027), 0);
    ck_assert_int_eq(same_both_ways(&s[2], 1, in, 1027), 0);     /* reverse over itself */
    ck_assert_int_eq(same_both_ways(&s[1], 3, in, 1027), 0);     /* hist, reverse, hist */
    free(in);
}
END_TEST

/* What the default device refuses, the host path refuses in the same words. */
START_TEST(refusals_match)
{
    uint8_t in[10] = { 0 };
    amp_step s = { .size = sizeof(amp_step), .kind = AMP_STEP_HISTOGRAM };
    s.hist.type = AMP_TYPE_UINT32;   /* 10 bytes are not whole uint32s */
    s.hist.bins = 4;
    s.hist.lo = 0;
    s.hist.hi = 1;
    ck_assert_int_eq(same_both_ways(&s, 1, in, sizeof in), AMP_EINVAL);
    amp_step f = { .size = sizeof(amp_step), .kind = AMP_STEP_FILL };
    f.fill.type = AMP_TYPE_INT32;
    f.fill.count = 8;
    f.fill.tile = 1u << 30;          /* over any device's work-group limit */
    ck_assert_int_eq(same_both_ways(&f, 1, NULL, 0), AMP_EINVAL);
}
END_TEST

/* Larger than --host-max-bytes, or a device named: a device runs it. */
START_TEST(large_or_named_jobs_use_a_device)
{
    uint8_t *in = client_fixture_random(HOST_MAX + 1, 400);
    void *out;
    size_t n;
    CLIENT_CHECK_OK(amp_reverse(client_conn, NULL, in, HOST_MAX + 1, &out, &n));
    ck_assert_ptr_nonnull(strchr(amp_last_device(client_conn), ':'));
    amp_free(out);
    CLIENT_CHECK_OK(amp_reverse(client_conn, NULL, in, HOST_MAX, &out, &n));
    ck_assert_str_eq(amp_last_device(client_conn), "host");
    amp_free(out);
    const amp_opts cpu = { .size = sizeof(amp_opts), .device = "cpu" };
    CLIENT_CHECK_OK(amp_reverse(client_conn, &cpu, in, 16, &out, &n));
    ck_assert_ptr_nonnull(strchr(amp_last_device(client_conn), ':'));
    amp_free(out);
    amp_fill_params fp = { .type = AMP_TYPE_INT64, .count = HOST_MAX / 8 + 1 };
    CLIENT_CHECK_OK(amp_fill(client_conn, NULL, &fp, &out, &n));
    ck_assert_ptr_nonnull(strchr(amp_last_device(client_conn), ':'));
    amp_free(out);
    free(in);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("host_path");
    const TTest *const tests[] = {
        reverse_every_size,
        transform_every_op_and_range,
        histogram_bytes_and_typed_edges,
        fill_every_type,
        pipelines,
        refusals_match,
        large_or_named_jobs_use_a_device,
        NULL,
    };
    TCase *tc = check_run_case(s, "host_vs_device", tests);
    tcase_set_timeout(tc, 600);
    tcase_add_checked_fixture(tc, client_fixture_open, client_fixture_close);
    static const char *const args[] = { "--host-max-bytes", HOST_MAX_TEXT, NULL };
    return client_fixture_run(s, args);
}
