/* tls.h: libampclient's TLS set-up, internal to the library.
 *
 * tls.c makes the client side of a connection's TLS (common/tls_pipe.h):
 * the CAs to trust, the client certificate, the name to verify, ALPN h2.
 * conn.c runs the handshake and moves the bytes; nothing here touches the
 * socket.
 */
#ifndef AMP_CLIENT_TLS_H
#define AMP_CLIENT_TLS_H

#include <stddef.h>

#include "amp.h"
#include "tls_pipe.h"

/* A client pipe, in connect state, for host (what the address named;
 * o->tls_server_name overrides it), verifying the daemon's certificate
 * against o->tls_ca or the system's CAs, offering o->tls_cert if set.
 * o may be NULL (defaults). Returns 0, or AMP_ETLS / AMP_ENOMEM with a
 * reason naming the file in err. */
int tls_client_new(const char *host, const amp_connect_options *o, struct tls_pipe **out,
                   char *err, size_t errlen);

/* After the handshake: the daemon chose h2. Returns 0, or AMP_ETLS with
 * a reason in err. */
int tls_client_check(struct tls_pipe *p, char *err, size_t errlen);

#endif
