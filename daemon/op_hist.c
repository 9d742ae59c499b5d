/* SPDX-License-Identifier: MIT */
/* op_hist.c: the histogram step (kernels/hist.cl).
 *
 * Kernels count into 32-bit per-row partials, hist_reduce adds the rows
 * into a 64-bit device result, which is copied back once. A launch covers
 * at most OP_HIST_LAUNCH_MAX elements so no 32-bit counter can overflow;
 * larger inputs take several launches accumulating into the same result.
 * The kernel shape is chosen per device (see hist.cl): local sub-histograms
 * on GPUs, global atomics when the bins do not fit local memory, and one
 * chunk per work-item on CPU devices; 256 bins on GPUs have three kernels,
 * chosen by the device's variants.
 */
#include "op.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hist_bin.h"
#include "sat.h"

#define OP_HIST_LAUNCH_MAX (1ull << 31)  /* elements per launch: fits a uint counter */
#define OP_HIST_ITEM_ELEMS 16            /* elements per item, for the launch cap */
#define OP_HIST_MAX_COPIES 8             /* local copies per work-group (N bins) */

static cl_uint op_hist_max_copies = OP_HIST_MAX_COPIES;

void op_set_hist_copies_for_bench(unsigned copies)
{
    op_hist_max_copies = copies ? copies : OP_HIST_MAX_COPIES;
}
/* hist256_local's __local array: its copies of 256 counters. */
#define OP_HIST256_LOCAL_BYTES (KERNEL_HIST256_COPIES * 256 * sizeof(cl_uint))
/* hist256_bytes: work-groups of exactly this size (reqd_work_group_size),
 * each with 256 byte counters per work-item in __local memory. */
#define OP_HIST256_BYTES_LOCAL (256 * KERNEL_HIST256B_WG)

/* GPUs count bytes with hist256_local (v1: 32 copies of 32-bit counters,
 * local atomics, runs of equal bytes added at once), hist256_bytes (v2:
 * per-work-item 8-bit counters, plain loads and stores, flushed every 240
 * bytes) or hist256_inc (v3: v1's copies, one atomic increment per byte,
 * no run test), as the device's variants say (dev_internal.h); N bins
 * in local memory with histn_local_T (v1: runs of equal slots) or
 * histn_inc_T (v2: one atomic increment per element). */

#define OP_HIST_PARTIALS_BUDGET (64ull << 20)
/* hist_reduce: groups of up to KERNEL_HIST_REDUCE_WG items, each covering
 * KERNEL_HIST_REDUCE_LANES bins or fewer when smaller. */

enum op_hist_shape { OP_HIST_LOCAL, OP_HIST_GLOBAL, OP_HIST_ROWS };

/* One histogram step being enqueued. */
struct op_hist_run {
    struct dev_exec *x;
    const struct hist_params *p;
    struct hist_bin bin;
    struct dev_buf *src;
    size_t esize;
    uint64_t elems;
    cl_uint width;          /* counters per row: 256, or bins + 3 */
    enum op_hist_shape shape;
    char kname[32];
    cl_kernel k;
    size_t wg, global;      /* the counting launch */
    cl_uint rows, copies;
    uint64_t per_launch;    /* elements per launch, a multiple of KERNEL_WORD */
    struct op_hist_acc *acc;          /* the launches' accumulator: partials, out */
};

enum status_code op_hist_check(const struct dev *d, const struct hist_params *p, size_t len,
                               struct job *job)
{
    (void)d;
    if (p->type == ELEM_U8) {
        if (p->bins != JOB_HIST_BYTE_BINS)
            return job_fail(job, STATUS_INVALID_ARGUMENT,
                            "histogram.bins must be 256 for bytes, not %u", p->bins);
        return STATUS_OK;
    }
    if (p->type != ELEM_U32 && p->type != ELEM_I32 && p->type != ELEM_F32)
        return job_fail(job, STATUS_INVALID_ARGUMENT,
                        "histogram.type: only uint8, uint32, int32 and float32 are supported");
    if (p->bins == 0 || p->bins > UINT32_MAX - 3)
        return job_fail(job, STATUS_INVALID_ARGUMENT, "histogram.bins %u is out of range",
                        p->bins);
    if (!isfinite(p->lo) || !isfinite(p->hi) || !(p->lo < p->hi))
        return job_fail(job, STATUS_INVALID_ARGUMENT,
                        "histogram.lo and hi must be finite with lo < hi (got %g, %g)", p->lo,
                        p->hi);
    if (len % elem_size(p->type))
        return job_fail(job, STATUS_INVALID_ARGUMENT,
                        "histogram input of %zu bytes is not a whole number of %zu-byte elements",
                        len, elem_size(p->type));
    return STATUS_OK;
}

