/* SPDX-License-Identifier: MIT */
/* rpc_reply_bound.h: the most bytes a job's reply message can take, known
 * once its request is validated, before any device work.
 *
 * A reply over --max-message-bytes cannot be sent (rpc_reply refuses it),
 * so a job whose reply could be that large is refused at validation
 * instead of after it ran (rpc_jobs.c, rpc_stream.c). The bound follows
 * amp.proto's reply messages field by field from what validation knows:
 * each data step's output length (job_step_output_len), each histogram's
 * bins and the elements it counts (no count can be larger), an output
 * region's slice, and the device's name (at most JOB_DEVICE_MAX - 1 bytes).
 * Sums saturate (sat.h).
 */
#ifndef AMPD_RPC_REPLY_BOUND_H
#define AMPD_RPC_REPLY_BOUND_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"

/* Which message answers the job. */
enum rpc_reply_kind {
    RPC_REPLY_DATA,       /* DataReply: Reverse, Transform, Fill */
    RPC_REPLY_HISTOGRAM,  /* HistogramReply: Histogram */
    RPC_REPLY_PIPELINE,   /* PipelineReply: Pipeline */
};

/* Packed bytes of job's reply at most (gRPC's 5-byte prefix not
 * included): its steps validated against in_len, with out_region set
 * where its data goes into a region. */
uint64_t rpc_reply_bound(const struct job *job, enum rpc_reply_kind kind);

/* The same for a Stream's result message of histogram step i (a
 * StreamReply holding its StepResult), the step seeing len bytes. */
uint64_t rpc_reply_bound_stream_result(const struct job *job, size_t i, uint64_t len);

#endif
