/* SPDX-License-Identifier: MIT */
/* test_tls_refusals.c: what a tls: listener refuses, and that it goes on
 * serving afterwards: a certificate from a CA the client does not trust,
 * for another name, or expired; plain HTTP/2 to the TLS port and TLS to a
 * plain port; a handshake without ALPN h2; garbage instead of a
 * ClientHello and garbage records after a good handshake; handshakes
 * that stall, which count only against --max-unauthenticated-connections
 * until --handshake-timeout closes them. After each, a well-behaved call is
 * served over the Unix socket and over TLS, and ampd exits 0. */
#include <check.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "hostile.h"
#include "tls_fixture.h"

#define STALLED 3
#define HANDSHAKE_S "3"          /* --handshake-timeout in stalled_handshakes */
#define HANDSHAKE_MS 3000

static struct daemon_proc ampd;
static int port;

static void start(const char *cert, const char *const *extra)
{
    tls_fixture_start(&ampd, cert, NULL, extra, &port);
}

static void finish(void)
{
    hostile_assert_served(ampd.address);
    amp_conn *c;
    ck_assert_int_eq(tls_fixture_connect(port, "ca.pem", NULL, NULL, &c), 0);
    ck_assert_int_eq(tls_fixture_reverse(c), 0);
    amp_close(c);
    ck_assert(hostile_wait_quiet(ampd.address, 1, HOSTILE_IO_MS));
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}

/* Fails the test unless connecting with ca and name fails the handshake
 * with a reason containing why. */
static void expect_tls_refused(const char *ca, const char *name, const char *why)
{
    amp_conn *c = NULL;
    int rc = tls_fixture_connect(port, ca, NULL, name, &c);
    ck_assert_msg(rc == AMP_ETLS, "connect: %s (%s)", amp_strerror(rc), amp_last_message(NULL));
    ck_assert_msg(strstr(amp_last_message(NULL), why), "'%s' does not say '%s'",
                  amp_last_message(NULL), why);
    ck_assert_ptr_null(c);
}

/* Sends bytes on a new TCP connection to p; fails the test unless the
 * daemon closes it. */
static void send_and_expect_close(int p, const void *bytes, size_t len)
{
    struct hostile_reader r;
    int fd = hostile_connect_tcp(NULL, p);
    ck_assert_int_ge(fd, 0);
    hostile_reader_init(&r);
    hostile_send(fd, bytes, len);
    ck_assert_msg(hostile_reader_until_eof(&r, fd, HOSTILE_IO_MS) >= 0,
                  "the daemon kept the connection open");
    close(fd);
}

/* An OpenSSL client on a new TCP connection, no certificate checks,
 * offering alpn (wire form; NULL: no ALPN). Returns the SSL after its
 * handshake, or NULL when the handshake failed (*fd is then closed). */
static SSL *raw_tls(const unsigned char *alpn, size_t alpn_len, int *fd)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    ck_assert_ptr_nonnull(ctx);
    if (alpn)
        ck_assert_int_eq(SSL_CTX_set_alpn_protos(ctx, alpn, (unsigned)alpn_len), 0);
    SSL *ssl = SSL_new(ctx);
    SSL_CTX_free(ctx);
    *fd = hostile_connect_tcp(NULL, port);
    ck_assert_int_ge(*fd, 0);
    SSL_set_fd(ssl, *fd);
    if (SSL_connect(ssl) == 1)
        return ssl;
    ERR_clear_error();
    SSL_free(ssl);
    close(*fd);
    return NULL;
}

START_TEST(untrusted_ca)
{
    start(NULL, NULL);
    expect_tls_refused("other-ca.pem", NULL, "certificate verify failed");
    expect_tls_refused(NULL, NULL, "certificate verify failed");   /* the system's CAs */
    finish();
}
END_TEST

START_TEST(wrong_name)
{
    start(NULL, NULL);
    expect_tls_refused("ca.pem", "elsewhere.example", "certificate verify failed");
    finish();
}
END_TEST

