/* SPDX-License-Identifier: MIT */
/* test_kernel_hist.c: histograms on the default device against
 * host_step_hist, with every kernel shape (the device's own and, through
 * dev_set_shape_for_test, the other one, so a CPU-only host runs the GPU
 * kernels too): random and all-equal bytes, values on bin edges, out of
 * range (drop and clamp), NaN floats, int32 negatives, a million bins,
 * the launch-splitting path, and the refusals. Bytes on the GPU shape run
 * both 256-bin GPU kernels (hist256_local and hist256_bytes). N-bin data
 * large enough for histn_rows' 256-element blocks (CPU shape) comes in
 * shapes aimed at them: blocks of one value next to mixed ones, one odd
 * element at every position of a block, two values alternating, lengths
 * around block and vector multiples, launches that start mid-input, and
 * integer thresholds at and beyond the ends of uint32 and int32. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "host_step.h"
#include "dev_fixture.h"
#include "dev_internal.h"
#include "op.h"

static struct hist_params byte_params(void)
{
    struct hist_params p;
    memset(&p, 0, sizeof p);
    p.type = ELEM_U8;
    p.bins = 256;
    return p;
}

static struct hist_params n_params(enum elem_type t, uint32_t bins, double lo, double hi,
                                   bool clamp)
{
    struct hist_params p = {.type = t, .bins = bins, .lo = lo, .hi = hi, .clamp = clamp};
    return p;
}

/* Runs a histogram of data and returns the job (caller frees). */
static struct job *run_hist(const struct hist_params *p, const void *data, size_t len)
{
    struct job *job = fixture_job(1, data, len);
    job->steps[0].kind = STEP_HISTOGRAM;
    job->steps[0].u.hist = *p;
    fixture_run(job);
    return job;
}

static void expect_hist(const struct hist_result *got, const struct hist_result *want,
                        const char *what)
{
    ck_assert_msg(got->bins == want->bins, "%s: %u bins, want %u", what, got->bins, want->bins);
    ck_assert_ptr_nonnull(got->counts);
    for (uint32_t b = 0; b < want->bins; b++)
        if (got->counts[b] != want->counts[b])
            ck_abort_msg("%s: bin %u holds %llu, want %llu", what, b,
                         (unsigned long long)got->counts[b], (unsigned long long)want->counts[b]);
    ck_assert_msg(got->below == want->below && got->above == want->above &&
                      got->nan == want->nan,
                  "%s: below/above/nan %llu/%llu/%llu, want %llu/%llu/%llu", what,
                  (unsigned long long)got->below, (unsigned long long)got->above,
                  (unsigned long long)got->nan, (unsigned long long)want->below,
                  (unsigned long long)want->above, (unsigned long long)want->nan);
}

/* The kernels a shape runs: for bytes, the GPU shape has three (the
 * device's variants), for N bins two (histn_local, histn_inc, where the
 * bins fit local memory), all checked whichever is the daemon's. */
static const struct {
    enum dev_shape shape;
    enum dev_variant kernel;
    const char *name;
} configs[] = {
    {DEV_SHAPE_CPU, DEV_VARIANT_V1, "cpu shape"},
    {DEV_SHAPE_GPU, DEV_VARIANT_V1, "gpu shape, hist256_local / histn_local"},
    {DEV_SHAPE_GPU, DEV_VARIANT_V2, "gpu shape, hist256_bytes / histn_inc"},
    {DEV_SHAPE_GPU, DEV_VARIANT_V3, "gpu shape, hist256_inc"},
};