static const char *op_hist_suffix(enum elem_type t)
{
    return t == ELEM_U32 ? "u32" : t == ELEM_I32 ? "i32" : "f32";
}

static uint64_t op_hist_round_up(uint64_t v, uint64_t m)
{
    return (v + m - 1) / m * m;
}

/* Local copies of bins + 3 counters that fit the device's local memory
 * (leaving a quarter for the implementation); 0 if not even one. */
static cl_uint op_hist_copies(const struct dev *d, cl_uint width)
{
    uint64_t avail = d->local_mem_size / 4 * 3;
    uint64_t fit = avail / ((uint64_t)width * sizeof(cl_uint));
    return (cl_uint)(fit < op_hist_max_copies ? fit : op_hist_max_copies);
}

/* Picks the kernel, the launch geometry and the number of partial rows. */
static void op_hist_plan(struct op_hist_run *h)
{
    struct dev *d = h->x->d;
    bool bytes = h->p->type == ELEM_U8;
    uint64_t cap = d->launch_items_max * OP_HIST_ITEM_ELEMS;
    if (cap > OP_HIST_LAUNCH_MAX)
        cap = OP_HIST_LAUNCH_MAX;
    h->per_launch = cap / KERNEL_WORD * KERNEL_WORD;
    if (h->per_launch == 0)
        h->per_launch = KERNEL_WORD;
    uint64_t launch = h->elems < h->per_launch ? h->elems : h->per_launch;
    uint64_t row_bytes = (uint64_t)h->width * sizeof(cl_uint);
    uint64_t max_rows = OP_HIST_PARTIALS_BUDGET / row_bytes;
    if (max_rows == 0)
        max_rows = 1;

    if (d->shape == DEV_SHAPE_CPU) {
        h->shape = OP_HIST_ROWS;
        if (bytes)
            snprintf(h->kname, sizeof h->kname, "hist256_private");
        else
            snprintf(h->kname, sizeof h->kname, "histn_rows_%s", op_hist_suffix(h->p->type));
        h->k = dev_kernel(d, h->kname);
        h->wg = 1;
        h->global = dev_grid_size(d, (launch + KERNEL_WORD - 1) / KERNEL_WORD, 1);
        if (h->global > max_rows)
            h->global = (size_t)max_rows;
        h->rows = (cl_uint)h->global;
        return;
    }
    h->copies = bytes ? OP_HIST_MAX_COPIES : op_hist_copies(d, h->width);
    h->shape = h->copies ? OP_HIST_LOCAL : OP_HIST_GLOBAL;
    uint64_t local = bytes ? OP_HIST256_LOCAL_BYTES
                           : (uint64_t)h->copies * h->width * sizeof(cl_uint);
    h->k = NULL;
    enum dev_variant variant = d->variants.hist256;
    if (bytes && variant == DEV_VARIANT_V2) {
        snprintf(h->kname, sizeof h->kname, "hist256_bytes");
        h->k = dev_kernel(d, h->kname);
        /* Its layout needs whole 128-item groups; else an atomic kernel. */
        if (h->k && dev_kernel_wg_max(d, h->k) >= KERNEL_HIST256B_WG &&
            d->local_mem_size >= OP_HIST256_BYTES_LOCAL) {
            h->wg = KERNEL_HIST256B_WG;
            local = OP_HIST256_BYTES_LOCAL;
        } else {
            h->k = NULL;
        }
    }
    if (!h->k) {
        if (bytes)
            snprintf(h->kname, sizeof h->kname, "%s",
                     variant == DEV_VARIANT_V3 ? "hist256_inc" : "hist256_local");
        else
            snprintf(h->kname, sizeof h->kname, "histn_%s_%s",
                     !h->copies                          ? "global"
                     : d->variants.histn == DEV_VARIANT_V2 ? "inc"
                                                         : "local",
                     op_hist_suffix(h->p->type));
        h->k = dev_kernel(d, h->kname);
        h->wg = op_wg(d, h->k);
    }
    /* Units of work: 16-byte words of bytes, 4-element vectors otherwise. */
    uint64_t per_unit = bytes ? KERNEL_WORD : 4;
    h->global = dev_grid_size(d, (launch + per_unit - 1) / per_unit, h->wg);
    if (h->shape == OP_HIST_LOCAL && h->global / h->wg > max_rows)
        h->global = (size_t)(max_rows * h->wg);
    if (h->shape == OP_HIST_LOCAL)
        h->global = op_resident_cap(d, h->global, h->wg, local,
                                    bytes ? d->variants.hist256_groups : d->variants.histn_groups);
    h->rows = h->shape == OP_HIST_LOCAL ? (cl_uint)(h->global / h->wg) : 1;
}

