/* SPDX-License-Identifier: MIT */
/* test_pieces_interleave.c: a large unary job runs in pieces (dev_piece.c)
 * and the runner starts other tasks between them, against a real ampd on
 * one I/O loop with small pieces (--chunk-bytes 64 KiB).
 *
 * While client A's 32 MiB reverse is on the device (hundreds of pieces), a
 * 16-byte reverse of client B, named to the same device (not the host
 * path), is served, and when its reply is back A's job is still running
 * there: B's job went between two of A's pieces. Before, A's job was one
 * task that B's waited behind. Both results are checked.
 *
 * A's job cancelled while on the device (its call reset) stops at its next
 * piece: it ends failed (CANCELLED) rather than completed, and the device
 * memory it reserved is free again. Before, it ran to the end.
 *
 * A stream that needs its whole input on the device (a reverse) runs its
 * RUN task as pieces too, a chunk's range of a step each: a transform, a
 * reverse, a histogram and a reverse over 1 MiB + 5 bytes, each result
 * checked against host_step.c.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "client_fixture.h"
#include "daemon_proc.h"
#include "host_step.h"

/* Large enough to be hundreds of pieces, so that it is still running when
 * a small job sent after it started is done. */
#define BIG_LEN ((size_t)32 << 20)
#define SMALL_LEN 16
#define WAIT_MS 60000
#define PUMP_MS 1

static struct daemon_proc d;
static amp_conn *a, *b;
static const amp_opts on_device0 = { .size = sizeof(amp_opts), .device = "0" };
static const char *const args[] = { "--io-threads", "1", "--chunk-bytes", "65536", NULL };

static void setup(void)
{
    ck_assert_int_eq(daemon_start(&d, args), 0);
    ck_assert_int_eq(amp_connect(d.address, &a), 0);
    ck_assert_int_eq(amp_connect(d.address, &b), 0);
}

static void teardown(void)
{
    amp_close(a);
    amp_close(b);
    ck_assert_int_eq(daemon_stop(&d), 0);
}

static void status(amp_daemon_status *st)
{
    memset(st, 0, sizeof(*st));
    st->size = sizeof(*st);
    ck_assert_int_eq(amp_status(b, NULL, st), 0);
    ck_assert_uint_ge(st->ndevices, 1);
}

/* Moves A's call along (its request goes out as A's connection is pumped)
 * until device 0 has a job running with memory reserved. */
static void wait_running(amp_call *call)
{
    for (int i = 0; i < WAIT_MS / PUMP_MS; i++) {
        amp_call *done = NULL;
        int rc = amp_wait(a, PUMP_MS, &done);
        ck_assert_msg(rc == AMP_EDEADLINE, "A's call ended first: %s", amp_strerror(rc));
        ck_assert_int_eq(amp_call_status(call), AMP_EPENDING);
        amp_daemon_status st;
        status(&st);
        if (st.devices[0].jobs_running == 1 && st.devices[0].memory_in_use > 0)
            return;
    }
    ck_abort_msg("A's job never ran");
}

START_TEST(small_job_goes_between_pieces)
{
    uint8_t *big = client_fixture_random(BIG_LEN, 1);
    amp_call *call;
    ck_assert_int_eq(amp_start_reverse(a, &on_device0, big, BIG_LEN, &call), 0);
    wait_running(call);

    uint8_t small[SMALL_LEN], want[SMALL_LEN];
    for (size_t i = 0; i < SMALL_LEN; i++)
        small[i] = (uint8_t)(i * 13 + 1);
    void *out;
    size_t n;
    ck_assert_int_eq(amp_reverse(b, &on_device0, small, SMALL_LEN, &out, &n), 0);
    ck_assert_msg(strncmp(amp_last_device(b), "0:", 2) == 0, "ran on %s", amp_last_device(b));
    host_step_reverse(small, want, SMALL_LEN);
    ck_assert_uint_eq(n, SMALL_LEN);
    ck_assert_int_eq(memcmp(out, want, SMALL_LEN), 0);
    amp_free(out);

    /* B's reply is back; A's job is still on the device. B's job leaves the
     * running count just after its reply went out (the runner hands it
     * back, then counts): look until only one job is left. */
    amp_daemon_status st;
    status(&st);
    for (int i = 0; i < WAIT_MS / PUMP_MS && st.devices[0].jobs_running > 1; i++) {
        usleep(PUMP_MS * 1000);
        status(&st);
    }
    ck_assert_msg(st.devices[0].jobs_running == 1,
                  "A's job had finished before B's: %u running",
                  (unsigned)st.devices[0].jobs_running);

    amp_call *done;
    ck_assert_int_eq(amp_wait(a, WAIT_MS, &done), 0);
    ck_assert_ptr_eq(done, call);
    ck_assert_int_eq(amp_call_status(call), 0);
    ck_assert_int_eq(amp_call_data(call, &out, &n), 0);
    ck_assert_uint_eq(n, BIG_LEN);
    uint8_t *rev = malloc(BIG_LEN);
    host_step_reverse(big, rev, BIG_LEN);
    ck_assert_int_eq(memcmp(out, rev, BIG_LEN), 0);
    free(rev);
    amp_free(out);
    amp_call_free(call);
    free(big);
}
END_TEST

