/* SPDX-License-Identifier: MIT */
/* test_client_async.c: many calls in flight on one connection (amp.h:
 * amp_start_*, amp_wait, amp_cancel, amp_call_*), against a real ampd.
 * 64 reverses of distinct inputs, mixed with transforms and histograms,
 * each answered with its own result; a blocking call moves the started
 * ones; a bad call fails alone with its own message; cancelling one of
 * many; amp_wait's limits; 1,000 calls in flight when the daemon goes
 * away, every one finishing with an error; calls outliving amp_close.
 * The daemon must exit 0 at the end (under ASan: nothing leaked). */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "client_fixture.h"
#include "daemon_proc.h"

#define NCALLS 64
#define LEN 333

/* Waits for every call in flight on c; returns how many came back. */
static size_t wait_all(amp_conn *c, amp_call **got, size_t max)
{
    size_t n = 0;
    amp_call *done;
    while (amp_in_flight(c) && n < max) {
        CLIENT_CHECK_OK(amp_wait(c, 60000, &done));
        got[n++] = done;
    }
    return n;
}

static uint8_t *inputs[NCALLS];

START_TEST(many_in_flight_each_its_own_result)
{
    amp_call *calls[NCALLS];
    amp_transform_params xp = { .op = AMP_OP_XOR, .value = 0x3c };
    amp_hist_params hp = { .type = AMP_TYPE_UINT8, .bins = 256 };
    for (int i = 0; i < NCALLS; i++) {
        inputs[i] = client_fixture_random(LEN + i, 1000 + i);
        int rc = i % 3 == 0   ? amp_start_transform(client_conn, NULL, &xp, inputs[i], LEN + i, &calls[i])
                 : i % 3 == 1 ? amp_start_histogram(client_conn, NULL, &hp, inputs[i], LEN + i, &calls[i])
                              : amp_start_reverse(client_conn, NULL, inputs[i], LEN + i, &calls[i]);
        ck_assert_int_eq(rc, 0);
        amp_call_set_user(calls[i], (void *)(intptr_t)i);
        ck_assert_int_eq(amp_call_status(calls[i]), AMP_EPENDING);
    }
    ck_assert_uint_eq(amp_in_flight(client_conn), NCALLS);
    /* A blocking call in the middle: it runs, and moves the others. */
    void *out;
    size_t n;
    CLIENT_CHECK_OK(amp_reverse(client_conn, NULL, "ab", 2, &out, &n));
    ck_assert_int_eq(memcmp(out, "ba", 2), 0);
    amp_free(out);
    amp_call *got[NCALLS];
    size_t ngot = wait_all(client_conn, got, NCALLS);
    ck_assert_uint_eq(ngot, NCALLS);
    for (size_t k = 0; k < ngot; k++) {
        int i = (int)(intptr_t)amp_call_user(got[k]);
        size_t len = LEN + (size_t)i;
        ck_assert_int_eq(amp_call_status(got[k]), 0);
        ck_assert_ptr_nonnull(strchr(amp_call_device(got[k]), ':') ? "dev" :
                              strcmp(amp_call_device(got[k]), "host") == 0 ? "host" : NULL);
        if (i % 3 == 1) {
            amp_hist h;
            CLIENT_CHECK_OK(amp_call_hist(got[k], &h));
            struct hist_params p = { .type = ELEM_U8, .bins = 256 };
            client_fixture_expect_hist(&h, &p, inputs[i], len);
            amp_hist_free(&h);
            ck_assert_int_eq(amp_call_hist(got[k], &h), AMP_EINVAL);   /* taken once */
            continue;
        }
        CLIENT_CHECK_OK(amp_call_data(got[k], &out, &n));
        ck_assert_uint_eq(n, len);
        for (size_t j = 0; j < len; j++) {
            uint8_t want = i % 3 == 0 ? (uint8_t)(inputs[i][j] ^ 0x3c) : inputs[i][len - 1 - j];
            ck_assert_uint_eq(((uint8_t *)out)[j], want);
        }
        amp_free(out);
    }
    for (int i = 0; i < NCALLS; i++) {
        amp_call_free(calls[i]);
        free(inputs[i]);
    }
}
END_TEST

