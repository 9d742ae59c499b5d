/* SPDX-License-Identifier: MIT */
/* bench_daemon.c: start and stop an ampd for a benchmark (bench_daemon.h).
 * The child's stdout and stderr go to a log file, shown only when it fails:
 * a benchmark's own output stays a table. With $BENCH_AMPD_LOG set, each
 * log is appended to that file when its daemon stops (to read a run's
 * ampd --log-level debug lines). */
#define _GNU_SOURCE
#include "bench_daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include "amp.h"
#include "bench_util.h"

#define BENCH_DAEMON_START_MS 120000   /* PoCL builds ampd's kernels at start */
#define BENCH_DAEMON_STOP_MS 60000     /* past ampd's default --drain-timeout (30 s) */
#define BENCH_DAEMON_POLL_MS 50
#define BENCH_DAEMON_LOG_TAIL 2000     /* bytes of the log shown on failure */
#define BENCH_DAEMON_MAX_ARGS 64

void bench_daemon_log(const struct bench_daemon *dm)
{
    FILE *f = fopen(dm->log, "r");
    if (!f)
        return;
    char buf[BENCH_DAEMON_LOG_TAIL + 1];
    fseek(f, 0, SEEK_END);
    long end = ftell(f);
    fseek(f, end > BENCH_DAEMON_LOG_TAIL ? end - BENCH_DAEMON_LOG_TAIL : 0, SEEK_SET);
    size_t n = fread(buf, 1, BENCH_DAEMON_LOG_TAIL, f);
    buf[n] = '\0';
    fclose(f);
    fprintf(stderr, "--- the end of ampd's log (%s) ---\n%s\n", dm->log, buf);
}

/* In the child: never returns. */
static void bench_daemon_exec(const struct bench_daemon *dm, const char *path,
                              const char *const *args)
{
    char listen_arg[sizeof dm->address];
    snprintf(listen_arg, sizeof listen_arg, "%s", dm->address);
    const char *argv[BENCH_DAEMON_MAX_ARGS + 4];
    int n = 0;
    argv[n++] = path;
    argv[n++] = "--listen";
    argv[n++] = listen_arg;
    for (int i = 0; args && args[i] && i < BENCH_DAEMON_MAX_ARGS; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    int fd = open(dm->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
    }
    execv(path, (char *const *)argv);
    fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
    _exit(127);
}

static int bench_daemon_health(const char *address)
{
    amp_conn *c;
    int serving = AMP_HEALTH_UNKNOWN;
    if (amp_connect(address, &c) != 0)
        return AMP_HEALTH_UNKNOWN;
    int rc = amp_health(c, NULL, NULL, &serving);
    amp_close(c);
    return rc == 0 ? serving : AMP_HEALTH_UNKNOWN;
}

/* Appends the daemon's log to $BENCH_AMPD_LOG, where set. */
static void bench_daemon_keep_log(const struct bench_daemon *dm)
{
    const char *keep = getenv("BENCH_AMPD_LOG");
    FILE *in = keep ? fopen(dm->log, "r") : NULL;
    FILE *out = in ? fopen(keep, "a") : NULL;
    char buf[4096];
    size_t n;
    while (out && (n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, out);
    if (out)
        fclose(out);
    if (in)
        fclose(in);
}

static void bench_daemon_cleanup(struct bench_daemon *dm)
{
    bench_daemon_keep_log(dm);
    char sock[sizeof dm->dir + 32];
    snprintf(sock, sizeof sock, "%s/ampd.sock", dm->dir);
    unlink(sock);
    snprintf(sock, sizeof sock, "%s/ampd.sock.regions", dm->dir);   /* its region socket */
    unlink(sock);
    unlink(dm->log);
    rmdir(dm->dir);
    dm->pid = 0;
}

int bench_daemon_start(struct bench_daemon *dm, const char *path, const char *prefix,
                       const char *const *args, char *err, size_t errlen)
{
    memset(dm, 0, sizeof *dm);
    snprintf(dm->dir, sizeof dm->dir, "/tmp/%.32s.XXXXXX", prefix);
    if (!mkdtemp(dm->dir)) {
        snprintf(err, errlen, "mkdtemp: %s", strerror(errno));
        return -1;
    }
    snprintf(dm->address, sizeof dm->address, "unix:%s/ampd.sock", dm->dir);
    snprintf(dm->log, sizeof dm->log, "%s/ampd.log", dm->dir);
    fflush(NULL);
    dm->pid = fork();
    if (dm->pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        rmdir(dm->dir);
        return -1;
    }
    if (dm->pid == 0)
        bench_daemon_exec(dm, path, args);
    for (int waited = 0; waited < BENCH_DAEMON_START_MS; waited += BENCH_DAEMON_POLL_MS) {
        if (waitpid(dm->pid, NULL, WNOHANG) == dm->pid) {
            bench_daemon_log(dm);
            snprintf(err, errlen, "%s exited before serving (its log above)", path);
            bench_daemon_cleanup(dm);
            return -1;
        }
        if (bench_daemon_health(dm->address) == AMP_HEALTH_SERVING)
            return 0;
        bench_sleep_ms(BENCH_DAEMON_POLL_MS);
    }
    kill(dm->pid, SIGKILL);
    waitpid(dm->pid, NULL, 0);
    bench_daemon_log(dm);
    snprintf(err, errlen, "%s was not serving after %d s (its log above)", path,
             BENCH_DAEMON_START_MS / 1000);
    bench_daemon_cleanup(dm);
    return -1;
}

int bench_daemon_stop(struct bench_daemon *dm)
{
    if (dm->pid <= 0)
        return 0;
    int st = 0;
    kill(dm->pid, SIGTERM);
    for (int waited = 0; waitpid(dm->pid, &st, WNOHANG) != dm->pid;
         waited += BENCH_DAEMON_POLL_MS) {
        if (waited >= BENCH_DAEMON_STOP_MS) {
            kill(dm->pid, SIGKILL);
            waitpid(dm->pid, &st, 0);
            fprintf(stderr, "ampd had not exited %d s after SIGTERM\n",
                    BENCH_DAEMON_STOP_MS / 1000);
            break;
        }
        bench_sleep_ms(BENCH_DAEMON_POLL_MS);
    }
    bool clean = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!clean) {
        bench_daemon_log(dm);
        if (WIFSIGNALED(st))
            fprintf(stderr, "ampd died of signal %d\n", WTERMSIG(st));
        else
            fprintf(stderr, "ampd exited with status %d\n", WEXITSTATUS(st));
    }
    bench_daemon_cleanup(dm);
    return clean ? 0 : -1;
}

int bench_daemon_free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) < 0)
        bench_die("a free loopback port: %s", strerror(errno));
    close(fd);
    return ntohs(a.sin_port);
}
