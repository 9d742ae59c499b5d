/* SPDX-License-Identifier: MIT */
/* loop_wake.c: a cross-thread wake-up of a libuv loop (loop_wake.h). */
#include "loop_wake.h"

#include <errno.h>
#include <sys/eventfd.h>
#include <unistd.h>

static void loop_wake_on_poll(uv_poll_t *h, int status, int events)
{
    (void)status;
    (void)events;
    struct loop_wake *w = (struct loop_wake *)h;
    eventfd_t n;
    while (eventfd_read(w->fd, &n) < 0 && errno == EINTR)
        ;
    /* Cleared before the callback looks: a send from here on writes again. */
    atomic_store(&w->pending, 0);
    w->cb(w);
}

int loop_wake_init(uv_loop_t *loop, struct loop_wake *w, loop_wake_cb cb, void *data)
{
    w->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->fd < 0)
        return uv_translate_sys_error(errno);
    atomic_init(&w->pending, 0);
    w->cb = cb;
    int rv = uv_poll_init(loop, &w->poll, w->fd);
    if (rv == 0)
        rv = uv_poll_start(&w->poll, UV_READABLE, loop_wake_on_poll);
    if (rv != 0) {
        close(w->fd);
        w->fd = -1;
        return rv;
    }
    w->poll.data = data;
    return 0;
}

void loop_wake_send(struct loop_wake *w)
{
    if (atomic_load_explicit(&w->pending, memory_order_relaxed) ||
        atomic_exchange(&w->pending, 1))
        return;
    while (eventfd_write(w->fd, 1) < 0 && errno == EINTR)
        ;
}

void loop_wake_close(struct loop_wake *w, uv_close_cb closed)
{
    uv_close((uv_handle_t *)&w->poll, closed);   /* stops polling first */
    close(w->fd);
    w->fd = -1;
}
