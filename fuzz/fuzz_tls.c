/* SPDX-License-Identifier: MIT */
/* fuzz_tls.c: libFuzzer harness for a tls: connection's TLS leg.
 *
 * The bytes a client sends reach the daemon's TLS path exactly as
 * conn.c wires it: conn_tls_recv() (common/tls_pipe.c's pipe,
 * daemon/tls.c's context: ALPN h2 required, no renegotiation, TLS 1.2 and
 * 1.3) into an h2 session whose calls are all answered UNIMPLEMENTED, and
 * conn_tls_seal() plus tls_pipe_out() for what goes back.
 *
 * Input: mode (1 byte), then pieces `length (2 bytes, big-endian) | bytes`.
 * Mode bit 0 clear: every piece is raw ciphertext from the client (a
 * ClientHello, or garbage records). Set: an in-memory OpenSSL client
 * (ALPN h2, trusting the harness's certificate) completes a handshake
 * first, then each piece is plaintext it seals into records (HTTP/2 over
 * TLS), except pieces whose length has its top bit set, which go raw
 * (garbage records in a live session). The daemon's output is taken after
 * every piece; in mode 1 the client reads it, as a peer would.
 *
 * Invariants (abort): the pipe's ciphertext only grows by what one piece
 * can cause (no unbounded buffering), and after a fatal TLS error nothing
 * but the alert is sealed. Leaks are LeakSanitizer's.
 */
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn_tls.h"
#include "h2.h"
#include "tls.h"

#define FUZZ_TLS_MAX_MESSAGE (64 * 1024)
#define FUZZ_TLS_MAX_STREAMS 8
/* Ciphertext one piece (at most 32 KiB of plaintext) can make wait: the
 * session's answers, sealed a batch at a time. */
#define FUZZ_TLS_OUT_BOUND (4 * 1024 * 1024)

static struct tls_server *fuzz_server;
static SSL_CTX *fuzz_client_ctx;

/* A self-signed P-256 certificate for "localhost", in files for
 * tls_server_new(), made once. */
static void fuzz_tls_make_cert(const char *cert_path, const char *key_path)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    if (!key || !x)
        abort();
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600L * 24 * 365);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1,
                               -1, 0);
    X509_set_issuer_name(x, name);
    if (!X509_sign(x, key, EVP_sha256()))
        abort();
    FILE *c = fopen(cert_path, "w"), *k = fopen(key_path, "w");
    if (!c || !k || !PEM_write_X509(c, x) || !PEM_write_PrivateKey(k, key, NULL, NULL, 0, NULL, NULL))
        abort();
    fclose(c);
    fclose(k);
    if (!SSL_CTX_add_client_CA(fuzz_client_ctx, x) ||
        !X509_STORE_add_cert(SSL_CTX_get_cert_store(fuzz_client_ctx), x))
        abort();
    X509_free(x);
    EVP_PKEY_free(key);
}

