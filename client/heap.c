/* SPDX-License-Identifier: MIT */
/* heap.c: large reply buffers, kept after amp_free() for the next reply.
 *
 * A reply's bytes reach the caller in the buffer they arrived in, which
 * the caller gives back with amp_free(). glibc serves a request of more
 * than 32 MiB (and, until its threshold adapts, of more than 128 KiB) with
 * a fresh mmap, and writing a reply into fresh pages costs a page fault
 * per 4 KiB: most of a 32 MiB unary call's client CPU on the H100 host
 * (bench_unary with a sampling profiler, 2026-11-23). So amp_free keeps up
 * to HEAP_KEEP buffers of HEAP_MIN bytes or more, HEAP_KEEP_BYTES in all,
 * and the next reply that fits takes one (never more than twice what it
 * needs). Any thread: a mutex guards the list.
 */
#define _GNU_SOURCE
#include "heap.h"

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>

#define HEAP_MIN ((size_t)1 << 20)
#define HEAP_KEEP 4
#define HEAP_KEEP_BYTES ((size_t)256 << 20)

static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;
static void *heap_bufs[HEAP_KEEP];
static size_t heap_caps[HEAP_KEEP];
static size_t heap_bytes;

void *heap_take(size_t n, size_t *cap)
{
    if (n < HEAP_MIN)
        return NULL;
    void *p = NULL;
    pthread_mutex_lock(&heap_lock);
    int best = -1;
    for (int i = 0; i < HEAP_KEEP; i++)
        if (heap_bufs[i] && heap_caps[i] >= n && heap_caps[i] / 2 <= n &&
            (best < 0 || heap_caps[i] < heap_caps[best]))
            best = i;
    if (best >= 0) {
        p = heap_bufs[best];
        *cap = heap_caps[best];
        heap_bufs[best] = NULL;
        heap_bytes -= heap_caps[best];
    }
    pthread_mutex_unlock(&heap_lock);
    return p;
}

void heap_give(void *p)
{
    if (!p)
        return;
    size_t cap = malloc_usable_size(p);
    if (cap < HEAP_MIN || cap > HEAP_KEEP_BYTES) {
        free(p);
        return;
    }
    void *drop = p;
    pthread_mutex_lock(&heap_lock);
    /* An empty slot, else the one of the smallest kept buffer. */
    int slot = -1;
    for (int i = 0; i < HEAP_KEEP && slot < 0; i++)
        if (!heap_bufs[i])
            slot = i;
    if (slot < 0) {
        slot = 0;
        for (int i = 1; i < HEAP_KEEP; i++)
            if (heap_caps[i] < heap_caps[slot])
                slot = i;
    }
    size_t evict = heap_bufs[slot] ? heap_caps[slot] : 0;
    if ((evict == 0 || evict < cap) && heap_bytes - evict + cap <= HEAP_KEEP_BYTES) {
        drop = heap_bufs[slot];
        heap_bufs[slot] = p;
        heap_caps[slot] = cap;
        heap_bytes = heap_bytes - evict + cap;
    }
    pthread_mutex_unlock(&heap_lock);
    free(drop);
}
