/* SPDX-License-Identifier: MIT */
/* test_client_reverse.c: amp_reverse through a real ampd, against a CPU
 * reverse: lengths around the kernel's word sizes (4 and 16 bytes), an
 * empty input, and a few MiB with an odd tail. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "amp.h"
#include "client_fixture.h"

#define BIG_LEN ((3u << 20) + 13) /* a few MiB, not a multiple of any word size */

static void check_reverse(size_t n)
{
    uint8_t *in = client_fixture_random(n, (uint32_t)n * 2654435761u);
    void *out = NULL;
    size_t out_len = 12345;
    int rc = amp_reverse(client_conn, NULL, in, n, &out, &out_len);
    ck_assert_msg(rc == 0, "len %zu: %s: %s", n, amp_strerror(rc), amp_last_message(client_conn));
    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(out_len, n);
    uint8_t *want = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(want);
    for (size_t i = 0; i < n; i++)
        want[i] = in[n - 1 - i];
    if (n && memcmp(out, want, n) != 0) {
        const uint8_t *o = out;
        size_t i = 0;
        while (o[i] == want[i])
            i++;
        ck_abort_msg("len %zu: byte %zu is %u, want %u", n, i, o[i], want[i]);
    }
    amp_free(out);
    free(want);
    free(in);
}

START_TEST(small_lengths)
{
    static const size_t lens[] = { 0, 1, 2, 3, 4, 5, 15, 16, 17, 31, 32, 33, 4095, 4096, 4097 };
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
        check_reverse(lens[i]);
}
END_TEST

START_TEST(few_mib_with_odd_tail)
{
    check_reverse(BIG_LEN);
}
END_TEST

START_TEST(text_and_device_name)
{
    void *out;
    size_t n;
    ck_assert_int_eq(amp_reverse(client_conn, NULL, "stressed", 8, &out, &n), 0);
    ck_assert_uint_eq(n, 8);
    ck_assert_int_eq(memcmp(out, "desserts", 8), 0);
    amp_free(out);
    ck_assert_str_ne(amp_last_device(client_conn), "");
    ck_assert_str_eq(amp_last_message(client_conn), "");
}
END_TEST

START_TEST(explicit_device_and_deadline)
{
    amp_device *list;
    size_t ndev;
    ck_assert_int_eq(amp_devices(client_conn, NULL, &list, &ndev), 0);
    ck_assert_uint_ge(ndev, 1);
    char index[16];
    snprintf(index, sizeof index, "%u", list[0].index);
    amp_opts o = { .size = sizeof(amp_opts), .device = index, .timeout_ms = 60000 };
    void *out;
    size_t n;
    CLIENT_CHECK_OK(amp_reverse(client_conn, &o, "abc", 3, &out, &n));
    ck_assert_int_eq(memcmp(out, "cba", 3), 0);
    ck_assert_msg(strstr(amp_last_device(client_conn), list[0].name), "ran on '%s', asked for '%s'",
                  amp_last_device(client_conn), list[0].name);
    amp_free(out);
    amp_free(list);
}
END_TEST

/* The duration of name in a server-timing text, in ms; -1 when absent. */
static double timing_dur(const char *timing, const char *name)
{
    char key[32];
    snprintf(key, sizeof key, "%s;dur=", name);
    const char *p = strstr(timing, key);
    return p && (p == timing || p[-1] == ' ') ? strtod(p + strlen(key), NULL) : -1;
}

/* A connection that asks gets, with each job call's reply, where its
 * time in the daemon went: every stage there, none longer than the whole;
 * a failed call says nothing, nor does a connection that did not ask. */
START_TEST(server_timing)
{
    void *out;
    size_t n;
    CLIENT_CHECK_OK(amp_reverse(client_conn, NULL, "abc", 3, &out, &n));
    amp_free(out);
    ck_assert_str_eq(amp_last_server_timing(client_conn), "");
    amp_close(client_conn);
    amp_connect_opts co = {.size = sizeof co, .server_timing = 1};
    CLIENT_CHECK_OK(amp_connect_with(client_fixture_address(), &co, &client_conn));
    CLIENT_CHECK_OK(amp_reverse(client_conn, NULL, "abc", 3, &out, &n));
    amp_free(out);
    const char *t = amp_last_server_timing(client_conn);
    double total = timing_dur(t, "total"), sum = 0;
    static const char *const stages[] = {"request", "queue", "run", "deliver"};
    for (size_t i = 0; i < sizeof stages / sizeof stages[0]; i++) {
        double d = timing_dur(t, stages[i]);
        ck_assert_msg(d >= 0, "no %s in \"%s\"", stages[i], t);
        sum += d;
    }
    ck_assert_msg(total > 0 && sum <= total + 0.004, "stages %.3f ms, total %.3f in \"%s\"", sum,
                  total, t);
    amp_opts bad = {.size = sizeof bad, .device = "no-such-device"};
    ck_assert_int_ne(amp_reverse(client_conn, &bad, "abc", 3, &out, &n), 0);
    ck_assert_str_eq(amp_last_server_timing(client_conn), "");
    ck_assert_str_eq(amp_last_server_timing(NULL), "");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_reverse");
    const TTest *const tests[] = {
        small_lengths,
        few_mib_with_odd_tail,
        text_and_device_name,
        explicit_device_and_deadline,
        server_timing,
        NULL,
    };
    TCase *tc = check_run_case(s, "reverse", tests);
    tcase_add_checked_fixture(tc, client_fixture_open, client_fixture_close);
    return client_fixture_run(s, NULL);
}
