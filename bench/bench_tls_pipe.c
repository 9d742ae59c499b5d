/* SPDX-License-Identifier: MIT */
/* bench_tls_pipe.c: what TLS costs the one thread that runs a connection,
 * beside what the cipher alone costs.
 *
 * Both ends of a tls: connection seal and open on the thread that runs it
 * (the daemon's I/O loop, the client's calling thread), so one core's
 * TLS speed bounds one stream (issue 13). For each TLS 1.3 suite this
 * program measures, on one thread:
 *
 *   pipe    a pair of common/tls_pipe.c pipes (a server and a client
 *           SSL, handshaken in memory) moving --size bytes as ampd's
 *           connections do: 1 MiB HTTP/2 DATA frames (a 9-byte header,
 *           then the data) sealed by one pipe, the ciphertext put 256 KiB
 *           at a time into the other's input buffer (tls_pipe_recv_dest,
 *           where a socket read puts it: this memcpy stands for the
 *           kernel's), and the records opened straight into a destination
 *           buffer (tls_pipe_read_into, as into a staging buffer);
 *   cipher  the bare AEAD through EVP on the same bytes: each 16 KiB
 *           record sealed into a small buffer and opened from it into the
 *           destination.
 *
 * GB/s is bytes one way over the thread's CPU seconds for sealing and
 * opening them both; best of --reps after one warm-up. The ratio is what
 * the pipe and OpenSSL's record layer (their copies and bookkeeping) leave
 * of the cipher's speed. Every repetition's output is compared with the
 * input: a mismatch exits 1, a failure to run exits 2.
 */
#define _GNU_SOURCE
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_certs.h"
#include "bench_util.h"
#include "tls_pipe.h"

#define TP_SIZE_DEFAULT "256M"
#define TP_REPS_DEFAULT 3
#define TP_REPS_MAX 64
#define TP_SEED 1313
#define TP_FRAME (1024 * 1024)          /* the DATA frames ampd sends */
#define TP_FRAME_HEADER 9               /* HTTP/2's frame header */
#define TP_SOCKET_READ (256 * 1024)     /* ciphertext moved at once, as a socket read */
#define TP_HANDSHAKE_ROUNDS 16
#define TP_TAG 16
#define TP_KEY_MAX 32
#define TP_IV 12

struct tp_suite {
    const char *name;                   /* TLS 1.3 suite */
    const EVP_CIPHER *(*cipher)(void);  /* its AEAD */
};

static const struct tp_suite tp_suites[] = {
    {"TLS_AES_128_GCM_SHA256", EVP_aes_128_gcm},
    {"TLS_AES_256_GCM_SHA384", EVP_aes_256_gcm},
    {"TLS_CHACHA20_POLY1305_SHA256", EVP_chacha20_poly1305},
};
#define TP_NSUITES (sizeof tp_suites / sizeof tp_suites[0])

struct tp_opts {
    size_t size;
    int reps;
};

static int tp_failures;

