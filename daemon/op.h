/* SPDX-License-Identifier: MIT */
/* op.h: the kernel families as dev_run.c uses them, one file each
 * (op_reverse.c, op_transform.c, op_hist.c, op_fill.c).
 *
 * op_*_check() does the device-dependent validation of a step before
 * anything is enqueued (failing the job with INVALID_ARGUMENT naming the
 * field and the limit); op_*() enqueues the step's commands through
 * dev_exec.c, declaring what each touches. Neither blocks.
 */
#ifndef AMPD_OP_H
#define AMPD_OP_H

#include "dev_internal.h"
#include "kernel_abi.h"

/* Work-group sizes the grid-stride kernels are written for. */
#define OP_WG_GPU 256
#define OP_WG_CPU 16

size_t op_wg(const struct dev *d, cl_kernel k);
/* GPU launch of work-groups of wg items, each covering a tile of
 * per_item * wg units once: as many groups as tiles (not only as many as
 * are resident, so the tail is a small part of many waves whatever the
 * kernel's occupancy), capped by d->launch_items_max (the kernel strides
 * over tiles for the rest). */
struct dev_grid op_tile_grid(const struct dev *d, uint64_t units, size_t wg, uint64_t per_item);
/* A grid-stride launch of global items in groups of wg, cut to groups
 * work-groups per compute unit, or where groups is 0 to as many as hold
 * local bytes of __local memory each at once. Every group of such a
 * launch does the same work, so more groups than are resident run a
 * last, partly empty wave as long as a full one (N-bin histograms with 8
 * copies ran at 0.67 of copy on the H100 that way); fewer than fit can
 * be faster still (hist256_inc on the H200: 0.89 of copy at 3 groups of
 * 32 KiB per multiprocessor, 0.83 at 6), which is why groups is tuned
 * (dev_tune.c). */
size_t op_resident_cap(const struct dev *d, size_t global, size_t wg, uint64_t local,
                       unsigned groups);
/* bench_kernels only: the most local copies an N-bin histogram's work-group
 * counts into (0: the default). */
void op_set_hist_copies_for_bench(unsigned copies);


/* dst = reverse of src; dst->size == src->size. */
enum status_code op_reverse(struct dev_exec *x, struct dev_buf *src, struct dev_buf *dst);
/* The same for dst's 16-byte words [first, end) only (end past the last
 * word: to the end); the launch with first 0 also writes the bytes past
 * the last whole word. A reverse in pieces is these over every range. */
enum status_code op_reverse_range(struct dev_exec *x, struct dev_buf *src, struct dev_buf *dst,
                                  uint64_t first, uint64_t end);

enum status_code op_transform_check(const struct dev *d, const struct transform_params *p,
                                    size_t len, struct job *job);
/* dst = src with p applied to [offset, offset+length). src == dst works in
 * place and touches only the sub-range. */
enum status_code op_transform(struct dev_exec *x, const struct transform_params *p,
                              struct dev_buf *src, struct dev_buf *dst);

enum status_code op_hist_check(const struct dev *d, const struct hist_params *p, size_t len,
                               struct job *job);
/* Counts src into slots: bins counts, then below, above, nan (OP_HIST_SLOTS
 * entries, host memory valid until dev_exec_finish). */
#define OP_HIST_SLOTS(bins) KERNEL_HIST_SLOTS((size_t)(bins))
/* Device bytes of the 64-bit counts of job's histogram steps. */
uint64_t op_hist_job_bytes(const struct job *job);
enum status_code op_hist(struct dev_exec *x, const struct hist_params *p, struct dev_buf *src,
                         uint64_t *slots);

/* A histogram counted over several inputs (the chunks of a stream): its
 * 64-bit counts stay on the device from op_hist_begin to op_hist_end, and
 * the inputs may come from different dev_execs of the same device. */
struct op_hist_acc {
    struct dev_buf out;       /* OP_HIST_SLOTS(bins) (256 for bytes) 64-bit counts */
    struct dev_buf partials;  /* per-launch 32-bit rows, reused while big enough */
    bool counted;             /* out written by a launch (the first one stores,
                                 later ones add; op_hist_end clears it if none) */
};
enum status_code op_hist_begin(struct dev_exec *x, const struct hist_params *p,
                               struct op_hist_acc *acc);
/* Adds the first len bytes of src (a whole number of elements). */
enum status_code op_hist_add(struct dev_exec *x, const struct hist_params *p, struct dev_buf *src,
                             size_t len, struct op_hist_acc *acc);
/* Adds len bytes of src from byte off (both whole elements, off on a
 * 16-byte boundary): a histogram over a resident buffer in pieces. */
enum status_code op_hist_add_range(struct dev_exec *x, const struct hist_params *p,
                                   struct dev_buf *src, size_t off, size_t len,
                                   struct op_hist_acc *acc);
/* Copies the counts into slots (valid until x's dev_exec_finish). */
enum status_code op_hist_end(struct dev_exec *x, struct op_hist_acc *acc, uint64_t *slots);
void op_hist_acc_release(struct op_hist_acc *acc);
/* After dev_exec_finish: slots into out (counts malloc'd), clamp applied. */
enum status_code op_hist_result(const struct hist_params *p, const uint64_t *slots,
                                struct hist_result *out, struct job *job);

enum status_code op_fill_check(const struct dev *d, const struct fill_params *p,
                               struct job *job);
/* dst (p->count elements) = start + k*step. */
enum status_code op_fill(struct dev_exec *x, const struct fill_params *p, struct dev_buf *dst);
/* The same for elements [first, end) of dst only (a fill in pieces);
 * first a multiple of 16 bytes' worth of elements. */
enum status_code op_fill_range(struct dev_exec *x, const struct fill_params *p,
                               struct dev_buf *dst, uint64_t first, uint64_t end);

#endif
