/* staging.c: the pinned staging pool of one device (staging.h).
 *
 * Waiters are woken from a uv_idle callback rather than from
 * staging_put(): a buffer is often returned deep inside another stream's
 * completion or close, where re-entering a third stream's handlers would
 * be hard to reason about. The idle callback hands out the free buffers in
 * waiting order and stops when either runs out.
 */
#include "staging.h"

#include <stdio.h>
#include <stdlib.h>

struct staging_pool {
    uv_idle_t idle;                 /* running while waiters and free buffers meet */
    size_t size, count;
    struct staging_buf *bufs;       /* count entries */
    struct dev_pinned **pinned;     /* count entries, owned */
    struct staging_buf *free_list;
    size_t nfree;                   /* nfree <= count */
    struct staging_waiter *waiters, *waiters_tail;
};

static void staging_on_idle(uv_idle_t *h)
{
    struct staging_pool *p = h->data;
    while (p->waiters && p->nfree) {
        struct staging_waiter *w = p->waiters;
        p->waiters = w->next;
        if (!p->waiters)
            p->waiters_tail = NULL;
        w->next = NULL;
        w->waiting = false;
        w->ready(w);
    }
    if (!p->waiters || !p->nfree)
        uv_idle_stop(&p->idle);
}

static void staging_release(struct staging_pool *p)
{
    for (size_t i = 0; p->pinned && i < p->count; i++)
        dev_pinned_free(p->pinned[i]);
    free(p->pinned);
    free(p->bufs);
    p->pinned = NULL;
    p->bufs = NULL;
}

int staging_pool_new(uv_loop_t *loop, struct dev *d, size_t count, size_t size,
                     struct staging_pool **out, char *err, size_t errlen)
{
    struct staging_pool *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    p->size = size;
    p->bufs = calloc(count, sizeof(*p->bufs));
    p->pinned = calloc(count, sizeof(*p->pinned));
    if (!p->bufs || !p->pinned) {
        staging_release(p);
        free(p);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < count; i++) {
        p->bufs[i].host = dev_pinned_alloc(d, size, &p->pinned[i]);
        if (!p->bufs[i].host) {
            staging_release(p);
            free(p);
            snprintf(err, errlen, "cannot allocate %zu pinned staging buffers of %zu bytes on device %u",
                     count, size, dev_info(d)->index);
            return -1;
        }
        p->count++;
        p->bufs[i].next = p->free_list;
        p->free_list = &p->bufs[i];
        p->nfree++;
    }
    uv_idle_init(loop, &p->idle);
    p->idle.data = p;
    *out = p;
    return 0;
}

static void staging_on_closed(uv_handle_t *h)
{
    free(h->data);
}

void staging_pool_free(struct staging_pool *p)
{
    if (!p)
        return;
    staging_release(p);
    uv_close((uv_handle_t *)&p->idle, staging_on_closed);
}

size_t staging_buf_size(const struct staging_pool *p)
{
    return p->size;
}

size_t staging_count(const struct staging_pool *p)
{
    return p->count;
}

size_t staging_free_count(const struct staging_pool *p)
{
    return p->nfree;
}

struct staging_buf *staging_get(struct staging_pool *p)
{
    struct staging_buf *b = p->free_list;
    if (b) {
        p->free_list = b->next;
        b->next = NULL;
        p->nfree--;
    }
    return b;
}

void staging_put(struct staging_pool *p, struct staging_buf *b)
{
    b->next = p->free_list;
    p->free_list = b;
    p->nfree++;
    if (p->waiters)
        uv_idle_start(&p->idle, staging_on_idle);
}

void staging_wait(struct staging_pool *p, struct staging_waiter *w)
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
    if (p->nfree)
        uv_idle_start(&p->idle, staging_on_idle);
}

void staging_cancel(struct staging_pool *p, struct staging_waiter *w)
{
    if (!w->waiting)
        return;
    struct staging_waiter **pp = &p->waiters, *prev = NULL;
    while (*pp && *pp != w) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (*pp)
        *pp = w->next;
    if (p->waiters_tail == w)
        p->waiters_tail = prev;
    w->next = NULL;
    w->waiting = false;
}
