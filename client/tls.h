/* SPDX-License-Identifier: MIT */
/* tls.h: libampclient's TLS set-up, internal to the library.
 *
 * tls.c keeps a connection's TLS settings (the caller's amp_connect_opts
 * fields, copied, so that a reconnection can read the files again) and
 * makes the client side of its TLS (common/tls_pipe.h) from them: the CAs
 * to trust, the client certificate, the name to verify, ALPN h2. conn.c
 * runs the handshake and moves the bytes; nothing here touches the socket.
 */
#ifndef AMP_CLIENT_TLS_H
#define AMP_CLIENT_TLS_H

#include <stddef.h>

#include "amp.h"
#include "tls_pipe.h"

/* A connection's TLS settings. The strings are owned copies, or NULL. */
struct tls_client_opts {
    int on;                /* TLS asked for by the options (a "tls:" address also asks) */
    char *ca, *cert, *key, *server_name;   /* amp_connect_opts.tls_* */
};

/* Copies the TLS fields o's size covers into *t (zeroed first; o may be
 * NULL). Any tls_* field sets t->on. Returns 0 or AMP_ENOMEM; on failure
 * *t holds what was copied, for tls_client_opts_free(). */
int tls_client_opts_set(struct tls_client_opts *t, const amp_connect_opts *o);

/* Frees the copies in *t and zeroes it. */
void tls_client_opts_free(struct tls_client_opts *t);

/* A client pipe, in connect state, for host (what the address named;
 * t->server_name overrides it), verifying the daemon's certificate against
 * t->ca or the system's CAs, offering t->cert if set. Returns 0, or
 * AMP_EINVAL (a certificate without its key), AMP_ETLS or AMP_ENOMEM with
 * a reason naming the file in err. */
int tls_client_new(const char *host, const struct tls_client_opts *t, struct tls_pipe **out,
                   char *err, size_t errlen);

/* After the handshake: the daemon chose h2. Returns 0, or AMP_ETLS with
 * a reason in err. */
int tls_client_check(struct tls_pipe *p, char *err, size_t errlen);

#endif
