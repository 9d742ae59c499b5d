/* SPDX-License-Identifier: MIT */
/* test_hostile_killed_clients.c: clients that vanish mid-call: a process
 * streaming through libampclient killed with SIGKILL, raw connections
 * closed in the middle of a request message, and connections closed with
 * a large reply unread. The daemon notices each, ends the calls and jobs,
 * frees their memory (VmRSS back near the baseline, no connection or job
 * left in Status), and serves a well-behaved client. */
#include <check.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "amp.pb-c.h"
#include "check_run.h"
#include "grpc_frame.h"
#include "h2_client.h"
#include "hostile.h"

#define STREAMERS 3
#define STREAM_FOR_MS 700
#define CUT_CONNS 8
#define FILL_COUNT (4 * 1024 * 1024)   /* int32: 16 MiB */
#define WARM_FILLS 16

static struct daemon_proc ampd;

static long endless(void *ctx, void *buf, size_t cap)
{
    (void)ctx;
    memset(buf, 'k', cap);
    return (long)cap;
}

/* Child: streams an endless input through a transform until killed. */
static void streamer(const char *address)
{
    amp_conn *c;
    if (amp_connect(address, &c) != 0)
        _exit(2);
    amp_step step = { .size = sizeof(amp_step), .kind = AMP_STEP_TRANSFORM,
                      .transform = { .op = AMP_OP_XOR, .value = 1 } };
    amp_stream(c, NULL, &step, 1, 0, endless, NULL, NULL, NULL, NULL, 0);
    _exit(1);
}

START_TEST(sigkill_mid_stream)
{
    /* Small staging, which the warm-up stream fills, so that the baseline
     * holds all of it. */
    static const char *const args[] = { "--max-job-memory", "67108864", "--staging-bytes", "8M",
                                        "--chunk-bytes", "1M", NULL };
    hostile_start(&ampd, args);
    long base = hostile_warm(&ampd, 0, 0, true);
    pid_t kids[STREAMERS];
    for (int i = 0; i < STREAMERS; i++) {
        kids[i] = fork();
        ck_assert_int_ge(kids[i], 0);
        if (kids[i] == 0)
            streamer(ampd.address);
    }
    hostile_sleep_ms(STREAM_FOR_MS);
    amp_daemon_status st = { .size = sizeof st };
    ck_assert_int_eq(hostile_status(ampd.address, &st), 0);
    ck_assert_uint_eq(st.connections, STREAMERS + 1);
    for (int i = 0; i < STREAMERS; i++) {
        int status;
        ck_assert_int_eq(kill(kids[i], SIGKILL), 0);
        ck_assert_int_eq(waitpid(kids[i], &status, 0), kids[i]);
        ck_assert(WIFSIGNALED(status));
    }
    ck_assert(hostile_wait_quiet(ampd.address, 1, HOSTILE_IO_MS));
    hostile_assert_served(ampd.address);
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

START_TEST(close_mid_message)
{
    long base = hostile_start(&ampd, NULL);
    static uint8_t bytes[128 * 1024];
    size_t len = hostile_hello(bytes);
    size_t block = hostile_request_block(bytes + len + 9, 512, "/amp.v1.Amp/Reverse", 0);
    ck_assert_uint_gt(block, 0);
    len += hostile_frame(bytes + len, (uint32_t)block, HOSTILE_HEADERS, HOSTILE_FLAG_END_HEADERS, 1);
    len += block;
    /* A 1 MiB message of which 48 KiB come, in DATA frames of 16 KiB. */
    for (int f = 0; f < 3; f++) {
        len += hostile_frame(bytes + len, 16384, HOSTILE_DATA, 0, 1);
        memset(bytes + len, 'c', 16384);
        if (f == 0)
            grpc_frame_header(bytes + len, 1024 * 1024);
        len += 16384;
    }
    for (int i = 0; i < CUT_CONNS; i++) {
        int fd = hostile_connect_unix(ampd.sock_path);
        ck_assert_int_ge(fd, 0);
        /* Cut at a different place each time, inside a frame or between. */
        size_t cut = len - (size_t)i * 4099;
        ck_assert_int_eq(hostile_send(fd, bytes, cut), 0);
        close(fd);
    }
    ck_assert(hostile_wait_quiet(ampd.address, 1, HOSTILE_IO_MS));
    hostile_assert_served(ampd.address);
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

static bool ping_acked(struct h2c *c, void *arg)
{
    (void)arg;
    return h2c_pings_acked(c) > 0;
}

START_TEST(close_with_reply_unread)
{
    hostile_start(&ampd, NULL);
    long base = hostile_warm(&ampd, FILL_COUNT, WARM_FILLS, false);
    Amp__V1__FillParams fp = AMP__V1__FILL_PARAMS__INIT;
    fp.type = AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_INT32;
    fp.count = FILL_COUNT;
    Amp__V1__FillRequest req = AMP__V1__FILL_REQUEST__INIT;
    req.params = &fp;
    uint8_t msg[64];
    size_t mlen = protobuf_c_message_pack(&req.base, msg);
    for (int i = 0; i < 4; i++) {
        int fd = hostile_connect_unix(ampd.sock_path);
        ck_assert_int_ge(fd, 0);
        struct h2c *c = h2c_new();
        h2c_call(c, "/amp.v1.Amp/Fill", msg, mlen);
        h2c_ping(c);
        ck_assert_int_eq(h2c_run_until(c, fd, HOSTILE_IO_MS, ping_acked, NULL), 0);
        hostile_sleep_ms(100 * i);   /* before, while or after the job runs */
        close(fd);
        h2c_free(c);
    }
    ck_assert(hostile_wait_quiet(ampd.address, 1, HOSTILE_IO_MS));
    hostile_assert_served(ampd.address);
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hostile_killed_clients");
    const TTest *const tests[] = {
        sigkill_mid_stream,
        close_mid_message,
        close_with_reply_unread,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 60);
    return check_run(s, CK_FORK_GETENV);
}
