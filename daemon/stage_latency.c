/* SPDX-License-Identifier: MIT */
/* stage_latency.c: stage latency histograms (stage_latency.h). */
#include "stage_latency.h"

#include "amp_wire.h"
#include "monotonic.h"

static const char *const stage_names[STAGE_COUNT] = {
    [STAGE_REQUEST] = "request", [STAGE_QUEUE] = "queue", [STAGE_RUN] = "run",
    [STAGE_DELIVER] = "deliver", [STAGE_REPLY] = "reply", [STAGE_TOTAL] = "total",
    [STAGE_STREAM] = "stream", [STAGE_LOOP_TURN] = AMP_WIRE_LOOP_TURN_STAGE,
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

void stage_latency_add(struct stage_latency *s, enum stage st, uint64_t n, uint64_t sum_us,
                       const uint32_t buckets[STAGE_BUCKETS])
{
    if (!s || (unsigned)st >= STAGE_COUNT || !n)
        return;
    atomic_fetch_add_explicit(&s->calls[st], n, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->sum_us[st], sum_us, memory_order_relaxed);
    for (unsigned b = 0; b < STAGE_BUCKETS; b++)
        if (buckets[b])
            atomic_fetch_add_explicit(&s->buckets[st][b], buckets[b], memory_order_relaxed);
}
