/* SPDX-License-Identifier: MIT */
/* dev_tune.c: each kernel family's GPU variant chosen on the device by
 * measurement, once per device and driver (issue 36).
 *
 * The variants were picked on one H100 and every GPU got them; on the
 * H200 the reverse that was not picked ran 3% faster. At a device's first
 * start the tuner builds every variant, times each family's (reverse, the
 * transforms, map, the 256-bin and N-bin histograms) on DEV_TUNE_BYTES of
 * random bytes in device memory, best of DEV_TUNE_REPS after a warm-up,
 * and keeps the fastest; then, for the histograms that count in local
 * memory, how many work-groups per compute unit to launch. The choice
 * goes into the program cache as an entry of its own, keyed like the
 * programs (platform, device, driver, every kernel file's text), so a
 * later start reads it and builds, or loads, only the chosen kernels; a
 * new driver or kernel source misses the key and tunes again, and
 * --retune on measures anew. CPU-shaped devices have one kernel per family
 * and are not tuned. The runs are bounded by DEV_TUNE_MAX_NS (a family
 * not reached in time keeps the default). Building every variant is the
 * other cost: the device then serves from those programs, and the chosen
 * ones alone are built in the background for the cache (a second compile
 * the first start no longer waits for: 13.9-17.3 s to SERVING on the H200
 * with it in line).
 */
#include "dev_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "log.h"
#include "monotonic.h"
#include "op.h"
#include "prog_cache.h"

/* Each timed sample is DEV_TUNE_LAUNCHES runs back to back on up to
 * DEV_TUNE_BYTES, so that the wait for the device is noise beside them:
 * on the H200, single runs of 64 MiB timed at a third of the device's
 * rate and the two reverses came out equal, where at 1 GiB one is 4%
 * faster. A device with less memory tunes on less (DEV_TUNE_MEM_SHARE). */
#define DEV_TUNE_BYTES ((size_t)256 << 20)
#define DEV_TUNE_MEM_SHARE 8              /* in and out: at most 1/8 of memory each */
#define DEV_TUNE_LAUNCHES 4
#define DEV_TUNE_REPS 5
#define DEV_TUNE_MAX_NS (3ull * 1000 * 1000 * 1000)
#define DEV_TUNE_BLOCK ((size_t)1 << 20)  /* random bytes written over the input */
/* The cache entry: a text line, versioned so that a new layout misses. */
#define DEV_TUNE_FORMAT                                                                      \
    "ampd-tune 3 reverse=%d transform=%d hist256=%d map=%d histn=%d hist256_groups=%u"       \
    " histn_groups=%u\n"
#define DEV_TUNE_ENTRY_MAX 128

static bool dev_tune_again;
static size_t dev_tune_bytes = DEV_TUNE_BYTES;

void dev_set_tune_bytes_for_test(size_t bytes)
{
    dev_tune_bytes = bytes;
}

void dev_use_retune(bool again)
{
    dev_tune_again = again;
}

/* The families the tuner measures, and their variants. */
enum dev_tune_family {
    DEV_TUNE_REVERSE, DEV_TUNE_TRANSFORM, DEV_TUNE_HIST256, DEV_TUNE_MAP, DEV_TUNE_HISTN,
    DEV_TUNE_FAMILIES
};
static const int dev_tune_count[DEV_TUNE_FAMILIES] = {2, 2, 3, 3, 2};
static const char *const dev_tune_name[DEV_TUNE_FAMILIES] = {"reverse", "transform", "hist256",
                                                             "map", "histn"};
/* The N-bin histogram the tuner times: uint32 over their whole range. */
#define DEV_TUNE_HISTN_BINS 1024
/* Groups per compute unit the local-memory histograms try (0: as many as
 * fit). On the H200 at 1 GiB, hist256_inc ran at 0.81 of copy with the 6
 * that fit, 0.83 / 0.87 / 0.84 with 2 / 3 / 4; histn_inc at 0.71 as fit
 * and 0.69 / 0.71 / 0.71. 2 is not tried: over the tuner's 256 MiB
 * launches it ties 3 within noise and then loses at 1 GiB. */
