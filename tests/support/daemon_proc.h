/* SPDX-License-Identifier: MIT */
/* daemon_proc.h: run a real ampd for integration tests.
 *
 * Starts $AMPD_BIN listening on a Unix socket in a fresh temporary
 * directory, waits until it answers health SERVING (its devices open), and
 * stops it with SIGTERM,
 * reporting how it exited. With $AMPD_TEST_IO_THREADS set, ampd gets
 * --io-threads that many unless the test passes its own (a leak found by LeakSanitizer at exit makes the
 * exit status nonzero, so tests that check it catch leaks in the daemon).
 */
#ifndef AMP_TEST_DAEMON_PROC_H
#define AMP_TEST_DAEMON_PROC_H

#include <sys/types.h>

struct daemon_proc {
    pid_t pid;
    char dir[256];       /* temporary directory, removed by daemon_stop() */
    char address[300];   /* "unix:<dir>/ampd.sock", for amp_connect / --address */
    char sock_path[280]; /* "<dir>/ampd.sock" */
};

/* Starts ampd with extra_args (NULL-terminated argv tail, may be NULL).
 * Returns 0 once ampd answers health SERVING, -1 if it exited or did not
 * become ready within the timeout. */
int daemon_start(struct daemon_proc *d, const char *const *extra_args);

/* Stops d's daemon if it still runs (SIGTERM; one that was killed is only
 * reaped) and starts ampd again with extra_args on the same socket path.
 * Returns the old daemon's exit status as daemon_stop(), or -1 when the
 * new one did not start (d is then stopped and cleaned up). */
int daemon_restart(struct daemon_proc *d, const char *const *extra_args);

/* True while the daemon process is still running. */
int daemon_alive(struct daemon_proc *d);

/* SIGTERM, wait, clean up. Returns the exit status (0 for a clean drain),
 * 128+signal if it died of a signal, -1 on error. */
int daemon_stop(struct daemon_proc *d);

/* Like daemon_stop() but sends no signal: for a test that already sent
 * SIGTERM itself (a second one could land after the daemon has released
 * its signal handlers, and kill it mid-exit). */
int daemon_wait(struct daemon_proc *d);

#endif
