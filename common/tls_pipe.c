/* SPDX-License-Identifier: MIT */
/* tls_pipe.c: a TLS connection over a BIO of its own (see tls_pipe.h).
 *
 * OpenSSL reads ciphertext from the pipe's input buffer, which the owner
 * may read the socket straight into (tls_pipe_recv_dest), and seals
 * records straight into the pipe's out buffer while tls_pipe_write runs:
 * memory BIOs would copy every byte once more each way. What OpenSSL
 * writes at other times (handshake flights, alerts, a key update's
 * answer) may come while an asynchronous write still sends from out, so
 * it waits in a memory BIO (spill) and joins out once out is free. out
 * grows to a whole 1 MiB HTTP/2 frame while the frame is sent and is let
 * go once it is (TLS_PIPE_OUT_KEEP). Small pieces (a frame header, a gRPC
 * prefix) are gathered into one record instead of a 22-byte-overhead
 * record each. OpenSSL's error queue is per thread and shared by every
 * pipe of a loop: each operation clears it first and takes its own error
 * out of it.
 */
#include "tls_pipe.h"

#include <openssl/err.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* Plaintext handed to SSL_write at once: a few records. */
#define TLS_PIPE_SLICE (4 * TLS_PIPE_RECORD)
/* out keeps at most this much memory between frames. */
#define TLS_PIPE_OUT_KEEP (64 * 1024)

struct tls_pipe {
    SSL *ssl;                  /* owned; owns its BIO and spill */
    BIO *spill;                /* ciphertext written outside tls_pipe_write, on its way to out */
    uint8_t *in;               /* ciphertext received: in_pos <= in_len <= in_cap */
    size_t in_pos, in_len, in_cap;
    uint8_t *out;              /* ciphertext to send: out_pos <= out_len <= out_cap */
    size_t out_pos, out_len, out_cap;
    size_t gather_len;         /* plaintext bytes waiting in gather: < TLS_PIPE_RECORD between calls */
    bool sealing;              /* inside tls_pipe_write: OpenSSL may append to out directly */
    bool failed;               /* a fatal error: only tls_pipe_out and _why still work */
    bool notified;             /* close_notify queued: nothing more is written */
    char why[TLS_PIPE_WHY_MAX];
    uint8_t plain[TLS_PIPE_RECORD];  /* tls_pipe_read's result */
    uint8_t gather[TLS_PIPE_RECORD]; /* small pieces on their way into one record */
};

/* Makes room for more bytes past *len in the buffer *buf of *cap bytes,
 * first bytes before *pos dropped (nothing points into it then). */
static int tls_pipe_reserve(uint8_t **buf, size_t *pos, size_t *len, size_t *cap, size_t more)
{
    if (*pos > 0 && *len + more > *cap) {
        memmove(*buf, *buf + *pos, *len - *pos);
        *len -= *pos;
        *pos = 0;
    }
    return grow_bytes(buf, cap, TLS_PIPE_SLICE, *len + more);
}

static int tls_pipe_fail(struct tls_pipe *p, const char *what);

/* --- the pipe's BIO: OpenSSL's end of in and out ------------------------- */

static int tls_pipe_bio_read(BIO *b, char *buf, int len)
{
    struct tls_pipe *p = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    size_t n = p->in_len - p->in_pos;
    if (n == 0) {
        BIO_set_retry_read(b);
        return -1;
    }
    if (n > (size_t)len)
        n = (size_t)len;
    memcpy(buf, p->in + p->in_pos, n);
    p->in_pos += n;
    if (p->in_pos == p->in_len)
        p->in_pos = p->in_len = 0;
    return (int)n;
}

static int tls_pipe_bio_write(BIO *b, const char *buf, int len)
{
    struct tls_pipe *p = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    if (!p->sealing)
        return BIO_write(p->spill, buf, len);
    if (tls_pipe_reserve(&p->out, &p->out_pos, &p->out_len, &p->out_cap, (size_t)len) != 0)
        return tls_pipe_fail(p, "out of memory");   /* SSL_write fails with it */
    memcpy(p->out + p->out_len, buf, (size_t)len);
    p->out_len += (size_t)len;
    return len;
}

static long tls_pipe_bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b;
    (void)num;
    (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;   /* nothing to flush: the owner sends out */
}

static BIO_METHOD *tls_pipe_method;
static pthread_once_t tls_pipe_method_once = PTHREAD_ONCE_INIT;

static void tls_pipe_method_init(void)
{
    int index = BIO_get_new_index();
    BIO_METHOD *m = index == -1 ? NULL : BIO_meth_new(index | BIO_TYPE_SOURCE_SINK, "tls_pipe");
    if (m && (BIO_meth_set_read(m, tls_pipe_bio_read) != 1 ||
              BIO_meth_set_write(m, tls_pipe_bio_write) != 1 ||
              BIO_meth_set_ctrl(m, tls_pipe_bio_ctrl) != 1)) {
        BIO_meth_free(m);
        m = NULL;
    }
    tls_pipe_method = m;   /* lives as long as the process */
}

