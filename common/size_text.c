/* SPDX-License-Identifier: MIT */
/* size_text.c: byte counts with suffixes (size_text.h). */
#include "size_text.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct {
    char suffix;
    unsigned shift;      /* K, M, G, T and KiB...: 1 << shift */
    uint64_t decimal;    /* KB, MB, GB, TB */
} size_text_units[] = {
    { 'T', 40, 1000000000000ull }, { 'G', 30, 1000000000ull }, { 'M', 20, 1000000ull },
    { 'K', 10, 1000ull },
};

void size_text_format(uint64_t bytes, char *buf, size_t len)
{
    for (size_t i = 0; bytes && i < sizeof size_text_units / sizeof size_text_units[0]; i++) {
        uint64_t unit = (uint64_t)1 << size_text_units[i].shift;
        if (bytes % unit == 0) {
            snprintf(buf, len, "%llu%c", (unsigned long long)(bytes / unit),
                     size_text_units[i].suffix);
            return;
        }
    }
    snprintf(buf, len, "%llu", (unsigned long long)bytes);
}

/* The multiplier a suffix stands for (past the digits, to its end): 1 for
 * none or "B"; 0 for anything else. */
static uint64_t size_text_unit(const char *end)
{
    if (!*end || ((end[0] == 'B' || end[0] == 'b') && !end[1]))
        return 1;
    for (size_t i = 0; i < sizeof size_text_units / sizeof size_text_units[0]; i++) {
        if (toupper((unsigned char)end[0]) != size_text_units[i].suffix)
            continue;
        const char *rest = end + 1;
        if (!*rest || strcasecmp(rest, "iB") == 0)
            return (uint64_t)1 << size_text_units[i].shift;
        if (strcasecmp(rest, "B") == 0)
            return size_text_units[i].decimal;
    }
    return 0;
}

int size_text_parse(const char *text, uint64_t *out)
{
    if (!text || *text < '0' || *text > '9')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    uint64_t unit = size_text_unit(end);
    if (errno != 0 || unit == 0 || v > UINT64_MAX / unit)
        return -1;
    *out = (uint64_t)v * unit;
    return 0;
}
