/* SPDX-License-Identifier: MIT */
/* test_hostile_unary_reply_too_big.c: issue 33, the smaller item "the
 * largest request a unary call accepts gets a reply it cannot send". A
 * Reverse or Transform of --max-message-bytes - 5 bytes (the largest
 * request message), a Fill of --max-message-bytes / 4 int32 and a
 * Pipeline of a reverse over as much data all passed validation, ran on
 * the device, and only then were refused, since their reply carries the
 * device's name besides the data. Each must now be refused
 * RESOURCE_EXHAUSTED naming the limit before any device work (the
 * daemon's job counters do not move), while a client of another uid is
 * served; the largest reply that does fit still comes back whole, and
 * memory returns. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "hostile.h"

#define LIMIT 1048576
#define LIMIT_TEXT "1048576"
/* The request prefix of a bytes field of about LIMIT bytes: a tag and a
 * 3-byte varint; the largest Reverse request's data is LIMIT minus that. */
#define REQUEST_PREFIX 4
/* Room a reply needs besides its data: tags, lengths and a device name of
 * up to 127 bytes. */
#define REPLY_ROOM 256
#define OTHER_PROBES 20

static struct daemon_proc ampd;
static const char *const args[] = { "--max-message-bytes", LIMIT_TEXT, "--socket-mode", "0666",
                                    NULL };

static uint64_t jobs_run(void)
{
    amp_daemon_status st = { .size = sizeof st };
    ck_assert_int_eq(hostile_status(ampd.address, &st), 0);
    return st.jobs_completed + st.jobs_failed;
}

static void expect_refused(amp_conn *c, int rc, const char *what)
{
    ck_assert_msg(rc == AMP_EEXHAUSTED, "%s: %s: %s", what, amp_strerror(rc), amp_last_message(c));
    ck_assert_msg(strstr(amp_last_message(c), "--max-message-bytes (" LIMIT_TEXT ")"), "%s: %s",
                  what, amp_last_message(c));
}

START_TEST(replies_over_the_limit_refused_before_device_work)
{
    long base = hostile_start(&ampd, args);
    size_t n = LIMIT - REQUEST_PREFIX - 1;
    uint8_t *in = malloc(n);
    ck_assert_ptr_nonnull(in);
    memset(in, 0x5a, n);
    amp_conn *c;
    ck_assert_int_eq(amp_connect(ampd.address, &c), 0);
    amp_opts o = { .size = sizeof(amp_opts), .timeout_ms = HOSTILE_IO_MS };
    void *out = NULL;
    size_t out_len = 0;
    /* The largest replies that fit are sent, whole; what they leave the
     * daemon and PoCL holding for reuse is there before the baseline. */
    size_t fits = LIMIT - REPLY_ROOM;
    ck_assert_int_eq(amp_reverse(c, &o, in, fits, &out, &out_len), 0);
    ck_assert_uint_eq(out_len, fits);
    amp_free(out);
    amp_fill_params fp = { .type = AMP_TYPE_INT32, .count = fits / 4, .step = 1 };
    ck_assert_int_eq(amp_fill(c, &o, &fp, &out, &out_len), 0);
    ck_assert_uint_eq(out_len, fits / 4 * 4);
    ck_assert_int_eq(((int32_t *)out)[fits / 4 - 1], (int32_t)(fits / 4 - 1));
    amp_free(out);
    long fds = hostile_fd_count(ampd.pid);
    uint64_t before = jobs_run();
    pid_t other = hostile_other_start(&ampd, OTHER_PROBES);
    expect_refused(c, amp_reverse(c, &o, in, n, &out, &out_len), "reverse");
    amp_transform_params tp = { .op = AMP_OP_XOR, .value = 1 };
    expect_refused(c, amp_transform(c, &o, &tp, in, n - 8, &out, &out_len), "transform");
    fp.count = LIMIT / 4;
    expect_refused(c, amp_fill(c, &o, &fp, &out, &out_len), "fill");
    amp_step rev = { .size = sizeof(amp_step), .kind = AMP_STEP_REVERSE };
    amp_step_result *res = NULL;
    expect_refused(c, amp_pipeline(c, &o, &rev, 1, in, n - 8, &res), "pipeline");
    hostile_other_assert_served(other);
    /* None of them reached a device: the counters count every job run
     * (once it has left the daemon's jobs in flight), and only the other
     * client's probes ran. */
    ck_assert(hostile_wait_quiet(ampd.address, 2, HOSTILE_SETTLE_MS));
    uint64_t ran = jobs_run() - before - (other ? OTHER_PROBES : 0);
    ck_assert_msg(ran == 0, "%llu jobs ran for refused calls", (unsigned long long)ran);
    amp_close(c);
    free(in);
    hostile_assert_served(ampd.address);
    ck_assert(hostile_wait_quiet(ampd.address, 1, HOSTILE_SETTLE_MS));
    hostile_assert_rss_back(&ampd, base);
    hostile_assert_fds_back(&ampd, fds);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

static long src_zeros(void *ctx, void *buf, size_t cap)
{
    size_t *left = ctx, n = *left < cap ? *left : cap;
    memset(buf, 0, n);
    *left -= n;
    return (long)n;
}

/* A Stream's histogram result is one message too: checked with its header
 * by the same bound, where an input of unknown length bounds no count. */
START_TEST(stream_hist_result_checked_at_the_header)
{
    hostile_start(&ampd, args);
    amp_conn *c;
    ck_assert_int_eq(amp_connect(ampd.address, &c), 0);
    amp_opts o = { .size = sizeof(amp_opts), .timeout_ms = HOSTILE_IO_MS };
    amp_step step = { .size = sizeof(amp_step), .kind = AMP_STEP_HISTOGRAM,
                      .hist = { .type = AMP_TYPE_FLOAT32, .bins = LIMIT / 8 - 64, .lo = 0,
                                .hi = 1 } };
    amp_hist h;
    size_t left = 16;
    expect_refused(c, amp_stream(c, &o, &step, 1, 0, src_zeros, &left, NULL, NULL, &h, 1),
                   "stream histogram of unknown length");
    ck_assert_msg(strstr(amp_last_message(c), "send total_length"), "%s", amp_last_message(c));
    left = 16;
    int rc = amp_stream(c, &o, &step, 1, 16, src_zeros, &left, NULL, NULL, &h, 1);
    ck_assert_msg(rc == 0, "%s: %s", amp_strerror(rc), amp_last_message(c));
    ck_assert_uint_eq(h.counts[0], 4);
    amp_hist_free(&h);
    amp_close(c);
    hostile_assert_served(ampd.address);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hostile_unary_reply_too_big");
    const TTest *const tests[] = {
        replies_over_the_limit_refused_before_device_work,
        stream_hist_result_checked_at_the_header,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 90);
    return check_run(s, CK_FORK_GETENV);
}
