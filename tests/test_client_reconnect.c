/* SPDX-License-Identifier: MIT */
/* test_client_reconnect.c: a connection outlives its daemon and bounds
 * its connect. After the daemon restarts (drained with SIGTERM, or
 * killed) or closes an idle connection with GOAWAY, the next call reopens
 * the connection and succeeds; with no_reconnect it fails with AMP_EIO.
 * A connect to a listener whose accept queue is full, Unix or TCP, fails
 * with AMP_ECONNECT once its timeout passes, not later. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "amp.h"
#include "check_run.h"
#include "daemon_proc.h"

#define RECONNECT_CALL_MS 60000      /* a bound for a call that must succeed */
#define RECONNECT_CONNECT_MS 300     /* the connect timeout under test */
#define RECONNECT_SLACK_MS 3000      /* how late past it a connect may give up (ASan) */
#define RECONNECT_QUEUE_FILL 64      /* connects that fill a backlog-0 queue, at most */
#define RECONNECT_IDLE_S "1"         /* --idle-timeout */
#define RECONNECT_IDLE_WAIT_US 2500000

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static amp_conn *connect_ok(const char *address, int no_reconnect)
{
    amp_connect_opts co = { .size = sizeof co, .no_reconnect = no_reconnect };
    amp_conn *c = NULL;
    int rc = amp_connect_with(address, &co, &c);
    ck_assert_msg(rc == 0, "connect %s: %s: %s", address, amp_strerror(rc), amp_last_message(NULL));
    return c;
}

/* Reverses "abc" on c; returns the library's code. */
static int reverse(amp_conn *c)
{
    amp_opts o = { .size = sizeof o, .timeout_ms = RECONNECT_CALL_MS };
    void *out = NULL;
    size_t n = 0;
    int rc = amp_reverse(c, &o, "abc", 3, &out, &n);
    if (rc == 0) {
        ck_assert_uint_eq(n, 3);
        ck_assert_int_eq(memcmp(out, "cba", 3), 0);
    }
    amp_free(out);
    return rc;
}

static void reverse_ok(amp_conn *c)
{
    int rc = reverse(c);
    ck_assert_msg(rc == 0, "reverse: %s: %s", amp_strerror(rc), amp_last_message(c));
    ck_assert_int_eq(amp_last_grpc_status(c), 0);
}

START_TEST(reconnects_after_drained_restart)
{
    struct daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, NULL), 0);
    amp_conn *c = connect_ok(d.address, 0);
    reverse_ok(c);
    ck_assert_int_eq(daemon_restart(&d, NULL), 0);   /* SIGTERM: GOAWAY, then close */
    reverse_ok(c);
    reverse_ok(c);
    amp_close(c);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

START_TEST(reconnects_after_killed_restart)
{
    struct daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, NULL), 0);
    amp_conn *c = connect_ok(d.address, 0);
    reverse_ok(c);
    kill(d.pid, SIGKILL);   /* no GOAWAY: the socket just ends */
    ck_assert_int_eq(daemon_restart(&d, NULL), 128 + SIGKILL);
    reverse_ok(c);
    amp_close(c);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

START_TEST(gone_daemon_is_econnect_then_back)
{
    struct daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, NULL), 0);
    char address[sizeof d.address];
    snprintf(address, sizeof address, "%s", d.address);
    amp_conn *c = connect_ok(address, 0);
    reverse_ok(c);
    kill(d.pid, SIGKILL);
    while (daemon_alive(&d))   /* its socket closed: the call sees that before it sends */
        usleep(1000);
    /* Nothing listens: the reopen fails and says so, promptly. */
    int rc = reverse(c);
    ck_assert_msg(rc == AMP_ECONNECT, "rc %s: %s", amp_error_name(rc), amp_last_message(c));
    ck_assert_ptr_nonnull(strstr(amp_last_message(c), "reconnecting"));
    ck_assert_int_eq(amp_last_grpc_status(c), -1);
    /* The daemon comes back: the same connection works again. */
    ck_assert_int_eq(daemon_restart(&d, NULL), 128 + SIGKILL);
    reverse_ok(c);
    amp_close(c);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

