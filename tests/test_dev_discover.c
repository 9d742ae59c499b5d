/* test_dev_discover.c: device discovery (daemon/dev_discover.c): the list
 * is ordered GPUs, accelerators, CPUs with indexes 0..n-1 and filled-in
 * limits; with no OpenCL platform at all, dev_open_all fails with a
 * message instead of crashing. Each test runs in its own process (the ICD
 * loader reads its configuration once per process). */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "dev.h"

static int type_rank(enum dev_type t)
{
    return t == DEV_GPU ? 0 : t == DEV_ACCEL ? 1 : 2;
}

START_TEST(ordered_and_described)
{
    struct dev **devs;
    size_t n;
    char err[512] = "";
    ck_assert_msg(dev_open_all(&devs, &n, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_ge(n, 1);
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
    TCase *tc = tcase_create("discover");
    tcase_add_test(tc, ordered_and_described);
    tcase_add_test(tc, no_platform_is_an_error);
    tcase_add_test(tc, type_names);
    suite_add_tcase(s, tc);
    return check_run(s, CK_FORK);
}
