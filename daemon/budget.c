/* budget.c: chained byte budgets (see budget.h). */
#include "budget.h"

#include <inttypes.h>
#include <stdio.h>

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
    struct budget *full = budget_full(b, n);
    if (full)
        return full;
    for (struct budget *p = b; p; p = p->parent)
        p->used += n;
    return NULL;
}

void budget_give(struct budget *b, uint64_t n)
{
    for (struct budget *p = b; p; p = p->parent)
        p->used -= n;
}

void budget_refusal(const struct budget *full, uint64_t n, char *msg, size_t msglen)
{
    if (n > full->max) {
        snprintf(msg, msglen, "%s (%" PRIu64 ") is less than the %" PRIu64 " bytes wanted",
                 full->name, full->max, n);
        return;
    }
    snprintf(msg, msglen, "%s (%" PRIu64 ") is in use: %" PRIu64 " bytes held, %" PRIu64
             " more wanted", full->name, full->max, full->used, n);
}
