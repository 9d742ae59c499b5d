/* SPDX-License-Identifier: MIT */
/* bench_daemon.h: an ampd that a benchmark starts for itself, on a Unix
 * socket in a temporary directory, and stops with SIGTERM at the end, so
 * that a run measures a daemon with known options and a leak or a crash in
 * it fails the run (bench_daemon.c). */
#ifndef AMP_BENCH_DAEMON_H
#define AMP_BENCH_DAEMON_H

#include <stddef.h>
#include <sys/types.h>

struct bench_daemon {
    pid_t pid;             /* > 0 from a successful start until stop */
    char dir[64];          /* temporary directory: the socket and the log */
    char address[128];     /* "unix:DIR/ampd.sock", where it serves */
    char log[128];         /* DIR/ampd.log: its stdout and stderr */
};

/* Starts the ampd binary at path with --listen on a Unix socket in a new
 * directory under /tmp named after prefix, then args (NULL-terminated, may
 * be NULL; ampd takes the last of a repeated option, so they override), and
 * waits until its health check answers SERVING (PoCL builds the kernels
 * first). Returns 0, or -1 with why in err, the end of its log shown on
 * stderr and nothing left running. */
int bench_daemon_start(struct bench_daemon *dm, const char *path, const char *prefix,
                       const char *const *args, char *err, size_t errlen);

/* SIGTERM (a graceful drain), then SIGKILL if it has not exited within
 * BENCH_DAEMON_STOP_MS; removes its directory. Returns 0 when it exited
 * with status 0, else -1 with its log's end and the reason on stderr
 * (under LeakSanitizer, a leak in the daemon shows up here). A daemon
 * never started (pid 0) returns 0. */
int bench_daemon_stop(struct bench_daemon *dm);

/* A loopback TCP port free a moment ago, for an ampd listener the caller
 * names next; dies (bench_die) when none can be had. */
int bench_daemon_free_port(void);

/* Shows the end of its log on stderr. */
void bench_daemon_log(const struct bench_daemon *dm);

#endif
