/* SPDX-License-Identifier: MIT */
/* test_hostile_bad_frames.c: after a good preface and SETTINGS, frames
 * HTTP/2 forbids (RFC 9113): DATA, HEADERS and RST_STREAM on stream 0,
 * a zero WINDOW_UPDATE, SETTINGS of a bad length, SETTINGS values out of
 * range, a PING of the wrong size; and a frame cut short by the client
 * closing. Each forbidden frame ends the connection with a GOAWAY carrying
 * the error code the RFC names; after each, the daemon holds nothing and
 * a well-behaved client is served. */
#include <check.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "hostile.h"

static struct daemon_proc ampd;

struct bad_frame {
    const char *what;
    uint8_t type, flags;
    uint32_t stream;
    uint8_t payload[16];
    uint32_t len;
    uint32_t code;            /* the GOAWAY error code required */
};

static const struct bad_frame bad_frames[] = {
    { "DATA on stream 0", HOSTILE_DATA, 0, 0, { 0 }, 4, HOSTILE_PROTOCOL_ERROR },
    { "HEADERS on stream 0", HOSTILE_HEADERS, HOSTILE_FLAG_END_HEADERS, 0, { 0x82 }, 1,
      HOSTILE_PROTOCOL_ERROR },
    { "RST_STREAM on stream 0", HOSTILE_RST_STREAM, 0, 0, { 0, 0, 0, 8 }, 4,
      HOSTILE_PROTOCOL_ERROR },
    { "WINDOW_UPDATE of 0 on the connection", HOSTILE_WINDOW_UPDATE, 0, 0, { 0 }, 4,
      HOSTILE_PROTOCOL_ERROR },
    { "SETTINGS of 5 bytes", HOSTILE_SETTINGS, 0, 0, { 0, 3, 0, 0, 1 }, 5,
      HOSTILE_FRAME_SIZE_ERROR },
    { "SETTINGS on stream 1", HOSTILE_SETTINGS, 0, 1, { 0 }, 0, HOSTILE_PROTOCOL_ERROR },
    { "SETTINGS_ENABLE_PUSH 2", HOSTILE_SETTINGS, 0, 0, { 0, 2, 0, 0, 0, 2 }, 6,
      HOSTILE_PROTOCOL_ERROR },
    { "SETTINGS_INITIAL_WINDOW_SIZE 2^31", HOSTILE_SETTINGS, 0, 0, { 0, 4, 0x80, 0, 0, 0 }, 6,
      HOSTILE_FLOW_CONTROL_ERROR },
    { "SETTINGS_MAX_FRAME_SIZE 100", HOSTILE_SETTINGS, 0, 0, { 0, 5, 0, 0, 0, 100 }, 6,
      HOSTILE_PROTOCOL_ERROR },
    { "SETTINGS_MAX_FRAME_SIZE 2^24", HOSTILE_SETTINGS, 0, 0, { 0, 5, 0x01, 0, 0, 0 }, 6,
      HOSTILE_PROTOCOL_ERROR },
    { "SETTINGS ACK with a payload", HOSTILE_SETTINGS, HOSTILE_FLAG_ACK, 0, { 0, 3, 0, 0, 0, 1 },
      6, HOSTILE_FRAME_SIZE_ERROR },
    { "PING of 7 bytes", HOSTILE_PING, 0, 0, { 0 }, 7, HOSTILE_FRAME_SIZE_ERROR },
    { "PING on stream 1", HOSTILE_PING, 0, 1, { 0 }, 8, HOSTILE_PROTOCOL_ERROR },
    { "WINDOW_UPDATE of 3 bytes", HOSTILE_WINDOW_UPDATE, 0, 0, { 0, 0, 1 }, 3,
      HOSTILE_FRAME_SIZE_ERROR },
};

#define NBAD ((int)(sizeof bad_frames / sizeof bad_frames[0]))

START_TEST(forbidden_frame)
{
    const struct bad_frame *b = &bad_frames[_i];
    long base = hostile_start(&ampd, NULL);
    uint8_t bytes[128];
    size_t len = hostile_hello(bytes);
    len += hostile_frame(bytes + len, b->len, b->type, b->flags, b->stream);
    memcpy(bytes + len, b->payload, b->len);
    len += b->len;
    int fd = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(hostile_send(fd, bytes, len), 0);
    struct hostile_reader r;
    hostile_reader_init(&r);
    ck_assert_msg(hostile_reader_until_eof(&r, fd, HOSTILE_IO_MS) >= 0,
                  "%s: the daemon kept the connection open", b->what);
    ck_assert_msg(r.goaway, "%s: closed without a GOAWAY", b->what);
    ck_assert_msg(r.goaway_code == b->code, "%s: GOAWAY code %u, wanted %u", b->what,
                  r.goaway_code, b->code);
    close(fd);
    ck_assert(hostile_wait_quiet(ampd.address, 1, HOSTILE_IO_MS));
    hostile_assert_served(ampd.address);
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

/* Frame headers promising more than comes, on streams with a call open,
 * then the client hangs up: nothing stays behind. */
START_TEST(truncated_frames_then_close)
{
    long base = hostile_start(&ampd, NULL);
    for (int i = 0; i < 8; i++) {
        uint8_t bytes[512];
        size_t len = hostile_hello(bytes);
        size_t block = hostile_request_block(bytes + len + 9, sizeof bytes - len - 9,
                                             "/amp.v1.Amp/Reverse", 0);
        ck_assert_uint_gt(block, 0);
        len += hostile_frame(bytes + len, (uint32_t)block, HOSTILE_HEADERS,
                             HOSTILE_FLAG_END_HEADERS, 1);
        len += block;
        /* A DATA frame of 16000 bytes, i of them sent. */
        len += hostile_frame(bytes + len, 16000, HOSTILE_DATA, 0, 1);
        memset(bytes + len, 0, (size_t)i);
        len += (size_t)i;
        int fd = hostile_connect_unix(ampd.sock_path);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(hostile_send(fd, bytes, len), 0);
        hostile_sleep_ms(20);
        close(fd);
    }
    ck_assert(hostile_wait_quiet(ampd.address, 1, HOSTILE_IO_MS));
    hostile_assert_served(ampd.address);
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hostile_bad_frames");
    const TTest *const tests[] = {
        truncated_frames_then_close,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 60);
    check_run_loop(tc, forbidden_frame, 0, NBAD);
    return check_run(s, CK_FORK_GETENV);
}
