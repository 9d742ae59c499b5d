/* SPDX-License-Identifier: MIT */
/* conn_writer.h: a connection's writer thread (conn_writer.c), which
 * writes large batches of output to a plain socket while the caller's
 * thread goes on reading replies and feeding the session: common/
 * sock_writer.h's thread, made on the first batch, and the eventfd the
 * caller polls for each batch's end.
 *
 * The thread rule: the writer only writes the bytes it was handed and
 * never touches the nghttp2 session or any other part of the connection;
 * everything else (the session, the output cursors, c->sent) stays on the
 * caller's thread. Up to SOCK_WRITER_QUEUE batches may be handed at once,
 * written in that order. While any is (conn_writer_handed()), the caller
 * writes nothing else to the socket and leaves the batches' memory alone:
 * bytes leave in the order nghttp2 made them, and borrowed memory stays
 * valid until the writer says it is written.
 */
#ifndef AMP_CLIENT_CONN_WRITER_H
#define AMP_CLIENT_CONN_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Pending output of at least this many bytes goes to the writer; less is
 * written inline, so small calls pay no thread hop. */
#define CONN_WRITER_MIN (256 * 1024)

struct conn_writer {
    struct sock_writer *thread; /* NULL until the first batch, and after conn_writer_end() */
    int done_fd;          /* eventfd (a semaphore: one count per batch that ended by
                           * itself), readable once one did: the caller polls it */
    int handed;           /* batches handed whose results are not yet taken */
    uint64_t batches;     /* batches ended by threads already ended */
};

/* Hands n iovecs (0 < n <= SOCK_WRITER_IOV) to write to fd after those
 * handed before (fewer than SOCK_WRITER_QUEUE), starting the thread on
 * first use. The memory they point at stays untouched by the caller until
 * conn_writer_take() says the batch ended. Returns 0, or -1 when the
 * thread cannot be started (write inline then). */
int conn_writer_hand(struct conn_writer *w, int fd, const struct iovec *iov, int n);

/* Batches handed and not yet taken (0: idle). */
int conn_writer_handed(const struct conn_writer *w);

/* What to poll (POLLIN) for the end of a busy batch. */
int conn_writer_fd(const struct conn_writer *w);

/* When the oldest handed batch ended: sets *written and *err (errno or
 * 0), forgets it and returns 1. Otherwise (still writing, or none handed)
 * returns 0 without waiting. */
int conn_writer_take(struct conn_writer *w, size_t *written, int *err);

/* Ends every handed batch now (the socket may never take them; those
 * behind the first are not begun) and waits until the thread has let go
 * of them; conn_writer_take() then has their results. No-op when none is
 * busy. */
void conn_writer_stop(struct conn_writer *w);

/* Batches the writer has ended so far. */
uint64_t conn_writer_batches(struct conn_writer *w);

/* Stops any batch (its result is dropped), joins the thread and closes
 * its fd; the next conn_writer_hand() starts a new one. */
void conn_writer_end(struct conn_writer *w);

#endif