static const unsigned dev_tune_groups[] = {0, 3, 4};
#define DEV_TUNE_GROUPS_MAX 64   /* a kept entry's sanity bound */

static enum dev_variant *dev_tune_field(struct dev_variants *v, enum dev_tune_family f)
{
    switch (f) {
    case DEV_TUNE_REVERSE: return &v->reverse;
    case DEV_TUNE_TRANSFORM: return &v->transform;
    case DEV_TUNE_HIST256: return &v->hist256;
    case DEV_TUNE_MAP: return &v->map;
    default: return &v->histn;
    }
}

/* The cache key of d's choice: the programs' key over every kernel file. */
static bool dev_tune_key(const struct dev *d, struct prog_cache_key *key)
{
    size_t len = 1;
    for (size_t i = 0; kernel_sources[i].name; i++)
        len += strlen(kernel_sources[i].source);
    char *all = malloc(len);
    if (!all)
        return false;
    size_t at = 0;
    for (size_t i = 0; kernel_sources[i].name; i++) {
        size_t n = strlen(kernel_sources[i].source);
        memcpy(all + at, kernel_sources[i].source, n);
        at += n;
    }
    all[at] = '\0';
    dev_cache_key(d, all, "ampd-tune", key);
    free(all);
    return true;
}

void dev_tune_describe(const struct dev *d, char *buf, size_t len)
{
    if (d->shape == DEV_SHAPE_CPU) {
        snprintf(buf, len, "cpu kernels");
        return;
    }
    const struct dev_variants *v = &d->variants;
    /* Short enough for amp_device.kernels (47 characters): "/N" is N
     * work-groups per compute unit, none as many as fit. */
    char g256[16] = "", gn[16] = "";
    if (v->hist256_groups)
        snprintf(g256, sizeof g256, "/%u", v->hist256_groups);
    if (v->histn_groups)
        snprintf(gn, sizeof gn, "/%u", v->histn_groups);
    snprintf(buf, len, "rev v%d, xform v%d, map v%d, h256 v%d%s, hN v%d%s", (int)v->reverse,
             (int)v->transform, (int)v->map, (int)v->hist256, g256, (int)v->histn, gn);
}

bool dev_tune_load(struct dev *d)
{
    struct prog_cache *c = dev_cache_get();
    struct prog_cache_key key;
    if (!c || dev_tune_again || !dev_tune_key(d, &key))
        return false;
    unsigned char *bytes;
    size_t len;
    char why[256];
    enum prog_cache_result r = prog_cache_load(c, &key, &bytes, &len, why, sizeof why);
    if (r == PROG_CACHE_DAMAGED)
        log_msg(LOG_WARN, "%s: kernel tuning entry: %s: tuning anew", d->info.name, why);
    if (r != PROG_CACHE_HIT)
        return false;
    char text[DEV_TUNE_ENTRY_MAX] = "";
    memcpy(text, bytes, len < sizeof text - 1 ? len : sizeof text - 1);
    free(bytes);
    int v[DEV_TUNE_FAMILIES], end = 0;
    unsigned g256, gn;
    if (sscanf(text, DEV_TUNE_FORMAT "%n", &v[0], &v[1], &v[2], &v[3], &v[4], &g256, &gn,
               &end) != 7 ||
        (size_t)end != len || g256 > DEV_TUNE_GROUPS_MAX || gn > DEV_TUNE_GROUPS_MAX)
        return false;
    struct dev_variants got = d->variants;
    for (int f = 0; f < DEV_TUNE_FAMILIES; f++) {
        if (v[f] < DEV_VARIANT_V1 || v[f] > dev_tune_count[f])
            return false;
        *dev_tune_field(&got, (enum dev_tune_family)f) = (enum dev_variant)v[f];
    }
    got.hist256_groups = g256;
    got.histn_groups = gn;
    d->variants = got;
    return true;
}

