/* SPDX-License-Identifier: MIT */
/* daemon_proc.c: start and stop a real ampd for integration tests.
 *
 * The daemon runs as a child process listening on a Unix socket in a fresh
 * mkdtemp directory. Readiness is a health Check answered SERVING: ampd
 * listens at once but serves jobs only once its devices are open (and says
 * SERVING on any loop only once every loop runs jobs), and PoCL compiles
 * the kernels then, which can take tens of seconds under ASan, so the wait
 * is long but polls often. Liveness checks use
 * waitid(WNOWAIT) so that the exit status stays for daemon_stop() to reap.
 */
#define _GNU_SOURCE
#include "daemon_proc.h"

#include "grpc/health/v1/health.pb-c.h"
#include "h2_client.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DAEMON_START_TIMEOUT_MS 120000 /* PoCL kernel builds under ASan are slow */
#define DAEMON_STOP_TIMEOUT_MS 60000   /* graceful drain, then SIGKILL */
#define DAEMON_POLL_MS 50
#define DAEMON_MAX_ARGS 64

static long long daemon_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void daemon_sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* 1 if the daemon on path answers a health Check SERVING, else 0. The
 * check also says that every --listen address is bound: the loop that
 * answers starts after all of them. */
static int daemon_serving(const char *path)
{
    int fd = h2c_connect_unix(path);
    if (fd < 0)
        return 0;
    struct h2c *c = h2c_new();
    int32_t id = h2c_call(c, "/grpc.health.v1.Health/Check", NULL, 0);
    int ok = h2c_run_fd(c, fd, DAEMON_POLL_MS * 20) == 0 &&
             h2c_health_status(h2c_result(c, id)) ==
                 GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
    h2c_free(c);
    close(fd);
    return ok;
}

static void daemon_cleanup_dir(struct daemon_proc *d)
{
    if (d->sock_path[0])
        unlink(d->sock_path);
    if (d->dir[0])
        rmdir(d->dir);
    d->dir[0] = '\0';
}

/* Child side of fork: exec ampd with --listen and the extra arguments,
 * and --io-threads $AMPD_TEST_IO_THREADS when that is set and the test
 * did not choose (tests/CMakeLists.txt runs some tests again that way). */
static void daemon_exec(const char *bin, const char *address, const char *const *extra)
{
    const char *argv[DAEMON_MAX_ARGS + 6];
    size_t n = 0;
    bool loops_chosen = false;
    argv[n++] = bin;
    argv[n++] = "--listen";
    argv[n++] = address;
    for (size_t i = 0; extra && extra[i] && i < DAEMON_MAX_ARGS; i++) {
        loops_chosen |= strcmp(extra[i], "--io-threads") == 0;
        argv[n++] = extra[i];
    }
    const char *loops = getenv("AMPD_TEST_IO_THREADS");
    if (loops && *loops && !loops_chosen) {
        argv[n++] = "--io-threads";
        argv[n++] = loops;
    }
    argv[n] = NULL;
    /* A test that crashes must not leave its daemon behind. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    execv(bin, (char *const *)argv);
    fprintf(stderr, "daemon_proc: exec %s: %s\n", bin, strerror(errno));
    _exit(127);
}

static int daemon_prepare_dir(struct daemon_proc *d)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    int n = snprintf(d->dir, sizeof d->dir, "%s/ampd-test-XXXXXX", tmp);
    if (n < 0 || (size_t)n >= sizeof d->dir || !mkdtemp(d->dir)) {
        fprintf(stderr, "daemon_proc: mkdtemp under %s failed\n", tmp);
        d->dir[0] = '\0';
        return -1;
    }
    /* The socket path must fit sockaddr_un.sun_path (108 bytes). */
    n = snprintf(d->sock_path, sizeof d->sock_path, "%s/ampd.sock", d->dir);
    if (n < 0 || (size_t)n >= sizeof ((struct sockaddr_un *)0)->sun_path) {
        fprintf(stderr, "daemon_proc: socket path too long under %s\n", tmp);
        daemon_cleanup_dir(d);
        return -1;
    }
    snprintf(d->address, sizeof d->address, "unix:%s", d->sock_path);
    return 0;
}