/* Checks data against the reference under every kernel shape. */
static void check_hist(const struct hist_params *p, const void *data, size_t len,
                       const char *what)
{
    struct hist_result want;
    ck_assert_int_eq(host_step_hist(p, data, len, &want), 0);
    struct dev *d = fixture_dev();
    enum dev_shape own = d->shape;
    struct dev_variants own_kernels = d->variants, v = d->variants;
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
        /* Other types have two GPU kernels: V3 would repeat V1. */
        if (configs[c].kernel == DEV_VARIANT_V3 && p->type != ELEM_U8)
            continue;
        dev_set_shape_for_test(d, configs[c].shape);
        v.hist256 = configs[c].kernel;
        v.histn = configs[c].kernel == DEV_VARIANT_V2 ? DEV_VARIANT_V2 : DEV_VARIANT_V1;
        /* Every other config launches one group per compute unit (tuned
         * devices may launch fewer than fit): the groups stride further. */
        v.hist256_groups = v.histn_groups = c % 2;
        fixture_variants(v);
        struct job *job = run_hist(p, data, len);
        char label[160];
        snprintf(label, sizeof label, "%s (%s)", what, configs[c].name);
        ck_assert_msg(job->status == STATUS_OK, "%s: %s", label, job->msg);
        expect_hist(&job->results[0].hist, &want, label);
        job_free(job);
    }
    dev_set_shape_for_test(d, own);
    fixture_variants(own_kernels);
    free(want.counts);
}

/* check_hist on data repeated HIST_TILES times, so that every work-item
 * of the CPU shape gets whole 16-element vectors (the vector bin path) and
 * not only the scalar tail that a short array reaches. */
#define HIST_TILES 200
static void check_hist_tiled(const struct hist_params *p, const void *data, size_t len,
                             const char *what)
{
    uint8_t *buf = malloc(len * HIST_TILES);
    ck_assert_ptr_nonnull(buf);
    for (size_t i = 0; i < HIST_TILES; i++)
        memcpy(buf + i * len, data, len);
    check_hist(p, buf, len * HIST_TILES, what);
    free(buf);
}

START_TEST(bytes_random)
{
    const size_t sizes[] = {0, 1, 15, 16, 17, 4095, 65536 + 3, (3u << 20) + 5};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint8_t *buf = malloc(sizes[i] + 1);
        fixture_random(buf, sizes[i], i);
        struct hist_params p = byte_params();
        char what[64];
        snprintf(what, sizeof what, "%zu random bytes", sizes[i]);
        check_hist(&p, buf, sizes[i], what);
        free(buf);
    }
}
END_TEST

START_TEST(bytes_all_equal)
{
    size_t n = (4u << 20) + 9;
    uint8_t *buf = malloc(n);
    memset(buf, 0x41, n);
    struct hist_params p = byte_params();
    check_hist(&p, buf, n, "all 0x41");
    /* Long runs alternating, as text-like data has. */
    for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)((i / 1000) % 3);
    check_hist(&p, buf, n, "runs");
    /* 64-byte blocks of one repeated byte but one (at every position in
     * turn: 97 is odd), next to blocks of one repeated byte, whose count
     * may be added at once. */
    memset(buf, 0x41, n);
    for (size_t i = 0; i < n; i += 97)
        buf[i] = 0x42;
    check_hist(&p, buf, n, "one odd byte in some blocks");
    free(buf);
}
END_TEST

START_TEST(ints_random)
{
    size_t n = 100003;
    uint32_t *buf = malloc(n * 4);
    fixture_random(buf, n * 4, 11);
    struct hist_params pu = n_params(ELEM_U32, 100, 1e9, 3.5e9, false);
    check_hist(&pu, buf, n * 4, "uint32 random");
    struct hist_params pi = n_params(ELEM_I32, 37, -1.5e9, 1e9, true);
    check_hist(&pi, buf, n * 4, "int32 random, clamp");
    struct hist_params whole = n_params(ELEM_U32, 1000, 0, 4294967296.0, false);
    check_hist(&whole, buf, n * 4, "uint32 whole range");
    free(buf);
}
END_TEST

START_TEST(int32_negatives)
{
    int32_t v[2000];
    for (int i = 0; i < 2000; i++)
        v[i] = i - 1000;
    struct hist_params p = n_params(ELEM_I32, 20, -1000, 1000, false);
    struct job *job = run_hist(&p, v, sizeof v);
    ck_assert_msg(job->status == STATUS_OK, "%s", job->msg);
    for (int b = 0; b < 20; b++)
        ck_assert_uint_eq(job->results[0].hist.counts[b], 100);
    ck_assert_uint_eq(job->results[0].hist.below + job->results[0].hist.above, 0);
    job_free(job);
    check_hist(&p, v, sizeof v, "int32 -1000..999");
    struct hist_params off = n_params(ELEM_I32, 7, -10.5, 3.25, false);
    check_hist(&off, v, sizeof v, "int32 fractional bounds");
}
END_TEST

