/* SPDX-License-Identifier: MIT */
/* tenant_stats.c: per-client, per-priority time histograms (tenant_stats.h).
 *
 * One mutex guards every row: a record is a name lookup among at most
 * TENANT_STATS_CLIENTS short strings and three increments, taken once per
 * job (not per task), so it is never held long; a scrape copies the rows
 * out under it and renders without it.
 */
#include "tenant_stats.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#define TENANT_STATS_NS_PER_US 1000

struct tenant_stats {
    uv_mutex_t lock;                               /* guards everything below */
    size_t nclients;                               /* rows[0..nclients) are named clients */
    struct tenant_row rows[TENANT_STATS_CLIENTS];
    struct tenant_row other, none;                 /* past the cap; no client */
    bool other_used, none_used;                    /* counted a job */
};

struct tenant_stats *tenant_stats_new(void)
{
    struct tenant_stats *ts = calloc(1, sizeof(*ts));
    if (!ts)
        return NULL;
    if (uv_mutex_init(&ts->lock) != 0) {
        free(ts);
        return NULL;
    }
    strcpy(ts->other.client, TENANT_STATS_OTHER);
    strcpy(ts->none.client, TENANT_STATS_NONE);
    return ts;
}

void tenant_stats_free(struct tenant_stats *ts)
{
    if (!ts)
        return;
    uv_mutex_destroy(&ts->lock);
    free(ts);
}

static void tenant_stats_add(struct tenant_hist *h, uint64_t ns)
{
    uint64_t us = ns / TENANT_STATS_NS_PER_US;
    h->count++;
    h->sum_us += us;
    h->buckets[stage_latency_bucket(us)]++;
}

/* Under the lock: client's row, made if there is room, else "other". */
static struct tenant_row *tenant_stats_row(struct tenant_stats *ts, const char *client)
{
    if (!*client) {
        ts->none_used = true;
        return &ts->none;
    }
    for (size_t i = 0; i < ts->nclients; i++)
        if (strcmp(ts->rows[i].client, client) == 0)
            return &ts->rows[i];
    if (ts->nclients == TENANT_STATS_CLIENTS) {
        ts->other_used = true;
        return &ts->other;
    }
    struct tenant_row *r = &ts->rows[ts->nclients++];
    size_t n = strnlen(client, sizeof r->client - 1);
    memcpy(r->client, client, n);
    r->client[n] = '\0';
    return r;
}

void tenant_stats_record(struct tenant_stats *ts, const char *client, enum job_priority prio,
                         uint64_t queue_ns, uint64_t device_ns)
{
    if (!ts)
        return;
    if ((unsigned)prio >= JOB_PRIORITIES)
        prio = JOB_PRIORITY_NORMAL;
    uv_mutex_lock(&ts->lock);
    struct tenant_row *r = tenant_stats_row(ts, client ? client : "");
    tenant_stats_add(&r->queue[prio], queue_ns);
    tenant_stats_add(&r->device[prio], device_ns);
    uv_mutex_unlock(&ts->lock);
}

size_t tenant_stats_snapshot(struct tenant_stats *ts, struct tenant_row *rows)
{
    if (!ts)
        return 0;
    uv_mutex_lock(&ts->lock);
    size_t n = ts->nclients;
    memcpy(rows, ts->rows, n * sizeof(*rows));
    if (ts->other_used)
        rows[n++] = ts->other;
    if (ts->none_used)
        rows[n++] = ts->none;
    uv_mutex_unlock(&ts->lock);
    return n;
}
