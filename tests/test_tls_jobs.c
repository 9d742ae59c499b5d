/* SPDX-License-Identifier: MIT */
/* test_tls_jobs.c: jobs over TLS through libampclient: unary calls of each
 * kind, a streamed transform with a histogram whose output is checked
 * byte for byte, and SIGHUP re-reading the certificate (new connections
 * see the new one, a connection already open keeps going, a file that
 * does not load leaves the old one in place), and a connection the daemon
 * closed when idle reopening with a new handshake from the options it was
 * made with; and the event-loop interface over TLS (amp_fd, amp_process,
 * callbacks): 256 reverses in flight and a stream of several chunks. The
 * daemon exits 0 after each (no leak at exit under ASan). */
#include <check.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "hostile.h"
#include "tls_fixture.h"

#define STREAM_BYTES (8u * 1024 * 1024 + 123)   /* several chunks, and a short last one */
#define CALL_MS 120000
#define RELOAD_WAIT_MS 10000
#define IDLE_S "1"                /* --idle-timeout */
#define IDLE_WAIT_MS 2500         /* past it: the daemon has closed an idle connection */

static const amp_opts call_opts = { .size = sizeof(amp_opts), .timeout_ms = CALL_MS };

START_TEST(unary_jobs)
{
    struct daemon_proc d;
    int port;
    tls_fixture_start(&d, NULL, NULL, NULL, &port);
    amp_conn *c;
    ck_assert_int_eq(tls_fixture_connect(port, "ca.pem", NULL, NULL, &c), 0);
    ck_assert_int_eq(tls_fixture_reverse(c), 0);
    uint8_t in[100000];
    for (size_t i = 0; i < sizeof in; i++)
        in[i] = (uint8_t)(i * 31);
    amp_transform_params tp = { .op = AMP_OP_ADD, .value = 7 };
    void *out = NULL;
    size_t len = 0;
    ck_assert_int_eq(amp_transform(c, &call_opts, &tp, in, sizeof in, &out, &len), 0);
    ck_assert_uint_eq(len, sizeof in);
    for (size_t i = 0; i < sizeof in; i++)
        ck_assert_uint_eq(((uint8_t *)out)[i], (uint8_t)(in[i] + 7));
    amp_free(out);
    amp_hist_params hp = { .type = AMP_TYPE_UINT8 };
    amp_hist h;
    ck_assert_int_eq(amp_histogram(c, &call_opts, &hp, in, sizeof in, &h), 0);
    uint64_t total = 0;
    for (uint32_t b = 0; b < h.bins; b++)
        total += h.counts[b];
    ck_assert_uint_eq(total, sizeof in);
    amp_hist_free(&h);
    amp_close(c);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

struct sink {
    uint8_t *buf;
    size_t len;
};

static int sink_write(void *ctx, const void *buf, size_t len)
{
    struct sink *s = ctx;
    if (s->len + len > STREAM_BYTES)
        return AMP_EINVAL;
    memcpy(s->buf + s->len, buf, len);
    s->len += len;
    return 0;
}

START_TEST(stream_transform_and_hist)
{
    struct daemon_proc d;
    int port;
    tls_fixture_start(&d, NULL, NULL, NULL, &port);
    amp_conn *c;
    ck_assert_int_eq(tls_fixture_connect(port, "ca.pem", NULL, "localhost", &c), 0);
    uint8_t *in = malloc(STREAM_BYTES);
    struct sink s = { malloc(STREAM_BYTES), 0 };
    ck_assert(in && s.buf);
    uint64_t counts[256] = { 0 };
    for (size_t i = 0; i < STREAM_BYTES; i++) {
        in[i] = (uint8_t)((i * 2654435761u) >> 13);
        counts[in[i] ^ 0x5a]++;
    }
    amp_step steps[2] = {
        { .size = sizeof(amp_step), .kind = AMP_STEP_TRANSFORM,
          .transform = { .op = AMP_OP_XOR, .value = 0x5a } },
        { .size = sizeof(amp_step), .kind = AMP_STEP_HISTOGRAM,
          .hist = { .type = AMP_TYPE_UINT8 } },
    };
    amp_hist h;
    int rc = amp_stream_mem(c, &call_opts, steps, 2, in, STREAM_BYTES, sink_write, &s, &h, 1);
    ck_assert_msg(rc == 0, "%s: %s", amp_strerror(rc), amp_last_message(c));
    ck_assert_uint_eq(s.len, STREAM_BYTES);
    for (size_t i = 0; i < STREAM_BYTES; i++)
        ck_assert_uint_eq(s.buf[i], in[i] ^ 0x5a);
    for (int b = 0; b < 256; b++)
        ck_assert_uint_eq(h.counts[b], counts[b]);
    amp_hist_free(&h);
    free(in);
    free(s.buf);
    amp_close(c);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

static void copy_file(const char *from, const char *to)
{
    char a[TLS_FIXTURE_PATH_MAX], b[TLS_FIXTURE_PATH_MAX], cmd[2 * TLS_FIXTURE_PATH_MAX + 16];
    _Static_assert(sizeof cmd > 2 * TLS_FIXTURE_PATH_MAX + 8, "room for cp and quotes");
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", tls_fixture_file(from, a), tls_fixture_file(to, b));
    ck_assert_int_eq(system(cmd), 0);
}

/* Connects trusting ca until that works or RELOAD_WAIT_MS pass (SIGHUP
 * is handled asynchronously). */
static int connect_within(int port, const char *ca)
{
    long long end = hostile_now_ms() + RELOAD_WAIT_MS;
    int rc;
    do {
        amp_conn *c;
        rc = tls_fixture_connect(port, ca, NULL, NULL, &c);
        if (rc == 0) {
            rc = tls_fixture_reverse(c);
            amp_close(c);
        }
        if (rc != 0)
            hostile_sleep_ms(50);
    } while (rc != 0 && hostile_now_ms() < end);
    return rc;
}

START_TEST(sighup_reloads_certificate)
{
    copy_file("server.pem", "live.pem");
    copy_file("server.key", "live.key");
    struct daemon_proc d;
    int port;
    tls_fixture_start(&d, "live.pem", "live.key", NULL, &port);
    amp_conn *old;
    ck_assert_int_eq(tls_fixture_connect(port, "ca.pem", NULL, NULL, &old), 0);
    ck_assert_int_eq(tls_fixture_reverse(old), 0);

    copy_file("other-server.pem", "live.pem");
    copy_file("other-server.key", "live.key");
    ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
    ck_assert_int_eq(connect_within(port, "other-ca.pem"), 0);
    amp_conn *c;
    ck_assert_int_eq(tls_fixture_connect(port, "ca.pem", NULL, NULL, &c), AMP_ETLS);
    ck_assert_int_eq(tls_fixture_reverse(old), 0);   /* keeps its session */

    /* A key that does not match: the reload fails, the last good pair stays. */
    copy_file("server.key", "live.key");
    ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
    hostile_sleep_ms(500);
    ck_assert_int_eq(connect_within(port, "other-ca.pem"), 0);
    ck_assert(daemon_alive(&d));
    amp_close(old);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* The connection reopens over TLS after the daemon's idle close, with
 * the CA it was made with (tls_fixture_connect's paths were on its stack:
 * the library kept copies), and verifies the daemon again: once the
 * daemon serves a certificate of another CA, the reopening fails. */
START_TEST(reconnect_handshakes_again)
{
    static const char *const args[] = { "--idle-timeout", IDLE_S, NULL };
    copy_file("server.pem", "live.pem");
    copy_file("server.key", "live.key");
    struct daemon_proc d;
    int port;
    tls_fixture_start(&d, "live.pem", "live.key", args, &port);
    amp_conn *c;
    ck_assert_int_eq(tls_fixture_connect(port, "ca.pem", NULL, NULL, &c), 0);
    ck_assert_int_eq(tls_fixture_reverse(c), 0);
    hostile_sleep_ms(IDLE_WAIT_MS);
    ck_assert_int_eq(tls_fixture_reverse(c), 0);

    copy_file("other-server.pem", "live.pem");
    copy_file("other-server.key", "live.key");
    ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
    ck_assert_int_eq(connect_within(port, "other-ca.pem"), 0);
    hostile_sleep_ms(IDLE_WAIT_MS);
    int rc = tls_fixture_reverse(c);
    ck_assert_msg(rc == AMP_ETLS, "after the idle close: %s (%s)", amp_strerror(rc),
                  amp_last_message(c));
    amp_close(c);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* --- the event loop over TLS ------------------------------------------- */

#define LOOP_CALLS 256
#define LOOP_LEN 1000

static int loop_pending;

static void loop_done(amp_call *call, void *user)
{
    (void)call;
    (void)user;
    loop_pending--;
}

static long loop_read(void *ctx, void *buf, size_t cap)
{
    size_t *left = ctx;
    size_t n = *left < cap ? *left : cap;
    memset(buf, 0x21, n);
    *left -= n;
    return (long)n;
}

static int loop_write(void *ctx, const void *buf, size_t len)
{
    size_t *got = ctx;
    for (size_t i = 0; i < len; i++)
        if (((const uint8_t *)buf)[i] != (0x21 ^ 0x5a))
            return AMP_EINVAL;
    *got += len;
    return 0;
}

START_TEST(event_loop_over_tls)
{
    struct daemon_proc d;
    int port;
    tls_fixture_start(&d, NULL, NULL, NULL, &port);
    amp_conn *c;
    ck_assert_int_eq(tls_fixture_connect(port, "ca.pem", NULL, NULL, &c), 0);
    static uint8_t in[LOOP_CALLS][LOOP_LEN];
    amp_call *calls[LOOP_CALLS + 1];
    for (int i = 0; i < LOOP_CALLS; i++) {
        memset(in[i], i, LOOP_LEN);
        in[i][0] = 0xff;
        ck_assert_int_eq(amp_start_reverse(c, &call_opts, in[i], LOOP_LEN, &calls[i]), 0);
        ck_assert_int_eq(amp_call_on_done(calls[i], loop_done, NULL), 0);
    }
    amp_step xor = { .size = sizeof xor, .kind = AMP_STEP_TRANSFORM,
                     .transform = { .op = AMP_OP_XOR, .value = 0x5a } };
    size_t left = STREAM_BYTES, got = 0;
    amp_stream_args a = { .size = sizeof a, .steps = &xor, .nsteps = 1,
                          .total_length = STREAM_BYTES, .in = loop_read, .in_ctx = &left,
                          .out = loop_write, .out_ctx = &got };
    ck_assert_int_eq(amp_start_stream(c, &call_opts, &a, &calls[LOOP_CALLS]), 0);
    ck_assert_int_eq(amp_call_on_done(calls[LOOP_CALLS], loop_done, NULL), 0);
    loop_pending = LOOP_CALLS + 1;
    int fd = amp_fd(c);
    while (loop_pending > 0) {
        struct pollfd p = { fd, POLLIN, 0 };
        ck_assert_int_eq(poll(&p, 1, CALL_MS), 1);
        ck_assert_int_eq(amp_process(c), 0);
    }
    for (int i = 0; i < LOOP_CALLS; i++) {
        void *out;
        size_t n;
        ck_assert_int_eq(amp_call_data(calls[i], &out, &n), 0);
        ck_assert_uint_eq(n, LOOP_LEN);
        ck_assert_uint_eq(((uint8_t *)out)[LOOP_LEN - 1], 0xff);
        ck_assert_uint_eq(((uint8_t *)out)[0], (uint8_t)i);
        amp_free(out);
        amp_call_free(calls[i]);
    }
    ck_assert_msg(amp_call_status(calls[LOOP_CALLS]) == 0, "%s",
                  amp_call_message(calls[LOOP_CALLS]));
    ck_assert_uint_eq(got, STREAM_BYTES);
    amp_call_free(calls[LOOP_CALLS]);
    amp_close(c);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

int main(void)
{
    if (tls_fixture_init() != 0)
        return EXIT_FAILURE;
    Suite *s = suite_create("tls_jobs");
    const TTest *const tests[] = {
        unary_jobs,
        stream_transform_and_hist,
        sighup_reloads_certificate,
        reconnect_handshakes_again,
        event_loop_over_tls,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 300);
    int rc = check_run(s, CK_FORK_GETENV);
    tls_fixture_cleanup();
    return rc;
}
