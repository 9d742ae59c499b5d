/* SPDX-License-Identifier: MIT */
/* check_run.h: what every test program's main() does with libcheck: one
 * TCase built from a list of test functions (check_run_case), and the run
 * that turns failures into an exit status for ctest (check_run). Header
 * only, so a test that needs nothing else from tests/support still gets it
 * by including one file.
 *
 * $AMP_TEST_CASE, when set, names the one test function to run (its
 * START_TEST name); a program with no test of that name fails, so a typo
 * cannot pass as a run. tests/README.md says how ctest runs one test. */
#ifndef AMP_TEST_CHECK_RUN_H
#define AMP_TEST_CHECK_RUN_H

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_RUN_CASE_ENV "AMP_TEST_CASE"

/* True unless $AMP_TEST_CASE names a test other than t. */
static inline bool check_run_wanted(const TTest *t)
{
    const char *only = getenv(CHECK_RUN_CASE_ENV);
    return !only || !*only || strcmp(only, t->name) == 0;
}

/* Adds a TCase called name to s holding every test of tests (a NULL-ended
 * list of START_TEST names) that check_run_wanted() keeps. Returns the
 * TCase, for its timeout and fixtures; s owns it. */
static inline TCase *check_run_case(Suite *s, const char *name, const TTest *const *tests)
{
    TCase *tc = tcase_create(name);
    for (; *tests; tests++)
        if (check_run_wanted(*tests))
            tcase_add_test(tc, *tests);
    suite_add_tcase(s, tc);
    return tc;
}

/* tcase_add_loop_test(tc, t, start, end) if check_run_wanted(t). */
static inline void check_run_loop(TCase *tc, const TTest *t, int start, int end)
{
    if (check_run_wanted(t))
        tcase_add_loop_test(tc, t, start, end);
}

/* check_run_case() with every test a loop test over _i in [start, end):
 * each case of tests runs once per variant the test indexes by _i. */
static inline TCase *check_run_loop_case(Suite *s, const char *name, const TTest *const *tests,
                                         int start, int end)
{
    TCase *tc = tcase_create(name);
    for (; *tests; tests++)
        check_run_loop(tc, *tests, start, end);
    suite_add_tcase(s, tc);
    return tc;
}

/* Runs every test of s with the given fork mode (CK_FORK_GETENV is
 * libcheck's default: each test in its own process unless CK_FORK=no;
 * CK_NOFORK keeps state such as an opened device across tests). Takes
 * ownership of s (freed with its runner). Returns EXIT_SUCCESS when no test
 * failed and at least one ran, else EXIT_FAILURE. */
static inline int check_run(Suite *s, enum fork_status fork)
{
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, fork);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    int ran = srunner_ntests_run(sr);
    srunner_free(sr);
    if (ran == 0)
        fprintf(stderr, "no test ran%s%s\n", getenv(CHECK_RUN_CASE_ENV) ? ": none is named " : "",
                getenv(CHECK_RUN_CASE_ENV) ? getenv(CHECK_RUN_CASE_ENV) : "");
    return failed || ran == 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
