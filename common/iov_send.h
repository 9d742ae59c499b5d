/* SPDX-License-Identifier: MIT */
/* iov_send.h: an iovec array's bytes to a non-blocking socket, for the
 * writer thread of both ends (sock_writer.c), and the one way to count an iovec array's bytes
 * and to step it past the bytes a write took (both ends' connections too). */
#ifndef AMP_IOV_SEND_H
#define AMP_IOV_SEND_H

#include <stddef.h>
#include <sys/uio.h>

/* The bytes of iov[0..n). */
size_t iov_total(const struct iovec *iov, int n);

/* Steps iov[0..n) past its first k bytes: returns the index of the first
 * piece with bytes left (n: none), that piece shortened in place. Pieces
 * left empty are passed too, so a write of the rest always has a byte. */
int iov_skip(struct iovec *iov, int n, size_t k);

/* Sends iov[0..n) (stepped in place) on the non-blocking socket fd,
 * waiting for POLLOUT as needed, until all of it is sent, the socket fails,
 * or stop_fd becomes readable. Returns 0, -ECANCELED when stopped, or a
 * negative errno; *sent is what went out either way. A vanished peer is an
 * error (MSG_NOSIGNAL), not SIGPIPE. */
int iov_send_all(int fd, struct iovec *iov, int n, int stop_fd, size_t *sent);

#endif
