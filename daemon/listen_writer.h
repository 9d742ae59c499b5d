/* listen_writer.h: one accepted socket's large writes on a thread of its
 * own.
 *
 * An I/O loop thread reads and writes for all of its connections. A
 * stream's replies are megabytes a second, and copying them into the
 * socket on the loop leaves the loop only half its time for the requests
 * coming the other way: one thread an end moves 1.98 GB/s each way over a
 * Unix socket where a writer and a reader an end move 3.98 (bench_data_path,
 * "2-way loop" against "copy 2-way", H100 host). So a write the socket did
 * not take at once, and that is large (listen.c decides), goes to this
 * thread, which waits for the socket to take it while the loop reads.
 *
 * Thread rules: the loop hands one write at a time and writes nothing
 * else until done() comes, so bytes keep their order. The thread touches
 * nothing but the descriptor and the iovecs it was given, whose bytes stay
 * valid until done(); done() runs on the writer thread and may only signal
 * the loop (uv_async_send).
 */
#ifndef AMPD_LISTEN_WRITER_H
#define AMPD_LISTEN_WRITER_H

#include <sys/uio.h>

#include "listen.h"

struct listen_writer;

typedef void (*listen_writer_done_cb)(void *ctx);

/* A writer for fd (not owned: it stays the socket's), or NULL (out of
 * memory or threads). */
struct listen_writer *listen_writer_new(int fd, listen_writer_done_cb done, void *ctx);

/* Starts writing the n (<= LISTEN_WRITE_IOV) pieces of iov; the array is
 * copied. Loop thread, only while no write is in progress. */
void listen_writer_start(struct listen_writer *w, const struct iovec *iov, int n);

/* The finished write's outcome: 0, or a negative errno (a uv error). Loop
 * thread, after done(). */
int listen_writer_status(struct listen_writer *w);

/* Abandons a write in progress, ends the thread and frees w. Loop thread. */
void listen_writer_free(struct listen_writer *w);

#endif
