/* SPDX-License-Identifier: MIT */
/* fuzz_staging.c: staging.h over malloc'd buffers, for fuzz_conn.
 *
 * The daemon's pool (daemon/staging.c) holds pinned device memory, shared
 * by every I/O loop through per-loop ports, and wakes a port's waiters from
 * a uv_async callback, never from inside staging_put(). Here one port is
 * its own pool (one loop), and it keeps that promise the same way: staging_put() only marks the pool,
 * and the harness calls fuzz_staging_idle() between input pieces, where the
 * daemon's loop would have turned. Buffers are separate allocations so that
 * ASan sees any write past a chunk.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_backend.h"

struct staging_port {
    size_t size, count;
    struct staging_buf *bufs;       /* count entries; bufs[i].host malloc'd */
    struct staging_buf *free_list;
    size_t nfree;                   /* nfree <= count */
    struct staging_waiter *waiters, *waiters_tail;
};

int fuzz_staging_new(size_t count, size_t size, struct staging_port **out, char *err,
                     size_t errlen)
{
    struct staging_port *p = calloc(1, sizeof(*p));
    if (p)
        p->bufs = calloc(count ? count : 1, sizeof(*p->bufs));
    if (!p || !p->bufs) {
        free(p);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    p->size = size;
    for (; p->count < count; p->count++) {
        struct staging_buf *b = &p->bufs[p->count];
        b->host = malloc(size);
        if (!b->host) {
            fuzz_staging_free(p);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        b->next = p->free_list;
        p->free_list = b;
        p->nfree++;
    }
    *out = p;
    return 0;
}

void fuzz_staging_free(struct staging_port *p)
{
    if (!p)
        return;
    if (p->nfree != p->count)
        fuzz_backend_trap("a staging pool freed with buffers out");
    for (size_t i = 0; i < p->count; i++)
        free(p->bufs[i].host);
    free(p->bufs);
    free(p);
}

size_t staging_buf_size(const struct staging_port *p)
{
    return p->size;
}

size_t staging_count(const struct staging_port *p)
{
    return p->count;
}

size_t staging_free_count(const struct staging_port *p)
{
    return p->nfree;
}

struct staging_buf *staging_get(struct staging_port *p)
{
    struct staging_buf *b = p->nfree ? p->free_list : NULL;   /* runs out count too */
    if (b) {
        p->free_list = b->next;
        b->next = NULL;
        p->nfree--;
    }
    return b;
}

void staging_put(struct staging_port *p, struct staging_buf *b)
{
    if (b < p->bufs || b >= p->bufs + p->count || p->nfree >= p->count)
        fuzz_backend_trap("staging_put of a buffer not taken from this pool");
    for (struct staging_buf *f = p->free_list; f; f = f->next)
        if (f == b)
            fuzz_backend_trap("staging_put of a buffer already in the pool");
    b->next = p->free_list;
    p->free_list = b;
    p->nfree++;
}

/* A run is its own allocation here, counted out of the pool: ASan sees a
 * write past its end, and fuzz_staging_free() a run never given back. */
void *staging_get_run(struct staging_port *p, size_t n)
{
    if (n == 0 || n > p->nfree)
        return NULL;
    void *run = malloc(n * p->size);
    if (run)
        p->nfree -= n;
    return run;
}

void staging_put_run(struct staging_port *p, void *host, size_t n)
{
    if (!host || p->nfree + n > p->count)
        fuzz_backend_trap("staging_put_run of a run not taken from this pool");
    free(host);
    p->nfree += n;
}

void staging_wait(struct staging_port *p, struct staging_waiter *w)
{
    if (w->waiting)
        return;
    w->waiting = true;
    w->next = NULL;
    if (p->waiters_tail)
        p->waiters_tail->next = w;
    else
        p->waiters = w;
    p->waiters_tail = w;
}

void staging_cancel(struct staging_port *p, struct staging_waiter *w)
{
    if (!w->waiting)
        return;
    struct staging_waiter **pp = &p->waiters, *prev = NULL;
    while (*pp && *pp != w) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (!*pp)
        fuzz_backend_trap("a waiting staging waiter is not on its pool's list");
    *pp = w->next;
    if (p->waiters_tail == w)
        p->waiters_tail = prev;
    w->next = NULL;
    w->waiting = false;
}

bool fuzz_staging_idle(struct staging_port *p)
{
    bool woke = false;
    while (p->waiters && p->nfree) {
        struct staging_waiter *w = p->waiters;
        p->waiters = w->next;
        if (!p->waiters)
            p->waiters_tail = NULL;
        w->next = NULL;
        w->waiting = false;
        woke = true;
        w->ready(w);
    }
    return woke;
}
