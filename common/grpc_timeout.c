/* SPDX-License-Identifier: MIT */
/* grpc_timeout.c: see grpc_timeout.h. */
#include "grpc_timeout.h"

#include <inttypes.h>
#include <stdio.h>

#define GRPC_TIMEOUT_NS_PER_US 1000

/* The units in microseconds, finest first ('n' is handled apart: it is
 * finer than a microsecond). */
static const struct {
    char unit;
    uint64_t us;
} grpc_timeout_units[] = {
    { 'u', 1 }, { 'm', 1000 }, { 'S', 1000000 }, { 'M', 60000000 }, { 'H', 3600000000u },
};
#define GRPC_TIMEOUT_NUNITS (sizeof grpc_timeout_units / sizeof grpc_timeout_units[0])

bool grpc_timeout_parse(const uint8_t *v, size_t len, uint64_t *us)
{
    if (len < 2 || len > GRPC_TIMEOUT_DIGITS + 1)
        return false;
    uint64_t n = 0;   /* at most 8 digits: no unit below overflows */
    for (size_t i = 0; i + 1 < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return false;
        n = n * 10 + (uint64_t)(v[i] - '0');
    }
    char unit = (char)v[len - 1];
    if (unit == 'n') {
        *us = (n + GRPC_TIMEOUT_NS_PER_US - 1) / GRPC_TIMEOUT_NS_PER_US;
        return true;
    }
    for (size_t i = 0; i < GRPC_TIMEOUT_NUNITS; i++) {
        if (grpc_timeout_units[i].unit == unit) {
            *us = n * grpc_timeout_units[i].us;
            return true;
        }
    }
    return false;
}

void grpc_timeout_format(char out[GRPC_TIMEOUT_TEXT], uint64_t us)
{
    uint64_t most = 1;
    for (int i = 0; i < GRPC_TIMEOUT_DIGITS; i++)
        most *= 10;
    most--;
    for (size_t i = 0; i < GRPC_TIMEOUT_NUNITS; i++) {
        uint64_t unit = grpc_timeout_units[i].us;
        uint64_t v = us / unit + (us % unit != 0);
        if (v > most && i + 1 < GRPC_TIMEOUT_NUNITS)
            continue;
        if (v > most)
            v = most;   /* past 99999999 hours: the longest there is */
        snprintf(out, GRPC_TIMEOUT_TEXT, "%" PRIu64 "%c", v, grpc_timeout_units[i].unit);
        return;
    }
}
