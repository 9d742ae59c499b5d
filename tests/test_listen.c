/* SPDX-License-Identifier: MIT */
/* test_listen.c: where the daemon listens. A stale Unix socket file left
 * by a crash is replaced; a live one (another daemon) is not touched and
 * startup fails; TCP and Unix listeners serve side by side; the socket file
 * is removed on exit. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include "hostile.h"
#include <check.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_run.h"
#include "daemon_proc.h"
#include "h2_client.h"
#include "listen.h"

#define IO_TIMEOUT_MS 60000
#define START_TIMEOUT_S 120

static pid_t spawn_ampd(const char *const *args)
{
    const char *bin = getenv("AMPD_BIN");
    ck_assert_ptr_nonnull(bin);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        const char *argv[16] = { bin };
        for (int i = 0; args[i] && i < 14; i++)
            argv[i + 1] = args[i];
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* Waits for the child's exit status (-1 if it was killed by a signal). */
static int wait_exit(pid_t pid)
{
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static bool ready(const char *path, pid_t pid)
{
    for (int i = 0; i < START_TIMEOUT_S * 20; i++) {
        int fd = h2c_connect_unix(path);
        if (fd >= 0) {
            close(fd);
            return true;
        }
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return false;
        usleep(50000);
    }
    return false;
}

static int status_call(int fd)
{
    struct h2c *c = h2c_new();
    int32_t id = h2c_call(c, "/amp.v1.Amp/Status", NULL, 0);
    ck_assert_int_eq(h2c_run_fd(c, fd, IO_TIMEOUT_MS), 0);
    int st = h2c_result(c, id)->grpc_status;
    h2c_free(c);
    return st;
}

START_TEST(stale_socket_replaced_and_tcp_served)
{
    char dir[] = "/tmp/ampd-listen-XXXXXX", path[128], unix_addr[160], tcp_addr[32];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/ampd.sock", dir);
    /* A socket file nobody listens on: what a crashed daemon leaves. */
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%.100s", path);
    ck_assert_int_eq(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(s);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);

    int port = hostile_free_port();
    snprintf(unix_addr, sizeof(unix_addr), "unix:%s", path);
    snprintf(tcp_addr, sizeof(tcp_addr), "127.0.0.1:%d", port);
    const char *args[] = { "--listen", unix_addr, "--listen", tcp_addr, "--tcp-require-token", "off",
                           NULL };
    pid_t pid = spawn_ampd(args);
    ck_assert(ready(path, pid));

    int fd = h2c_connect_unix(path);
    ck_assert_int_eq(status_call(fd), 0);
    close(fd);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&in, sizeof(in)), 0);
    ck_assert_int_eq(status_call(fd), 0);
    close(fd);

    kill(pid, SIGTERM);
    ck_assert_int_eq(wait_exit(pid), 0);
    ck_assert_int_ne(stat(path, &st), 0); /* removed on exit */
    rmdir(dir);
}
END_TEST

START_TEST(live_socket_not_stolen)
{
    struct daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, NULL), 0);
    const char *args[] = { "--listen", d.address, NULL };
    pid_t pid = spawn_ampd(args);
    ck_assert_int_eq(wait_exit(pid), 1);
    /* The first daemon still serves on its socket. */
    int fd = h2c_connect_unix(d.sock_path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(status_call(fd), 0);
    close(fd);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

START_TEST(not_a_socket_left_alone)
{
    char dir[] = "/tmp/ampd-listen-XXXXXX", path[128], addr[160];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/precious", dir);
    int f = open(path, O_CREAT | O_WRONLY, 0600);
    ck_assert_int_ge(f, 0);
    close(f);
    snprintf(addr, sizeof(addr), "unix:%s", path);
    const char *args[] = { "--listen", addr, NULL };
    ck_assert_int_eq(wait_exit(spawn_ampd(args)), 1);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    unlink(path);
    rmdir(dir);
}
END_TEST

/* A socket in a directory that does not exist: the error names the
 * directory and says what to do, instead of a bare ENOENT. */
START_TEST(missing_directory_named)
{
    char dir[] = "/tmp/ampd-listen-XXXXXX", path[128], err[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/run/ampd.sock", dir);
    struct listen_unix_access access = { .mode = 0660, .gid = -1 };
    int fd = -1;
    ck_assert_int_eq(listen_unix_fd(path, &access, &fd, err, sizeof err), -1);
    char want[160];
    snprintf(want, sizeof want, "the directory %s/run does not exist", dir);
    ck_assert_msg(strstr(err, want) && strstr(err, "--listen"), "err: %s", err);
    rmdir(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("listen");
    const TTest *const tests[] = {
        stale_socket_replaced_and_tcp_served,
        live_socket_not_stolen,
        not_a_socket_left_alone,
        missing_directory_named,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 600);
    return check_run(s, CK_FORK_GETENV);
}
