/* tls_pipe.c: a TLS connection over memory BIOs (see tls_pipe.h).
 *
 * Ciphertext from the peer goes into the read BIO; OpenSSL writes what it
 * makes into the write BIO, which the pipe empties into its own buffer
 * (out) a slice at a time, so that neither BIO grows to a whole 1 MiB
 * HTTP/2 frame and stays that big: out does, while the frame is sent,
 * and is let go once it is (TLS_PIPE_OUT_KEEP). Small pieces (a frame
 * header, a gRPC prefix) are gathered into one record instead of a
 * 22-byte-overhead record each. OpenSSL's error queue is per thread and
 * shared by every pipe of a loop: each operation clears it first and
 * takes its own error out of it.
 */
#include "tls_pipe.h"

#include <openssl/err.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Plaintext handed to SSL_write at once: a few records, so the write BIO
 * never holds more than this much ciphertext before it moves to out. */
#define TLS_PIPE_SLICE (4 * TLS_PIPE_RECORD)
/* out keeps at most this much memory between frames. */
#define TLS_PIPE_OUT_KEEP (64 * 1024)

struct tls_pipe {
    SSL *ssl;                  /* owned; owns rbio and wbio */
    BIO *rbio, *wbio;          /* ciphertext in, ciphertext out */
    uint8_t *out;              /* ciphertext taken from wbio: out_pos <= out_len <= out_cap */
    size_t out_pos, out_len, out_cap;
    size_t gather_len;         /* plaintext bytes waiting in gather: < TLS_PIPE_RECORD between calls */
    bool failed;               /* a fatal error: only tls_pipe_out and _why still work */
    bool notified;             /* close_notify queued: nothing more is written */
    char why[TLS_PIPE_WHY_MAX];
    uint8_t plain[TLS_PIPE_RECORD];  /* tls_pipe_read's result */
    uint8_t gather[TLS_PIPE_RECORD]; /* small pieces on their way into one record */
};

struct tls_pipe *tls_pipe_new(SSL *ssl)
{
    struct tls_pipe *p = calloc(1, sizeof *p);
    BIO *r = BIO_new(BIO_s_mem()), *w = BIO_new(BIO_s_mem());
    if (!p || !r || !w) {
        free(p);
        BIO_free(r);
        BIO_free(w);
        SSL_free(ssl);
        return NULL;
    }
    SSL_set_bio(ssl, r, w);   /* the SSL owns both from here */
    p->ssl = ssl;
    p->rbio = r;
    p->wbio = w;
    return p;
}

void tls_pipe_free(struct tls_pipe *p)
{
    if (!p)
        return;
    SSL_free(p->ssl);
    free(p->out);
    free(p);
}

SSL *tls_pipe_ssl(struct tls_pipe *p)
{
    return p->ssl;
}

const char *tls_pipe_why(const struct tls_pipe *p)
{
    return p->why;
}

/* Records why the pipe failed: OpenSSL's first reason, and the
 * certificate check's verdict when that is what failed. */
static int tls_pipe_fail(struct tls_pipe *p, const char *what)
{
    unsigned long e = ERR_peek_error();
    const char *reason = e ? ERR_reason_error_string(e) : NULL;
    long v = SSL_get_verify_result(p->ssl);
    if (!p->failed) {
        if (v != X509_V_OK)
            snprintf(p->why, sizeof p->why, "%s (%s)", reason ? reason : what,
                     X509_verify_cert_error_string(v));
        else
            snprintf(p->why, sizeof p->why, "%s", reason ? reason : what);
    }
    p->failed = true;
    ERR_clear_error();
    return TLS_PIPE_ERROR;
}

/* What an SSL call's result r <= 0 means for the owner. */
static int tls_pipe_result(struct tls_pipe *p, int r)
{
    switch (SSL_get_error(p->ssl, r)) {
    case SSL_ERROR_WANT_READ:
        return TLS_PIPE_AGAIN;
    case SSL_ERROR_ZERO_RETURN:
        return TLS_PIPE_EOF;
    default:
        return tls_pipe_fail(p, "TLS failed");
    }
}

int tls_pipe_recv(struct tls_pipe *p, const uint8_t *data, size_t len)
{
    while (len > 0) {
        int n = len > INT32_MAX ? INT32_MAX : (int)len;
        int w = BIO_write(p->rbio, data, n);
        if (w <= 0)
            return tls_pipe_fail(p, "out of memory");
        data += w;
        len -= (size_t)w;
    }
    return 0;
}

int tls_pipe_handshake(struct tls_pipe *p)
{
    if (p->failed)
        return TLS_PIPE_ERROR;
    if (SSL_is_init_finished(p->ssl))
        return 1;
    ERR_clear_error();
    int r = SSL_do_handshake(p->ssl);
    if (r == 1)
        return 1;
    int rv = tls_pipe_result(p, r);
    return rv == TLS_PIPE_EOF ? tls_pipe_fail(p, "the peer ended TLS during the handshake") : rv;
}

