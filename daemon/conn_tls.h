/* SPDX-License-Identifier: MIT */
/* conn_tls.h: a connection's bytes through TLS (tls: listeners).
 *
 * Between the socket's ciphertext and the HTTP/2 session's plaintext:
 * conn.c calls these instead of feeding the session directly when its
 * connection came through a tls: listener, and fuzz/fuzz_tls.c calls them
 * the same way. No I/O: the ciphertext to send waits in the pipe
 * (tls_pipe_out). The socket's ciphertext is read into the pipe's input
 * buffer (tls_pipe_recv_dest), and stream data the session can take in
 * place (h2_session_read_dest) is decrypted straight into its staging
 * buffer, so TLS adds no copy to the plain path's but OpenSSL's own.
 */
#ifndef AMPD_CONN_TLS_H
#define AMPD_CONN_TLS_H

#include <stddef.h>
#include <stdint.h>

#include "h2.h"
#include "tls_pipe.h"

enum conn_tls_result {
    CONN_TLS_OK = 0,
    CONN_TLS_EOF = 1,        /* the peer ended TLS (close_notify): as a socket's EOF */
    CONN_TLS_H2_FATAL = -1,  /* the session is beyond saving: seal its GOAWAY, then close */
    CONN_TLS_FAILED = -2,    /* TLS failed: send the alert waiting in the pipe, then close */
};

/* Ciphertext the socket read (at tls_pipe_recv_dest, or anywhere):
 * decrypted, record by record, into h2_session_recv() (the handshake
 * first, which needs no session). */
enum conn_tls_result conn_tls_recv(struct tls_pipe *t, struct h2_session *h2, const uint8_t *data,
                                   size_t len);

/* Encrypts what the session has to send, once the handshake is done,
 * until CONN_TLS_BATCH bytes of ciphertext wait or the session has
 * nothing more; each write of the session's is written
 * (h2_session_written) as soon as it is sealed, since the records hold
 * copies. Returns 1 when
 * ciphertext waits in the pipe, 0 when there is none, -1 on a fatal
 * session or TLS error. */
int conn_tls_seal(struct tls_pipe *t, struct h2_session *h2);

/* Ciphertext sealed before the owner writes: a 1 MiB DATA frame goes
 * whole, small frames gather up to this. */
#define CONN_TLS_BATCH (64 * 1024)

#endif
