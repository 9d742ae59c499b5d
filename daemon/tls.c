/* SPDX-License-Identifier: MIT */
/* tls.c: the OpenSSL context behind tls: listeners (see tls.h).
 *
 * The context is swapped whole on reload, under a mutex that also covers
 * SSL_new(): an SSL holds its own reference to the context it was made
 * from, so the old context lives on exactly as long as its connections.
 * gRPC over TLS is HTTP/2 over TLS, which needs ALPN h2 (RFC 9113 3.2);
 * a client that offers no ALPN at all is refused in the ClientHello
 * callback, because OpenSSL would otherwise complete such a handshake and
 * leave the refusal to a bare close after it.
 */
#include "tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/tls1.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The client CA: both the trust store for client certificates and the
 * list of CA names the server's CertificateRequest offers. */
static int tls_load_client_ca(SSL_CTX *ctx, const char *path, char *err, size_t errlen)
{
    STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(path);
    if (!names || SSL_CTX_load_verify_locations(ctx, path, NULL) != 1) {
        sk_X509_NAME_pop_free(names, X509_NAME_free);
        return tls_fail(err, errlen, "--tls-client-ca", path);
    }
    SSL_CTX_set_client_CA_list(ctx, names);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    return 0;
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
    else if (SSL_CTX_use_certificate_chain_file(ctx, t->cert) != 1)
        tls_fail(err, errlen, "--tls-cert", t->cert);
    else if (SSL_CTX_use_PrivateKey_file(ctx, t->key, SSL_FILETYPE_PEM) != 1)
        tls_fail(err, errlen, "--tls-key", t->key);
    else if (SSL_CTX_check_private_key(ctx) != 1)
        tls_fail(err, errlen, "--tls-key does not match --tls-cert:", t->key);
    else if (!t->client_ca || tls_load_client_ca(ctx, t->client_ca, err, errlen) == 0)
        rv = 0;
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
