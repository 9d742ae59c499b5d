/* SPDX-License-Identifier: MIT */
/* test_hostile_slow_peers.c: issue 10, reproducer 4. Many connections
 * from one peer (TCP from 127.0.0.2, or one uid on the Unix socket) that
 * send a byte a second: of the preface, of a HEADERS block, or of a
 * request message. Beyond --max-peer-connections they are refused with
 * GOAWAY(ENHANCE_YOUR_CALM) naming the limit and the peer; the ones
 * admitted are dealt with after --request-timeout (GOAWAY and close for an
 * unfinished preface or HEADERS block; RESOURCE_EXHAUSTED naming
 * --min-request-rate for a message); and a well-behaved client from
 * another peer (127.0.0.1) is served meanwhile. */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "grpc_frame.h"
#include "h2_client.h"
#include "hostile.h"
#include "status.h"

#define PEER_LIMIT 4
#define SLOW_CONNS 8
#define SLOW_PEER "127.0.0.2"
#define BYTE_EVERY_MS 1000
#define REQUEST_TIMEOUT_MS 1000
#define CLOSE_SLACK_MS 3000
#define REFUSED_DEBUG "RESOURCE_EXHAUSTED: --max-peer-connections (4) reached for address " SLOW_PEER

static struct daemon_proc ampd;
static int port;
static char tcp_address[64];

static long start(void)
{
    port = hostile_free_port();
    snprintf(tcp_address, sizeof tcp_address, "127.0.0.1:%d", port);
    const char *args[] = { "--listen", tcp_address, "--tcp-require-token", "off",
                           "--request-timeout", "1",
                           "--max-connections", "16", "--max-peer-connections", "4",
                           /* room for the slow peer's and the probe's: this test is about
                            * --request-timeout (test_hostile_conn_slots.py: the pool) */
                           "--max-unauthenticated-connections", "8", NULL };
    return hostile_start(&ampd, args);
}

struct slow {
    int fd;
    struct hostile_reader r;
    const uint8_t *bytes;   /* what it trickles, one byte per BYTE_EVERY_MS */
    size_t len, pos;
    long closed_ms;         /* since the test started; -1 while open */
};

static void slow_open(struct slow *s, const uint8_t *bytes, size_t len)
{
    s->fd = hostile_connect_tcp(SLOW_PEER, port);
    ck_assert_int_ge(s->fd, 0);
    hostile_reader_init(&s->r);
    s->bytes = bytes;
    s->len = len;
    s->pos = 0;
    s->closed_ms = -1;
}

/* Trickles and reads until every connection is closed or the deadline;
 * returns how many are still open then. */
static int slow_run(struct slow *s, int n, long long t0, int deadline_ms)
{
    long long next_byte = hostile_now_ms();
    int open = n;
    while (open > 0 && hostile_now_ms() - t0 < deadline_ms) {
        bool tick = hostile_now_ms() >= next_byte;
        if (tick)
            next_byte += BYTE_EVERY_MS;
        open = 0;
        for (int i = 0; i < n; i++) {
            if (s[i].closed_ms >= 0)
                continue;
            if (tick && s[i].pos < s[i].len && hostile_send_some(s[i].fd, s[i].bytes + s[i].pos, 1) == 1)
                s[i].pos++;
            if (hostile_reader_pump(&s[i].r, s[i].fd, 10) == 1)
                s[i].closed_ms = (long)(hostile_now_ms() - t0);
            else
                open++;
        }
    }
    return open;
}

static void slow_close(struct slow *s, int n)
{
    for (int i = 0; i < n; i++)
        close(s[i].fd);
}

/* Counts the connections refused for the peer limit and checks that the
 * others were closed with a GOAWAY after the request timeout. */
