/* SPDX-License-Identifier: MIT */
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
 * The owner may hand a second write while the first is still going
 * (SOCK_WRITER_QUEUE), so the thread finds the next one waiting when it
 * finishes instead of idling until its owner comes round: on the H100
 * host each writer of a 1 GiB stream waited 13-18% of its time for the
 * next 1 MiB frame with one write at a time (bench/RESULTS-archive.md).
 *
 * Thread rules: writes go out whole and in the order handed; while any is
 * handed and its result not taken, the owner writes nothing else to the
 * socket; the thread touches nothing but the descriptor and the bytes the
 * iovecs point at, which stay valid until the write's result is taken.
 * done() runs on the writer thread, with its lock let go, each time a
 * write ended by itself (written, or the socket failed), not when
 * sock_writer_stop() ended it: it may only signal the owner (an eventfd).
 * It comes just after the write's result can be taken, so an owner may
 * take a result before its signal and must let a signal find nothing.
 * (Under the lock, a nice thread that woke its owner kept the owner
 * waiting on the lock until the scheduler gave it a CPU again.)
 */
#ifndef AMP_SOCK_WRITER_H
#define AMP_SOCK_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define SOCK_WRITER_IOV 32   /* most iovecs of one write */
#define SOCK_WRITER_QUEUE 2  /* most writes handed and not yet taken */

struct sock_writer;

typedef void (*sock_writer_done_cb)(void *ctx);

/* A writer thread named name (top -H shows it; at most 15 characters),
 * or NULL (out of memory or threads). It blocks every signal: a library's
 * thread must not take the application's. It runs nice more than the
 * process (setpriority: 0 leaves it as it is), so that where CPUs are
 * short, the bulk bytes it carries wait for the threads that serve its
 * owner's other calls, not the reverse. */
struct sock_writer *sock_writer_new(const char *name, int nice, sock_writer_done_cb done,
                                    void *ctx);

/* Hands a write of the n (1..SOCK_WRITER_IOV) pieces of iov to fd (the
 * array is copied; the bytes are not), after those handed before it.
 * Only while sock_writer_queued() < SOCK_WRITER_QUEUE. */
void sock_writer_start(struct sock_writer *w, int fd, const struct iovec *iov, int n);

/* Writes handed whose result has not been taken. */
int sock_writer_queued(struct sock_writer *w);

/* True while a handed write has not ended. */
bool sock_writer_busy(struct sock_writer *w);

/* The oldest handed write's result, once it ended: the bytes that went
 * out, and 0, -ECANCELED (ended by sock_writer_stop()) or the negative
 * errno that ended it; the write is then no longer queued. Returns false,
 * taking nothing, while it has not ended or none is handed. */
bool sock_writer_take(struct sock_writer *w, size_t *written, int *status);

/* Ends every handed write now: the one going wherever it got to (the
 * socket may never take it), those behind it unwritten; waits until the
 * thread has let go of them. Their results are still to be taken. */
void sock_writer_stop(struct sock_writer *w);

/* Writes ended so far, either way. */
uint64_t sock_writer_writes(struct sock_writer *w);

/* Stops any write, ends the thread and frees w. NULL is a no-op. */
void sock_writer_free(struct sock_writer *w);

#endif
