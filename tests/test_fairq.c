/* SPDX-License-Identifier: MIT */
/* test_fairq.c: the fair queue (daemon/fairq.c) driven directly, by the
 * order it hands tasks out in, which is deterministic: busy flows share by
 * their weights; a flow that turns busy goes next, behind at most one
 * task of each other flow, without credit for its idle time; a higher
 * priority always goes first; one flow's tasks keep their order; costs
 * weigh as much as counts; tags that wrap keep their order. */
#include <check.h>
#include <stdlib.h>

#include "check_run.h"
#include "fairq.h"
#include "job.h"
#include "task.h"

#define MAXT 4096

static struct job jobs[MAXT];
static size_t njobs;

/* A task of flow at priority and weight, numbered by its job's in_len. */
static struct task *task_of(uint64_t flow, uint32_t weight, enum job_priority prio)
{
    ck_assert_uint_lt(njobs, MAXT);
    struct job *job = &jobs[njobs];
    *job = (struct job){.in_len = njobs};
    job->cls = (struct job_class){.flow = flow, .weight = weight, .priority = prio};
    job->task = (struct task){.kind = TASK_JOB, .job = job};
    njobs++;
    return &job->task;
}

static struct fairq *fresh(void)
{
    njobs = 0;
    struct fairq *q = fairq_new();
    ck_assert_ptr_nonnull(q);
    return q;
}

static void push(struct fairq *q, uint64_t flow, uint32_t weight, enum job_priority prio,
                 uint64_t cost)
{
    fairq_push(q, task_of(flow, weight, prio), cost);
}

START_TEST(weights_split_busy_flows)
{
    struct fairq *q = fresh();
    for (int i = 0; i < 1000; i++) {
        push(q, 1, 3, JOB_PRIORITY_NORMAL, 1000);
        push(q, 2, 1, JOB_PRIORITY_NORMAL, 1000);
    }
    unsigned got[3] = {0};
    for (int i = 0; i < 400; i++)
        got[fairq_pop(q)->job->cls.flow]++;
    /* 3:1 within a task. */
    ck_assert_uint_ge(got[1], 299);
    ck_assert_uint_le(got[1], 301);
    ck_assert_uint_eq(got[1] + got[2], 400);
    ck_assert_uint_eq(fairq_len(q), 1600);
    fairq_free(q);
}
END_TEST

START_TEST(costs_weigh_not_counts)
{
    /* Flow 1's tasks cost ten times flow 2's (FAIRQ_TASK_COST included):
     * equal weights take equal bytes, so flow 2 gets ten tasks for each
     * of flow 1's. */
    struct fairq *q = fresh();
    for (int i = 0; i < 200; i++)
        push(q, 1, 1, JOB_PRIORITY_NORMAL, (10u << 20) - FAIRQ_TASK_COST);
    for (int i = 0; i < 2000; i++)
        push(q, 2, 1, JOB_PRIORITY_NORMAL, (1u << 20) - FAIRQ_TASK_COST);
    unsigned got[3] = {0};
    for (int i = 0; i < 1100; i++)
        got[fairq_pop(q)->job->cls.flow]++;
    ck_assert_uint_ge(got[1], 99);
    ck_assert_uint_le(got[1], 101);
    fairq_free(q);
}
END_TEST

START_TEST(newcomer_goes_next_without_credit)
{
    struct fairq *q = fresh();
    for (int i = 0; i < 100; i++)
        push(q, 1, 1, JOB_PRIORITY_NORMAL, 1 << 20);
    for (int i = 0; i < 50; i++)
        ck_assert_uint_eq(fairq_pop(q)->job->cls.flow, 1);
    /* Flow 2 was idle while flow 1 took 50: its first task goes behind
     * at most one of flow 1's, and then they alternate (no banked share). */
    for (int i = 0; i < 10; i++)
        push(q, 2, 1, JOB_PRIORITY_NORMAL, 1 << 20);
    struct task *first = fairq_pop(q), *second = fairq_pop(q);
    ck_assert(first->job->cls.flow == 2 || second->job->cls.flow == 2);
    unsigned twos = 0;
    for (int i = 0; i < 10; i++)
        twos += fairq_pop(q)->job->cls.flow == 2;
    ck_assert_uint_ge(twos, 4);
    ck_assert_uint_le(twos, 6);
    fairq_free(q);
}
END_TEST

