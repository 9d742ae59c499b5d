/* SPDX-License-Identifier: MIT */
/* conn.h: one client connection: a socket (listen.c) joined to an HTTP/2
 * session (h2.c) whose calls go to the rpc layer (rpc.c).
 *
 * conn.c moves bytes between the two, keeps one write in flight at a time
 * (bounded memory per connection), enforces --max-connections, and closes
 * the connection when the session has nothing left to read or write.
 */
#ifndef AMPD_CONN_H
#define AMPD_CONN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "auth.h"
#include "budget.h"
#include "conn_limit.h"
#include "h2.h"
#include "listen.h"
#include "rpc.h"
#include "tls.h"
#include "traffic.h"

struct conn;

/* The connections of one I/O loop (io_loop.c), on its thread. */
struct conn_set {
    struct conn *head;          /* all live connections, refused ones too */
    atomic_uint *live;          /* connections handed to this set and not closed, this
                                 * loop's entry of io_loop_shared.loop_conns: counted in by
                                 * the acceptor (io_loop_accept) before the loop takes one,
                                 * out by conn.c */
    struct conn_limit *limit;   /* --max-connections and --max-peer-connections, daemon-wide */
    struct budget *budget;      /* the daemon's; each connection's own budget is its child */
    uint64_t conn_memory;       /* --max-connection-memory: the max of each connection's budget */
    uint64_t send_timeout_ms;   /* --send-timeout: replies waiting with no write progress this
                                 * long close their connection (conn_sweep); 0: never */
    struct h2_config h2cfg;     /* every session's, but for its budget (the connection's) */
    struct rpc_env *env;
    struct tls_server *tls;     /* tls: listeners' certificates; NULL when there is none */
    struct traffic *traffic;    /* calls and bytes, daemon-wide; NULL: calls are only logged */
    struct auth *auth;          /* who may call (auth.h), daemon-wide; NULL: anyone. The
                                 * acceptor's thread reads it too (conn_admit) */
    /* Called when the last connection has closed, while draining. */
    void (*empty)(void *ctx);
    void *ctx;
    bool draining;              /* new connections are refused, old ones got GOAWAY */
};

/* The periodic sweep (server.c's timer), at now_ms on the rpc_now_ms
 * clock: requests stalled past --request-timeout are answered and
 * connections stalled before their first call are closed
 * (h2_session_expire); with idle_ms (--idle-timeout) set, connections with
 * no call open and no useful activity for that long get a GOAWAY and close;
 * connections whose replies made no write progress for set->send_timeout_ms
 * are closed;
 * with handshake_ms (--handshake-timeout) set, TLS handshakes unfinished
 * that long after the accept are closed; unauthenticated connections
 * marked to give their place to a newcomer (conn_limit.h) get a GOAWAY
 * saying so and close. */
void conn_sweep(struct conn_set *set, uint64_t now_ms, uint64_t idle_ms, uint64_t handshake_ms);

/* How the acceptor admitted a connection: conn_admit() runs on the
 * acceptor's thread, in accept order, so that the limits see connections
 * in the order they came whichever loop serves each. */
struct conn_admission {
    enum conn_limit_verdict verdict;
    bool authenticated;           /* a Unix-socket peer the allow-lists let in */
    bool marked;                  /* admitting it marked an unauthenticated connection to
                                   * give its place: conn_evict() on every loop */
    char peer[LISTEN_PEER_MAX];   /* listen_fd_peer() */
    struct auth_conn who;         /* auth_admit(): its standing; who.peer unset */
};

/* Admits the accepted fd against --max-connections and, for its peer,
 * --max-peer-connections, and unless it is authenticated already (a Unix
 * socket's peer) --max-unauthenticated-connections (daemon-wide,
 * conn_limit.h), and judges who it
 * is (auth_admit; auth NULL: anyone). Any thread. */
void conn_admit(struct conn_limit *limit, const struct auth *auth, int fd, struct listen_kind kind,
                struct conn_admission *out);

/* An admitted fd that never became a connection (no memory for it) gives
 * its place back. Any thread. */
void conn_unadmit(struct conn_limit *limit, const struct conn_admission *a);

/* Takes an accepted socket, admitted by conn_admit(): serves it, or
 * refuses it with a GOAWAY naming the limit the admission hit (or while
 * draining). tls: it came through a tls: listener and speaks TLS (set->tls
 * must be set), its GOAWAY included, once the handshake is done; a
 * handshake that stalls is closed after --handshake-timeout (conn_sweep). */
void conn_accept(struct conn_set *set, struct listen_sock *sock, const struct conn_admission *a,
                 bool tls);

/* Closes, with a GOAWAY saying why, the set's unauthenticated
 * connections marked to give their place to a newcomer (conn_limit.h).
 * The sweep does it too; the acceptor asks every loop at once. */
void conn_evict(struct conn_set *set);

/* Graceful drain: GOAWAY on every connection; each closes once its calls
 * are answered. set->empty() runs when none is left. */
void conn_drain_all(struct conn_set *set);

/* The drain timed out: every call still open ends with code and msg (or
 * a reset, where its answer is being sent) and each connection closes once
 * that is flushed. */
void conn_fail_all(struct conn_set *set, enum status_code code, const char *msg);

/* Closes every connection now. */
void conn_close_all(struct conn_set *set);

#endif
