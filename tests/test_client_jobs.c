/* SPDX-License-Identifier: MIT */
/* test_client_jobs.c: amp_transform, amp_histogram and amp_fill through a
 * real ampd, against small CPU references. This tests the path (encoding,
 * parameters, decoding) for a few cases each; the kernels themselves are
 * tested exhaustively by the test_kernel_* files.
 *
 * Histogram inputs keep clear of bin edges so the reference needs no
 * assumption about how the device rounds.
 */
#include <check.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "amp.h"
#include "client_fixture.h"

/* --- transform ------------------------------------------------------------ */

static uint8_t ref_byte(const amp_transform_params *p, uint8_t b)
{
    switch (p->op) {
    case AMP_OP_ADD: return (uint8_t)(b + p->value);
    case AMP_OP_XOR: return b ^ p->value;
    case AMP_OP_AND: return b & p->value;
    case AMP_OP_OR: return b | p->value;
    case AMP_OP_SET: return p->value;
    case AMP_OP_MAP: return p->table[b];
    }
    return b;
}

static void check_transform(const amp_transform_params *p, size_t n)
{
    uint8_t *in = client_fixture_random(n, (uint32_t)(n + p->op));
    void *out;
    size_t out_len;
    CLIENT_CHECK_OK(amp_transform(client_conn, NULL, p, in, n, &out, &out_len));
    ck_assert_uint_eq(out_len, n);
    uint64_t end = p->has_length ? p->offset + p->length : n;
    const uint8_t *o = out;
    for (size_t i = 0; i < n; i++) {
        uint8_t want = i >= p->offset && i < end ? ref_byte(p, in[i]) : in[i];
        ck_assert_msg(o[i] == want, "op %d byte %zu: %u, want %u", p->op, i, o[i], want);
    }
    amp_free(out);
    free(in);
}

START_TEST(transform_add_wraps_per_byte)
{
    amp_transform_params p = { .op = AMP_OP_ADD, .value = 200 };
    check_transform(&p, 100003);
}
END_TEST

START_TEST(transform_ops_on_sub_ranges)
{
    amp_transform_params p = { .op = AMP_OP_XOR, .value = 0x5a, .offset = 3, .length = 1000,
                               .has_length = 1 };
    check_transform(&p, 5000);
    p = (amp_transform_params){ .op = AMP_OP_AND, .value = 0x0f, .offset = 1 };
    check_transform(&p, 17);
    p = (amp_transform_params){ .op = AMP_OP_OR, .value = 0x80, .length = 0, .has_length = 1 };
    check_transform(&p, 33);
    p = (amp_transform_params){ .op = AMP_OP_SET, .value = 7, .offset = 64, .length = 64,
                                .has_length = 1 };
    check_transform(&p, 4096);
}
END_TEST

START_TEST(transform_map_table)
{
    uint8_t table[256];
    for (int i = 0; i < 256; i++)
        table[i] = (uint8_t)((255 - i) ^ 0x33);
    amp_transform_params p = { .op = AMP_OP_MAP, .table = table, .table_len = 256, .offset = 10 };
    check_transform(&p, 70001);
}
END_TEST

/* --- histogram ------------------------------------------------------------ */

START_TEST(hist_bytes_skewed)
{
    size_t n = (1u << 20) + 3, same = 65536;
    uint8_t *in = client_fixture_random(n + same, 99);
    memset(in + n, 'A', same); /* adversarial: one bin takes a lot */
    uint64_t ref[256] = { 0 };
    for (size_t i = 0; i < n + same; i++)
        ref[in[i]]++;
    amp_hist_params p = { .type = AMP_TYPE_UINT8 };
    amp_hist h;
    CLIENT_CHECK_OK(amp_histogram(client_conn, NULL, &p, in, n + same, &h));
    ck_assert_uint_eq(h.bins, 256);
    for (int b = 0; b < 256; b++)
        ck_assert_msg(h.counts[b] == ref[b], "bin %d: %llu, want %llu", b,
                      (unsigned long long)h.counts[b], (unsigned long long)ref[b]);
    ck_assert_uint_eq(h.below + h.above + h.nan, 0);
    amp_hist_free(&h);
    free(in);
}
END_TEST