/* Device buffers and the job the measured commands run as. */
struct dev_tune_run {
    struct dev *d;
    size_t bytes;
    struct job job;
    struct dev_buf in, out;
    uint64_t slots[OP_HIST_SLOTS(DEV_TUNE_HISTN_BINS)];
};

/* One run of family f's current variant; its wall time, or 0 on failure. */
static uint64_t dev_tune_once(struct dev_tune_run *r, enum dev_tune_family f)
{
    struct dev_exec x;
    r->job.status = STATUS_OK;
    dev_exec_init(&x, r->d, &r->job);
    uint64_t t0 = monotonic_ns();
    for (int i = 0; i < DEV_TUNE_LAUNCHES; i++) {
        if (f == DEV_TUNE_REVERSE) {
            op_reverse(&x, &r->in, &r->out);
        } else if (f == DEV_TUNE_TRANSFORM || f == DEV_TUNE_MAP) {
            struct transform_params p = {.op = f == DEV_TUNE_MAP ? XFORM_MAP : XFORM_XOR,
                                         .value = 0x5a, .length = r->bytes};
            for (int b = 0; b < 256; b++)
                p.table[b] = (uint8_t)(255 - b);
            op_transform(&x, &p, &r->in, &r->out);
        } else if (f == DEV_TUNE_HIST256) {
            struct hist_params p = {.type = ELEM_U8, .bins = JOB_HIST_BYTE_BINS};
            op_hist(&x, &p, &r->in, r->slots);
        } else {
            struct hist_params p = {.type = ELEM_U32, .bins = DEV_TUNE_HISTN_BINS, .lo = 0,
                                    .hi = 4294967296.0};
            op_hist(&x, &p, &r->in, r->slots);
        }
    }
    if (dev_exec_finish(&x) != STATUS_OK)
        return 0;
    uint64_t t = monotonic_ns() - t0;
    return t ? t : 1;
}

/* The best of DEV_TUNE_REPS runs of f as the device is set now, after a
 * warm-up; 0 when a run fails or the deadline passes. */
static uint64_t dev_tune_best(struct dev_tune_run *r, enum dev_tune_family f, uint64_t deadline)
{
    uint64_t min = UINT64_MAX;
    for (int rep = 0; rep <= DEV_TUNE_REPS; rep++) {   /* rep 0: the warm-up */
        uint64_t t = dev_tune_once(r, f);
        if (t == 0 || monotonic_ns() > deadline)
            return 0;
        if (rep > 0 && t < min)
            min = t;
    }
    return min;
}

/* The fastest of f's variants, or of the candidates' groups per compute
 * unit where groups is not NULL (the local-memory histograms, with the
 * variant chosen). The current setting is kept when a run fails or the
 * deadline passes. */
static void dev_tune_choose(struct dev_tune_run *r, enum dev_tune_family f, unsigned *groups,
                            uint64_t deadline)
{
    enum dev_variant *variant = dev_tune_field(&r->d->variants, f);
    const unsigned keep = groups ? *groups : (unsigned)*variant;
    const size_t n = groups ? sizeof dev_tune_groups / sizeof dev_tune_groups[0]
                            : (size_t)dev_tune_count[f];
    unsigned best = keep;
    uint64_t best_ns = UINT64_MAX;
    char line[256];
    int at = snprintf(line, sizeof line, "%s%s:", dev_tune_name[f],
                      groups ? " groups per compute unit" : "");
    for (size_t i = 0; i < n; i++) {
        const unsigned c = groups ? dev_tune_groups[i] : (unsigned)(DEV_VARIANT_V1 + i);
        if (groups)
            *groups = c;
        else
            *variant = (enum dev_variant)c;
        uint64_t ns = dev_tune_best(r, f, deadline);
        if (ns == 0) {
            best = keep;
            break;
        }
        if (ns < best_ns) {
            best_ns = ns;
            best = c;
        }
        if (at > 0 && (size_t)at < sizeof line)
            at += snprintf(line + at, sizeof line - (size_t)at, " %s%u %.0f us",
                           groups ? "" : "v", c, (double)ns / 1e3);
    }
    if (groups)
        *groups = best;
    else
        *variant = (enum dev_variant)best;
    if (best_ns != UINT64_MAX)
        log_msg(LOG_INFO, "%s: tuning %s: %s%u", r->d->info.name, line, groups ? "" : "v", best);
}

