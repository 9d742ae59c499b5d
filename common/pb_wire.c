/* pb_wire.c: protobuf varints (pb_wire.h). */
#include "pb_wire.h"

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
