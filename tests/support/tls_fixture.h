/* SPDX-License-Identifier: MIT */
/* tls_fixture.h: what the TLS tests (tests/test_tls_*.c) share: test
 * certificates made with the openssl command (tests/support/tls_certs.sh,
 * once per test program), a real ampd with a tls: listener on a free
 * loopback port, and libampclient connections to it with chosen CAs,
 * client certificates and server names.
 */
#ifndef AMP_TEST_TLS_FIXTURE_H
#define AMP_TEST_TLS_FIXTURE_H

#include <stddef.h>

#include "amp.h"
#include "daemon_proc.h"

#define TLS_FIXTURE_PATH_MAX 512

/* Makes the certificates in a fresh directory (tls_certs.sh lists them);
 * call in main(), before the suite runs. Returns 0, or -1 with the reason
 * on stderr. */
int tls_fixture_init(void);

/* Removes the certificates' directory; call in main() after the suite. */
void tls_fixture_cleanup(void);

/* The path of one of the certificate files ("ca.pem"), in a buffer of
 * TLS_FIXTURE_PATH_MAX bytes the caller gives. Returns out. */
const char *tls_fixture_file(const char *name, char *out);

/* Starts ampd with --listen tls:127.0.0.1:PORT on a free port (in *port),
 * the certificate and key files named (cert "server", key "server.key"
 * and so on; NULL: server.pem and server.key) and extra args (may be
 * NULL). Fails the test if ampd does not start. */
void tls_fixture_start(struct daemon_proc *d, const char *cert, const char *key,
                       const char *const *extra, int *port);

/* amp_connect_with() to tls:127.0.0.1:port trusting ca (a file name such
 * as "ca.pem"; NULL: the system's CAs), with the client certificate
 * cert.pem/cert.key when cert is not NULL, and server name name (NULL:
 * the address's). Returns the amp_connect_with() result. */
int tls_fixture_connect(int port, const char *ca, const char *cert, const char *name,
                        amp_conn **out);

/* A reverse of a few KiB over c, checked byte for byte: 0 or an AMP_E*. */
int tls_fixture_reverse(amp_conn *c);

#endif
