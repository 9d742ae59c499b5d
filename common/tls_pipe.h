/* SPDX-License-Identifier: MIT */
/* tls_pipe.h: one TLS connection over the pipe's own buffers, without I/O.
 *
 * The daemon (daemon/conn_tls.c) and the client (client/conn.c) both put
 * TLS between a socket and an HTTP/2 session the way nghttp2 puts HTTP/2
 * between bytes and calls: the owner feeds the ciphertext it read
 * (tls_pipe_recv, after reading it in place: tls_pipe_recv_dest), takes
 * plaintext out (tls_pipe_read, or tls_pipe_read_into where it belongs),
 * hands plaintext in
 * (tls_pipe_write) and writes the ciphertext it gets (tls_pipe_out). The
 * pipe never touches a socket, so it works on any loop and can be fuzzed.
 * Who sets the SSL up (context, certificates, ALPN, names) is the owner's
 * business: daemon/tls.c for the server, client/tls.c for the client.
 */
#ifndef AMP_TLS_PIPE_H
#define AMP_TLS_PIPE_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* The largest TLS record's plaintext (RFC 8446 5.1): tls_pipe_read()
 * returns at most this much at once. */
#define TLS_PIPE_RECORD 16384
#define TLS_PIPE_WHY_MAX 160
/* tls_pipe_recv_dest() offers at least this much room: the pipe's input
 * buffer, held from the first read until tls_pipe_free(). */
#define TLS_PIPE_IN_READ (256 * 1024)

/* tls_pipe_read() and tls_pipe_handshake() results besides bytes. */
enum {
    TLS_PIPE_AGAIN = 0,   /* needs more ciphertext from the peer */
    TLS_PIPE_EOF = -1,    /* the peer ended TLS cleanly (close_notify) */
    TLS_PIPE_ERROR = -2,  /* fatal: tls_pipe_why() says why; flush tls_pipe_out (an alert) and close */
};

struct tls_pipe;

/* Wraps ssl, which the pipe owns from then on (freed with it, or here on
 * failure), with the pipe's BIO both ways. The SSL's role (connect or accept
 * state) must be set. Returns NULL when out of memory. */
struct tls_pipe *tls_pipe_new(SSL *ssl);

/* Frees the SSL, its BIOs and the buffers. NULL is a no-op. */
void tls_pipe_free(struct tls_pipe *p);

/* The SSL inside, for questions (ALPN, peer certificate); still the pipe's. */
SSL *tls_pipe_ssl(struct tls_pipe *p);

/* Where the owner may read the peer's next ciphertext so that
 * tls_pipe_recv() need not copy it: *room (>= TLS_PIPE_IN_READ) bytes,
 * valid until the next call on p. NULL when out of memory or failed. */
uint8_t *tls_pipe_recv_dest(struct tls_pipe *p, size_t *room);

/* Ciphertext read from the peer: taken where it lies when it was read at
 * tls_pipe_recv_dest(), else copied. Returns 0, or TLS_PIPE_ERROR when
 * out of memory. */
int tls_pipe_recv(struct tls_pipe *p, const uint8_t *data, size_t len);

/* Moves the handshake on with what was received. Returns 1 once it is
 * done, TLS_PIPE_AGAIN while it needs the peer (send tls_pipe_out first),
 * or TLS_PIPE_ERROR. */
int tls_pipe_handshake(struct tls_pipe *p);

/* True once the handshake is done and until close_notify is queued:
 * plaintext may be written. */
bool tls_pipe_ready(const struct tls_pipe *p);

/* True once the pipe failed: nothing but tls_pipe_out() (an alert) works. */
bool tls_pipe_failed(const struct tls_pipe *p);

/* Decrypts the next plaintext (driving the handshake first if needed):
 * points *plain at up to TLS_PIPE_RECORD bytes, valid until the next call
 * on p, and returns their count; or TLS_PIPE_AGAIN, TLS_PIPE_EOF,
 * TLS_PIPE_ERROR. Call it until it returns TLS_PIPE_AGAIN: records may
 * already wait decoded. */
ssize_t tls_pipe_read(struct tls_pipe *p, const uint8_t **plain);

/* tls_pipe_read() into the caller's dest: up to room bytes (at most one
 * record's) are decrypted straight there, with no copy in between. */
ssize_t tls_pipe_read_into(struct tls_pipe *p, uint8_t *dest, size_t room);

/* Encrypts the n pieces of iov (the bytes are copied into records, small
 * pieces together). Only once tls_pipe_ready(). Returns 0, or
 * TLS_PIPE_ERROR. */
int tls_pipe_write(struct tls_pipe *p, const struct iovec *iov, int n);

/* Ends TLS cleanly: queues a close_notify alert for tls_pipe_out (once;
 * a pipe not ready, or failed, sends none). Nothing may be written after
 * it. Returns 0, or TLS_PIPE_ERROR when out of memory. */
int tls_pipe_close_notify(struct tls_pipe *p);

/* Bytes for the peer. Points *out at the next ciphertext to send and
 * returns its length (0: none). They stay valid and unchanged until the
 * next tls_pipe_out(), tls_pipe_write() or tls_pipe_out_done() on p, so
 * an asynchronous write can send them while reads go on (what reads make,
 * an alert, a key update, waits behind them). */
size_t tls_pipe_out(struct tls_pipe *p, const uint8_t **out);

/* n (<= the last tls_pipe_out() length) of those bytes were sent. */
void tls_pipe_out_done(struct tls_pipe *p, size_t n);

/* Ciphertext waiting to be sent, in tls_pipe_out's buffer or behind it. */
size_t tls_pipe_pending(const struct tls_pipe *p);

/* Why the pipe failed ("" if it has not): OpenSSL's reason for the first
 * error, e.g. "wrong version number" or "certificate verify failed". */
const char *tls_pipe_why(const struct tls_pipe *p);

#endif
