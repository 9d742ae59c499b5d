/* SPDX-License-Identifier: MIT */
/* conn_refusal.c: connections refused, counted and logged (conn_refusal.h). */
#include "conn_refusal.h"

#include "log.h"

const char *conn_refusal_label(enum conn_refusal why)
{
    static const char *const labels[CONN_REFUSAL_COUNT] = {
#define CONN_REFUSAL_LABEL(name, label) label,
        CONN_REFUSAL_MAP(CONN_REFUSAL_LABEL)
#undef CONN_REFUSAL_LABEL
    };
    return (unsigned)why < CONN_REFUSAL_COUNT ? labels[why] : "unknown";
}

void conn_refusal_note(struct conn_refusals *r, enum conn_refusal why, const char *peer,
                       const char *what)
{
    if ((unsigned)why >= CONN_REFUSAL_COUNT)
        return;
    /* The line first: whoever sees the count (a scrape, a test) finds it. */
    log_call(LOG_INFO, "%s: connection refused (%s): %s", peer, conn_refusal_label(why), what);
    atomic_fetch_add(&r->count[why], 1);
}

uint64_t conn_refusal_count(const struct conn_refusals *r, enum conn_refusal why)
{
    return (unsigned)why < CONN_REFUSAL_COUNT ? atomic_load(&r->count[why]) : 0;
}