static void op_hist_bin_args(struct op_hist_run *h, cl_uint first_index)
{
    struct dev_exec *x = h->x;
    const struct hist_bin *b = &h->bin;
    cl_uint bins = b->bins;
    cl_long lo_t = b->lo_t, hi_t = b->hi_t;
    const float f[] = {b->lo_c, b->hi_c, b->lo_f, b->scale_f, b->bins_f};
    dev_exec_arg(x, h->k, h->kname, first_index, sizeof bins, &bins);
    dev_exec_arg(x, h->k, h->kname, first_index + 1, sizeof lo_t, &lo_t);
    dev_exec_arg(x, h->k, h->kname, first_index + 2, sizeof hi_t, &hi_t);
    for (cl_uint i = 0; i < 5; i++)
        dev_exec_arg(x, h->k, h->kname, first_index + 3 + i, sizeof(float), &f[i]);
}

/* Arguments after (src, first, count), which differ per shape. */
static void op_hist_shape_args(struct op_hist_run *h, uint64_t count)
{
    struct dev_exec *x = h->x;
    bool bytes = h->p->type == ELEM_U8;
    cl_uint i = 3;
    if (h->shape == OP_HIST_ROWS) {
        cl_ulong chunk = op_hist_round_up((count + h->rows - 1) / h->rows, KERNEL_WORD);
        dev_exec_arg(x, h->k, h->kname, i++, sizeof chunk, &chunk);
    }
    if (!bytes) {
        op_hist_bin_args(h, i);
        i += 8;
    }
    if (h->shape == OP_HIST_LOCAL && !bytes) {
        dev_exec_arg(x, h->k, h->kname, i++,
                     (size_t)h->copies * h->width * sizeof(cl_uint), NULL);
        dev_exec_arg(x, h->k, h->kname, i++, sizeof h->copies, &h->copies);
    }
    dev_exec_arg(x, h->k, h->kname, i, sizeof(cl_mem), &h->acc->partials.mem);
}

static enum status_code op_hist_reduce(struct op_hist_run *h)
{
    static const char name[] = "hist_reduce";
    struct dev_exec *x = h->x;
    cl_kernel k = dev_kernel(x->d, name);
    size_t wg = dev_kernel_wg(x->d, k, KERNEL_HIST_REDUCE_WG);
    size_t lanes = wg < KERNEL_HIST_REDUCE_LANES ? wg : KERNEL_HIST_REDUCE_LANES;
    size_t global = (size_t)((h->width + lanes - 1) / lanes * wg);
    dev_exec_arg(x, k, name, 0, sizeof(cl_mem), &h->acc->partials.mem);
    dev_exec_arg(x, k, name, 1, sizeof h->rows, &h->rows);
    dev_exec_arg(x, k, name, 2, sizeof h->width, &h->width);
    dev_exec_arg(x, k, name, 3, sizeof(cl_mem), &h->acc->out.mem);
    cl_uint add = h->acc->counted;
    dev_exec_arg(x, k, name, 4, sizeof add, &add);
    h->acc->counted = true;
    const struct dev_access acc[] = {{&h->acc->partials, HAZARD_READ},
                                     {&h->acc->out, HAZARD_WRITE}};
    return dev_exec_kernel(x, k, name, global, wg, acc, 2);
}

static enum status_code op_hist_launch(struct op_hist_run *h, uint64_t first, uint64_t count)
{
    struct dev_exec *x = h->x;
    if (h->shape != OP_HIST_LOCAL && h->p->type != ELEM_U8) {
        /* These shapes add into the rows instead of overwriting them. */
        const cl_uint zero = 0;
        dev_exec_fill(x, &h->acc->partials, &zero, sizeof zero, 0, h->acc->partials.size);
    }
    cl_ulong a_first = first, a_count = count;
    dev_exec_arg(x, h->k, h->kname, 0, sizeof(cl_mem), &h->src->mem);
    dev_exec_arg(x, h->k, h->kname, 1, sizeof a_first, &a_first);
    dev_exec_arg(x, h->k, h->kname, 2, sizeof a_count, &a_count);
    op_hist_shape_args(h, count);
    const struct dev_access acc[] = {{h->src, HAZARD_READ}, {&h->acc->partials, HAZARD_WRITE}};
    dev_exec_kernel(x, h->k, h->kname, h->global, h->wg, acc, 2);
    return op_hist_reduce(h);
}

enum status_code op_hist_begin(struct dev_exec *x, const struct hist_params *p,
                               struct op_hist_acc *acc)
{
    memset(acc, 0, sizeof(*acc));
    size_t width = p->type == ELEM_U8 ? JOB_HIST_BYTE_BINS : (size_t)p->bins + 3;
    /* Not cleared here: the first hist_reduce stores instead of adding,
     * which saves a command (~3 us of a 1 GiB histogram's 420 on the H100). */
    return dev_buf_create(x, &acc->out, width * sizeof(cl_ulong), "histogram counts");
}

