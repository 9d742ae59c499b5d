/* SPDX-License-Identifier: MIT */
/* test_client_errors.c: libampclient's error vocabulary (client/error.c):
 * every gRPC status from CANCELLED to UNAUTHENTICATED maps to a code of its
 * own, statuses gRPC does not define to AMP_EUNKNOWN, and every code has
 * its own name and words. A unit test of the library's insides. */
#include <check.h>
#include <string.h>

#include "amp.h"
#include "check_run.h"
#include "error.h"

#define ERRORS_GRPC_LAST 16   /* UNAUTHENTICATED */

START_TEST(each_grpc_status_has_its_own_code)
{
    int seen[64] = { 0 };
    ck_assert_int_eq(error_from_grpc(0), AMP_OK);
    for (int g = 1; g <= ERRORS_GRPC_LAST; g++) {
        int code = error_from_grpc(g);
        ck_assert_msg(code < 0 && -code < 64, "status %d: code %d", g, code);
        ck_assert_msg(!seen[-code], "status %d shares %s", g, amp_error_name(code));
        seen[-code] = 1;
        ck_assert_msg(g == 2 || code != AMP_EUNKNOWN, "status %d collapses into AMP_EUNKNOWN", g);
    }
    ck_assert_int_eq(error_from_grpc(17), AMP_EUNKNOWN);
    ck_assert_int_eq(error_from_grpc(-3), AMP_EUNKNOWN);
    ck_assert_int_eq(error_from_grpc(11), AMP_EOUTOFRANGE);
    ck_assert_int_eq(error_from_grpc(9), AMP_EPRECOND);
    ck_assert_int_eq(error_from_grpc(16), AMP_EUNAUTH);
}
END_TEST

START_TEST(each_code_has_name_and_words)
{
    const char *names[64] = { 0 };
    int n = 0;
#define ERRORS_CHECK_(name, code, grpc, words)                                  \
    ck_assert_str_eq(amp_error_name(code), "AMP_" #name);                      \
    ck_assert_str_eq(amp_strerror(code), words);                               \
    ck_assert_ptr_null(names[-(code)]);                                        \
    names[-(code)] = #name;                                                    \
    n++;
    AMP_ERROR_MAP(ERRORS_CHECK_)
#undef ERRORS_CHECK_
    /* -1 .. -n, each once: no gap a new code could fall into. */
    for (int i = 1; i <= n; i++)
        ck_assert_ptr_nonnull(names[i]);
    ck_assert_str_eq(amp_error_name(0), "AMP_OK");
    ck_assert_str_eq(amp_error_name(-999), "AMP_E?");
    ck_assert_str_eq(amp_strerror(-999), "unrecognised error code");
}
END_TEST

START_TEST(version_matches_header)
{
    ck_assert_uint_eq(amp_version(), AMP_VERSION_HEX);
    ck_assert_str_eq(amp_version_string(), AMP_VERSION_STRING);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_errors");
    const TTest *const tests[] = {
        each_grpc_status_has_its_own_code,
        each_code_has_name_and_words,
        version_matches_header,
        NULL,
    };
    check_run_case(s, "errors", tests);
    return check_run(s, CK_FORK_GETENV);
}
