/* SPDX-License-Identifier: MIT */
/* staging.c: the pinned staging pool of one device (staging.h).
 *
 * Waiters are woken from the port's wake-up callback (loop_wake.h) rather than from
 * staging_put(): a buffer is often returned deep inside another stream's
 * completion or close, where re-entering a third stream's handlers would
 * be hard to reason about, and a buffer returned on one loop must wake a
 * waiter on another. A port's has_waiters flag, under the pool's lock,
 * tells staging_put() whom to wake; it stays set as long as the port's
 * list is not empty, so a buffer returned while the port runs its waiters
 * wakes it once more and no wake-up is lost.
 */
#include "staging.h"

#include "loop_wake.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* This share of the pool's buffers (at least) is left free for streams:
 * a run (staging_get_run) never takes it. */
#define STAGING_STREAM_RESERVE_SHARE 4

struct staging_pool {
    uv_mutex_t lock;                /* guards free_list, taken, nfree, ports and has_waiters */
    size_t size, count;
    struct staging_buf *bufs;       /* count entries: bufs[i].host is base + i * size */
    struct dev_pinned *pinned;      /* the pool's one pinned allocation, owned */
    struct staging_buf *free_list;
    bool *taken;                    /* count entries: bufs[i] is out of the pool */
    size_t nfree;                   /* nfree <= count */
    struct staging_port *ports;     /* every loop's, linked through next */
};

struct staging_port {
    struct staging_pool *pool;
    struct loop_wake wake;          /* any thread -> this loop: buffers for the waiters */
    struct staging_port *next;      /* pool->ports */
    bool has_waiters;               /* under pool->lock: waiters is not empty */
    struct staging_waiter *waiters, *waiters_tail; /* the loop's thread only */
};

static size_t staging_nfree(struct staging_pool *p)
{
    uv_mutex_lock(&p->lock);
    size_t n = p->nfree;
    uv_mutex_unlock(&p->lock);
    return n;
}

static void staging_on_wake(struct loop_wake *wake)
{
    struct staging_port *port = wake->poll.data;
    struct staging_pool *p = port->pool;
    while (port->waiters && staging_nfree(p)) {
        struct staging_waiter *w = port->waiters;
        port->waiters = w->next;
        if (!port->waiters)
            port->waiters_tail = NULL;
        w->next = NULL;
        w->waiting = false;
        w->ready(w);
    }
    uv_mutex_lock(&p->lock);
    port->has_waiters = port->waiters != NULL;
    uv_mutex_unlock(&p->lock);
}

static void staging_release(struct staging_pool *p)
{
    dev_pinned_free(p->pinned);
    free(p->bufs);
    free(p->taken);
    p->pinned = NULL;
    p->bufs = NULL;
    p->taken = NULL;
}