START_TEST(small_job_passes_a_bulk_queue)
{
    /* A bulk client queues 16 large jobs; another's tiny one, pushed last,
     * is the first or second out. */
    struct fairq *q = fresh();
    for (int i = 0; i < 16; i++)
        push(q, 1, 1, JOB_PRIORITY_NORMAL, 32 << 20);
    ck_assert_uint_eq(fairq_pop(q)->job->cls.flow, 1);   /* in service */
    push(q, 2, 1, JOB_PRIORITY_NORMAL, 16);
    ck_assert_uint_eq(fairq_pop(q)->job->cls.flow, 2);
    fairq_free(q);
}
END_TEST

/* A bulk job alone in the queue: its piece is taken (the queue runs
 * empty), and its next piece goes back as another client's tiny job comes.
 * They start level; the tiny one, which ends first, goes first. */
START_TEST(small_job_passes_a_lone_bulk_piece)
{
    struct fairq *q = fresh();
    struct task *bulk = task_of(1, 1, JOB_PRIORITY_NORMAL);
    fairq_push(q, bulk, 4 << 20);
    ck_assert_ptr_eq(fairq_pop(q), bulk);
    fairq_requeue(q, bulk, 4 << 20);
    push(q, 2, 1, JOB_PRIORITY_NORMAL, 16);
    ck_assert_uint_eq(fairq_pop(q)->job->cls.flow, 2);
    ck_assert_ptr_eq(fairq_pop(q), bulk);
    fairq_free(q);
}
END_TEST

START_TEST(priority_goes_first)
{
    struct fairq *q = fresh();
    for (int i = 0; i < 5; i++) {
        push(q, 1, JOB_WEIGHT_MAX, JOB_PRIORITY_LOW, 1);
        push(q, 2, 1, JOB_PRIORITY_NORMAL, 1 << 30);
        push(q, 1, 1, JOB_PRIORITY_HIGH, 1 << 30);
    }
    for (int i = 0; i < 15; i++) {
        enum job_priority want = i < 5 ? JOB_PRIORITY_HIGH : i < 10 ? JOB_PRIORITY_NORMAL
                                                                     : JOB_PRIORITY_LOW;
        struct task *t = fairq_peek(q);
        ck_assert_ptr_eq(fairq_pop(q), t);
        ck_assert_int_eq(t->job->cls.priority, want);
    }
    ck_assert_ptr_null(fairq_pop(q));
    ck_assert_uint_eq(fairq_len(q), 0);
    fairq_free(q);
}
END_TEST

START_TEST(one_flow_keeps_its_order)
{
    struct fairq *q = fresh();
    for (int i = 0; i < 300; i++)
        push(q, (uint64_t)(i % 3), 1 + (uint32_t)(i % 5), JOB_PRIORITY_NORMAL,
             (uint64_t)(1 + (i * 7919) % 100000));
    size_t last[3] = {0, 0, 0};
    bool seen[3] = {false, false, false};
    for (struct task *t; (t = fairq_pop(q));) {
        size_t f = t->job->cls.flow, n = t->job->in_len;
        if (seen[f])
            ck_assert_uint_gt(n, last[f]);
        seen[f] = true;
        last[f] = n;
    }
    fairq_free(q);
}
END_TEST

/* A task taken with pieces left goes back behind its flow's other jobs
 * but before its own job's later tasks; other flows keep their shares. */
START_TEST(requeue_keeps_a_jobs_order)
{
    struct fairq *q = fresh();
    struct task *run = task_of(1, 1, JOB_PRIORITY_NORMAL);
    struct task *other = task_of(1, 1, JOB_PRIORITY_NORMAL);
    struct task *close = task_of(1, 1, JOB_PRIORITY_NORMAL);
    close->job = run->job;   /* the same stream: RUN, then CLOSE */
    fairq_push(q, run, 100);
    fairq_push(q, other, 100);
    fairq_push(q, close, 100);
    ck_assert_ptr_eq(fairq_pop(q), run);
    fairq_requeue(q, run, 100);   /* more pieces: before its CLOSE */
    ck_assert_ptr_eq(fairq_pop(q), other);
    ck_assert_ptr_eq(fairq_pop(q), run);
    fairq_requeue(q, run, 100);
    ck_assert_ptr_eq(fairq_pop(q), run);
    ck_assert_ptr_eq(fairq_pop(q), close);
    ck_assert_ptr_null(fairq_pop(q));
    /* A job with nothing after it goes to its flow's tail. */
    struct task *a = task_of(2, 1, JOB_PRIORITY_NORMAL), *b = task_of(2, 1, JOB_PRIORITY_NORMAL);
    fairq_push(q, a, 100);
    fairq_push(q, b, 100);
    ck_assert_ptr_eq(fairq_pop(q), a);
    fairq_requeue(q, a, 100);
    ck_assert_ptr_eq(fairq_pop(q), b);
    ck_assert_ptr_eq(fairq_pop(q), a);
    fairq_free(q);
}
END_TEST

