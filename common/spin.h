/* SPDX-License-Identifier: MIT */
/* spin.h: busy-polling, for the daemon's threads and the library's calls
 * alike: waiting for news without sleeping for a while, so that news
 * soon after costs no wake-up (waking an idle CPU costs hundreds of us
 * in a VM), without taking a CPU another thread wants.
 *
 * A spinner does not call sched_yield to let others run: since Linux
 * 6.18 (EEVDF, "forfeit vruntime on yield") a yield while another
 * thread waits for the CPU gives up the rest of the yielder's slice, and
 * the thread then waits that out behind the others at each of its next
 * wake-ups (on 2 cores beside bulk work, a client polling so waited
 * ~800 us for a CPU after each reply, against 14-63 us not polling).
 * It spins instead and stops at the first sign that another thread
 * wanted its CPU: the kernel took the CPU from it (an involuntary
 * switch). With CPUs to spare that never happens, and it spins its
 * whole window. */
#ifndef AMP_SPIN_H
#define AMP_SPIN_H

#include <stdbool.h>
#include <stdint.h>

struct spin {
    uint64_t end_ns;   /* monotonic_ns() at which the window closes */
    long preempted;    /* the thread's involuntary switches when it opened */
};

/* Opens a window of window_ns (UINT64_MAX: the caller decides when it ends). */
void spin_start(struct spin *s, uint64_t window_ns);

/* Whether to poll once more: the window is open and the thread has kept
 * its CPU since spin_start. */
bool spin_on(const struct spin *s);

#endif
