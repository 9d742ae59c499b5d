/* SPDX-License-Identifier: MIT */
/* conn_writer.c: the writer thread of a plain connection (conn_writer.h).
 *
 * A single thread that moves a GiB both ways spends its time in two kernel
 * copies in turn, the write of the request and the read of the reply; with
 * the write on a thread of its own the two copies run at once. conn.c
 * hands a batch (a set of unwritten output, typically a 1 MiB DATA frame
 * still in the caller's memory), and the next behind it, and keeps
 * reading; the thread (common/sock_writer.c) sends each until it is
 * written or the socket fails, then raises done_fd, which the caller's
 * poll watches; a deadline, a call ending or the connection closing stops
 * them early (conn_writer_stop).
 */
#include "conn_writer.h"

#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "sock_writer.h"

/* sock_writer's done(), on the writer thread once a batch ended by itself:
 * one count in done_fd per such batch, which conn_writer_take takes with
 * it, leaving the next batch's. */
static void conn_writer_done(void *ctx)
{
    struct conn_writer *w = ctx;
    eventfd_write(w->done_fd, 1);
}

int conn_writer_hand(struct conn_writer *w, int fd, const struct iovec *iov, int n)
{
    if (!w->thread) {
        w->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE);
        if (w->done_fd < 0)
            return -1;
        w->thread = sock_writer_new("amp-writer", 0, conn_writer_done, w);
        if (!w->thread) {
            close(w->done_fd);
            w->done_fd = -1;
            return -1;
        }
    }
    sock_writer_start(w->thread, fd, iov, n);
    w->handed++;
    return 0;
}

int conn_writer_handed(const struct conn_writer *w)
{
    return w->handed;
}

int conn_writer_fd(const struct conn_writer *w)
{
    return w->done_fd;
}

int conn_writer_take(struct conn_writer *w, size_t *written, int *err)
{
    int status;
    if (!w->handed || !sock_writer_take(w->thread, written, &status))
        return 0;
    *err = status == -ECANCELED ? 0 : -status;   /* stopped: the caller takes what was written */
    if (status != -ECANCELED) {
        /* This batch's count, the next's left; the thread raises it just
         * after letting its lock go, so it may be a moment behind. */
        struct pollfd pf = {.fd = w->done_fd, .events = POLLIN};
        eventfd_t v;
        while (eventfd_read(w->done_fd, &v) != 0 && (errno == EAGAIN || errno == EINTR))
            (void)poll(&pf, 1, -1);
    }
    w->handed--;
    return 1;
}

void conn_writer_stop(struct conn_writer *w)
{
    if (w->handed)
        sock_writer_stop(w->thread);
}

uint64_t conn_writer_batches(struct conn_writer *w)
{
    return w->batches + (w->thread ? sock_writer_writes(w->thread) : 0);
}

void conn_writer_end(struct conn_writer *w)
{
    if (!w->thread)
        return;
    w->batches = conn_writer_batches(w);
    sock_writer_free(w->thread);
    w->thread = NULL;
    close(w->done_fd);
    w->done_fd = -1;
    w->handed = 0;
}
