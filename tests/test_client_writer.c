/* SPDX-License-Identifier: MIT */
/* test_client_writer.c: a plain connection's writer thread
 * (client/conn_writer.c), which writes large batches of a request while
 * the caller's thread reads the replies, through a real ampd.
 *
 * Good paths: a 64 MiB amp_stream_mem transform and a 32 MiB unary
 * transform come back byte for byte, with the writer used (its batch
 * count, read through the library's private conn.h, grows); large async
 * calls in flight at once each get their own result; tiny calls never
 * start the thread. Bad paths, each on a daemon of its own: a call's
 * deadline passing while the writer waits on a daemon that reads nothing
 * (SIGSTOP), amp_cancel and amp_close while it does, and a daemon killed
 * mid-stream all end promptly with the right code, the thread joined
 * (ASan: nothing leaks). After a deadline or a cancel the caller frees
 * the request, the daemon goes on, and the connection serves the next
 * call: the frame's rest went out, in order, from a copy (ASan would see
 * a send from the freed request).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "amp.h"
#include "check_run.h"
#include "client_fixture.h"
#include "daemon_proc.h"
/* The library's, by path: quoted includes find the daemon's conn.h first. */
#include "../client/conn.h"

#define MIB ((size_t)1 << 20)
#define WRITER_STREAM_LEN (64 * MIB + 4093)   /* odd tail: the last frame is short */
#define WRITER_UNARY_LEN (32 * MIB + 17)
#define WRITER_ASYNC_CALLS 4
#define WRITER_ASYNC_LEN (6 * MIB + 1)
#define WRITER_XOR 0x5a
#define WRITER_KILL_AFTER (8 * MIB)    /* output seen before the daemon is killed */
#define WRITER_DEADLINE_MS 300
#define WRITER_PROMPT_MS 10000         /* "promptly", with ASan on a loaded machine */
#define WRITER_STOPPED_US 200000       /* the writer's time to fill the socket and wait */

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t batches(amp_conn *c)
{
    return conn_writer_batches(&c->writer);
}

/* in XORed with WRITER_XOR: what the daemon should send back. */
static uint8_t *xor_of(const uint8_t *in, size_t n)
{
    uint8_t *want = malloc(n);
    ck_assert_ptr_nonnull(want);
    for (size_t i = 0; i < n; i++)
        want[i] = in[i] ^ WRITER_XOR;
    return want;
}

static const amp_transform_params xor_params = { .op = AMP_OP_XOR, .value = WRITER_XOR };

/* A stream's output, checked as it arrives; kills pid once kill_after
 * bytes came (0: never), noting the writer's batch count then. */
struct sink {
    amp_conn *c;
    const uint8_t *want;
    size_t len, got;
    int differs;
    pid_t pid;
    size_t kill_after;
    uint64_t batches_at_kill;
};

static int sink_write(void *ctx, const void *buf, size_t len)
{
    struct sink *s = ctx;
    ck_assert_uint_le(s->got + len, s->len);
    if (!s->differs && s->want && memcmp(buf, s->want + s->got, len) != 0)
        s->differs = 1;
    s->got += len;
    if (s->kill_after && s->got >= s->kill_after && !s->batches_at_kill) {
        s->batches_at_kill = batches(s->c) + 1;   /* + 1: set even when none ran */
        ck_assert_int_eq(kill(s->pid, SIGKILL), 0);
    }
    return 0;
}

static amp_step xor_step(void)
{
    amp_step st = { .size = sizeof st, .kind = AMP_STEP_TRANSFORM, .transform = xor_params };
    return st;
}

/* A daemon of the test's own (to stop or kill) and a connection to it
 * whose session has the daemon's settings and windows: a first small call
 * went through. */
static amp_conn *own_daemon(struct daemon_proc *d)
{
    ck_assert_int_eq(daemon_start(d, NULL), 0);
    amp_conn *c = NULL;
    ck_assert_int_eq(amp_connect(d->address, &c), 0);
    void *out;
    size_t n;
    ck_assert_int_eq(amp_reverse(c, NULL, "ab", 2, &out, &n), 0);
    amp_free(out);
    return c;
}

/* --- good paths ------------------------------------------------------------------ */

START_TEST(large_stream_comes_back_whole)
{
    size_t n = WRITER_STREAM_LEN;
    uint8_t *in = client_fixture_random(n, 41), *want = xor_of(in, n);
    amp_step st = xor_step();
    uint64_t before = batches(client_conn);
    struct sink k = { .c = client_conn, .want = want, .len = n };
    CLIENT_CHECK_OK(amp_stream_mem(client_conn, NULL, &st, 1, in, n, sink_write, &k, NULL, 0));
    ck_assert_uint_eq(k.got, n);
    ck_assert_msg(!k.differs, "the output differs from the input XORed");
    /* Most of the 1 MiB frames went through the writer (window-limited
     * ones may be shorter and go inline). */
    ck_assert_uint_ge(batches(client_conn) - before, n / MIB / 2);
    ck_assert(!conn_writer_handed(&client_conn->writer));
    free(want);
    free(in);
}
END_TEST