int staging_pool_new(struct dev *d, size_t count, size_t size, struct staging_pool **out,
                     char *err, size_t errlen)
{
    struct staging_pool *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    p->size = size;
    p->bufs = calloc(count, sizeof(*p->bufs));
    p->taken = calloc(count, sizeof(*p->taken));
    if (!p->bufs || !p->taken) {
        staging_release(p);
        free(p);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* One allocation, so that neighbouring buffers make a run (staging_get_run). */
    uint8_t *base = count && size <= SIZE_MAX / count ? dev_pinned_alloc(d, count * size, &p->pinned)
                                                      : NULL;
    if (!base) {
        staging_release(p);
        free(p);
        snprintf(err, errlen, "cannot allocate %zu pinned staging buffers of %zu bytes on device %u",
                 count, size, dev_info(d)->index);
        return -1;
    }
    for (size_t i = count; i-- > 0;) {
        p->bufs[i].host = base + i * size;
        p->bufs[i].next = p->free_list;
        p->free_list = &p->bufs[i];
    }
    p->count = p->nfree = count;
    uv_mutex_init(&p->lock);
    *out = p;
    return 0;
}

void staging_pool_free(struct staging_pool *p)
{
    if (!p)
        return;
    staging_release(p);
    uv_mutex_destroy(&p->lock);
    free(p);
}

struct staging_port *staging_port_new(struct staging_pool *p, uv_loop_t *loop)
{
    struct staging_port *port = calloc(1, sizeof(*port));
    if (!port)
        return NULL;
    port->pool = p;
    if (loop_wake_init(loop, &port->wake, staging_on_wake, port) != 0) {
        free(port);
        return NULL;
    }
    uv_mutex_lock(&p->lock);
    port->next = p->ports;
    p->ports = port;
    uv_mutex_unlock(&p->lock);
    return port;
}

static void staging_port_on_closed(uv_handle_t *h)
{
    free(h->data);
}

void staging_port_free(struct staging_port *port)
{
    if (!port)
        return;
    struct staging_pool *p = port->pool;
    /* Off the list first: no other loop sends to the handle once it closes. */
    uv_mutex_lock(&p->lock);
    struct staging_port **pp = &p->ports;
    while (*pp && *pp != port)
        pp = &(*pp)->next;
    if (*pp)
        *pp = port->next;
    uv_mutex_unlock(&p->lock);
    loop_wake_close(&port->wake, staging_port_on_closed);
}

size_t staging_buf_size(const struct staging_port *port)
{
    return port->pool->size;
}

uint64_t staging_pool_in_use(struct staging_pool *p)
{
    return (uint64_t)(p->count - staging_nfree(p)) * p->size;
}

uint64_t staging_pool_bytes(const struct staging_pool *p)
{
    return (uint64_t)p->count * p->size;
}

size_t staging_count(const struct staging_port *port)
{
    return port->pool->count;
}

size_t staging_free_count(const struct staging_port *port)
{
    return staging_nfree(port->pool);
}

struct staging_buf *staging_get(struct staging_port *port)
{
    struct staging_pool *p = port->pool;
    uv_mutex_lock(&p->lock);
    struct staging_buf *b = p->free_list;
    if (b) {
        p->free_list = b->next;
        b->next = NULL;
        p->taken[b - p->bufs] = true;
        p->nfree--;
    }
    uv_mutex_unlock(&p->lock);
    return b;
}

/* Under the lock: b back on the free list. */
static void staging_give(struct staging_pool *p, struct staging_buf *b)
{
    b->next = p->free_list;
    p->free_list = b;
    p->taken[b - p->bufs] = false;
    p->nfree++;
}

/* Under the lock, after buffers came back: every port with waiters looks. */
static void staging_wake_all(struct staging_pool *p)
{
    for (struct staging_port *q = p->ports; q; q = q->next)
        if (q->has_waiters)
            loop_wake_send(&q->wake);
}

void staging_put(struct staging_port *port, struct staging_buf *b)
{
    struct staging_pool *p = port->pool;
    uv_mutex_lock(&p->lock);
    staging_give(p, b);
    staging_wake_all(p);
    uv_mutex_unlock(&p->lock);
}

void *staging_get_run(struct staging_port *port, size_t n)
{
    struct staging_pool *p = port->pool;
    void *host = NULL;
    uv_mutex_lock(&p->lock);
    /* A run is kept until its job's reply is written, which a client that
     * never reads holds up until --send-timeout: runs never take the
     * streams' reserve, since a run has other memory to fall back on and
     * a stream has none (issue 33: unread unary replies stalled every
     * client's streams). */
    if (n > p->nfree || p->nfree - n < p->count / STAGING_STREAM_RESERVE_SHARE)
        n = 0;
    size_t start = 0, len = 0;
    for (size_t i = 0; n && i < p->count && len < n; i++) {
        if (p->taken[i])
            len = 0;
        else if (len++ == 0)
            start = i;
    }
    if (n && len == n) {
        /* Off the free list: unlink the run's buffers wherever they sit. */
        for (struct staging_buf **pp = &p->free_list; *pp;) {
            size_t i = (size_t)(*pp - p->bufs);
            if (i >= start && i < start + n)
                *pp = (*pp)->next;
            else
                pp = &(*pp)->next;
        }
        for (size_t i = start; i < start + n; i++) {
            p->bufs[i].next = NULL;
            p->taken[i] = true;
        }
        p->nfree -= n;
        host = p->bufs[start].host;
    }
    uv_mutex_unlock(&p->lock);
    return host;
}

void staging_put_run(struct staging_port *port, void *host, size_t n)
{
    struct staging_pool *p = port->pool;
    size_t start = (size_t)((uint8_t *)host - (uint8_t *)p->bufs[0].host) / p->size;
    uv_mutex_lock(&p->lock);
    for (size_t i = start; i < start + n; i++)
        staging_give(p, &p->bufs[i]);
    staging_wake_all(p);
    uv_mutex_unlock(&p->lock);
}

void staging_wait(struct staging_port *port, struct staging_waiter *w)
{
    if (w->waiting)
        return;
    w->waiting = true;
    w->next = NULL;
    if (port->waiters_tail)
        port->waiters_tail->next = w;
    else
        port->waiters = w;
    port->waiters_tail = w;
    struct staging_pool *p = port->pool;
    uv_mutex_lock(&p->lock);
    port->has_waiters = true;
    bool now = p->nfree > 0;
    uv_mutex_unlock(&p->lock);
    if (now)
        loop_wake_send(&port->wake);
}

void staging_cancel(struct staging_port *port, struct staging_waiter *w)
{
    if (!w->waiting)
        return;
    struct staging_waiter **pp = &port->waiters, *prev = NULL;
    while (*pp && *pp != w) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (*pp)
        *pp = w->next;
    if (port->waiters_tail == w)
        port->waiters_tail = prev;
    w->next = NULL;
    w->waiting = false;
    /* has_waiters may stay set until the next wake-up clears it: a spare
     * wake-up costs a loop turn, a missed one would stall a stream. */
}
