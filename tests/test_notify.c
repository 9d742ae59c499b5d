/* SPDX-License-Identifier: MIT */
/* test_notify.c: ampd tells systemd how it is doing (sd_notify). With
 * $NOTIFY_SOCKET naming a datagram socket (a path, or '@' and an abstract
 * name) it sends a STATUS= line alone once it listens, READY=1 once it
 * serves jobs (not before: tests/test_start_ready.py holds a start there)
 * and STOPPING=1 when SIGTERM starts the drain, each with a STATUS= line
 * for systemctl status; a
 * NOTIFY_SOCKET that is no socket path changes nothing else. */
#include <check.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "check_run.h"
#include "daemon_proc.h"

#define WAIT_MS 60000

static struct daemon_proc ampd;

/* A datagram socket bound to name ('@': abstract); returns the fd. */
static int bind_notify(const char *name)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    size_t len = strlen(name);
    ck_assert_uint_lt(len, sizeof addr.sun_path);
    memcpy(addr.sun_path, name, len);
    if (name[0] == '@')
        addr.sun_path[0] = '\0';
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&addr,
                          (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)),
                     0);
    return fd;
}

/* The next datagram on fd: its first line is want, and a STATUS= line
 * with words follows. */
static void expect_state(int fd, const char *want)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    ck_assert_msg(poll(&pfd, 1, WAIT_MS) == 1, "no %s within %d ms", want, WAIT_MS);
    char buf[256];
    ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
    ck_assert_int_gt(n, 0);
    buf[n] = '\0';
    char *status = strstr(buf, "\nSTATUS=");
    ck_assert_msg(status && status[strlen("\nSTATUS=")] != '\0', "no STATUS= in \"%s\"", buf);
    *status = '\0';
    ck_assert_str_eq(buf, want);
}

/* The next datagram on fd is a STATUS= line with words, and nothing else. */
static void expect_status_alone(int fd)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    ck_assert_msg(poll(&pfd, 1, WAIT_MS) == 1, "no STATUS= within %d ms", WAIT_MS);
    char buf[256];
    ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
    ck_assert_int_gt(n, 0);
    buf[n] = '\0';
    ck_assert_msg(strncmp(buf, "STATUS=", strlen("STATUS=")) == 0 && !strchr(buf, '\n') &&
                      buf[strlen("STATUS=")] != '\0',
                  "not a STATUS= line alone: \"%s\"", buf);
}

static void ready_and_stopping(const char *name)
{
    int fd = bind_notify(name);
    ck_assert_int_eq(setenv("NOTIFY_SOCKET", name, 1), 0);
    ck_assert_int_eq(daemon_start(&ampd, NULL), 0);
    unsetenv("NOTIFY_SOCKET");
    expect_status_alone(fd);   /* listening, devices opening */
    expect_state(fd, "READY=1");
    ck_assert_int_eq(daemon_stop(&ampd), 0);
    expect_state(fd, "STOPPING=1");
    close(fd);
}

START_TEST(path_socket)
{
    char dir[] = "/tmp/ampd-notify-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char name[64];
    snprintf(name, sizeof name, "%s/notify", dir);
    ready_and_stopping(name);
    unlink(name);
    rmdir(dir);
}
END_TEST

START_TEST(abstract_socket)
{
    char name[64];
    snprintf(name, sizeof name, "@ampd-test-notify-%d", (int)getpid());
    ready_and_stopping(name);
}
END_TEST

START_TEST(not_a_socket_path)
{
    ck_assert_int_eq(setenv("NOTIFY_SOCKET", "relative/notify", 1), 0);
    ck_assert_int_eq(daemon_start(&ampd, NULL), 0);
    unsetenv("NOTIFY_SOCKET");
    ck_assert(daemon_alive(&ampd));
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("notify");
    const TTest *const tests[] = {
        path_socket,
        abstract_socket,
        not_a_socket_path,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 600);
    return check_run(s, CK_FORK_GETENV);
}
