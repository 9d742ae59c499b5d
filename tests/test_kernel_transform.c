/* SPDX-License-Identifier: MIT */
/* test_kernel_transform.c: add/xor/and/or/set/map on the default device
 * against host_step_transform: sizes around the 16-byte word and the work-
 * group, a prime, a few MiB with an odd tail, sub-ranges at every
 * alignment (bytes outside stay unchanged), add overflow in every byte
 * position, and the refusals (range past the end, parameter block over the
 * constant buffer limit). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "host_step.h"
#include "dev_fixture.h"
#include "dev_internal.h"
#include "op.h"

static const enum transform_op all_ops[] = {XFORM_ADD, XFORM_XOR, XFORM_AND,
                                            XFORM_OR,  XFORM_SET, XFORM_MAP};
#define NOPS (sizeof all_ops / sizeof all_ops[0])

static struct transform_params params(enum transform_op op, uint8_t value, uint64_t off,
                                      uint64_t len)
{
    struct transform_params p;
    memset(&p, 0, sizeof p);
    p.op = op;
    p.value = value;
    p.offset = off;
    p.length = len;
    for (int i = 0; i < 256; i++)
        p.table[i] = (uint8_t)(i * 7 + 3);
    return p;
}

/* Runs p over random bytes of length n and compares with the reference. */
static void check_transform(const struct transform_params *p, size_t n, uint64_t seed)
{
    uint8_t *in = malloc(n ? n : 1), *want = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(want);
    fixture_random(in, n, seed);
    memcpy(want, in, n);
    host_step_transform(p, want, n);
    struct job *job = fixture_job(1, in, n);
    job->steps[0].kind = STEP_TRANSFORM;
    job->steps[0].u.transform = *p;
    fixture_run(job);
    ck_assert_msg(job->status == STATUS_OK, "op %d n=%zu: %s", p->op, n, job->msg);
    ck_assert_uint_eq(job->results[0].len, n);
    char what[96];
    snprintf(what, sizeof what, "op %d [%llu,+%llu)", p->op, (unsigned long long)p->offset,
             (unsigned long long)p->length);
    fixture_expect_bytes(job->results[0].data, want, n, what);
    job_free(job);
    free(in);
    free(want);
}

START_TEST(whole_buffer_sizes)
{
    size_t tile = 256;
    const size_t sizes[] = {0, 1, 3, 4, 5, 15, 16, 17, tile * 16 - 1, tile * 16 + 1, 104729};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t o = 0; o < NOPS; o++) {
            struct transform_params p = params(all_ops[o], (uint8_t)(0x5a + o), 0, sizes[s]);
            check_transform(&p, sizes[s], s * 10 + o);
        }
}
END_TEST

START_TEST(megabytes_with_odd_tail)
{
    size_t n = (3u << 20) + 7;
    for (size_t o = 0; o < NOPS; o++) {
        struct transform_params p = params(all_ops[o], 0xc3, 0, n);
        check_transform(&p, n, o);
    }
}
END_TEST

START_TEST(sub_ranges)
{
    /* Offsets and lengths at every alignment around a word, inside, at the
     * start and at the end of the buffer. */
    const size_t n = 211;
    for (uint64_t off = 0; off < 40; off += 3)
        for (uint64_t len = 0; off + len <= n; len += 13) {
            struct transform_params p = params(all_ops[(off + len) % NOPS], 0x81, off, len);
            check_transform(&p, n, off * 1000 + len);
        }
    struct transform_params tail = params(XFORM_ADD, 1, n - 1, 1);
    check_transform(&tail, n, 1);
    struct transform_params empty = params(XFORM_SET, 9, n, 0);
    check_transform(&empty, n, 2);
}
END_TEST

