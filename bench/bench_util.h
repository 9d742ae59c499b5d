/* SPDX-License-Identifier: MIT */
/* bench_util.h: what the benchmark programs share: reproducible random
 * input, the K/M/G sizes of their options and tables, sorting for
 * medians, and the clock. */
#ifndef AMP_BENCH_UTIL_H
#define AMP_BENCH_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Process pid's peak resident memory (VmHWM) in bytes, 0 if unreadable:
 * the daemon's, beside a bench's figures. */
uint64_t bench_vm_hwm(pid_t pid);

/* n pseudo-random bytes from seed (splitmix64), the same on every run. */
void bench_random(uint8_t *p, size_t n, uint64_t seed);

/* "64K", "1.5M", "4G" or plain bytes; 0 for anything else. */
uint64_t bench_parse_size(const char *s);

/* size as a table label: "4 GiB" ("4G" when compact), "1 MiB", "3 KiB",
 * or bytes when it is no whole number of those. */
void bench_size_label(uint64_t size, char *buf, size_t len, bool compact);

/* qsort comparator for doubles, ascending. */
int bench_cmp_double(const void *a, const void *b);

/* The median of t[0..n) (n >= 1), which it sorts. */
double bench_median(double *t, int n);

/* "PROGRAM: <message>" on stderr, then exit status 2 (could not run). */
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* n zeroed bytes (at least one), touched now so that no page fault lands
 * inside a timing; dies when out of memory. */
void *bench_alloc_touched(size_t n);

/* Seconds on the monotonic clock, from an arbitrary origin. */
double bench_now(void);

/* Sleeps ms milliseconds, through signals. */
void bench_sleep_ms(int ms);

#endif
