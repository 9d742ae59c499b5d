/* SPDX-License-Identifier: MIT */
/* test_hazard.c: wait lists derived from declared buffer accesses
 * (daemon/hazard.c), on hand-built command sequences with fake events; no
 * OpenCL. Also checks that every reference taken is given back. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "hazard.h"

enum { Q_IN, Q_KERNEL, Q_OUT };

#define NEVENTS 16
static int refs[NEVENTS];
static int events[NEVENTS];   /* event i is &events[i] */

static void fake_retain(void *ev)
{
    refs[(int *)ev - events]++;
}

static void fake_release(void *ev)
{
    int i = (int *)ev - events;
    ck_assert_int_gt(refs[i], 0);
    refs[i]--;
}

static const struct hazard_ops ops = {fake_retain, fake_release};

static void setup(void)
{
    memset(refs, 0, sizeof refs);
}

/* Enqueues command ev on q with accesses acc and checks its wait list is
 * exactly the events listed in want (terminated by -1), in any order. */
static void command(int ev, unsigned q, const struct hazard_access *acc, size_t nacc,
                    const int *want)
{
    void *waits[HAZARD_MAX_WAITS(4)];
    size_t n = hazard_waits(acc, nacc, q, waits);
    size_t nwant = 0;
    while (want[nwant] >= 0)
        nwant++;
    ck_assert_msg(n == nwant, "event %d waits for %zu events, want %zu", ev, n, nwant);
    for (size_t i = 0; i < nwant; i++) {
        int found = 0;
        for (size_t j = 0; j < n; j++)
            found |= waits[j] == &events[want[i]];
        ck_assert_msg(found, "event %d does not wait for event %d", ev, want[i]);
    }
    hazard_commit(&ops, acc, nacc, q, &events[ev]);
}

#define W(...) ((const int[]){__VA_ARGS__, -1})
#define NONE ((const int[]){-1})

static void expect_all_released(struct hazard_buf *bufs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        hazard_buf_clear(&ops, &bufs[i]);
    for (int i = 0; i < NEVENTS; i++)
        ck_assert_msg(refs[i] == 0, "event %d still holds %d references", i, refs[i]);
}

START_TEST(write_read_read_write_on_different_queues)
{
    struct hazard_buf a = {0};
    struct hazard_access wa = {&a, HAZARD_WRITE}, ra = {&a, HAZARD_READ};
    command(0, Q_IN, &wa, 1, NONE);       /* copy in */
    command(1, Q_KERNEL, &ra, 1, W(0));   /* RAW */
    command(2, Q_OUT, &ra, 1, W(0));      /* RAW; not after 1: readers don't wait */
    command(3, Q_IN, &wa, 1, W(1, 2));    /* WAR on both readers; 0 is its own queue */
    expect_all_released(&a, 1);
}
END_TEST

START_TEST(same_queue_needs_no_waits)
{
    struct hazard_buf a = {0};
    struct hazard_access wa = {&a, HAZARD_WRITE}, ra = {&a, HAZARD_READ};
    command(0, Q_KERNEL, &wa, 1, NONE);
    command(1, Q_KERNEL, &ra, 1, NONE);
    command(2, Q_KERNEL, &ra, 1, NONE);
    command(3, Q_KERNEL, &wa, 1, NONE);
    expect_all_released(&a, 1);
}
END_TEST

START_TEST(write_after_write)
{
    struct hazard_buf a = {0};
    struct hazard_access wa = {&a, HAZARD_WRITE};
    command(0, Q_IN, &wa, 1, NONE);
    command(1, Q_KERNEL, &wa, 1, W(0));
    command(2, Q_IN, &wa, 1, W(1));
    expect_all_released(&a, 1);
}
END_TEST