bool tls_pipe_ready(const struct tls_pipe *p)
{
    return !p->failed && !p->notified && SSL_is_init_finished(p->ssl);
}

bool tls_pipe_failed(const struct tls_pipe *p)
{
    return p->failed;
}

ssize_t tls_pipe_read(struct tls_pipe *p, const uint8_t **plain)
{
    if (p->failed)
        return TLS_PIPE_ERROR;
    ERR_clear_error();
    int r = SSL_read(p->ssl, p->plain, sizeof p->plain);
    if (r > 0) {
        *plain = p->plain;
        return r;
    }
    return tls_pipe_result(p, r);
}

/* Moves what OpenSSL wrote from wbio to the end of out. */
static int tls_pipe_take(struct tls_pipe *p)
{
    size_t n = BIO_ctrl_pending(p->wbio);
    if (n == 0)
        return 0;
    if (p->out_pos > 0) {   /* no one holds a pointer into out now: compact */
        memmove(p->out, p->out + p->out_pos, p->out_len - p->out_pos);
        p->out_len -= p->out_pos;
        p->out_pos = 0;
    }
    if (p->out_len + n > p->out_cap) {
        size_t cap = p->out_cap ? p->out_cap : TLS_PIPE_SLICE;
        while (cap < p->out_len + n)
            cap *= 2;
        uint8_t *o = realloc(p->out, cap);
        if (!o)
            return tls_pipe_fail(p, "out of memory");
        p->out = o;
        p->out_cap = cap;
    }
    int r = BIO_read(p->wbio, p->out + p->out_len, (int)n);
    if (r > 0)
        p->out_len += (size_t)r;
    return 0;
}

static int tls_pipe_seal(struct tls_pipe *p, const uint8_t *b, size_t len)
{
    ERR_clear_error();
    int r = SSL_write(p->ssl, b, (int)len);   /* a memory BIO takes it all */
    if (r <= 0)
        return tls_pipe_result(p, r) == TLS_PIPE_AGAIN ? tls_pipe_fail(p, "TLS write blocked")
                                                        : TLS_PIPE_ERROR;
    return tls_pipe_take(p);
}

/* Encrypts one piece: whole records straight from it while nothing is
 * gathered, the rest through gather. */
static int tls_pipe_write_piece(struct tls_pipe *p, const uint8_t *b, size_t len)
{
    while (len > 0) {
        if (p->gather_len == 0 && len >= TLS_PIPE_RECORD) {
            size_t k = len < TLS_PIPE_SLICE ? len / TLS_PIPE_RECORD * TLS_PIPE_RECORD : TLS_PIPE_SLICE;
            if (tls_pipe_seal(p, b, k) != 0)
                return TLS_PIPE_ERROR;
            b += k;
            len -= k;
            continue;
        }
        size_t k = TLS_PIPE_RECORD - p->gather_len;
        if (k > len)
            k = len;
        memcpy(p->gather + p->gather_len, b, k);
        p->gather_len += k;
        b += k;
        len -= k;
        if (p->gather_len == TLS_PIPE_RECORD) {
            p->gather_len = 0;
            if (tls_pipe_seal(p, p->gather, TLS_PIPE_RECORD) != 0)
                return TLS_PIPE_ERROR;
        }
    }
    return 0;
}

int tls_pipe_write(struct tls_pipe *p, const struct iovec *iov, int n)
{
    if (!tls_pipe_ready(p))
        return p->failed ? TLS_PIPE_ERROR : tls_pipe_fail(p, "write before the handshake");
    for (int i = 0; i < n; i++)
        if (tls_pipe_write_piece(p, iov[i].iov_base, iov[i].iov_len) != 0)
            return TLS_PIPE_ERROR;
    size_t rest = p->gather_len;
    p->gather_len = 0;
    return rest ? tls_pipe_seal(p, p->gather, rest) : 0;
}

int tls_pipe_close_notify(struct tls_pipe *p)
{
    if (p->notified || !tls_pipe_ready(p))
        return 0;
    p->notified = true;
    ERR_clear_error();
    SSL_shutdown(p->ssl);   /* 0: ours is queued, the peer's not seen; either way done */
    ERR_clear_error();
    return tls_pipe_take(p) == 0 ? 0 : TLS_PIPE_ERROR;
}

size_t tls_pipe_out(struct tls_pipe *p, const uint8_t **out)
{
    if (p->out_pos == p->out_len)
        tls_pipe_take(p);
    *out = p->out ? p->out + p->out_pos : NULL;   /* no buffer yet: nothing to send */
    return p->out_len - p->out_pos;
}

void tls_pipe_out_done(struct tls_pipe *p, size_t n)
{
    p->out_pos += n;
    if (p->out_pos < p->out_len)
        return;
    p->out_pos = p->out_len = 0;
    if (p->out_cap > TLS_PIPE_OUT_KEEP) {
        free(p->out);
        p->out = NULL;
        p->out_cap = 0;
    }
}

size_t tls_pipe_pending(const struct tls_pipe *p)
{
    return p->out_len - p->out_pos + BIO_ctrl_pending(p->wbio);
}
