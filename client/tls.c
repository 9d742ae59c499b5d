/* SPDX-License-Identifier: MIT */
/* tls.c: the client side of TLS (see tls.h).
 *
 * Each connection gets a context of its own, made here and released as
 * soon as its SSL holds it: a client makes few connections, and files
 * named per connection would otherwise need a cache keyed by path (a
 * reconnection reads them again, so renewed files are taken up). The
 * certificate is checked against the name the caller asked for, as any
 * TLS client must: an IP address against the certificate's IP entries,
 * a host name against its DNS entries (and sent as SNI).
 */
#include "tls.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"

/* ALPN wire form: a length byte, then the protocol name. */
static const unsigned char tls_alpn_h2[] = { 2, 'h', '2' };

static int tls_client_fail(char *err, size_t errlen, int code, const char *what, const char *path)
{
    unsigned long e = ERR_peek_last_error();
    const char *reason = e ? ERR_reason_error_string(e) : NULL;
    snprintf(err, errlen, "%s %s: %s", what, path ? path : "", reason ? reason : "failed");
    ERR_clear_error();
    return code;
}

static int tls_client_is_ip(const char *host)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

/* Trust, our certificate and the protocol, in a fresh context. */
static SSL_CTX *tls_client_context(const struct tls_client_opts *t, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        tls_client_fail(err, errlen, AMP_ENOMEM, "TLS:", "out of memory");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    const char *ca = t->ca, *cert = t->cert, *key = t->key;
    int ok = 0;
    if (ca ? SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1
           : SSL_CTX_set_default_verify_paths(ctx) != 1)
        tls_client_fail(err, errlen, AMP_ETLS, "TLS CA file", ca ? ca : "(system)");
    else if (cert && SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
        tls_client_fail(err, errlen, AMP_ETLS, "TLS client certificate", cert);
    else if (cert && SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1)
        tls_client_fail(err, errlen, AMP_ETLS, "TLS client key", key);
    else if (cert && SSL_CTX_check_private_key(ctx) != 1)
        tls_client_fail(err, errlen, AMP_ETLS, "TLS client key does not match its certificate:", key);
    else if (SSL_CTX_set_alpn_protos(ctx, tls_alpn_h2, sizeof tls_alpn_h2) != 0)
        tls_client_fail(err, errlen, AMP_ENOMEM, "TLS ALPN:", "out of memory");
    else
        ok = 1;
    if (!ok) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

/* The name the certificate must carry, and SNI for a host name. */
static int tls_client_name(SSL *ssl, const char *name)
{
    if (tls_client_is_ip(name))
        return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) == 1 ? 0 : -1;
    if (SSL_set_tlsext_host_name(ssl, name) != 1 || SSL_set1_host(ssl, name) != 1)
        return -1;
    return 0;
}

/* *dst = a copy of src, or NULL for NULL; -1 when out of memory. */
static int tls_client_copy(char **dst, const char *src)
{
    *dst = src ? strdup(src) : NULL;
    return src && !*dst ? -1 : 0;
}

/* A field of the caller's amp_connect_opts, or 0 where its size ends first. */
#define TLS_CLIENT_FIELD(o, field) (ABI_HAS(o, amp_connect_opts, field) ? (o)->field : 0)

int tls_client_opts_set(struct tls_client_opts *t, const amp_connect_opts *o)
{
    memset(t, 0, sizeof *t);
    if (!o)
        return 0;
    if (tls_client_copy(&t->ca, TLS_CLIENT_FIELD(o, tls_ca)) != 0 ||
        tls_client_copy(&t->cert, TLS_CLIENT_FIELD(o, tls_cert)) != 0 ||
        tls_client_copy(&t->key, TLS_CLIENT_FIELD(o, tls_key)) != 0 ||
        tls_client_copy(&t->server_name, TLS_CLIENT_FIELD(o, tls_server_name)) != 0)
        return AMP_ENOMEM;
    t->on = TLS_CLIENT_FIELD(o, tls) || t->ca || t->cert || t->key || t->server_name;
    return 0;
}

void tls_client_opts_free(struct tls_client_opts *t)
{
    free(t->ca);
    free(t->cert);
    free(t->key);
    free(t->server_name);
    memset(t, 0, sizeof *t);
}

int tls_client_new(const char *host, const struct tls_client_opts *t, struct tls_pipe **out,
                   char *err, size_t errlen)
{
    if (t->cert && !t->key) {
        snprintf(err, errlen, "a TLS client certificate needs its key (tls_key)");
        return AMP_EINVAL;
    }
    ERR_clear_error();
    SSL_CTX *ctx = tls_client_context(t, err, errlen);
    if (!ctx)
        return AMP_ETLS;
    SSL *ssl = SSL_new(ctx);
    SSL_CTX_free(ctx);   /* the SSL keeps its own reference */
    if (!ssl)
        return tls_client_fail(err, errlen, AMP_ENOMEM, "TLS:", "out of memory");
    const char *name = t->server_name ? t->server_name : host;
    if (tls_client_name(ssl, name) != 0) {
        SSL_free(ssl);
        return tls_client_fail(err, errlen, AMP_ETLS, "TLS server name", name);
    }
    SSL_set_connect_state(ssl);
    *out = tls_pipe_new(ssl);
    if (!*out) {
        snprintf(err, errlen, "out of memory");
        return AMP_ENOMEM;
    }
    return 0;
}

int tls_client_check(struct tls_pipe *p, char *err, size_t errlen)
{
    const unsigned char *proto;
    unsigned len;
    SSL_get0_alpn_selected(tls_pipe_ssl(p), &proto, &len);
    if (len == 2 && memcmp(proto, "h2", 2) == 0)
        return 0;
    snprintf(err, errlen, "the daemon did not choose HTTP/2 (ALPN h2) for TLS");
    return AMP_ETLS;
}
