/* SPDX-License-Identifier: MIT */
/* cmd_hist.c: `ampctl hist`: histogram of little-endian values.
 *
 * Three outputs: --json for scripts; on a terminal a bar chart (chart.c);
 * otherwise a plain "bin_lo bin_hi count" table, one line per bin, that
 * awk and gnuplot read directly.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ampctl.h"

#define HIST_DEFAULT_BINS 16
#define HIST_BYTE_BINS 256
/* Bytes of the device's name shown under the chart; a longer name is cut
 * at a whole character (term_escape). */
#define HIST_DEVICE_MAX 128

static void hist_usage(FILE *f)
{
    fprintf(f,
            "Usage: ampctl hist [--type T] [--bins N] [--range LO:HI] [--clamp] [-i FILE]\n"
            "Counts the input's values (-i FILE, or stdin) into bins on the daemon.\n"
            "\n"
            "  --type T          uint8 (default: 256 bins, one per byte value), uint32, int32\n"
            "                    or float32 (little-endian values; needs --range)\n"
            "  --bins N          uniform bins over the range (default %d)\n"
            "  --range LO:HI     bin range [LO, HI), e.g. 0:1 or -5e3:5e3\n"
            "  --clamp           also count values outside the range in the edge bins\n"
            "  -i, --input FILE  read the input from FILE ('-': stdin, the default)\n"
            "  -h, --help        this help\n"
            "\n"
            "Output: a bar chart on a terminal; when piped, one line per bin:\n"
            "\"bin_lo bin_hi count\"; with ampctl --json, an object\n"
            "{\"counts\":[...],\"below\":N,\"above\":N,\"nan\":N,\"device\":\"...\"}.\n"
            "Values below LO, at or above HI, and NaNs are counted apart (see --json).\n"
            "Inputs of --stream-threshold bytes or more (see ampctl --help) are streamed.\n",
            HIST_DEFAULT_BINS);
}

struct hist_args {
    amp_hist_params p;
    int have_bins, have_range;
    const char *input;
};

static int hist_option(int ch, struct hist_args *a)
{
    switch (ch) {
    case 'y':
        if (parse_type(optarg, &a->p.type) != 0 || a->p.type == AMP_TYPE_INT64)
            return ampctl_usage_error("hist", "--type: '%s' is not uint8, uint32, int32 or float32",
                                      optarg);
        return -1;
    case 'b':
        if (parse_u32(optarg, UINT32_MAX, &a->p.bins) != 0)
            return ampctl_usage_error("hist", "--bins: '%s' is not a number", optarg);
        a->have_bins = 1;
        return -1;
    case 'r':
        if (parse_range(optarg, &a->p.lo, &a->p.hi) != 0)
            return ampctl_usage_error("hist", "--range: '%s' is not LO:HI", optarg);
        a->have_range = 1;
        return -1;
    case 'c': a->p.clamp = 1; return -1;
    case 'i': a->input = optarg; return -1;
    case 'h': hist_usage(stdout); return AMPCTL_OK;
    default: return ampctl_bad_option("hist");
    }
}

static const char hist_short_options[] = "i:h";
static const struct option hist_options[] = {
    { "type", required_argument, NULL, 'y' },  { "bins", required_argument, NULL, 'b' },
    { "range", required_argument, NULL, 'r' }, { "clamp", no_argument, NULL, 'c' },
    { "input", required_argument, NULL, 'i' }, { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

static int hist_parse(int argc, char **argv, struct hist_args *a)
{
    a->p.type = AMP_TYPE_UINT8;
    int ch;
    while ((ch = getopt_long(argc, argv, hist_short_options, hist_options, NULL)) != -1) {
        if (ch == '?')
            return ampctl_bad_option_in("hist", argv, hist_options);
        int rc = hist_option(ch, a);
        if (rc >= 0)
            return rc;
    }
    if (optind < argc)
        return ampctl_usage_error("hist", "unexpected argument; input comes from -i or stdin");
    if (a->p.type != AMP_TYPE_UINT8 && !a->have_range)
        return ampctl_usage_error("hist", "--type %s needs --range LO:HI",
                                  parse_type_name(a->p.type));
    /* Byte histograms: bins 0 means "one per byte value" to the daemon. */
    if (!a->have_bins && a->p.type != AMP_TYPE_UINT8)
        a->p.bins = HIST_DEFAULT_BINS;
    return -1;
}

static void hist_print_table(FILE *f, const amp_hist *h, const amp_hist_params *p)
{
    int bytes = p->type == AMP_TYPE_UINT8;
    for (uint32_t i = 0; i < h->bins; i++) {
        if (bytes) {
            fprintf(f, "%u %u %" PRIu64 "\n", i, i + 1, h->counts[i]);
        } else {
            double w = (p->hi - p->lo) / h->bins;
            fprintf(f, "%.10g %.10g %" PRIu64 "\n", p->lo + w * i, p->lo + w * (i + 1),
                    h->counts[i]);
        }
    }
}

static void hist_print(struct ampctl *ctx, const amp_hist *h, const amp_hist_params *p)
{
    if (ctx->json) {
        json_hist(stdout, h, -1, amp_last_device(ctx->conn));
    } else if (io_is_terminal(NULL)) {
        char device[TERM_ESCAPED_MAX(HIST_DEVICE_MAX)];
        chart_draw(stdout, h, p->type == AMP_TYPE_UINT8, p->lo, p->hi);
        printf("below %" PRIu64 ", above %" PRIu64 ", nan %" PRIu64 "; device %s\n", h->below,
               h->above, h->nan, term_escape(device, sizeof device, amp_last_device(ctx->conn)));
    } else {
        hist_print_table(stdout, h, p);
    }
}

/* One Histogram call with the input in memory (job_unary_fn; arg: the
 * parameters), into j's histogram. */
static int hist_unary(struct ampctl *ctx, const struct io_input *in, const struct job_spec *j,
                      const void *arg)
{
    int r = amp_histogram(ctx->conn, &ctx->opts, arg, in->head, in->head_len, &j->hists[0]);
    return r == 0 ? AMPCTL_OK : ampctl_fail(ctx, r);
}

static int hist_run(struct ampctl *ctx, int argc, char **argv)
{
    struct hist_args a;
    memset(&a, 0, sizeof a);
    int rc = hist_parse(argc, argv, &a);
    if (rc >= 0)
        return rc;
    struct io_input in = { .fd = -1 };
    rc = io_input_open(a.input, ctx->stream_threshold, &in);
    if (rc == AMPCTL_OK)
        rc = ampctl_connect(ctx);
    if (rc == AMPCTL_OK) {
        amp_hist h;
        memset(&h, 0, sizeof h);
        amp_step step = { .size = sizeof(amp_step), .kind = AMP_STEP_HISTOGRAM, .hist = a.p };
        struct job_spec j = { .steps = &step, .nsteps = 1, .hists = &h, .nhists = 1 };
        rc = job_run(ctx, &in, &j, hist_unary, &a.p);
        if (rc == AMPCTL_OK) {
            hist_print(ctx, &h, &a.p);
            rc = io_close_output(NULL, stdout);
        }
        amp_hist_free(&h);
    }
    io_input_close(&in);
    return rc;
}

const struct ampctl_cmd cmd_hist = {
    .name = "hist",
    .summary = "histogram of bytes, or of uint32/int32/float32 values",
    .run = hist_run,
    .usage = hist_usage,
    .options = hist_options,
    .short_options = hist_short_options,
    .json = 1,
};
