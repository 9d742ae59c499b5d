/* SPDX-License-Identifier: MIT */
/* duration_text.c: durations with units (duration_text.h). */
#include "duration_text.h"

#include <stdlib.h>
#include <string.h>

#define DURATION_TEXT_NUMBER_MAX 32

static const struct {
    const char *suffix;
    double us;
} duration_text_units[] = {
    { "us", 1 }, { "ms", 1e3 }, { "s", 1e6 }, { "m", 60e6 }, { "h", 3600e6 },
};

int duration_text_parse(const char *text, uint64_t bare_us, uint64_t max_us, uint64_t *us)
{
    if (!text)
        return -1;
    size_t n = strspn(text, "0123456789.");
    char num[DURATION_TEXT_NUMBER_MAX];
    if (n == 0 || n >= sizeof num || strchr(text, '.') != strrchr(text, '.'))
        return -1;
    memcpy(num, text, n);
    num[n] = '\0';
    char *end;
    double v = strtod(num, &end);   /* digits and one point: a plain decimal */
    if (*end || num[0] == '.')
        return -1;
    double unit = text[n] ? 0 : (double)bare_us;
    for (size_t i = 0; text[n] && i < sizeof duration_text_units / sizeof duration_text_units[0];
         i++)
        if (strcmp(text + n, duration_text_units[i].suffix) == 0)
            unit = duration_text_units[i].us;
    double t = v * unit;
    if (unit == 0 || !(t <= (double)max_us))
        return -1;
    uint64_t whole = (uint64_t)t;
    *us = whole + ((double)whole < t);   /* rounded up, without libm's ceil */
    return 0;
}