START_TEST(cancelled_job_stops_between_pieces)
{
    uint8_t *big = client_fixture_random(BIG_LEN, 2);
    amp_daemon_status before;
    status(&before);
    amp_call *call;
    ck_assert_int_eq(amp_start_reverse(a, &on_device0, big, BIG_LEN, &call), 0);
    wait_running(call);
    ck_assert_int_eq(amp_cancel(call), 0);
    amp_call *done;
    ck_assert_int_eq(amp_wait(a, WAIT_MS, &done), 0);
    ck_assert_int_eq(amp_call_status(done), AMP_ECANCELLED);
    amp_call_free(done);

    /* The daemon sees the reset, the job stops at its next piece. */
    amp_daemon_status st;
    for (int i = 0; i < WAIT_MS / PUMP_MS; i++) {
        status(&st);
        if (st.jobs_in_flight == 0 && st.devices[0].jobs_running == 0)
            break;
        amp_wait(a, PUMP_MS, &done);
    }
    ck_assert_uint_eq(st.jobs_in_flight, 0);
    ck_assert_uint_eq(st.devices[0].memory_in_use, 0);
    ck_assert_msg(st.jobs_completed == before.jobs_completed,
                  "the cancelled job ran to the end (%llu completed, %llu before)",
                  (unsigned long long)st.jobs_completed,
                  (unsigned long long)before.jobs_completed);
    ck_assert_uint_eq(st.jobs_failed, before.jobs_failed + 1);
    free(big);
}
END_TEST

struct sink {
    uint8_t *buf;
    size_t len, cap;
};

static int sink_write(void *ctx, const void *buf, size_t len)
{
    struct sink *k = ctx;
    ck_assert_uint_le(len, k->cap - k->len);
    memcpy(k->buf + k->len, buf, len);
    k->len += len;
    return 0;
}

START_TEST(resident_stream_runs_in_pieces)
{
    size_t n = ((size_t)1 << 20) + 5;
    uint8_t *in = client_fixture_random(n, 3);
    amp_step steps[4];
    memset(steps, 0, sizeof steps);
    for (size_t i = 0; i < 4; i++)
        steps[i].size = sizeof(amp_step);
    steps[0].kind = AMP_STEP_TRANSFORM;
    steps[0].transform = (amp_transform_params){ .op = AMP_OP_ADD, .value = 9, .offset = 70001,
                                                 .length = 600000, .has_length = 1 };
    steps[1].kind = AMP_STEP_REVERSE;
    steps[2].kind = AMP_STEP_HISTOGRAM;
    steps[2].hist = (amp_hist_params){ .type = AMP_TYPE_UINT8, .bins = 256 };
    steps[3].kind = AMP_STEP_REVERSE;
    struct sink out = { malloc(n), 0, n };
    amp_hist h;
    ck_assert_int_eq(amp_stream_mem(a, &on_device0, steps, 4, in, n, sink_write, &out, &h, 1), 0);

    struct transform_params tp;
    memset(&tp, 0, sizeof tp);
    tp.op = XFORM_ADD;
    tp.value = 9;
    tp.offset = 70001;
    tp.length = 600000;
    uint8_t *x = malloc(n), *r = malloc(n);
    memcpy(x, in, n);
    host_step_transform(&tp, x, n);
    host_step_reverse(x, r, n);
    struct hist_params hp = { .type = ELEM_U8, .bins = 256 };
    client_fixture_expect_hist(&h, &hp, r, n);
    ck_assert_uint_eq(out.len, n);
    ck_assert_int_eq(memcmp(out.buf, x, n), 0);   /* reversed twice */
    amp_hist_free(&h);
    free(out.buf);
    free(x);
    free(r);
    free(in);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pieces_interleave");
    const TTest *const tests[] = {
        small_job_goes_between_pieces,
        cancelled_job_stops_between_pieces,
        resident_stream_runs_in_pieces,
        NULL,
    };
    TCase *tc = check_run_case(s, "pieces", tests);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    return check_run(s, CK_NOFORK);
}
