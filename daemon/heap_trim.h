/* SPDX-License-Identifier: MIT */
/* heap_trim.h: gives the heap's free memory back to the kernel once the
 * daemon goes quiet (issue 33 item 9).
 *
 * A burst of large requests and replies leaves their freed blocks in
 * glibc's heaps: each I/O loop, runner and host worker thread mallocs in an
 * arena of its own, an arena's heap shrinks only from its top, and the mmap
 * threshold grows with every large block freed, so later large blocks come
 * from the heaps too. After a burst of unread replies ampd stayed at ~1.2 GB
 * resident with nothing held. Trimming while calls run would only make the
 * next call fault its pages in again, so a timer on the main loop watches
 * for the daemon to go quiet (no byte held for clients, no call answered
 * for a whole period) and then trims every arena once, until the next
 * activity: glibc gives back the free pages inside each arena and the
 * main arena's free top, not the top of a thread's arena (main.c caps
 * their number). Neighbours: budget.h (bytes held), status.h (calls
 * answered).
 */
#ifndef AMPD_HEAP_TRIM_H
#define AMPD_HEAP_TRIM_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

struct budget;
struct status_counts;

struct heap_trim {
    uv_timer_t timer;                     /* every period: quiet yet? */
    struct budget *held;                  /* the daemon's (--max-job-memory); not owned */
    const struct status_counts *answered; /* calls answered, daemon-wide; not owned */
    uint64_t seen;                        /* answered's total at the last tick */
    bool dirty;                           /* activity since the last trim */
};

/* Starts t's timer on loop, ticking every period_ms; the timer does not
 * keep the loop alive. held and answered must outlive t. */
void heap_trim_start(struct heap_trim *t, uv_loop_t *loop, uint64_t period_ms,
                     struct budget *held, const struct status_counts *answered);

/* Closes t's timer (uv_close); t must stay valid until the loop has run. */
void heap_trim_close(struct heap_trim *t);

#endif
