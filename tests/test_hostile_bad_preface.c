/* SPDX-License-Identifier: MIT */
/* test_hostile_bad_preface.c: connections that do not open with the
 * HTTP/2 client preface and a SETTINGS frame: an HTTP/1.1 request, random
 * bytes, a preface with one byte wrong, a preface cut short by a close,
 * and a good preface followed by a frame other than SETTINGS. Each is
 * closed by the daemon (with GOAWAY(PROTOCOL_ERROR) once a preface was
 * whole), holds nothing afterwards, and a well-behaved client is served. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "hostile.h"

static struct daemon_proc ampd;
static long base;

static void start(void)
{
    static const char *const args[] = { "--max-connections", "16", NULL };
    base = hostile_start(&ampd, args);
}

static void finish(void)
{
    ck_assert(hostile_wait_quiet(ampd.address, 1, HOSTILE_IO_MS));
    hostile_assert_served(ampd.address);
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}

/* Sends bytes on a new connection; returns the reader once the daemon
 * has closed it (failing the test if it does not). */
static struct hostile_reader *send_and_expect_close(const void *bytes, size_t len)
{
    static struct hostile_reader r;
    int fd = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    hostile_reader_init(&r);
    hostile_send(fd, bytes, len); /* the daemon may close before all is sent */
    ck_assert_msg(hostile_reader_until_eof(&r, fd, HOSTILE_IO_MS) >= 0,
                  "the daemon kept the connection open");
    close(fd);
    return &r;
}

START_TEST(http1_request)
{
    start();
    static const char req[] = "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive\r\n\r\n";
    send_and_expect_close(req, sizeof req - 1);
    finish();
}
END_TEST

START_TEST(random_bytes)
{
    start();
    uint8_t junk[4096];
    srand(10);
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)rand();
    send_and_expect_close(junk, sizeof junk);
    finish();
}
END_TEST

START_TEST(preface_one_byte_wrong)
{
    start();
    uint8_t hello[64];
    size_t len = hostile_hello(hello);
    hello[sizeof hostile_preface - 1] = 'X';
    send_and_expect_close(hello, len);
    finish();
}
END_TEST

START_TEST(preface_cut_short)
{
    start();
    for (int i = 0; i < 8; i++) {
        int fd = hostile_connect_unix(ampd.sock_path);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(hostile_send(fd, hostile_preface, 10), 0);
        close(fd);
    }
    finish();
}
END_TEST

START_TEST(first_frame_not_settings)
{
    start();
    uint8_t bytes[64];
    memcpy(bytes, hostile_preface, sizeof hostile_preface);
    size_t len = sizeof hostile_preface;
    len += hostile_frame(bytes + len, 8, HOSTILE_PING, 0, 0);
    memset(bytes + len, 0, 8);
    len += 8;
    struct hostile_reader *r = send_and_expect_close(bytes, len);
    ck_assert(r->goaway);
    ck_assert_uint_eq(r->goaway_code, HOSTILE_PROTOCOL_ERROR);
    finish();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hostile_bad_preface");
    const TTest *const tests[] = {
        http1_request,
        random_bytes,
        preface_one_byte_wrong,
        preface_cut_short,
        first_frame_not_settings,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 60);
    return check_run(s, CK_FORK_GETENV);
}
