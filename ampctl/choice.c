/* SPDX-License-Identifier: MIT */
/* choice.c: option values from fixed sets (choice.h). */
#include "choice.h"

#include <stdio.h>
#include <string.h>

#include "ampctl.h"
#include "call_class.h"

/* In the order of enum ampctl_transport. */
static const char *const choice_transport_words[] = { "auto", "shm", "socket" };
_Static_assert(AMPCTL_TRANSPORT_SOCKET == 2, "choice_transport_words follows the enum");
static const char *const choice_priority_words[] = CALL_CLASS_PRIORITY_NAMES;
static const char *const choice_format_words[] = { "binary", "text" };
static const char *const choice_kind_words[] = { "reverse", "transform", "hist", "fill" };

const struct choice_set choice_transport = CHOICE_SET("transport", choice_transport_words);
const struct choice_set choice_priority = CHOICE_SET("priority", choice_priority_words);
const struct choice_set choice_format = CHOICE_SET("format", choice_format_words);
const struct choice_set choice_kind = CHOICE_SET("kind", choice_kind_words);

static const struct choice_set *const choice_sets[] = {
    &choice_transport, &choice_priority, &choice_format, &choice_kind, &choice_op, &choice_type,
};

const char *choice_word(const struct choice_set *s, size_t i)
{
    return *(const char *const *)((const char *)s->table + i * s->stride);
}

int choice_find(const struct choice_set *s, const char *text)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(text, choice_word(s, i)) == 0)
            return (int)i;
    return -1;
}

void choice_text(const struct choice_set *s, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < s->n && at < len; i++) {
        const char *sep = i == 0 ? "" : i + 1 == s->n ? " or " : ", ";
        int n = snprintf(buf + at, len - at, "%s%s", sep, choice_word(s, i));
        if (n < 0)
            break;
        at += (size_t)n;
    }
}

const struct choice_set *choice_of(const char *option)
{
    for (size_t i = 0; i < sizeof choice_sets / sizeof choice_sets[0]; i++)
        if (strcmp(option, choice_sets[i]->option) == 0)
            return choice_sets[i];
    return NULL;
}
