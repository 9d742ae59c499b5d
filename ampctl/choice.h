/* SPDX-License-Identifier: MIT */
/* choice.h: the options whose value is one of a fixed set of words, each
 * set one table, which the option's parser and the shell completion both
 * read (cmd_completion.c), so a new value completes as soon as it parses. */
#ifndef AMPCTL_CHOICE_H
#define AMPCTL_CHOICE_H

#include <stddef.h>

/* Room for choice_text's "a, b or c". */
#define CHOICE_TEXT_MAX 128

struct choice_set {
    const char *option;   /* the long option, without "--" */
    const void *table;    /* entries whose first member is the word (const char *) */
    size_t stride, n;
};
#define CHOICE_SET(option, table) { (option), (table), sizeof (table)[0], \
                                    sizeof(table) / sizeof (table)[0] }

/* Word i of s. */
const char *choice_word(const struct choice_set *s, size_t i);
/* The index of text in s, or -1. */
int choice_find(const struct choice_set *s, const char *text);
/* "a, b or c", for a message. */
void choice_text(const struct choice_set *s, char *buf, size_t len);
/* The set of the long option name, or NULL. */
const struct choice_set *choice_of(const char *option);

/* The sets (choice.c has the simple ones, parse.c those of its tables). */
extern const struct choice_set choice_transport, choice_priority, choice_format, choice_kind,
    choice_op, choice_type;

#endif
