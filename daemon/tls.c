/* SPDX-License-Identifier: MIT */
/* tls.c: the OpenSSL context behind tls: listeners (see tls.h).
 *
 * The context is swapped whole on reload, under a mutex that also covers
 * SSL_new(): an SSL holds its own reference to the context it was made
 * from, so the old context lives on exactly as long as its connections.
 * gRPC over TLS is HTTP/2 over TLS, which needs ALPN h2 (RFC 9113 3.2);
 * a client that offers no ALPN at all is refused in the ClientHello
 * callback, because OpenSSL would otherwise complete such a handshake and
 * leave the refusal to a bare close after it. The PEM files are opened
 * through read_file.c, never by OpenSSL's path-taking loaders, so that a
 * FIFO in their place is refused instead of hanging a reload.
 */
#include "tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/tls1.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "read_file.h"

/* ALPN wire form: a length byte, then the protocol name. */
static const unsigned char tls_alpn_h2[] = { 2, 'h', '2' };

/* TLS 1.2 suites that HTTP/2 allows (RFC 9113 9.2.2: ephemeral keys, AEAD);
 * TLS 1.3's are all of that kind. AES-128-GCM leads both lists: with
 * AES instructions it seals bulk data faster than AES-256 (OpenSSL's
 * default first choice) at a strength TLS 1.3 offers first too, and
 * SSL_OP_PRIORITIZE_CHACHA gives a client that lists ChaCha20 first (one
 * without AES instructions) ChaCha20 instead. */
#define TLS_CIPHERS_12 "ECDHE+AESGCM+AES128:ECDHE+AESGCM+AES256:ECDHE+CHACHA20"
#define TLS_SUITES_13 "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"

struct tls_server {
    pthread_mutex_t lock;   /* guards ctx: swapped by reload, used by accept */
    SSL_CTX *ctx;           /* one reference held here */
    char *cert, *key;       /* the files, re-read on reload */
    char *client_ca;        /* NULL: no client certificates */
};

static int tls_fail(char *err, size_t errlen, const char *what, const char *path)
{
    unsigned long e = ERR_peek_last_error();
    const char *reason = e ? ERR_reason_error_string(e) : NULL;
    snprintf(err, errlen, "%s %s: %s", what, path, reason ? reason : "cannot be loaded");
    ERR_clear_error();
    return -1;
}

static int tls_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                           const unsigned char *in, unsigned int inlen, void *arg)
{
    (void)ssl;
    (void)arg;
    unsigned char *sel;
    if (SSL_select_next_proto(&sel, outlen, tls_alpn_h2, sizeof tls_alpn_h2, in, inlen) !=
        OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_ALERT_FATAL;   /* no_application_protocol */
    *out = sel;
    return SSL_TLSEXT_ERR_OK;
}

static int tls_client_hello(SSL *ssl, int *alert, void *arg)
{
    (void)arg;
    const unsigned char *ext;
    size_t len;
    if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_application_layer_protocol_negotiation, &ext,
                                  &len) == 1)
        return SSL_CLIENT_HELLO_SUCCESS;
    *alert = SSL_AD_NO_APPLICATION_PROTOCOL;
    return SSL_CLIENT_HELLO_ERROR;
}

/* A PEM file as a BIO, opened through read_file.c: OpenSSL's own *_file()
 * loaders open with a blocking open(), which a FIFO would hang. NULL with
 * err set. */
static BIO *tls_file(const char *what, const char *path, char *err, size_t errlen)
{
    int fd = read_file_open(what, path, NULL, err, errlen);
    if (fd < 0)
        return NULL;
    BIO *b = BIO_new_fd(fd, BIO_CLOSE);
    if (!b) {
        snprintf(err, errlen, "%s %s: out of memory", what, path);
        close(fd);
    }
    return b;
}

/* After the last PEM block, reading another fails with "no start line":
 * the file's end, not an error. */
static bool tls_pem_end(void)
{
    unsigned long e = ERR_peek_last_error();
    if (ERR_GET_LIB(e) != ERR_LIB_PEM || ERR_GET_REASON(e) != PEM_R_NO_START_LINE)
        return false;
    ERR_clear_error();
    return true;
}

/* The certificate, then its chain, as SSL_CTX_use_certificate_chain_file()
 * reads them. */
static int tls_load_cert(SSL_CTX *ctx, const char *path, char *err, size_t errlen)
{
    BIO *b = tls_file("--tls-cert", path, err, errlen);
    if (!b)
        return -1;
    X509 *x = PEM_read_bio_X509_AUX(b, NULL, NULL, NULL);
    bool ok = x && SSL_CTX_use_certificate(ctx, x) == 1;
    X509_free(x);
    while (ok) {
        X509 *ca = PEM_read_bio_X509(b, NULL, NULL, NULL);
        if (!ca) {
            ok = tls_pem_end();
            break;
        }
        if (SSL_CTX_add0_chain_cert(ctx, ca) != 1) {   /* owns ca on success */
            X509_free(ca);
            ok = false;
        }
    }
    BIO_free(b);
    return ok ? 0 : tls_fail(err, errlen, "--tls-cert", path);
}

