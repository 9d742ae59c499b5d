/* sock_writer.h: a socket's large writes on a thread of their own, for
 * both ends (daemon/listen.c, client/conn_writer.c).
 *
 * One thread serves both directions of a connection on each end: ampd's
 * I/O loop, libampclient's calling thread. A stream's bytes are megabytes
 * a second each way, and copying them into the socket on that thread
 * leaves it only half its time for the bytes coming the other way: one
 * thread an end moves 1.98 GB/s each way over a Unix socket where a writer
 * and a reader an end move 3.98 (bench_data_path, "2-way loop" against
 * "copy 2-way", H100 host). So a large write goes to this thread, which
 * sends it (iov_send_all: POLLOUT as needed) while its owner reads.
 *
 * Thread rules: the owner hands one write at a time and writes nothing
 * else to the socket until it ended; the thread touches nothing but the
 * descriptor and the bytes the iovecs point at, which stay valid until
 * then. done() runs on the writer thread, under its lock, when a write
 * ended by itself (written, or the socket failed), not when
 * sock_writer_stop() ended it: it may only signal the owner (an eventfd).
 * Under the lock, an owner that sees the write ended finds it signalled.
 */
#ifndef AMP_SOCK_WRITER_H
#define AMP_SOCK_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define SOCK_WRITER_IOV 32   /* most iovecs of one write */

struct sock_writer;

typedef void (*sock_writer_done_cb)(void *ctx);

/* A writer thread named name (top -H shows it; at most 15 characters),
 * or NULL (out of memory or threads). It blocks every signal: a library's
 * thread must not take the application's. */
struct sock_writer *sock_writer_new(const char *name, sock_writer_done_cb done, void *ctx);

/* Starts writing the n (1..SOCK_WRITER_IOV) pieces of iov to fd (the
 * array is copied; the bytes are not). Only while no write is busy. */
void sock_writer_start(struct sock_writer *w, int fd, const struct iovec *iov, int n);

/* True while a started write has not ended. */
bool sock_writer_busy(struct sock_writer *w);

/* The last ended write: the bytes that went out, and 0, -ECANCELED (ended
 * by sock_writer_stop()) or the negative errno that ended it. */
void sock_writer_result(struct sock_writer *w, size_t *written, int *status);

/* Ends the busy write now, wherever it got to (the socket may never take
 * it), and waits until the thread has let go of it. No-op when none is. */
void sock_writer_stop(struct sock_writer *w);

/* Writes ended so far, either way. */
uint64_t sock_writer_writes(struct sock_writer *w);

/* Stops any write, ends the thread and frees w. NULL is a no-op. */
void sock_writer_free(struct sock_writer *w);

#endif
