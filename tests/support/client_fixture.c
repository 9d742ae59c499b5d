/* SPDX-License-Identifier: MIT */
/* client_fixture.c: one ampd per libampclient test program and a fresh
 * connection per test; see client_fixture.h. */
#include "client_fixture.h"

#include <stdio.h>
#include <stdlib.h>

#include "check_run.h"
#include "daemon_proc.h"
#include "dev_fixture.h"

amp_conn *client_conn;

/* The program's daemon; a file-scope global because libcheck's fixtures
 * take no argument. */
static struct daemon_proc client_ampd;

int client_fixture_run(Suite *s, const char *const *extra_args)
{
    if (daemon_start(&client_ampd, extra_args) != 0) {
        fprintf(stderr, "ampd did not start\n");
        return EXIT_FAILURE;
    }
    /* libcheck's default fork mode: each test in its own process, so one
     * that leaves its connection broken or crashes cannot spoil the next. */
    int result = check_run(s, CK_FORK_GETENV);
    int st = daemon_stop(&client_ampd);
    if (st != 0)
        fprintf(stderr, "ampd exited with status %d\n", st);
    return result == EXIT_SUCCESS && st == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

const char *client_fixture_address(void)
{
    return client_ampd.address;
}

const char *client_fixture_dir(void)
{
    return client_ampd.dir;
}

void client_fixture_open(void)
{
    int rc = amp_connect(client_ampd.address, &client_conn);
    ck_assert_msg(rc == 0, "connect %s: %s: %s", client_ampd.address, amp_strerror(rc),
                  amp_last_message(NULL));
}

void client_fixture_close(void)
{
    amp_close(client_conn);
    client_conn = NULL;
}

uint8_t *client_fixture_random(size_t n, uint64_t seed)
{
    uint8_t *p = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(p);
    fixture_random(p, n, seed);
    return p;
}

void client_fixture_expect_hist(const amp_hist *got, const struct hist_params *p,
                                const uint8_t *data, size_t n)
{
    struct hist_result want;
    ck_assert_int_eq(host_step_hist(p, data, n, &want), 0);
    ck_assert_uint_eq(got->bins, want.bins);
    for (uint32_t i = 0; i < want.bins; i++)
        ck_assert_msg(got->counts[i] == want.counts[i], "bin %u: %llu, want %llu", i,
                      (unsigned long long)got->counts[i], (unsigned long long)want.counts[i]);
    ck_assert_uint_eq(got->below, want.below);
    ck_assert_uint_eq(got->above, want.above);
    ck_assert_uint_eq(got->nan, want.nan);
    free(want.counts);
}
