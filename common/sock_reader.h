/* SPDX-License-Identifier: MIT */
/* sock_reader.h: a socket's large reads on a thread of their own, the
 * other half of sock_writer.h (daemon/listen.c).
 *
 * An I/O loop serves every call of its connections. Copying a neighbour's
 * upload out of the socket kept it running most of its time, so on a host
 * short of CPUs a tiny call's request and reply waited for it: on 2 cores
 * a 16-byte job beside another client's four streams made 400-520 calls/s
 * on the loop of those streams, and 780-905 on a loop of its own. A read
 * of known length into a known place (the rest of a DATA frame, into its
 * stream's staging buffer) goes to this thread instead, which reads it
 * while the loop serves the others, at the niceness of the writer.
 *
 * Thread rules: one read at a time; while it is handed and its result not
 * taken, the owner reads nothing else from the socket; the thread touches
 * nothing but the descriptor and the bytes it reads into, which stay
 * valid until the result is taken. done() runs on the reader thread, its
 * lock let go (as sock_writer.h's), when a read ended by itself (filled,
 * the peer closed, or the socket failed), not when sock_reader_stop()
 * ended it: it may only signal the owner (an eventfd), and may come after
 * the owner took the result.
 */
#ifndef AMP_SOCK_READER_H
#define AMP_SOCK_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sock_reader;

typedef void (*sock_reader_done_cb)(void *ctx);

/* A reader thread named name (at most 15 characters) that runs nice more
 * than the process (bulk_thread.h), or NULL (out of memory or threads).
 * It reads at most step bytes a syscall. */
struct sock_reader *sock_reader_new(const char *name, int nice, size_t step,
                                    sock_reader_done_cb done, void *ctx);

/* Hands a read of len (> 0) bytes from the non-blocking socket fd into
 * dest. Only while none is handed whose result is not taken. */
void sock_reader_start(struct sock_reader *r, int fd, uint8_t *dest, size_t len);

/* The handed read's result, once it ended: the bytes read into dest (all
 * of len, or fewer when it ended early) and 0 (fewer: the peer closed),
 * -ECANCELED (sock_reader_stop()) or the negative errno that ended it.
 * Returns false, taking nothing, while it runs or none is handed. */
bool sock_reader_take(struct sock_reader *r, size_t *got, int *status);

/* Ends the handed read now, wherever it got to, and waits until the thread
 * has let go of it; its result is still to be taken. */
void sock_reader_stop(struct sock_reader *r);

/* Stops any read, ends the thread and frees r. NULL is a no-op. */
void sock_reader_free(struct sock_reader *r);

#endif
