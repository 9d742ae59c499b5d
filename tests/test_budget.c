/* SPDX-License-Identifier: MIT */
/* test_budget.c: budget.c's chains: a take from a connection's chain and
 * a client's budget beside it fits all of them or changes none, a refusal
 * names the widest limit short (the daemon's, the client's, then the
 * connection's), and says whose limit it is. */
#include <check.h>
#include <pthread.h>

#include "budget.h"
#include "check_run.h"

static pthread_mutex_t daemon_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t client_lock = PTHREAD_MUTEX_INITIALIZER;
static struct budget daemon, conn, other_conn, client;

static void setup(void)
{
    daemon = (struct budget){ .max = 100, .name = "--max-job-memory", .lock = &daemon_lock };
    conn = (struct budget){ .max = 50, .parent = &daemon, .name = "--max-connection-memory" };
    other_conn = (struct budget){ .max = 100, .parent = &daemon,
                                  .name = "--max-connection-memory" };
    client = (struct budget){ .max = 60, .name = "--max-client-memory", .owner = "token alice",
                              .lock = &client_lock };
}

static void assert_used(uint64_t d, uint64_t c, uint64_t o, uint64_t cl)
{
    ck_assert_uint_eq(budget_used(&daemon), d);
    ck_assert_uint_eq(budget_used(&conn), c);
    ck_assert_uint_eq(budget_used(&other_conn), o);
    ck_assert_uint_eq(budget_used(&client), cl);
}

START_TEST(take_both_is_all_or_nothing)
{
    ck_assert_ptr_null(budget_take_both(&conn, &client, 40));
    assert_used(40, 40, 0, 40);
    /* The connection is short: the client's budget is left as it was. */
    ck_assert_ptr_eq(budget_take_both(&conn, &client, 15), &conn);
    assert_used(40, 40, 0, 40);
    /* The client is short on another connection: that connection and the
     * daemon are left as they were. */
    ck_assert_ptr_eq(budget_take_both(&other_conn, &client, 25), &client);
    assert_used(40, 40, 0, 40);
    ck_assert_ptr_null(budget_take_both(&other_conn, &client, 20));
    assert_used(60, 40, 20, 60);
    budget_give(&conn, 40);
    budget_give(&client, 40);
    assert_used(20, 0, 20, 20);
    /* Without a client budget, the chain alone. */
    ck_assert_ptr_null(budget_take_both(&other_conn, NULL, 80));
    assert_used(100, 0, 100, 20);
}
END_TEST

START_TEST(widest_limit_named)
{
    ck_assert_ptr_null(budget_take(&other_conn, 90));
    /* Daemon, client and connection all short: the daemon's. */
    ck_assert_ptr_eq(budget_take_both(&conn, &client, 70), &daemon);
    budget_give(&other_conn, 90);
    /* Client and connection short: the client's. */
    ck_assert_ptr_eq(budget_take_both(&conn, &client, 70), &client);
    /* Only the connection: its own. */
    ck_assert_ptr_eq(budget_take_both(&conn, &client, 55), &conn);
    assert_used(0, 0, 0, 0);
}
END_TEST

START_TEST(refusal_names_the_owner)
{
    char msg[160];
    ck_assert_ptr_null(budget_take_both(&other_conn, &client, 40));
    budget_refusal(&client, 25, msg, sizeof msg);
    ck_assert_str_eq(msg, "--max-client-memory (60) is in use by token alice: 40 bytes held, "
                          "25 more wanted");
    budget_refusal(&client, 70, msg, sizeof msg);
    ck_assert_str_eq(msg, "--max-client-memory (60) is less than the 70 bytes wanted by "
                          "token alice");
    budget_refusal(&daemon, 70, msg, sizeof msg);
    ck_assert_str_eq(msg, "--max-job-memory (100) is in use: 40 bytes held, 70 more wanted");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("budget");
    TCase *tc = tcase_create("chains");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, take_both_is_all_or_nothing);
    tcase_add_test(tc, widest_limit_named);
    tcase_add_test(tc, refusal_names_the_owner);
    suite_add_tcase(s, tc);
    return check_run(s, CK_FORK_GETENV);
}
