/* SPDX-License-Identifier: MIT */
/* cmd_reverse.c: `ampctl reverse`: reverse bytes on the daemon.
 *
 * Output is the exact reversed bytes: a script that pipes or redirects
 * gets what it sent, reversed, and nothing else. On a terminal, term.c
 * ends text with a newline and refuses binary bytes.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "ampctl.h"

static void reverse_usage(FILE *f)
{
    fprintf(f, "Usage: ampctl reverse [TEXT] [-i FILE] [-o FILE]\n"
               "Reverses the bytes of TEXT, of FILE, or of stdin (the default; FILE '-' is stdin).\n"
               "\n"
               "  -i, --input FILE   read the input from FILE\n"
               "  -o, --output FILE  write the result to FILE instead of stdout\n"
               "  -h, --help         this help\n"
               "\n"
               "The result is the exact bytes; on a terminal, text gets a closing newline\n"
               "and binary bytes are refused unless -o - asks for them. Inputs of\n"
               "--stream-threshold bytes or more (see ampctl --help) are streamed; the\n"
               "daemon keeps a streamed reverse whole on its device.\n");
}

struct reverse_args {
    const char *text;   /* TEXT argument or NULL */
    const char *input;  /* -i FILE or NULL */
    const char *output; /* -o FILE or NULL */
};

static const char reverse_short_options[] = "i:o:h";
static const struct option reverse_options[] = {
    { "input", required_argument, NULL, 'i' }, { "output", required_argument, NULL, 'o' },
    { "help", no_argument, NULL, 'h' },        { NULL, 0, NULL, 0 },
};

/* Returns -1 to go on, or an exit code. */
static int reverse_parse(int argc, char **argv, struct reverse_args *a)
{
    int ch;
    while ((ch = getopt_long(argc, argv, reverse_short_options, reverse_options, NULL)) != -1) {
        switch (ch) {
        case 'i': a->input = optarg; break;
        case 'o': a->output = optarg; break;
        case 'h': reverse_usage(stdout); return AMPCTL_OK;
        default: return ampctl_bad_option_in("reverse", argv, reverse_options);
        }
    }
    if (argc - optind > 1)
        return ampctl_usage_error("reverse", "one TEXT argument at most (quote it)");
    if (optind < argc)
        a->text = argv[optind];
    if (a->text && a->input)
        return ampctl_usage_error("reverse", "give TEXT or -i FILE, not both");
    return -1;
}

static int reverse_write(struct ampctl *ctx, const char *output, const void *in, size_t len)
{
    void *out = NULL;
    size_t out_len = 0;
    int r = amp_reverse(ctx->conn, &ctx->opts, in, len, &out, &out_len);
    int rc = r == 0 ? io_write_all(output, out, out_len) : ampctl_fail(ctx, r);
    amp_free(out);
    return rc;
}

static int reverse_unary(struct ampctl *ctx, const struct io_input *in, const struct job_spec *j,
                         const void *arg)
{
    (void)arg;
    return reverse_write(ctx, j->output, in->head, in->head_len);
}

static int reverse_run(struct ampctl *ctx, int argc, char **argv)
{
    struct reverse_args a = { 0 };
    int rc = reverse_parse(argc, argv, &a);
    if (rc >= 0)
        return rc;
    if (a.text) {
        rc = ampctl_connect(ctx);
        return rc == AMPCTL_OK ? reverse_write(ctx, a.output, a.text, strlen(a.text)) : rc;
    }
    struct io_input in = { .fd = -1 };
    rc = io_input_open(a.input, ctx->stream_threshold, &in);
    if (rc == AMPCTL_OK)
        rc = ampctl_connect(ctx);
    if (rc == AMPCTL_OK) {
        amp_step step = { .size = sizeof(amp_step), .kind = AMP_STEP_REVERSE };
        struct job_spec j = { .steps = &step, .nsteps = 1, .output = a.output, .has_output = 1 };
        rc = job_run(ctx, &in, &j, reverse_unary, NULL);
    }
    io_input_close(&in);
    return rc;
}

const struct ampctl_cmd cmd_reverse = {
    .name = "reverse",
    .summary = "reverse bytes (TEXT, -i FILE or stdin)",
    .run = reverse_run,
    .usage = reverse_usage,
    .options = reverse_options,
    .short_options = reverse_short_options,
};
