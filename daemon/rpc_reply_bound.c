/* SPDX-License-Identifier: MIT */
/* rpc_reply_bound.c: a job's reply size before it runs (rpc_reply_bound.h).
 *
 * Every field of the reply messages below has a number under 16, so each
 * tag is one byte. Scalars and packed counts are varints: a count is at
 * most the number of elements its histogram counts, which bounds its
 * varint. proto3 leaves zero fields out, so the bound may exceed the
 * reply by those, never fall short of it.
 */
#include "rpc_reply_bound.h"

#include "pb_wire.h"
#include "sat.h"

#define RPC_BOUND_TAG 1        /* bytes of a tag: field numbers < 16 */
#define RPC_BOUND_SLICE_FIELDS 3 /* RegionSlice: region, offset, length */
#define RPC_BOUND_HIST_TOTALS 3  /* Histogram: below, above, nan */

/* A length-delimited field (bytes, string, message) of n bytes. */
static uint64_t rpc_bound_len_field(uint64_t n)
{
    return sat_add_u64(RPC_BOUND_TAG + pb_varint_len(n), n);
}

/* A varint field of any value up to max. */
static uint64_t rpc_bound_varint_field(uint64_t max)
{
    return RPC_BOUND_TAG + pb_varint_len(max);
}

static uint64_t rpc_bound_device(void)
{
    return rpc_bound_len_field(JOB_DEVICE_MAX - 1);
}

/* RegionSlice as a field: three uint64 of any value. */
static uint64_t rpc_bound_slice(void)
{
    return rpc_bound_len_field(RPC_BOUND_SLICE_FIELDS * rpc_bound_varint_field(UINT64_MAX));
}

/* Histogram as a field, for a step seeing len bytes. */
static uint64_t rpc_bound_hist(const struct hist_params *p, uint64_t len)
{
    uint64_t elems = len / elem_size(p->type);
    uint64_t counts = sat_mul_u64(p->bins, pb_varint_len(elems));   /* packed */
    uint64_t body = sat_add_u64(rpc_bound_len_field(counts),
                                RPC_BOUND_HIST_TOTALS * rpc_bound_varint_field(elems));
    return rpc_bound_len_field(body);
}

/* Data step output of len bytes as a field: the bytes, or where they went. */
static uint64_t rpc_bound_data(const struct job *job, uint64_t len)
{
    return job->out_region ? rpc_bound_slice() : rpc_bound_len_field(len);
}

/* PipelineReply's results: a StepResult per step, each a field. */
static uint64_t rpc_bound_results(const struct job *job)
{
    uint64_t len = job->in_len, total = 0;
    for (size_t i = 0; i < job->nsteps; i++) {
        const struct step *st = &job->steps[i];
        uint64_t out = job_step_output_len(st, len);
        uint64_t res = st->kind == STEP_HISTOGRAM ? rpc_bound_hist(&st->u.hist, len)
                                                  : rpc_bound_data(job, out);
        total = sat_add_u64(total, rpc_bound_len_field(res));
        len = out;
    }
    return total;
}

uint64_t rpc_reply_bound(const struct job *job, enum rpc_reply_kind kind)
{
    uint64_t body = 0;
    switch (kind) {
    case RPC_REPLY_DATA:
        body = rpc_bound_data(job, job_step_output_len(&job->steps[0], job->in_len));
        break;
    case RPC_REPLY_HISTOGRAM:
        body = rpc_bound_hist(&job->steps[0].u.hist, job->in_len);
        break;
    case RPC_REPLY_PIPELINE:
        body = rpc_bound_results(job);
        break;
    }
    return sat_add_u64(body, rpc_bound_device());
}

uint64_t rpc_reply_bound_stream_result(const struct job *job, size_t i, uint64_t len)
{
    uint64_t res = rpc_bound_len_field(rpc_bound_hist(&job->steps[i].u.hist, len));
    return sat_add_u64(res, rpc_bound_device());
}
