/* SPDX-License-Identifier: MIT */
/* tls_fixture.c: certificates and a TLS daemon for the TLS tests (see
 * tls_fixture.h). */
#include "tls_fixture.h"

#include <check.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostile.h"

#define TLS_FIXTURE_REVERSE_BYTES 4096
#define TLS_FIXTURE_CALL_MS 30000
#define TLS_FIXTURE_PORT_TRIES 5

static char tls_fixture_dir[256];

int tls_fixture_init(void)
{
    const char *src = getenv("AMP_SOURCE_DIR");
    const char *tmp = getenv("TMPDIR");
    snprintf(tls_fixture_dir, sizeof tls_fixture_dir, "%s/ampd-tls-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!src || !mkdtemp(tls_fixture_dir)) {
        fprintf(stderr, "tls_fixture: no $AMP_SOURCE_DIR, or mkdtemp failed\n");
        return -1;
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "sh '%s/tests/support/tls_certs.sh' '%s'", src, tls_fixture_dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "tls_fixture: %s failed\n", cmd);
        return -1;
    }
    return 0;
}

void tls_fixture_cleanup(void)
{
    char cmd[512];
    if (!tls_fixture_dir[0])
        return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tls_fixture_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "tls_fixture: %s failed\n", cmd);
}

const char *tls_fixture_file(const char *name, char *out)
{
    int n = snprintf(out, TLS_FIXTURE_PATH_MAX, "%s/%s", tls_fixture_dir, name);
    ck_assert(n > 0 && n < TLS_FIXTURE_PATH_MAX);
    return out;
}

/* True when the daemon answering TLS on 127.0.0.1:port shows the
 * certificate in cert_path: this test's ampd, not another test's that
 * took the same free port. Certificates are not checked otherwise. */
static bool tls_fixture_ours(int port, const char *cert_path)
{
    static const unsigned char h2[] = { 2, 'h', '2' };
    FILE *f = fopen(cert_path, "r");
    X509 *want = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
    if (f)
        fclose(f);
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL *ssl = ctx ? SSL_new(ctx) : NULL;
    int fd = hostile_connect_tcp(NULL, port);
    bool ours = false;
    if (want && ssl && fd >= 0 && SSL_set_alpn_protos(ssl, h2, sizeof h2) == 0 &&
        SSL_set_fd(ssl, fd) == 1 && SSL_connect(ssl) == 1) {
        X509 *got = SSL_get1_peer_certificate(ssl);
        ours = got && X509_cmp(got, want) == 0;
        X509_free(got);
    }
    ERR_clear_error();
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    X509_free(want);
    if (fd >= 0)
        close(fd);
    return ours;
}

void tls_fixture_start(struct daemon_proc *d, const char *cert, const char *key,
                       const char *const *extra, int *port)
{
    static char listen[64], cert_path[TLS_FIXTURE_PATH_MAX], key_path[TLS_FIXTURE_PATH_MAX];
    tls_fixture_file(cert ? cert : "server.pem", cert_path);
    tls_fixture_file(key ? key : "server.key", key_path);
    /* Tokens have tests of their own (test_auth_*). */
    const char *args[32] = { "--listen", listen, "--tls-cert", cert_path, "--tls-key", key_path,
                             "--tcp-require-token", "off" };
    size_t n = 8;
    for (size_t i = 0; extra && extra[i] && n < 31; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    /* A free port can be taken by another test's connection before ampd
     * binds it (and ampd then exits just after its Unix socket looked
     * ready): try another. */
    for (int attempt = 0; attempt < TLS_FIXTURE_PORT_TRIES; attempt++) {
        *port = hostile_free_port();
        snprintf(listen, sizeof listen, "tls:127.0.0.1:%d", *port);
        if (daemon_start(d, args) != 0)
            continue;
        if (tls_fixture_ours(*port, cert_path) && daemon_alive(d))
            return;
        daemon_stop(d);
    }
    ck_abort_msg("ampd did not listen on a TLS port in %d tries", TLS_FIXTURE_PORT_TRIES);
}

int tls_fixture_connect(int port, const char *ca, const char *cert, const char *name,
                        amp_conn **out)
{
    char address[64], ca_path[TLS_FIXTURE_PATH_MAX], cert_path[TLS_FIXTURE_PATH_MAX],
        key_path[TLS_FIXTURE_PATH_MAX], file[TLS_FIXTURE_PATH_MAX];
    snprintf(address, sizeof address, "tls:127.0.0.1:%d", port);
    amp_connect_opts o = { .size = sizeof o, .tls_server_name = name };
    if (ca)
        o.tls_ca = tls_fixture_file(ca, ca_path);
    if (cert) {
        snprintf(file, sizeof file, "%s.pem", cert);
        o.tls_cert = tls_fixture_file(file, cert_path);
        snprintf(file, sizeof file, "%s.key", cert);
        o.tls_key = tls_fixture_file(file, key_path);
    }
    return amp_connect_with(address, &o, out);
}

int tls_fixture_reverse(amp_conn *c)
{
    uint8_t in[TLS_FIXTURE_REVERSE_BYTES];
    for (size_t i = 0; i < sizeof in; i++)
        in[i] = (uint8_t)(i * 13 + 1);
    amp_opts o = { .size = sizeof o, .timeout_ms = TLS_FIXTURE_CALL_MS };
    void *out = NULL;
    size_t len = 0;
    int rc = amp_reverse(c, &o, in, sizeof in, &out, &len);
    for (size_t i = 0; rc == 0 && i < sizeof in; i++)
        if (len != sizeof in || ((uint8_t *)out)[i] != in[sizeof in - 1 - i])
            rc = AMP_EPROTO;
    amp_free(out);
    return rc;
}
