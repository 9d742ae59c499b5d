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
    char name[LISTEN_PEER_MAX];
};

void conn_limit_init(struct conn_limit *l, uint32_t max, uint32_t max_per_peer)
{
    *l = (struct conn_limit){ .max = max, .max_per_peer = max_per_peer };
    pthread_mutex_init(&l->lock, NULL);
}

void conn_limit_set(struct conn_limit *l, uint32_t max, uint32_t max_per_peer)
{
    pthread_mutex_lock(&l->lock);
    l->max = max;
    l->max_per_peer = max_per_peer;
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

enum conn_limit_verdict conn_limit_admit(struct conn_limit *l, const char *peer)
{
    enum conn_limit_verdict v = CONN_LIMIT_OK;
    pthread_mutex_lock(&l->lock);
    struct conn_limit_peer **pp = conn_limit_find(l, peer);
    if (l->count >= l->max) {
        v = CONN_LIMIT_FULL;
    } else if (*pp && (*pp)->n >= l->max_per_peer) {
        v = CONN_LIMIT_PEER_FULL;
    } else if (!*pp && !(*pp = calloc(1, sizeof(**pp)))) {
        v = CONN_LIMIT_NO_MEMORY;
    } else {
        if ((*pp)->n == 0)
            snprintf((*pp)->name, sizeof((*pp)->name), "%s", peer);
        (*pp)->n++;
        l->count++;
    }
    pthread_mutex_unlock(&l->lock);
    return v;
}

void conn_limit_leave_peer(struct conn_limit *l, const char *peer)
{
    pthread_mutex_lock(&l->lock);
    struct conn_limit_peer **pp = conn_limit_find(l, peer);
    struct conn_limit_peer *p = *pp;
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
