/* SPDX-License-Identifier: MIT */
/* cmd_fill.c: `ampctl fill`: A[k] = start + k*step computed on the daemon,
 * written as little-endian binary or as text, one value per line.
 *
 * Binary is the default, except on a terminal, where raw bytes would only
 * garble the screen: there text is the default. --format always wins.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ampctl.h"
#include "choice.h"

#define FILL_FLOAT_DIGITS 9 /* %.9g prints every float32 so that it reads back exactly */

enum fill_format { FILL_AUTO, FILL_BINARY, FILL_TEXT };   /* past AUTO: choice_format's words */

static void fill_usage(FILE *f)
{
    fprintf(f,
            "Usage: ampctl fill --type T --count N [--start S] [--step T] [--tile K]\n"
            "                   [--format binary|text] [-o FILE]\n"
            "Writes A[k] = start + k*step for k = 0..N-1, computed on the daemon.\n"
            "\n"
            "  --type T           int32, uint32, int64 or float32\n"
            "  --count N          number of elements\n"
            "  --start S          first value (default 0); integer types wrap\n"
            "  --step T           increment (default 1)\n"
            "  --tile K           work-group size (default: the daemon's choice)\n"
            "  --format F         binary: little-endian elements (default, except on a\n"
            "                     terminal); text: one value per line\n"
            "  -o, --output FILE  write to FILE instead of stdout\n"
            "  -h, --help         this help\n");
}

struct fill_args {
    amp_fill_params p;
    const char *type, *start, *step; /* parsed once the type is known */
    int have_count;
    enum fill_format format;
    const char *output;
};

static int fill_option(int ch, struct fill_args *a)
{
    switch (ch) {
    case 'y': a->type = optarg; return -1;
    case 'n':
        if (parse_u64(optarg, &a->p.count) != 0)
            return ampctl_usage_error("fill", "--count: '%s' is not a number", optarg);
        a->have_count = 1;
        return -1;
    case 's': a->start = optarg; return -1;
    case 't': a->step = optarg; return -1;
    case 'k':
        if (parse_u32(optarg, UINT32_MAX, &a->p.tile) != 0)
            return ampctl_usage_error("fill", "--tile: '%s' is not a number", optarg);
        return -1;
    case 'f':
    {
        int f = choice_find(&choice_format, optarg);
        if (f < 0) {
            char words[CHOICE_TEXT_MAX];
            choice_text(&choice_format, words, sizeof words);
            return ampctl_usage_error("fill", "--format: '%s' is not %s", optarg, words);
        }
        a->format = (enum fill_format)(FILL_BINARY + f);   /* choice_format's order */
        return -1;
    }
    case 'o': a->output = optarg; return -1;
    case 'h': fill_usage(stdout); return AMPCTL_OK;
    default: return ampctl_bad_option("fill");
    }
}

/* Parses start and step for the chosen type. */
static int fill_values(struct fill_args *a)
{
    const char *start = a->start ? a->start : "0", *step = a->step ? a->step : "1";
    if (a->p.type == AMP_TYPE_FLOAT32) {
        if (parse_float(start, &a->p.start_f) != 0)
            return ampctl_usage_error("fill", "--start: '%s' is not a float", start);
        if (parse_float(step, &a->p.step_f) != 0)
            return ampctl_usage_error("fill", "--step: '%s' is not a float", step);
        return -1;
    }
    if (parse_i64(start, &a->p.start) != 0)
        return ampctl_usage_error("fill", "--start: '%s' is not an integer", start);
    if (parse_i64(step, &a->p.step) != 0)
        return ampctl_usage_error("fill", "--step: '%s' is not an integer", step);
    return -1;
}

