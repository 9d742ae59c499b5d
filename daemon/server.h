/* SPDX-License-Identifier: MIT */
/* server.h: the daemon's loop: listeners, connections, scheduler, signals.
 *
 * server_run() owns the libuv loop from the first bind to the last close:
 * it opens every --listen address (or takes the activated sockets) and
 * serves at once, while main.c's open_devices() runs on a thread of its
 * own; once it returns, the scheduler starts over those devices, each I/O
 * loop attaches to it, health turns SERVING and READY=1 goes to the
 * service manager. It serves until SIGTERM or SIGINT, then drains (GOAWAY,
 * calls in flight finish and flush, bounded by --drain-timeout) and frees
 * everything it made, the devices too, before returning.
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

/* Opens the devices (on the server's start-up thread): 0 with *devs (a
 * dev_open_all() list, at least one) and the default device's index, or
 * -1 with the reason in err. */
typedef int (*server_open_devices_fn)(const struct config *cfg, struct dev ***devs,
                                      size_t *ndevs, size_t *default_index, char *err,
                                      size_t errlen);

/* --check-config: loads and lets go of what a start reads before it binds
 * (the TLS certificate and key, the token file and admission rules),
 * logging the first error. Opens no device, binds nothing. 0 or -1. */
int server_check(const struct config *cfg);

/* Runs the daemon; returns the process exit status (0 after a clean drain,
 * 1 when startup failed, the devices' opening too, with the reason on
 * stderr). */
int server_run(const struct config *cfg, server_open_devices_fn open_devices);

#endif
