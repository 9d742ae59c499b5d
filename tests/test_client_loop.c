/* SPDX-License-Identifier: MIT */
/* test_client_loop.c: libampclient in the application's event loop
 * (amp.h: amp_fd, amp_process, amp_call_on_done, amp_start_*), against a
 * real ampd. The loop here is poll() on amp_fd() and nothing else: every
 * operation (reverse, transform, histogram, fill, pipeline, a region job,
 * a stream of several chunks each way) finishes through its callback with
 * the right result; 256 calls in flight kept full for 2,048; a cancel and
 * a blocking call's completions make the descriptor readable and their
 * callbacks run at the next amp_process, and one may free another that is
 * due; a stream whose input callback aborts fails alone; amp_close runs
 * the callbacks still due, once each; the descriptor stays the same when
 * a daemon restart makes the connection reopen. The daemon must exit 0 at
 * the end (under ASan: nothing leaked). */
#include <check.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "client_fixture.h"
#include "daemon_proc.h"

#define LOOP_WAIT_MS 60000   /* a bound for a broken test, never reached when it works */

/* What one callback saw. */
struct seen {
    int calls;       /* times the callback ran */
    int status;
    amp_call *call;  /* the call it got */
};

static void on_done(amp_call *call, void *user)
{
    struct seen *s = user;
    s->calls++;
    s->status = amp_call_status(call);
    s->call = call;
}

/* Runs c's loop (poll on amp_fd, amp_process) until *left is 0. */
static void loop_until(amp_conn *c, const int *left)
{
    int fd = amp_fd(c);
    ck_assert_int_ge(fd, 0);
    while (*left > 0) {
        struct pollfd p = { fd, POLLIN, 0 };
        ck_assert_int_eq(poll(&p, 1, LOOP_WAIT_MS), 1);
        ck_assert_int_eq(amp_process(c), 0);
    }
}

/* Counts callbacks down. */
static int pending;

static void count_down(amp_call *call, void *user)
{
    on_done(call, user);
    pending--;
}

static void take_data(struct seen *s, const uint8_t *want, size_t len)
{
    ck_assert_int_eq(s->calls, 1);
    ck_assert_msg(s->status == 0, "%s: %s", amp_strerror(s->status), amp_call_message(s->call));
    void *out;
    size_t n;
    ck_assert_int_eq(amp_call_data(s->call, &out, &n), 0);
    ck_assert_uint_eq(n, len);
    ck_assert_int_eq(memcmp(out, want, len), 0);
    amp_free(out);
    amp_call_free(s->call);
}

/* A stream's input from memory, and its output into memory. */
struct mem_src {
    const uint8_t *p;
    size_t len, pos;
    int fail_at;     /* nonzero: the read callback aborts with this once it has sent a chunk */
};

static long src_read(void *ctx, void *buf, size_t cap)
{
    struct mem_src *s = ctx;
    if (s->fail_at && s->pos > 0)
        return s->fail_at;
    size_t n = s->len - s->pos < cap ? s->len - s->pos : cap;
    memcpy(buf, s->p + s->pos, n);
    s->pos += n;
    return (long)n;
}

struct mem_sink {
    uint8_t *p;
    size_t len, cap;
};

static int sink_write(void *ctx, const void *buf, size_t len)
{
    struct mem_sink *k = ctx;
    if (len > k->cap - k->len)
        return AMP_EINVAL;
    memcpy(k->p + k->len, buf, len);
    k->len += len;
    return 0;
}

static amp_step step_of(amp_step_kind kind)
{
    amp_step s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    s.kind = kind;
    return s;
}

