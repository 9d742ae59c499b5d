/* SPDX-License-Identifier: MIT */
/* test_client_conns.c: connection behaviour against a real ampd: many
 * sequential calls on one connection (a new HTTP/2 stream each), two
 * connections at once (interleaved, and from two threads), the
 * introspection calls, and a daemon that goes away: a prompt AMP_EIO or
 * AMP_ECONNECT (the reconnect refused), never a hang.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "amp.h"
#include "client_fixture.h"
#include "daemon_proc.h"

#define SEQUENTIAL_CALLS 300
#define THREAD_CALLS 40
#define THREAD_LEN (64 * 1024 + 7)
#define GONE_DEADLINE_MS 60000 /* backstop only: a broken connection must fail before */
#define TURNS_WAIT_TRIES 100     /* amp_status every TURNS_WAIT_US until turns show */
#define TURNS_WAIT_US 50000

static amp_conn *connect_ok(const char *address)
{
    amp_conn *c = NULL;
    int rc = amp_connect(address, &c);
    ck_assert_msg(rc == 0, "%s: %s", amp_strerror(rc), amp_last_message(NULL));
    return c;
}

/* Reverses a short string with an index mark and checks the answer. */
static void reverse_ok(amp_conn *c, int i)
{
    char text[32], want[32];
    int n = snprintf(text, sizeof text, "call-%d-end", i);
    for (int k = 0; k < n; k++)
        want[k] = text[n - 1 - k];
    void *out;
    size_t len;
    int rc = amp_reverse(c, NULL, text, (size_t)n, &out, &len);
    ck_assert_msg(rc == 0, "call %d: %s: %s", i, amp_strerror(rc), amp_last_message(c));
    ck_assert_uint_eq(len, (size_t)n);
    ck_assert_int_eq(memcmp(out, want, (size_t)n), 0);
    amp_free(out);
}

START_TEST(many_sequential_calls_one_connection)
{
    amp_conn *c = connect_ok(client_fixture_address());
    for (int i = 0; i < SEQUENTIAL_CALLS; i++) {
        switch (i % 4) {
        case 0:
        case 1: reverse_ok(c, i); break;
        case 2: {
            amp_fill_params p = { .type = AMP_TYPE_INT32, .count = (uint64_t)i, .start = i,
                                  .step = 1 };
            void *out;
            size_t n;
            ck_assert_int_eq(amp_fill(c, NULL, &p, &out, &n), 0);
            ck_assert_uint_eq(n, (size_t)i * 4);
            if (i > 0)
                ck_assert_int_eq(((int32_t *)out)[i - 1], 2 * i - 1);
            amp_free(out);
            break;
        }
        default: {
            /* A refused call in the middle must not disturb the next ones. */
            amp_hist_params p = { .type = AMP_TYPE_FLOAT32, .bins = 0, .lo = 0, .hi = 1 };
            amp_hist h;
            ck_assert_int_eq(amp_histogram(c, NULL, &p, "abcd", 4, &h), AMP_EINVAL);
            break;
        }
        }
    }
    amp_close(c);
}
END_TEST

START_TEST(two_connections_interleaved)
{
    amp_conn *a = connect_ok(client_fixture_address()), *b = connect_ok(client_fixture_address());
    for (int i = 0; i < 20; i++) {
        reverse_ok(a, i);
        reverse_ok(b, 1000 + i);
    }
    amp_close(a);
    reverse_ok(b, 99); /* closing one leaves the other alone */
    amp_close(b);
}
END_TEST

static void *thread_main(void *arg)
{
    uint8_t seed = (uint8_t)(uintptr_t)arg;
    amp_conn *c = NULL;
    if (amp_connect(client_fixture_address(), &c) != 0)
        return (void *)"connect failed";
    uint8_t *in = malloc(THREAD_LEN);
    const char *err = NULL;
    for (size_t i = 0; i < THREAD_LEN; i++)
        in[i] = (uint8_t)(i * 31 + seed);
    for (int k = 0; k < THREAD_CALLS && !err; k++) {
        void *out;
        size_t n;
        if (amp_reverse(c, NULL, in, THREAD_LEN, &out, &n) != 0 || n != THREAD_LEN) {
            err = "call failed";
            break;
        }
        for (size_t i = 0; i < THREAD_LEN && !err; i++)
            if (((uint8_t *)out)[i] != in[THREAD_LEN - 1 - i])
                err = "wrong bytes";
        amp_free(out);
    }
    free(in);
    amp_close(c);
    return (void *)err;
}

START_TEST(two_connections_two_threads)
{
    pthread_t t[2];
    for (uintptr_t i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, thread_main, (void *)(i + 1)), 0);
    for (int i = 0; i < 2; i++) {
        void *err;
        pthread_join(t[i], &err);
        ck_assert_msg(err == NULL, "thread %d: %s", i, (const char *)err);
    }
}
END_TEST