START_TEST(no_reconnect_stays_broken)
{
    struct daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, NULL), 0);
    amp_conn *c = connect_ok(d.address, 1);
    reverse_ok(c);
    ck_assert_int_eq(daemon_restart(&d, NULL), 0);
    int rc = reverse(c);
    ck_assert_msg(rc == AMP_EIO || rc == AMP_EUNAVAIL, "rc %s: %s", amp_error_name(rc),
                  amp_last_message(c));
    ck_assert_int_eq(reverse(c), AMP_EIO);
    amp_close(c);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

START_TEST(reconnects_after_idle_goaway)
{
    static const char *const args[] = { "--idle-timeout", RECONNECT_IDLE_S, NULL };
    struct daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, args), 0);
    amp_conn *c = connect_ok(d.address, 0);
    reverse_ok(c);
    usleep(RECONNECT_IDLE_WAIT_US);   /* the daemon closes the idle connection */
    reverse_ok(c);
    amp_close(c);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* --- connect timeouts ------------------------------------------------------- */

/* Connects non-blocking sockets of family to sa until the listener's
 * queue takes no more (EAGAIN for Unix; for TCP the kernel drops the
 * SYNs of connects beyond the queue, which stay in progress). */
static int fill_queue(int family, const struct sockaddr *sa, socklen_t len, int *fds)
{
    int n = 0;
    while (n < RECONNECT_QUEUE_FILL) {
        int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK, 0);
        ck_assert_int_ge(fd, 0);
        fds[n++] = fd;
        if (connect(fd, sa, len) != 0 && errno == EAGAIN)
            break;
        if (family != AF_UNIX && n >= 8)
            break;
        usleep(10000);   /* let the handshake finish so the queue fills */
    }
    return n;
}

static void expect_connect_timeout(const char *address)
{
    amp_connect_opts co = { .size = sizeof co, .timeout_ms = RECONNECT_CONNECT_MS };
    amp_conn *c = (amp_conn *)&co;
    long long t0 = now_ms();
    int rc = amp_connect_with(address, &co, &c);
    long long took = now_ms() - t0;
    ck_assert_msg(rc == AMP_ECONNECT, "%s: rc %s: %s", address, amp_error_name(rc),
                  amp_last_message(NULL));
    ck_assert_ptr_null(c);
    ck_assert_msg(took >= RECONNECT_CONNECT_MS - 20 &&
                      took < RECONNECT_CONNECT_MS + RECONNECT_SLACK_MS,
                  "gave up after %lld ms, timeout %d", took, RECONNECT_CONNECT_MS);
    ck_assert_msg(strstr(amp_last_message(NULL), "within 300 ms"), "message '%s'",
                  amp_last_message(NULL));
}

START_TEST(unix_connect_to_full_queue_times_out)
{
    char dir[] = "/tmp/amp-reconnect-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s/full.sock", dir);
    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_eq(bind(l, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(l, 0), 0);   /* and never accept */
    int fds[RECONNECT_QUEUE_FILL];
    int n = fill_queue(AF_UNIX, (struct sockaddr *)&sa, sizeof sa, fds);
    char address[160];
    snprintf(address, sizeof address, "unix:%s", sa.sun_path);
    expect_connect_timeout(address);
    for (int i = 0; i < n; i++)
        close(fds[i]);
    close(l);
    unlink(sa.sun_path);
    rmdir(dir);
}
END_TEST

START_TEST(tcp_connect_to_full_queue_times_out)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    ck_assert_int_eq(bind(l, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(l, 0), 0);   /* and never accept */
    socklen_t len = sizeof sa;
    ck_assert_int_eq(getsockname(l, (struct sockaddr *)&sa, &len), 0);
    int fds[RECONNECT_QUEUE_FILL];
    int n = fill_queue(AF_INET, (struct sockaddr *)&sa, sizeof sa, fds);
    char address[64];
    snprintf(address, sizeof address, "127.0.0.1:%d", ntohs(sa.sin_port));
    expect_connect_timeout(address);
    for (int i = 0; i < n; i++)
        close(fds[i]);
    close(l);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_reconnect");
    const TTest *const tests[] = {
        reconnects_after_drained_restart,
        reconnects_after_killed_restart,
        gone_daemon_is_econnect_then_back,
        no_reconnect_stays_broken,
        reconnects_after_idle_goaway,
        unix_connect_to_full_queue_times_out,
        tcp_connect_to_full_queue_times_out,
        NULL,
    };
    TCase *tc = check_run_case(s, "reconnect", tests);
    tcase_set_timeout(tc, 300);
    return check_run(s, CK_FORK_GETENV);
}
