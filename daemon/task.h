/* SPDX-License-Identifier: MIT */
/* task.h: one unit of work for a device runner.
 *
 * A unary job is one TASK_JOB. A streamed job (rpc_stream.c) is a series of
 * tasks over the same struct job, run in submission order on its device's
 * runner: OPEN reserves device memory and sets up the device side
 * (dev_stream.c); each IN carries one staging buffer of input and brings
 * the chunk's output back in the same buffer; RUN and OUT serve jobs that
 * must hold the whole input on the device (reverse, fill): RUN runs the
 * steps once the input is in, OUT copies a piece of the result out; END
 * reads the histogram counts; CLOSE frees the device side and the job's
 * device memory reservation. Only tasks are shared between the threads:
 * the loop fills one in and submits it, the runner sets its results and
 * hands it back, the loop that submitted it reads them in done().
 */
#ifndef AMPD_TASK_H
#define AMPD_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

struct job;
struct sched_port;

enum task_kind { TASK_JOB, TASK_OPEN, TASK_IN, TASK_RUN, TASK_OUT, TASK_END, TASK_CLOSE };

struct task {
    enum task_kind kind;
    struct job *job;              /* not owned; a stream's tasks share its job */
    void *buf;                    /* IN/OUT: pinned staging memory, valid until done() */
    uint64_t offset;              /* IN/OUT: stream position of buf[0] */
    size_t len;                   /* IN: input bytes in buf; OUT: bytes wanted; RUN: the
                                   * whole input's length */

    /* Set by the runner before done(). */
    size_t out_len;               /* IN/OUT: output bytes now in buf; RUN: result size */
    enum status_code status;
    char msg[STATUS_MSG_MAX];

    void (*done)(struct task *t); /* on home's loop thread; may free t */
    void *owner;                  /* what done() reports to */
    struct sched_port *home;      /* the I/O loop that submitted it, where done() runs
                                   * (set by sched.c) */
    struct task *next;            /* queue link; owned by whichever queue holds the task */
    uint64_t fq_step, fq_seq;     /* fairq.c's charge over weight, and push order, while
                                   * queued there */
    uint64_t t_begin, t_end;      /* stage_latency_now_ns(): the runner started it, handed it back
                                   * (a stream's device time, tenant_stats.h) */
};

/* A queue of tasks is a head and a tail linked through next (both NULL:
 * empty), under its owner's lock: a runner's, the host pool's, an I/O
 * loop's completions. Appends t at the tail. */
static inline void task_append(struct task **head, struct task **tail, struct task *t)
{
    t->next = NULL;
    if (*tail)
        (*tail)->next = t;
    else
        *head = t;
    *tail = t;
}

/* Takes the task at the head, or NULL when the queue is empty. */
static inline struct task *task_pop(struct task **head, struct task **tail)
{
    struct task *t = *head;
    if (t) {
        *head = t->next;
        if (!*head)
            *tail = NULL;
        t->next = NULL;
    }
    return t;
}

#endif