static double tp_cpu(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void tp_check(const uint8_t *got, const uint8_t *want, size_t n, const char *what,
                     const char *suite)
{
    if (memcmp(got, want, n) != 0) {
        fprintf(stderr, "bench_tls_pipe: %s with %s: the output differs from the input\n", what,
                suite);
        tp_failures++;
    }
}

/* --- the pipe ------------------------------------------------------------------------------ */

/* Moves at most TP_SOCKET_READ bytes of from's ciphertext into to's input
 * buffer, as one socket read; returns how many (0: none waits). */
static size_t tp_move(struct tls_pipe *from, struct tls_pipe *to)
{
    const uint8_t *out;
    size_t n = tls_pipe_out(from, &out), room;
    if (n == 0)
        return 0;
    uint8_t *dest = tls_pipe_recv_dest(to, &room);
    if (!dest)
        bench_die("tls_pipe_recv_dest: out of memory");
    n = n < TP_SOCKET_READ ? n : TP_SOCKET_READ;
    n = n < room ? n : room;
    memcpy(dest, out, n);
    if (tls_pipe_recv(to, dest, n) != 0)
        bench_die("tls_pipe_recv: %s", tls_pipe_why(to));
    tls_pipe_out_done(from, n);
    return n;
}

static SSL_CTX *tp_context(const SSL_METHOD *m, const char *suite)
{
    SSL_CTX *ctx = SSL_CTX_new(m);
    if (!ctx || SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
        SSL_CTX_set_ciphersuites(ctx, suite) != 1)
        bench_die("an OpenSSL context for %s", suite);
    return ctx;
}

/* A server and a client pipe with suite, their handshake done. */
static void tp_pair(const struct bench_certs *certs, const char *suite, struct tls_pipe **server,
                    struct tls_pipe **client)
{
    SSL_CTX *sc = tp_context(TLS_server_method(), suite);
    SSL_CTX *cc = tp_context(TLS_client_method(), suite);
    SSL_CTX_set_num_tickets(sc, 0);
    if (SSL_CTX_use_certificate_chain_file(sc, certs->cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(sc, certs->key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_load_verify_locations(cc, certs->ca, NULL) != 1)
        bench_die("loading the certificates in %s", certs->dir);
    SSL_CTX_set_verify(cc, SSL_VERIFY_PEER, NULL);
    SSL *s = SSL_new(sc), *c = SSL_new(cc);
    SSL_CTX_free(sc);   /* each SSL holds its own reference */
    SSL_CTX_free(cc);
    if (!s || !c)
        bench_die("SSL_new: out of memory");
    SSL_set_accept_state(s);
    SSL_set_connect_state(c);
    *server = tls_pipe_new(s);
    *client = tls_pipe_new(c);
    if (!*server || !*client)
        bench_die("tls_pipe_new: out of memory");
    for (int i = 0; i < TP_HANDSHAKE_ROUNDS; i++) {
        int hc = tls_pipe_handshake(*client);
        while (tp_move(*client, *server) > 0)
            ;
        int hs = tls_pipe_handshake(*server);
        while (tp_move(*server, *client) > 0)
            ;
        if (hc < 0 || hs < 0)
            bench_die("the handshake with %s failed: %s%s", suite, tls_pipe_why(*client),
                      tls_pipe_why(*server));
        if (tls_pipe_ready(*server) && tls_pipe_ready(*client))
            return;
    }
    bench_die("the handshake with %s did not finish", suite);
}

/* Opens every record waiting in client into dst at *got. */
static void tp_open(struct tls_pipe *client, uint8_t *dst, size_t cap, size_t *got)
{
    for (;;) {
        ssize_t n = tls_pipe_read_into(client, dst + *got, cap - *got);
        if (n == TLS_PIPE_AGAIN)
            return;
        if (n <= 0)
            bench_die("tls_pipe_read_into: %s", tls_pipe_why(client));
        *got += (size_t)n;
    }
}

/* The frames of size bytes of src through a fresh pair into dst (its
 * frame headers too: size + one header per frame bytes); CPU seconds. */
static double tp_pipe_once(const struct bench_certs *certs, const char *suite, const uint8_t *src,
                           size_t size, uint8_t *dst, size_t dst_cap)
{
    struct tls_pipe *server, *client;
    tp_pair(certs, suite, &server, &client);
    uint8_t header[TP_FRAME_HEADER] = {0};
    size_t got = 0;
    double t0 = tp_cpu();
    for (size_t off = 0; off < size; off += TP_FRAME) {
        size_t len = size - off < TP_FRAME ? size - off : TP_FRAME;
        struct iovec iov[2] = {{header, sizeof header}, {(void *)(src + off), len}};
        if (tls_pipe_write(server, iov, 2) != 0)
            bench_die("tls_pipe_write: %s", tls_pipe_why(server));
        while (tp_move(server, client) > 0)
            tp_open(client, dst, dst_cap, &got);
    }
    double t = tp_cpu() - t0;
    tls_pipe_free(server);
    tls_pipe_free(client);
    if (got != dst_cap)
        bench_die("the pipe with %s opened %zu bytes of %zu", suite, got, dst_cap);
    return t;
}

/* Checks what tp_pipe_once put in dst: each frame's header, then its data. */
static void tp_pipe_check(const uint8_t *src, size_t size, const uint8_t *dst, const char *suite)
{
    static const uint8_t header[TP_FRAME_HEADER];
    for (size_t off = 0; off < size; off += TP_FRAME) {
        size_t len = size - off < TP_FRAME ? size - off : TP_FRAME;
        tp_check(dst, header, sizeof header, "a frame header through the pipe", suite);
        tp_check(dst + sizeof header, src + off, len, "data through the pipe", suite);
        dst += sizeof header + len;
    }
}

/* --- the cipher alone ---------------------------------------------------------------------- */

/* Seals each TLS_PIPE_RECORD bytes of src into a record buffer and opens
 * it into dst, with a fresh nonce per record; CPU seconds. */
static double tp_cipher_once(const EVP_CIPHER *cipher, const uint8_t *src, size_t size,
                             uint8_t *dst)
{
    static uint8_t record[TLS_PIPE_RECORD];
    uint8_t key[TP_KEY_MAX] = {1}, iv[TP_IV] = {2}, tag[TP_TAG];
    EVP_CIPHER_CTX *seal = EVP_CIPHER_CTX_new(), *open = EVP_CIPHER_CTX_new();
    if (!seal || !open || EVP_EncryptInit_ex(seal, cipher, NULL, key, iv) != 1 ||
        EVP_DecryptInit_ex(open, cipher, NULL, key, iv) != 1)
        bench_die("EVP: cannot set up the cipher");
    double t0 = tp_cpu();
    for (size_t off = 0; off < size; off += TLS_PIPE_RECORD) {
        int len = (int)(size - off < TLS_PIPE_RECORD ? size - off : TLS_PIPE_RECORD), n;
        memcpy(iv, &off, sizeof off);   /* a nonce per record, as TLS's sequence number */
        if (EVP_EncryptInit_ex(seal, NULL, NULL, NULL, iv) != 1 ||
            EVP_EncryptUpdate(seal, record, &n, src + off, len) != 1 ||
            EVP_EncryptFinal_ex(seal, record + n, &n) != 1 ||
            EVP_CIPHER_CTX_ctrl(seal, EVP_CTRL_AEAD_GET_TAG, TP_TAG, tag) != 1 ||
            EVP_DecryptInit_ex(open, NULL, NULL, NULL, iv) != 1 ||
            EVP_DecryptUpdate(open, dst + off, &n, record, len) != 1 ||
            EVP_CIPHER_CTX_ctrl(open, EVP_CTRL_AEAD_SET_TAG, TP_TAG, tag) != 1 ||
            EVP_DecryptFinal_ex(open, dst + off + n, &n) != 1)
            bench_die("EVP: a record did not seal and open");
    }
    double t = tp_cpu() - t0;
    EVP_CIPHER_CTX_free(seal);
    EVP_CIPHER_CTX_free(open);
    return t;
}

/* --- runs, options, main ------------------------------------------------------------------- */

static double tp_best(const double *t, int n)
{
    double b = t[0];
    for (int i = 1; i < n; i++)
        b = t[i] < b ? t[i] : b;
    return b;
}

static void tp_suite_row(const struct tp_opts *o, const struct bench_certs *certs,
                         const struct tp_suite *s, const uint8_t *src, uint8_t *dst)
{
    size_t frames = (o->size + TP_FRAME - 1) / TP_FRAME;
    size_t dst_cap = o->size + frames * TP_FRAME_HEADER;
    double pipe[TP_REPS_MAX], cipher[TP_REPS_MAX];
    for (int r = -1; r < o->reps; r++) {
        memset(dst, 0, dst_cap);
        double t = tp_pipe_once(certs, s->name, src, o->size, dst, dst_cap);
        tp_pipe_check(src, o->size, dst, s->name);
        memset(dst, 0, o->size);
        double u = tp_cipher_once(s->cipher(), src, o->size, dst);
        tp_check(dst, src, o->size, "data through the cipher", s->name);
        if (r >= 0) {
            pipe[r] = t;
            cipher[r] = u;
        }
    }
    double gp = (double)o->size / tp_best(pipe, o->reps) / 1e9;
    double gc = (double)o->size / tp_best(cipher, o->reps) / 1e9;
    char size[16];
    bench_size_label(o->size, size, sizeof size, true);
    printf("%-30s %5s %9.2f %11.2f %6.2f\n", s->name, size, gp, gc, gp / gc);
}

static void tp_usage(void)
{
    fprintf(stderr,
            "usage: bench_tls_pipe [--size N] [--reps N]\n"
            "  --size  bytes sealed and opened per repetition (default " TP_SIZE_DEFAULT
            "; K, M, G suffixes)\n"
            "  --reps  best of N, after one warm-up (default 3, at most 64)\n");
    exit(2);
}

static void tp_parse(int argc, char **argv, struct tp_opts *o)
{
    o->size = (size_t)bench_parse_size(TP_SIZE_DEFAULT);
    o->reps = TP_REPS_DEFAULT;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            tp_usage();
        const char *v = argv[++i];
        if (strcmp(argv[i - 1], "--size") == 0)
            o->size = (size_t)bench_parse_size(v);
        else if (strcmp(argv[i - 1], "--reps") == 0)
            o->reps = atoi(v);
        else
            tp_usage();
    }
    if (o->size == 0 || o->size > SIZE_MAX / 4 || o->reps < 1 || o->reps > TP_REPS_MAX)
        tp_usage();
}

int main(int argc, char **argv)
{
    struct tp_opts o;
    tp_parse(argc, argv, &o);
    struct bench_certs certs;
    bench_certs_make(&certs, "bench_tls_pipe", BENCH_SOURCE_DIR);
    size_t frames = (o.size + TP_FRAME - 1) / TP_FRAME;
    uint8_t *src = bench_alloc_touched(o.size);
    uint8_t *dst = bench_alloc_touched(o.size + frames * TP_FRAME_HEADER);
    bench_random(src, o.size, TP_SEED);
    printf("# %s; one thread; GB/s = bytes one way / CPU s of seal + open; best of %d after "
           "1 warm-up\n", OpenSSL_version(OPENSSL_VERSION), o.reps);
    printf("%-30s %5s %9s %11s %6s\n", "suite", "size", "pipe GB/s", "cipher GB/s", "ratio");
    for (size_t i = 0; i < TP_NSUITES; i++)
        tp_suite_row(&o, &certs, &tp_suites[i], src, dst);
    free(src);
    free(dst);
    bench_certs_remove(&certs);
    return tp_failures ? 1 : 0;
}
