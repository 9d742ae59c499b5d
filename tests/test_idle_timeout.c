/* SPDX-License-Identifier: MIT */
/* test_idle_timeout.c: --idle-timeout against a real ampd. A connection
 * with no call open for that long gets GOAWAY(NO_ERROR) and is closed; a
 * connection holding an open call is not, however quiet the call; without
 * the option an idle connection stays usable. */
#include <check.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check_run.h"
#include "daemon_proc.h"
#include "h2_client.h"
#include "status.h"
#include "stream_msg.h"

#define IO_TIMEOUT_MS 60000
#define IDLE_S "1"
#define QUIET_MS 2500   /* well past the 1 s timeout */

static struct daemon_proc ampd;

static int connect_daemon(void)
{
    int fd = h2c_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    return fd;
}

/* Feeds everything the daemon sends to c until it closes the connection;
 * true if it did within IO_TIMEOUT_MS. */
static bool closed_by_daemon(struct h2c *c, int fd)
{
    uint8_t buf[4096];
    for (;;) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        if (poll(&pfd, 1, IO_TIMEOUT_MS) != 1)
            return false;
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0)
            return true;
        h2c_recv(c, buf, (size_t)n);
    }
}

/* Reads what the daemon sends for ms (its SETTINGS and acks) and checks
 * it neither closed the connection nor sent a GOAWAY. */
static void expect_kept(struct h2c *c, int fd, int ms)
{
    uint8_t buf[4096];
    for (int waited = 0; waited < ms; waited += 100) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        if (poll(&pfd, 1, 100) == 1) {
            ssize_t n = recv(fd, buf, sizeof buf, 0);
            ck_assert_msg(n > 0, "the daemon closed a connection with a call open");
            h2c_recv(c, buf, (size_t)n);
        }
    }
    uint32_t code;
    const char *debug;
    ck_assert_msg(!h2c_goaway(c, &code, &debug), "GOAWAY on a connection with a call open");
}

static void status_call(struct h2c *c, int fd)
{
    int32_t id = h2c_call(c, "/amp.v1.Amp/Status", NULL, 0);
    ck_assert_int_eq(h2c_run_fd(c, fd, IO_TIMEOUT_MS), 0);
    ck_assert_int_eq(h2c_result(c, id)->grpc_status, STATUS_OK);
}

static void expect_goaway_no_error(struct h2c *c, int fd)
{
    ck_assert(closed_by_daemon(c, fd));
    uint32_t code = 1;
    const char *debug;
    ck_assert(h2c_goaway(c, &code, &debug));
    ck_assert_uint_eq(code, 0);
}

START_TEST(idle_connection_closed)
{
    static const char *const args[] = { "--idle-timeout", IDLE_S, NULL };
    ck_assert_int_eq(daemon_start(&ampd, args), 0);
    int fd = connect_daemon();
    struct h2c *c = h2c_new();
    status_call(c, fd);
    expect_goaway_no_error(c, fd);
    h2c_free(c);
    close(fd);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

/* A Stream call that sends its header and then nothing for QUIET_MS keeps
 * its connection; once it ends, the connection is idle and goes. */
START_TEST(open_call_keeps_connection)
{
    static const char *const args[] = { "--idle-timeout", IDLE_S, NULL };
    ck_assert_int_eq(daemon_start(&ampd, args), 0);
    size_t len;
    uint8_t *body = stream_histogram_header(&len);

    int fd = connect_daemon();
    struct h2c *c = h2c_new();
    int32_t id = h2c_request_open(c, "/amp.v1.Amp/Stream", body, len);
    ck_assert_int_eq(h2c_flush(c, fd), 0);
    expect_kept(c, fd, QUIET_MS);
    ck_assert_int_eq(h2c_append(c, id, NULL, 0, true), 0);
    ck_assert_int_eq(h2c_run_fd(c, fd, IO_TIMEOUT_MS), 0);
    ck_assert_int_eq(h2c_result(c, id)->grpc_status, STATUS_OK);
    expect_goaway_no_error(c, fd);
    h2c_free(c);
    close(fd);
    free(body);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

START_TEST(no_timeout_by_default)
{
    ck_assert_int_eq(daemon_start(&ampd, NULL), 0);
    int fd = connect_daemon();
    struct h2c *c = h2c_new();
    status_call(c, fd);
    expect_kept(c, fd, QUIET_MS);
    status_call(c, fd);
    h2c_free(c);
    close(fd);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("idle_timeout");
    const TTest *const tests[] = {
        idle_connection_closed,
        open_call_keeps_connection,
        no_timeout_by_default,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 600);
    return check_run(s, CK_FORK_GETENV);
}
