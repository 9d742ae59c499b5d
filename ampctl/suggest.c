/* SPDX-License-Identifier: MIT */
/* suggest.c: "did you mean" for a mistyped command name. The distance is
 * the optimal string alignment distance (edits, plus a swap of two
 * neighbours as one: "revrese" is one from "reverse"), so the usual slips
 * of a typist count as one.
 */
#include <string.h>

#include "ampctl.h"

/* Names longer than this are not typos of a command; it bounds the rows. */
#define SUGGEST_NAME_MAX 64
/* At most this many edits, and no more than half the typed name. */
#define SUGGEST_EDITS_MAX 2
/* A prefix this long or longer suggests the command it begins ("stat"). */
#define SUGGEST_PREFIX_MIN 3

static size_t suggest_min3(size_t a, size_t b, size_t c)
{
    size_t m = a < b ? a : b;
    return m < c ? m : c;
}

/* Three rows of the dynamic programme: two back for the swap. */
static size_t suggest_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t rows[3][SUGGEST_NAME_MAX + 1];
    size_t *back2 = rows[0], *back1 = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= lb; j++)
        back1[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            cur[j] = suggest_min3(back1[j] + 1, cur[j - 1] + 1, back1[j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                back2[j - 2] + 1 < cur[j])
                cur[j] = back2[j - 2] + 1;
        }
        size_t *t = back2;
        back2 = back1;
        back1 = cur;
        cur = t;
    }
    return back1[lb];
}

const char *suggest_nearest(const char *typed, const char *const *names, size_t n)
{
    size_t len = strlen(typed);
    if (len == 0 || len > SUGGEST_NAME_MAX)
        return NULL;
    const char *best = NULL;
    size_t best_d = SUGGEST_EDITS_MAX + 1;
    for (size_t i = 0; i < n; i++) {
        if (strlen(names[i]) > SUGGEST_NAME_MAX)
            continue;
        if (len >= SUGGEST_PREFIX_MIN && strncmp(names[i], typed, len) == 0)
            return names[i];
        size_t d = suggest_distance(typed, names[i]);
        if (d < best_d && d * 2 <= len) {
            best = names[i];
            best_d = d;
        }
    }
    return best;
}
