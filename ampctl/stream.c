/* SPDX-License-Identifier: MIT */
/* stream.c: the streamed path of ampctl's data commands (transform,
 * reverse, hist, pipeline): input from an io_input, output to a file
 * descriptor, a progress bar on a terminal, over amp_stream_run().
 *
 * The callbacks keep local I/O failures apart from the daemon's, so a
 * full disk exits 4 (local I/O) and not 3 (connection).
 */
#include <string.h>
#include <sys/stat.h>

#include "ampctl.h"

struct stream_ctx {
    struct io_input *in;
    struct progress bar;
    int out_fd;
    const char *out_name;
    int out_failed;      /* a write failed (message printed) */
    struct term_out term; /* stdout on a terminal: binary refused, a closing newline */
};

static long stream_read(void *ctx, void *buf, size_t cap)
{
    struct stream_ctx *s = ctx;
    long n = io_input_read(s->in, buf, cap);
    progress_update(&s->bar, s->in->taken);
    return n;
}

static int stream_write(void *ctx, const void *buf, size_t len)
{
    struct stream_ctx *s = ctx;
    if (term_out_check(&s->term, buf, len) != AMPCTL_OK)
        return AMP_EIO; /* s->term.refused: exit 2, not a local I/O error */
    if (io_write_fd(s->out_fd, s->out_name, buf, len) != AMPCTL_OK) {
        s->out_failed = 1;
        return AMP_EIO;
    }
    return 0;
}

/* Opens the output; refuses an output that is the input file itself,
 * which a unary call survives (all read first) but a stream would
 * truncate before reading it. */
static int stream_open_output(const struct io_input *in, const char *output, int *fd)
{
    struct stat a, b;
    if (output && strcmp(output, "-") != 0 && stat(output, &a) == 0 && fstat(in->fd, &b) == 0 &&
        a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
        ampctl_error("%s: the output is the input file; a streamed job would overwrite it as "
                     "it reads it", output);
        return AMPCTL_EUSAGE;
    }
    return io_open_fd(output, fd);
}

/* A reverse or fill step holds the whole input on the device: the daemon
 * takes one of unknown length only up to its --max-unknown-length, so an
 * input of unknown size is read whole and sent with its length. */
static int stream_needs_length(const amp_step *steps, size_t nsteps)
{
    for (size_t i = 0; i < nsteps; i++)
        if (steps[i].kind == AMP_STEP_REVERSE || steps[i].kind == AMP_STEP_FILL)
            return 1;
    return 0;
}

int stream_job(struct ampctl *ctx, struct io_input *in, const struct job_spec *j)
{
    const char *output = j->output;
    int has_output = j->has_output;
    if (!in->size_known && stream_needs_length(j->steps, j->nsteps)) {
        int src = io_input_slurp(in);
        if (src != AMPCTL_OK)
            return src;
    }
    uint64_t total = in->size_known ? in->size : in->eof ? in->head_len : 0;
    struct stream_ctx s = { .in = in, .out_fd = -1, .out_name = output ? output : "stdout" };
    if (strcmp(s.out_name, "-") == 0)
        s.out_name = "stdout";
    int rc = has_output ? stream_open_output(in, output, &s.out_fd) : AMPCTL_OK;
    if (rc != AMPCTL_OK)
        return rc;
    term_out_init(&s.term, has_output ? output : "-");
    progress_start(&s.bar, !ctx->no_progress, total);
    const amp_stream_args a = {
        .size = sizeof a, .steps = j->steps, .nsteps = j->nsteps, .total_length = total,
        .in = stream_read, .in_ctx = &s, .out = has_output ? stream_write : NULL, .out_ctx = &s,
        .hists = j->hists, .nhists = j->nhists,
    };
    int r = amp_stream_run(ctx->conn, &ctx->opts, &a);
    progress_end(&s.bar, in->taken, r == 0);
    if (s.term.refused)
        rc = AMPCTL_EUSAGE;
    else if (in->failed || s.out_failed)
        rc = AMPCTL_EIO;
    else if (r != 0)
        rc = ampctl_fail(ctx, r);
    if (rc == AMPCTL_OK)
        rc = term_out_end(&s.term);
    int crc = has_output ? io_close_fd(output, s.out_fd, rc == AMPCTL_OK) : AMPCTL_OK;
    return rc != AMPCTL_OK ? rc : crc;
}