START_TEST(expired_certificate)
{
    start("expired.pem", NULL);
    expect_tls_refused("ca.pem", NULL, "expired");
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

START_TEST(plain_http2_to_tls_port)
{
    start(NULL, NULL);
    uint8_t hello[64];
    send_and_expect_close(port, hello, hostile_hello(hello));
    char address[64];
    snprintf(address, sizeof address, "127.0.0.1:%d", port);
    char why[256];
    int rc = hostile_probe(address, why, sizeof why);
    ck_assert_msg(rc == AMP_EIO, "plain call on the TLS port: %s (%s)", amp_strerror(rc), why);
    finish();
}
END_TEST

START_TEST(tls_to_plain_port)
{
    static char plain[64];
    int plain_port = hostile_free_port();
    snprintf(plain, sizeof plain, "127.0.0.1:%d", plain_port);
    const char *const extra[] = { "--listen", plain, NULL };
    start(NULL, extra);
    char address[80];
    snprintf(address, sizeof address, "tls:%s", plain);
    amp_connect_opts o = { .size = sizeof o };
    amp_conn *c = NULL;
    int rc = amp_connect_with(address, &o, &c);
    ck_assert_msg(rc == AMP_ETLS, "TLS to a plain port: %s", amp_strerror(rc));
    hostile_assert_served(plain);
    finish();
}
END_TEST

START_TEST(no_alpn_h2)
{
    start(NULL, NULL);
    static const unsigned char http11[] = { 8, 'h', 't', 't', 'p', '/', '1', '.', '1' };
    static const unsigned char h2[] = { 2, 'h', '2' };
    int fd;
    ck_assert_ptr_null(raw_tls(NULL, 0, &fd));
    ck_assert_ptr_null(raw_tls(http11, sizeof http11, &fd));
    SSL *ok = raw_tls(h2, sizeof h2, &fd);   /* the same client, with h2: accepted */
    ck_assert_ptr_nonnull(ok);
    SSL_free(ok);
    close(fd);
    finish();
}
END_TEST

START_TEST(garbage)
{
    start(NULL, NULL);
    uint8_t junk[4096];
    srand(13);
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)rand();
    send_and_expect_close(port, junk, sizeof junk);
    /* A record header that claims a handshake record of 16 KiB + 1. */
    static const uint8_t too_long[] = { 0x16, 0x03, 0x01, 0x40, 0x01, 0, 0, 0 };
    send_and_expect_close(port, too_long, sizeof too_long);

    /* After a good handshake: application-data records that do not open. */
    static const unsigned char h2[] = { 2, 'h', '2' };
    int fd;
    SSL *ssl = raw_tls(h2, sizeof h2, &fd);
    ck_assert_ptr_nonnull(ssl);
    uint8_t rec[5 + 256] = { 0x17, 0x03, 0x03, 0x01, 0x00 };
    memcpy(rec + 5, junk, 256);
    struct hostile_reader r;
    hostile_reader_init(&r);
    hostile_send(fd, rec, sizeof rec);
    ck_assert_msg(hostile_reader_until_eof(&r, fd, HOSTILE_IO_MS) >= 0,
                  "the daemon kept a connection with a bad record open");
    SSL_free(ssl);
    close(fd);
    finish();
}
END_TEST

/* Polls Status on c until the daemon counts want connections (c's own
 * included); fails the test after HOSTILE_IO_MS. */
static void wait_connections(amp_conn *c, uint32_t want)
{
    amp_daemon_status st = { .size = sizeof st };
    long long end = hostile_now_ms() + HOSTILE_IO_MS;
    do {
        ck_assert_int_eq(amp_status(c, NULL, &st), 0);
        if (st.connections != want)
            hostile_sleep_ms(20);
    } while (st.connections != want && hostile_now_ms() < end);
    ck_assert_uint_eq(st.connections, want);
}

START_TEST(stalled_handshakes)
{
    /* The handshake deadline long enough that a loaded machine sees them
     * all admitted before the sweep closes them, short enough to wait out;
     * --request-timeout longer, so that it is not what closes them. Room
     * for STALLED unauthenticated connections, and one more kept for the
     * Unix socket's. */
    const char *const extra[] = { "--handshake-timeout", HANDSHAKE_S, "--request-timeout", "30",
                                  "--max-connections", "5",
                                  "--max-unauthenticated-connections", "3", NULL };
    start(NULL, extra);
    /* The status connection comes first, alone (the fixture's own check
     * of the port has gone). */
    amp_conn *status;
    ck_assert_int_eq(amp_connect(ampd.address, &status), 0);
    wait_connections(status, 1);
    int fds[STALLED + 1];
    static const uint8_t partial[] = { 0x16, 0x03, 0x01, 0x02, 0x00, 0x01 };  /* a ClientHello's start */
    long long t0 = hostile_now_ms();
    for (int i = 0; i < STALLED; i++) {
        fds[i] = hostile_connect_tcp(NULL, port);
        ck_assert_int_ge(fds[i], 0);
        if (i % 2)
            ck_assert_int_eq(hostile_send(fds[i], partial, sizeof partial), 0);
    }
    /* The daemon counts them (accepting is asynchronous) ... */
    wait_connections(status, STALLED + 1);
    /* ... they fill the unauthenticated pool: one more from the same peer
     * is not counted ... */
    fds[STALLED] = hostile_connect_tcp(NULL, port);
    ck_assert_int_ge(fds[STALLED], 0);
    hostile_sleep_ms(200);
    wait_connections(status, STALLED + 1);
    /* ... and the slot kept for the authenticated serves the Unix socket. */
    char why[256];
    int rc = hostile_probe(ampd.address, why, sizeof why);
    ck_assert_msg(rc == 0, "probe while the pool is full: %s (%s)", amp_strerror(rc), why);
    amp_close(status);
    for (int i = 0; i <= STALLED; i++) {
        struct hostile_reader r;
        hostile_reader_init(&r);
        ck_assert_msg(hostile_reader_until_eof(&r, fds[i], HOSTILE_IO_MS) >= 0,
                      "stalled handshake %d still open", i);
        close(fds[i]);
        if (i < STALLED)
            ck_assert_int_ge(hostile_now_ms() - t0, HANDSHAKE_MS * 8 / 10);
    }
    ck_assert_int_lt(hostile_now_ms() - t0, HANDSHAKE_MS + HOSTILE_IO_MS / 3);
    finish();
}
END_TEST

int main(void)
{
    if (tls_fixture_init() != 0)
        return EXIT_FAILURE;
    Suite *s = suite_create("tls_refusals");
    const TTest *const tests[] = {
        untrusted_ca,
        wrong_name,
        expired_certificate,
        plain_http2_to_tls_port,
        tls_to_plain_port,
        no_alpn_h2,
        garbage,
        stalled_handshakes,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 120);
    int rc = check_run(s, CK_FORK_GETENV);
    tls_fixture_cleanup();
    return rc;
}