static int tls_load_key(SSL_CTX *ctx, const char *path, char *err, size_t errlen)
{
    BIO *b = tls_file("--tls-key", path, err, errlen);
    if (!b)
        return -1;
    EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
    bool ok = k && SSL_CTX_use_PrivateKey(ctx, k) == 1;
    EVP_PKEY_free(k);
    BIO_free(b);
    return ok ? 0 : tls_fail(err, errlen, "--tls-key", path);
}

/* The client CA: both the trust store for client certificates and the
 * list of CA names the server's CertificateRequest offers. A file with
 * no certificate is refused. */
static int tls_load_client_ca(SSL_CTX *ctx, const char *path, char *err, size_t errlen)
{
    BIO *b = tls_file("--tls-client-ca", path, err, errlen);
    if (!b)
        return -1;
    X509_STORE *store = SSL_CTX_get_cert_store(ctx);
    bool ok = true;
    for (size_t n = 0; ok; n++) {
        X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
        if (!x) {
            ok = n > 0 && tls_pem_end();
            break;
        }
        ok = X509_STORE_add_cert(store, x) == 1 && SSL_CTX_add_client_CA(ctx, x) == 1;
        X509_free(x);
    }
    BIO_free(b);
    if (!ok)
        return tls_fail(err, errlen, "--tls-client-ca", path);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    return 0;
}

static int tls_load_files(SSL_CTX *ctx, const struct tls_server *t, char *err, size_t errlen)
{
    if (tls_load_cert(ctx, t->cert, err, errlen) != 0 || tls_load_key(ctx, t->key, err, errlen) != 0)
        return -1;
    if (SSL_CTX_check_private_key(ctx) != 1)
        return tls_fail(err, errlen, "--tls-key does not match --tls-cert:", t->key);
    return t->client_ca ? tls_load_client_ca(ctx, t->client_ca, err, errlen) : 0;
}

static SSL_CTX *tls_context(const struct tls_server *t, char *err, size_t errlen)
{
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        snprintf(err, errlen, "TLS: out of memory");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_PRIORITIZE_CHACHA);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_num_tickets(ctx, 0);
    SSL_CTX_set_alpn_select_cb(ctx, tls_alpn_select, NULL);
    SSL_CTX_set_client_hello_cb(ctx, tls_client_hello, NULL);
    int rv = -1;
    if (SSL_CTX_set_cipher_list(ctx, TLS_CIPHERS_12) != 1)
        tls_fail(err, errlen, "TLS 1.2 ciphers", TLS_CIPHERS_12);
    else if (SSL_CTX_set_ciphersuites(ctx, TLS_SUITES_13) != 1)
        tls_fail(err, errlen, "TLS 1.3 cipher suites", TLS_SUITES_13);
    else
        rv = tls_load_files(ctx, t, err, errlen);
    if (rv != 0) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

void tls_server_free(struct tls_server *t)
{
    if (!t)
        return;
    SSL_CTX_free(t->ctx);
    pthread_mutex_destroy(&t->lock);
    free(t->cert);
    free(t->key);
    free(t->client_ca);
    free(t);
}

int tls_server_new(const struct tls_server_files *files, struct tls_server **out, char *err,
                   size_t errlen)
{
    struct tls_server *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "TLS: out of memory");
        return -1;
    }
    pthread_mutex_init(&t->lock, NULL);
    t->cert = strdup(files->cert);
    t->key = strdup(files->key);
    bool ca = files->client_ca && files->client_ca[0];
    t->client_ca = ca ? strdup(files->client_ca) : NULL;
    if (!t->cert || !t->key || (ca && !t->client_ca)) {
        snprintf(err, errlen, "TLS: out of memory");
        tls_server_free(t);
        return -1;
    }
    t->ctx = tls_context(t, err, errlen);
    if (!t->ctx) {
        tls_server_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int tls_server_reload(struct tls_server *t, char *err, size_t errlen)
{
    SSL_CTX *ctx = tls_context(t, err, errlen);
    if (!ctx)
        return -1;
    pthread_mutex_lock(&t->lock);
    SSL_CTX *old = t->ctx;
    t->ctx = ctx;
    pthread_mutex_unlock(&t->lock);
    SSL_CTX_free(old);   /* connections made from it hold their own references */
    return 0;
}

struct tls_pipe *tls_server_accept(struct tls_server *t)
{
    pthread_mutex_lock(&t->lock);
    SSL *ssl = SSL_new(t->ctx);
    pthread_mutex_unlock(&t->lock);
    if (!ssl) {
        ERR_clear_error();
        return NULL;
    }
    SSL_set_accept_state(ssl);
    return tls_pipe_new(ssl);
}