START_TEST(every_operation_by_callback)
{
    enum { N = 4099, SN = (3 << 20) + 77, K = 7 };
    uint8_t *in = client_fixture_random(N, 11), *sin = client_fixture_random(SN, 12);
    uint8_t rev[N], xr[N];
    for (size_t i = 0; i < N; i++) {
        rev[i] = in[N - 1 - i];
        xr[i] = (uint8_t)(in[N - 1 - i] ^ 0x5a);   /* reverse, then xor */
    }
    struct seen s[K];
    memset(s, 0, sizeof s);
    amp_call *c[K];
    amp_transform_params xp = { .op = AMP_OP_XOR, .value = 0x5a };
    amp_hist_params hp = { .type = AMP_TYPE_UINT8, .bins = 256 };
    amp_fill_params fp = { .type = AMP_TYPE_INT32, .count = 1000, .start = 5, .step = 3 };
    amp_step steps[2] = { step_of(AMP_STEP_REVERSE), step_of(AMP_STEP_TRANSFORM) };
    steps[1].transform = xp;
    amp_region *rin, *rout;
    CLIENT_CHECK_OK(amp_region_create(client_conn, N, &rin));
    CLIENT_CHECK_OK(amp_region_create(client_conn, 2 * N, &rout));   /* both steps' output */
    memcpy(amp_region_data(rin), in, N);
    amp_slice sl_in = { .size = sizeof sl_in, .region = rin, .length = N };
    amp_slice sl_out = { .size = sizeof sl_out, .region = rout, .length = 2 * N };
    /* The stream: xor then a histogram, 3 MiB in and out in chunks. */
    amp_step ssteps[2] = { step_of(AMP_STEP_TRANSFORM), step_of(AMP_STEP_HISTOGRAM) };
    ssteps[0].transform = xp;
    ssteps[1].hist = hp;
    struct mem_src src = { .p = sin, .len = SN };
    struct mem_sink sink = { .p = malloc(SN), .cap = SN };
    amp_hist sh;
    amp_stream_args sa = {
        .size = sizeof sa, .steps = ssteps, .nsteps = 2, .total_length = SN, .in = src_read,
        .in_ctx = &src, .out = sink_write, .out_ctx = &sink, .hists = &sh, .nhists = 1,
    };

    CLIENT_CHECK_OK(amp_start_reverse(client_conn, NULL, in, N, &c[0]));
    CLIENT_CHECK_OK(amp_start_transform(client_conn, NULL, &xp, rev, N, &c[1]));
    CLIENT_CHECK_OK(amp_start_histogram(client_conn, NULL, &hp, in, N, &c[2]));
    CLIENT_CHECK_OK(amp_start_fill(client_conn, NULL, &fp, &c[3]));
    CLIENT_CHECK_OK(amp_start_pipeline(client_conn, NULL, steps, 2, in, N, &c[4]));
    CLIENT_CHECK_OK(amp_start_region(client_conn, NULL, steps, 2, &sl_in, &sl_out, &c[5]));
    CLIENT_CHECK_OK(amp_start_stream(client_conn, NULL, &sa, &c[6]));
    for (int i = 0; i < K; i++)
        ck_assert_int_eq(amp_call_on_done(c[i], count_down, &s[i]), 0);
    pending = K;
    loop_until(client_conn, &pending);
    ck_assert_uint_eq(amp_in_flight(client_conn), 0);
    for (int i = 0; i < K; i++)
        ck_assert_ptr_eq(s[i].call, c[i]);

    take_data(&s[0], rev, N);
    take_data(&s[1], xr, N);   /* xor of the reversed bytes */
    amp_hist h;
    ck_assert_int_eq(amp_call_hist(c[2], &h), 0);
    struct hist_params p = { .type = ELEM_U8, .bins = 256 };
    client_fixture_expect_hist(&h, &p, in, N);
    amp_hist_free(&h);
    amp_call_free(c[2]);
    int32_t want[1000];
    for (int i = 0; i < 1000; i++)
        want[i] = 5 + 3 * i;
    take_data(&s[3], (const uint8_t *)want, sizeof want);

    amp_step_result *r;
    size_t nr;
    ck_assert_int_eq(amp_call_results(c[4], &r, &nr), 0);
    ck_assert_uint_eq(nr, 2);
    ck_assert_uint_eq(r[0].len, N);
    ck_assert_int_eq(memcmp(r[0].data, rev, N), 0);
    ck_assert_uint_eq(r[1].len, N);
    ck_assert_int_eq(memcmp(r[1].data, xr, N), 0);
    amp_step_results_free(r, nr);
    ck_assert_int_eq(amp_call_results(c[4], &r, &nr), AMP_EINVAL);   /* taken once */
    amp_call_free(c[4]);

    ck_assert_int_eq(s[5].status, 0);
    ck_assert_int_eq(amp_call_results(c[5], &r, &nr), 0);
    ck_assert_uint_eq(nr, 2);
    ck_assert_ptr_null(r[1].data);
    ck_assert_uint_eq(r[1].region_offset, N);
    ck_assert_int_eq(memcmp(amp_region_data(rout), rev, N), 0);
    ck_assert_int_eq(memcmp((uint8_t *)amp_region_data(rout) + N, xr, N), 0);
    amp_step_results_free(r, nr);
    amp_call_free(c[5]);

    ck_assert_msg(s[6].status == 0, "%s: %s", amp_strerror(s[6].status),
                  amp_call_message(c[6]));
    ck_assert_uint_eq(sink.len, SN);
    for (size_t i = 0; i < SN; i++)
        if (sink.p[i] != (uint8_t)(sin[i] ^ 0x5a))
            ck_abort_msg("stream output byte %zu", i);
    client_fixture_expect_hist(&sh, &p, sink.p, SN);   /* the histogram step sees the xor's output */
    amp_hist_free(&sh);
    amp_call_free(c[6]);

    amp_region_release(rin);
    amp_region_release(rout);
    free(sink.p);
    free(in);
    free(sin);
}
END_TEST

