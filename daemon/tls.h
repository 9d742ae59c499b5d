/* SPDX-License-Identifier: MIT */
/* tls.h: the daemon's TLS settings for tls: listeners (OpenSSL).
 *
 * A tls_server is the certificate, key and optional client CA that
 * --tls-cert, --tls-key and --tls-client-ca name, loaded into one OpenSSL
 * context: TLS 1.2 and 1.3, ALPN "h2" required (a ClientHello without it
 * is refused with a no_application_protocol alert), no renegotiation, no
 * session resumption, and with a client CA a client certificate required
 * and verified. Each connection gets its SSL from tls_server_accept() and
 * runs it through a tls_pipe (common/tls_pipe.h) in conn_tls.c.
 * tls_server_reload() re-reads the files (SIGHUP): new connections get the
 * new ones, connections already open keep theirs. Every function may be
 * called from any thread.
 */
#ifndef AMPD_TLS_H
#define AMPD_TLS_H

#include <stddef.h>

#include "tls_pipe.h"

struct tls_server;

/* The files; each path is copied. client_ca NULL or "": no client
 * certificates asked for. */
struct tls_server_files {
    const char *cert;       /* PEM: the server's certificate, then its chain */
    const char *key;        /* PEM: its private key */
    const char *client_ca;  /* PEM: the CAs a client certificate must chain to */
};

/* Loads the files into a new context. Returns 0, or -1 with a reason
 * naming the file in err. */
int tls_server_new(const struct tls_server_files *files, struct tls_server **out, char *err,
                   size_t errlen);

/* Loads the same files again and, if all of them load, makes them the
 * ones new connections get. Returns 0, or -1 with a reason in err (the
 * old ones stay). */
int tls_server_reload(struct tls_server *t, char *err, size_t errlen);

/* A server-side pipe for one new connection, or NULL when out of memory. */
struct tls_pipe *tls_server_accept(struct tls_server *t);

/* Frees the context; pipes made from it keep what they need. NULL is a
 * no-op. */
void tls_server_free(struct tls_server *t);

#endif
