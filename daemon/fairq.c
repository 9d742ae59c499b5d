/* SPDX-License-Identifier: MIT */
/* fairq.c: start-time fair queueing by priority (fairq.h).
 *
 * Each priority keeps its flows in an array, busy ones and idle ones that
 * still owe (a finish tag past v); taking a task scans that priority's
 * flows for the smallest head start tag and drops idle flows that owe
 * nothing. Tags are the flow's, not the tasks': a flow's head starts at
 * the finish of its last task taken (or at max(v, that) when it turns
 * busy), and the head's charge moves it on when taken. So a task may go
 * back into the middle of its flow (fairq_requeue) without re-tagging
 * the others. Flows are the clients with work queued, a handful to a few
 * hundred, so a scan costs less than the task it picks; a heap would be
 * the next step past that. Tags grow without bound and are compared
 * modulo 2^64 (fairq_before), so they may wrap.
 */
#include "fairq.h"

#include <stdlib.h>

#include "job.h"
#include "sat.h"
#include "task.h"

/* The most one task advances a tag: tags compared modulo 2^64 stay in
 * order while they lie within 2^63 of each other. */
#define FAIRQ_STEP_MAX ((uint64_t)1 << 56)

struct fairq_flow {
    uint64_t id;                /* job->cls.flow */
    struct task *head, *tail;   /* its queued tasks, in order */
    uint64_t start;             /* start tag of its head, while it has one */
    uint64_t finish;            /* finish tag of its last task taken */
};

struct fairq_level {
    struct fairq_flow **flows;  /* busy flows and idle ones that still owe */
    size_t n, cap;
    struct fairq_flow spare;    /* shared by tasks whose flow got no memory */
    uint64_t v;                 /* start tag of the last task taken */
    uint64_t last;              /* the latest finish tag of a task taken */
    size_t queued;              /* tasks queued at this priority */
};

struct fairq {
    struct fairq_level level[JOB_PRIORITIES];
    size_t len;
    uint64_t seq;               /* push order, for ties */
    struct fairq_flow *next;    /* fairq_peek's choice, until a push or pop */
};

/* Tag a comes before tag b, modulo 2^64. */
static bool fairq_before(uint64_t a, uint64_t b)
{
    return (int64_t)(a - b) < 0;
}

/* Flow a's head goes before flow b's: the smaller start tag, then the
 * smaller finish tag, then the earlier push. Ties are common: when the
 * queue runs empty v moves to the last finish tag, so a bulk job's next
 * piece, pushed back as its last one was taken, and a newcomer's tiny job
 * start level; SFQ leaves ties open, and the one that ends first going
 * first costs the other its job's time, not the reverse. */
static bool fairq_flow_before(const struct fairq_flow *a, const struct fairq_flow *b)
{
    if (a->start != b->start)
        return fairq_before(a->start, b->start);
    uint64_t fa = a->start + a->head->fq_step, fb = b->start + b->head->fq_step;
    if (fa != fb)
        return fairq_before(fa, fb);
    return fairq_before(a->head->fq_seq, b->head->fq_seq);
}

struct fairq *fairq_new(void)
{
    return calloc(1, sizeof(struct fairq));
}

void fairq_free(struct fairq *q)
{
    if (!q)
        return;
    for (size_t p = 0; p < JOB_PRIORITIES; p++) {
        for (size_t i = 0; i < q->level[p].n; i++)
            free(q->level[p].flows[i]);
        free(q->level[p].flows);
    }
    free(q);
}

/* t's flow at level l, made if new; the level's spare when that fails. */
static struct fairq_flow *fairq_flow(struct fairq_level *l, uint64_t id)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->flows[i]->id == id)
            return l->flows[i];
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        struct fairq_flow **flows = realloc(l->flows, cap * sizeof(*flows));
        if (!flows)
            return &l->spare;
        l->flows = flows;
        l->cap = cap;
    }
    struct fairq_flow *f = calloc(1, sizeof(*f));
    if (!f)
        return &l->spare;
    f->id = id;
    f->finish = l->v;
    l->flows[l->n++] = f;
    return f;
}

