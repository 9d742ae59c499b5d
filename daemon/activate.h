/* SPDX-License-Identifier: MIT */
/* activate.h: listening sockets handed over by systemd (socket activation).
 *
 * Started by a socket unit (systemd/ampd.socket) or by
 * systemd-socket-activate, ampd finds bound, listening sockets in
 * $LISTEN_FDS and serves them instead of its --listen addresses; the
 * service manager keeps them open across restarts, so clients connecting
 * meanwhile wait in the backlog instead of being refused. Each must be a
 * Unix or TCP stream socket. A passed Unix socket at PATH.regions
 * (address_region_path) beside a passed Unix socket at PATH is that
 * listener's region socket (docs/regions.md), so one socket unit with two
 * ListenStream= lines carries both. The socket files are the service
 * manager's: ampd never removes them, and their mode and group are the
 * unit's (SocketMode=, SocketGroup=), not --socket-mode/--socket-group.
 */
#ifndef AMPD_ACTIVATE_H
#define AMPD_ACTIVATE_H

#include <stdbool.h>
#include <stddef.h>

#include "address.h"

#define ACTIVATE_NAME_MAX (ADDRESS_HOST_MAX + 16)

struct activate_socket {
    int fd;                      /* listening, non-blocking, close-on-exec */
    bool is_unix;
    char path[ADDRESS_PATH_MAX]; /* is_unix: the socket file's path */
    char name[ACTIVATE_NAME_MAX];/* "unix:PATH" or "HOST:PORT", for messages */
    int region_fd;               /* is_unix: the passed region socket beside it; -1: none */
};

/* Takes the sockets passed in $LISTEN_FDS (and unsets it, so that no child
 * inherits them) into out[0..*n), at most max gRPC listeners; *n is 0 when
 * nothing was passed. The descriptors are the caller's. Returns 0, or -1
 * with a reason in err, every passed descriptor closed: one that is no
 * listening Unix or TCP stream socket, or more than max. */
int activate_sockets(struct activate_socket *out, size_t max, size_t *n, char *err, size_t errlen);

#endif
