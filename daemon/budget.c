/* SPDX-License-Identifier: MIT */
/* budget.c: chained byte budgets (see budget.h). */
#include "budget.h"

#include <inttypes.h>
#include <stdio.h>

/* Locks the shared budgets of b's chain, outermost first: every thread
 * takes them in that order, so two chains never wait on each other. */
static void budget_lock(struct budget *b)
{
    if (!b)
        return;
    budget_lock(b->parent);
    if (b->lock)
        pthread_mutex_lock(b->lock);
}

static void budget_unlock(struct budget *b)
{
    for (; b; b = b->parent)
        if (b->lock)
            pthread_mutex_unlock(b->lock);
}

/* The outermost budget on b's chain with no room for n, or NULL: the
 * daemon-wide limit is named first when both are short. */
static struct budget *budget_full(struct budget *b, uint64_t n)
{
    if (!b)
        return NULL;
    struct budget *full = budget_full(b->parent, n);
    if (full)
        return full;
    return n > b->max - b->used ? b : NULL;
}

static void budget_add(struct budget *b, uint64_t n)
{
    for (; b; b = b->parent)
        b->used += n;
}

struct budget *budget_take(struct budget *b, uint64_t n)
{
    return budget_take_both(b, NULL, n);
}

struct budget *budget_take_both(struct budget *b, struct budget *also, uint64_t n)
{
    budget_lock(also);
    budget_lock(b);
    /* b's parents, then also's chain, then b: the daemon's, then a
     * client's, then a connection's, so that a refusal names the widest
     * limit short, which more connections would not get round. */
    struct budget *full = b ? budget_full(b->parent, n) : NULL;
    if (!full)
        full = budget_full(also, n);
    if (!full)
        full = budget_full(b, n);
    if (!full) {
        budget_add(also, n);
        budget_add(b, n);
    }
    budget_unlock(b);
    budget_unlock(also);
    return full;
}

void budget_give(struct budget *b, uint64_t n)
{
    budget_lock(b);
    for (struct budget *p = b; p; p = p->parent)
        p->used -= n;
    budget_unlock(b);
}

uint64_t budget_used(struct budget *b)
{
    if (b->lock)
        pthread_mutex_lock(b->lock);
    uint64_t used = b->used;
    if (b->lock)
        pthread_mutex_unlock(b->lock);
    return used;
}

void budget_refusal(struct budget *full, uint64_t n, char *msg, size_t msglen)
{
    const char *by = full->owner ? " by " : "";
    const char *owner = full->owner ? full->owner : "";
    if (n > full->max) {
        snprintf(msg, msglen, "%s (%" PRIu64 ") is less than the %" PRIu64 " bytes wanted%s%s",
                 full->name, full->max, n, by, owner);
        return;
    }
    snprintf(msg, msglen, "%s (%" PRIu64 ") is in use%s%s: %" PRIu64 " bytes held, %" PRIu64
             " more wanted", full->name, full->max, by, owner, budget_used(full), n);
}