START_TEST(large_unary_comes_back_whole)
{
    size_t n = WRITER_UNARY_LEN;
    uint8_t *in = client_fixture_random(n, 43), *want = xor_of(in, n);
    uint64_t before = batches(client_conn);
    void *out = NULL;
    size_t out_len = 0;
    CLIENT_CHECK_OK(amp_transform(client_conn, NULL, &xor_params, in, n, &out, &out_len));
    ck_assert_uint_eq(out_len, n);
    ck_assert_int_eq(memcmp(out, want, n), 0);
    ck_assert_uint_ge(batches(client_conn) - before, n / MIB / 2);
    amp_free(out);
    /* The connection goes on: a tiny call after it. */
    CLIENT_CHECK_OK(amp_reverse(client_conn, NULL, "xyz", 3, &out, &out_len));
    ck_assert_int_eq(memcmp(out, "zyx", 3), 0);
    amp_free(out);
    free(want);
    free(in);
}
END_TEST

START_TEST(async_large_calls_each_their_own)
{
    uint8_t *in[WRITER_ASYNC_CALLS];
    amp_call *calls[WRITER_ASYNC_CALLS];
    uint64_t before = batches(client_conn);
    for (int i = 0; i < WRITER_ASYNC_CALLS; i++) {
        in[i] = client_fixture_random(WRITER_ASYNC_LEN, 50 + (uint64_t)i);
        CLIENT_CHECK_OK(amp_start_transform(client_conn, NULL, &xor_params, in[i],
                                            WRITER_ASYNC_LEN, &calls[i]));
        amp_call_set_user(calls[i], in[i]);
    }
    for (int i = 0; i < WRITER_ASYNC_CALLS; i++) {
        amp_call *done = NULL;
        CLIENT_CHECK_OK(amp_wait(client_conn, 120000, &done));
        ck_assert_int_eq(amp_call_status(done), 0);
        void *out;
        size_t out_len;
        ck_assert_int_eq(amp_call_data(done, &out, &out_len), 0);
        ck_assert_uint_eq(out_len, WRITER_ASYNC_LEN);
        uint8_t *want = xor_of(amp_call_user(done), WRITER_ASYNC_LEN);
        ck_assert_int_eq(memcmp(out, want, WRITER_ASYNC_LEN), 0);
        free(want);
        amp_free(out);
        amp_call_free(done);
    }
    ck_assert_uint_gt(batches(client_conn) - before, 0);
    for (int i = 0; i < WRITER_ASYNC_CALLS; i++)
        free(in[i]);
}
END_TEST

START_TEST(tiny_calls_start_no_thread)
{
    static uint8_t in[64 * 1024];
    for (int i = 0; i < 20; i++) {
        void *out;
        size_t n;
        CLIENT_CHECK_OK(amp_transform(client_conn, NULL, &xor_params, in, sizeof in, &out, &n));
        ck_assert_uint_eq(n, sizeof in);
        amp_free(out);
    }
    ck_assert_uint_eq(batches(client_conn), 0);
    ck_assert_ptr_null(client_conn->writer.thread);
}
END_TEST

/* --- bad paths ------------------------------------------------------------------- */

/* Stops d, starts a transform of in (WRITER_UNARY_LEN bytes) on c, has
 * the next frame handed behind the first, and lets the writer fill the
 * socket; *handed: the batches the writer holds (both sets: the call's end
 * must stop both and keep what is left of them in order). Returns
 * amp_start_transform's code. */
static int start_on_stopped(amp_conn *c, struct daemon_proc *d, const uint8_t *in,
                            amp_call **call, int *handed)
{
    ck_assert_int_eq(kill(d->pid, SIGSTOP), 0);
    int rc = amp_start_transform(c, NULL, &xor_params, in, WRITER_UNARY_LEN, call);
    conn_flush_nowait(c);
    *handed = conn_writer_handed(&c->writer);
    usleep(WRITER_STOPPED_US);
    return rc;
}

/* After a call ended mid-write (d running again): c still answers a
 * call, then closes, and d stops cleanly. */
static void serves_on_then_close(amp_conn *c, struct daemon_proc *d)
{
    void *out = NULL;
    size_t n = 0;
    ck_assert_int_eq(amp_reverse(c, NULL, "ab", 2, &out, &n), 0);
    ck_assert_int_eq(memcmp(out, "ba", 2), 0);
    amp_free(out);
    amp_close(c);
    ck_assert_int_eq(daemon_stop(d), 0);
}

/* The daemon reads nothing (stopped): the writer fills the socket and
 * waits; the call's deadline ends it, and the connection closes. */
