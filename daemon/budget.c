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

struct budget *budget_take(struct budget *b, uint64_t n)
{
    budget_lock(b);
    struct budget *full = budget_full(b, n);
    if (!full)
        for (struct budget *p = b; p; p = p->parent)
            p->used += n;
    budget_unlock(b);
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
    if (n > full->max) {
        snprintf(msg, msglen, "%s (%" PRIu64 ") is less than the %" PRIu64 " bytes wanted",
                 full->name, full->max, n);
        return;
    }
    snprintf(msg, msglen, "%s (%" PRIu64 ") is in use: %" PRIu64 " bytes held, %" PRIu64
             " more wanted", full->name, full->max, budget_used(full), n);
}
