/* SPDX-License-Identifier: MIT */
/* split.c: one large job over several devices (split.h). */
#include "split.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "region.h"

/* Parts start on this boundary: a whole number of elements of every type
 * and of the kernels' 16-byte words. */
#define SPLIT_ALIGN 4096

struct split {
    struct job *parent;
    size_t n, back;
    struct job *parts[];
};

bool split_fits(const struct job *job, uint64_t min_bytes)
{
    if (job->device_req[0] || job->in_len <= min_bytes || job->nsteps == 0)
        return false;
    size_t transforms = 0;
    for (size_t i = 0; i < job->nsteps; i++) {
        enum step_kind k = job->steps[i].kind;
        if (k == STEP_TRANSFORM)
            transforms++;
        else if (k != STEP_HISTOGRAM)
            return false;
    }
    return transforms <= 1;
}

static void split_free(struct split *sp)
{
    for (size_t i = 0; i < sp->n; i++)
        job_free(sp->parts[i]);
    free(sp);
}

/* Part [off, off + len) of the parent's input; data is the parent's data
 * result, if it has one. */
static struct job *split_part_new(struct split *sp, size_t off, size_t len, uint8_t *data)
{
    const struct job *parent = sp->parent;
    struct job *part = job_new(parent->nsteps);
    if (!part)
        return NULL;
    for (size_t i = 0; i < parent->nsteps; i++) {
        struct step *st = &part->steps[i];
        *st = parent->steps[i];
        /* A part holding none of the transform's sub-range transforms
         * nothing of it. */
        if (st->kind == STEP_TRANSFORM &&
            !job_transform_clip(&parent->steps[i].u.transform, off, len, &st->u.transform))
            st->u.transform.offset = st->u.transform.length = 0;
    }
    part->cls = parent->cls;   /* scheduled as the client's own job */
    part->in = parent->in ? parent->in + off : NULL;
    part->in_len = len;
    if ((part->in_region = parent->in_region))
        region_ref(part->in_region);
    if (data) {
        part->out = data + off;
        part->out_cap = len;
        if ((part->out_region = parent->out_region))
            region_ref(part->out_region);
    }
    part->t_submit = parent->t_submit;
    part->split = sp;
    return part;
}

struct split *split_new(struct job *parent, size_t nparts)
{
    if (job_run_begin(parent) != STATUS_OK)
        return NULL;
    struct split *sp = calloc(1, sizeof(*sp) + nparts * sizeof(sp->parts[0]));
    if (!sp)
        return NULL;
    sp->parent = parent;
    uint8_t *data = NULL;
    for (size_t i = 0; i < parent->nsteps; i++) {
        if (parent->steps[i].kind != STEP_TRANSFORM)
            continue;
        if (job_result_alloc(parent, &parent->results[i], parent->in_len) != STATUS_OK) {
            job_drop_results(parent);
            free(sp);
            return NULL;
        }
        data = parent->results[i].data;
    }
    size_t step = parent->in_len / nparts / SPLIT_ALIGN * SPLIT_ALIGN;
    for (size_t k = 0; k < nparts; k++) {
        size_t off = k * step;
        size_t len = k + 1 == nparts ? parent->in_len - off : step;
        sp->parts[k] = split_part_new(sp, off, len, data);
        sp->n = k + 1;
        if (!sp->parts[k]) {
            split_free(sp);
            job_drop_results(parent);
            return NULL;
        }
    }
    return sp;
}

struct job *split_part(struct split *sp, size_t i)
{
    return sp->parts[i];
}

bool split_part_back(struct split *sp)
{
    return ++sp->back == sp->n;
}

/* Step i's histogram: the parts' counts summed. */
static enum status_code split_sum_hist(struct split *sp, size_t i)
{
    struct job *parent = sp->parent;
    struct hist_result *h = &parent->results[i].hist;
    uint32_t bins = parent->steps[i].u.hist.bins;
    h->counts = calloc(bins, sizeof(uint64_t));
    if (!h->counts)
        return job_fail(parent, STATUS_RESOURCE_EXHAUSTED, "no host memory for %u bins", bins);
    h->bins = bins;
    for (size_t k = 0; k < sp->n; k++) {
        const struct hist_result *p = &sp->parts[k]->results[i].hist;
        for (uint32_t b = 0; b < bins; b++)
            h->counts[b] += p->counts[b];
        h->below += p->below;
        h->above += p->above;
        h->nan += p->nan;
    }
    return STATUS_OK;
}

/* "0+1: name": the devices that ran the parts, and the first one's name.
 * A part that never ran (the job failed, and the reply names no device)
 * is left out. */
static void split_device(struct split *sp)
{
    struct job *parent = sp->parent;
    size_t used = 0;
    parent->device[0] = '\0';
    for (size_t k = 0; k < sp->n; k++) {
        if (sp->parts[k]->device_index < 0)
            continue;
        int w = snprintf(parent->device + used, sizeof parent->device - used, "%s%d",
                         used ? "+" : "", sp->parts[k]->device_index);
        if (w < 0 || (size_t)w >= sizeof parent->device - used)
            return;
        used += (size_t)w;
    }
    const char *name = strchr(sp->parts[0]->device, ':');
    snprintf(parent->device + used, sizeof parent->device - used, "%s", name ? name : "");
}

struct job *split_end(struct split *sp)
{
    struct job *parent = sp->parent;
    parent->t_start = sp->parts[0]->t_start;
    parent->t_done = sp->parts[0]->t_done;
    for (size_t k = 0; k < sp->n; k++) {
        const struct job *part = sp->parts[k];
        if (part->t_start < parent->t_start)
            parent->t_start = part->t_start;
        if (part->t_done > parent->t_done)
            parent->t_done = part->t_done;
        if (part->status != STATUS_OK && parent->status == STATUS_OK)
            job_fail(parent, part->status, "%s", part->msg);
    }
    for (size_t i = 0; i < parent->nsteps && parent->status == STATUS_OK; i++)
        if (parent->steps[i].kind == STEP_HISTOGRAM)
            split_sum_hist(sp, i);
    split_device(sp);
    if (parent->status != STATUS_OK)
        job_drop_results(parent);   /* no partial results on failure */
    split_free(sp);
    return parent;
}