START_TEST(values_on_bin_edges)
{
    /* [0, 10) in 10 bins: k lands in bin k; 10 is above, -1 below. */
    float f[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, -1, 9.999999f, nextafterf(10, 0), 0.5f};
    struct hist_params p = n_params(ELEM_F32, 10, 0, 10, false);
    struct job *job = run_hist(&p, f, sizeof f);
    ck_assert_msg(job->status == STATUS_OK, "%s", job->msg);
    const struct hist_result *h = &job->results[0].hist;
    const uint64_t want[10] = {2, 1, 1, 1, 1, 1, 1, 1, 1, 3};
    for (int b = 0; b < 10; b++)
        ck_assert_msg(h->counts[b] == want[b], "bin %d: %llu", b, (unsigned long long)h->counts[b]);
    ck_assert_uint_eq(h->above, 1);
    ck_assert_uint_eq(h->below, 1);
    job_free(job);
    check_hist(&p, f, sizeof f, "float edges");
    check_hist_tiled(&p, f, sizeof f, "float edges, tiled");

    /* Integer data against a non-integer upper bound: 5 < 5.5 is in. */
    uint32_t u[] = {0, 1, 2, 3, 4, 5, 6};
    struct hist_params pu = n_params(ELEM_U32, 3, 0, 5.5, false);
    job = run_hist(&pu, u, sizeof u);
    ck_assert_msg(job->status == STATUS_OK, "%s", job->msg);
    ck_assert_uint_eq(job->results[0].hist.above, 1);
    ck_assert_uint_eq(job->results[0].hist.counts[0] + job->results[0].hist.counts[1] +
                          job->results[0].hist.counts[2],
                      6);
    job_free(job);
    check_hist(&pu, u, sizeof u, "uint32 fractional hi");
    check_hist_tiled(&pu, u, sizeof u, "uint32 fractional hi, tiled");

    /* Float bounds that are not floats: 0.1 and 0.3 themselves. */
    float g[] = {0.1f, nextafterf(0.1f, 0), nextafterf(0.1f, 1), 0.3f, nextafterf(0.3f, 0),
                 0.2f};
    struct hist_params pg = n_params(ELEM_F32, 4, 0.1, 0.3, false);
    check_hist(&pg, g, sizeof g, "decimal bounds");
    check_hist_tiled(&pg, g, sizeof g, "decimal bounds, tiled");
}
END_TEST

START_TEST(out_of_range_drop_and_clamp)
{
    float f[1000];
    fixture_random(f, sizeof f, 3);
    for (int i = 0; i < 1000; i++)
        f[i] = (float)(i % 50) - 20.0f;   /* -20..29 over [0, 10) */
    struct hist_params drop = n_params(ELEM_F32, 5, 0, 10, false);
    struct job *job = run_hist(&drop, f, sizeof f);
    ck_assert_msg(job->status == STATUS_OK, "%s", job->msg);
    ck_assert_uint_eq(job->results[0].hist.below, 400);
    ck_assert_uint_eq(job->results[0].hist.above, 400);
    ck_assert_uint_eq(job->results[0].hist.counts[0], 40);
    job_free(job);
    struct hist_params clamp = drop;
    clamp.clamp = true;
    job = run_hist(&clamp, f, sizeof f);
    ck_assert_msg(job->status == STATUS_OK, "%s", job->msg);
    ck_assert_uint_eq(job->results[0].hist.below, 400);
    ck_assert_uint_eq(job->results[0].hist.above, 400);
    ck_assert_uint_eq(job->results[0].hist.counts[0], 440);
    ck_assert_uint_eq(job->results[0].hist.counts[4], 440);
    job_free(job);
    check_hist(&drop, f, sizeof f, "drop");
    check_hist(&clamp, f, sizeof f, "clamp");
}
END_TEST

