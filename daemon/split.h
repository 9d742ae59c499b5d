/* SPDX-License-Identifier: MIT */
/* split.h: one large job over several devices at once.
 *
 * A unary job of histograms and at most one transform, left to the
 * daemon, whose input is larger than a chunk runs on every device of the
 * default type together (sched.c): split_new() cuts its input into
 * contiguous parts, each a job of its own over a view of the parent's
 * input (no copy) whose data result is the matching slice of the parent's
 * result (job->out), so the transform's output is in order as the parts
 * write it; when the last part is back, split_end() sums the histograms
 * and gives the parent the first failure of any part. Parts are not
 * cancelled with their parent: a part already queued runs, and the parent
 * is delivered once every part is back. Loop thread only.
 */
#ifndef AMPD_SPLIT_H
#define AMPD_SPLIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job.h"

struct split;

/* Whether job is of a shape to split, with more than min_bytes of input. */
bool split_fits(const struct job *job, uint64_t min_bytes);

/* Cuts parent into nparts parts (nparts >= 2), its results allocated
 * first. NULL when out of memory: the parent is as it was, to run whole. */
struct split *split_new(struct job *parent, size_t nparts);

/* Part i (its job->split is sp). */
struct job *split_part(struct split *sp, size_t i);

/* A part came back; returns whether it was the last. */
bool split_part_back(struct split *sp);

/* Merges the parts into the parent (status, histograms, device, stage
 * stamps), frees them and sp, and returns the parent. */
struct job *split_end(struct split *sp);

#endif
