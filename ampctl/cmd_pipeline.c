/* SPDX-License-Identifier: MIT */
/* cmd_pipeline.c: `ampctl pipeline STEP...`: several steps over one input
 * as one job, e.g. `transform:add:3 hist`.
 *
 * The output of the last data-producing step (reverse, transform, fill)
 * goes to -o FILE or stdout, exact bytes; each histogram step prints one
 * JSON line ({"step":N,"counts":[...],...}) on stdout, so a pipeline with
 * both needs -o for the data. Small inputs go in one Pipeline call,
 * larger ones (--stream-threshold) are streamed, as for the one-step
 * commands. A pipeline that starts with fill reads no input.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "ampctl.h"
#include "amp_wire.h"

#define PIPELINE_MAX_FIELDS 8    /* "transform:add:3:OFFSET:LENGTH" and the like */
#define PIPELINE_SPEC_MAX 512
#define PIPELINE_VALUE_MAX 255

static void pipeline_usage(FILE *f)
{
    fprintf(f,
            "Usage: ampctl pipeline [-i FILE] [-o FILE] STEP...\n"
            "Runs the steps over the input (-i FILE, or stdin) as one job on the daemon;\n"
            "each step works on the output of the one before.\n"
            "\n"
            "Steps:\n"
            "  reverse\n"
            "  transform:OP:V[:OFFSET[:LENGTH]]   OP add, xor, and, or or set; V 0..255\n"
            "  transform:map:LUTFILE[:OFFSET[:LENGTH]]   a 256-byte lookup table\n"
            "  hist                               256 bins, one per byte value\n"
            "  hist:TYPE:BINS:LO:HI[:clamp]       TYPE uint32, int32 or float32\n"
            "  fill:TYPE:COUNT[:START[:STEP]]     TYPE int32, uint32, int64 or float32;\n"
            "                                     a fill ignores its input\n"
            "\n"
            "  -i, --input FILE   read the input from FILE ('-': stdin, the default)\n"
            "  -o, --output FILE  write the last data step's output to FILE (needed when\n"
            "                     there are histogram steps too)\n"
            "  -h, --help         this help\n"
            "\n"
            "Output: the bytes of the last reverse/transform/fill step; one JSON line per\n"
            "histogram step on stdout. Inputs of --stream-threshold bytes or more are\n"
            "streamed (see ampctl --help).\n"
            "Example: ampctl pipeline -i in.bin -o out.bin transform:add:3 hist\n");
}

struct pipeline_args {
    amp_step steps[AMP_WIRE_MAX_STEPS];
    uint8_t *tables[AMP_WIRE_MAX_STEPS]; /* map tables, malloc'd, owned */
    size_t nsteps, nhists;
    int has_data;        /* some step produces bytes */
    const char *input, *output;
};

/* Splits spec at ':' into fields (pointers into buf). */
static size_t pipeline_split(const char *spec, char *buf, char **fields)
{
    snprintf(buf, PIPELINE_SPEC_MAX, "%s", spec);
    size_t n = 0;
    for (char *p = buf; n < PIPELINE_MAX_FIELDS;) {
        fields[n++] = p;
        char *colon = strchr(p, ':');
        if (!colon)
            break;
        *colon = '\0';
        p = colon + 1;
    }
    return n;
}

static int pipeline_bad(const char *spec, const char *why)
{
    return ampctl_usage_error("pipeline", "step '%s': %s", spec, why);
}

static int pipeline_read_lut(struct pipeline_args *a, const char *spec, const char *path,
                             amp_transform_params *p)
{
    uint8_t **table = &a->tables[a->nsteps];
    size_t len;
    int rc = io_read_all(path, table, &len);
    if (rc != AMPCTL_OK)
        return rc;
    if (len != AMP_MAP_TABLE_LEN)
        return pipeline_bad(spec, "a lookup table is exactly 256 bytes");
    p->table = *table;
    p->table_len = AMP_MAP_TABLE_LEN;
    return AMPCTL_OK;
}

static int pipeline_transform(struct pipeline_args *a, const char *spec, char **f, size_t n,
                              amp_transform_params *p)
{
    uint32_t v = 0;
    if (n < 3 || n > 5)
        return pipeline_bad(spec, "want transform:OP:V[:OFFSET[:LENGTH]]");
    if (parse_op(f[1], &p->op) != 0)
        return pipeline_bad(spec, "OP is add, xor, and, or, set or map");
    if (p->op == AMP_OP_MAP) {
        int rc = pipeline_read_lut(a, spec, f[2], p);
        if (rc != AMPCTL_OK)
            return rc;
    } else if (parse_u32(f[2], PIPELINE_VALUE_MAX, &v) != 0) {
        return pipeline_bad(spec, "V is a number 0..255");
    }
    p->value = (uint8_t)v;
    if (n > 3 && parse_u64(f[3], &p->offset) != 0)
        return pipeline_bad(spec, "OFFSET is a byte count");
    if (n > 4) {
        if (parse_u64(f[4], &p->length) != 0)
            return pipeline_bad(spec, "LENGTH is a byte count");
        p->has_length = 1;
    }
    return AMPCTL_OK;
}

