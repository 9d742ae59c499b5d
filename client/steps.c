/* SPDX-License-Identifier: MIT */
/* steps.c: turns the caller's amp_step array into amp.v1 Step messages.
 *
 * Each step's parameters go through the same encoders as the one-step
 * calls (jobs.c), with messages that name the step ("steps[1].histogram.type"),
 * so a bad pipeline is refused before anything is sent. The daemon
 * validates the values themselves (bins, ranges, lengths).
 */
#include "steps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "conn.h"
#include "jobs.h"

#define STEPS_WHERE_MAX 48 /* "steps[18446744073709551615].transform" fits */

/* Storage for one Step and whichever params message its kind uses. */
struct steps_slot {
    Amp__V1__Step step;
    Amp__V1__ReverseParams reverse;
    Amp__V1__TransformParams transform;
    Amp__V1__HistogramParams hist;
    Amp__V1__FillParams fill;
};

static int steps_encode_one(amp_conn *c, size_t i, const amp_step *s, struct steps_slot *slot)
{
    char where[STEPS_WHERE_MAX];
    Amp__V1__Step *st = &slot->step;
    switch (s->kind) {
    case AMP_STEP_REVERSE:
        st->kind_case = AMP__V1__STEP__KIND_REVERSE;
        st->reverse = &slot->reverse;
        return 0;
    case AMP_STEP_TRANSFORM:
        snprintf(where, sizeof where, "steps[%zu].transform", i);
        st->kind_case = AMP__V1__STEP__KIND_TRANSFORM;
        st->transform = &slot->transform;
        return jobs_transform_params(c, where, &s->transform, &slot->transform);
    case AMP_STEP_HISTOGRAM:
        snprintf(where, sizeof where, "steps[%zu].histogram", i);
        st->kind_case = AMP__V1__STEP__KIND_HISTOGRAM;
        st->histogram = &slot->hist;
        return jobs_hist_params(c, where, &s->hist, &slot->hist);
    case AMP_STEP_FILL:
        snprintf(where, sizeof where, "steps[%zu].fill", i);
        st->kind_case = AMP__V1__STEP__KIND_FILL;
        st->fill = &slot->fill;
        return jobs_fill_params(c, where, &s->fill, &slot->fill);
    }
    return conn_fail(c, AMP_EINVAL, "steps[%zu].kind: %d is not an amp_step_kind", i,
                     (int)s->kind);
}

int steps_encode(amp_conn *c, const amp_step *steps, size_t n, struct steps_pb *pb)
{
    memset(pb, 0, sizeof *pb);
    if (!steps && n > 0)
        return conn_fail(c, AMP_EINVAL, "steps is NULL but nsteps is %zu", n);
    if (n == 0)
        return conn_fail(c, AMP_EINVAL, "nsteps must be >= 1");
    if (abi_check_size(c, "steps[0]", steps[0].size, ABI_STEP_MIN) != 0)
        return AMP_EINVAL;
    pb->steps = calloc(n, sizeof *pb->steps);
    pb->slots = calloc(n, sizeof *pb->slots);
    if (!pb->steps || !pb->slots)
        return conn_fail(c, AMP_ENOMEM, "out of memory for %zu steps", n);
    pb->n = n;
    for (size_t i = 0; i < n; i++) {
        struct steps_slot *slot = &pb->slots[i];
        slot->step = (Amp__V1__Step)AMP__V1__STEP__INIT;
        slot->reverse = (Amp__V1__ReverseParams)AMP__V1__REVERSE_PARAMS__INIT;
        slot->transform = (Amp__V1__TransformParams)AMP__V1__TRANSFORM_PARAMS__INIT;
        slot->hist = (Amp__V1__HistogramParams)AMP__V1__HISTOGRAM_PARAMS__INIT;
        slot->fill = (Amp__V1__FillParams)AMP__V1__FILL_PARAMS__INIT;
        pb->steps[i] = &slot->step;
        const amp_step *s = abi_step(steps, i);
        if (s->size != steps[0].size)
            return conn_fail(c, AMP_EINVAL, "steps[%zu].size is %zu, steps[0].size %zu: one "
                             "array, one struct size", i, s->size, steps[0].size);
        int rc = steps_encode_one(c, i, s, slot);
        if (rc != 0)
            return rc;
    }
    return 0;
}

void steps_free(struct steps_pb *pb)
{
    free(pb->steps);
    free(pb->slots);
    memset(pb, 0, sizeof *pb);
}

size_t steps_count_hist(const amp_step *steps, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; steps && i < n; i++)
        k += abi_step(steps, i)->kind == AMP_STEP_HISTOGRAM;
    return k;
}

amp_step_kind steps_kind(const amp_step *steps, size_t i)
{
    return abi_step(steps, i)->kind;
}