START_TEST(pieces_share_by_weight)
{
    /* Two clients' single jobs in pieces, weights 3:1, each piece pushed
     * back as it is taken: the pieces split 3:1. */
    struct fairq *q = fresh();
    struct task *heavy = task_of(1, 3, JOB_PRIORITY_NORMAL);
    struct task *light = task_of(2, 1, JOB_PRIORITY_NORMAL);
    fairq_push(q, heavy, 4 << 20);
    fairq_push(q, light, 4 << 20);
    unsigned got[3] = {0};
    for (int i = 0; i < 400; i++) {
        struct task *t = fairq_pop(q);
        got[t->job->cls.flow]++;
        fairq_requeue(q, t, 4 << 20);
    }
    ck_assert_uint_ge(got[1], 299);
    ck_assert_uint_le(got[1], 301);
    fairq_free(q);
}
END_TEST

/* Clients that each make one call at a time, and go: the queue keeps no
 * flow for them once it runs empty (it kept one per call). */
START_TEST(idle_flows_go)
{
    struct fairq *q = fresh();
    for (uint64_t i = 1; i <= 10000; i++) {
        push(q, i, 1, JOB_PRIORITY_NORMAL, 16);
        ck_assert_uint_eq(fairq_pop(q)->job->cls.flow, i);
        njobs = 0;
    }
    ck_assert_uint_le(fairq_flows(q), 1);
    /* A busy client stays while others come and go beside it, one call
     * each: those served fall behind v as the busy one is served. */
    push(q, 1, 1, JOB_PRIORITY_NORMAL, 1 << 20);
    for (uint64_t i = 2; i < 1000; i++) {
        njobs = njobs > MAXT - 4 ? 0 : njobs;
        push(q, i, 1, JOB_PRIORITY_NORMAL, 16);
        push(q, 1, 1, JOB_PRIORITY_NORMAL, 1 << 20);
        fairq_pop(q);
        fairq_pop(q);
    }
    ck_assert_uint_le(fairq_flows(q), 3);
    fairq_free(q);
}
END_TEST

START_TEST(tags_wrap_in_order)
{
    /* Tags grow with the work done: push enough of the largest step to
     * pass 2^64 and the shares still hold. */
    struct fairq *q = fresh();
    for (int round = 0; round < 600; round++) {
        push(q, 1, 1, JOB_PRIORITY_NORMAL, UINT64_MAX);
        push(q, 2, 1, JOB_PRIORITY_NORMAL, UINT64_MAX);
        struct task *a = fairq_pop(q), *b = fairq_pop(q);
        ck_assert_uint_ne(a->job->cls.flow, b->job->cls.flow);
        njobs = 0;
    }
    fairq_free(q);
}
END_TEST

START_TEST(bad_class_is_normal)
{
    /* A weight of 0 is the default and a priority out of range normal:
     * nothing a job carries makes the queue misbehave. */
    struct fairq *q = fresh();
    push(q, 1, 0, (enum job_priority)7, 100);
    push(q, 2, 1, JOB_PRIORITY_HIGH, 100);
    ck_assert_uint_eq(fairq_pop(q)->job->cls.flow, 2);
    ck_assert_uint_eq(fairq_pop(q)->job->cls.flow, 1);
    fairq_free(q);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fairq");
    const TTest *const tests[] = {
        weights_split_busy_flows,
        costs_weigh_not_counts,
        newcomer_goes_next_without_credit,
        small_job_passes_a_bulk_queue,
        small_job_passes_a_lone_bulk_piece,
        priority_goes_first,
        one_flow_keeps_its_order,
        requeue_keeps_a_jobs_order,
        pieces_share_by_weight,
        idle_flows_go,
        tags_wrap_in_order,
        bad_class_is_normal,
        NULL,
    };
    check_run_case(s, "fairq", tests);
    return check_run(s, CK_FORK_GETENV);
}
