/* SPDX-License-Identifier: MIT */
/* test_client_token.c: libampclient's bearer token (amp_connect_opts.token)
 * against an ampd that requires tokens on its tls: listener: unary and
 * stream calls with the token are served; no token, a wrong one, and an
 * opts struct from a build before the token field (its size ends first)
 * get AMP_EUNAUTH with the daemon's words, and the connection stays
 * usable; a token that could not be a header value is AMP_EINVAL before
 * any connection; a connection the daemon closed when idle reopens and
 * still sends the token. The daemon exits 0 after each (no leak at exit
 * under ASan). */
#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_run.h"
#include "hostile.h"
#include "tls_fixture.h"

#define TOKEN "client-token-test_0123456789"
#define CALL_MS 120000
#define IDLE_S "1"                /* --idle-timeout */
#define IDLE_WAIT_MS 2500         /* past it: the daemon has closed an idle connection */
#define STREAM_BYTES (3u * 1024 * 1024 + 5)

static char token_path[TLS_FIXTURE_PATH_MAX];

static void start(struct daemon_proc *d, int *port, const char *idle)
{
    const char *extra[] = { "--tcp-require-token", "on", "--token-file", token_path,
                            idle ? "--idle-timeout" : NULL, idle, NULL };
    tls_fixture_start(d, NULL, NULL, extra, port);
}

static int connect_token(int port, size_t size, const char *token, amp_conn **out)
{
    char address[64], ca[TLS_FIXTURE_PATH_MAX];
    snprintf(address, sizeof address, "tls:127.0.0.1:%d", port);
    amp_connect_opts o = { .size = size, .tls_ca = tls_fixture_file("ca.pem", ca),
                           .token = token };
    return amp_connect_with(address, &o, out);
}

static void expect_unauth(amp_conn *c)
{
    int rc = tls_fixture_reverse(c);
    ck_assert_msg(rc == AMP_EUNAUTH, "%s (%s)", amp_strerror(rc), amp_last_message(c));
    ck_assert_msg(strstr(amp_last_message(c), "bearer token"), "message: %s",
                  amp_last_message(c));
    ck_assert_int_eq(amp_last_grpc_status(c), 16);
}

START_TEST(token_served)
{
    struct daemon_proc d;
    int port;
    start(&d, &port, NULL);
    amp_conn *c;
    ck_assert_int_eq(connect_token(port, sizeof(amp_connect_opts), TOKEN, &c), 0);
    ck_assert_int_eq(tls_fixture_reverse(c), 0);
    uint8_t *in = malloc(STREAM_BYTES);
    ck_assert_ptr_nonnull(in);
    for (size_t i = 0; i < STREAM_BYTES; i++)
        in[i] = (uint8_t)(i * 7);
    amp_step step = { .size = sizeof step, .kind = AMP_STEP_HISTOGRAM,
                      .hist = { .type = AMP_TYPE_UINT8 } };
    amp_hist h;
    amp_opts o = { .size = sizeof o, .timeout_ms = CALL_MS };
    int rc = amp_stream_mem(c, &o, &step, 1, in, STREAM_BYTES, NULL, NULL, &h, 1);
    ck_assert_msg(rc == 0, "stream: %s (%s)", amp_strerror(rc), amp_last_message(c));
    uint64_t total = 0;
    for (uint32_t b = 0; b < h.bins; b++)
        total += h.counts[b];
    ck_assert_uint_eq(total, STREAM_BYTES);
    amp_hist_free(&h);
    free(in);
    amp_close(c);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

START_TEST(missing_wrong_and_old_opts_refused)
{
    struct daemon_proc d;
    int port;
    start(&d, &port, NULL);
    amp_conn *c;
    ck_assert_int_eq(connect_token(port, sizeof(amp_connect_opts), NULL, &c), 0);
    expect_unauth(c);
    expect_unauth(c);   /* the connection stays usable */
    amp_close(c);
    ck_assert_int_eq(connect_token(port, sizeof(amp_connect_opts), TOKEN "x", &c), 0);
    expect_unauth(c);
    amp_close(c);
    /* A program built before the field: the token is not read. */
    ck_assert_int_eq(connect_token(port, offsetof(amp_connect_opts, token), TOKEN, &c), 0);
    expect_unauth(c);
    amp_close(c);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

START_TEST(bad_token_refused_locally)
{
    const char *bad[] = { "with space", "new\nline", "tab\there", "caf\xc3\xa9" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        amp_conn *c = (amp_conn *)&c;
        /* Port 1: the check comes before any connection is tried. */
        int rc = connect_token(1, sizeof(amp_connect_opts), bad[i], &c);
        ck_assert_msg(rc == AMP_EINVAL, "%zu: %s", i, amp_strerror(rc));
        ck_assert_ptr_null(c);
        ck_assert_msg(strstr(amp_last_message(NULL), "opts.token"), "message: %s",
                      amp_last_message(NULL));
    }
}
END_TEST

START_TEST(reconnect_sends_token)
{
    struct daemon_proc d;
    int port;
    start(&d, &port, IDLE_S);
    amp_conn *c;
    ck_assert_int_eq(connect_token(port, sizeof(amp_connect_opts), TOKEN, &c), 0);
    ck_assert_int_eq(tls_fixture_reverse(c), 0);
    hostile_sleep_ms(IDLE_WAIT_MS);
    int rc = tls_fixture_reverse(c);
    ck_assert_msg(rc == 0, "after the idle close: %s (%s)", amp_strerror(rc), amp_last_message(c));
    amp_close(c);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

static int write_token_file(void)
{
    char dir[] = "/tmp/amp-token-XXXXXX";
    if (!mkdtemp(dir))
        return -1;
    snprintf(token_path, sizeof token_path, "%s/tokens", dir);
    FILE *f = fopen(token_path, "w");
    if (!f)
        return -1;
    fprintf(f, "# NAME TOKEN\ntester %s\n", TOKEN);
    fclose(f);
    return chmod(token_path, 0600);
}

static void remove_token_file(void)
{
    unlink(token_path);
    char *slash = strrchr(token_path, '/');
    *slash = '\0';
    rmdir(token_path);
}

int main(void)
{
    if (tls_fixture_init() != 0 || write_token_file() != 0)
        return EXIT_FAILURE;
    Suite *s = suite_create("client_token");
    const TTest *const tests[] = {
        token_served,
        missing_wrong_and_old_opts_refused,
        bad_token_refused_locally,
        reconnect_sends_token,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 300);
    int rc = check_run(s, CK_FORK_GETENV);
    remove_token_file();
    tls_fixture_cleanup();
    return rc;
}
