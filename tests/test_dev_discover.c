/* SPDX-License-Identifier: MIT */
/* test_dev_discover.c: device discovery (daemon/dev_discover.c): the list
 * is ordered GPUs, accelerators, CPUs with indexes 0..n-1 and filled-in
 * limits (also with two devices, as ctest's test_dev_discover_two runs
 * it, and on made-up lists of types no one machine has); PoCL's basic
 * device runs the batches of the pthread device beside it and is not
 * listed, or, alone, is the device (test_dev_discover_basic_*); with no OpenCL
 * platform at all, dev_open_all fails with a
 * message instead of crashing. Each test runs in its own process (the ICD
 * loader reads its configuration once per process). */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "dev_internal.h"

static int type_rank(enum dev_type t)
{
    return t == DEV_GPU ? 0 : t == DEV_ACCEL ? 1 : 2;
}

START_TEST(ordered_and_described)
{
    struct dev **devs;
    size_t n;
    char err[512] = "";
    /* $AMP_TEST_POCL_BASIC (CMakeLists.txt): "batches" where PoCL shows
     * its pthread and basic devices, as ampd asks, "device" where only
     * basic. */
    const char *basic = getenv("AMP_TEST_POCL_BASIC");
    dev_set_pocl_batches(basic != NULL);
    ck_assert_msg(dev_open_all(&devs, &n, err, sizeof err) == 0, "%s", err);
    /* ctest runs this again with PoCL showing two devices (CMakeLists.txt). */
    const char *min = getenv("AMP_TEST_MIN_DEVICES");
    ck_assert_uint_ge(n, min ? strtoul(min, NULL, 10) : 1);
    for (size_t i = 0; i < n; i++) {
        const struct dev_info *in = dev_info(devs[i]);
        ck_assert_uint_eq(in->index, i);
        ck_assert(in->name[0] != '\0');
        ck_assert(in->platform[0] != '\0');
        ck_assert_uint_gt(in->compute_units, 0);
        ck_assert_uint_gt(in->max_work_group_size, 0);
        ck_assert_uint_gt(in->max_constant_buffer_size, 0);
        ck_assert_uint_gt(in->max_mem_alloc_size, 0);
        ck_assert_uint_le(in->max_mem_alloc_size, in->global_mem_size);
        if (i > 0)
            ck_assert_int_le(type_rank(dev_info(devs[i - 1])->type), type_rank(in->type));
        if (basic && strcmp(basic, "batches") == 0) {
            ck_assert_msg(strncmp(in->name, "basic-", 6) != 0, "%s is listed", in->name);
            ck_assert_ptr_nonnull(devs[i]->batch_dev);
            ck_assert_str_eq(devs[i]->batch_dev->info.platform, in->platform);
            ck_assert_msg(strncmp(devs[i]->batch_dev->info.name, "basic-", 6) == 0, "%s",
                          devs[i]->batch_dev->info.name);
        } else {
            ck_assert_ptr_null(devs[i]->batch_dev);
        }
        if (basic && strcmp(basic, "device") == 0)
            ck_assert_msg(strncmp(in->name, "basic-", 6) == 0, "%s", in->name);
    }
    dev_close_all(devs, n);
}
END_TEST

START_TEST(no_platform_is_an_error)
{
    /* Point the ICD loader at an empty vendor directory. */
    char dir[] = "/tmp/amp-no-icd-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    setenv("OCL_ICD_VENDORS", dir, 1);
    setenv("OPENCL_VENDOR_PATH", dir, 1);
    struct dev **devs = (struct dev **)1;
    size_t n = 99;
    char err[512] = "";
    int rc = dev_open_all(&devs, &n, err, sizeof err);
    rmdir(dir);
    ck_assert_int_eq(rc, -1);
    ck_assert_ptr_null(devs);
    ck_assert_uint_eq(n, 0);
    ck_assert_msg(strstr(err, "OpenCL") || strstr(err, "device"), "'%s'", err);
}
END_TEST

/* The ordering on lists no one machine has: GPUs of two platforms around
 * PoCL's CPU, an accelerator among them. */
START_TEST(order_on_made_up_lists)
{
    static const struct {
        size_t n;
        enum dev_type types[6];
        size_t want[6];
    } cases[] = {
        { 0, { DEV_GPU }, { 0 } },
        { 1, { DEV_CPU }, { 0 } },
        { 2, { DEV_CPU, DEV_GPU }, { 1, 0 } },
        { 3, { DEV_CPU, DEV_CPU, DEV_GPU }, { 2, 0, 1 } },
        { 5, { DEV_CPU, DEV_GPU, DEV_ACCEL, DEV_GPU, DEV_CPU }, { 1, 3, 2, 0, 4 } },
        { 6, { DEV_ACCEL, DEV_CPU, DEV_GPU, DEV_ACCEL, DEV_GPU, DEV_CPU }, { 2, 4, 0, 3, 1, 5 } },
        { 3, { DEV_GPU, DEV_GPU, DEV_GPU }, { 0, 1, 2 } },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t order[6] = { 99, 99, 99, 99, 99, 99 };
        dev_order_by_type(cases[c].types, cases[c].n, order);
        for (size_t k = 0; k < cases[c].n; k++)
            ck_assert_msg(order[k] == cases[c].want[k], "case %zu: order[%zu] = %zu, want %zu",
                          c, k, order[k], cases[c].want[k]);
    }
}
END_TEST

START_TEST(type_names)
{
    ck_assert_str_eq(dev_type_name(DEV_GPU), "gpu");
    ck_assert_str_eq(dev_type_name(DEV_CPU), "cpu");
    ck_assert_str_eq(dev_type_name(DEV_ACCEL), "accelerator");
    dev_close_all(NULL, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("dev_discover");
    const TTest *const tests[] = {
        ordered_and_described,
        no_platform_is_an_error,
        type_names,
        order_on_made_up_lists,
        NULL,
    };
    check_run_case(s, "discover", tests);
    return check_run(s, CK_FORK);
}
