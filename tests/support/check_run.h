/* check_run.h: the end of every test program's main(): run a libcheck
 * suite, print its results, and turn the failure count into an exit status
 * for ctest. Header only, so a test that needs nothing else from
 * tests/support still gets it by including one file. */
#ifndef AMP_TEST_CHECK_RUN_H
#define AMP_TEST_CHECK_RUN_H

#include <check.h>
#include <stdlib.h>

/* Runs every test of s with the given fork mode (CK_FORK_GETENV is
 * libcheck's default: each test in its own process unless CK_FORK=no;
 * CK_NOFORK keeps state such as an opened device across tests). Takes
 * ownership of s (freed with its runner). Returns EXIT_SUCCESS when no test
 * failed, else EXIT_FAILURE. */
static inline int check_run(Suite *s, enum fork_status fork)
{
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, fork);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
