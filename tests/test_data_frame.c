/* SPDX-License-Identifier: MIT */
/* test_data_frame.c: the DATA frame length both HTTP/2 sessions ask
 * nghttp2 for (common/data_frame.c, their data_source_read_length
 * callback): DATA_FRAME_MAX unless a window or the peer's frame limit is
 * smaller, never below 1. No sockets involved. */
#include <check.h>
#include <stdint.h>

#include "check_run.h"
#include "data_frame.h"

static ssize_t frame_len(int32_t session_window, int32_t stream_window, uint32_t remote_max)
{
    return data_frame_len(NULL, NGHTTP2_DATA, 1, session_window, stream_window, remote_max,
                          NULL);
}

START_TEST(large_when_all_allow)
{
    ck_assert_int_eq(frame_len(INT32_MAX, INT32_MAX, 16 * 1024 * 1024 - 1), DATA_FRAME_MAX);
    ck_assert_int_eq(frame_len(DATA_FRAME_MAX, DATA_FRAME_MAX, DATA_FRAME_MAX), DATA_FRAME_MAX);
}
END_TEST

START_TEST(the_smallest_limit_wins)
{
    ck_assert_int_eq(frame_len(1000, INT32_MAX, DATA_FRAME_MAX), 1000);
    ck_assert_int_eq(frame_len(INT32_MAX, 700, DATA_FRAME_MAX), 700);
    ck_assert_int_eq(frame_len(INT32_MAX, INT32_MAX, 16384), 16384);
    ck_assert_int_eq(frame_len(5000, 3000, 4000), 3000);
}
END_TEST

START_TEST(never_below_one)
{
    ck_assert_int_eq(frame_len(0, INT32_MAX, DATA_FRAME_MAX), 1);
    ck_assert_int_eq(frame_len(INT32_MAX, -10, DATA_FRAME_MAX), 1);
    ck_assert_int_eq(frame_len(INT32_MAX, INT32_MAX, 0), 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("data_frame");
    const TTest *const tests[] = {
        large_when_all_allow,
        the_smallest_limit_wins,
        never_below_one,
        NULL,
    };
    check_run_case(s, "length", tests);
    return check_run(s, CK_FORK_GETENV);
}
