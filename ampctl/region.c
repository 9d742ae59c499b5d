/* SPDX-License-Identifier: MIT */
/* region.c: the shared-memory path of ampctl's data commands
 * (--transport shm).
 *
 * The input goes into a region (read from the file straight into it; a
 * pipe is read whole first, since a region has its size from the start),
 * the job runs over regions, and the output is written from the region to
 * the output file: no byte crosses the socket. `auto` does not come here:
 * for one job on a file, setting a region up (fresh shared pages filled,
 * mapped by ampd, pinned for a GPU, unmapped) costs more than the socket's
 * copies (bench/RESULTS-archive.md: 1 GiB histogram on the H100 host, 1.38 s
 * against the stream's 0.49). Regions pay off for memory a program keeps
 * and reuses across jobs.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "ampctl.h"

/* Bytes every data step writes (one after another into the output
 * region), from the input's size; 0 on overflow (then the socket path
 * or the daemon refuses). */
static uint64_t region_output_bytes(const amp_step *steps, size_t nsteps, uint64_t len)
{
    uint64_t total = 0;
    for (size_t i = 0; i < nsteps; i++) {
        if (steps[i].kind == AMP_STEP_FILL) {
            uint64_t e = parse_type_size(steps[i].fill.type);
            if (steps[i].fill.count > UINT64_MAX / e)
                return 0;
            len = steps[i].fill.count * e;
        }
        if (steps[i].kind != AMP_STEP_HISTOGRAM) {
            if (len > UINT64_MAX - total)
                return 0;
            total += len;
        }
    }
    return total;
}

/* Copies the whole input into r: what is already read, then the rest of
 * the descriptor straight into the mapping. */
static int region_fill_input(struct io_input *in, amp_region *r, size_t size)
{
    uint8_t *p = amp_region_data(r);
    size_t have = in->head_len - in->head_pos;
    if (have)
        memcpy(p, in->head + in->head_pos, have);
    while (have < size) {
        ssize_t n = read(in->fd, p + have, size - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            ampctl_error("%s: %s", in->name, n < 0 ? strerror(errno) : "shorter than its size");
            return AMPCTL_EIO;
        }
        have += (size_t)n;
    }
    in->taken = size;
    return AMPCTL_OK;
}

static int region_new(struct ampctl *ctx, size_t size, amp_region **r)
{
    int rc = amp_region_create(ctx->conn, size, r);
    return rc == 0 ? AMPCTL_OK : ampctl_fail(ctx, rc);
}

static int region_run(struct ampctl *ctx, amp_region *rin, size_t in_size, amp_region *rout,
                      size_t out_size, const struct job_spec *j)
{
    const amp_step *steps = j->steps;
    size_t nsteps = j->nsteps;
    amp_slice sin = { .size = sizeof sin, .region = rin, .length = in_size };
    amp_slice sout = { .size = sizeof sout, .region = rout, .length = out_size };
    amp_step_result *res = NULL;
    int r = amp_run_region(ctx->conn, &ctx->opts, steps, nsteps, rin ? &sin : NULL,
                           rout ? &sout : NULL, &res);
    if (r != 0)
        return ampctl_fail(ctx, r);
    int rc = AMPCTL_OK;
    size_t k = 0;
    long last = -1;
    for (size_t i = 0; i < nsteps; i++) {
        if (steps[i].kind != AMP_STEP_HISTOGRAM)
            last = (long)i;
        else if (k < j->nhists) {
            j->hists[k++] = res[i].hist;   /* moved: the results no longer own it */
            memset(&res[i].hist, 0, sizeof res[i].hist);
        }
    }
    if (j->has_output && last >= 0)
        rc = io_write_all(j->output, (uint8_t *)amp_region_data(rout) + res[last].region_offset,
                          res[last].len);
    amp_step_results_free(res, nsteps);
    return rc;
}

int region_job(struct ampctl *ctx, struct io_input *in, const struct job_spec *j)
{
    const amp_step *steps = j->steps;
    size_t nsteps = j->nsteps;
    if (ctx->transport != AMPCTL_TRANSPORT_SHM)
        return REGION_UNAVAILABLE;
    int rc = AMPCTL_OK;
    if (!in->eof && !in->size_known)
        rc = io_input_slurp(in);   /* a pipe: its size is known only at its end */
    if (rc != AMPCTL_OK)
        return rc;
    uint64_t in_size = in->eof ? in->head_len - in->head_pos : in->size - in->head_pos;
    uint64_t out_size = region_output_bytes(steps, nsteps, in_size);
    int wants_out = out_size > 0 || (j->has_output && steps[nsteps - 1].kind != AMP_STEP_HISTOGRAM);
    if ((in_size == 0 && steps[0].kind != AMP_STEP_FILL) || (wants_out && out_size == 0) ||
        in_size > SIZE_MAX || out_size > SIZE_MAX)
        return REGION_UNAVAILABLE;   /* nothing to share (or too large to map): the socket */
    amp_region *rin = NULL, *rout = NULL;
    if (rc == AMPCTL_OK && in_size && steps[0].kind != AMP_STEP_FILL)
        rc = region_new(ctx, (size_t)in_size, &rin);
    if (rc == AMPCTL_OK && rin)
        rc = region_fill_input(in, rin, (size_t)in_size);
    if (rc == AMPCTL_OK && out_size)
        rc = region_new(ctx, (size_t)out_size, &rout);
    if (rc == AMPCTL_OK)
        rc = region_run(ctx, rin, (size_t)in_size, rout, (size_t)out_size, j);
    amp_region_release(rin);
    amp_region_release(rout);
    return rc;
}
