/* SPDX-License-Identifier: MIT */
/* conn_tls.c: the TLS leg of a connection (see conn_tls.h).
 *
 * The session's frames are sealed only while no ciphertext waits, a
 * frame (or a batch of small ones) at a time, so a peer that does not
 * read holds one frame's ciphertext here and nghttp2 keeps the rest as
 * unsent frames, as on a plaintext connection.
 */
#include "conn_tls.h"

enum conn_tls_result conn_tls_recv(struct tls_pipe *t, struct h2_session *h2, const uint8_t *data,
                                   size_t len)
{
    if (tls_pipe_recv(t, data, len) != 0)
        return CONN_TLS_FAILED;
    for (;;) {
        /* Stream data the session takes in place is opened straight
         * into its staging buffer, as the plain path reads it there. */
        size_t room;
        uint8_t *dest = h2_session_read_dest(h2, &room);
        const uint8_t *plain = dest;
        ssize_t n = dest ? tls_pipe_read_into(t, dest, room) : tls_pipe_read(t, &plain);
        if (n == TLS_PIPE_AGAIN)
            return CONN_TLS_OK;
        if (n == TLS_PIPE_EOF)
            return CONN_TLS_EOF;
        if (n < 0)
            return CONN_TLS_FAILED;
        if (h2_session_recv(h2, plain, (size_t)n) != 0)
            return CONN_TLS_H2_FATAL;
    }
}

int conn_tls_seal(struct tls_pipe *t, struct h2_session *h2)
{
    if (tls_pipe_failed(t))
        return tls_pipe_pending(t) > 0;   /* the alert, and nothing after it */
    if (!tls_pipe_ready(t))
        return tls_pipe_pending(t) > 0;   /* the session speaks once the handshake is done */
    while (tls_pipe_pending(t) < CONN_TLS_BATCH) {
        struct iovec iov[H2_SEND_IOV];
        int n = h2_session_sendv(h2, iov);
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        int rv = tls_pipe_write(t, iov, n);
        h2_session_written(h2);   /* sealed: the pipe has its own copy */
        if (rv != 0)
            return -1;
    }
    return tls_pipe_pending(t) > 0;
}
