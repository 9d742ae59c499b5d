/* SPDX-License-Identifier: MIT */
/* test_spin.c: busy-polling's window (common/spin.c): it closes when its
 * time is up, and sooner once another thread wanted the poller's CPU,
 * which a second thread spinning on the same CPU forces (the kernel
 * shares a CPU between two runnable threads within milliseconds; the
 * window here is a minute). No sockets involved. */
#define _GNU_SOURCE   /* sched_setaffinity, pthread_setaffinity_np */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/resource.h>

#include "check_run.h"
#include "monotonic.h"
#include "spin.h"

#define SPIN_TEST_NS 1000000u        /* a window this test waits out: 1 ms */
#define SPIN_TEST_LONG_NS 60000000000u   /* one only a lost CPU closes: 60 s */
#define SPIN_TEST_TRIES 100              /* 1 ms windows tried before one must run its time */

/* This thread's involuntary switches so far: the one thing besides time
 * that may close a window. */
static long spin_test_preempted(void)
{
    struct rusage ru;
    ck_assert_int_eq(getrusage(RUSAGE_THREAD, &ru), 0);
    return ru.ru_nivcsw;
}

START_TEST(closes_when_time_is_up)
{
    struct spin s;
    spin_start(&s, 0);
    ck_assert(!spin_on(&s));
    /* On a busy machine (CI runs tests side by side) the kernel may take
     * the CPU within the window, which closes it early, rightly: such a
     * try must show the lost CPU, and one try of many must run its time. */
    for (int tries = 0;; tries++) {
        ck_assert_msg(tries < SPIN_TEST_TRIES, "every window closed early");
        long preempted = spin_test_preempted();
        uint64_t t0 = monotonic_ns();
        spin_start(&s, SPIN_TEST_NS);
        while (spin_on(&s) && monotonic_ns() - t0 < SPIN_TEST_LONG_NS) {
        }
        if (monotonic_ns() - t0 >= SPIN_TEST_NS)
            break;
        ck_assert_msg(spin_test_preempted() > preempted, "closed early with the CPU kept");
    }
}
END_TEST

START_TEST(endless_window_does_not_wrap)
{
    struct spin s;
    spin_start(&s, UINT64_MAX);
    ck_assert(spin_on(&s));
}
END_TEST

static atomic_bool rival_stop;

/* Spins on the CPU it was started on until told to stop. */
static void *rival(void *arg)
{
    (void)arg;
    while (!atomic_load(&rival_stop)) {
    }
    return NULL;
}

START_TEST(closes_once_another_thread_wants_the_cpu)
{
    cpu_set_t all, one;
    ck_assert_int_eq(sched_getaffinity(0, sizeof all, &all), 0);
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0);
    pthread_attr_t a;
    pthread_attr_init(&a);
    ck_assert_int_eq(pthread_attr_setaffinity_np(&a, sizeof one, &one), 0);
    pthread_t t;
    atomic_store(&rival_stop, false);
    ck_assert_int_eq(pthread_create(&t, &a, rival, NULL), 0);
    pthread_attr_destroy(&a);
    struct spin s;
    uint64_t t0 = monotonic_ns();
    spin_start(&s, SPIN_TEST_LONG_NS);
    while (spin_on(&s)) {
    }
    uint64_t took = monotonic_ns() - t0;
    atomic_store(&rival_stop, true);
    pthread_join(t, NULL);
    ck_assert_int_eq(sched_setaffinity(0, sizeof all, &all), 0);   /* for the cases after, unforked */
    ck_assert_msg(took < SPIN_TEST_LONG_NS, "spun the whole window beside a rival");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("spin");
    const TTest *const tests[] = {
        closes_when_time_is_up,
        endless_window_does_not_wrap,
        closes_once_another_thread_wants_the_cpu,
        NULL,
    };
    check_run_case(s, "core", tests);
    return check_run(s, CK_FORK_GETENV);
}
