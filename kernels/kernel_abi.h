/* SPDX-License-Identifier: MIT */
/* kernel_abi.h: what host code and the kernels both know: the layout of
 * the blocks the host writes for them, the geometry it launches them with,
 * the histogram's counters and its bin formula. Defined here once, in C
 * that is also OpenCL C (macros only): the daemon includes it, and
 * cmake/embed_kernels.cmake puts it before every kernel file, so a kernel
 * uses these names without including anything. test_kernel_abi.py fails
 * if a kernel defines one of these names again, or if host code names a
 * number a kernel defines for itself.
 */
#ifndef AMP_KERNEL_ABI_H
#define AMP_KERNEL_ABI_H

/* Bytes of the word the byte kernels load and store (a uchar16): the
 * alignment of every buffer offset and launch start the host picks. */
#define KERNEL_WORD 16

/* A transform's parameter block (daemon/op_transform.c writes it): the
 * operand at [0]; at [KERNEL_XFORM_HAS_PAIRS] whether the pair table is
 * there; the 256-byte map table at KERNEL_XFORM_TABLE_AT; on CPU devices,
 * the table of byte pairs (65,536 ushorts) at KERNEL_XFORM_PAIRS_AT. */
#define KERNEL_XFORM_HAS_PAIRS 1
#define KERNEL_XFORM_TABLE_AT 16
#define KERNEL_XFORM_PAIRS_AT 512

/* Words per work-item of the second GPU variants of reverse and
 * transform: the host sizes their grids by it. */
#define KERNEL_REVERSE_V2_WORDS 8
#define KERNEL_XFORM_V2_WORDS 8

/* 16-byte stores per fill work-item. */
#define KERNEL_FILL_STORES 8

/* hist256: local copies of the 256 counters per work-group (one per lane
 * of a 32-wide warp), the host sizing its local memory; hist256b: its
 * work-group size, which its column layout is built on. */
#define KERNEL_HIST256_COPIES 32
#define KERNEL_HIST256B_WG 128

/* The reduction of histogram partials: lanes per bin and the largest
 * work-group the host launches it with. */
#define KERNEL_HIST_REDUCE_LANES 32
#define KERNEL_HIST_REDUCE_WG 256

/* The counters of a histogram of bins bins: the bins, then values below
 * the range, above it, and NaN. */
#define KERNEL_HIST_SLOT_BELOW(bins) (bins)
#define KERNEL_HIST_SLOT_ABOVE(bins) ((bins) + 1)
#define KERNEL_HIST_SLOT_NAN(bins) ((bins) + 2)
#define KERNEL_HIST_SLOTS(bins) ((bins) + 3)

/* The bin of an in-range value from t = ((float)x - lo_f) * scale_f:
 * t truncated and clamped to [0, bins - 1], NaN to 0. t is a variable of
 * the caller (it is read several times). daemon/hist_bin.h says why host
 * and kernels agree on it bit for bit. */
#define KERNEL_HIST_BIN(t, bins_f, bins)                                        \
    ((t) > 0.0f && (t) < (bins_f) && (unsigned)(t) < (bins) - 1u ? (unsigned)(t) \
     : (t) > 0.0f                                                ? (bins) - 1u  \
                                                                 : 0u)

#ifdef __OPENCL_VERSION__
/* Kernels only (transform.cl, batch.cl). The lanes of the word at byte
 * start whose index start+j lies in [lo, hi), as a select() mask. */
static inline char16 lane_mask(ulong start, ulong lo, ulong hi)
{
    const uchar16 lane = (uchar16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const uchar a = (uchar)(lo <= start ? 0 : min(lo - start, (ulong)KERNEL_WORD));
    const uchar b = (uchar)(hi <= start ? 0 : min(hi - start, (ulong)KERNEL_WORD));
    return (lane >= (uchar16)a) & (lane < (uchar16)b);
}

/* The transform ops on a uchar16 word v, with val the operand (a uchar in
 * scope), for CPU devices' transform kernels and the batch lane alike. */
#define OPV_ADD(v) ((v) + val)
#define OPV_XOR(v) ((v) ^ val)
#define OPV_AND(v) ((v) & val)
#define OPV_OR(v) ((v) | val)
#define OPV_SET(v) ((uchar16)val)
#endif

#endif
