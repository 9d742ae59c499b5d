/* SPDX-License-Identifier: MIT */
/* heap_trim.c: malloc_trim once the daemon goes quiet (see heap_trim.h). */
#include "heap_trim.h"

#include <malloc.h>

#include "budget.h"
#include "log.h"
#include "status.h"

static uint64_t heap_trim_answered(const struct status_counts *answered)
{
    uint64_t n = 0;
    for (int code = 0; code < STATUS_CODE_COUNT; code++)
        n += status_counted(answered, (enum status_code)code);
    return n;
}

/* Quiet means nothing held and no call answered since the last tick: a
 * whole period without a call, so a steady trickle of calls is not
 * trimmed under (each trim walks every arena under its lock). */
static void heap_trim_tick(uv_timer_t *timer)
{
    struct heap_trim *t = timer->data;
    uint64_t answered = heap_trim_answered(t->answered);
    if (answered != t->seen || budget_used(t->held) > 0) {
        t->seen = answered;
        t->dirty = true;
        return;
    }
    if (!t->dirty)
        return;
    t->dirty = false;
    int released = malloc_trim(0);
    log_msg(LOG_DEBUG, "quiet: heap trimmed (%s)", released ? "memory released" : "none to release");
}

void heap_trim_start(struct heap_trim *t, uv_loop_t *loop, uint64_t period_ms,
                     struct budget *held, const struct status_counts *answered)
{
    *t = (struct heap_trim){ .held = held, .answered = answered, .dirty = true };
    uv_timer_init(loop, &t->timer);
    t->timer.data = t;
    uv_timer_start(&t->timer, heap_trim_tick, period_ms, period_ms);
    uv_unref((uv_handle_t *)&t->timer);
}

void heap_trim_close(struct heap_trim *t)
{
    uv_close((uv_handle_t *)&t->timer, NULL);
}