static int pipeline_hist(const char *spec, char **f, size_t n, amp_hist_params *p)
{
    p->type = AMP_TYPE_UINT8;
    if (n == 1)
        return AMPCTL_OK;
    if (n < 5 || n > 6 || (n == 6 && strcmp(f[5], "clamp") != 0))
        return pipeline_bad(spec, "want hist or hist:TYPE:BINS:LO:HI[:clamp]");
    if (parse_type(f[1], &p->type) != 0 || p->type == AMP_TYPE_INT64)
        return pipeline_bad(spec, "TYPE is uint8, uint32, int32 or float32");
    if (parse_u32(f[2], UINT32_MAX, &p->bins) != 0)
        return pipeline_bad(spec, "BINS is a number");
    if (parse_double(f[3], &p->lo) != 0 || parse_double(f[4], &p->hi) != 0)
        return pipeline_bad(spec, "LO and HI are numbers");
    p->clamp = n == 6;
    return AMPCTL_OK;
}

static int pipeline_fill(const char *spec, char **f, size_t n, amp_fill_params *p)
{
    if (n < 3 || n > 5)
        return pipeline_bad(spec, "want fill:TYPE:COUNT[:START[:STEP]]");
    if (parse_type(f[1], &p->type) != 0 || p->type == AMP_TYPE_UINT8)
        return pipeline_bad(spec, "TYPE is int32, uint32, int64 or float32");
    if (parse_u64(f[2], &p->count) != 0)
        return pipeline_bad(spec, "COUNT is a number");
    const char *start = n > 3 ? f[3] : "0", *step = n > 4 ? f[4] : "1";
    int bad = p->type == AMP_TYPE_FLOAT32
                  ? parse_float(start, &p->start_f) != 0 || parse_float(step, &p->step_f) != 0
                  : parse_i64(start, &p->start) != 0 || parse_i64(step, &p->step) != 0;
    return bad ? pipeline_bad(spec, "START and STEP are numbers of the type") : AMPCTL_OK;
}

/* Parses one STEP argument into a->steps[a->nsteps]. */
static int pipeline_step(struct pipeline_args *a, const char *spec)
{
    if (a->nsteps == AMP_WIRE_MAX_STEPS)
        return ampctl_usage_error("pipeline", "at most %d steps", AMP_WIRE_MAX_STEPS);
    if (strlen(spec) >= PIPELINE_SPEC_MAX)
        return pipeline_bad(spec, "too long");
    char buf[PIPELINE_SPEC_MAX], *f[PIPELINE_MAX_FIELDS] = {0};
    size_t n = pipeline_split(spec, buf, f);
    amp_step *s = &a->steps[a->nsteps];
    memset(s, 0, sizeof *s);
    s->size = sizeof *s;
    int rc;
    if (strcmp(f[0], "reverse") == 0) {
        s->kind = AMP_STEP_REVERSE;
        rc = n == 1 ? AMPCTL_OK : pipeline_bad(spec, "reverse takes no parameters");
    } else if (strcmp(f[0], "transform") == 0) {
        s->kind = AMP_STEP_TRANSFORM;
        rc = pipeline_transform(a, spec, f, n, &s->transform);
    } else if (strcmp(f[0], "hist") == 0) {
        s->kind = AMP_STEP_HISTOGRAM;
        rc = pipeline_hist(spec, f, n, &s->hist);
        a->nhists++;
    } else if (strcmp(f[0], "fill") == 0) {
        s->kind = AMP_STEP_FILL;
        rc = pipeline_fill(spec, f, n, &s->fill);
    } else {
        rc = pipeline_bad(spec, "not reverse, transform, hist or fill");
    }
    a->has_data |= s->kind != AMP_STEP_HISTOGRAM;
    a->nsteps++;
    return rc;
}

static const char pipeline_short_options[] = "i:o:h";
static const struct option pipeline_options[] = {
    { "input", required_argument, NULL, 'i' }, { "output", required_argument, NULL, 'o' },
    { "help", no_argument, NULL, 'h' },        { NULL, 0, NULL, 0 },
};

