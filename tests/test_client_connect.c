/* SPDX-License-Identifier: MIT */
/* test_client_connect.c: amp_connect's failures: a missing socket, a TCP
 * port nobody listens on, malformed and unresolvable addresses. Each
 * returns its code at once, leaves *out NULL, and explains itself through
 * amp_last_message(NULL). */
#include "hostile.h"
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "amp.h"
#include "check_run.h"

static void expect_connect(const char *address, int want, const char *want_in_msg)
{
    amp_conn *c = (amp_conn *)&c; /* must be overwritten with NULL */
    int rc = amp_connect(address, &c);
    ck_assert_msg(rc == want, "%s: rc %d (%s), want %d", address, rc, amp_strerror(rc), want);
    ck_assert_ptr_null(c);
    const char *msg = amp_last_message(NULL);
    ck_assert_msg(strstr(msg, want_in_msg), "%s: message '%s' lacks '%s'", address, msg,
                  want_in_msg);
}

START_TEST(missing_unix_socket)
{
    char dir[] = "/tmp/amp-connect-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char address[128];
    snprintf(address, sizeof address, "unix:%s/nobody.sock", dir);
    expect_connect(address, AMP_ECONNECT, "nobody.sock");
    expect_connect(address, AMP_ECONNECT, "No such file");
    rmdir(dir);
}
END_TEST

START_TEST(refused_tcp_port)
{
    char address[64];
    snprintf(address, sizeof address, "127.0.0.1:%d", hostile_free_port());
    expect_connect(address, AMP_ECONNECT, "refused");
}
END_TEST

START_TEST(malformed_addresses)
{
    expect_connect("", AMP_EADDR, "empty");
    expect_connect("unix:", AMP_EADDR, "empty path");
    expect_connect("localhost", AMP_EADDR, "HOST:PORT");
    expect_connect("localhost:99999", AMP_EADDR, "out of range");
    expect_connect("::1:80", AMP_EADDR, "brackets");
}
END_TEST

START_TEST(unresolvable_host)
{
    /* .invalid never resolves (RFC 2606). */
    expect_connect("no-such-host.invalid:50051", AMP_EADDR, "no-such-host.invalid");
}
END_TEST

START_TEST(success_clears_connect_message)
{
    char dir[] = "/tmp/amp-connect-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[100], address[140];
    snprintf(path, sizeof path, "%s/s.sock", dir);
    snprintf(address, sizeof address, "unix:%s", path);
    expect_connect(address, AMP_ECONNECT, "s.sock");
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(fd, 4), 0);
    amp_conn *c = NULL;
    ck_assert_int_eq(amp_connect(address, &c), 0);
    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(amp_last_message(NULL), "");
    ck_assert_str_eq(amp_last_message(c), "");
    amp_close(c);
    close(fd);
    unlink(path);
    rmdir(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_connect");
    const TTest *const tests[] = {
        missing_unix_socket,
        refused_tcp_port,
        malformed_addresses,
        unresolvable_host,
        success_clears_connect_message,
        NULL,
    };
    check_run_case(s, "connect", tests);
    return check_run(s, CK_FORK_GETENV);
}