struct tls_pipe *tls_pipe_new(SSL *ssl)
{
    pthread_once(&tls_pipe_method_once, tls_pipe_method_init);
    struct tls_pipe *p = calloc(1, sizeof *p);
    BIO *b = tls_pipe_method ? BIO_new(tls_pipe_method) : NULL;
    BIO *spill = BIO_new(BIO_s_mem());
    if (!p || !b || !spill) {
        free(p);
        BIO_free(b);
        BIO_free(spill);
        SSL_free(ssl);
        return NULL;
    }
    BIO_set_data(b, p);
    BIO_set_init(b, 1);
    SSL_set_bio(ssl, b, b);   /* the SSL owns b from here */
    p->ssl = ssl;
    p->spill = spill;
    return p;
}

void tls_pipe_free(struct tls_pipe *p)
{
    if (!p)
        return;
    SSL_free(p->ssl);
    BIO_free(p->spill);
    free(p->in);
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

uint8_t *tls_pipe_recv_dest(struct tls_pipe *p, size_t *room)
{
    if (p->failed ||
        tls_pipe_reserve(&p->in, &p->in_pos, &p->in_len, &p->in_cap, TLS_PIPE_IN_READ) != 0)
        return NULL;
    *room = p->in_cap - p->in_len;
    return p->in + p->in_len;
}

int tls_pipe_recv(struct tls_pipe *p, const uint8_t *data, size_t len)
{
    if (len == 0)
        return 0;
    if (p->in && data == p->in + p->in_len && len <= p->in_cap - p->in_len) {
        p->in_len += len;   /* read in place (tls_pipe_recv_dest) */
        return 0;
    }
    if (tls_pipe_reserve(&p->in, &p->in_pos, &p->in_len, &p->in_cap, len) != 0)
        return tls_pipe_fail(p, "out of memory");
    memcpy(p->in + p->in_len, data, len);
    p->in_len += len;
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

ssize_t tls_pipe_read_into(struct tls_pipe *p, uint8_t *dest, size_t room)
{
    if (p->failed)
        return TLS_PIPE_ERROR;
    ERR_clear_error();
    int r = SSL_read(p->ssl, dest, room > INT32_MAX ? INT32_MAX : (int)room);
    return r > 0 ? r : tls_pipe_result(p, r);
}

ssize_t tls_pipe_read(struct tls_pipe *p, const uint8_t **plain)
{
    *plain = p->plain;
    return tls_pipe_read_into(p, p->plain, sizeof p->plain);
}

/* Moves what OpenSSL wrote to spill to the end of out. */
static int tls_pipe_take(struct tls_pipe *p)
{
    size_t n = BIO_ctrl_pending(p->spill);
    if (n == 0)
        return 0;
    if (tls_pipe_reserve(&p->out, &p->out_pos, &p->out_len, &p->out_cap, n) != 0)
        return tls_pipe_fail(p, "out of memory");
    int r = BIO_read(p->spill, p->out + p->out_len, (int)n);
    if (r > 0)
        p->out_len += (size_t)r;
    return 0;
}

static int tls_pipe_seal(struct tls_pipe *p, const uint8_t *b, size_t len)
{
    ERR_clear_error();
    int r = SSL_write(p->ssl, b, (int)len);   /* the pipe's BIO takes it all */
    if (r <= 0)
        return tls_pipe_result(p, r) == TLS_PIPE_AGAIN ? tls_pipe_fail(p, "TLS write blocked")
                                                        : TLS_PIPE_ERROR;
    return 0;
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

/* Seals the n pieces of iov behind what spill holds. */
static int tls_pipe_write_all(struct tls_pipe *p, const struct iovec *iov, int n)
{
    for (int i = 0; i < n; i++)
        if (tls_pipe_write_piece(p, iov[i].iov_base, iov[i].iov_len) != 0)
            return TLS_PIPE_ERROR;
    size_t rest = p->gather_len;
    p->gather_len = 0;
    return rest ? tls_pipe_seal(p, p->gather, rest) : 0;
}

int tls_pipe_write(struct tls_pipe *p, const struct iovec *iov, int n)
{
    if (!tls_pipe_ready(p))
        return p->failed ? TLS_PIPE_ERROR : tls_pipe_fail(p, "write before the handshake");
    if (tls_pipe_take(p) != 0)
        return TLS_PIPE_ERROR;
    p->sealing = true;   /* no one holds a pointer into out now */
    int rv = tls_pipe_write_all(p, iov, n);
    p->sealing = false;
    return rv;
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
    return p->out_len - p->out_pos + BIO_ctrl_pending(p->spill);
}
