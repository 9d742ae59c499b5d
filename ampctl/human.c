/* SPDX-License-Identifier: MIT */
/* human.c: sizes and times in ampctl's text output as people read them
 * ("1.5 GiB", "118.5 ms"); --json keeps the exact numbers (ampctl.h). */
#include <stdio.h>

#include "ampctl.h"

#define HUMAN_KIB 1024.0
#define HUMAN_US_PER_MS 1e3
#define HUMAN_US_PER_S 1e6

void human_bytes(char *buf, size_t cap, uint64_t bytes)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    double v = (double)bytes;
    size_t u = 0;
    while (v >= HUMAN_KIB && u + 1 < sizeof units / sizeof units[0]) {
        v /= HUMAN_KIB;
        u++;
    }
    snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

void human_us(char *buf, size_t cap, double us)
{
    if (us >= HUMAN_US_PER_S)
        snprintf(buf, cap, "%.2f s", us / HUMAN_US_PER_S);
    else if (us >= HUMAN_US_PER_MS)
        snprintf(buf, cap, "%.1f ms", us / HUMAN_US_PER_MS);
    else
        snprintf(buf, cap, "%.1f us", us);
}
