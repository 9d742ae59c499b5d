/* SPDX-License-Identifier: MIT */
/* test_hostile_stalled_messages.c: issue 10, reproducer 3. Sixteen calls
 * each send only a gRPC prefix declaring a 64 MiB message, then nothing.
 * Request bytes are charged as they arrive, not by the declared length, so
 * a well-behaved client's small job is served meanwhile (not refused
 * RESOURCE_EXHAUSTED); and a message that stops arriving misses
 * --request-timeout (plus its bytes / --min-request-rate), so every stalled
 * call is answered RESOURCE_EXHAUSTED naming --min-request-rate within the
 * timeout and some slack. */
#include <check.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "grpc_frame.h"
#include "h2_client.h"
#include "hostile.h"
#include "status.h"

#define STALLED 16
#define DECLARED (64u * 1024 * 1024)
#define REQUEST_TIMEOUT_MS 1000
#define ANSWER_SLACK_MS 3000

static struct daemon_proc ampd;

static bool ping_acked(struct h2c *c, void *arg)
{
    (void)arg;
    return h2c_pings_acked(c) > 0;
}

START_TEST(stalled_prefixes_hold_nothing_and_time_out)
{
    static const char *const args[] = { "--request-timeout", "1", "--max-job-memory", "67108864",
                                        "--max-connections", "16", NULL };
    long base = hostile_start(&ampd, args);
    int fd = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    struct h2c *c = h2c_new();
    uint8_t prefix[GRPC_FRAME_HEADER];
    grpc_frame_header(prefix, DECLARED);
    int32_t ids[STALLED];
    for (int i = 0; i < STALLED; i++)
        ids[i] = h2c_request_open(c, "/amp.v1.Amp/Reverse", prefix, sizeof prefix);
    h2c_ping(c);
    long long sent = hostile_now_ms();
    ck_assert_int_eq(h2c_run_until(c, fd, HOSTILE_IO_MS, ping_acked, NULL), 0);

    /* The daemon has seen all sixteen: a small job is still served. */
    hostile_assert_served(ampd.address);
    ck_assert_int_lt(hostile_now_ms() - sent, REQUEST_TIMEOUT_MS);

    ck_assert_int_eq(h2c_run_fd(c, fd, REQUEST_TIMEOUT_MS + ANSWER_SLACK_MS), 0);
    long long answered = hostile_now_ms() - sent;
    ck_assert_int_le(answered, REQUEST_TIMEOUT_MS + ANSWER_SLACK_MS);
    for (int i = 0; i < STALLED; i++) {
        const struct h2c_result *r = h2c_result(c, ids[i]);
        char msg[H2C_MESSAGE_MAX];
        h2c_percent_decode(r->grpc_message, msg, sizeof msg);
        ck_assert_msg(r->grpc_status == STATUS_RESOURCE_EXHAUSTED, "call %d: status %d: %s", i,
                      r->grpc_status, msg);
        ck_assert_msg(strstr(msg, "--min-request-rate") != NULL, "call %d: %s", i, msg);
    }
    close(fd);
    h2c_free(c);
    ck_assert(hostile_wait_quiet(ampd.address, 1, HOSTILE_IO_MS));
    amp_daemon_status st = { .size = sizeof st };
    ck_assert_int_eq(hostile_status(ampd.address, &st), 0);
    ck_assert_uint_eq(st.calls[STATUS_RESOURCE_EXHAUSTED], STALLED);
    hostile_assert_served(ampd.address);
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hostile_stalled_messages");
    const TTest *const tests[] = {
        stalled_prefixes_hold_nothing_and_time_out,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 60);
    return check_run(s, CK_FORK_GETENV);
}
