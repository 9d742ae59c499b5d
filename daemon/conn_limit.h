/* SPDX-License-Identifier: MIT */
/* conn_limit.h: --max-connections and --max-peer-connections, daemon-wide.
 *
 * Connections live on several I/O loops (io_loop.h), but the limits are
 * the daemon's: one conn_limit, shared by every loop under one mutex,
 * counts the connections served and, per peer (listen_fd_peer(): a uid
 * or an address), those still being served. A connection is admitted once
 * and leaves twice: its peer slot when it starts on its way out (a GOAWAY
 * for a fault, a close), its place in the total when its socket is gone,
 * which is when conn.c counted it before.
 */
#ifndef AMPD_CONN_LIMIT_H
#define AMPD_CONN_LIMIT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

struct conn_limit_peer;

struct conn_limit {
    pthread_mutex_t lock;           /* guards everything below */
    /* Atomics, set under lock, so that refusal messages read them without
     * it (SIGHUP changes them: conn_limit_set). */
    atomic_uint max;                /* --max-connections */
    atomic_uint max_per_peer;       /* --max-peer-connections */
    uint32_t count;                 /* admitted and not yet gone: <= max when admitted */
    struct conn_limit_peer *peers;  /* peers with connections being served */
};

enum conn_limit_verdict {
    CONN_LIMIT_OK,          /* admitted: counted in the total and for its peer */
    CONN_LIMIT_FULL,        /* --max-connections reached */
    CONN_LIMIT_PEER_FULL,   /* --max-peer-connections reached for this peer */
    CONN_LIMIT_NO_MEMORY,
};

void conn_limit_init(struct conn_limit *l, uint32_t max, uint32_t max_per_peer);
/* New limits (SIGHUP): connections over them stay, new ones wait for
 * room. */
void conn_limit_set(struct conn_limit *l, uint32_t max, uint32_t max_per_peer);

/* Every admitted connection must have left. */
void conn_limit_destroy(struct conn_limit *l);

/* Admits a connection from peer, or says which limit refuses it. */
enum conn_limit_verdict conn_limit_admit(struct conn_limit *l, const char *peer);

/* An admitted connection from peer is on its way out: it no longer counts
 * toward its peer's limit. */
void conn_limit_leave_peer(struct conn_limit *l, const char *peer);

/* An admitted connection is gone: it no longer counts toward the total. */
void conn_limit_leave(struct conn_limit *l);

/* Connections admitted and not gone, daemon-wide (Status). NULL: 0. */
uint32_t conn_limit_count(struct conn_limit *l);

#endif
