/* SPDX-License-Identifier: MIT */
/* test_hostile_floods.c: one connection sends control frames as fast as
 * it can: a HEADERS block that never ends (CONTINUATION after
 * CONTINUATION), SETTINGS or PINGs whose acks it never reads, or streams
 * opened and reset at once (rapid reset). The daemon must not let any of
 * them grow its memory or starve others: the endless HEADERS block gets
 * GOAWAY and a close within --request-timeout (or sooner, for its size), the ack floods are cut off
 * (the connection closed), the resets leave no job behind; a well-behaved
 * client is served throughout and memory comes back. */
#include <check.h>
#include <string.h>
#include <unistd.h>

#include "amp.pb-c.h"
#include "check_run.h"
#include "grpc_frame.h"
#include "hostile.h"

#define REQUEST_TIMEOUT_MS 1000
#define CLOSE_SLACK_MS 3000
#define ACK_FLOOD_FRAMES 200000
#define ACK_FLOOD_MS 5000
#define RESETS 2000
#define FLOOD_RSS_KB (64 * 1024)

static struct daemon_proc ampd;

static void finish(long base)
{
    ck_assert(hostile_wait_quiet(ampd.address, 1, HOSTILE_IO_MS));
    hostile_assert_served(ampd.address);
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}

START_TEST(continuation_flood_closed)
{
    static const char *const args[] = { "--request-timeout", "1", NULL };
    long base = hostile_start(&ampd, args);
    int fd = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    uint8_t first[1024];
    size_t len = hostile_hello(first);
    size_t block = hostile_request_block(first + len + 9, sizeof first - len - 9,
                                         "/amp.v1.Amp/Reverse", 0);
    ck_assert_uint_gt(block, 0);
    len += hostile_frame(first + len, (uint32_t)block, HOSTILE_HEADERS, 0, 1);
    len += block;
    ck_assert_int_eq(hostile_send(fd, first, len), 0);
    uint8_t cont[2048];
    size_t clen = hostile_request_block(cont + 9, sizeof cont - 9, NULL, 1000);
    ck_assert_uint_gt(clen, 0);
    hostile_frame(cont, (uint32_t)clen, HOSTILE_CONTINUATION, 0, 1);
    clen += 9;

    struct hostile_reader r;
    hostile_reader_init(&r);
    long long t0 = hostile_now_ms();
    bool probed = false;
    long peak = 0;
    size_t off = 0;
    while (!r.eof && hostile_now_ms() - t0 < REQUEST_TIMEOUT_MS + CLOSE_SLACK_MS) {
        ssize_t w = hostile_send_some(fd, cont + off, clen - off);
        if (w > 0)
            off = (off + (size_t)w) % clen;
        hostile_reader_pump(&r, fd, w > 0 ? 0 : 5);
        if (!probed && hostile_now_ms() - t0 > REQUEST_TIMEOUT_MS / 2) {
            hostile_assert_served(ampd.address);
            probed = true;
        }
        long kb = hostile_rss_kb(ampd.pid);
        if (kb > peak)
            peak = kb;
    }
    ck_assert_msg(r.eof, "still open %d ms into an endless HEADERS block",
                  REQUEST_TIMEOUT_MS + CLOSE_SLACK_MS);
    ck_assert_msg(r.goaway, "closed without a GOAWAY");
    ck_assert_msg(peak <= base + FLOOD_RSS_KB, "VmRSS %ld KiB during the flood, baseline %ld",
                  peak, base);
    close(fd);
    finish(base);
}
END_TEST

/* Sends count copies of frame without reading, until the daemon stops
 * taking them for a while or hangs up; then reads: the daemon must have
 * closed the connection. */