/* int32 values -50..149 (each bin's values are whole numbers inside it). */
static void check_hist_int32(int clamp)
{
    enum { N = 10007, BINS = 10 };
    int32_t *v = malloc(N * sizeof *v);
    uint64_t ref[BINS] = { 0 }, below = 0, above = 0;
    for (int i = 0; i < N; i++) {
        v[i] = i % 200 - 50;
        if (v[i] < 0)
            below++;
        else if (v[i] >= 100)
            above++;
        else
            ref[v[i] / 10]++;
    }
    if (clamp) {
        ref[0] += below;
        ref[BINS - 1] += above;
    }
    amp_hist_params p = { .type = AMP_TYPE_INT32, .bins = BINS, .lo = 0, .hi = 100,
                          .clamp = clamp };
    amp_hist h;
    CLIENT_CHECK_OK(amp_histogram(client_conn, NULL, &p, v, N * sizeof *v, &h));
    ck_assert_uint_eq(h.bins, BINS);
    for (int b = 0; b < BINS; b++)
        ck_assert_msg(h.counts[b] == ref[b], "clamp %d bin %d: %llu, want %llu", clamp, b,
                      (unsigned long long)h.counts[b], (unsigned long long)ref[b]);
    ck_assert_uint_eq(h.below, below);
    ck_assert_uint_eq(h.above, above);
    ck_assert_uint_eq(h.nan, 0);
    amp_hist_free(&h);
    free(v);
}

START_TEST(hist_int32_drop_and_clamp)
{
    check_hist_int32(0);
    check_hist_int32(1);
}
END_TEST

START_TEST(hist_uint32_high_values)
{
    /* Four bins of 2^30 over [0, 2^32); values sit mid-bin, far from edges. */
    enum { N = 4000, BINS = 4 };
    uint32_t *v = malloc(N * sizeof *v);
    uint64_t ref[BINS] = { 0 };
    for (uint32_t i = 0; i < N; i++) {
        uint32_t bin = (i * 7) % BINS;
        v[i] = (bin << 30) + (1u << 20) + i * 1000u;
        ref[bin]++;
    }
    amp_hist_params p = { .type = AMP_TYPE_UINT32, .bins = BINS, .lo = 0, .hi = 4294967296.0 };
    amp_hist h;
    CLIENT_CHECK_OK(amp_histogram(client_conn, NULL, &p, v, N * sizeof *v, &h));
    for (int b = 0; b < BINS; b++)
        ck_assert_uint_eq(h.counts[b], ref[b]);
    ck_assert_uint_eq(h.below + h.above + h.nan, 0);
    amp_hist_free(&h);
    free(v);
}
END_TEST

START_TEST(hist_float32_with_nan)
{
    enum { N = 1000, BINS = 16 };
    float v[N + 3];
    uint64_t ref[BINS] = { 0 };
    for (int i = 0; i < N; i++) {
        v[i] = (float)(i % 64) / 4.0f + 0.125f; /* 0.125 .. 15.875 */
        ref[(int)v[i]]++;
    }
    v[N] = NAN;
    v[N + 1] = -1.0f;
    v[N + 2] = 16.0f; /* hi itself is above */
    amp_hist_params p = { .type = AMP_TYPE_FLOAT32, .bins = BINS, .lo = 0, .hi = 16 };
    amp_hist h;
    CLIENT_CHECK_OK(amp_histogram(client_conn, NULL, &p, v, sizeof v, &h));
    for (int b = 0; b < BINS; b++)
        ck_assert_uint_eq(h.counts[b], ref[b]);
    ck_assert_uint_eq(h.nan, 1);
    ck_assert_uint_eq(h.below, 1);
    ck_assert_uint_eq(h.above, 1);
    amp_hist_free(&h);
}
END_TEST

/* --- fill ------------------------------------------------------------------ */

static void *fill_ok(const amp_fill_params *p, size_t elem)
{
    void *out;
    size_t n;
    CLIENT_CHECK_OK(amp_fill(client_conn, NULL, p, &out, &n));
    ck_assert_uint_eq(n, p->count * elem);
    return out;
}

START_TEST(fill_int32_prime_count_with_tile)
{
    amp_fill_params p = { .type = AMP_TYPE_INT32, .count = 1009, .tile = 64, .start = 5,
                          .step = 3 };
    int32_t *o = fill_ok(&p, 4);
    for (int32_t k = 0; k < 1009; k++)
        ck_assert_int_eq(o[k], 5 + 3 * k);
    amp_free(o);
    p.tile = 0;
    p.start = -7;
    p.step = -2;
    p.count = 1000;
    o = fill_ok(&p, 4);
    for (int32_t k = 0; k < 1000; k++)
        ck_assert_int_eq(o[k], -7 - 2 * k);
    amp_free(o);
}
END_TEST

