/* SPDX-License-Identifier: MIT */
/* dev_select.c: the --devices selection (see dev_select.h).
 *
 * By default (auto) a CPU device is opened only where the host has no GPU
 * or accelerator: on a GPU host PoCL's CPU device took ~90 MiB, 17
 * threads, a staging pool and 2.2 s of kernel builds for a device no job
 * went to (issue 36).
 */
#include "dev_select.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Here, not in dev_discover.c: the names are the selection's words, and
 * this file needs no OpenCL (the fuzz harnesses link it). */
const char *dev_type_name(enum dev_type t)
{
    switch (t) {
    case DEV_GPU: return "gpu";
    case DEV_CPU: return "cpu";
    case DEV_ACCEL: return "accelerator";
    }
    return "unknown";
}

#define DEV_SELECT_AUTO_WORD "auto"
#define DEV_SELECT_ALL_WORD "all"
#define DEV_SELECT_ITEM_MAX 32   /* one word or index of the list; longer is no word */
#define DEV_SELECT_THERE_MAX 512 /* the devices there are, as a message lists them */

static const enum dev_type dev_select_types[] = { DEV_GPU, DEV_CPU, DEV_ACCEL };
#define DEV_SELECT_NTYPES (sizeof dev_select_types / sizeof dev_select_types[0])

/* One item of a list: a type word or an index. */
static int dev_select_item(const char *item, struct dev_select *sel, char *err, size_t errlen)
{
    for (size_t t = 0; t < DEV_SELECT_NTYPES; t++) {
        if (strcmp(item, dev_type_name(dev_select_types[t])) == 0) {
            sel->types |= 1u << dev_select_types[t];
            return 0;
        }
    }
    bool digits = item[0] != '\0';
    for (const char *p = item; *p; p++)
        digits = digits && *p >= '0' && *p <= '9';
    errno = 0;
    unsigned long v = digits ? strtoul(item, NULL, 10) : 0;
    if (!digits || errno || v > UINT32_MAX) {
        snprintf(err, errlen, "--devices: \"%s\" is not gpu, cpu, accelerator or a device index",
                 item);
        return -1;
    }
    if (sel->nindex == DEV_SELECT_MAX_INDICES) {
        snprintf(err, errlen, "--devices: at most %d indices", DEV_SELECT_MAX_INDICES);
        return -1;
    }
    sel->index[sel->nindex++] = (uint32_t)v;
    return 0;
}

int dev_select_parse(const char *text, struct dev_select *sel, char *err, size_t errlen)
{
    memset(sel, 0, sizeof *sel);
    if (strcmp(text, DEV_SELECT_AUTO_WORD) == 0)
        return 0;
    if (strcmp(text, DEV_SELECT_ALL_WORD) == 0) {
        sel->mode = DEV_SELECT_ALL;
        return 0;
    }
    sel->mode = DEV_SELECT_LIST;
    const char *p = text;
    for (;;) {
        size_t len = strcspn(p, ",");
        char item[DEV_SELECT_ITEM_MAX];
        if (len == 0 || len >= sizeof item) {
            snprintf(err, errlen, "--devices: \"%s\" is not auto, all, or a comma list of gpu, "
                     "cpu, accelerator and device indices", text);
            return -1;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        if (strcmp(item, DEV_SELECT_AUTO_WORD) == 0 || strcmp(item, DEV_SELECT_ALL_WORD) == 0) {
            snprintf(err, errlen, "--devices: \"%s\" stands alone, not in a list", item);
            return -1;
        }
        if (dev_select_item(item, sel, err, errlen) < 0)
            return -1;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

/* "0: NAME (TYPE), 1: ..." of the n devices there are, into buf. */
static void dev_select_describe(const struct dev_select_cand *cands, size_t n, char *buf,
                                size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%zu: %s (%s)", i ? ", " : "", i,
                                 cands[i].name, dev_type_name(cands[i].type));
    if (n == 0)
        snprintf(buf, len, "none");
}

long dev_select_pick(const struct dev_select *sel, const char *text,
                     const struct dev_select_cand *cands, size_t n, bool *chosen, char *err,
                     size_t errlen)
{
    char there[DEV_SELECT_THERE_MAX];
    dev_select_describe(cands, n, there, sizeof there);
    for (size_t i = 0; i < n; i++)
        chosen[i] = false;   /* defined on failure too */
    bool any_gpu = false;
    for (size_t i = 0; i < n; i++)
        any_gpu = any_gpu || cands[i].type != DEV_CPU;
    for (size_t k = 0; k < sel->nindex; k++) {
        if (sel->index[k] >= n) {
            snprintf(err, errlen, "--devices %s: there is no device %u; this host has %s", text,
                     (unsigned)sel->index[k], there);
            return -1;
        }
    }
    long picked = 0;
    for (size_t i = 0; i < n; i++) {
        bool on;
        switch (sel->mode) {
        case DEV_SELECT_ALL: on = true; break;
        case DEV_SELECT_AUTO: on = cands[i].type != DEV_CPU || !any_gpu; break;
        default: on = (sel->types & (1u << cands[i].type)) != 0; break;
        }
        for (size_t k = 0; k < sel->nindex; k++)
            on = on || sel->index[k] == i;
        chosen[i] = on;
        picked += on;
    }
    if (picked == 0) {
        snprintf(err, errlen, "--devices %s matches no device; this host has %s", text, there);
        return -1;
    }
    return picked;
}