START_TEST(devices_status_health)
{
    amp_conn *c = connect_ok(client_fixture_address());
    amp_device *list;
    size_t n;
    ck_assert_int_eq(amp_devices(c, NULL, &list, &n), 0);
    ck_assert_uint_ge(n, 1);
    int defaults = 0;
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_eq(list[i].index, i);
        ck_assert_str_ne(list[i].name, "");
        ck_assert_msg(!strcmp(list[i].type, "gpu") || !strcmp(list[i].type, "cpu") ||
                          !strcmp(list[i].type, "accelerator"),
                      "type '%s'", list[i].type);
        ck_assert_uint_gt(list[i].global_mem_size, 0);
        ck_assert_uint_gt(list[i].max_work_group_size, 0);
        defaults += list[i].is_default;
    }
    ck_assert_int_eq(defaults, 1);
    amp_free(list);

    amp_daemon_status before = { .size = sizeof before }, after = { .size = sizeof after };
    ck_assert_int_eq(amp_status(c, NULL, &before), 0);
    ck_assert_str_ne(before.version, "");
    ck_assert_uint_ge(before.connections, 1);
    reverse_ok(c, 1);
    ck_assert_int_eq(amp_status(c, NULL, &after), 0);
    ck_assert_uint_gt(after.jobs_completed, before.jobs_completed);
    /* The loops' turns: added to the daemon's count every 100 ms of them,
     * a loop woken at least once a second. */
    for (int i = 0; i < TURNS_WAIT_TRIES && !after.loop_turns.calls; i++) {
        usleep(TURNS_WAIT_US);
        ck_assert_int_eq(amp_status(c, NULL, &after), 0);
    }
    ck_assert_str_eq(after.loop_turns.stage, "loop_turn");
    ck_assert_uint_gt(after.loop_turns.calls, 0);
    ck_assert_uint_le(after.loop_turns.p50_us, after.loop_turns.p99_us);
    uint64_t turns = 0;
    for (int i = 0; i < AMP_LATENCY_BUCKETS; i++)
        turns += after.loop_turn_buckets[i];
    ck_assert_uint_gt(turns, 0);
    for (size_t i = 0; i < after.nstages; i++)
        ck_assert_str_ne(after.stages[i].stage, "loop_turn");

    int serving = -1;
    ck_assert_int_eq(amp_health(c, NULL, "", &serving), 0);
    ck_assert_int_eq(serving, AMP_HEALTH_SERVING);
    amp_close(c);
}
END_TEST

START_TEST(daemon_killed_between_calls_fails_fast)
{
    struct daemon_proc own;
    ck_assert_int_eq(daemon_start(&own, NULL), 0);
    amp_conn *c = connect_ok(own.address);
    reverse_ok(c, 1);
    kill(own.pid, SIGKILL);
    amp_opts o = { .size = sizeof(amp_opts), .device = NULL, .timeout_ms = GONE_DEADLINE_MS };
    void *out = NULL;
    size_t n;
    /* The request may have gone out before the close was seen (AMP_EIO, not
     * sent again), or the close seen first and the reconnect refused. */
    int rc = amp_reverse(c, &o, "abc", 3, &out, &n);
    ck_assert_msg(rc == AMP_EIO || rc == AMP_ECONNECT, "rc %d (%s): %s", rc, amp_strerror(rc),
                  amp_last_message(c));
    ck_assert_ptr_null(out);
    while (daemon_alive(&own))   /* gone for sure: its listener with it */
        usleep(1000);
    ck_assert_int_eq(amp_reverse(c, &o, "abc", 3, &out, &n), AMP_ECONNECT);
    amp_close(c);
    ck_assert_int_eq(daemon_stop(&own), 128 + SIGKILL);
}
END_TEST

START_TEST(daemon_stopped_then_call_fails_fast)
{
    struct daemon_proc own;
    ck_assert_int_eq(daemon_start(&own, NULL), 0);
    amp_conn *c = connect_ok(own.address);
    reverse_ok(c, 1);
    ck_assert_int_eq(daemon_stop(&own), 0); /* graceful drain, clean exit */
    amp_opts o = { .size = sizeof(amp_opts), .device = NULL, .timeout_ms = GONE_DEADLINE_MS };
    void *out = NULL;
    size_t n;
    int rc = amp_reverse(c, &o, "abc", 3, &out, &n);
    /* Its GOAWAY and close are read before the call: the reconnect finds
     * no socket. */
    ck_assert_msg(rc == AMP_ECONNECT, "rc %d (%s): %s", rc, amp_strerror(rc),
                  amp_last_message(c));
    ck_assert_ptr_nonnull(strstr(amp_last_message(c), "reconnecting"));
    amp_close(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_conns");
    const TTest *const tests[] = {
        many_sequential_calls_one_connection,
        two_connections_interleaved,
        two_connections_two_threads,
        devices_status_health,
        daemon_killed_between_calls_fails_fast,
        daemon_stopped_then_call_fails_fast,
        NULL,
    };
    check_run_case(s, "connections", tests);
    return client_fixture_run(s, NULL);
}
