/* SPDX-License-Identifier: MIT */
/* test_hostile_silent_clients.c: connections that stop short: connect and
 * send nothing, send the preface without SETTINGS, leave a HEADERS block
 * unfinished; each gets a GOAWAY and is closed once --request-timeout has
 * passed (not before, not much after). A connection that only sends PINGs
 * does nothing useful, so --idle-timeout closes it anyway. A well-behaved
 * client is served meanwhile, and nothing stays behind. */
#include <check.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "hostile.h"

#define CONNS 4
#define TIMEOUT_MS 1000
#define CLOSE_SLACK_MS 3000
#define PING_EVERY_MS 200

static struct daemon_proc ampd;

static long start(void)
{
    static const char *const args[] = { "--request-timeout", "1", "--idle-timeout", "1",
                                        "--max-connections", "16", NULL };
    return hostile_start(&ampd, args);
}

/* Opens CONNS connections that each send first[0, len), then waits for
 * the daemon to close them all, sending a PING every PING_EVERY_MS if
 * ping is set. Checks each got a GOAWAY and was closed after about
 * TIMEOUT_MS, and that another client was served meanwhile. */
static void expect_closed_after_timeout(const uint8_t *first, size_t len, bool ping)
{
    long base = start();
    int fds[CONNS];
    struct hostile_reader r[CONNS];
    long closed[CONNS];
    long long t0 = hostile_now_ms();
    for (int i = 0; i < CONNS; i++) {
        fds[i] = hostile_connect_unix(ampd.sock_path);
        ck_assert_int_ge(fds[i], 0);
        if (len)
            ck_assert_int_eq(hostile_send(fds[i], first, len), 0);
        hostile_reader_init(&r[i]);
        closed[i] = -1;
    }
    hostile_assert_served(ampd.address);
    uint8_t pingf[17] = { 0 };
    hostile_frame(pingf, 8, HOSTILE_PING, 0, 0);
    long long next_ping = hostile_now_ms() + PING_EVERY_MS;
    int open = CONNS;
    while (open > 0 && hostile_now_ms() - t0 < TIMEOUT_MS + CLOSE_SLACK_MS) {
        bool tick = ping && hostile_now_ms() >= next_ping;
        if (tick)
            next_ping += PING_EVERY_MS;
        open = 0;
        for (int i = 0; i < CONNS; i++) {
            if (closed[i] >= 0)
                continue;
            if (tick)
                hostile_send_some(fds[i], pingf, sizeof pingf);
            if (hostile_reader_pump(&r[i], fds[i], 10) == 1)
                closed[i] = (long)(hostile_now_ms() - t0);
            else
                open++;
        }
    }
    for (int i = 0; i < CONNS; i++) {
        ck_assert_msg(closed[i] >= 0, "connection %d still open after %d ms", i,
                      TIMEOUT_MS + CLOSE_SLACK_MS);
        ck_assert_msg(closed[i] >= TIMEOUT_MS * 8 / 10, "connection %d closed after %ld ms", i,
                      closed[i]);
        ck_assert_msg(r[i].goaway, "connection %d closed without a GOAWAY", i);
        close(fds[i]);
    }
    ck_assert(hostile_wait_quiet(ampd.address, 1, HOSTILE_IO_MS));
    hostile_assert_served(ampd.address);
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}

START_TEST(connect_and_say_nothing)
{
    expect_closed_after_timeout(NULL, 0, false);
}
END_TEST

START_TEST(preface_without_settings)
{
    expect_closed_after_timeout(hostile_preface, sizeof hostile_preface, false);
}
END_TEST

START_TEST(headers_block_left_open)
{
    uint8_t bytes[512];
    size_t len = hostile_hello(bytes);
    size_t block = hostile_request_block(bytes + len + 9, sizeof bytes - len - 9,
                                         "/amp.v1.Amp/Status", 0);
    ck_assert_uint_gt(block, 0);
    len += hostile_frame(bytes + len, (uint32_t)block, HOSTILE_HEADERS, 0, 1);
    len += block;
    expect_closed_after_timeout(bytes, len, false);
}
END_TEST

START_TEST(pings_do_not_keep_alive)
{
    uint8_t bytes[64];
    expect_closed_after_timeout(bytes, hostile_hello(bytes), true);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hostile_silent_clients");
    const TTest *const tests[] = {
        connect_and_say_nothing,
        preface_without_settings,
        headers_block_left_open,
        pings_do_not_keep_alive,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 60);
    return check_run(s, CK_FORK_GETENV);
}
