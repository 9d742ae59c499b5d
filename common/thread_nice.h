/* SPDX-License-Identifier: MIT */
/* thread_nice.h: a thread's nice value, counted from its process's.
 * Linux's nice is a thread's own, and a new thread starts with its
 * creator's. The daemon runs its I/O loops ahead of its other threads and
 * its bulk-byte threads behind them, so "the process's nice" is taken
 * once, before any thread changes its own, and each thread sets its own
 * from it. */
#ifndef AMP_THREAD_NICE_H
#define AMP_THREAD_NICE_H

/* Takes the calling thread's nice as the process's. The daemon calls it
 * in main(), before any thread changes its nice; without it, the first
 * thread_nice_set() takes its caller's. */
void thread_nice_init(void);

/* Sets the calling thread's nice to the process's plus delta (negative:
 * ahead of it). Going ahead of the process needs CAP_SYS_NICE or room in
 * RLIMIT_NICE (systemd's LimitNICE=). Returns 0, or -1 with errno and the
 * thread's nice as it was. */
int thread_nice_set(int delta);

#endif
