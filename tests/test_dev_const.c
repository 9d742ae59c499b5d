/* SPDX-License-Identifier: MIT */
/* test_dev_const.c: the small read-only buffers a device keeps by content
 * (daemon/dev_const.c): the same bytes get the same buffer, other bytes
 * another, the least recently used goes when the slots are full, and every
 * buffer holds its bytes. On the fixture's device (PoCL here). */
#include <check.h>
#include <string.h>

#include "check_run.h"
#include "dev_fixture.h"
#include "dev_internal.h"

/* A block of n bytes of seed's pattern. */
static void block_fill(uint8_t *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(seed * 31 + i);
}

static cl_mem get(struct dev *d, unsigned seed, size_t n)
{
    uint8_t b[DEV_CONST_MAX_BYTES + 1];
    block_fill(b, n, seed);
    cl_int rc = CL_OUT_OF_RESOURCES;
    cl_mem m = dev_const_get(d, b, n, &rc);
    ck_assert_int_eq(rc, CL_SUCCESS);
    ck_assert_ptr_nonnull(m);
    /* What the device holds is the block. */
    uint8_t back[DEV_CONST_MAX_BYTES + 1];
    ck_assert_int_eq(clEnqueueReadBuffer(d->q[DEV_Q_OUT], m, CL_TRUE, 0, n, back, 0, NULL, NULL),
                     CL_SUCCESS);
    ck_assert_mem_eq(back, b, n);
    return m;
}

START_TEST(same_bytes_same_buffer_other_bytes_another)
{
    struct dev *d = fixture_dev();
    cl_mem a = get(d, 1, 264);
    cl_mem again = get(d, 1, 264);
    cl_mem other = get(d, 2, 264);
    cl_mem shorter = get(d, 1, 200);
    ck_assert_ptr_eq(a, again);
    ck_assert_ptr_ne(a, other);
    ck_assert_ptr_ne(a, shorter);
    cl_mem held[] = {a, again, other, shorter};
    for (size_t i = 0; i < 4; i++)
        clReleaseMemObject(held[i]);
}
END_TEST

START_TEST(least_recently_used_goes_first)
{
    struct dev *d = fixture_dev();
    cl_mem first = get(d, 100, 64);
    clReleaseMemObject(first);
    for (unsigned i = 1; i < DEV_CONST_KEEP; i++)
        clReleaseMemObject(get(d, 100 + i, 64));
    clReleaseMemObject(get(d, 100, 64));   /* first used again: the second is oldest now */
    clReleaseMemObject(get(d, 200, 64));   /* evicts the second */
    cl_mem m = get(d, 100, 64);
    ck_assert_ptr_eq(m, first);
    clReleaseMemObject(m);
    /* A block handed out still works after its slot went. */
    cl_mem second = get(d, 101, 64);
    ck_assert_ptr_ne(second, NULL);
    for (unsigned i = 300; i < 300 + DEV_CONST_KEEP; i++)
        clReleaseMemObject(get(d, i, 64));
    uint8_t want[64], back[64];
    block_fill(want, sizeof want, 101);
    ck_assert_int_eq(clEnqueueReadBuffer(d->q[DEV_Q_OUT], second, CL_TRUE, 0, sizeof back, back,
                                         0, NULL, NULL),
                     CL_SUCCESS);
    ck_assert_mem_eq(back, want, sizeof want);
    clReleaseMemObject(second);
}
END_TEST

START_TEST(large_blocks_are_not_kept)
{
    struct dev *d = fixture_dev();
    cl_mem a = get(d, 7, DEV_CONST_MAX_BYTES + 1);
    cl_mem b = get(d, 7, DEV_CONST_MAX_BYTES + 1);
    ck_assert_ptr_ne(a, b);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("dev_const");
    const TTest *const tests[] = {
        same_bytes_same_buffer_other_bytes_another,
        least_recently_used_goes_first,
        large_blocks_are_not_kept,
        NULL,
    };
    TCase *tc = check_run_case(s, "const", tests);
    tcase_add_unchecked_fixture(tc, NULL, fixture_close);
    return check_run(s, CK_NOFORK);
}
