/* SPDX-License-Identifier: MIT */
/* parse.c: option values from text. Whole-string parses only: "12x",
 * "", " 5" and out-of-range values are refused, so a typo is a usage
 * error instead of a silently different job. Integers take C prefixes
 * (0x1f, 017 is decimal 17: base 10 unless 0x).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ampctl.h"
#include "choice.h"
#include "duration_text.h"

#define PARSE_US_PER_MS 1000

static int parse_base(const char *text)
{
    const char *p = text;
    if (*p == '-' || *p == '+')
        p++;
    return (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) ? 16 : 10;
}

int parse_u64(const char *text, uint64_t *out)
{
    if (!text || !*text || text[0] == '-' || text[0] == ' ')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, parse_base(text));
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int parse_i64(const char *text, int64_t *out)
{
    if (!text || !*text || text[0] == ' ')
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, parse_base(text));
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int parse_u32(const char *text, uint32_t max, uint32_t *out)
{
    uint64_t v;
    if (parse_u64(text, &v) != 0 || v > max)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

int parse_double(const char *text, double *out)
{
    if (!text || !*text || text[0] == ' ')
        return -1;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno == ERANGE && isinf(v))
        return -1;
    if (*end || isnan(v))
        return -1;
    *out = v;
    return 0;
}

int parse_float(const char *text, float *out)
{
    double d;
    if (parse_double(text, &d) != 0 || !isfinite((float)d))
        return -1;
    *out = (float)d;
    return 0;
}

int parse_range(const char *text, double *lo, double *hi)
{
    /* The separator is the first ':' after the first character, so a
     * leading minus sign or exponent never confuses it. */
    const char *colon = text && *text ? strchr(text + 1, ':') : NULL;
    if (!colon)
        return -1;
    size_t n = (size_t)(colon - text);
    char left[64];
    if (n >= sizeof left)
        return -1;
    memcpy(left, text, n);
    left[n] = '\0';
    return parse_double(left, lo) == 0 && parse_double(colon + 1, hi) == 0 ? 0 : -1;
}

static const struct {
    const char *name;
    amp_type type;
    size_t size;    /* bytes of one element */
} parse_types[] = {
    { "uint8", AMP_TYPE_UINT8, 1 },     { "uint32", AMP_TYPE_UINT32, 4 },
    { "int32", AMP_TYPE_INT32, 4 },     { "float32", AMP_TYPE_FLOAT32, 4 },
    { "int64", AMP_TYPE_INT64, 8 },
};

const struct choice_set choice_type = CHOICE_SET("type", parse_types);

int parse_type(const char *text, amp_type *out)
{
    for (size_t i = 0; i < sizeof parse_types / sizeof parse_types[0]; i++) {
        if (strcmp(text, parse_types[i].name) == 0) {
            *out = parse_types[i].type;
            return 0;
        }
    }
    return -1;
}

const char *parse_type_name(amp_type t)
{
    for (size_t i = 0; i < sizeof parse_types / sizeof parse_types[0]; i++)
        if (parse_types[i].type == t)
            return parse_types[i].name;
    return "?";
}

size_t parse_type_size(amp_type t)
{
    for (size_t i = 0; i < sizeof parse_types / sizeof parse_types[0]; i++)
        if (parse_types[i].type == t)
            return parse_types[i].size;
    return 1;
}

static const struct {
    const char *name;
    amp_op op;
} parse_ops[] = {
    { "add", AMP_OP_ADD }, { "xor", AMP_OP_XOR }, { "and", AMP_OP_AND },
    { "or", AMP_OP_OR },   { "set", AMP_OP_SET }, { "map", AMP_OP_MAP },
};

const struct choice_set choice_op = CHOICE_SET("op", parse_ops);

int parse_op(const char *text, amp_op *out)
{
    for (size_t i = 0; i < sizeof parse_ops / sizeof parse_ops[0]; i++) {
        if (strcmp(text, parse_ops[i].name) == 0) {
            *out = parse_ops[i].op;
            return 0;
        }
    }
    return -1;
}

int parse_duration_ms(const char *text, uint32_t max, uint32_t *out)
{
    /* A bare number is milliseconds, as -t always took. */
    uint64_t us;
    if (duration_text_parse(text, PARSE_US_PER_MS, (uint64_t)max * PARSE_US_PER_MS, &us) != 0)
        return -1;
    *out = (uint32_t)((us + PARSE_US_PER_MS - 1) / PARSE_US_PER_MS);   /* 0.1ms is a deadline */
    return 0;
}
