/* SPDX-License-Identifier: MIT */
/* size_text.c: byte counts with binary suffixes (size_text.h). */
#include "size_text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static const struct {
    char suffix;
    unsigned shift;
} size_text_units[] = { { 'T', 40 }, { 'G', 30 }, { 'M', 20 }, { 'K', 10 } };

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

int size_text_parse(const char *text, uint64_t *out)
{
    if (!text || *text < '0' || *text > '9')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0)
        return -1;
    unsigned shift = 0;
    for (size_t i = 0; *end && i < sizeof size_text_units / sizeof size_text_units[0]; i++)
        if (*end == size_text_units[i].suffix || *end == size_text_units[i].suffix + ('a' - 'A'))
            shift = size_text_units[i].shift;
    if (shift)
        end++;
    if (*end != '\0' || v > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}
