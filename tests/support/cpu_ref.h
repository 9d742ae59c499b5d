/* cpu_ref.h: plain-C reference implementations of every job step, the
 * oracle the kernel tests compare the devices against. Written for
 * clarity, one element at a time; the histogram bin of a value comes from
 * daemon/hist_bin.h, the one definition the kernels mirror. */
#ifndef AMP_TEST_CPU_REF_H
#define AMP_TEST_CPU_REF_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"

/* out[i] = in[n-1-i]; out and in must not overlap. */
void cpu_ref_reverse(const uint8_t *in, uint8_t *out, size_t n);

/* Applies p to buf[p->offset, p->offset + p->length) in place. */
void cpu_ref_transform(const struct transform_params *p, uint8_t *buf, size_t n);

/* Histogram of len bytes of in (elements of p->type, host byte order) into
 * out; out->counts is malloc'd (free it). Returns 0, -1 if out of memory. */
int cpu_ref_hist(const struct hist_params *p, const uint8_t *in, size_t len,
                 struct hist_result *out);

/* Writes p->count elements of p->type to out (count * elem_size bytes). */
void cpu_ref_fill(const struct fill_params *p, uint8_t *out);

#endif