/* Waits for SERVING; returns 0 ready, -1 exited or timed out. */
static int daemon_wait_ready(struct daemon_proc *d)
{
    long long deadline = daemon_now_ms() + DAEMON_START_TIMEOUT_MS;
    while (daemon_now_ms() < deadline) {
        if (!daemon_alive(d)) {
            fprintf(stderr, "daemon_proc: ampd exited during startup\n");
            return -1;
        }
        if (daemon_serving(d->sock_path))
            return 0;
        daemon_sleep_ms(DAEMON_POLL_MS);
    }
    fprintf(stderr, "daemon_proc: ampd not ready after %d ms\n", DAEMON_START_TIMEOUT_MS);
    return -1;
}

/* Runs ampd on d's prepared directory and waits until it is ready. */
static int daemon_spawn(struct daemon_proc *d, const char *const *extra_args)
{
    const char *bin = getenv("AMPD_BIN");
    if (!bin || !*bin) {
        fprintf(stderr, "daemon_proc: AMPD_BIN is not set\n");
        daemon_cleanup_dir(d);
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        daemon_cleanup_dir(d);
        return -1;
    }
    if (pid == 0)
        daemon_exec(bin, d->address, extra_args);
    d->pid = pid;
    if (daemon_wait_ready(d) != 0) {
        daemon_stop(d);
        return -1;
    }
    return 0;
}

int daemon_start(struct daemon_proc *d, const char *const *extra_args)
{
    memset(d, 0, sizeof *d);
    d->pid = -1;
    if (daemon_prepare_dir(d) != 0)
        return -1;
    return daemon_spawn(d, extra_args);
}

static int daemon_reap(struct daemon_proc *d);

int daemon_restart(struct daemon_proc *d, const char *const *extra_args)
{
    if (d->pid > 0)
        kill(d->pid, SIGTERM);
    int st = daemon_reap(d);
    unlink(d->sock_path);   /* left behind by a daemon that was killed */
    if (daemon_spawn(d, extra_args) != 0)
        return -1;
    return st;
}

int daemon_alive(struct daemon_proc *d)
{
    if (d->pid <= 0)
        return 0;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)d->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
        return 0;
    return si.si_pid == 0; /* 0: no state change, still running */
}

/* waitpid with a deadline: 0 exited (status set), 1 still running at the
 * deadline, -1 no such child (already reaped by the test itself). */
static int daemon_wait_exit(pid_t pid, int timeout_ms, int *status)
{
    long long deadline = daemon_now_ms() + timeout_ms;
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;
        if (daemon_now_ms() >= deadline)
            return 1;
        daemon_sleep_ms(DAEMON_POLL_MS);
    }
}

int daemon_stop(struct daemon_proc *d)
{
    if (d->pid > 0)
        kill(d->pid, SIGTERM);
    return daemon_wait(d);
}

int daemon_wait(struct daemon_proc *d)
{
    int result = daemon_reap(d);
    daemon_cleanup_dir(d);
    return result;
}

/* Waits for the daemon to exit (killing it after the stop timeout) and
 * returns as daemon_wait(), keeping its directory. */
static int daemon_reap(struct daemon_proc *d)
{
    int result = -1;
    if (d->pid > 0) {
        int status = 0;
        int w = daemon_wait_exit(d->pid, DAEMON_STOP_TIMEOUT_MS, &status);
        if (w == 1) {
            fprintf(stderr, "daemon_proc: ampd did not exit in time, killing it\n");
            kill(d->pid, SIGKILL);
            waitpid(d->pid, &status, 0);
        } else if (w < 0) {
            fprintf(stderr, "daemon_proc: ampd was already reaped\n");
        } else if (WIFEXITED(status)) {
            result = WEXITSTATUS(status);
        } else if (WIFSIGNALED(status)) {
            result = 128 + WTERMSIG(status);
        }
        d->pid = -1;
    }
    return result;
}
