/* SPDX-License-Identifier: MIT */
/* staging.h: a device's fixed pool of pinned host buffers for streamed
 * job data (--staging-bytes in buffers of --chunk-bytes).
 *
 * This pool is all the host memory the daemon spends on stream data in
 * flight: a stream copies each request chunk into a buffer, the device
 * copies it in and its output back into the same buffer, and the buffer
 * returns once the output is queued on the connection. When the pool is
 * empty a stream waits its turn and stops reading its input meanwhile
 * (h2_stream_pause), which is the backpressure that reaches the client.
 * A unary request's bulk bytes may take a run of neighbouring buffers
 * (staging_get_run), if one is free, for the life of its job.
 *
 * Threads: one pool per device is shared by every I/O loop; each loop
 * reaches it through its own port (struct staging_port), which keeps that
 * loop's waiters. Taking and returning buffers holds the pool's lock (runners
 * only use the memory). A waiter is woken on its own loop: a buffer
 * returned on any loop wakes (uv_async) every port that has waiters, and
 * each port hands the free buffers to its waiters, first come first served
 * within the loop.
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

/* A stream waiting for a buffer. ready() is called on the port's loop
 * (never from inside staging_put) once a buffer is free; the waiter is off
 * the list by then and calls staging_get() itself (another loop may have
 * taken the buffer meanwhile: it then waits again). */
struct staging_waiter {
    void (*ready)(struct staging_waiter *w);
    struct staging_waiter *next;
    bool waiting;               /* on its port's list */
};

struct staging_pool;
struct staging_port;

/* count buffers of size bytes of d's pinned memory. Returns 0, or -1 with
 * a reason in err. */
int staging_pool_new(struct dev *d, size_t count, size_t size, struct staging_pool **out,
                     char *err, size_t errlen);

/* Frees the buffers and the pool: every port must be freed and every
 * buffer back. NULL is a no-op. */
void staging_pool_free(struct staging_pool *p);

/* Bytes of p's buffers out of the pool now, and of them all. Any thread. */
uint64_t staging_pool_in_use(struct staging_pool *p);
uint64_t staging_pool_bytes(const struct staging_pool *p);

/* loop's port into p: call it on loop's thread, or before that loop runs.
 * NULL when out of memory. */
struct staging_port *staging_port_new(struct staging_pool *p, uv_loop_t *loop);

/* On the port's loop, with no waiter left: the port stops being woken at
 * once and is freed once the loop has closed its handle. */
void staging_port_free(struct staging_port *port);

/* The rest runs on the port's loop. */
size_t staging_buf_size(const struct staging_port *port);
size_t staging_count(const struct staging_port *port);
size_t staging_free_count(const struct staging_port *port);

/* A free buffer, or NULL when there is none. */
struct staging_buf *staging_get(struct staging_port *port);

/* Returns b; waiters (on every loop) are woken on a later loop turn. */
void staging_put(struct staging_port *port, struct staging_buf *b);

/* A run of n neighbouring buffers (n * staging_buf_size() bytes in one
 * piece: a unary request's bulk bytes, rpc_bulk_rx.c), or NULL when no
 * such run is free, or taking it would leave streams less than a quarter
 * of the pool. Runs never wait: the caller falls back to other memory. */
void *staging_get_run(struct staging_port *port, size_t n);

/* Returns a run from staging_get_run (host and n as it was taken), as
 * staging_put does a buffer; may be called from any thread. */
void staging_put_run(struct staging_port *port, void *host, size_t n);

/* Queues w for the next free buffer (a no-op if it is queued already). */
void staging_wait(struct staging_port *port, struct staging_waiter *w);

/* Takes w off the list (a no-op if it is not on it). */
void staging_cancel(struct staging_port *port, struct staging_waiter *w);

#endif