/* 256 in flight on one connection, each finished call replaced by the
 * next from its callback, 2,048 in all, each with its own answer. */
#define MANY_IN_FLIGHT 256
#define MANY_TOTAL 2048
#define MANY_LEN 64

static uint8_t many_in[MANY_TOTAL][MANY_LEN];
static int many_started, many_ok, many_bad;

static void many_done(amp_call *call, void *user);

static void many_start(amp_conn *c)
{
    int i = many_started++;
    amp_call *call;
    if (amp_start_reverse(c, NULL, many_in[i], MANY_LEN, &call) != 0 ||
        amp_call_on_done(call, many_done, (void *)(intptr_t)i) != 0) {
        many_bad++;
        pending--;
    }
}

static void many_done(amp_call *call, void *user)
{
    int i = (int)(intptr_t)user;
    void *out;
    size_t n;
    int ok = amp_call_data(call, &out, &n) == 0 && n == MANY_LEN;
    for (size_t j = 0; ok && j < MANY_LEN; j++)
        ok = ((uint8_t *)out)[j] == many_in[i][MANY_LEN - 1 - j];
    if (ok)
        amp_free(out);
    many_ok += ok;
    many_bad += !ok;
    amp_call_free(call);
    pending--;
    if (many_started < MANY_TOTAL)
        many_start(client_conn);
}

START_TEST(many_in_flight_refilled_from_callbacks)
{
    for (int i = 0; i < MANY_TOTAL; i++)
        for (int j = 0; j < MANY_LEN; j++)
            many_in[i][j] = (uint8_t)(i * 31 + j * 7);
    pending = MANY_TOTAL;
    for (int i = 0; i < MANY_IN_FLIGHT; i++)
        many_start(client_conn);
    ck_assert_uint_eq(amp_in_flight(client_conn), MANY_IN_FLIGHT);
    loop_until(client_conn, &pending);
    ck_assert_int_eq(many_bad, 0);
    ck_assert_int_eq(many_ok, MANY_TOTAL);
}
END_TEST

/* A cancel, and calls a blocking call moved to their end, raise the
 * descriptor; their callbacks run at the next amp_process, not before. */
START_TEST(completions_outside_process_raise_the_fd)
{
    int fd = amp_fd(client_conn);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(amp_fd(client_conn), fd);   /* the same one every time */
    static uint8_t buf[256];
    amp_call *a, *b;
    struct seen sa = { 0 }, sb = { 0 };
    CLIENT_CHECK_OK(amp_start_reverse(client_conn, NULL, buf, sizeof buf, &a));
    CLIENT_CHECK_OK(amp_start_reverse(client_conn, NULL, buf, sizeof buf, &b));
    ck_assert_int_eq(amp_call_on_done(a, on_done, &sa), 0);
    ck_assert_int_eq(amp_call_on_done(b, on_done, &sb), 0);
    ck_assert_int_eq(amp_cancel(a), 0);
    ck_assert_int_eq(sa.calls, 0);   /* not from inside amp_cancel */
    void *out;
    size_t n;
    CLIENT_CHECK_OK(amp_reverse(client_conn, NULL, "xy", 2, &out, &n));   /* moves b */
    amp_free(out);
    struct pollfd p = { fd, POLLIN, 0 };
    ck_assert_int_eq(poll(&p, 1, 0), 1);
    while (sb.calls == 0) {
        ck_assert_int_eq(amp_process(client_conn), 0);
        ck_assert_int_eq(poll(&p, 1, sb.calls ? 0 : LOOP_WAIT_MS), sb.calls ? 0 : 1);
    }
    ck_assert_int_eq(sa.calls, 1);
    ck_assert_int_eq(sa.status, AMP_ECANCELLED);
    ck_assert_int_eq(sb.calls, 1);
    ck_assert_int_eq(sb.status, 0);
    /* Nothing left: the descriptor is quiet, and amp_process does nothing. */
    ck_assert_int_eq(amp_process(client_conn), 0);
    ck_assert_int_eq(poll(&p, 1, 0), 0);
    amp_wait(client_conn, 0, &a);   /* handed to callbacks: amp_wait has none */
    ck_assert_ptr_null(a);
    amp_call_free(sa.call);
    amp_call_free(sb.call);
}
END_TEST

