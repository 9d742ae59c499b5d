/* SPDX-License-Identifier: MIT */
/* rpc_params.c: static validation of job parameters, proto -> struct step.
 *
 * Every check a request can fail without knowing the device happens here,
 * and every refusal names the field as the client wrote it ("params.bins",
 * "steps[2].transform.op"). Device-dependent limits (tile size, constant
 * buffer) are dev_run()'s. proto3 has no presence for scalars, so a missing
 * params message reads as all defaults and is judged as such.
 */
#include "rpc_params.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sat.h"

#define RPC_BYTE_MAX 255
#define RPC_FIELD_MAX 48   /* "steps[63].histogram" and the like */

static enum status_code rpc_invalid(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum status_code rpc_invalid(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return STATUS_INVALID_ARGUMENT;
}

/* proto ElementType -> elem_type; -1 for UNSPECIFIED or unknown values. */
static int rpc_elem_type(int t)
{
    switch (t) {
    case AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_UINT8: return ELEM_U8;
    case AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_UINT32: return ELEM_U32;
    case AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_INT32: return ELEM_I32;
    case AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_FLOAT32: return ELEM_F32;
    case AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_INT64: return ELEM_I64;
    default: return -1;
    }
}

static const char *rpc_elem_name(enum elem_type t)
{
    switch (t) {
    case ELEM_U8: return "UINT8";
    case ELEM_U32: return "UINT32";
    case ELEM_I32: return "INT32";
    case ELEM_F32: return "FLOAT32";
    case ELEM_I64: return "INT64";
    }
    return "?";
}

static int rpc_transform_op(int op)
{
    switch (op) {
    case AMP__V1__TRANSFORM_OP__TRANSFORM_OP_ADD: return XFORM_ADD;
    case AMP__V1__TRANSFORM_OP__TRANSFORM_OP_XOR: return XFORM_XOR;
    case AMP__V1__TRANSFORM_OP__TRANSFORM_OP_AND: return XFORM_AND;
    case AMP__V1__TRANSFORM_OP__TRANSFORM_OP_OR: return XFORM_OR;
    case AMP__V1__TRANSFORM_OP__TRANSFORM_OP_SET: return XFORM_SET;
    case AMP__V1__TRANSFORM_OP__TRANSFORM_OP_MAP: return XFORM_MAP;
    default: return -1;
    }
}

static enum status_code rpc_transform_range(const Amp__V1__TransformParams *p, const char *f,
                                            uint64_t len, struct transform_params *tp,
                                            char *err, size_t errlen)
{
    if (p->offset > len)
        return rpc_invalid(err, errlen, "%s.offset (%" PRIu64 ") exceeds the data length (%" PRIu64 ")",
                           f, (uint64_t)p->offset, len);
    tp->offset = p->offset;
    if (p->has_length_case != AMP__V1__TRANSFORM_PARAMS__HAS_LENGTH_LENGTH) {
        tp->length = len - p->offset;
        return STATUS_OK;
    }
    if (p->length > len - p->offset)
        return rpc_invalid(err, errlen, "%s.offset + %s.length exceeds the data length (%" PRIu64 ")",
                           f, f, len);
    tp->length = p->length;
    return STATUS_OK;
}

enum status_code rpc_params_transform(const Amp__V1__TransformParams *p, const char *f,
                                      uint64_t len, struct step *st, char *err, size_t errlen)
{
    static const Amp__V1__TransformParams defaults = AMP__V1__TRANSFORM_PARAMS__INIT;
    if (!p)
        p = &defaults;
    struct transform_params *tp = &st->u.transform;
    st->kind = STEP_TRANSFORM;
    if (p->op == AMP__V1__TRANSFORM_OP__TRANSFORM_OP_UNSPECIFIED)
        return rpc_invalid(err, errlen, "%s.op is required", f);
    int op = rpc_transform_op(p->op);
    if (op < 0)
        return rpc_invalid(err, errlen, "%s.op: unknown transform op %d", f, (int)p->op);
    tp->op = (enum transform_op)op;
    if (op == XFORM_MAP) {
        if (p->table.len != JOB_MAP_TABLE_LEN)
            return rpc_invalid(err, errlen, "%s.table must hold exactly %d bytes, got %zu", f,
                               JOB_MAP_TABLE_LEN, p->table.len);
        memcpy(tp->table, p->table.data, JOB_MAP_TABLE_LEN);
    } else {
        if (p->value > RPC_BYTE_MAX)
            return rpc_invalid(err, errlen, "%s.value must be 0..%d, got %" PRIu32, f,
                               RPC_BYTE_MAX, p->value);
        tp->value = (uint8_t)p->value;
    }
    return rpc_transform_range(p, f, len, tp, err, errlen);
}

/* 32-bit histograms: bins, range and the out-of-range rule. */
static enum status_code rpc_hist_wide(const Amp__V1__HistogramParams *p, const char *f,
                                      struct hist_params *hp, size_t max_message, char *err,
                                      size_t errlen)
{
    if (p->bins < 1)
        return rpc_invalid(err, errlen, "%s.bins must be >= 1", f);
    if ((uint64_t)p->bins * sizeof(uint64_t) > max_message)
        return rpc_invalid(err, errlen, "%s.bins (%" PRIu32 ") * 8 bytes exceeds --max-message-bytes (%zu)",
                           f, p->bins, max_message);
    if (!isfinite(p->lo) || !isfinite(p->hi))
        return rpc_invalid(err, errlen, "%s.lo and %s.hi must be finite", f, f);
    if (!(p->lo < p->hi))
        return rpc_invalid(err, errlen, "%s.lo must be < %s.hi", f, f);
    hp->bins = p->bins;
    hp->lo = p->lo;
    hp->hi = p->hi;
    return STATUS_OK;
}

enum status_code rpc_params_histogram(const Amp__V1__HistogramParams *p, const char *f,
                                      uint64_t len, size_t max_message, struct step *st,
                                      char *err, size_t errlen)
{
    static const Amp__V1__HistogramParams defaults = AMP__V1__HISTOGRAM_PARAMS__INIT;
    if (!p)
        p = &defaults;
    struct hist_params *hp = &st->u.hist;
    st->kind = STEP_HISTOGRAM;
    if (p->out_of_range != AMP__V1__OUT_OF_RANGE__OUT_OF_RANGE_DROP
        && p->out_of_range != AMP__V1__OUT_OF_RANGE__OUT_OF_RANGE_CLAMP)
        return rpc_invalid(err, errlen, "%s.out_of_range: unknown value %d", f, (int)p->out_of_range);
    hp->clamp = p->out_of_range == AMP__V1__OUT_OF_RANGE__OUT_OF_RANGE_CLAMP;
    int t = p->type == AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_UNSPECIFIED ? ELEM_U8 : rpc_elem_type(p->type);
    if (t < 0)
        return rpc_invalid(err, errlen, "%s.type: unknown element type %d", f, (int)p->type);
    hp->type = (enum elem_type)t;
    if (t == ELEM_U8) {
        if (p->bins != 0 && p->bins != JOB_HIST_BYTE_BINS)
            return rpc_invalid(err, errlen, "%s.type: UINT8 histograms have %d bins", f, JOB_HIST_BYTE_BINS);
        hp->bins = JOB_HIST_BYTE_BINS;
        return STATUS_OK;
    }
    if (t == ELEM_I64)
        return rpc_invalid(err, errlen, "%s.type: INT64 histograms are not supported", f);
    if (len % elem_size(hp->type) != 0)
        return rpc_invalid(err, errlen,
                           "data: length %" PRIu64 " is not a multiple of %zu, the %s element size",
                           len, elem_size(hp->type), rpc_elem_name(hp->type));
    return rpc_hist_wide(p, f, hp, max_message, err, errlen);
}

enum status_code rpc_params_fill(const Amp__V1__FillParams *p, const char *f, size_t max_message,
                                 struct step *st, char *err, size_t errlen)
{
    static const Amp__V1__FillParams defaults = AMP__V1__FILL_PARAMS__INIT;
    if (!p)
        p = &defaults;
    struct fill_params *fp = &st->u.fill;
    st->kind = STEP_FILL;
    int t = rpc_elem_type(p->type);
    if (t != ELEM_I32 && t != ELEM_U32 && t != ELEM_I64 && t != ELEM_F32)
        return rpc_invalid(err, errlen, "%s.type must be INT32, UINT32, INT64 or FLOAT32", f);
    fp->type = (enum elem_type)t;
    if (p->count > max_message / elem_size(fp->type)) {
        if (max_message == SIZE_MAX)   /* streams and regions: bounded elsewhere, if addressable */
            return rpc_invalid(err, errlen,
                               "%s.count (%" PRIu64 ") * element size (%zu) does not fit in 64 bits",
                               f, p->count, elem_size(fp->type));
        return rpc_invalid(err, errlen, "%s.count * element size exceeds --max-message-bytes (%zu)",
                           f, max_message);
    }
    fp->count = p->count;
    fp->tile = p->tile;
    fp->start = p->start;
    fp->step = p->step;
    fp->start_f = p->start_float;
    fp->step_f = p->step_float;
    return STATUS_OK;
}

enum status_code rpc_params_device(const char *device, struct job *job, char *err, size_t errlen)
{
    if (strlen(device) >= sizeof(job->device_req))
        return rpc_invalid(err, errlen, "device: no device matches \"%.40s...\"", device);
    snprintf(job->device_req, sizeof(job->device_req), "%s", device);
    return STATUS_OK;
}

enum status_code rpc_params_step(const Amp__V1__Step *ps, size_t i, size_t max_data,
                                 size_t max_result, struct step *st, uint64_t *len, char *err,
                                 size_t errlen)
{
    char f[RPC_FIELD_MAX];
    enum status_code code = STATUS_OK;
    switch (ps->kind_case) {
    case AMP__V1__STEP__KIND_REVERSE:
        st->kind = STEP_REVERSE;
        break;
    case AMP__V1__STEP__KIND_TRANSFORM:
        snprintf(f, sizeof(f), "steps[%zu].transform", i);
        code = rpc_params_transform(ps->transform, f, *len, st, err, errlen);
        break;
    case AMP__V1__STEP__KIND_HISTOGRAM:
        snprintf(f, sizeof(f), "steps[%zu].histogram", i);
        code = rpc_params_histogram(ps->histogram, f, *len, max_result, st, err, errlen);
        break;
    case AMP__V1__STEP__KIND_FILL:
        snprintf(f, sizeof(f), "steps[%zu].fill", i);
        code = rpc_params_fill(ps->fill, f, max_data, st, err, errlen);
        break;
    default:
        snprintf(err, errlen, "steps[%zu]: no step kind set", i);
        return STATUS_INVALID_ARGUMENT;
    }
    if (code != STATUS_OK)
        return code;
    *len = job_step_output_len(st, *len);
    return STATUS_OK;
}
