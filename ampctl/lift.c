/* SPDX-License-Identifier: MIT */
/* lift.c: ampctl's own options written after the command
 * (`ampctl hist --json`, as kubectl and docker users type them). Before
 * the command runs its getopt, main.c moves them out of its arguments
 * and parses them as if given before it. The command's own options win
 * a clash of names (bench -d is its duration, not the device), and "--"
 * ends the options for both.
 */
#include <string.h>

#include "ampctl.h"

enum lift_owner { LIFT_COMMAND, LIFT_COMMON };

/* How many options of longs name[0..len) matches, exactly or as a prefix
 * (getopt_long takes unique abbreviations); an exact match counts one. */
static int lift_long_matches(const struct option *longs, const char *name, size_t len,
                             const struct option **match)
{
    int n = 0;
    for (const struct option *o = longs; o->name; o++) {
        if (strncmp(o->name, name, len) != 0)
            continue;
        *match = o;
        if (o->name[len] == '\0')
            return 1;
        n++;
    }
    return n;
}

/* -1: c is no short option of shorts; else whether it takes a value. */
static int lift_short_arg(const char *shorts, char c)
{
    if (c == ':' || c == '+' || c == '-')
        return -1;
    const char *p = strchr(shorts, c);
    return p ? p[1] == ':' : -1;
}

/* Who owns the option in arg, and how many argv entries it spans with
 * its value (1 or 2). Non-options and unknown options are the command's:
 * its getopt takes them or reports them. */
static enum lift_owner lift_classify(const struct lift_set *own, const struct lift_set *common,
                                     const char *arg, int *span)
{
    *span = 1;
    if (arg[0] != '-' || arg[1] == '\0')
        return LIFT_COMMAND;
    const struct lift_set *sets[] = { own, common };
    if (arg[1] == '-') {
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        for (int i = 0; i < 2; i++) {
            const struct option *o = NULL;
            int n = lift_long_matches(sets[i]->longs, name, len, &o);
            if (n == 0)
                continue;
            if (n == 1 && !eq && o->has_arg == required_argument)
                *span = 2;
            return i == 0 ? LIFT_COMMAND : LIFT_COMMON;
        }
        return LIFT_COMMAND;
    }
    for (int i = 0; i < 2; i++) {
        int takes = lift_short_arg(sets[i]->shorts, arg[1]);
        if (takes < 0)
            continue;
        if (takes && arg[2] == '\0')
            *span = 2;
        return i == 0 ? LIFT_COMMAND : LIFT_COMMON;
    }
    return LIFT_COMMAND;
}

int lift_options(const struct lift_set *own, const struct lift_set *common, int *argc,
                 char **argv, char **lifted)
{
    int keep = 1, nlifted = 0, i = 1;
    while (i < *argc && strcmp(argv[i], "--") != 0) {
        int span;
        enum lift_owner who = lift_classify(own, common, argv[i], &span);
        for (int k = 0; k < span && i < *argc; k++, i++) {
            if (who == LIFT_COMMON)
                lifted[nlifted++] = argv[i];
            else
                argv[keep++] = argv[i];
        }
    }
    while (i < *argc)
        argv[keep++] = argv[i++];
    argv[keep] = NULL;
    *argc = keep;
    return nlifted;
}