START_TEST(nan_and_infinities)
{
    float f[] = {NAN, -NAN, INFINITY, -INFINITY, 1.0f, FLT_MAX, -FLT_MAX, 0.0f, -0.0f,
                 FLT_MIN, 1e-45f};
    struct hist_params p = n_params(ELEM_F32, 8, -1, 1, true);
    struct job *job = run_hist(&p, f, sizeof f);
    ck_assert_msg(job->status == STATUS_OK, "%s", job->msg);
    ck_assert_uint_eq(job->results[0].hist.nan, 2);
    ck_assert_uint_eq(job->results[0].hist.above, 3);
    ck_assert_uint_eq(job->results[0].hist.below, 2);
    job_free(job);
    check_hist(&p, f, sizeof f, "nan/inf");
    check_hist_tiled(&p, f, sizeof f, "nan/inf, tiled");
    size_t n = 50001;
    float *r = malloc(n * sizeof *r);
    fixture_random(r, n * sizeof *r, 9);   /* random bits: NaNs, denormals, huge */
    struct hist_params wide = n_params(ELEM_F32, 64, -1e30, 1e30, false);
    check_hist(&wide, r, n * sizeof *r, "random float bits");
    free(r);
}
END_TEST

START_TEST(all_equal_elements)
{
    size_t n = (1u << 20) + 3;
    float *f = malloc(n * sizeof *f);
    for (size_t i = 0; i < n; i++)
        f[i] = 2.5f;
    struct hist_params p = n_params(ELEM_F32, 16, 0, 16, false);
    check_hist(&p, f, n * sizeof *f, "all 2.5");
    free(f);
}
END_TEST

/* Elements i of n uint32: value v(i) as the pattern says, bins of 1 over
 * [0, 64) so that each value is its own slot (64 and up: above). */
enum block_pattern { BP_ALTERNATE, BP_ODD_ONE, BP_BLOCKS_MIXED, BP_RUNS_200 };

static uint32_t block_value(enum block_pattern bp, size_t i, uint32_t rnd)
{
    switch (bp) {
    case BP_ALTERNATE:
        return i % 2 ? 5 : 9;
    case BP_ODD_ONE:   /* 257: the odd one moves through every block position */
        return i % 257 == 0 ? 3 : 60;
    case BP_BLOCKS_MIXED:   /* 256-element blocks: random, one value, random ... */
        return (i / 256) % 3 == 0 ? rnd % 70 : (uint32_t)(i / 256) % 64;
    case BP_RUNS_200:
        return (uint32_t)(i / 200) % 66;
    }
    return 0;
}

START_TEST(ints_blocks)
{
    /* 8 * 256 * 5: every CPU work-item gets exactly 5 blocks; the others
     * leave remainders of whole vectors and a scalar tail. */
    const size_t sizes[] = {255, 256, 257, 8 * 256 * 5, 8 * 256 * 5 + 16 * 7 + 9, 100000 + 13};
    const enum block_pattern pats[] = {BP_ALTERNATE, BP_ODD_ONE, BP_BLOCKS_MIXED, BP_RUNS_200};
    const char *names[] = {"alternating", "odd one", "blocks mixed", "runs of 200"};
    struct hist_params p = n_params(ELEM_U32, 64, 0, 64, false);
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        size_t n = sizes[z];
        uint32_t *u = malloc(n * sizeof *u);
        ck_assert_ptr_nonnull(u);
        fixture_random(u, n * sizeof *u, 31 + z);
        for (size_t k = 0; k < sizeof pats / sizeof pats[0]; k++) {
            uint32_t *v = malloc(n * sizeof *v);
            ck_assert_ptr_nonnull(v);
            for (size_t i = 0; i < n; i++)
                v[i] = block_value(pats[k], i, u[i]);
            char what[96];
            snprintf(what, sizeof what, "%zu uint32, %s", n, names[k]);
            check_hist(&p, v, n * sizeof *v, what);
            free(v);
        }
        free(u);
    }
}
END_TEST

/* Integer thresholds at and beyond the ends of uint32 and int32 (the CPU
 * kernels compare in 32 bits against clamped thresholds): edge values
 * mixed with random ones, enough for whole 256-element blocks per
 * work-item. */