START_TEST(add_wraps_per_byte)
{
    /* 0xff + 1 in every byte position of a word: no carry into the next. */
    uint8_t in[48];
    for (size_t pos = 0; pos < sizeof in; pos++) {
        memset(in, 0x10, sizeof in);
        in[pos] = 0xff;
        struct job *job = fixture_job(1, in, sizeof in);
        job->steps[0].kind = STEP_TRANSFORM;
        job->steps[0].u.transform = params(XFORM_ADD, 1, 0, sizeof in);
        fixture_run(job);
        ck_assert_msg(job->status == STATUS_OK, "%s", job->msg);
        for (size_t i = 0; i < sizeof in; i++)
            if (job->results[0].data[i] != (i == pos ? 0x00 : 0x11))
                ck_abort_msg("0xff at %zu: byte %zu is %#x", pos, i, job->results[0].data[i]);
        job_free(job);
    }
    /* And a large operand over random data. */
    struct transform_params p = params(XFORM_ADD, 0xff, 0, 4096);
    check_transform(&p, 4096, 3);
}
END_TEST

START_TEST(chained_transforms_work_out_of_place)
{
    /* Step 2 reads step 1's result while it is copied back: out of place. */
    size_t n = 10007;
    uint8_t *in = malloc(n), *want1 = malloc(n), *want2 = malloc(n);
    fixture_random(in, n, 77);
    struct transform_params p1 = params(XFORM_XOR, 0x3c, 5, n - 9);
    struct transform_params p2 = params(XFORM_MAP, 0, 100, 1000);
    memcpy(want1, in, n);
    host_step_transform(&p1, want1, n);
    memcpy(want2, want1, n);
    host_step_transform(&p2, want2, n);
    struct job *job = fixture_job(2, in, n);
    job->steps[0].kind = STEP_TRANSFORM;
    job->steps[0].u.transform = p1;
    job->steps[1].kind = STEP_TRANSFORM;
    job->steps[1].u.transform = p2;
    fixture_run(job);
    ck_assert_msg(job->status == STATUS_OK, "%s", job->msg);
    fixture_expect_bytes(job->results[0].data, want1, n, "step 1");
    fixture_expect_bytes(job->results[1].data, want2, n, "step 2");
    job_free(job);
    free(in);
    free(want1);
    free(want2);
}
END_TEST

START_TEST(both_access_patterns)
{
    /* Grid-stride (GPUs) and contiguous chunks (CPU devices), in place on
     * a sub-range and out of place, whatever this device is. */
    struct dev *d = fixture_dev();
    enum dev_shape own = d->shape;
    struct dev_variants own_kernels = d->variants, v = d->variants;
    v.map_min = 0;   /* small maps reach v2 and v3 too */
    /* Every GPU kernel (the device's variants: transforms have two, map
     * three), then CPU. */
    const enum dev_shape shapes[] = {DEV_SHAPE_GPU, DEV_SHAPE_GPU, DEV_SHAPE_GPU, DEV_SHAPE_CPU};
    const enum dev_variant kernels[] = {DEV_VARIANT_V1, DEV_VARIANT_V2, DEV_VARIANT_V3,
                                        DEV_VARIANT_V1};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        dev_set_shape_for_test(d, shapes[s]);
        v.transform = kernels[s] == DEV_VARIANT_V3 ? DEV_VARIANT_V2 : kernels[s];
        v.map = kernels[s];
        fixture_variants(v);
        for (size_t o = 0; o < NOPS; o++) {
            struct transform_params p = params(all_ops[o], 0x77, 13, 300000);
            check_transform(&p, 300017, o);
            p = params(all_ops[o], 0x11, 0, 4099);
            check_transform(&p, 4099, o);
            /* transform_OP_v2's tiles (2048 words): whole ones inside the
             * range take its path without per-word tests, the ones holding
             * lo, hi or the end of the buffer the checked path. */
            p = params(all_ops[o], 0xe5, 32768 * 3 + 5, 32768 * 20 + 1);
            check_transform(&p, 32768 * 30 + 3, o + 50);
            p = params(all_ops[o], 0xff, 0, 32768 * 4);
            check_transform(&p, 32768 * 4, o + 60);
            /* Launches capped below one group per tile: groups stride. */
            uint64_t saved = d->launch_items_max;
            dev_set_launch_items_max_for_test(d, 512);
            p = params(all_ops[o], 0x3d, 32768 + 9, 32768 * 9);
            check_transform(&p, 32768 * 12 + 5, o + 70);
            dev_set_launch_items_max_for_test(d, saved);
        }
        /* A sub-range over a MiB: CPU devices map it through the table of
         * byte pairs, with unaligned bytes before and after; transform_map_v2
         * gives each group two tiles on the two compute units here. */
        struct transform_params m = params(XFORM_MAP, 0, 7, (1u << 20) + 9);
        check_transform(&m, (1u << 20) + 31, 99);
    }
    dev_set_shape_for_test(d, own);
    fixture_variants(own_kernels);
}
END_TEST

