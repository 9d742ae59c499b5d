/* size_text.h: byte counts as people write them, with binary suffixes
 * ("64K", "4M", "1G"), for the daemon's and ampctl's help texts. */
#ifndef AMP_SIZE_TEXT_H
#define AMP_SIZE_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Long enough for any uint64_t and its suffix. */
#define SIZE_TEXT_MAX 24

/* bytes into buf: with the largest suffix that divides it exactly (K, M,
 * G, T: powers of 1024), else as a plain number. */
void size_text_format(uint64_t bytes, char *buf, size_t len);

#endif
