/* SPDX-License-Identifier: MIT */
/* dev_select.h: which of the host's OpenCL devices ampd opens (--devices).
 *
 * Pure logic, no OpenCL: config.c parses the option with it when it is
 * read, and dev_discover.c applies it to the candidate list (every device
 * of every platform, in dev_open_all()'s order) before any device is
 * opened, so a device left out costs no kernel build, thread or memory.
 */
#ifndef AMPD_DEV_SELECT_H
#define AMPD_DEV_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dev.h"

/* Indices one --devices list may name. */
#define DEV_SELECT_MAX_INDICES 64

enum dev_select_mode {
    DEV_SELECT_AUTO,   /* every GPU and accelerator; the CPU devices only where there is none */
    DEV_SELECT_ALL,    /* every device */
    DEV_SELECT_LIST,   /* the types and indices named */
};

struct dev_select {
    enum dev_select_mode mode;
    unsigned types;                          /* LIST: bit (1u << enum dev_type) per type named */
    uint32_t index[DEV_SELECT_MAX_INDICES];  /* LIST: indices named, nindex of them, as given */
    size_t nindex;
};

/* One device found, as the selection sees it. */
struct dev_select_cand {
    enum dev_type type;
    const char *name;      /* for messages; owned by the caller */
};

/* Parses text ("auto", "all", or a comma list of gpu, cpu, accelerator
 * and indices) into *sel. Returns 0, or -1 with a message naming
 * --devices in err. */
int dev_select_parse(const char *text, struct dev_select *sel, char *err, size_t errlen);

/* Marks in chosen[i] whether cands[i] (n of them, in the order
 * dev_open_all() lists devices: an index names a position here) is to be
 * opened; all false on failure. Returns how many are, or -1 with a message
 * naming --devices (text, as the operator wrote it) in err: an index past
 * the list, or a selection that matches no device (the message lists those
 * there are). */
long dev_select_pick(const struct dev_select *sel, const char *text,
                     const struct dev_select_cand *cands, size_t n, bool *chosen, char *err,
                     size_t errlen);

#endif