START_TEST(pipeline_copy_out_overlaps_next_step)
{
    /* in -> A (copy in); k1: A -> B; out: B; k2 reads B, writes C; out: C.
     * The copy out of B and k2 both only read B: neither waits for the
     * other. */
    struct hazard_buf bufs[3] = {{0}};
    struct hazard_buf *a = &bufs[0], *b = &bufs[1], *c = &bufs[2];
    command(0, Q_IN, (struct hazard_access[]){{a, HAZARD_WRITE}}, 1, NONE);
    command(1, Q_KERNEL, (struct hazard_access[]){{a, HAZARD_READ}, {b, HAZARD_WRITE}}, 2, W(0));
    command(2, Q_OUT, (struct hazard_access[]){{b, HAZARD_READ}}, 1, W(1));
    command(3, Q_KERNEL, (struct hazard_access[]){{b, HAZARD_READ}, {c, HAZARD_WRITE}}, 2, NONE);
    command(4, Q_OUT, (struct hazard_access[]){{c, HAZARD_READ}}, 1, W(3));
    /* Reusing B for a new write must wait for the copy out reading it. */
    command(5, Q_KERNEL, (struct hazard_access[]){{c, HAZARD_READ}, {b, HAZARD_WRITE}}, 2, W(2));
    expect_all_released(bufs, 3);
}
END_TEST

START_TEST(chunks_stream_through_two_buffers)
{
    /* Double buffering: copy in chunk i+1 while the kernel runs on chunk i. */
    struct hazard_buf bufs[2] = {{0}};
    struct hazard_access w0 = {&bufs[0], HAZARD_WRITE}, r0 = {&bufs[0], HAZARD_READ};
    struct hazard_access w1 = {&bufs[1], HAZARD_WRITE}, r1 = {&bufs[1], HAZARD_READ};
    command(0, Q_IN, &w0, 1, NONE);
    command(1, Q_KERNEL, &r0, 1, W(0));
    command(2, Q_IN, &w1, 1, NONE);        /* runs beside kernel 1 */
    command(3, Q_KERNEL, &r1, 1, W(2));
    command(4, Q_IN, &w0, 1, W(1));        /* waits only for the kernel reading buffer 0 */
    expect_all_released(bufs, 2);
}
END_TEST

START_TEST(duplicate_waits_are_merged)
{
    struct hazard_buf bufs[2] = {{0}};
    struct hazard_access both_w[] = {{&bufs[0], HAZARD_WRITE}, {&bufs[1], HAZARD_WRITE}};
    struct hazard_access both_r[] = {{&bufs[0], HAZARD_READ}, {&bufs[1], HAZARD_READ}};
    command(0, Q_IN, both_w, 2, NONE);
    command(1, Q_KERNEL, both_r, 2, W(0));   /* once, though two buffers name it */
    expect_all_released(bufs, 2);
}
END_TEST

START_TEST(read_only_buffers_never_wait)
{
    struct hazard_buf a = {0};
    struct hazard_access ra = {&a, HAZARD_READ};
    command(0, Q_KERNEL, &ra, 1, NONE);
    command(1, Q_OUT, &ra, 1, NONE);
    command(2, Q_IN, &ra, 1, NONE);
    command(3, Q_KERNEL, (struct hazard_access[]){{&a, HAZARD_WRITE}}, 1, W(1, 2));
    expect_all_released(&a, 1);
}
END_TEST

START_TEST(clear_releases_references)
{
    struct hazard_buf a = {0};
    command(0, Q_IN, (struct hazard_access[]){{&a, HAZARD_WRITE}}, 1, NONE);
    command(1, Q_KERNEL, (struct hazard_access[]){{&a, HAZARD_READ}}, 1, W(0));
    ck_assert_int_eq(refs[0], 1);
    ck_assert_int_eq(refs[1], 1);
    hazard_buf_clear(&ops, &a);
    ck_assert_int_eq(refs[0], 0);
    ck_assert_int_eq(refs[1], 0);
    ck_assert_ptr_null(a.writer);
    /* A cleared buffer is untouched again. */
    command(2, Q_KERNEL, (struct hazard_access[]){{&a, HAZARD_WRITE}}, 1, NONE);
    expect_all_released(&a, 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hazard");
    const TTest *const tests[] = {
        write_read_read_write_on_different_queues,
        same_queue_needs_no_waits,
        write_after_write,
        pipeline_copy_out_overlaps_next_step,
        chunks_stream_through_two_buffers,
        duplicate_waits_are_merged,
        read_only_buffers_never_wait,
        clear_releases_references,
        NULL,
    };
    TCase *tc = check_run_case(s, "hazard", tests);
    tcase_add_checked_fixture(tc, setup, NULL);
    return check_run(s, CK_FORK_GETENV);
}
