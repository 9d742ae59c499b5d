/* SPDX-License-Identifier: MIT */
/* budget.h: bytes the daemon holds for its clients, counted against limits.
 *
 * A budget is a byte count with a maximum, chained to a parent: each
 * connection has one (--max-connection-memory) whose parent is the
 * daemon's (--max-job-memory), so a take succeeds only if it fits at every
 * level, and one connection can never use up what the others need. A call
 * also takes its bytes from its client's budget (--max-client-memory,
 * client_share.h), a chain of its own beside the connection's: one
 * connection may carry calls of several clients (a load balancer's), and
 * one client may have many connections. What is
 * counted: request bytes as they arrive, decoded requests, unary jobs'
 * input and output, replies not yet taken by the client (h2.c and rpc.c
 * take and give; streams' data lives in the staging pool, bounded there).
 *
 * Threads: a connection's budget lives on its I/O loop's thread; the
 * daemon's and the clients' are shared by every I/O loop and have locks,
 * which every take, give and read of them holds (a take holds the locks of
 * its whole chain, outermost first, a client's before the connection's
 * chain, so that the check and the count are one step and no two takes
 * wait on each other).
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
    const char *owner;      /* whose max it is, for messages ("token alice"); NULL: the
                             * daemon's or a connection's. Not owned. */
    pthread_mutex_t *lock;  /* guards used when the budget is shared by threads; NULL: one
                             * thread's. Not owned. */
};

/* Takes n bytes from b and every parent, or from none: returns NULL when
 * taken, else the budget that had no room (b or a parent). */
struct budget *budget_take(struct budget *b, uint64_t n);

/* The same from two chains that share no budget, b's and also's (NULL:
 * b's alone), or from neither: returns the budget that had no room, b's
 * parents first, then also's chain, then b itself (the daemon's limit,
 * then a client's, then a connection's). */
struct budget *budget_take_both(struct budget *b, struct budget *also, uint64_t n);

/* Gives back n bytes taken from b (and so from its parents). */
void budget_give(struct budget *b, uint64_t n);

/* Bytes held in b now. */
uint64_t budget_used(struct budget *b);

/* "--max-connection-memory (268435456) is in use: 268000000 bytes held, 1048576 more wanted",
 * "--max-client-memory (536870912) is in use by token alice: ...": why full refused n bytes,
 * into msg. */
void budget_refusal(struct budget *full, uint64_t n, char *msg, size_t msglen);

#endif