/* One bad call among good ones fails alone, with its own message. */
START_TEST(a_bad_call_fails_alone)
{
    amp_call *good1, *bad, *good2;
    const amp_opts no_such = { .size = sizeof(amp_opts), .device = "9" };
    CLIENT_CHECK_OK(amp_start_reverse(client_conn, NULL, "abc", 3, &good1));
    CLIENT_CHECK_OK(amp_start_reverse(client_conn, &no_such, "abc", 3, &bad));
    CLIENT_CHECK_OK(amp_start_reverse(client_conn, NULL, "xyz", 3, &good2));
    amp_call *got[3];
    ck_assert_uint_eq(wait_all(client_conn, got, 3), 3);
    ck_assert_int_eq(amp_call_status(good1), 0);
    ck_assert_int_eq(amp_call_status(good2), 0);
    ck_assert_int_eq(amp_call_status(bad), AMP_EINVAL);
    ck_assert_ptr_nonnull(strstr(amp_call_message(bad), "device"));
    void *out;
    size_t n;
    ck_assert_int_eq(amp_call_data(bad, &out, &n), AMP_EINVAL);
    CLIENT_CHECK_OK(amp_call_data(good2, &out, &n));
    ck_assert_int_eq(memcmp(out, "zyx", 3), 0);
    amp_free(out);
    amp_call_free(good1);
    amp_call_free(bad);
    amp_call_free(good2);
}
END_TEST

/* Cancelling one of several: it finishes cancelled, the rest as usual;
 * amp_wait's limits; freeing a running call cancels it. */
START_TEST(cancel_and_wait_limits)
{
    amp_call *done;
    ck_assert_int_eq(amp_wait(client_conn, 0, &done), AMP_EINVAL);   /* nothing in flight */
    amp_call *a, *b, *c;
    CLIENT_CHECK_OK(amp_start_reverse(client_conn, NULL, "one", 3, &a));
    CLIENT_CHECK_OK(amp_start_reverse(client_conn, NULL, "two", 3, &b));
    CLIENT_CHECK_OK(amp_start_reverse(client_conn, NULL, "six", 3, &c));
    CLIENT_CHECK_OK(amp_cancel(b));
    ck_assert_int_eq(amp_call_status(b), AMP_ECANCELLED);
    amp_call_free(c);   /* still running: cancelled and freed */
    ck_assert_uint_eq(amp_in_flight(client_conn), 2);   /* a running, b finished */
    amp_call *got[3];
    size_t ngot = wait_all(client_conn, got, 3);
    ck_assert_uint_eq(ngot, 2);
    ck_assert_ptr_eq(got[0], b);   /* finished first */
    ck_assert_ptr_eq(got[1], a);
    ck_assert_int_eq(amp_call_status(a), 0);
    ck_assert_int_eq(amp_wait(client_conn, 0, &done), AMP_EINVAL);
    amp_call_free(a);
    amp_call_free(b);
    /* The connection still serves blocking calls. */
    void *out;
    size_t n;
    CLIENT_CHECK_OK(amp_reverse(client_conn, NULL, "ok", 2, &out, &n));
    amp_free(out);
}
END_TEST

/* 1,000 calls in flight, then the daemon is killed: each finishes with an
 * error, and calls outlive amp_close. Its own daemon, to kill. */
START_TEST(daemon_gone_with_calls_in_flight)
{
    struct daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, NULL), 0);
    char address[300];
    snprintf(address, sizeof address, "unix:%s", d.sock_path);
    amp_conn *c;
    ck_assert_int_eq(amp_connect(address, &c), 0);
    enum { N = 1000 };
    static amp_call *calls[N];
    static uint8_t buf[4096];
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(amp_start_reverse(c, NULL, buf, sizeof buf, &calls[i]), 0);
    kill(d.pid, SIGKILL);
    size_t finished = 0, failed = 0;
    amp_call *done;
    while (amp_in_flight(c)) {
        int rc = amp_wait(c, 60000, &done);
        ck_assert_int_eq(rc, 0);
        finished++;
        failed += amp_call_status(done) != 0;
    }
    ck_assert_uint_eq(finished, N);
    ck_assert_uint_gt(failed, 0);
    /* Started again before amp_close, then closed with them in flight. */
    amp_call *late = NULL;
    int rc = amp_start_reverse(c, NULL, buf, 16, &late);
    amp_close(c);
    if (rc == 0)
        ck_assert_int_ne(amp_call_status(late), AMP_EPENDING);
    amp_call_free(late);
    for (int i = 0; i < N; i++)
        amp_call_free(calls[i]);
    daemon_stop(&d);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_async");
    const TTest *const tests[] = {
        many_in_flight_each_its_own_result,
        a_bad_call_fails_alone,
        cancel_and_wait_limits,
        daemon_gone_with_calls_in_flight,
        NULL,
    };
    TCase *tc = check_run_case(s, "async", tests);
    tcase_set_timeout(tc, 600);
    tcase_add_checked_fixture(tc, client_fixture_open, client_fixture_close);
    return client_fixture_run(s, NULL);
}
