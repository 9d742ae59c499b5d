/* SPDX-License-Identifier: MIT */
/* spin.c: see spin.h. */
#define _GNU_SOURCE   /* RUSAGE_THREAD */
#include "spin.h"

#include <sys/resource.h>

#include "monotonic.h"
#include "sat.h"

/* This thread's involuntary switches so far (getrusage: ~0.4 us). */
static long spin_preemptions(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : 0;
}

void spin_start(struct spin *s, uint64_t window_ns)
{
    s->preempted = spin_preemptions();
    s->end_ns = sat_add_u64(monotonic_ns(), window_ns);
}

bool spin_on(const struct spin *s)
{
    return monotonic_ns() < s->end_ns && spin_preemptions() == s->preempted;
}