int dev_tune_run(struct dev *d, char *err, size_t errlen)
{
    d->all_variants = true;
    if (dev_build_programs(d, err, errlen) < 0)
        return -1;
    struct dev_tune_run *r = calloc(1, sizeof(*r));
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    r->d = d;
    r->bytes = dev_tune_bytes;
    if (r->bytes > d->info.global_mem_size / DEV_TUNE_MEM_SHARE)
        r->bytes = d->info.global_mem_size / DEV_TUNE_MEM_SHARE / KERNEL_WORD * KERNEL_WORD;
    if (r->bytes > d->info.max_mem_alloc_size)
        r->bytes = d->info.max_mem_alloc_size / KERNEL_WORD * KERNEL_WORD;
    struct dev_exec x;
    dev_exec_init(&x, d, &r->job);
    dev_buf_create(&x, &r->in, r->bytes, "the tuning input");
    dev_buf_create(&x, &r->out, r->bytes, "the tuning output");
    /* Random bytes: map and the histograms run slower on them than on
     * equal ones, and it is random data their targets are set on. */
    uint8_t *block = malloc(DEV_TUNE_BLOCK);
    bool ok = block != NULL;
    uint64_t s = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; ok && i < DEV_TUNE_BLOCK; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;   /* xorshift64 */
        block[i] = (uint8_t)(s >> 32);
    }
    for (size_t at = 0; ok && at < r->bytes; at += DEV_TUNE_BLOCK)
        dev_exec_write_at(&x, &r->in, at, block,
                          r->bytes - at < DEV_TUNE_BLOCK ? r->bytes - at : DEV_TUNE_BLOCK,
                          DEV_HOST_PAGEABLE);
    ok = dev_exec_finish(&x) == STATUS_OK && ok;
    free(block);
    if (!ok)
        log_msg(LOG_WARN, "%s: kernel tuning skipped: %s", d->info.name, r->job.msg);
    uint64_t deadline = monotonic_ns() + DEV_TUNE_MAX_NS;   /* the runs, not the build */
    for (int f = 0; ok && f < DEV_TUNE_FAMILIES; f++)
        dev_tune_choose(r, (enum dev_tune_family)f, NULL, deadline);
    if (ok) {
        dev_tune_choose(r, DEV_TUNE_HIST256, &d->variants.hist256_groups, deadline);
        dev_tune_choose(r, DEV_TUNE_HISTN, &d->variants.histn_groups, deadline);
    }
    dev_buf_release(&r->in);
    dev_buf_release(&r->out);
    free(r);
    struct prog_cache_key key;
    struct prog_cache *c = dev_cache_get();
    if (ok && c && dev_tune_key(d, &key)) {
        char text[DEV_TUNE_ENTRY_MAX];
        const struct dev_variants *v = &d->variants;
        int n = snprintf(text, sizeof text, DEV_TUNE_FORMAT, (int)v->reverse, (int)v->transform,
                         (int)v->hist256, (int)v->map, (int)v->histn, v->hist256_groups,
                         v->histn_groups);
        prog_cache_store(c, &key, (const unsigned char *)text, (size_t)n);
    }
    /* d serves from every variant's programs, built already; the chosen
     * ones alone are built for the cache, for the next start. */
    dev_serving_build_start(d);
    return 0;
}
