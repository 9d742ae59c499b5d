/* size_text.c: byte counts with binary suffixes (size_text.h). */
#include "size_text.h"

#include <stdio.h>

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