static void ack_flood(const uint8_t *frame, size_t flen)
{
    long base = hostile_start(&ampd, NULL);
    int fd = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    uint8_t hello[64];
    ck_assert_int_eq(hostile_send(fd, hello, hostile_hello(hello)), 0);
    long long t0 = hostile_now_ms(), last_progress = t0;
    size_t sent = 0, total = (size_t)ACK_FLOOD_FRAMES * flen;
    while (sent < total && hostile_now_ms() - last_progress < ACK_FLOOD_MS / 5) {
        size_t at = sent % flen;
        ssize_t w = hostile_send_some(fd, frame + at, flen - at);
        if (w < 0)
            break;
        if (w > 0) {
            sent += (size_t)w;
            last_progress = hostile_now_ms();
        } else {
            hostile_sleep_ms(1);
        }
    }
    hostile_assert_served(ampd.address);
    struct hostile_reader r;
    hostile_reader_init(&r);
    ck_assert_msg(hostile_reader_until_eof(&r, fd, ACK_FLOOD_MS) >= 0,
                  "connection still open after %zu flood bytes (%u acks read)", sent,
                  r.ping_acks);
    close(fd);
    finish(base);
}

START_TEST(settings_flood_cut_off)
{
    uint8_t frame[9];
    hostile_frame(frame, 0, HOSTILE_SETTINGS, 0, 0);
    ack_flood(frame, sizeof frame);
}
END_TEST

START_TEST(ping_flood_cut_off)
{
    uint8_t frame[17] = { 0 };
    hostile_frame(frame, 8, HOSTILE_PING, 0, 0);
    ack_flood(frame, sizeof frame);
}
END_TEST

START_TEST(rapid_reset_leaves_no_jobs)
{
    long base = hostile_start(&ampd, NULL);
    int fd = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    uint8_t hello[64];
    ck_assert_int_eq(hostile_send(fd, hello, hostile_hello(hello)), 0);
    uint8_t block[256];
    size_t blen = hostile_request_block(block, sizeof block, "/amp.v1.Amp/Reverse", 0);
    ck_assert_uint_gt(blen, 0);
    /* ReverseRequest{data: 64 bytes} with its prefix. */
    uint8_t msg[GRPC_FRAME_HEADER + 66];
    grpc_frame_header(msg, 66);
    memset(msg + GRPC_FRAME_HEADER, 'r', 66);
    msg[GRPC_FRAME_HEADER] = 0x0a;
    msg[GRPC_FRAME_HEADER + 1] = 64;
    struct hostile_reader r;
    hostile_reader_init(&r);
    uint8_t buf[512];
    for (uint32_t i = 0; i < RESETS && !r.eof; i++) {
        uint32_t id = 2 * i + 1;
        size_t len = hostile_frame(buf, (uint32_t)blen, HOSTILE_HEADERS, HOSTILE_FLAG_END_HEADERS, id);
        memcpy(buf + len, block, blen);
        len += blen;
        len += hostile_frame(buf + len, sizeof msg, HOSTILE_DATA, HOSTILE_FLAG_END_STREAM, id);
        memcpy(buf + len, msg, sizeof msg);
        len += sizeof msg;
        len += hostile_frame(buf + len, 4, HOSTILE_RST_STREAM, 0, id);
        memcpy(buf + len, "\0\0\0\x08", 4);
        len += 4;
        if (hostile_send(fd, buf, len) != 0)
            break;
        hostile_reader_pump(&r, fd, 0);
        if (i == RESETS / 2)
            hostile_assert_served(ampd.address);
    }
    /* A PING after them all: its ack means every reset was processed. */
    size_t len = hostile_frame(buf, 8, HOSTILE_PING, 0, 0);
    memset(buf + len, 0, 8);
    hostile_send(fd, buf, len + 8);
    long long t0 = hostile_now_ms();
    while (!r.eof && r.ping_acks == 0 && hostile_now_ms() - t0 < HOSTILE_IO_MS)
        hostile_reader_pump(&r, fd, 100);
    ck_assert_msg(r.ping_acks > 0 || r.goaway, "neither a PING ack nor a GOAWAY");
    /* Whether or not the daemon hung up on it, no job is left running. */
    ck_assert(hostile_wait_quiet(ampd.address, 2, HOSTILE_IO_MS));
    hostile_assert_served(ampd.address);
    close(fd);
    finish(base);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hostile_floods");
    const TTest *const tests[] = {
        continuation_flood_closed,
        settings_flood_cut_off,
        ping_flood_cut_off,
        rapid_reset_leaves_no_jobs,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 60);
    return check_run(s, CK_FORK_GETENV);
}
