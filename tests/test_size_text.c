/* SPDX-License-Identifier: MIT */
/* test_size_text.c: byte counts with binary suffixes (common/size_text.c),
 * the one reader of ampd's numeric options and ampctl's sizes: what it
 * takes, what it refuses, and that it reads back what size_text_format
 * writes. No sockets involved. */
#include <check.h>
#include <stdint.h>

#include "check_run.h"
#include "size_text.h"

static uint64_t parse_ok(const char *text)
{
    uint64_t v = 0;
    ck_assert_msg(size_text_parse(text, &v) == 0, "'%s' refused", text);
    return v;
}

START_TEST(plain_and_suffixed)
{
    ck_assert_uint_eq(parse_ok("0"), 0);
    ck_assert_uint_eq(parse_ok("4096"), 4096);
    ck_assert_uint_eq(parse_ok("017"), 17);   /* decimal, never octal */
    ck_assert_uint_eq(parse_ok("64K"), 64u << 10);
    ck_assert_uint_eq(parse_ok("64k"), 64u << 10);
    ck_assert_uint_eq(parse_ok("16M"), (uint64_t)16 << 20);
    ck_assert_uint_eq(parse_ok("1g"), (uint64_t)1 << 30);
    ck_assert_uint_eq(parse_ok("2T"), (uint64_t)2 << 40);
    ck_assert_uint_eq(parse_ok("0M"), 0);
    ck_assert_uint_eq(parse_ok("18446744073709551615"), UINT64_MAX);
    ck_assert_uint_eq(parse_ok("16777215T"), (uint64_t)16777215 << 40);
    /* As people write them: IEC's binary units, SI's decimal ones, bytes. */
    ck_assert_uint_eq(parse_ok("4KiB"), 4u << 10);
    ck_assert_uint_eq(parse_ok("64gib"), (uint64_t)64 << 30);
    ck_assert_uint_eq(parse_ok("5KB"), 5000);
    ck_assert_uint_eq(parse_ok("64GB"), 64000000000ull);
    ck_assert_uint_eq(parse_ok("3mb"), 3000000);
    ck_assert_uint_eq(parse_ok("2TB"), 2000000000000ull);
    ck_assert_uint_eq(parse_ok("512B"), 512);
}
END_TEST

START_TEST(refused)
{
    const char *bad[] = {
        "", "K", " 5", "5 ", "+5", "-5", "5KiBB", "5X", "5KK", "5iB", "5Bi", "5KBB", "0x10", "1.5M",
        "18446744073709551616B",
        "18446744073709551616",   /* UINT64_MAX + 1 */
        "16777216T",              /* 2^64 */
        "17179869184G",
        "18446744073709552KB",    /* past 2^64 in thousands */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 42;
        ck_assert_msg(size_text_parse(bad[i], &v) == -1, "'%s' accepted", bad[i]);
        ck_assert_msg(v == 42, "'%s' changed the output on refusal", bad[i]);
    }
    uint64_t v;
    ck_assert_int_eq(size_text_parse(NULL, &v), -1);
}
END_TEST

START_TEST(reads_what_it_writes)
{
    const uint64_t sizes[] = { 0, 1, 1000, 1024, 1536, (uint64_t)64 << 20, (uint64_t)3 << 30,
                               (uint64_t)5 << 40, UINT64_MAX, UINT64_MAX - 1023 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char text[SIZE_TEXT_MAX];
        size_text_format(sizes[i], text, sizeof text);
        ck_assert_uint_eq(parse_ok(text), sizes[i]);
    }
    char text[SIZE_TEXT_MAX];
    size_text_format((uint64_t)64 << 20, text, sizeof text);
    ck_assert_str_eq(text, "64M");
    size_text_format(1536, text, sizeof text);
    ck_assert_str_eq(text, "1536");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("size_text");
    const TTest *const tests[] = {
        plain_and_suffixed,
        refused,
        reads_what_it_writes,
        NULL,
    };
    check_run_case(s, "core", tests);
    return check_run(s, CK_FORK_GETENV);
}
