/* SPDX-License-Identifier: MIT */
/* test_grpc_timeout.c: grpc-timeout's duration format (common/
 * grpc_timeout.c), which the client writes for grpc-timeout and
 * amp-max-queue-time and the daemon reads for both: what it takes, what it
 * refuses, and that it reads back what it writes, never shorter. No
 * sockets involved. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "check_run.h"
#include "grpc_timeout.h"

static uint64_t parse_ok(const char *text)
{
    uint64_t us = 0;
    ck_assert_msg(grpc_timeout_parse((const uint8_t *)text, strlen(text), &us), "'%s' refused",
                  text);
    return us;
}

START_TEST(every_unit)
{
    ck_assert_uint_eq(parse_ok("1n"), 1);   /* rounded up: never none */
    ck_assert_uint_eq(parse_ok("1000n"), 1);
    ck_assert_uint_eq(parse_ok("1001n"), 2);
    ck_assert_uint_eq(parse_ok("200u"), 200);
    ck_assert_uint_eq(parse_ok("5m"), 5000);
    ck_assert_uint_eq(parse_ok("2S"), 2000000);
    ck_assert_uint_eq(parse_ok("3M"), 180000000);
    ck_assert_uint_eq(parse_ok("1H"), 3600000000u);
    ck_assert_uint_eq(parse_ok("0m"), 0);
    ck_assert_uint_eq(parse_ok("99999999H"), (uint64_t)99999999 * 3600000000u);
}
END_TEST

START_TEST(refused)
{
    const char *bad[] = { "", "m", "5", "5x", "5 m", "-5m", "+5m", "123456789m", "5mm", "1.5S" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t us = 42;
        ck_assert_msg(!grpc_timeout_parse((const uint8_t *)bad[i], strlen(bad[i]), &us),
                      "'%s' accepted", bad[i]);
    }
}
END_TEST

START_TEST(reads_what_it_writes)
{
    const uint64_t durations[] = { 0,         1,          999,          99999999, 100000000,
                                   123456789, 4294967295u, 3600000000u,
                                   (uint64_t)99999999 * 3600000000u };
    for (size_t i = 0; i < sizeof durations / sizeof durations[0]; i++) {
        char text[GRPC_TIMEOUT_TEXT];
        grpc_timeout_format(text, durations[i]);
        uint64_t back = parse_ok(text);
        ck_assert_msg(back >= durations[i], "%s is shorter than %llu us", text,
                      (unsigned long long)durations[i]);
    }
    char text[GRPC_TIMEOUT_TEXT];
    grpc_timeout_format(text, 200);
    ck_assert_str_eq(text, "200u");
    grpc_timeout_format(text, 100000000);   /* 9 digits of us: in ms */
    ck_assert_str_eq(text, "100000m");
    grpc_timeout_format(text, 100000001);   /* rounded up */
    ck_assert_str_eq(text, "100001m");
    grpc_timeout_format(text, UINT64_MAX);  /* past 99999999 hours: the longest there is */
    ck_assert_str_eq(text, "99999999H");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("grpc_timeout");
    const TTest *const tests[] = {
        every_unit,
        refused,
        reads_what_it_writes,
        NULL,
    };
    check_run_case(s, "core", tests);
    return check_run(s, CK_FORK_GETENV);
}
