/* SPDX-License-Identifier: MIT */
/* job.c: the way a data command's job reaches the daemon. Over
 * shared-memory regions when --transport shm asks (region.c); otherwise
 * over the socket: a Stream call when the input is large or of unknown
 * size (stream.c, io_input_streams), else the command's own unary call
 * (Reverse, Transform, Histogram, Pipeline) with the input in memory.
 */
#include "ampctl.h"

int job_run(struct ampctl *ctx, struct io_input *in, const struct job_spec *j,
            job_unary_fn unary, const void *arg)
{
    int rc = region_job(ctx, in, j);
    if (rc != REGION_UNAVAILABLE)
        return rc;
    if (io_input_streams(in, ctx->stream_threshold))
        return stream_job(ctx, in, j);
    return unary(ctx, in, j, arg);
}
