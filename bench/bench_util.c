/* SPDX-License-Identifier: MIT */
/* bench_util.c: helpers the benchmark programs share (bench_util.h). */
#define _GNU_SOURCE
#define _GNU_SOURCE  /* program_invocation_short_name */
#include "bench_util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t bench_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void bench_random(uint8_t *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = bench_rand(&seed);
        memcpy(p + i, &v, n - i < 8 ? n - i : 8);
    }
}

uint64_t bench_parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    uint64_t mult = 1;
    if (*end == 'K' || *end == 'k')
        mult = 1ull << 10;
    else if (*end == 'M' || *end == 'm')
        mult = 1ull << 20;
    else if (*end == 'G' || *end == 'g')
        mult = 1ull << 30;
    else if (*end != '\0')
        return 0;
    if (*end != '\0' && end[1] != '\0')
        return 0;
    return v > 0 ? (uint64_t)(v * (double)mult) : 0;
}

void bench_size_label(uint64_t size, char *buf, size_t len, bool compact)
{
    static const struct { unsigned shift; const char *unit, *letter; } units[] = {
        {30, "GiB", "G"}, {20, "MiB", "M"}, {10, "KiB", "K"},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        uint64_t one = 1ull << units[i].shift;
        if (size >= one && size % one == 0) {
            snprintf(buf, len, compact ? "%llu%s" : "%llu %s",
                     (unsigned long long)(size >> units[i].shift),
                     compact ? units[i].letter : units[i].unit);
            return;
        }
    }
    snprintf(buf, len, compact ? "%llu" : "%llu B", (unsigned long long)size);
}

int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void bench_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

double bench_median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof t[0], bench_cmp_double);
    return t[n / 2];
}

void bench_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", program_invocation_short_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

void *bench_alloc_touched(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        bench_die("out of host memory (%zu bytes)", n);
    memset(p, 0, n);
    return p;
}

uint64_t bench_vm_hwm(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    uint64_t kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %" SCNu64, &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib * 1024;
}