static void expect_limited(struct slow *s, int n)
{
    int refused = 0;
    for (int i = 0; i < n; i++) {
        ck_assert_msg(s[i].r.goaway, "connection %d closed without a GOAWAY", i);
        if (s[i].r.goaway_code == HOSTILE_ENHANCE_YOUR_CALM
            && strcmp(s[i].r.goaway_debug, REFUSED_DEBUG) == 0) {
            refused++;
            continue;
        }
        ck_assert_msg(s[i].closed_ms >= REQUEST_TIMEOUT_MS * 8 / 10
                          && s[i].closed_ms <= REQUEST_TIMEOUT_MS + CLOSE_SLACK_MS,
                      "connection %d closed after %ld ms (GOAWAY %u \"%s\")", i, s[i].closed_ms,
                      s[i].r.goaway_code, s[i].r.goaway_debug);
    }
    ck_assert_int_eq(refused, n - PEER_LIMIT);
}

START_TEST(slow_prefaces_limited_and_closed)
{
    long base = start();
    struct slow s[SLOW_CONNS];
    long long t0 = hostile_now_ms();
    for (int i = 0; i < SLOW_CONNS; i++)
        slow_open(&s[i], hostile_preface, sizeof hostile_preface);
    /* Another peer is served while they trickle. */
    hostile_assert_served(tcp_address);
    ck_assert_int_lt(hostile_now_ms() - t0, REQUEST_TIMEOUT_MS);
    ck_assert_int_eq(slow_run(s, SLOW_CONNS, t0, REQUEST_TIMEOUT_MS + CLOSE_SLACK_MS), 0);
    expect_limited(s, SLOW_CONNS);
    slow_close(s, SLOW_CONNS);
    hostile_assert_served(tcp_address);
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

START_TEST(slow_headers_blocks_closed)
{
    long base = start();
    /* Preface and SETTINGS at once, then a HEADERS frame whose header is
     * whole and whose block comes a byte a second. */
    uint8_t bytes[512];
    size_t hello = hostile_hello(bytes);
    size_t block = hostile_request_block(bytes + hello + 9, sizeof bytes - hello - 9,
                                         "/amp.v1.Amp/Status", 0);
    ck_assert_uint_gt(block, 0);
    hostile_frame(bytes + hello, (uint32_t)block, HOSTILE_HEADERS, HOSTILE_FLAG_END_HEADERS, 1);
    struct slow s[PEER_LIMIT];
    long long t0 = hostile_now_ms();
    for (int i = 0; i < PEER_LIMIT; i++) {
        slow_open(&s[i], bytes + hello + 9, block);
        ck_assert_int_eq(hostile_send(s[i].fd, bytes, hello + 9), 0);
    }
    hostile_assert_served(tcp_address);
    ck_assert_int_lt(hostile_now_ms() - t0, REQUEST_TIMEOUT_MS);
    ck_assert_int_eq(slow_run(s, PEER_LIMIT, t0, REQUEST_TIMEOUT_MS + CLOSE_SLACK_MS), 0);
    for (int i = 0; i < PEER_LIMIT; i++) {
        ck_assert_msg(s[i].r.goaway, "connection %d closed without a GOAWAY", i);
        ck_assert_msg(s[i].closed_ms >= REQUEST_TIMEOUT_MS * 8 / 10, "closed after %ld ms",
                      s[i].closed_ms);
    }
    slow_close(s, PEER_LIMIT);
    hostile_assert_served(tcp_address);
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

static bool all_closed(struct h2c *c, void *arg)
{
    (void)arg;
    return h2c_all_closed(c);
}

START_TEST(slow_messages_answered)
{
    long base = start();
    int fds[PEER_LIMIT];
    struct h2c *cs[PEER_LIMIT];
    int32_t ids[PEER_LIMIT];
    uint8_t msg[GRPC_FRAME_HEADER + 64];
    grpc_frame_header(msg, 64);
    memset(msg + GRPC_FRAME_HEADER, 0, 64);
    msg[GRPC_FRAME_HEADER] = 0x0a; /* ReverseRequest.data, 62 bytes */
    msg[GRPC_FRAME_HEADER + 1] = 62;
    long long t0 = hostile_now_ms();
    for (int i = 0; i < PEER_LIMIT; i++) {
        fds[i] = hostile_connect_tcp(SLOW_PEER, port);
        ck_assert_int_ge(fds[i], 0);
        cs[i] = h2c_new();
        ids[i] = h2c_request_open(cs[i], "/amp.v1.Amp/Reverse", msg, 1);
        ck_assert_int_eq(h2c_flush(cs[i], fds[i]), 0);
    }
    hostile_assert_served(tcp_address);
    /* A byte a second: far below --min-request-rate. */
    size_t pos = 1;
    while (hostile_now_ms() - t0 < REQUEST_TIMEOUT_MS + CLOSE_SLACK_MS) {
        bool done = true;
        for (int i = 0; i < PEER_LIMIT; i++) {
            if (h2c_all_closed(cs[i]))
                continue;
            done = false;
            h2c_append(cs[i], ids[i], msg + pos, 1, false);
            h2c_run_until(cs[i], fds[i], BYTE_EVERY_MS / PEER_LIMIT, all_closed, NULL);
        }
        pos++;
        if (done)
            break;
    }
    for (int i = 0; i < PEER_LIMIT; i++) {
        const struct h2c_result *r = h2c_result(cs[i], ids[i]);
        ck_assert_msg(r->closed, "call %d still open after %d ms", i,
                      REQUEST_TIMEOUT_MS + CLOSE_SLACK_MS);
        char m[H2C_MESSAGE_MAX];
        h2c_percent_decode(r->grpc_message, m, sizeof m);
        ck_assert_msg(r->grpc_status == STATUS_RESOURCE_EXHAUSTED, "call %d: %d %s", i,
                      r->grpc_status, m);
        ck_assert_ptr_nonnull(strstr(m, "--min-request-rate"));
        close(fds[i]);
        h2c_free(cs[i]);
    }
    hostile_assert_served(tcp_address);
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

START_TEST(unix_peer_limit_names_uid)
{
    long base = start();
    /* Let the start-up probe's connection be gone on the daemon's side. */
    ck_assert(hostile_wait_quiet(ampd.address, 1, HOSTILE_IO_MS));
    hostile_sleep_ms(200);
    uint8_t hello[64];
    size_t hlen = hostile_hello(hello);
    int fds[PEER_LIMIT + 1];
    for (int i = 0; i < PEER_LIMIT; i++) {
        fds[i] = hostile_connect_unix(ampd.sock_path);
        ck_assert_int_ge(fds[i], 0);
        ck_assert_int_eq(hostile_send(fds[i], hello, hlen), 0);
    }
    fds[PEER_LIMIT] = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fds[PEER_LIMIT], 0);
    struct hostile_reader r;
    hostile_reader_init(&r);
    ck_assert_int_ge(hostile_reader_until_eof(&r, fds[PEER_LIMIT], HOSTILE_IO_MS), 0);
    ck_assert(r.goaway);
    ck_assert_uint_eq(r.goaway_code, HOSTILE_ENHANCE_YOUR_CALM);
    char want[160];
    snprintf(want, sizeof want, "RESOURCE_EXHAUSTED: --max-peer-connections (4) reached for uid %u",
             (unsigned)getuid());
    ck_assert_str_eq(r.goaway_debug, want);
    /* TCP from 127.0.0.1 is another peer. */
    hostile_assert_served(tcp_address);
    for (int i = 0; i <= PEER_LIMIT; i++)
        close(fds[i]);
    ck_assert(hostile_wait_quiet(ampd.address, 1, HOSTILE_IO_MS));
    hostile_assert_served(ampd.address);
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hostile_slow_peers");
    const TTest *const tests[] = {
        slow_prefaces_limited_and_closed,
        slow_headers_blocks_closed,
        slow_messages_answered,
        unix_peer_limit_names_uid,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 60);
    return check_run(s, CK_FORK_GETENV);
}
