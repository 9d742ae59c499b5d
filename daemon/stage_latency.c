/* SPDX-License-Identifier: MIT */
/* stage_latency.c: stage latency histograms (stage_latency.h). */
#include "stage_latency.h"

#include "monotonic.h"

static const char *const stage_names[STAGE_COUNT] = {
    [STAGE_REQUEST] = "request", [STAGE_QUEUE] = "queue", [STAGE_RUN] = "run",
    [STAGE_DELIVER] = "deliver", [STAGE_REPLY] = "reply", [STAGE_TOTAL] = "total",
    [STAGE_STREAM] = "stream",
};

uint64_t stage_latency_now_ns(void)
{
    return monotonic_ns();
}

const char *stage_latency_name(enum stage st)
{
    return (unsigned)st < STAGE_COUNT ? stage_names[st] : "unknown";
}

unsigned stage_latency_bucket(uint64_t us)
{
    unsigned b = 0;
    while (b + 1 < STAGE_BUCKETS && us >= ((uint64_t)1 << b))
        b++;
    return b;
}

void stage_latency_record(struct stage_latency *s, enum stage st, uint64_t from, uint64_t to)
{
    if (!s || (unsigned)st >= STAGE_COUNT)
        return;
    uint64_t us = to > from ? (to - from) / 1000 : 0;
    unsigned b = stage_latency_bucket(us);
    atomic_fetch_add_explicit(&s->calls[st], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->sum_us[st], us, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->buckets[st][b], 1, memory_order_relaxed);
}