START_TEST(map_around_64_byte_blocks)
{
    /* CPU devices map 64 bytes at a time (by nibbles: a wrong half of the
     * table or lane shows up as a wrong byte) and the rest through pairs or
     * bytes: every start and end around a block, in place and out of place
     * (the chained step), with a table unlike the identity in every nibble. */
    struct dev *d = fixture_dev();
    enum dev_shape own = d->shape;
    dev_set_shape_for_test(d, DEV_SHAPE_CPU);
    const size_t sizes[] = {63, 64, 65, 127, 128, 129, 200, 1000};
    const uint64_t offs[] = {0, 1, 15, 16, 17, 48, 63, 64};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t o = 0; o < sizeof offs / sizeof offs[0] && offs[o] <= sizes[s]; o++)
            for (uint64_t cut = 0; cut < 2 && offs[o] + cut <= sizes[s]; cut++) {
                struct transform_params p =
                    params(XFORM_MAP, 0, offs[o], sizes[s] - offs[o] - cut);
                for (int i = 0; i < 256; i++)
                    p.table[i] = (uint8_t)(i * 167 + 91);
                check_transform(&p, sizes[s], s * 100 + o * 2 + cut);
            }
    dev_set_shape_for_test(d, own);
}
END_TEST

START_TEST(range_past_end_refused)
{
    uint8_t in[10] = {0};
    struct job *job = fixture_job(1, in, sizeof in);
    job->steps[0].kind = STEP_TRANSFORM;
    job->steps[0].u.transform = params(XFORM_ADD, 1, 4, 7);
    fixture_run(job);
    ck_assert_int_eq(job->status, STATUS_INVALID_ARGUMENT);
    ck_assert_msg(strstr(job->msg, "transform.offset"), "%s", job->msg);
    job_free(job);
}
END_TEST

START_TEST(constant_limit_refused)
{
    struct dev *d = fixture_dev();
    uint64_t saved = dev_info(d)->max_constant_buffer_size;
    dev_set_constant_limit_for_test(d, 64);
    uint8_t in[32] = {0};
    /* map needs the 256-byte table: refused, naming the limit. */
    struct job *job = fixture_job(1, in, sizeof in);
    job->steps[0].kind = STEP_TRANSFORM;
    job->steps[0].u.transform = params(XFORM_MAP, 0, 0, sizeof in);
    fixture_run(job);
    ck_assert_int_eq(job->status, STATUS_INVALID_ARGUMENT);
    ck_assert_msg(strstr(job->msg, "max_constant_buffer_size") && strstr(job->msg, "64"), "%s",
                  job->msg);
    ck_assert_ptr_null(job->results[0].data);
    job_free(job);
    /* add's block fits in 64 bytes and still runs. */
    struct transform_params p = params(XFORM_ADD, 2, 0, sizeof in);
    check_transform(&p, sizeof in, 4);
    dev_set_constant_limit_for_test(d, saved);
    struct transform_params m = params(XFORM_MAP, 0, 0, sizeof in);
    check_transform(&m, sizeof in, 5);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_transform");
    const TTest *const tests[] = {
        whole_buffer_sizes,
        megabytes_with_odd_tail,
        sub_ranges,
        add_wraps_per_byte,
        chained_transforms_work_out_of_place,
        both_access_patterns,
        map_around_64_byte_blocks,
        range_past_end_refused,
        constant_limit_refused,
        NULL,
    };
    TCase *tc = check_run_case(s, "transform", tests);
    tcase_add_unchecked_fixture(tc, NULL, fixture_close);
    return check_run(s, CK_NOFORK);
}
