/* SPDX-License-Identifier: MIT */
/* fairq.h: the order in which a device's runner and its batch lane
 * (runner.c, a queue each) and the host workers (host.c) take queued
 * tasks: by priority, then fair between clients by their weights.
 *
 * Each (client, priority) is a flow (job->cls: flow, weight, priority).
 * A higher priority always goes first. Within a priority, flows share by
 * start-time fair queueing (Goyal, Vin and Cheng, 1996): a task pushed
 * gets the start tag max(v, F), where v is the start tag of the last task
 * taken at its priority and F the finish tag of its flow's previous task,
 * and its flow's finish tag becomes start + cost / weight; the task with
 * the smallest start tag goes next, ties to the smaller finish tag, then
 * in push order. So a flow that was idle starts at v, behind at most one
 * task of each busy flow (no banked credit: work conserving, an idle
 * client's share goes to the others), and busy flows are served in
 * proportion to their weights whatever their tasks' sizes. Deficit round robin would give the same
 * shares, but a newly busy flow waits for a whole round of quanta; SFQ's
 * tags put a small job next at once.
 *
 * A task is charged what it costs the device: the bytes it copies in and
 * out and those its kernels read and write (dev_task_cost: ampd's kernels
 * run at the device's memory bandwidth, so bytes stand for kernel time),
 * plus FAIRQ_TASK_COST for a launch and its round trip. A job run in
 * pieces is pushed again for each, charged that piece.
 *
 * Not thread-safe: its owner's lock guards it. Tasks are linked through
 * task->next while queued.
 */
#ifndef AMPD_FAIRQ_H
#define AMPD_FAIRQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct task;
struct fairq;

/* What one task costs besides its bytes: a launch, a completion and a
 * device round trip take 20-40 us on the H200 host, the time ~1 MiB
 * takes to copy; a quarter of that, since tiny jobs are batched. */
#define FAIRQ_TASK_COST ((uint64_t)256 << 10)

/* NULL when out of memory. */
struct fairq *fairq_new(void);

/* Frees q; tasks still queued are not touched. NULL is a no-op. */
void fairq_free(struct fairq *q);

/* Queues t in its job's flow, charged bytes (dev_task_cost) and
 * FAIRQ_TASK_COST. Never fails: without memory for a flow of its own, t
 * shares one with the other flows of its priority that had none. */
void fairq_push(struct fairq *q, struct task *t, uint64_t bytes);

/* Queues t, a task taken that has more pieces to come (dev_task_step),
 * again, charged its next piece's bytes: behind the other tasks of its
 * flow, but before any later task of its own job (a stream's CLOSE after
 * its RUN), so a job's tasks still run in the order submitted. */
void fairq_requeue(struct fairq *q, struct task *t, uint64_t bytes);

/* The task to take next, or NULL when q is empty. */
struct task *fairq_peek(struct fairq *q);

/* Takes the task fairq_peek() names. */
struct task *fairq_pop(struct fairq *q);

/* Tasks queued. */
size_t fairq_len(const struct fairq *q);

/* Flows q keeps: those with tasks queued and those that still owe for
 * what they were served (at most one per client that was busy since the
 * queue last ran empty). */
size_t fairq_flows(const struct fairq *q);

#endif