START_TEST(fill_uint32_wraps)
{
    amp_fill_params p = { .type = AMP_TYPE_UINT32, .count = 20, .start = 4294967290LL,
                          .step = 1 };
    uint32_t *o = fill_ok(&p, 4);
    for (uint32_t k = 0; k < 20; k++)
        ck_assert_uint_eq(o[k], (uint32_t)(4294967290u + k));
    amp_free(o);
}
END_TEST

START_TEST(fill_int64_and_float32)
{
    amp_fill_params p = { .type = AMP_TYPE_INT64, .count = 777, .start = -10,
                          .step = 1000000000000LL };
    int64_t *o = fill_ok(&p, 8);
    for (int64_t k = 0; k < 777; k++)
        ck_assert_int_eq(o[k], -10 + k * 1000000000000LL);
    amp_free(o);
    amp_fill_params pf = { .type = AMP_TYPE_FLOAT32, .count = 1000, .start_f = 1.25f,
                           .step_f = 0.5f };
    float *f = fill_ok(&pf, 4);
    for (int k = 0; k < 1000; k++)
        ck_assert_msg(f[k] == fmaf((float)k, 0.5f, 1.25f), "k %d: %g", k, (double)f[k]);
    amp_free(f);
}
END_TEST

START_TEST(fill_empty)
{
    amp_fill_params p = { .type = AMP_TYPE_INT32, .count = 0 };
    void *out = NULL;
    size_t n = 1;
    CLIENT_CHECK_OK(amp_fill(client_conn, NULL, &p, &out, &n));
    ck_assert_uint_eq(n, 0);
    amp_free(out);
}
END_TEST

/* Calls answer the same whether the connection polls for replies or
 * sleeps on them (amp_connect_opts.busy_poll_us): never, the default, the
 * longest, and a layout from before the field (the default). */
START_TEST(busy_poll_settings_same_results)
{
    static const struct {
        int us;
        size_t size;
    } cases[] = {
        {-1, sizeof(amp_connect_opts)},
        {0, sizeof(amp_connect_opts)},
        {AMP_BUSY_POLL_MAX_US, sizeof(amp_connect_opts)},
        {AMP_BUSY_POLL_MAX_US, offsetof(amp_connect_opts, busy_poll_us)},
    };
    size_t big = 1 << 20;
    uint8_t *in = malloc(big);
    for (size_t i = 0; i < big; i++)
        in[i] = (uint8_t)(i * 7 + 3);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        amp_connect_opts co = { .size = cases[k].size, .busy_poll_us = cases[k].us };
        amp_conn *c;
        ck_assert_int_eq(amp_connect_with(client_fixture_address(), &co, &c), 0);
        for (int i = 0; i < 200; i++) {
            uint8_t tiny[3] = {(uint8_t)i, 1, 2};
            void *out;
            size_t n;
            ck_assert_int_eq(amp_reverse(c, NULL, tiny, sizeof tiny, &out, &n), 0);
            ck_assert_uint_eq(n, 3);
            ck_assert_uint_eq(((uint8_t *)out)[2], (uint8_t)i);
            amp_free(out);
        }
        amp_transform_params p = { .op = AMP_OP_XOR, .value = 0x5a };
        void *out;
        size_t n;
        ck_assert_int_eq(amp_transform(c, NULL, &p, in, big, &out, &n), 0);
        ck_assert_uint_eq(n, big);
        size_t bad = 0;
        while (bad < big && ((uint8_t *)out)[bad] == (in[bad] ^ 0x5a))
            bad++;
        ck_assert_msg(bad == big, "busy_poll_us %d: byte %zu wrong", cases[k].us, bad);
        amp_free(out);
        amp_close(c);
    }
    free(in);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_jobs");
    const TTest *const tests[] = {
        transform_add_wraps_per_byte,
        transform_ops_on_sub_ranges,
        transform_map_table,
        hist_bytes_skewed,
        hist_int32_drop_and_clamp,
        hist_uint32_high_values,
        hist_float32_with_nan,
        fill_int32_prime_count_with_tile,
        fill_uint32_wraps,
        fill_int64_and_float32,
        fill_empty,
        busy_poll_settings_same_results,
        NULL,
    };
    TCase *tc = check_run_case(s, "jobs", tests);
    tcase_add_checked_fixture(tc, client_fixture_open, client_fixture_close);
    return client_fixture_run(s, NULL);
}