static const char fill_short_options[] = "o:h";
static const struct option fill_options[] = {
    { "type", required_argument, NULL, 'y' },   { "count", required_argument, NULL, 'n' },
    { "start", required_argument, NULL, 's' },  { "step", required_argument, NULL, 't' },
    { "tile", required_argument, NULL, 'k' },   { "format", required_argument, NULL, 'f' },
    { "output", required_argument, NULL, 'o' }, { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

static int fill_parse(int argc, char **argv, struct fill_args *a)
{
    int ch;
    while ((ch = getopt_long(argc, argv, fill_short_options, fill_options, NULL)) != -1) {
        if (ch == '?')
            return ampctl_bad_option_in("fill", argv, fill_options);
        int rc = fill_option(ch, a);
        if (rc >= 0)
            return rc;
    }
    if (optind < argc)
        return ampctl_usage_error("fill", "unexpected argument '%s'", argv[optind]);
    if (!a->type || !a->have_count)
        return ampctl_usage_error("fill", "--type and --count are required");
    if (parse_type(a->type, &a->p.type) != 0 || a->p.type == AMP_TYPE_UINT8)
        return ampctl_usage_error("fill", "--type: '%s' is not int32, uint32, int64 or float32",
                                  a->type);
    return fill_values(a);
}

static uint64_t fill_le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

/* One element of type t at p (little-endian) as a line of text. */
static void fill_print_one(FILE *f, amp_type t, const uint8_t *p)
{
    union {
        uint32_t u;
        float f;
    } bits;
    switch (t) {
    case AMP_TYPE_INT32: fprintf(f, "%" PRId32 "\n", (int32_t)(uint32_t)fill_le(p, 4)); break;
    case AMP_TYPE_UINT32: fprintf(f, "%" PRIu32 "\n", (uint32_t)fill_le(p, 4)); break;
    case AMP_TYPE_INT64: fprintf(f, "%" PRId64 "\n", (int64_t)fill_le(p, 8)); break;
    default:
        bits.u = (uint32_t)fill_le(p, 4);
        fprintf(f, "%.*g\n", FILL_FLOAT_DIGITS, (double)bits.f);
        break;
    }
}

static int fill_write_text(const char *path, amp_type t, const uint8_t *data, size_t len)
{
    size_t esz = parse_type_size(t);
    FILE *f;
    int rc = io_open_output(path, &f);
    if (rc != AMPCTL_OK)
        return rc;
    for (size_t off = 0; off + esz <= len; off += esz)
        fill_print_one(f, t, data + off);
    return io_close_output(path, f);
}

static int fill_run(struct ampctl *ctx, int argc, char **argv)
{
    struct fill_args a;
    memset(&a, 0, sizeof a);
    int rc = fill_parse(argc, argv, &a);
    if (rc >= 0)
        return rc;
    rc = ampctl_connect(ctx);
    if (rc != AMPCTL_OK)
        return rc;
    int text = a.format == FILL_TEXT || (a.format == FILL_AUTO && io_is_terminal(a.output));
    if (!text) {
        /* Binary output can come through a region (--transport); text is
         * for a person's screen, and its bytes come in the reply. */
        struct io_input none = { .fd = -1, .eof = 1 };
        amp_step step = { .size = sizeof(amp_step), .kind = AMP_STEP_FILL, .fill = a.p };
        struct job_spec j = { .steps = &step, .nsteps = 1, .output = a.output, .has_output = 1 };
        rc = region_job(ctx, &none, &j);
        if (rc != REGION_UNAVAILABLE)
            return rc;
    }
    void *out = NULL;
    size_t out_len = 0;
    int r = amp_fill(ctx->conn, &ctx->opts, &a.p, &out, &out_len);
    if (r != 0)
        return ampctl_fail(ctx, r);
    rc = text ? fill_write_text(a.output, a.p.type, out, out_len)
              : io_write_all(a.output, out, out_len);
    amp_free(out);
    return rc;
}

const struct ampctl_cmd cmd_fill = {
    .name = "fill",
    .summary = "write start + k*step for k < count (int32/uint32/int64/float32)",
    .run = fill_run,
    .usage = fill_usage,
    .options = fill_options,
    .short_options = fill_short_options,
};
