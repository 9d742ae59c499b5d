/* bench_daemon.c: start, check and stop an ampd for a benchmark (bench_daemon.h). */
#define _GNU_SOURCE
#include "bench_daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "amp.h"

#define BENCH_DAEMON_START_TIMEOUT_MS 120000 /* PoCL builds ampd's kernels at start */
#define BENCH_DAEMON_POLL_MS 50
#define BENCH_DAEMON_LOG_TAIL 2000           /* bytes of ampd's log shown on failure */
#define BENCH_DAEMON_MAX_ARGS 32

static void bench_daemon_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void bench_daemon_log(const struct bench_daemon *dm)
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
    fprintf(stderr, "--- ampd log (%s) ---\n%s\n", dm->log, buf);
}

static void bench_daemon_exec(const struct bench_daemon *dm, const char *ampd,
                              const char *const *args)
{
    char listen_arg[160];
    snprintf(listen_arg, sizeof listen_arg, "unix:%s/ampd.sock", dm->dir);
    int fd = open(dm->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
    }
    char *argv[BENCH_DAEMON_MAX_ARGS + 4] = {(char *)ampd, "--listen", listen_arg};
    int n = 3;
    for (int i = 0; args && args[i] && i < BENCH_DAEMON_MAX_ARGS; i++)
        argv[n++] = (char *)args[i];
    argv[n] = NULL;
    execv(ampd, argv);
    fprintf(stderr, "exec %s: %s\n", ampd, strerror(errno));
    _exit(127);
}

/* True once ampd at dm->address answers a health check with SERVING. */
static bool bench_daemon_serving(const struct bench_daemon *dm)
{
    amp_conn *c;
    int serving = AMP_HEALTH_UNKNOWN;
    if (amp_connect(dm->address, &c) != 0)
        return false;
    int rc = amp_health(c, NULL, NULL, &serving);
    amp_close(c);
    return rc == 0 && serving == AMP_HEALTH_SERVING;
}

int bench_daemon_start(struct bench_daemon *dm, const char *ampd, const char *const *args)
{
    memset(dm, 0, sizeof *dm);
    snprintf(dm->dir, sizeof dm->dir, "/tmp/bench_ampd.XXXXXX");
    if (!mkdtemp(dm->dir)) {
        fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
        return -1;
    }
    snprintf(dm->address, sizeof dm->address, "unix:%s/ampd.sock", dm->dir);
    snprintf(dm->log, sizeof dm->log, "%s/ampd.log", dm->dir);
    fflush(NULL);
    dm->pid = fork();
    if (dm->pid < 0) {
        fprintf(stderr, "fork: %s\n", strerror(errno));
        return -1;
    }
    if (dm->pid == 0)
        bench_daemon_exec(dm, ampd, args);
    for (int waited = 0; waited < BENCH_DAEMON_START_TIMEOUT_MS; waited += BENCH_DAEMON_POLL_MS) {
        int st;
        if (waitpid(dm->pid, &st, WNOHANG) == dm->pid) {
            bench_daemon_log(dm);
            fprintf(stderr, "%s exited before serving (log above)\n", ampd);
            return -1;
        }
        if (bench_daemon_serving(dm))
            return 0;
        bench_daemon_sleep_ms(BENCH_DAEMON_POLL_MS);
    }
    kill(dm->pid, SIGKILL);
    waitpid(dm->pid, NULL, 0);
    bench_daemon_log(dm);
    fprintf(stderr, "%s did not become healthy in time (log above)\n", ampd);
    return -1;
}

void bench_daemon_use(struct bench_daemon *dm, const char *address)
{
    memset(dm, 0, sizeof *dm);
    snprintf(dm->address, sizeof dm->address, "%s", address);
}

int bench_daemon_stop(struct bench_daemon *dm)
{
    if (dm->pid <= 0)
        return 0;
    int st = 0;
    kill(dm->pid, SIGTERM);
    waitpid(dm->pid, &st, 0);
    bool clean = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!clean) {
        bench_daemon_log(dm);
        fprintf(stderr, "ampd did not exit cleanly (wait status %d)\n", st);
    }
    unlink(dm->log);
    rmdir(dm->dir);
    dm->pid = 0;
    return clean ? 0 : -1;
}
