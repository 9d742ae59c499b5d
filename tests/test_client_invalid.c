/* SPDX-License-Identifier: MIT */
/* test_client_invalid.c: every bad parameter the C API can carry to a real
 * ampd comes back as AMP_EINVAL (INVALID_ARGUMENT) with the daemon's
 * message naming the field, and the connection stays usable afterwards.
 * (Arguments the library refuses before sending are test_client_args.c.)
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "amp.h"
#include "client_fixture.h"

#define MAX_MESSAGE (1u << 20) /* the daemon's --max-message-bytes, small to test it */
#define MAX_MESSAGE_TEXT "1048576"

/* rc must be want with a message naming field; then a job still works. */
static void expect_refused(int rc, int want, const char *field)
{
    const char *msg = amp_last_message(client_conn);
    ck_assert_msg(rc == want, "rc %d (%s: %s), want %d for %s", rc, amp_strerror(rc), msg, want,
                  field);
    ck_assert_msg(strstr(msg, field), "message '%s' does not name '%s'", msg, field);
    void *out;
    size_t n;
    ck_assert_int_eq(amp_reverse(client_conn, NULL, "ok", 2, &out, &n), 0);
    ck_assert_int_eq(memcmp(out, "ko", 2), 0);
    amp_free(out);
}

START_TEST(transform_range)
{
    uint8_t data[10] = { 0 };
    void *out;
    size_t n;
    amp_transform_params p = { .op = AMP_OP_ADD, .value = 1, .offset = 11 };
    expect_refused(amp_transform(client_conn, NULL, &p, data, sizeof data, &out, &n), AMP_EINVAL,
                   "params.offset");
    p = (amp_transform_params){ .op = AMP_OP_ADD, .offset = 4, .length = 7, .has_length = 1 };
    expect_refused(amp_transform(client_conn, NULL, &p, data, sizeof data, &out, &n), AMP_EINVAL,
                   "params.length");
}
END_TEST

START_TEST(histogram_params)
{
    float data[4] = { 0 };
    amp_hist h;
    amp_hist_params p = { .type = AMP_TYPE_FLOAT32, .bins = 0, .lo = 0, .hi = 1 };
    expect_refused(amp_histogram(client_conn, NULL, &p, data, sizeof data, &h), AMP_EINVAL,
                   "params.bins");
    ck_assert_ptr_null(h.counts);
    p = (amp_hist_params){ .type = AMP_TYPE_INT32, .bins = 4, .lo = 5, .hi = 5 };
    expect_refused(amp_histogram(client_conn, NULL, &p, data, sizeof data, &h), AMP_EINVAL,
                   "params.lo");
    p = (amp_hist_params){ .type = AMP_TYPE_UINT32, .bins = 4, .lo = NAN, .hi = 1 };
    expect_refused(amp_histogram(client_conn, NULL, &p, data, sizeof data, &h), AMP_EINVAL,
                   "params.lo");
    p = (amp_hist_params){ .type = AMP_TYPE_FLOAT32, .bins = 4, .lo = 0, .hi = INFINITY };
    expect_refused(amp_histogram(client_conn, NULL, &p, data, sizeof data, &h), AMP_EINVAL,
                   "params.hi");
    p = (amp_hist_params){ .type = AMP_TYPE_INT64, .bins = 4, .lo = 0, .hi = 1 };
    expect_refused(amp_histogram(client_conn, NULL, &p, data, sizeof data, &h), AMP_EINVAL,
                   "params.type");
    p = (amp_hist_params){ .type = AMP_TYPE_UINT8, .bins = 10 };
    expect_refused(amp_histogram(client_conn, NULL, &p, data, sizeof data, &h), AMP_EINVAL, "bins");
    p = (amp_hist_params){ .type = AMP_TYPE_INT32, .bins = 4, .lo = 0, .hi = 1 };
    expect_refused(amp_histogram(client_conn, NULL, &p, data, 6, &h), AMP_EINVAL, "data");
}
END_TEST

START_TEST(fill_params)
{
    void *out = NULL;
    size_t n;
    amp_fill_params p = { .type = AMP_TYPE_UINT8, .count = 4 };
    expect_refused(amp_fill(client_conn, NULL, &p, &out, &n), AMP_EINVAL, "params.type");
    p = (amp_fill_params){ .type = AMP_TYPE_INT64, .count = 1ull << 50 };
    expect_refused(amp_fill(client_conn, NULL, &p, &out, &n), AMP_EINVAL, "params.count");
    p = (amp_fill_params){ .type = AMP_TYPE_INT32, .count = 100, .tile = 1u << 30 };
    expect_refused(amp_fill(client_conn, NULL, &p, &out, &n), AMP_EINVAL, "tile");
    ck_assert_ptr_null(out);
}
END_TEST

START_TEST(device_selection)
{
    void *out;
    size_t n;
    amp_opts o = { .size = sizeof(amp_opts), .device = "bogus", .timeout_ms = 0 };
    expect_refused(amp_reverse(client_conn, &o, "abc", 3, &out, &n), AMP_EINVAL, "device");
    o.device = "99999";
    expect_refused(amp_reverse(client_conn, &o, "abc", 3, &out, &n), AMP_EINVAL, "device");
    char longname[200];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    o.device = longname;
    expect_refused(amp_reverse(client_conn, &o, "abc", 3, &out, &n), AMP_EINVAL, "device");
}
END_TEST

START_TEST(oversized_request_is_exhausted)
{
    size_t n = MAX_MESSAGE + 1;
    uint8_t *big = calloc(1, n);
    ck_assert_ptr_nonnull(big);
    void *out;
    size_t len;
    /* The daemon refuses from the length prefix, before reading the body:
     * the call ends while the client may still be sending. */
    expect_refused(amp_reverse(client_conn, NULL, big, n, &out, &len), AMP_EEXHAUSTED, "");
    free(big);
}
END_TEST

START_TEST(missing_device_type_is_unavailable)
{
    amp_device *list;
    size_t ndev;
    ck_assert_int_eq(amp_devices(client_conn, NULL, &list, &ndev), 0);
    /* Ask for a type this host lacks: gpu on CPU-only hosts, else cpu. */
    const char *want = "gpu";
    for (size_t i = 0; i < ndev; i++)
        if (strcmp(list[i].type, "gpu") == 0)
            want = "cpu";
    int present = 0;
    for (size_t i = 0; i < ndev; i++)
        present |= strcmp(list[i].type, want) == 0;
    amp_free(list);
    if (present)
        return; /* a host with both kinds has nothing to refuse here */
    amp_opts o = { .size = sizeof(amp_opts), .device = want, .timeout_ms = 0 };
    void *out;
    size_t n;
    expect_refused(amp_reverse(client_conn, &o, "abc", 3, &out, &n), AMP_EUNAVAIL, want);
}
END_TEST

int main(void)
{
    static const char *const args[] = { "--max-message-bytes", MAX_MESSAGE_TEXT, NULL };
    Suite *s = suite_create("client_invalid");
    const TTest *const tests[] = {
        transform_range,
        histogram_params,
        fill_params,
        device_selection,
        oversized_request_is_exhausted,
        missing_device_type_is_unavailable,
        NULL,
    };
    TCase *tc = check_run_case(s, "invalid", tests);
    tcase_add_checked_fixture(tc, client_fixture_open, client_fixture_close);
    return client_fixture_run(s, args);
}
