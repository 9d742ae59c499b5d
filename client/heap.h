/* SPDX-License-Identifier: MIT */
/* heap.h: large reply buffers, kept after amp_free() for the next reply. */
#ifndef AMP_CLIENT_HEAP_H
#define AMP_CLIENT_HEAP_H

#include <stddef.h>

/* A kept buffer of at least n bytes (its size in *cap), or NULL: the
 * caller mallocs. Either way the buffer is malloc'd memory. */
void *heap_take(size_t n, size_t *cap);

/* Frees p, or keeps it for heap_take() (amp_free). NULL is a no-op. */
void heap_give(void *p);

#endif
