/* SPDX-License-Identifier: MIT */
/* region_sock.h: the region socket, where local clients hand memfds over.
 *
 * gRPC cannot carry file descriptors, so each Unix listener at PATH has a
 * second socket beside it (address_region_path(): PATH.regions) that speaks a small line protocol
 * with descriptors attached as SCM_RIGHTS (docs/regions.md):
 *
 *   REGISTER\n   (one memfd attached)  ->  OK <id> <size>\n
 *   RELEASE <id>\n                     ->  OK <id>\n
 *   anything refused                   ->  ERROR <STATUS_NAME> <message>\n
 *
 * A connection is one region client (region.h): its regions last until it
 * releases them or closes, so nothing outlives a client that dies. Besides
 * listen.c, this is the only file with socket I/O (it needs recvmsg).
 */
#ifndef AMPD_REGION_SOCK_H
#define AMPD_REGION_SOCK_H

#include <stdint.h>
#include <uv.h>

#include "listen.h"
#include "region.h"

struct region_listener;

struct region_sock_limits {
    uint32_t max_connections;      /* --max-connections: region connections open at once */
    uint32_t max_peer_connections; /* --max-peer-connections: the same, per uid */
};

/* Listens at path (made as listen_unix_fd makes it) for region clients of
 * set. Returns 0, or -1 with a reason in err. */
int region_listen(uv_loop_t *loop, const char *path, const struct listen_unix_access *access,
                  struct region_set *set, const struct region_sock_limits *limits,
                  struct region_listener **out, char *err, size_t errlen);

/* The same on fd, a Unix socket already bound and listening
 * (non-blocking) that the service manager passed (activate.h); its file is
 * not removed on close. The fd is the listener's from then on, or closed
 * on failure. Returns 0, or -1 with a reason in err. */
int region_listen_adopt(uv_loop_t *loop, int fd, struct region_set *set,
                        const struct region_sock_limits *limits, struct region_listener **out,
                        char *err, size_t errlen);

/* Closes the listener and every connection (their regions end: jobs using
 * them keep them mapped until done), removes the socket file, and frees
 * everything once libuv has closed the handles. */
void region_listen_close(struct region_listener *l);

#endif
