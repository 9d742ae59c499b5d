/* SPDX-License-Identifier: MIT */
/* test_client_targets.c: libampclient over several daemons, as
 * amp_connect("ADDR1,ADDR2") asks: connections spread over the addresses
 * in turn, a stopped daemon is passed over (at connect and when a
 * connection to it ends), a call refused UNAVAILABLE (here a proxy's 503,
 * support/http_status_server.c) goes to the next daemon, and malformed
 * lists are refused naming the entry. Two real ampd on Unix sockets. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "address.h"
#include "amp.h"
#include "check_run.h"
#include "daemon_proc.h"
#include "http_status_server.h"

#define NCONNS 4

static struct daemon_proc a, b;
static char both[700];

static void setup(void)
{
    ck_assert_int_eq(daemon_start(&a, NULL), 0);
    ck_assert_int_eq(daemon_start(&b, NULL), 0);
    snprintf(both, sizeof both, "%s,%s", a.address, b.address);
}

static void teardown(void)
{
    ck_assert_int_eq(daemon_stop(&a), 0);
    if (daemon_alive(&b))
        ck_assert_int_eq(daemon_stop(&b), 0);
    else
        daemon_wait(&b);
}

/* Unary jobs the daemon at address has completed. */
static uint64_t completed(const char *address)
{
    amp_conn *c;
    ck_assert_int_eq(amp_connect(address, &c), AMP_OK);
    amp_daemon_status st = { .size = sizeof st };
    ck_assert_int_eq(amp_status(c, NULL, &st), AMP_OK);
    amp_close(c);
    return st.jobs_completed;
}

/* One reverse on c, which must succeed. */
static void reverse_ok(amp_conn *c)
{
    void *out;
    size_t len;
    int rc = amp_reverse(c, NULL, "abc", 3, &out, &len);
    ck_assert_msg(rc == AMP_OK, "%s: %s", amp_strerror(rc), amp_last_message(c));
    ck_assert(len == 3 && memcmp(out, "cba", 3) == 0);
    amp_free(out);
}

/* NCONNS connections to address, one reverse each. */
static void reverse_on_new_connections(const char *address)
{
    amp_conn *c[NCONNS];
    for (int i = 0; i < NCONNS; i++) {
        int rc = amp_connect(address, &c[i]);
        ck_assert_msg(rc == AMP_OK, "connect %s: %s", address, amp_last_message(NULL));
    }
    for (int i = 0; i < NCONNS; i++) {
        reverse_ok(c[i]);
        amp_close(c[i]);
    }
}

START_TEST(connections_spread_over_the_list)
{
    uint64_t a0 = completed(a.address), b0 = completed(b.address);
    reverse_on_new_connections(both);
    ck_assert_uint_eq(completed(a.address) - a0, NCONNS / 2);
    ck_assert_uint_eq(completed(b.address) - b0, NCONNS / 2);
}
END_TEST

START_TEST(a_stopped_daemon_is_passed_over)
{
    ck_assert_int_eq(daemon_stop(&b), 0);
    uint64_t a0 = completed(a.address);
    reverse_on_new_connections(both);
    ck_assert_uint_eq(completed(a.address) - a0, NCONNS);
}
END_TEST

START_TEST(a_connection_whose_daemon_stops_moves_on)
{
    /* Connections until one lands on b, then b stops under it. */
    amp_conn *c = NULL;
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(amp_connect(both, &c), AMP_OK);
        uint64_t b0 = completed(b.address);
        reverse_ok(c);
        if (completed(b.address) > b0)
            break;
        amp_close(c);
        c = NULL;
    }
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(daemon_stop(&b), 0);
    uint64_t a0 = completed(a.address);
    reverse_ok(c);   /* b is gone: reconnects, and b refuses, so to a */
    reverse_ok(c);
    ck_assert_uint_eq(completed(a.address) - a0, 2);
    amp_close(c);
}
END_TEST

START_TEST(unavailable_goes_to_the_next)
{
    char path[300], list[700];
    snprintf(path, sizeof path, "%s/proxy.sock", a.dir);
    struct http_status_server *proxy = http_status_server_start(path, 503);
    ck_assert_ptr_nonnull(proxy);
    snprintf(list, sizeof list, "unix:%s,%s", path, a.address);
    uint64_t a0 = completed(a.address);
    reverse_on_new_connections(list);
    /* Half the connections began at the proxy, were refused and went on. */
    ck_assert_int_eq(http_status_server_answered(proxy), NCONNS / 2);
    ck_assert_uint_eq(completed(a.address) - a0, NCONNS);
    /* With only the proxy, the refusal is the caller's. */
    amp_conn *c;
    snprintf(list, sizeof list, "unix:%s", path);
    ck_assert_int_eq(amp_connect(list, &c), AMP_OK);
    void *out;
    size_t len;
    ck_assert_int_eq(amp_reverse(c, NULL, "abc", 3, &out, &len), AMP_EUNAVAIL);
    amp_close(c);
    http_status_server_stop(proxy);
}
END_TEST

START_TEST(all_stopped_says_so)
{
    ck_assert_int_eq(daemon_stop(&b), 0);
    char list[700];
    snprintf(list, sizeof list, "%s,%s", b.address, b.address);
    amp_conn *c;
    ck_assert_int_eq(amp_connect(list, &c), AMP_ECONNECT);
    ck_assert_msg(strstr(amp_last_message(NULL), "none of the 2 addresses"), "%s",
                  amp_last_message(NULL));
}
END_TEST

START_TEST(bad_lists_are_refused)
{
    static const struct {
        const char *list, *want;
    } bad[] = {
        { "unix:/a,,unix:/b", "address 2 of 'unix:/a,,unix:/b' is empty" },
        { "unix:/a,", "address 2 of 'unix:/a,' is empty" },
        { "unix:/a,http://h:1", "address 2 of 'unix:/a,http://h:1'" },
        { "h:1,h:1,h:1,h:1,h:1,h:1,h:1,h:1,h:1,h:1,h:1,h:1,h:1,h:1,h:1,h:1,h:1",
          "more than 16 addresses" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        amp_conn *c;
        ck_assert_int_eq(amp_connect(bad[i].list, &c), AMP_EADDR);
        ck_assert_msg(strstr(amp_last_message(NULL), bad[i].want), "%s: %s", bad[i].list,
                      amp_last_message(NULL));
    }
    struct address out[ADDRESS_LIST_MAX];
    size_t n;
    char err[512];
    ck_assert_int_eq(address_parse_list("unix:/x,h:1,[::1]:2", out, ADDRESS_LIST_MAX, &n, err,
                                        sizeof err), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(out[0].path, "/x");
    ck_assert_str_eq(out[1].host, "h");
    ck_assert_int_eq(out[2].port, 2);
}
END_TEST

START_TEST(ampctl_takes_a_list)
{
    ck_assert_int_eq(daemon_stop(&b), 0);
    const char *bin = getenv("AMPCTL_BIN");
    ck_assert_ptr_nonnull(bin);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s --address %s,%s reverse stressed 2>&1", bin, b.address,
             a.address);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    char out[256] = "";
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_str_eq(out, "desserts");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_targets");
    const TTest *const tests[] = {
        connections_spread_over_the_list,
        a_stopped_daemon_is_passed_over,
        a_connection_whose_daemon_stops_moves_on,
        unavailable_goes_to_the_next,
        all_stopped_says_so,
        bad_lists_are_refused,
        ampctl_takes_a_list,
        NULL,
    };
    TCase *tc = check_run_case(s, "targets", tests);
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, setup, teardown);
    return check_run(s, CK_FORK_GETENV);
}
