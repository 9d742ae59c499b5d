/* bench_daemon.h: an ampd for a benchmark to talk to: started on a Unix
 * socket in a temporary directory, waited for until its health check says
 * SERVING, and stopped with SIGTERM (the graceful drain). Shared by the
 * programs that time calls through a real daemon (bench_stream,
 * bench_unary). */
#ifndef AMP_BENCH_DAEMON_H
#define AMP_BENCH_DAEMON_H

#include <sys/types.h>

struct bench_daemon {
    pid_t pid;               /* 0 when the bench did not start it */
    char dir[64];            /* temporary directory of the socket and log */
    char address[128];       /* what amp_connect() takes */
    char log[128];           /* ampd's stdout and stderr */
};

/* Starts ampd with `--listen unix:DIR/ampd.sock` followed by args (a
 * NULL-terminated list of further options, or NULL) and waits until it
 * serves. Returns 0, or -1 with the reason (and ampd's log) on stderr. */
int bench_daemon_start(struct bench_daemon *dm, const char *ampd, const char *const *args);

/* Points dm at a daemon that is already running (nothing to stop). */
void bench_daemon_use(struct bench_daemon *dm, const char *address);

/* SIGTERM and clean-up of a daemon bench_daemon_start() started. Returns
 * 0, or -1 (its log shown) when ampd did not exit with status 0: under
 * LeakSanitizer a leak in the daemon shows up here. */
int bench_daemon_stop(struct bench_daemon *dm);

#endif