START_TEST(deadline_while_the_writer_waits)
{
    struct daemon_proc d;
    amp_conn *c = own_daemon(&d);
    uint8_t *in = client_fixture_random(WRITER_UNARY_LEN, 45);
    ck_assert_int_eq(kill(d.pid, SIGSTOP), 0);
    amp_opts o = { .size = sizeof o, .timeout_ms = WRITER_DEADLINE_MS };
    void *out = NULL;
    size_t n = 0;
    long long t0 = now_ms();
    int rc = amp_transform(c, &o, &xor_params, in, WRITER_UNARY_LEN, &out, &n);
    long long took = now_ms() - t0;
    uint64_t ran = batches(c);
    /* The request is the caller's again: the rest of its frame was copied
     * (ASan sees a send from freed memory) and goes out once the daemon
     * reads, then the stream's reset, so the connection serves on. */
    free(in);
    kill(d.pid, SIGCONT);
    ck_assert_msg(rc == AMP_EDEADLINE, "%s", amp_strerror(rc));
    ck_assert_ptr_null(out);
    ck_assert_int_lt(took, WRITER_DEADLINE_MS + WRITER_PROMPT_MS);
    ck_assert_uint_gt(ran, 0);   /* the writer had the frame the daemon never read */
    serves_on_then_close(c, &d);
}
END_TEST

/* amp_cancel while the writer is mid-batch: the call ends at once, its
 * input is the caller's again, and the connection closes cleanly. */
START_TEST(cancel_while_the_writer_waits)
{
    struct daemon_proc d;
    amp_conn *c = own_daemon(&d);
    uint8_t *in = client_fixture_random(WRITER_UNARY_LEN, 46);
    amp_call *call = NULL;
    int handed = 0;
    int rc = start_on_stopped(c, &d, in, &call, &handed);
    long long t0 = now_ms();
    int cancelled = amp_cancel(call);
    long long took = now_ms() - t0;
    int status = amp_call_status(call);
    amp_call_free(call);
    free(in);   /* as above: nothing may send from it now */
    kill(d.pid, SIGCONT);
    ck_assert_int_eq(rc, 0);
    ck_assert_msg(handed == CONN_OUTS, "the writer holds %d batches, not %d", handed, CONN_OUTS);
    ck_assert_int_eq(cancelled, 0);
    ck_assert_int_eq(status, AMP_ECANCELLED);
    ck_assert_int_lt(took, WRITER_PROMPT_MS);
    serves_on_then_close(c, &d);
}
END_TEST

/* amp_close while the writer is mid-batch (an async call's request, the
 * daemon stopped): it returns at once, the call ends with AMP_EIO. */
START_TEST(close_while_the_writer_waits)
{
    struct daemon_proc d;
    amp_conn *c = own_daemon(&d);
    uint8_t *in = client_fixture_random(WRITER_UNARY_LEN, 47);
    amp_call *call = NULL;
    int handed = 0;
    int rc = start_on_stopped(c, &d, in, &call, &handed);
    long long t0 = now_ms();
    amp_close(c);
    long long took = now_ms() - t0;
    kill(d.pid, SIGCONT);
    ck_assert_int_eq(rc, 0);
    ck_assert_msg(handed == CONN_OUTS, "the writer holds %d batches, not %d", handed, CONN_OUTS);
    ck_assert_int_lt(took, WRITER_PROMPT_MS);
    ck_assert_int_eq(amp_call_status(call), AMP_EIO);
    amp_call_free(call);
    ck_assert_int_eq(daemon_stop(&d), 0);
    free(in);
}
END_TEST

/* The daemon dies mid-stream, with the writer at work: an error, not a hang. */
START_TEST(daemon_killed_mid_stream)
{
    struct daemon_proc d;
    amp_conn *c = own_daemon(&d);
    size_t n = WRITER_STREAM_LEN;
    uint8_t *in = client_fixture_random(n, 49);
    amp_step st = xor_step();
    struct sink k = { .c = c, .len = n, .pid = d.pid, .kill_after = WRITER_KILL_AFTER };
    long long t0 = now_ms();
    int rc = amp_stream_mem(c, NULL, &st, 1, in, n, sink_write, &k, NULL, 0);
    long long took = now_ms() - t0;
    char why[256];
    snprintf(why, sizeof why, "%s", amp_last_message(c));
    amp_close(c);
    ck_assert_msg(rc == AMP_EIO, "%s: %s", amp_strerror(rc), why);
    ck_assert_uint_gt(k.batches_at_kill, 1);   /* the writer had run before the kill */
    ck_assert_uint_lt(k.got, n);
    ck_assert_int_lt(took, WRITER_PROMPT_MS);
    ck_assert_int_eq(daemon_stop(&d), 128 + SIGKILL);
    free(in);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_writer");
    const TTest *const tests[] = {
        large_stream_comes_back_whole,
        large_unary_comes_back_whole,
        async_large_calls_each_their_own,
        tiny_calls_start_no_thread,
        deadline_while_the_writer_waits,
        cancel_while_the_writer_waits,
        close_while_the_writer_waits,
        daemon_killed_mid_stream,
        NULL,
    };
    TCase *tc = check_run_case(s, "writer", tests);
    tcase_set_timeout(tc, 600);
    tcase_add_checked_fixture(tc, client_fixture_open, client_fixture_close);
    return client_fixture_run(s, NULL);
}