static int pipeline_parse(int argc, char **argv, struct pipeline_args *a)
{
    int ch;
    while ((ch = getopt_long(argc, argv, pipeline_short_options, pipeline_options, NULL)) != -1) {
        switch (ch) {
        case 'i': a->input = optarg; break;
        case 'o': a->output = optarg; break;
        case 'h': pipeline_usage(stdout); return AMPCTL_OK;
        default: return ampctl_bad_option_in("pipeline", argv, pipeline_options);
        }
    }
    if (optind >= argc)
        return ampctl_usage_error("pipeline", "no steps given");
    for (int i = optind; i < argc; i++) {
        int rc = pipeline_step(a, argv[i]);
        if (rc != AMPCTL_OK)
            return rc;
    }
    if (a->has_data && a->nhists && (!a->output || strcmp(a->output, "-") == 0))
        return ampctl_usage_error("pipeline", "histograms go to stdout: give -o FILE for the "
                                  "data output");
    return -1;
}

/* The index of the last step that produces bytes, or -1. */
static long pipeline_last_data(const struct pipeline_args *a)
{
    for (size_t i = a->nsteps; i-- > 0;)
        if (a->steps[i].kind != AMP_STEP_HISTOGRAM)
            return (long)i;
    return -1;
}

static int pipeline_print_hists(struct ampctl *ctx, const struct pipeline_args *a,
                                const amp_hist *hists)
{
    size_t k = 0;
    for (size_t i = 0; i < a->nsteps; i++)
        if (a->steps[i].kind == AMP_STEP_HISTOGRAM)
            json_hist(stdout, &hists[k++], (long)i, amp_last_device(ctx->conn));
    return io_close_output(NULL, stdout);
}

/* One Pipeline call with the input in memory (job_unary_fn; arg: the
 * parsed command line). */
static int pipeline_unary(struct ampctl *ctx, const struct io_input *in,
                          const struct job_spec *j, const void *arg)
{
    const struct pipeline_args *a = arg;
    amp_step_result *r = NULL;
    int rc = amp_pipeline(ctx->conn, &ctx->opts, a->steps, a->nsteps, in->head, in->head_len, &r);
    if (rc != 0)
        return ampctl_fail(ctx, rc);
    long last = pipeline_last_data(a);
    rc = last >= 0 ? io_write_all(a->output, r[last].data, r[last].len) : AMPCTL_OK;
    size_t k = 0;
    for (size_t i = 0; i < a->nsteps; i++) {
        if (a->steps[i].kind == AMP_STEP_HISTOGRAM) {
            j->hists[k++] = r[i].hist; /* moved: the results no longer own it */
            memset(&r[i].hist, 0, sizeof r[i].hist);
        }
    }
    amp_step_results_free(r, a->nsteps);
    return rc;
}

static int pipeline_go(struct ampctl *ctx, const struct pipeline_args *a, amp_hist *hists)
{
    struct io_input in = { .fd = -1, .eof = 1 }; /* a leading fill reads nothing */
    int rc = a->steps[0].kind == AMP_STEP_FILL
                 ? AMPCTL_OK
                 : io_input_open(a->input, ctx->stream_threshold, &in);
    if (rc == AMPCTL_OK)
        rc = ampctl_connect(ctx);
    if (rc == AMPCTL_OK) {
        struct job_spec j = { .steps = a->steps, .nsteps = a->nsteps, .output = a->output,
                              .has_output = a->has_data, .hists = hists, .nhists = a->nhists };
        rc = job_run(ctx, &in, &j, pipeline_unary, a);
    }
    if (rc == AMPCTL_OK && a->nhists)
        rc = pipeline_print_hists(ctx, a, hists);
    io_input_close(&in);
    return rc;
}

static int pipeline_run(struct ampctl *ctx, int argc, char **argv)
{
    struct pipeline_args a;
    memset(&a, 0, sizeof a);
    amp_hist hists[AMP_WIRE_MAX_STEPS];
    memset(hists, 0, sizeof hists);
    int rc = pipeline_parse(argc, argv, &a);
    if (rc < 0)
        rc = pipeline_go(ctx, &a, hists);
    for (size_t i = 0; i < a.nhists; i++)
        amp_hist_free(&hists[i]);
    for (size_t i = 0; i < a.nsteps; i++)
        free(a.tables[i]);
    return rc;
}

const struct ampctl_cmd cmd_pipeline = {
    .name = "pipeline",
    .summary = "several steps as one job: pipeline transform:add:3 hist",
    .run = pipeline_run,
    .usage = pipeline_usage,
    .options = pipeline_options,
    .short_options = pipeline_short_options,
    .json = 1,
};