/* Partial rows for this input: the accumulator's, grown when too small. */
static enum status_code op_hist_partials(struct op_hist_run *h, struct op_hist_acc *acc)
{
    size_t need = (size_t)h->rows * h->width * sizeof(cl_uint);
    if (acc->partials.size < need) {
        dev_buf_release(&acc->partials);
        enum status_code st =
            dev_buf_create(h->x, &acc->partials, need, "histogram partial counts");
        if (st != STATUS_OK)
            return st;
    }
    h->acc = acc;
    return STATUS_OK;
}

enum status_code op_hist_add_range(struct dev_exec *x, const struct hist_params *p,
                                   struct dev_buf *src, size_t off, size_t len,
                                   struct op_hist_acc *acc)
{
    struct op_hist_run h;
    memset(&h, 0, sizeof h);
    h.x = x;
    h.p = p;
    h.src = src;
    h.esize = elem_size(p->type);
    h.elems = len / h.esize;
    uint64_t base = off / h.esize;
    h.width = p->type == ELEM_U8 ? JOB_HIST_BYTE_BINS : p->bins + 3;
    if (p->type != ELEM_U8)
        hist_bin_init(&h.bin, p->bins, p->lo, p->hi);
    if (h.elems == 0 || x->failed)
        return x->failed ? x->job->status : STATUS_OK;
    op_hist_plan(&h);
    enum status_code st = op_hist_partials(&h, acc);
    for (uint64_t first = 0; first < h.elems && st == STATUS_OK; first += h.per_launch) {
        uint64_t count = h.elems - first < h.per_launch ? h.elems - first : h.per_launch;
        st = op_hist_launch(&h, base + first, count);
    }
    return st;
}

enum status_code op_hist_add(struct dev_exec *x, const struct hist_params *p, struct dev_buf *src,
                             size_t len, struct op_hist_acc *acc)
{
    return op_hist_add_range(x, p, src, 0, len, acc);
}

enum status_code op_hist_end(struct dev_exec *x, struct op_hist_acc *acc, uint64_t *slots)
{
    const cl_ulong zero = 0;
    enum status_code st = STATUS_OK;
    if (!acc->counted)   /* nothing was counted: all zeros */
        st = dev_exec_fill(x, &acc->out, &zero, sizeof zero, 0, acc->out.size);
    if (st == STATUS_OK)
        st = dev_exec_read(x, &acc->out, slots, 0, acc->out.size, DEV_HOST_PAGEABLE);
    return st;
}

void op_hist_acc_release(struct op_hist_acc *acc)
{
    dev_buf_release(&acc->partials);
    dev_buf_release(&acc->out);
}

enum status_code op_hist(struct dev_exec *x, const struct hist_params *p, struct dev_buf *src,
                         uint64_t *slots)
{
    struct op_hist_acc acc;
    enum status_code st = op_hist_begin(x, p, &acc);
    if (st == STATUS_OK)
        st = op_hist_add(x, p, src, src->size, &acc);
    if (st == STATUS_OK)
        st = op_hist_end(x, &acc, slots);
    op_hist_acc_release(&acc);
    return st;
}

enum status_code op_hist_result(const struct hist_params *p, const uint64_t *slots,
                                struct hist_result *out, struct job *job)
{
    uint32_t bins = p->bins;
    out->counts = malloc((size_t)bins * sizeof(uint64_t));
    if (!out->counts)
        return job_fail(job, STATUS_RESOURCE_EXHAUSTED, "no host memory for %u bins", bins);
    memcpy(out->counts, slots, (size_t)bins * sizeof(uint64_t));
    out->bins = bins;
    if (p->type == ELEM_U8) {
        out->below = out->above = out->nan = 0;
        return STATUS_OK;
    }
    out->below = slots[KERNEL_HIST_SLOT_BELOW(bins)];
    out->above = slots[KERNEL_HIST_SLOT_ABOVE(bins)];
    out->nan = slots[KERNEL_HIST_SLOT_NAN(bins)];
    if (p->clamp) {
        out->counts[0] += out->below;
        out->counts[bins - 1] += out->above;
    }
    return STATUS_OK;
}

uint64_t op_hist_job_bytes(const struct job *job)
{
    uint64_t total = 0;
    for (size_t i = 0; i < job->nsteps; i++)
        if (job->steps[i].kind == STEP_HISTOGRAM)
            total = sat_add_u64(total, OP_HIST_SLOTS((uint64_t)job->steps[i].u.hist.bins) *
                                           sizeof(cl_ulong));
    return total;
}