/* Files t under its flow, charged bytes; its place in the flow is left
 * to the caller. Returns the flow. */
static struct fairq_flow *fairq_file(struct fairq *q, struct task *t, uint64_t bytes)
{
    struct fairq_level *l = &q->level[job_priority(t->job)];
    struct fairq_flow *f = fairq_flow(l, t->job->cls.flow);
    /* The tag advances by the charge over the weight, scaled so that the
     * largest weight still advances it by whole units. */
    uint64_t charge = sat_add_u64(bytes, FAIRQ_TASK_COST);
    uint64_t step = sat_mul_u64(charge, JOB_WEIGHT_MAX) / job_weight(t->job);
    t->fq_step = step > FAIRQ_STEP_MAX ? FAIRQ_STEP_MAX : step;
    t->fq_seq = q->seq++;
    if (!f->head)   /* busy again: max(v, F), no credit for the idle time */
        f->start = fairq_before(l->v, f->finish) ? f->finish : l->v;
    l->queued++;
    q->len++;
    q->next = NULL;
    return f;
}

void fairq_push(struct fairq *q, struct task *t, uint64_t bytes)
{
    struct fairq_flow *f = fairq_file(q, t, bytes);
    task_append(&f->head, &f->tail, t);
}

void fairq_requeue(struct fairq *q, struct task *t, uint64_t bytes)
{
    struct fairq_flow *f = fairq_file(q, t, bytes);
    struct task **at = &f->head;
    while (*at && (*at)->job != t->job)
        at = &(*at)->next;
    if (!*at) {
        task_append(&f->head, &f->tail, t);
        return;
    }
    t->fq_seq = (*at)->fq_seq;   /* it takes that task's place */
    t->next = *at;               /* not the tail: *at follows it */
    *at = t;
}

/* The busy flow of l whose head goes first; idle flows that owe nothing
 * any more are dropped on the way. */
static struct fairq_flow *fairq_pick(struct fairq_level *l)
{
    struct fairq_flow *best = l->spare.head ? &l->spare : NULL;
    for (size_t i = 0; i < l->n;) {
        struct fairq_flow *f = l->flows[i];
        if (!f->head) {
            if (!fairq_before(l->v, f->finish)) {
                free(f);
                l->flows[i] = l->flows[--l->n];
                continue;
            }
        } else if (!best || fairq_flow_before(f, best)) {
            best = f;
        }
        i++;
    }
    return best;
}

struct task *fairq_peek(struct fairq *q)
{
    if (!q->next)
        for (size_t p = JOB_PRIORITIES; p-- > 0 && !q->next;)
            if (q->level[p].queued)
                q->next = fairq_pick(&q->level[p]);
    return q->next ? q->next->head : NULL;
}

struct task *fairq_pop(struct fairq *q)
{
    struct task *t = fairq_peek(q);
    if (!t)
        return NULL;
    struct fairq_flow *f = q->next;
    struct fairq_level *l = &q->level[job_priority(t->job)];
    task_pop(&f->head, &f->tail);
    q->next = NULL;
    if (fairq_before(l->v, f->start))
        l->v = f->start;
    f->finish = f->start + t->fq_step;
    f->start = f->finish;   /* its next head's, while it stays busy */
    if (fairq_before(l->last, f->finish))
        l->last = f->finish;
    l->queued--;
    q->len--;
    /* Nothing left at this priority: the server idles, and SFQ's v moves
     * to the latest finish tag, so no idle flow owes anything and the next
     * pick drops them all (each client that came and went would otherwise
     * stay, one per call of a client making one at a time). */
    if (!l->queued)
        l->v = l->last;
    return t;
}

size_t fairq_len(const struct fairq *q)
{
    return q->len;
}

size_t fairq_flows(const struct fairq *q)
{
    size_t n = 0;
    for (size_t p = 0; p < JOB_PRIORITIES; p++)
        n += q->level[p].n;
    return n;
}
