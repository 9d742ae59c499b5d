/* SPDX-License-Identifier: MIT */
/* dev_tune.c: each kernel family's GPU variant chosen on the device by
 * measurement, once per device and driver (issue 36).
 *
 * The variants were picked on one H100 and every GPU got them; on the
 * H200 the reverse that was not picked ran 3% faster. At a device's first
 * start the tuner builds every variant, times each family's (reverse, the
 * transforms, the 256-bin histogram) on DEV_TUNE_BYTES of device memory,
 * best of DEV_TUNE_REPS after a warm-up, and keeps the fastest. The choice
 * goes into the program cache as an entry of its own, keyed like the
 * programs (platform, device, driver, every kernel file's text), so a
 * later start reads it and builds, or loads, only the chosen kernels; a
 * new driver or kernel source misses the key and tunes again, and
 * --retune on measures anew. CPU-shaped devices have one kernel per family
 * and are not tuned. The runs are bounded by DEV_TUNE_MAX_NS (a family
 * not reached in time keeps the default); building every variant first
 * is the other cost, one compile more than a start without tuning.
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
/* The cache entry: a text line, versioned so that a new layout misses. */
#define DEV_TUNE_FORMAT "ampd-tune 1 reverse=%d transform=%d hist256=%d\n"
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
enum dev_tune_family { DEV_TUNE_REVERSE, DEV_TUNE_TRANSFORM, DEV_TUNE_HIST256, DEV_TUNE_FAMILIES };
static const int dev_tune_count[DEV_TUNE_FAMILIES] = {2, 2, 3};
static const char *const dev_tune_name[DEV_TUNE_FAMILIES] = {"reverse", "transform", "hist256"};

static enum dev_variant *dev_tune_field(struct dev_variants *v, enum dev_tune_family f)
{
    return f == DEV_TUNE_REVERSE ? &v->reverse : f == DEV_TUNE_TRANSFORM ? &v->transform
                                                                          : &v->hist256;
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
    snprintf(buf, len, "reverse v%d, transform v%d, hist256 v%d", (int)d->variants.reverse,
             (int)d->variants.transform, (int)d->variants.hist256);
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
    if (sscanf(text, DEV_TUNE_FORMAT "%n", &v[0], &v[1], &v[2], &end) != 3 ||
        (size_t)end != len)
        return false;
    struct dev_variants got = d->variants;
    for (int f = 0; f < DEV_TUNE_FAMILIES; f++) {
        if (v[f] < DEV_VARIANT_V1 || v[f] > dev_tune_count[f])
            return false;
        *dev_tune_field(&got, (enum dev_tune_family)f) = (enum dev_variant)v[f];
    }
    d->variants = got;
    return true;
}

/* Device buffers and the job the measured commands run as. */
struct dev_tune_run {
    struct dev *d;
    size_t bytes;
    struct job job;
    struct dev_buf in, out;
    uint64_t slots[OP_HIST_SLOTS(JOB_HIST_BYTE_BINS)];
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
        } else if (f == DEV_TUNE_TRANSFORM) {
            struct transform_params p = {.op = XFORM_XOR, .value = 0x5a, .length = r->bytes};
            op_transform(&x, &p, &r->in, &r->out);
        } else {
            struct hist_params p = {.type = ELEM_U8, .bins = JOB_HIST_BYTE_BINS};
            op_hist(&x, &p, &r->in, r->slots);
        }
    }
    if (dev_exec_finish(&x) != STATUS_OK)
        return 0;
    uint64_t t = monotonic_ns() - t0;
    return t ? t : 1;
}

/* The fastest variant of f (best of DEV_TUNE_REPS each), or the current
 * one when a run fails or the deadline passes. */
static enum dev_variant dev_tune_family(struct dev_tune_run *r, enum dev_tune_family f,
                                        uint64_t deadline)
{
    enum dev_variant *cur = dev_tune_field(&r->d->variants, f);
    enum dev_variant keep = *cur, best = keep;
    uint64_t best_ns = UINT64_MAX;
    char line[256];
    int at = snprintf(line, sizeof line, "%s:", dev_tune_name[f]);
    for (int v = DEV_VARIANT_V1; v <= dev_tune_count[f]; v++) {
        *cur = (enum dev_variant)v;
        uint64_t min = UINT64_MAX;
        for (int rep = 0; rep <= DEV_TUNE_REPS; rep++) {   /* rep 0: the warm-up */
            uint64_t t = dev_tune_once(r, f);
            if (t == 0 || monotonic_ns() > deadline) {
                *cur = keep;
                return keep;
            }
            if (rep > 0 && t < min)
                min = t;
        }
        if (min < best_ns) {
            best_ns = min;
            best = (enum dev_variant)v;
        }
        if (at > 0 && (size_t)at < sizeof line)
            at += snprintf(line + at, sizeof line - (size_t)at, " v%d %.0f us", v,
                           (double)min / 1e3);
    }
    log_msg(LOG_INFO, "%s: tuning %s: v%d", r->d->info.name, line, (int)best);
    *cur = best;
    return best;
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
    uint8_t pattern = 0x5a;
    dev_exec_fill(&x, &r->in, &pattern, 1, 0, r->bytes);
    bool ok = dev_exec_finish(&x) == STATUS_OK;
    if (!ok)
        log_msg(LOG_WARN, "%s: kernel tuning skipped: %s", d->info.name, r->job.msg);
    uint64_t deadline = monotonic_ns() + DEV_TUNE_MAX_NS;   /* the runs, not the build */
    for (int f = 0; ok && f < DEV_TUNE_FAMILIES; f++)
        dev_tune_family(r, (enum dev_tune_family)f, deadline);
    dev_buf_release(&r->in);
    dev_buf_release(&r->out);
    free(r);
    struct prog_cache_key key;
    struct prog_cache *c = dev_cache_get();
    if (ok && c && dev_tune_key(d, &key)) {
        char text[DEV_TUNE_ENTRY_MAX];
        int n = snprintf(text, sizeof text, DEV_TUNE_FORMAT, (int)d->variants.reverse,
                         (int)d->variants.transform, (int)d->variants.hist256);
        prog_cache_store(c, &key, (const unsigned char *)text, (size_t)n);
    }
    d->all_variants = false;
    return dev_build_programs(d, err, errlen);
}
