/* SPDX-License-Identifier: MIT */
/* pb_wire.c: protobuf varints (pb_wire.h). */
#include "pb_wire.h"

#include <limits.h>

/* protobuf-c's bounds on what it reads (protobuf-c.c): a tag or a length
 * in at most 5 bytes, any varint in at most 10. */
#define PB_TAG_MAX_BYTES 5
#define PB_LEN_MAX_BYTES 5

size_t pb_varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

size_t pb_varint_put(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

int pb_varint_get(const uint8_t *buf, size_t len, size_t *i, uint64_t *v)
{
    *v = 0;
    for (unsigned shift = 0; *i < len && shift < 64; shift += 7) {
        uint8_t b = buf[(*i)++];
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 0;
    }
    return -1;
}

/* A varint of at most max bytes at buf[*i]; as pb_varint_get otherwise. */
static int pb_varint_get_max(const uint8_t *buf, size_t len, size_t *i, uint64_t *v, size_t max)
{
    size_t lim = len - *i > max ? *i + max : len;
    return pb_varint_get(buf, lim, i, v);
}

int pb_field_next(const uint8_t *buf, size_t len, size_t *i, struct pb_field *f)
{
    uint64_t tag, n;
    f->start = *i;
    if ((buf[*i] & 0xf8) == 0 || pb_varint_get_max(buf, len, i, &tag, PB_TAG_MAX_BYTES) != 0)
        return -1;
    f->number = (uint32_t)(tag >> 3);
    f->wire = (unsigned)(tag & 7);
    switch (f->wire) {
    case PB_WIRE_VARINT:
        f->value = *i;
        if (pb_varint_get_max(buf, len, i, &n, PB_VARINT_MAX) != 0)
            return -1;
        break;
    case PB_WIRE_I64:
    case PB_WIRE_I32:
        n = f->wire == PB_WIRE_I64 ? 8 : 4;
        if (n > len - *i)
            return -1;
        f->value = *i;
        *i += (size_t)n;
        break;
    case PB_WIRE_LEN:
        if (pb_varint_get_max(buf, len, i, &n, PB_LEN_MAX_BYTES) != 0 || n > INT_MAX ||
            n > len - *i)
            return -1;
        f->value = *i;
        *i += (size_t)n;
        break;
    default:
        return -1;
    }
    f->end = *i;
    return 0;
}