START_TEST(ints_thresholds)
{
    const uint32_t edges[] = {0, 1, 2, 99, 100, 0x7ffffffe, 0x7fffffff, 0x80000000, 0x80000001,
                              0xfffffffe, 0xffffffff, 0xffffff9c, 0xffffff9b};
    const size_t ne = sizeof edges / sizeof edges[0];
    const double u_ranges[][2] = {{0, 4294967296.0}, {-100, 100}, {-10, -1}, {5e9, 6e9},
                                  {0, 5e9}, {2147483647.5, 4294967295.0}, {1, 4294967295.5},
                                  {4294967295.0, 4294967296.0}};
    const double i_ranges[][2] = {{-2147483648.0, 2147483648.0}, {-3e9, 3e9}, {3e9, 4e9},
                                  {-4e9, -3e9}, {-2147483648.5, 2147483647.0}, {-1, 1},
                                  {0, 2147483647.5}, {-100, 100}};
    size_t n = 8 * 256 * 3 + 37;
    uint32_t *v = malloc(n * sizeof *v);
    ck_assert_ptr_nonnull(v);
    fixture_random(v, n * sizeof *v, 51);
    for (size_t i = 0; i < n; i++)
        if (i % 3)
            v[i] = edges[(i * 7) % ne];
    const struct {
        enum elem_type type;
        const char *name;
        const double (*ranges)[2];
        size_t nranges;
    } types[] = {{ELEM_U32, "uint32", u_ranges, sizeof u_ranges / sizeof u_ranges[0]},
                 {ELEM_I32, "int32", i_ranges, sizeof i_ranges / sizeof i_ranges[0]}};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (size_t r = 0; r < types[t].nranges; r++) {
            const double *range = types[t].ranges[r];
            struct hist_params p = n_params(types[t].type, 7, range[0], range[1], r % 2);
            char what[96];
            snprintf(what, sizeof what, "%s edges over [%.1f, %.1f)", types[t].name, range[0],
                     range[1]);
            check_hist(&p, v, n * sizeof *v, what);
        }
    free(v);
}
END_TEST

/* Blocks in launches that start mid-input: 65536 elements per launch
 * (launch_items_max 4096), so each CPU work-item has 32 blocks. */
START_TEST(ints_blocks_split)
{
    struct dev *d = fixture_dev();
    uint64_t saved = d->launch_items_max;
    dev_set_launch_items_max_for_test(d, 4096);
    size_t n = 3 * 65536 + 1000 + 7;
    float *f = malloc(n * sizeof *f);
    ck_assert_ptr_nonnull(f);
    fixture_random(f, n * sizeof *f, 41);
    for (size_t i = 0; i < n; i++)
        if ((i / 256) % 2)
            f[i] = 1.5f;   /* every other block of one value, the rest random bits */
    struct hist_params p = n_params(ELEM_F32, 100, -10, 10, true);
    check_hist(&p, f, n * sizeof *f, "float blocks, split");
    dev_set_launch_items_max_for_test(d, saved);
    free(f);
}
END_TEST

START_TEST(a_million_bins)
{
    size_t n = 300007;
    uint32_t *u = malloc(n * 4);
    fixture_random(u, n * 4, 21);
    for (size_t i = 0; i < n; i++)
        u[i] %= 1200000;
    struct hist_params p = n_params(ELEM_U32, 1000000, 0, 1000000, false);
    check_hist(&p, u, n * 4, "1e6 bins");
    free(u);
}
END_TEST

/* hist256_bytes' 8-bit counters: the kernel is there and takes its
 * 128-item groups here (else op_hist.c would quietly run hist256_local and
 * the checks above would not reach it); one byte value in every position
 * (each work-item's counter of that bin reaches 240 before every flush,
 * and work-item 0's 255 with a 15-byte tail), far more than 255 equal
 * bytes per work-item, and two values alternating by word. */
