/* SPDX-License-Identifier: MIT */
/* conn_limit.h: --max-connections, --max-peer-connections and
 * --max-unauthenticated-connections, daemon-wide.
 *
 * Connections live on several I/O loops (io_loop.h), but the limits are
 * the daemon's: one conn_limit, shared by every loop under one mutex,
 * counts the connections served and, per peer (listen_fd_peer(): a uid
 * or an address), those still being served. A connection is admitted once
 * and leaves twice: its peer slot when it starts on its way out (a GOAWAY
 * for a fault, a close), its place in the total when its socket is gone,
 * which is when conn.c counted it before.
 *
 * Unauthenticated connections (TCP before a call that needed a token
 * passed; any carrying only Health calls) have a pool of their own inside
 * the total, so they never take the rest, which is kept for Unix-socket
 * peers and connections that proved a token. When that pool is full, a
 * newcomer takes the place of one connection of the peer holding the most
 * of it (when that peer holds more than the newcomer's): one address, or a
 * handful, can delay others but not lock them out. The connection that
 * gives its place is marked here and closed by its own loop's sweep
 * (conn_limit_evict_take) as soon as the acceptor tells the loops to, so
 * the pool may run over by the marks pending, never by more than its own
 * size.
 */
#ifndef AMPD_CONN_LIMIT_H
#define AMPD_CONN_LIMIT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "conn_refusal.h"

struct conn_limit_peer;

struct conn_limit {
    pthread_mutex_t lock;           /* guards everything below */
    /* Atomics, set under lock, so that refusal messages read them without
     * it (SIGHUP changes them: conn_limit_set). */
    atomic_uint max;                /* --max-connections */
    atomic_uint max_per_peer;       /* --max-peer-connections */
    atomic_uint max_unauth;         /* --max-unauthenticated-connections */
    uint32_t count;                 /* admitted and not yet gone: <= max when admitted */
    uint32_t unauth;                /* of those, unauthenticated and not leaving */
    uint32_t evicting;              /* of those, marked to give their place: <= max_unauth */
    struct conn_limit_peer *peers;  /* peers with connections being served */
    struct conn_refusals refusals;  /* connections refused, by reason (atomics: no lock) */
};

enum conn_limit_verdict {
    CONN_LIMIT_OK,          /* admitted: counted in the total and for its peer */
    CONN_LIMIT_FULL,        /* --max-connections reached */
    CONN_LIMIT_PEER_FULL,   /* --max-peer-connections reached for this peer */
    CONN_LIMIT_UNAUTH_FULL, /* --max-unauthenticated-connections reached, and no peer
                             * holds more of it than this one */
    CONN_LIMIT_UNAUTH_BUSY, /* reached, and as many places are still being given up */
    CONN_LIMIT_NO_MEMORY,
};

void conn_limit_init(struct conn_limit *l, uint32_t max, uint32_t max_per_peer,
                     uint32_t max_unauth);
/* New limits (SIGHUP): connections over them stay, new ones wait for
 * room. */
void conn_limit_set(struct conn_limit *l, uint32_t max, uint32_t max_per_peer,
                    uint32_t max_unauth);

/* Every admitted connection must have left. */
void conn_limit_destroy(struct conn_limit *l);

/* Admits a connection from peer, authenticated already (a Unix-socket
 * peer the allow-lists let in) or not, or says which limit refuses it.
 * *marked: admitting it marked another connection to give its place
 * (conn_limit_evict_take). */
enum conn_limit_verdict conn_limit_admit(struct conn_limit *l, const char *peer,
                                         bool authenticated, bool *marked);

/* An unauthenticated connection from peer proved a token: it leaves the
 * unauthenticated pool (and keeps its place in the total). */
void conn_limit_authenticated(struct conn_limit *l, const char *peer);

/* Whether one of peer's unauthenticated connections is to give its place
 * to a newcomer; true: the caller's connection is the one, and must leave
 * (conn_limit_leave_peer) at once. */
bool conn_limit_evict_take(struct conn_limit *l, const char *peer);

/* An admitted connection from peer, unauthenticated still or not, is on
 * its way out: it no longer counts toward its peer's limit, nor the
 * unauthenticated pool. */
void conn_limit_leave_peer(struct conn_limit *l, const char *peer, bool unauth);

/* An admitted connection is gone: it no longer counts toward the total. */
void conn_limit_leave(struct conn_limit *l);

/* Connections admitted and not gone, daemon-wide (Status). NULL: 0. */
uint32_t conn_limit_count(struct conn_limit *l);

#endif
