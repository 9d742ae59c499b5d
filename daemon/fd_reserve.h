/* SPDX-License-Identifier: MIT */
/* fd_reserve.h: descriptors kept back for the daemon's own work.
 *
 * Clients make ampd hold descriptors: each connection (gRPC, region
 * socket) is one, and each memfd a region client sends is one until its
 * line is read. Were they allowed up to RLIMIT_NOFILE, a device job would
 * find none left: PoCL and GPU drivers open files to load a kernel, and
 * fail (issue 33 item 3: at ulimit -n 256 one uid drove ampd to 254
 * descriptors and the next job's kernel load failed).
 *
 * So at start the soft limit goes up to the hard one, and a descriptor a
 * client made ampd take (accept4, SCM_RIGHTS) is kept only while its number
 * is below limit - FD_RESERVE_COUNT. The kernel hands out the lowest free
 * number, so a descriptor numbered N means N below it are open: no
 * client's descriptor ever sits in the top FD_RESERVE_COUNT slots, which
 * stay free for the daemon's own (device jobs, libraries, log files)
 * whatever the clients do. One compare per descriptor, no counting.
 */
#ifndef AMPD_FD_RESERVE_H
#define AMPD_FD_RESERVE_H

#include <stdbool.h>
#include <stddef.h>

/* Slots below the limit that clients never get: a kernel load on PoCL
 * opens a handful at once (its cache, the compiler's temporaries, dlopen);
 * NVIDIA's driver a few more; with room for several jobs' at once. */
#define FD_RESERVE_COUNT 64

/* Raises the soft RLIMIT_NOFILE to the hard one and fixes the threshold;
 * writes what it did (or why it could not) into msg for the log. Call once,
 * before any thread starts. Returns 0, or -1 when the limit could not be
 * read (then fd_reserve_admit admits everything, as before). */
int fd_reserve_init(char *msg, size_t msglen);

/* Whether a descriptor fd that a client made the daemon take may be kept:
 * false when it is in the reserve, and the caller must close it and refuse
 * the client (RESOURCE_EXHAUSTED). Logs the first refusal of a run of
 * them. Any thread. */
bool fd_reserve_admit(int fd);

/* The soft limit and the first reserved slot, for messages. */
long fd_reserve_limit(void);
long fd_reserve_threshold(void);

#endif