START_TEST(bytes_kernel_counter_limits)
{
    struct dev *d = fixture_dev();
    /* A device builds the variants it does not serve with only once a
     * test asks for them (fixture_variants): this test may run alone. */
    struct dev_variants bytes = d->variants;
    bytes.hist256 = DEV_VARIANT_V2;
    struct dev_variants own = fixture_variants(bytes);
    cl_kernel k = dev_kernel(d, "hist256_bytes");
    ck_assert_ptr_nonnull(k);
    ck_assert_uint_ge(dev_kernel_wg_max(d, k), 128);
    ck_assert_uint_ge(d->local_mem_size, 256 * 128);
    const size_t sizes[] = {15, 16 * 15 + 15, (4u << 20) + 15, (4u << 20) + 16};
    const uint8_t values[] = {0x00, 0xff, 0x80};
    struct hist_params p = byte_params();
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint8_t *buf = malloc(sizes[i]);
        ck_assert_ptr_nonnull(buf);
        for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
            memset(buf, values[v], sizes[i]);
            char what[64];
            snprintf(what, sizeof what, "%zu bytes of %#x", sizes[i], values[v]);
            check_hist(&p, buf, sizes[i], what);
        }
        for (size_t j = 0; j < sizes[i]; j++)
            buf[j] = (j / 16) % 2 ? 0x7f : 0x01;
        check_hist(&p, buf, sizes[i], "two values by word");
        free(buf);
    }
    fixture_variants(own);
}
END_TEST

/* No input: every count is zero. Nothing is launched, so the result
 * buffer is cleared at the end (it is not cleared up front: the first
 * launch stores its sums); a histogram just before leaves counts in the
 * memory the allocator is likely to hand out again. */
START_TEST(empty_input)
{
    uint8_t bytes[4096];
    fixture_random(bytes, sizeof bytes, 5);
    struct hist_params p = byte_params();
    struct hist_params pn = n_params(ELEM_U32, 253, 0, 1u << 30, false);
    for (int i = 0; i < 3; i++) {
        check_hist(&p, bytes, sizeof bytes, "4096 random bytes");
        check_hist(&p, bytes, 0, "no bytes");
        check_hist(&pn, bytes, sizeof bytes, "1024 random uint32");
        check_hist(&pn, bytes, 0, "no uint32");
    }
}
END_TEST

START_TEST(split_launches)
{
    struct dev *d = fixture_dev();
    uint64_t saved = d->launch_items_max;
    dev_set_launch_items_max_for_test(d, 64);   /* 1024 elements per launch */
    size_t n = 100000 + 7;
    uint8_t *b = malloc(n);
    fixture_random(b, n, 5);
    struct hist_params p = byte_params();
    check_hist(&p, b, n, "bytes, split");
    struct hist_params pi = n_params(ELEM_I32, 33, -2e9, 2e9, true);
    check_hist(&pi, b, n / 4 * 4, "int32, split");
    dev_set_launch_items_max_for_test(d, saved);
    free(b);
}
END_TEST

static void expect_refused(const struct hist_params *p, size_t len, const char *field)
{
    uint8_t buf[64] = {0};
    struct job *job = run_hist(p, buf, len);
    ck_assert_int_eq(job->status, STATUS_INVALID_ARGUMENT);
    ck_assert_msg(strstr(job->msg, field), "'%s' lacks '%s'", job->msg, field);
    job_free(job);
}

START_TEST(refusals)
{
    struct hist_params p = n_params(ELEM_F32, 0, 0, 1, false);
    expect_refused(&p, 16, "bins");
    p = n_params(ELEM_F32, 4, 1, 1, false);
    expect_refused(&p, 16, "lo");
    p = n_params(ELEM_F32, 4, 0, INFINITY, false);
    expect_refused(&p, 16, "hi");
    p = n_params(ELEM_U32, 4, 0, 1, false);
    expect_refused(&p, 15, "4-byte");
    p = n_params(ELEM_I64, 4, 0, 1, false);
    expect_refused(&p, 16, "histogram.type");
    p = byte_params();
    p.bins = 10;
    expect_refused(&p, 16, "histogram.bins");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_hist");
    const TTest *const tests[] = {
        bytes_random,
        bytes_all_equal,
        ints_random,
        int32_negatives,
        values_on_bin_edges,
        out_of_range_drop_and_clamp,
        nan_and_infinities,
        all_equal_elements,
        ints_blocks,
        ints_blocks_split,
        ints_thresholds,
        a_million_bins,
        bytes_kernel_counter_limits,
        split_launches,
        empty_input,
        refusals,
        NULL,
    };
    TCase *tc = check_run_case(s, "hist", tests);
    tcase_add_unchecked_fixture(tc, NULL, fixture_close);
    return check_run(s, CK_NOFORK);
}
