/* SPDX-License-Identifier: MIT */
/* server.h: the daemon's loop: listeners, connections, scheduler, signals.
 *
 * server_run() owns the libuv loop from the first bind to the last close:
 * it opens every --listen address, starts the scheduler over the devices
 * main.c opened, serves until SIGTERM or SIGINT, then drains (GOAWAY, calls
 * in flight finish and flush, bounded by --drain-timeout) and frees
 * everything it made before returning.
 */
#ifndef AMPD_SERVER_H
#define AMPD_SERVER_H

#include <stddef.h>

#include "config.h"
#include "dev.h"

/* Blocks SIGTERM and SIGINT in the calling thread (main, first thing) and
 * so in every thread made after it: one that comes while devices open or
 * sockets begin to listen waits, and server_run lets it through on its
 * loop's thread once the loop handles it, which drains instead of killing
 * a half-started daemon. */
void server_signals_hold(void);

/* Runs the daemon; returns the process exit status (0 after a clean drain,
 * 1 when startup failed, with the reason on stderr). devs stay the
 * caller's. */
int server_run(const struct config *cfg, struct dev **devs, size_t ndevs, size_t default_index);

#endif
