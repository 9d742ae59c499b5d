/* SPDX-License-Identifier: MIT */
/* host_step.c: the steps of host_step.h. */
#include "host_step.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hist_bin.h"

void host_step_reverse(const uint8_t *in, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = in[n - 1 - i];
}

static uint8_t host_step_byte(const struct transform_params *p, uint8_t b)
{
    switch (p->op) {
    case XFORM_ADD: return (uint8_t)(b + p->value);
    case XFORM_XOR: return b ^ p->value;
    case XFORM_AND: return b & p->value;
    case XFORM_OR: return b | p->value;
    case XFORM_SET: return p->value;
    case XFORM_MAP: return p->table[b];
    }
    return b;
}

void host_step_transform(const struct transform_params *p, uint8_t *buf, size_t n)
{
    for (size_t i = p->offset; i < p->offset + p->length && i < n; i++)
        buf[i] = host_step_byte(p, buf[i]);
}

static uint32_t host_step_slot(const struct hist_bin *b, enum elem_type t, const uint8_t *e)
{
    uint32_t u;
    int32_t s;
    float f;
    switch (t) {
    case ELEM_U32:
        memcpy(&u, e, sizeof u);
        return hist_bin_slot_int(b, u);
    case ELEM_I32:
        memcpy(&s, e, sizeof s);
        return hist_bin_slot_int(b, s);
    default:
        memcpy(&f, e, sizeof f);
        return hist_bin_slot_float(b, f);
    }
}

int host_step_hist(const struct hist_params *p, const uint8_t *in, size_t len,
                 struct hist_result *out)
{
    memset(out, 0, sizeof(*out));
    out->bins = p->bins;
    out->counts = calloc(p->bins ? p->bins : 1, sizeof(uint64_t));
    if (!out->counts)
        return -1;
    if (p->type == ELEM_U8) {
        for (size_t i = 0; i < len; i++)
            out->counts[in[i]]++;
        return 0;
    }
    struct hist_bin b;
    hist_bin_init(&b, p->bins, p->lo, p->hi);
    size_t es = elem_size(p->type);
    for (size_t i = 0; i + es <= len; i += es) {
        uint32_t s = host_step_slot(&b, p->type, in + i);
        if (s < p->bins)
            out->counts[s]++;
        else if (s == KERNEL_HIST_SLOT_BELOW(p->bins))
            out->below++;
        else if (s == KERNEL_HIST_SLOT_ABOVE(p->bins))
            out->above++;
        else
            out->nan++;
    }
    if (p->clamp) {
        out->counts[0] += out->below;
        out->counts[p->bins - 1] += out->above;
    }
    return 0;
}

void host_step_fill(const struct fill_params *p, uint8_t *out)
{
    for (uint64_t k = 0; k < p->count; k++) {
        /* Unsigned arithmetic: wraps like the element types, no UB. */
        uint64_t v = (uint64_t)p->start + k * (uint64_t)p->step;
        if (p->type == ELEM_F32) {
            float f = fmaf((float)k, p->step_f, p->start_f);
            memcpy(out + 4 * k, &f, 4);
        } else if (p->type == ELEM_I64) {
            memcpy(out + 8 * k, &v, 8);
        } else {
            uint32_t w = (uint32_t)v;
            memcpy(out + 4 * k, &w, 4);
        }
    }
}
