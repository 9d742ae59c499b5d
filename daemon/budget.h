/* budget.h: bytes the daemon holds for its clients, counted against limits.
 *
 * A budget is a byte count with a maximum, chained to a parent: each
 * connection has one (--max-connection-memory) whose parent is the
 * daemon's (--max-job-memory), so a take succeeds only if it fits at every
 * level, and one connection can never use up what the others need. What is
 * counted: request bytes as they arrive, decoded requests, unary jobs'
 * input and output, replies not yet taken by the client (h2.c and rpc.c
 * take and give; streams' data lives in the staging pool, bounded there).
 *
 * Threads: a connection's budget lives on its I/O loop's thread; the
 * daemon's is shared by every I/O loop and has a lock, which every take,
 * give and read of it holds (a take holds the locks of its whole chain,
 * outermost first, so that the check and the count are one step).
 */
#ifndef AMPD_BUDGET_H
#define AMPD_BUDGET_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct budget {
    uint64_t used;          /* used <= max, and the sum of what was taken and not given */
    uint64_t max;
    struct budget *parent;  /* NULL at the top */
    const char *name;       /* the option that sets max, for messages: "--max-job-memory" */
    pthread_mutex_t *lock;  /* guards used when the budget is shared by threads; NULL: one
                             * thread's. Not owned. */
};

/* Takes n bytes from b and every parent, or from none: returns NULL when
 * taken, else the budget that had no room (b or a parent). */
struct budget *budget_take(struct budget *b, uint64_t n);

/* Gives back n bytes taken from b (and so from its parents). */
void budget_give(struct budget *b, uint64_t n);

/* Bytes held in b now. */
uint64_t budget_used(struct budget *b);

/* "--max-connection-memory (268435456) is in use: 268000000 bytes held, 1048576 more wanted":
 * why full refused n bytes, into msg. */
void budget_refusal(struct budget *full, uint64_t n, char *msg, size_t msglen);

#endif
