/* SPDX-License-Identifier: MIT */
/* conn_limit.c: daemon-wide connection counts (see conn_limit.h).
 *
 * Peers are a short list: there are at most --max-connections of them,
 * and accepting a connection is rare next to the calls it carries, so a
 * list walked under the lock costs less than keeping a table.
 */
#include "conn_limit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "listen.h"

struct conn_limit_peer {
    struct conn_limit_peer *next;
    uint32_t n;                     /* connections being served: >= 1, <= max_per_peer when admitted */
    uint32_t unauth;                /* of those, unauthenticated: <= n */
    uint32_t evict;                 /* of those, marked to give their place: <= unauth */
    char name[LISTEN_PEER_MAX];
};

void conn_limit_init(struct conn_limit *l, uint32_t max, uint32_t max_per_peer,
                     uint32_t max_unauth)
{
    *l = (struct conn_limit){ .max = max, .max_per_peer = max_per_peer, .max_unauth = max_unauth };
    pthread_mutex_init(&l->lock, NULL);
}

void conn_limit_set(struct conn_limit *l, uint32_t max, uint32_t max_per_peer,
                    uint32_t max_unauth)
{
    pthread_mutex_lock(&l->lock);
    l->max = max;
    l->max_per_peer = max_per_peer;
    l->max_unauth = max_unauth;
    pthread_mutex_unlock(&l->lock);
}

void conn_limit_destroy(struct conn_limit *l)
{
    while (l->peers) {
        struct conn_limit_peer *p = l->peers;
        l->peers = p->next;
        free(p);
    }
    pthread_mutex_destroy(&l->lock);
}

/* With l->lock held: peer's entry, and the link that points at it. */
static struct conn_limit_peer **conn_limit_find(struct conn_limit *l, const char *peer)
{
    struct conn_limit_peer **pp = &l->peers;
    while (*pp && strcmp((*pp)->name, peer) != 0)
        pp = &(*pp)->next;
    return pp;
}

/* With l->lock held: unauthenticated connections of p not marked to go. */
static uint32_t conn_limit_staying(const struct conn_limit_peer *p)
{
    return p ? p->unauth - p->evict : 0;
}

/* With l->lock held: room in the unauthenticated pool for one more from
 * mine (NULL: a new peer): CONN_LIMIT_OK, marking a connection of the peer
 * that holds the most of it to give its place when the pool is full
 * (*marked), or why not. */
static enum conn_limit_verdict conn_limit_unauth_room(struct conn_limit *l,
                                                      const struct conn_limit_peer *mine,
                                                      bool *marked)
{
    if (l->unauth - l->evicting < l->max_unauth)
        return CONN_LIMIT_OK;
    if (l->evicting >= l->max_unauth)
        return CONN_LIMIT_UNAUTH_BUSY;   /* the marks pending bound how far it runs over */
    struct conn_limit_peer *most = NULL;
    for (struct conn_limit_peer *p = l->peers; p; p = p->next)
        if (!most || conn_limit_staying(p) > conn_limit_staying(most))
            most = p;
    if (!most || conn_limit_staying(most) <= conn_limit_staying(mine))
        return CONN_LIMIT_UNAUTH_FULL;
    most->evict++;
    l->evicting++;
    *marked = true;
    return CONN_LIMIT_OK;
}

enum conn_limit_verdict conn_limit_admit(struct conn_limit *l, const char *peer,
                                         bool authenticated, bool *marked)
{
    enum conn_limit_verdict v = CONN_LIMIT_OK;
    *marked = false;
    pthread_mutex_lock(&l->lock);
    struct conn_limit_peer **pp = conn_limit_find(l, peer);
    /* A new peer's entry first: a mark made below is not taken back. */
    struct conn_limit_peer *fresh = !*pp ? calloc(1, sizeof(**pp)) : NULL;
    if (l->count >= l->max) {
        v = CONN_LIMIT_FULL;
    } else if (*pp && (*pp)->n >= l->max_per_peer) {
        v = CONN_LIMIT_PEER_FULL;
    } else if (!*pp && !fresh) {
        v = CONN_LIMIT_NO_MEMORY;
    } else if (!authenticated && (v = conn_limit_unauth_room(l, *pp, marked)) != CONN_LIMIT_OK) {
        /* v says why */
    } else {
        if (!*pp) {
            *pp = fresh;
            fresh = NULL;
        }
        if ((*pp)->n == 0)
            snprintf((*pp)->name, sizeof((*pp)->name), "%s", peer);
        (*pp)->n++;
        l->count++;
        if (!authenticated) {
            (*pp)->unauth++;
            l->unauth++;
        }
    }
    pthread_mutex_unlock(&l->lock);
    free(fresh);
    return v;
}

/* With l->lock held: one of p's unauthenticated connections left the pool;
 * a mark it no longer has a connection for is dropped. */
static void conn_limit_unauth_gone(struct conn_limit *l, struct conn_limit_peer *p)
{
    p->unauth--;
    l->unauth--;
    if (p->evict > p->unauth) {
        p->evict--;
        l->evicting--;
    }
}

void conn_limit_authenticated(struct conn_limit *l, const char *peer)
{
    pthread_mutex_lock(&l->lock);
    struct conn_limit_peer *p = *conn_limit_find(l, peer);
    if (p && p->unauth)
        conn_limit_unauth_gone(l, p);
    pthread_mutex_unlock(&l->lock);
}

bool conn_limit_evict_take(struct conn_limit *l, const char *peer)
{
    pthread_mutex_lock(&l->lock);
    struct conn_limit_peer *p = *conn_limit_find(l, peer);
    bool take = p && p->evict > 0;
    if (take) {
        p->evict--;
        l->evicting--;
    }
    pthread_mutex_unlock(&l->lock);
    return take;
}

void conn_limit_leave_peer(struct conn_limit *l, const char *peer, bool unauth)
{
    pthread_mutex_lock(&l->lock);
    struct conn_limit_peer **pp = conn_limit_find(l, peer);
    struct conn_limit_peer *p = *pp;
    if (p && unauth && p->unauth)
        conn_limit_unauth_gone(l, p);
    if (p && --p->n == 0) {
        *pp = p->next;
        free(p);
    }
    pthread_mutex_unlock(&l->lock);
}

void conn_limit_leave(struct conn_limit *l)
{
    pthread_mutex_lock(&l->lock);
    l->count--;
    pthread_mutex_unlock(&l->lock);
}

uint32_t conn_limit_count(struct conn_limit *l)
{
    if (!l)
        return 0;
    pthread_mutex_lock(&l->lock);
    uint32_t n = l->count;
    pthread_mutex_unlock(&l->lock);
    return n;
}
