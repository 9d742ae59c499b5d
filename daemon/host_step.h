/* SPDX-License-Identifier: MIT */
/* host_step.h: every job step in plain C, on the host's CPU: what the host
 * path (host.c) runs small jobs with, and the oracle the kernel tests
 * compare the devices against. Written for clarity, one element at a time
 * (the host path takes only jobs whose work is smaller than a device
 * launch costs); the histogram bin of a value comes from hist_bin.h, on
 * kernels/kernel_abi.h's formula, which the kernels use too. */
#ifndef AMPD_HOST_STEP_H
#define AMPD_HOST_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"

/* out[i] = in[n-1-i]; out and in must not overlap. */
void host_step_reverse(const uint8_t *in, uint8_t *out, size_t n);

/* Applies p to buf[p->offset, p->offset + p->length) in place. */
void host_step_transform(const struct transform_params *p, uint8_t *buf, size_t n);

/* Histogram of len bytes of in (elements of p->type, host byte order) into
 * out; out->counts is malloc'd (free it). Returns 0, -1 if out of memory. */
int host_step_hist(const struct hist_params *p, const uint8_t *in, size_t len,
                 struct hist_result *out);

/* Writes p->count elements of p->type to out (count * elem_size bytes). */
void host_step_fill(const struct fill_params *p, uint8_t *out);

#endif