static void fuzz_tls_init(void)
{
    static const unsigned char h2[] = { 2, 'h', '2' };
    fuzz_client_ctx = SSL_CTX_new(TLS_client_method());
    if (!fuzz_client_ctx || SSL_CTX_set_alpn_protos(fuzz_client_ctx, h2, sizeof h2) != 0)
        abort();
    SSL_CTX_set_verify(fuzz_client_ctx, SSL_VERIFY_PEER, NULL);
    char dir[] = "/tmp/fuzz_tls-XXXXXX", cert[64], key[64], err[256];
    if (!mkdtemp(dir))
        abort();
    snprintf(cert, sizeof cert, "%s/cert.pem", dir);
    snprintf(key, sizeof key, "%s/key.pem", dir);
    fuzz_tls_make_cert(cert, key);
    struct tls_server_files files = { .cert = cert, .key = key };
    if (tls_server_new(&files, &fuzz_server, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_tls: %s\n", err);
        abort();
    }
    unlink(cert);
    unlink(key);
    rmdir(dir);
}

/* --- an h2 session that answers every call UNIMPLEMENTED --------------------- */

static enum status_code fuzz_tls_start(struct h2_call *call, const char *path,
                                       enum h2_call_kind *kind, char *msg, size_t msglen,
                                       void *ctx)
{
    (void)call;
    (void)kind;
    (void)ctx;
    snprintf(msg, msglen, "fuzz_tls: %s", path);
    return STATUS_UNIMPLEMENTED;
}

static enum status_code fuzz_tls_message(struct h2_call *call, const uint8_t *msg, size_t len,
                                         char *err, size_t errlen, void *ctx)
{
    (void)call, (void)msg, (void)len, (void)err, (void)errlen, (void)ctx;
    return STATUS_OK;
}

static void fuzz_tls_call(struct h2_call *call, void *ctx)
{
    (void)call;
    (void)ctx;
}

static const struct h2_handlers fuzz_tls_handlers = {
    .start = fuzz_tls_start,
    .message = fuzz_tls_message,
    .end = fuzz_tls_call,
    .closed = fuzz_tls_call,
    .sent = fuzz_tls_call,
};

/* --- the connection ----------------------------------------------------------- */

struct fuzz_tls_conn {
    struct tls_pipe *server;
    struct h2_session *h2;
    struct tls_pipe *client;   /* mode 1's peer, or NULL */
    bool dead;                 /* the daemon side would have closed */
};

/* What conn_flush does: seal and take everything the socket would take;
 * the client (if any) reads it. */
static void fuzz_tls_flush(struct fuzz_tls_conn *fc)
{
    size_t taken = 0;
    for (;;) {
        const uint8_t *out;
        size_t n = tls_pipe_out(fc->server, &out);
        if (n == 0) {
            bool failed = tls_pipe_failed(fc->server);
            int rv = conn_tls_seal(fc->server, fc->h2);
            if (failed && tls_pipe_pending(fc->server) > 0)
                abort();   /* sealed something after a fatal error */
            if (rv <= 0)
                break;
            continue;
        }
        taken += n;
        if (taken > FUZZ_TLS_OUT_BOUND)
            abort();
        if (fc->client)
            tls_pipe_recv(fc->client, out, n);
        tls_pipe_out_done(fc->server, n);
    }
    if (!fc->client)
        return;
    const uint8_t *plain;
    while (tls_pipe_read(fc->client, &plain) > 0)
        ;   /* HTTP/2 frames from the daemon: a real client would parse them */
}

/* Moves the client's ciphertext to the daemon, as its socket would. */
static void fuzz_tls_deliver(struct fuzz_tls_conn *fc, struct tls_pipe *from)
{
    const uint8_t *out;
    size_t n;
    while (!fc->dead && (n = tls_pipe_out(from, &out)) > 0) {
        if (conn_tls_recv(fc->server, fc->h2, out, n) != CONN_TLS_OK)
            fc->dead = true;
        tls_pipe_out_done(from, n);
        fuzz_tls_flush(fc);
    }
}

static bool fuzz_tls_handshake(struct fuzz_tls_conn *fc)
{
    SSL *ssl = SSL_new(fuzz_client_ctx);
    if (!ssl)
        return false;
    SSL_set_connect_state(ssl);
    SSL_set1_host(ssl, "localhost");
    fc->client = tls_pipe_new(ssl);
    for (int round = 0; fc->client && round < 8 && !fc->dead; round++) {
        int hs = tls_pipe_handshake(fc->client);
        fuzz_tls_deliver(fc, fc->client);
        if (hs == 1)
            return true;
        if (hs < 0)
            break;
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!fuzz_server)
        fuzz_tls_init();
    if (size < 1)
        return 0;
    struct h2_config cfg = { .max_message_bytes = FUZZ_TLS_MAX_MESSAGE,
                             .max_streams = FUZZ_TLS_MAX_STREAMS };
    struct fuzz_tls_conn fc = { .server = tls_server_accept(fuzz_server) };
    fc.h2 = h2_session_new(&cfg, &fuzz_tls_handlers, &fc);
    if (!fc.server || !fc.h2)
        abort();
    bool mode_client = data[0] & 1;
    data++, size--;
    if (mode_client && !fuzz_tls_handshake(&fc))
        abort();   /* a real client must always get through */
    while (size >= 2 && !fc.dead) {
        size_t len = (size_t)data[0] << 8 | data[1];
        bool raw = !mode_client || (len & 0x8000);
        len &= 0x7fff;
        data += 2, size -= 2;
        if (len > size)
            len = size;
        if (raw) {
            if (conn_tls_recv(fc.server, fc.h2, data, len) != CONN_TLS_OK)
                fc.dead = true;
            fuzz_tls_flush(&fc);
        } else {
            struct iovec iov = { (void *)data, len };
            if (tls_pipe_write(fc.client, &iov, 1) != 0)
                break;
            fuzz_tls_deliver(&fc, fc.client);
        }
        data += len, size -= len;
    }
    h2_session_free(fc.h2);
    tls_pipe_free(fc.server);
    tls_pipe_free(fc.client);
    return 0;
}
