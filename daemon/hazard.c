/* SPDX-License-Identifier: MIT */
/* hazard.c: wait lists from declared buffer accesses (see hazard.h).
 *
 * A read waits for the last write (RAW). A write waits for the last write
 * (WAW) and for every read since it (WAR). Readers never wait for readers.
 * Because each queue runs in order, only the latest reader per queue needs
 * remembering, and nothing waits for an event of its own queue.
 */
#include "hazard.h"

static void hazard_add_wait(void **waits, size_t *n, void *ev)
{
    if (!ev)
        return;
    for (size_t i = 0; i < *n; i++)
        if (waits[i] == ev)
            return;
    waits[(*n)++] = ev;
}

size_t hazard_waits(const struct hazard_access *acc, size_t nacc, unsigned queue, void **waits)
{
    size_t n = 0;
    for (size_t i = 0; i < nacc; i++) {
        const struct hazard_buf *b = acc[i].buf;
        if (b->writer && b->writer_queue != queue)
            hazard_add_wait(waits, &n, b->writer);
        if (acc[i].mode != HAZARD_WRITE)
            continue;
        for (unsigned q = 0; q < HAZARD_MAX_QUEUES; q++)
            if (q != queue)
                hazard_add_wait(waits, &n, b->readers[q]);
    }
    return n;
}

static void hazard_set(const struct hazard_ops *ops, void **slot, void *ev)
{
    if (ev)
        ops->retain(ev);
    if (*slot)
        ops->release(*slot);
    *slot = ev;
}

void hazard_commit(const struct hazard_ops *ops, const struct hazard_access *acc, size_t nacc,
                   unsigned queue, void *ev)
{
    for (size_t i = 0; i < nacc; i++) {
        struct hazard_buf *b = acc[i].buf;
        if (acc[i].mode == HAZARD_WRITE) {
            /* Everything earlier is now ordered before ev: forget it. */
            for (unsigned q = 0; q < HAZARD_MAX_QUEUES; q++)
                hazard_set(ops, &b->readers[q], NULL);
            hazard_set(ops, &b->writer, ev);
            b->writer_queue = queue;
        } else {
            hazard_set(ops, &b->readers[queue], ev);
        }
    }
}

void hazard_buf_clear(const struct hazard_ops *ops, struct hazard_buf *b)
{
    for (unsigned q = 0; q < HAZARD_MAX_QUEUES; q++)
        hazard_set(ops, &b->readers[q], NULL);
    hazard_set(ops, &b->writer, NULL);
    b->writer_queue = 0;
}
