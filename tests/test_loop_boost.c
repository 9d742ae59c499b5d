/* SPDX-License-Identifier: MIT */
/* test_loop_boost.c: --loop-boost over a real daemon, read from
 * /proc/PID/task: the I/O loops, and the runners and host workers the main
 * loop starts, run that many nice levels ahead of the daemon; PoCL's
 * workers (started by the opener, named after it) and the bulk-byte
 * readers run at the daemon's level and 10 behind it, not behind the loop
 * that started them; --loop-boost 0 leaves every loop at the daemon's.
 * Going ahead needs CAP_SYS_NICE or RLIMIT_NICE room, which the daemon
 * inherits from this test: where it has neither, the loops must stay at the
 * daemon's level and the daemon serve all the same.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "amp.h"
#include "check_run.h"
#include "daemon_proc.h"
#include "listen.h"
#include "proc_thread.h"

#define BOOST 4
#define BULK_LEN (16u * LISTEN_READER_MIN) /* a request its reader thread reads */
#define POLL_MS 20
#define POLL_TRIES 250

static int test_base(void)
{
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0);
    ck_assert_int_eq(errno, 0);
    return nice;
}

static void *try_ahead(void *arg)
{
    int *ok = arg;
    *ok = setpriority(PRIO_PROCESS, 0, test_base() - BOOST) == 0;
    return NULL;
}

/* Whether a thread of this process, so of the daemon it starts, may go
 * BOOST levels ahead: tried on a thread of its own, which then ends. */
static bool may_go_ahead(void)
{
    pthread_t t;
    int ok = 0;
    ck_assert_int_eq(pthread_create(&t, NULL, try_ahead, &ok), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    return ok;
}

static int nice_of(pid_t pid, const char *name)
{
    pid_t tid = 0;
    for (int i = 0; i < POLL_TRIES && !tid; i++) {
        tid = proc_thread_find(pid, name);
        if (!tid)
            usleep(POLL_MS * 1000);
    }
    ck_assert_msg(tid > 0, "the daemon has no thread named %s", name);
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t)tid);
    ck_assert_int_eq(errno, 0);
    return nice;
}

static int clamp(int nice)
{
    return nice < -20 ? -20 : nice > 19 ? 19 : nice;
}

/* Both loops (loop 0 is the main thread) and a runner the main loop
 * started run at nice. */
static void assert_loops_at(pid_t pid, int nice)
{
    ck_assert_int_eq(getpriority(PRIO_PROCESS, (id_t)pid), nice);
    ck_assert_int_eq(nice_of(pid, "ampd-io1"), nice);
    ck_assert_int_eq(nice_of(pid, "ampd-runner"), nice);
}

START_TEST(loops_run_ahead_of_the_daemon)
{
    int base = test_base(), ahead = may_go_ahead() ? clamp(base - BOOST) : base;
    struct daemon_proc d;
    static const char *const args[] = { "--io-threads", "2", "--loop-boost", "4", NULL };
    ck_assert_int_eq(daemon_start(&d, args), 0);
    assert_loops_at(d.pid, ahead);
    ck_assert_int_eq(nice_of(d.pid, "ampd-host0"), ahead);
    if (proc_thread_find(d.pid, "ampd-opener"))   /* PoCL's workers: the CPU device */
        ck_assert_int_eq(nice_of(d.pid, "ampd-opener"), base);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

START_TEST(no_boost_leaves_loops_at_the_daemons)
{
    int base = test_base();
    struct daemon_proc d;
    static const char *const args[] = { "--io-threads", "2", "--loop-boost", "0", NULL };
    ck_assert_int_eq(daemon_start(&d, args), 0);
    assert_loops_at(d.pid, base);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* A reader is started by the loop, ahead of the daemon, and goes 10
 * behind the daemon, not 10 behind the loop. One loop, two connections:
 * a large upload then goes to a reader (conn.c). */
START_TEST(bulk_readers_run_behind_the_daemon_not_the_loop)
{
    int base = test_base();
    struct daemon_proc d;
    static const char *const args[] = { "--io-threads", "1", "--loop-boost", "4", NULL };
    ck_assert_int_eq(daemon_start(&d, args), 0);
    amp_conn *idle, *busy;
    ck_assert_int_eq(amp_connect(d.address, &idle), 0);
    ck_assert_int_eq(amp_connect(d.address, &busy), 0);
    uint8_t *in = malloc(BULK_LEN);
    ck_assert_ptr_nonnull(in);
    for (size_t i = 0; i < BULK_LEN; i++)
        in[i] = (uint8_t)(i * 7);
    amp_transform_params p = { .op = AMP_OP_XOR, .value = 0x5a };
    void *out;
    size_t out_len;
    ck_assert_int_eq(amp_transform(busy, NULL, &p, in, BULK_LEN, &out, &out_len), 0);
    ck_assert_uint_eq(out_len, BULK_LEN);
    for (size_t i = 0; i < BULK_LEN; i += 4093)
        ck_assert_uint_eq(((uint8_t *)out)[i], (uint8_t)(in[i] ^ 0x5a));
    ck_assert_int_eq(nice_of(d.pid, "ampd-reader"), clamp(base + LISTEN_BULK_NICE));
    amp_free(out);
    free(in);
    amp_close(busy);
    amp_close(idle);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("loop_boost");
    const TTest *const tests[] = {
        loops_run_ahead_of_the_daemon,
        no_boost_leaves_loops_at_the_daemons,
        bulk_readers_run_behind_the_daemon_not_the_loop,
        NULL,
    };
    check_run_case(s, "boost", tests);
    return check_run(s, CK_FORK_GETENV);
}
