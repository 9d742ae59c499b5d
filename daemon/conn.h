/* conn.h: one client connection: a socket (listen.c) joined to an HTTP/2
 * session (h2.c) whose calls go to the rpc layer (rpc.c).
 *
 * conn.c moves bytes between the two, keeps one write in flight at a time
 * (bounded memory per connection), enforces --max-connections, and closes
 * the connection when the session has nothing left to read or write.
 */
#ifndef AMPD_CONN_H
#define AMPD_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include "h2.h"
#include "listen.h"
#include "rpc.h"

struct conn;

/* Every connection of the daemon. Owned by server.c, on the loop thread. */
struct conn_set {
    struct conn *head;          /* all live connections, refused ones too */
    uint32_t count;             /* accepted and served (not refused); env->connections mirrors it */
    uint32_t max;               /* --max-connections */
    struct h2_config h2cfg;
    struct rpc_env *env;
    /* Called when the last connection has closed, while draining. */
    void (*empty)(void *ctx);
    void *ctx;
    bool draining;              /* new connections are refused, old ones got GOAWAY */
};

/* --idle-timeout: every connection with no call open and no bytes read or
 * written for idle_ms (milliseconds, rpc_now_ms clock) gets a GOAWAY and
 * closes. server.c calls this from a periodic timer. */
void conn_close_idle(struct conn_set *set, uint64_t now_ms, uint64_t idle_ms);

/* Takes an accepted socket: serves it, or refuses it with a GOAWAY naming
 * the limit when --max-connections are already open (or while draining). */
void conn_accept(struct conn_set *set, struct listen_sock *sock);

/* Graceful drain: GOAWAY on every connection; each closes once its calls
 * are answered. set->empty() runs when none is left. */
void conn_drain_all(struct conn_set *set);

/* Closes every connection now (drain timeout). */
void conn_close_all(struct conn_set *set);

#endif
