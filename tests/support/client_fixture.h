/* SPDX-License-Identifier: MIT */
/* client_fixture.h: what the libampclient integration tests share: one
 * real ampd per test program (daemon_proc.h), a connection to it opened
 * and closed around each test (a libcheck checked fixture), reproducible
 * input bytes, a histogram check against the CPU reference, and an
 * assertion that says why a call failed.
 *
 * A test program's main() starts nothing itself: it builds its suite,
 * adds client_fixture_open/client_fixture_close as the checked fixture of
 * the test cases that want client_conn, and returns
 * client_fixture_run(suite, extra_args). */
#ifndef AMP_TEST_CLIENT_FIXTURE_H
#define AMP_TEST_CLIENT_FIXTURE_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "amp.h"
#include "host_step.h"

/* The running test's connection to the fixture's ampd: set by
 * client_fixture_open(), closed and reset to NULL by
 * client_fixture_close(). Owned by the fixture: a test never closes it. */
extern amp_conn *client_conn;

/* Starts ampd with extra_args (NULL-terminated argv tail, may be NULL),
 * runs s against it (check_run with libcheck's default fork mode), then
 * stops it with SIGTERM. Takes ownership of s. Returns EXIT_SUCCESS only
 * when ampd started, every test passed and ampd exited with status 0 (a
 * leak LeakSanitizer finds in the daemon makes that status nonzero). */
int client_fixture_run(Suite *s, const char *const *extra_args);

/* The running ampd's address ("unix:<dir>/ampd.sock"), valid while
 * client_fixture_run() runs the suite. */
const char *client_fixture_address(void);

/* The daemon's temporary directory, for a test's scratch files; valid for
 * as long as client_fixture_address(). The test unlinks what it makes
 * there: the directory is removed only if empty when ampd stops. */
const char *client_fixture_dir(void);

/* Checked setup and teardown: connect client_conn to the daemon (failing
 * the test if that fails) and close it again. */
void client_fixture_open(void);
void client_fixture_close(void);

/* n reproducible pseudo-random bytes from seed, in a buffer of at least
 * one byte that the caller frees with free(). Fails the test if out of
 * memory. */
uint8_t *client_fixture_random(size_t n, uint64_t seed);

/* Fails the test unless got, a histogram the daemon computed, matches
 * host_step_hist(p) over data[0, n): every bin, below, above and nan. */
void client_fixture_expect_hist(const amp_hist *got, const struct hist_params *p,
                                const uint8_t *data, size_t n);

/* Fails the test unless call returns 0, naming the code and the daemon's
 * message on client_conn. The call is evaluated once (the message must be
 * the one this call left). */
#define CLIENT_CHECK_OK(call)                                                                      \
    do {                                                                                           \
        int client_rc_ = (call);                                                                   \
        ck_assert_msg(client_rc_ == 0, "%s: %s", amp_strerror(client_rc_),                         \
                      amp_last_message(client_conn));                                              \
    } while (0)

#endif
