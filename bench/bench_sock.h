/* SPDX-License-Identifier: MIT */
/* bench_sock.h: bytes through a bare socket, memory to memory, with
 * nothing on top: what a socket path costs before any protocol does
 * (bench_sock.c). */
#ifndef AMP_BENCH_SOCK_H
#define AMP_BENCH_SOCK_H

#include <stddef.h>
#include <stdint.h>

enum bench_sock_kind {
    BENCH_SOCK_UNIX,   /* a Unix stream socket pair */
    BENCH_SOCK_TCP,    /* a TCP connection over 127.0.0.1, TCP_NODELAY as ampd's */
};

/* A connected pair of stream sockets of kind into fd (both close-on-exec;
 * the caller closes them). Returns 0, or -1 with errno set. */
int bench_sock_pair(enum bench_sock_kind kind, int fd[2]);

/* Copies len bytes of in through fd[0] -> fd[1] into in_dst and, when out
 * is not NULL, at the same time len bytes of out through fd[1] -> fd[0]
 * into out_dst: a writer and a reader thread per direction, write_size
 * bytes per write. Returns the seconds from when every thread was ready
 * to the last byte read (thread start-up is not timed), or -1 with errno
 * set when a read or a write failed. The bytes are not compared: the
 * caller checks what arrived. */
double bench_sock_copy(const int fd[2], const uint8_t *in, uint8_t *in_dst, const uint8_t *out,
                       uint8_t *out_dst, size_t len, size_t write_size);

/* bench_sock_copy's two-way copy as one event loop a side would do it: one
 * thread per end, each sending its bytes and receiving the other's on one
 * non-blocking socket, whichever poll() says is ready. What a connection
 * served by one thread on each end (ampd's loop, libampclient's caller)
 * can at best move both ways. Same returns as bench_sock_copy. */
double bench_sock_copy_loop(const int fd[2], const uint8_t *in, uint8_t *in_dst,
                            const uint8_t *out, uint8_t *out_dst, size_t len, size_t write_size);

#endif
