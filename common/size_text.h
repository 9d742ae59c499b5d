/* SPDX-License-Identifier: MIT */
/* size_text.h: byte counts as people write them ("64K", "4MiB", "1GB"),
 * read from the daemon's options and ampctl's and written in their help
 * texts. */
#ifndef AMP_SIZE_TEXT_H
#define AMP_SIZE_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Long enough for any uint64_t and its suffix. */
#define SIZE_TEXT_MAX 24

/* bytes into buf: with the largest suffix that divides it exactly (K, M,
 * G, T: powers of 1024), else as a plain number. */
void size_text_format(uint64_t bytes, char *buf, size_t len);

/* Reads text, the whole of it, as decimal digits and an optional suffix,
 * either case: K, M, G, T or KiB, MiB, GiB, TiB (powers of 1024: what
 * size_text_format writes), KB, MB, GB, TB (powers of 1000, as disks and
 * networks count), or B (bytes), into *out. Returns 0, or -1 (*out
 * unchanged) for anything else: "", a sign, a space, another suffix, or a
 * value past UINT64_MAX. */
int size_text_parse(const char *text, uint64_t *out);

#endif
