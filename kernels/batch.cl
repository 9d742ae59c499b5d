/* SPDX-License-Identifier: MIT */
/* batch.cl: many small jobs in one launch (daemon/dev_batch.c).
 *
 * Work-group g runs item g of the batch: one reverse, transform or byte
 * histogram over its own slice of the packed input, into its own slice of
 * the packed output. A job of a few bytes costs the device nothing; what
 * it costs is the launch and the two copies, and here a whole batch shares
 * them. up holds the items, then the map tables, then the inputs; an item
 * is BATCH_ITEM_WORDS uints (dev_batch.c writes them): kind, input offset
 * (in up), length, output offset (in out), transform op, operand (for a
 * map, its table's offset in up), sub-range start and end. The item size
 * and the kind and op codes come in as build options from the host.
 */

__kernel void batch_run(__global const uchar *up, __global uchar *out)
{
    __local uint counts[256];   /* histograms only; must be declared out here */
    __global const uint *it = (__global const uint *)up + get_group_id(0) * BATCH_ITEM_WORDS;
    uint kind = it[0], n = it[2];
    __global const uchar *src = up + it[1];
    __global uchar *dst = out + it[3];
    uint lid = get_local_id(0), ls = get_local_size(0);

    if (kind == STEP_REVERSE) {
        for (uint i = lid; i < n; i += ls)
            dst[i] = src[n - 1 - i];
    } else if (kind == STEP_TRANSFORM && it[4] != XFORM_MAP) {
        /* Whole 16-byte words: inputs and outputs start 16-byte aligned,
         * and each is padded to a whole word (dev_batch.c), so the last
         * word's bytes past n are the job's own padding. One op per item:
         * a loop each, which compilers vectorise (a 64 KiB add on PoCL:
         * a byte and a branch at a time took ~115 us). */
        uint op = it[4], lo = it[6], hi = it[7], words = (n + KERNEL_WORD - 1) / KERNEL_WORD;
        const uchar val = (uchar)it[5];   /* the operand, as kernel_abi.h's OPV_* name it */
#define BATCH_XFORM(OPV)                                                       \
        for (uint w = lid; w < words; w += ls) {                               \
            uchar16 x = vload16(w, src);                                       \
            vstore16(select(x, OPV(x), lane_mask((ulong)w * KERNEL_WORD, lo, hi)), w, dst); \
        }
        if (op == XFORM_ADD)
            BATCH_XFORM(OPV_ADD)
        else if (op == XFORM_XOR)
            BATCH_XFORM(OPV_XOR)
        else if (op == XFORM_AND)
            BATCH_XFORM(OPV_AND)
        else if (op == XFORM_OR)
            BATCH_XFORM(OPV_OR)
        else
            BATCH_XFORM(OPV_SET)
#undef BATCH_XFORM
    } else if (kind == STEP_TRANSFORM) {
        uint lo = it[6], hi = it[7];
        __global const uchar *tab = up + it[5];
        for (uint i = lid; i < n; i += ls) {
            uchar b = src[i];
            dst[i] = i >= lo && i < hi ? tab[b] : b;
        }
    } else {
        /* The kind is the same for the whole group: every work-item of it
         * reaches the barriers. */
        for (uint i = lid; i < 256; i += ls)
            counts[i] = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint i = lid; i < n; i += ls)
            atomic_inc(&counts[src[i]]);
        barrier(CLK_LOCAL_MEM_FENCE);
        __global uint *c = (__global uint *)dst;
        for (uint i = lid; i < 256; i += ls)
            c[i] = counts[i];
    }
}
