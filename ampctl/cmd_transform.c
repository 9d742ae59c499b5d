/* SPDX-License-Identifier: MIT */
/* cmd_transform.c: `ampctl transform`: per-byte add/xor/and/or/set, or a
 * map through a 256-byte lookup table, over all bytes or a sub-range.
 * The table file is checked here, before anything is sent.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "ampctl.h"
#include "choice.h"

#define TRANSFORM_VALUE_MAX 255

static void transform_usage(FILE *f)
{
    fprintf(f,
            "Usage: ampctl transform --op add|xor|and|or|set --value V [RANGE] [-i FILE] [-o FILE]\n"
            "       ampctl transform --op map --lut FILE [RANGE] [-i FILE] [-o FILE]\n"
            "Applies a per-byte operation to the input (-i FILE, or stdin) on the daemon.\n"
            "\n"
            "  --op OP            add (mod 256), xor, and, or, set, or map\n"
            "  --value V          operand 0..255 (decimal or 0x hex) for add/xor/and/or/set\n"
            "  --lut FILE         map: a table of exactly 256 bytes; byte b becomes table[b]\n"
            "  --offset N         first byte to change (default 0)\n"
            "  --length N         bytes to change (default: to the end)\n"
            "  -i, --input FILE   read the input from FILE ('-': stdin, the default)\n"
            "  -o, --output FILE  write the result to FILE instead of stdout\n"
            "  -h, --help         this help\n"
            "\n"
            "Bytes outside the range are returned unchanged. Inputs of --stream-threshold\n"
            "bytes or more (see ampctl --help) are streamed through the daemon in chunks.\n");
}

struct transform_args {
    amp_transform_params p;
    int have_op, have_value;
    const char *lut;    /* --lut FILE */
    const char *input;  /* -i FILE */
    const char *output; /* -o FILE */
};

static int transform_parse_op(const char *text, amp_op *op)
{
    if (parse_op(text, op) == 0)
        return 0;
    char words[CHOICE_TEXT_MAX];
    choice_text(&choice_op, words, sizeof words);
    return ampctl_usage_error("transform", "--op: '%s' is not %s", text, words);
}

/* Handles one option; returns -1 to go on, or an exit code. */
static int transform_option(int ch, struct transform_args *a)
{
    uint32_t v;
    switch (ch) {
    case 'p':
        a->have_op = 1;
        return transform_parse_op(optarg, &a->p.op) == 0 ? -1 : AMPCTL_EUSAGE;
    case 'v':
        if (parse_u32(optarg, TRANSFORM_VALUE_MAX, &v) != 0)
            return ampctl_usage_error("transform", "--value: '%s' is not a number 0..255", optarg);
        a->p.value = (uint8_t)v;
        a->have_value = 1;
        return -1;
    case 'f':
        if (parse_u64(optarg, &a->p.offset) != 0)
            return ampctl_usage_error("transform", "--offset: '%s' is not a byte count", optarg);
        return -1;
    case 'n':
        if (parse_u64(optarg, &a->p.length) != 0)
            return ampctl_usage_error("transform", "--length: '%s' is not a byte count", optarg);
        a->p.has_length = 1;
        return -1;
    case 'l': a->lut = optarg; return -1;
    case 'i': a->input = optarg; return -1;
    case 'o': a->output = optarg; return -1;
    case 'h': transform_usage(stdout); return AMPCTL_OK;
    default: return ampctl_bad_option("transform");
    }
}

static int transform_check(int argc, struct transform_args *a)
{
    if (optind < argc)
        return ampctl_usage_error("transform", "unexpected argument; input comes from -i or stdin");
    if (!a->have_op)
        return ampctl_usage_error("transform", "--op is required");
    if (a->p.op == AMP_OP_MAP && !a->lut)
        return ampctl_usage_error("transform", "--op map needs --lut FILE");
    if (a->p.op != AMP_OP_MAP && a->lut)
        return ampctl_usage_error("transform", "--lut only goes with --op map");
    if (a->p.op != AMP_OP_MAP && !a->have_value)
        return ampctl_usage_error("transform", "--op needs --value V");
    if (a->p.op == AMP_OP_MAP && a->have_value)
        return ampctl_usage_error("transform", "--value does not go with --op map");
    return -1;
}

static const char transform_short_options[] = "i:o:h";
static const struct option transform_options[] = {
    { "op", required_argument, NULL, 'p' },     { "value", required_argument, NULL, 'v' },
    { "offset", required_argument, NULL, 'f' }, { "length", required_argument, NULL, 'n' },
    { "lut", required_argument, NULL, 'l' },    { "input", required_argument, NULL, 'i' },
    { "output", required_argument, NULL, 'o' }, { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

static int transform_parse(int argc, char **argv, struct transform_args *a)
{
    int ch;
    while ((ch = getopt_long(argc, argv, transform_short_options, transform_options, NULL)) != -1) {
        if (ch == '?')
            return ampctl_bad_option_in("transform", argv, transform_options);
        int rc = transform_option(ch, a);
        if (rc >= 0)
            return rc;
    }
    return transform_check(argc, a);
}

/* Reads the lookup table; anything but 256 bytes is a usage error. */
static int transform_read_lut(const char *path, uint8_t **table)
{
    size_t len;
    int rc = io_read_all(path, table, &len);
    if (rc != AMPCTL_OK)
        return rc;
    if (len != AMP_MAP_TABLE_LEN) {
        free(*table);
        *table = NULL;
        return ampctl_usage_error("transform", "--lut %s: a table is exactly %d bytes, not %zu",
                                  path, AMP_MAP_TABLE_LEN, len);
    }
    return AMPCTL_OK;
}

/* Small inputs: one Transform call with the input in memory (job_unary_fn;
 * arg: the parameters). */
static int transform_unary(struct ampctl *ctx, const struct io_input *in,
                           const struct job_spec *j, const void *arg)
{
    const amp_transform_params *p = arg;
    void *out = NULL;
    size_t out_len = 0;
    int r = amp_transform(ctx->conn, &ctx->opts, p, in->head, in->head_len, &out, &out_len);
    int rc = r == 0 ? io_write_all(j->output, out, out_len) : ampctl_fail(ctx, r);
    amp_free(out);
    return rc;
}

static int transform_run(struct ampctl *ctx, int argc, char **argv)
{
    struct transform_args a;
    memset(&a, 0, sizeof a);
    int rc = transform_parse(argc, argv, &a);
    if (rc >= 0)
        return rc;
    uint8_t *table = NULL;
    struct io_input in = { .fd = -1 };
    rc = a.lut ? transform_read_lut(a.lut, &table) : AMPCTL_OK;
    if (rc == AMPCTL_OK)
        rc = io_input_open(a.input, ctx->stream_threshold, &in);
    if (rc == AMPCTL_OK)
        rc = ampctl_connect(ctx);
    if (rc == AMPCTL_OK) {
        a.p.table = table;
        a.p.table_len = table ? AMP_MAP_TABLE_LEN : 0;
        amp_step step = { .size = sizeof(amp_step), .kind = AMP_STEP_TRANSFORM, .transform = a.p };
        struct job_spec j = { .steps = &step, .nsteps = 1, .output = a.output, .has_output = 1 };
        rc = job_run(ctx, &in, &j, transform_unary, &a.p);
    }
    io_input_close(&in);
    free(table);
    return rc;
}

const struct ampctl_cmd cmd_transform = {
    .name = "transform",
    .summary = "per-byte add/xor/and/or/set, or map through a 256-byte table",
    .run = transform_run,
    .usage = transform_usage,
    .options = transform_options,
    .short_options = transform_short_options,
};
