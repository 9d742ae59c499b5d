/* staging.h: a device's fixed pool of pinned host buffers for streamed
 * job data (--staging-bytes in buffers of --chunk-bytes).
 *
 * This pool is all the host memory the daemon spends on stream data in
 * flight: a stream copies each request chunk into a buffer, the device
 * copies it in and its output back into the same buffer, and the buffer
 * returns once the output is queued on the connection. Buffers are taken
 * and returned on the loop thread only (runners just use the memory).
 * When the pool is empty a stream waits its turn (first come, first
 * served) and stops reading its input meanwhile (h2_call_pause), which is
 * the backpressure that reaches the client.
 */
#ifndef AMPD_STAGING_H
#define AMPD_STAGING_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "dev.h"

struct staging_buf {
    void *host;                 /* staging_buf_size() bytes of pinned memory */
    struct staging_buf *next;   /* free list link, while in the pool */
};

/* A stream waiting for a buffer. ready() is called from the loop (never
 * from inside staging_put) once a buffer is free; the waiter is off the
 * list by then and calls staging_get() itself. */
struct staging_waiter {
    void (*ready)(struct staging_waiter *w);
    struct staging_waiter *next;
    bool waiting;               /* on the pool's list */
};

struct staging_pool;

/* count buffers of size bytes of d's pinned memory. Returns 0, or -1 with
 * a reason in err. */
int staging_pool_new(uv_loop_t *loop, struct dev *d, size_t count, size_t size,
                     struct staging_pool **out, char *err, size_t errlen);

/* Frees the buffers (all must be back) at once and the pool itself once
 * the loop has closed its handle. */
void staging_pool_free(struct staging_pool *p);

size_t staging_buf_size(const struct staging_pool *p);
size_t staging_count(const struct staging_pool *p);
size_t staging_free_count(const struct staging_pool *p);

/* A free buffer, or NULL when there is none. */
struct staging_buf *staging_get(struct staging_pool *p);

/* Returns b; waiters are woken on a later loop turn. */
void staging_put(struct staging_pool *p, struct staging_buf *b);

/* Queues w for the next free buffer (a no-op if it is queued already). */
void staging_wait(struct staging_pool *p, struct staging_waiter *w);

/* Takes w off the list (a no-op if it is not on it). */
void staging_cancel(struct staging_pool *p, struct staging_waiter *w);

#endif
