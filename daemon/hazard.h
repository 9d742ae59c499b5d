/* SPDX-License-Identifier: MIT */
/* hazard.h: the scheduler core inside a device. Every command put on a
 * device declares read or write access to each buffer it touches; this
 * module derives the command's wait list from read-after-write,
 * write-after-read and write-after-write hazards alone (two readers never
 * wait for each other).
 *
 * Pure logic over opaque event handles: dev_exec.c passes cl_events, the
 * tests pass whatever they like. Queues are numbered 0..HAZARD_MAX_QUEUES-1
 * and assumed in order, so an event never needs to wait for an earlier
 * event of its own queue; that is what keeps a buffer's state bounded (one
 * writer, and at most one reader per queue).
 */
#ifndef AMPD_HAZARD_H
#define AMPD_HAZARD_H

#include <stddef.h>

#define HAZARD_MAX_QUEUES 4

enum hazard_mode {
    HAZARD_READ,
    HAZARD_WRITE, /* a read-modify-write is a write: it waits for everything */
};

/* Reference counting of the opaque events, supplied by the caller. */
struct hazard_ops {
    void (*retain)(void *ev);
    void (*release)(void *ev);
};

/* What is known about one buffer. Zero-initialised means "untouched".
 * Every non-NULL handle here holds one reference (hazard_ops.retain). */
struct hazard_buf {
    void *writer;                          /* last write, or NULL */
    unsigned writer_queue;                 /* its queue; meaningless if !writer */
    void *readers[HAZARD_MAX_QUEUES];      /* latest read per queue since writer */
};

struct hazard_access {
    struct hazard_buf *buf;
    enum hazard_mode mode;
};

/* Room a wait list for nacc accesses may need. */
#define HAZARD_MAX_WAITS(nacc) ((nacc) * (HAZARD_MAX_QUEUES + 1))

/* Fills waits (room for HAZARD_MAX_WAITS(nacc) handles, borrowed: valid
 * until the next hazard_commit or hazard_buf_clear on these buffers) with the
 * events a command on queue must wait for, without duplicates, and returns
 * how many. Events of the command's own queue are left out: the queue
 * orders them already. A buffer should appear once in acc. */
size_t hazard_waits(const struct hazard_access *acc, size_t nacc, unsigned queue, void **waits);

/* Records that the command with event ev, on queue, was enqueued with the
 * accesses acc. Retains ev once per buffer that keeps it. */
void hazard_commit(const struct hazard_ops *ops, const struct hazard_access *acc, size_t nacc,
                   unsigned queue, void *ev);

/* Releases every event b holds and resets it to untouched. */
void hazard_buf_clear(const struct hazard_ops *ops, struct hazard_buf *b);

#endif