/* A callback that frees another call whose callback is due: that one is
 * gone (no callback), and nothing touches it after (ASan would see it).
 * amp_process and amp_wait refuse to run from inside a callback. */
static amp_call *victim;

static void free_the_other(amp_call *call, void *user)
{
    on_done(call, user);
    amp_call *none = (amp_call *)1;   /* no nesting: the loop is running this */
    ck_assert_int_eq(amp_process(client_conn), AMP_EINVAL);
    ck_assert_int_eq(amp_wait(client_conn, 0, &none), AMP_EINVAL);
    ck_assert_ptr_null(none);
    amp_call_free(victim);
    victim = NULL;
}

START_TEST(a_callback_frees_another_due)
{
    amp_call *a;
    struct seen sa = { 0 }, sv = { 0 };
    CLIENT_CHECK_OK(amp_start_reverse(client_conn, NULL, "ab", 2, &a));
    CLIENT_CHECK_OK(amp_start_reverse(client_conn, NULL, "cd", 2, &victim));
    ck_assert_int_eq(amp_call_on_done(a, free_the_other, &sa), 0);
    ck_assert_int_eq(amp_call_on_done(victim, on_done, &sv), 0);
    ck_assert_int_eq(amp_cancel(a), 0);
    ck_assert_int_eq(amp_cancel(victim), 0);
    ck_assert_int_eq(amp_process(client_conn), 0);
    ck_assert_int_eq(sa.calls, 1);
    ck_assert_int_eq(sv.calls, 0);
    ck_assert_ptr_null(victim);
    ck_assert_uint_eq(amp_in_flight(client_conn), 0);
    amp_call_free(a);
}
END_TEST

/* A stream whose input aborts fails alone with the code it gave; a call
 * beside it and the connection carry on. */
START_TEST(stream_input_abort_fails_alone)
{
    enum { SN = 3 << 20 };
    uint8_t *sin = client_fixture_random(SN, 5);
    amp_step st = step_of(AMP_STEP_REVERSE);
    struct mem_src src = { .p = sin, .len = SN, .fail_at = AMP_EABORTED };
    amp_stream_args sa = {
        .size = sizeof sa, .steps = &st, .nsteps = 1, .total_length = SN, .in = src_read,
        .in_ctx = &src,
    };
    amp_call *c, *r;
    struct seen s = { 0 }, sr = { 0 };
    CLIENT_CHECK_OK(amp_start_stream(client_conn, NULL, &sa, &c));
    CLIENT_CHECK_OK(amp_start_reverse(client_conn, NULL, "abc", 3, &r));
    ck_assert_int_eq(amp_call_on_done(c, count_down, &s), 0);
    ck_assert_int_eq(amp_call_on_done(r, count_down, &sr), 0);
    pending = 2;
    loop_until(client_conn, &pending);
    ck_assert_int_eq(s.status, AMP_EABORTED);
    ck_assert_ptr_nonnull(strstr(amp_call_message(c), "input callback"));
    take_data(&sr, (const uint8_t *)"cba", 3);
    amp_call_free(c);
    void *out;
    size_t n;
    CLIENT_CHECK_OK(amp_reverse(client_conn, NULL, "ok", 2, &out, &n));
    amp_free(out);
    free(sin);
}
END_TEST

/* amp_close runs every callback still due, once, with AMP_EIO; starting a
 * call from one of them is refused. */
static void start_from_close(amp_call *call, void *user)
{
    on_done(call, user);
    amp_call *more = NULL;
    ck_assert_int_eq(amp_start_reverse(client_conn, NULL, "a", 1, &more), AMP_EINVAL);
    ck_assert_ptr_null(more);
}

