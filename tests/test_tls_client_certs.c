/* SPDX-License-Identifier: MIT */
/* test_tls_client_certs.c: ampd --tls-client-ca: a client certificate the
 * CA signed is served; no certificate, or one from another CA, is refused
 * in the handshake (TLS 1.3 finishes the client's side first, so the
 * refusal may reach the client as its first call failing instead of
 * amp_connect_with()), and the daemon serves others and exits 0. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "hostile.h"
#include "tls_fixture.h"

static struct daemon_proc ampd;
static int port;

static void start(void)
{
    static char ca[TLS_FIXTURE_PATH_MAX];
    const char *const extra[] = { "--tls-client-ca", tls_fixture_file("ca.pem", ca), NULL };
    tls_fixture_start(&ampd, NULL, NULL, extra, &port);
}

/* Fails the test unless a client showing cert (NULL: none) is refused. */
static void expect_refused(const char *cert)
{
    amp_conn *c = NULL;
    int rc = tls_fixture_connect(port, "ca.pem", cert, NULL, &c);
    if (rc == 0) {
        rc = tls_fixture_reverse(c);
        ck_assert_msg(rc == AMP_EIO, "call with client certificate %s: %s (%s)",
                      cert ? cert : "(none)", amp_strerror(rc), amp_last_message(c));
        ck_assert_msg(strstr(amp_last_message(c), "TLS"), "'%s'", amp_last_message(c));
        amp_close(c);
        return;
    }
    ck_assert_msg(rc == AMP_ETLS, "connect with %s: %s", cert ? cert : "(none)", amp_strerror(rc));
}

START_TEST(signed_by_the_ca)
{
    start();
    amp_conn *c;
    ck_assert_int_eq(tls_fixture_connect(port, "ca.pem", "client", NULL, &c), 0);
    ck_assert_int_eq(tls_fixture_reverse(c), 0);
    amp_close(c);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

START_TEST(none_or_another_ca)
{
    start();
    expect_refused(NULL);
    expect_refused("other-client");
    hostile_assert_served(ampd.address);
    amp_conn *c;
    ck_assert_int_eq(tls_fixture_connect(port, "ca.pem", "client", NULL, &c), 0);
    ck_assert_int_eq(tls_fixture_reverse(c), 0);
    amp_close(c);
    ck_assert(hostile_wait_quiet(ampd.address, 1, HOSTILE_IO_MS));
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

int main(void)
{
    if (tls_fixture_init() != 0)
        return EXIT_FAILURE;
    Suite *s = suite_create("tls_client_certs");
    const TTest *const tests[] = {
        signed_by_the_ca,
        none_or_another_ca,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 120);
    int rc = check_run(s, CK_FORK_GETENV);
    tls_fixture_cleanup();
    return rc;
}
