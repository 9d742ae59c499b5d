/* SPDX-License-Identifier: MIT */
/* test_dev_exec.c: the device layer's own rules on the default OpenCL
 * device: the serving build leaves the GPU kernel variants out until a
 * test or bench asks for them; a command touching more buffers than its
 * hazards can track fails the job INTERNAL with the count, before anything
 * is enqueued; on a GPU a copy of pageable memory is done when it returns
 * (dev_internal.h, enum dev_host). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "dev_fixture.h"
#include "dev_internal.h"

START_TEST(variants_built_only_when_asked)
{
    static const char *const variants[] = { "reverse_bytes", "transform_add", "transform_set",
                                            "hist256_local", "hist256_bytes" };
    static const char *const serving[] = { "reverse_bytes_v2", "transform_add_v2",
                                           "transform_map", "transform_map_v2", "hist256_inc",
                                           "batch_run" };
    struct dev *d = fixture_dev();
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++)
        ck_assert_msg(!dev_kernel(d, variants[i]), "%s built at start", variants[i]);
    for (size_t i = 0; i < sizeof serving / sizeof serving[0]; i++)
        ck_assert_msg(dev_kernel(d, serving[i]), "%s missing", serving[i]);
    struct dev_variants v = DEV_VARIANTS_SERVING;
    v.reverse = DEV_VARIANT_V1;
    fixture_variants(v);
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++)
        ck_assert_msg(dev_kernel(d, variants[i]), "%s not built on request", variants[i]);
    ck_assert_int_eq(d->variants.reverse, DEV_VARIANT_V1);
    fixture_variants(DEV_VARIANTS_SERVING);
}
END_TEST

START_TEST(too_many_buffers_refused)
{
    struct dev *d = fixture_dev();
    struct job *job = fixture_job(1, NULL, 0);
    struct dev_exec x;
    dev_exec_init(&x, d, job);
    struct dev_buf bufs[DEV_CMD_MAX_ACCESS + 1];
    struct dev_access acc[DEV_CMD_MAX_ACCESS + 1];
    for (size_t i = 0; i <= DEV_CMD_MAX_ACCESS; i++) {
        ck_assert_int_eq(dev_buf_create(&x, &bufs[i], 64, "a test buffer"), STATUS_OK);
        acc[i] = (struct dev_access){ &bufs[i], HAZARD_READ };
    }
    cl_kernel k = dev_kernel(d, "batch_run");
    ck_assert_ptr_nonnull(k);
    /* At the limit the command is taken (it is not launched: no items). */
    ck_assert_int_eq(dev_exec_kernel(&x, k, "batch_run", 0, 0, acc, DEV_CMD_MAX_ACCESS),
                     STATUS_OK);
    ck_assert_int_eq(dev_exec_kernel(&x, k, "batch_run", 64, 64, acc, DEV_CMD_MAX_ACCESS + 1),
                     STATUS_INTERNAL);
    char want[32];
    snprintf(want, sizeof want, "%d buffers", DEV_CMD_MAX_ACCESS + 1);
    ck_assert_msg(strstr(job->msg, want), "%s", job->msg);
    ck_assert_uint_eq(x.nevents, 0);
    for (size_t i = 0; i <= DEV_CMD_MAX_ACCESS; i++)
        dev_buf_release(&bufs[i]);
    dev_exec_finish(&x);
    ck_assert_int_eq(job->status, STATUS_INTERNAL);
    job_free(job);
}
END_TEST

START_TEST(pageable_copies_done_on_return)
{
    struct dev *d = fixture_dev();
    struct job *job = fixture_job(1, NULL, 0);
    struct dev_exec x;
    dev_exec_init(&x, d, job);
    const size_t n = (size_t)1 << 20;
    uint8_t *in = malloc(n), *out = calloc(1, n);
    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(out);
    for (size_t i = 0; i < n; i++)
        in[i] = (uint8_t)(i * 7 + 3);
    struct dev_buf b;
    ck_assert_int_eq(dev_buf_create(&x, &b, n, "a test buffer"), STATUS_OK);
    ck_assert_int_eq(dev_exec_write(&x, &b, in, n, DEV_HOST_PAGEABLE), STATUS_OK);
    ck_assert_int_eq(dev_exec_read(&x, &b, out, 0, n, DEV_HOST_PAGEABLE), STATUS_OK);
    ck_assert_uint_eq(x.nevents, 2);
    if (d->info.type != DEV_CPU) {
        ck_assert_int_eq(dev_event_status(x.events[0]), CL_COMPLETE);
        ck_assert_int_eq(dev_event_status(x.events[1]), CL_COMPLETE);
        ck_assert_mem_eq(out, in, n);
    }
    dev_buf_release(&b);
    ck_assert_int_eq(dev_exec_finish(&x), STATUS_OK);
    ck_assert_mem_eq(out, in, n);
    free(in);
    free(out);
    job_free(job);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("dev_exec");
    const TTest *const tests[] = {
        variants_built_only_when_asked,
        too_many_buffers_refused,
        pageable_copies_done_on_return,
        NULL,
    };
    TCase *tc = check_run_case(s, "exec", tests);
    tcase_add_unchecked_fixture(tc, NULL, fixture_close);
    return check_run(s, CK_NOFORK);
}