START_TEST(close_runs_the_callbacks_due)
{
    enum { N = 8 };
    static uint8_t buf[1 << 16];
    amp_call *c[N];
    struct seen s[N];
    memset(s, 0, sizeof s);
    for (int i = 0; i < N; i++) {
        CLIENT_CHECK_OK(amp_start_reverse(client_conn, NULL, buf, sizeof buf, &c[i]));
        ck_assert_int_eq(amp_call_on_done(c[i], start_from_close, &s[i]), 0);
    }
    amp_close(client_conn);
    client_conn = NULL;   /* the fixture's close then finds nothing to close */
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(s[i].calls, 1);
        ck_assert_int_eq(s[i].status, AMP_EIO);
        ck_assert_int_eq(amp_call_on_done(c[i], on_done, &s[i]), AMP_EINVAL);
        amp_call_free(c[i]);
    }
}
END_TEST

/* The daemon restarts under an idle connection in a loop: its end makes
 * the descriptor readable, amp_process takes it in without an error (and
 * the descriptor goes quiet: no busy loop on a dead socket), and the next
 * call reconnects under the same descriptor. Its own daemon, to restart. */
START_TEST(same_fd_across_a_daemon_restart)
{
    struct daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, NULL), 0);
    char address[300];
    snprintf(address, sizeof address, "unix:%s", d.sock_path);
    amp_conn *c;
    ck_assert_int_eq(amp_connect(address, &c), 0);
    int fd = amp_fd(c);
    ck_assert_int_ge(fd, 0);
    for (int round = 0; round < 2; round++) {
        amp_call *call;
        struct seen s = { 0 };
        ck_assert_int_eq(amp_start_reverse(c, NULL, "abc", 3, &call), 0);
        ck_assert_int_eq(amp_call_on_done(call, count_down, &s), 0);
        pending = 1;
        loop_until(c, &pending);
        ck_assert_int_eq(s.status, 0);
        amp_call_free(call);
        ck_assert_int_eq(amp_fd(c), fd);
        if (round == 1)
            break;
        ck_assert_int_ge(daemon_restart(&d, NULL), 0);   /* the old one exited: its end waits */
        struct pollfd p = { fd, POLLIN, 0 };
        ck_assert_int_eq(poll(&p, 1, LOOP_WAIT_MS), 1);
        int rounds = 0;
        while (poll(&p, 1, 0) == 1 && rounds++ < 100)
            ck_assert_int_eq(amp_process(c), 0);
        ck_assert_int_eq(poll(&p, 1, 0), 0);
    }
    amp_close(c);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

START_TEST(argument_checks)
{
    ck_assert_int_eq(amp_fd(NULL), AMP_EINVAL);
    ck_assert_int_eq(amp_process(NULL), AMP_EINVAL);
    ck_assert_int_eq(amp_call_on_done(NULL, on_done, NULL), AMP_EINVAL);
    amp_call *c = (amp_call *)1;
    ck_assert_int_eq(amp_start_fill(client_conn, NULL, NULL, &c), AMP_EINVAL);
    ck_assert_ptr_null(c);
    ck_assert_ptr_nonnull(strstr(amp_last_message(client_conn), "params"));
    ck_assert_int_eq(amp_start_pipeline(client_conn, NULL, NULL, 0, NULL, 0, &c), AMP_EINVAL);
    ck_assert_int_eq(amp_start_stream(client_conn, NULL, NULL, &c), AMP_EINVAL);
    amp_step st = step_of(AMP_STEP_REVERSE);
    ck_assert_int_eq(amp_start_region(client_conn, NULL, &st, 1, NULL, NULL, &c), AMP_EINVAL);
    ck_assert_ptr_nonnull(strstr(amp_last_message(client_conn), "out must name a region"));
    amp_step_result *r = (amp_step_result *)1;
    size_t n = 1;
    ck_assert_int_eq(amp_call_results(NULL, &r, &n), AMP_EINVAL);
    ck_assert_ptr_null(r);
    ck_assert_uint_eq(n, 0);
    ck_assert_uint_eq(amp_in_flight(client_conn), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_loop");
    const TTest *const tests[] = {
        every_operation_by_callback,
        many_in_flight_refilled_from_callbacks,
        completions_outside_process_raise_the_fd,
        a_callback_frees_another_due,
        stream_input_abort_fails_alone,
        close_runs_the_callbacks_due,
        same_fd_across_a_daemon_restart,
        argument_checks,
        NULL,
    };
    TCase *tc = check_run_case(s, "loop", tests);
    tcase_set_timeout(tc, 600);
    tcase_add_checked_fixture(tc, client_fixture_open, client_fixture_close);
    return client_fixture_run(s, NULL);
}
