/* SPDX-License-Identifier: MIT */
/* pb_wire.h: the few protobuf wire pieces the hot paths write and read
 * by hand (a data chunk's tag and length; the fields of a unary request,
 * to find its bulk bytes), where going through protobuf-c would copy the
 * bulk bytes once more. Everything else is protobuf-c's. */
#ifndef AMP_PB_WIRE_H
#define AMP_PB_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define PB_VARINT_MAX 10   /* bytes of the longest varint (64 bits) */

/* Bytes of the varint for v. */
size_t pb_varint_len(uint64_t v);

/* Writes v as a varint at out (room for pb_varint_len(v)); returns its length. */
size_t pb_varint_put(uint8_t *out, uint64_t v);

/* Reads a varint at buf[*i], not past len, into *v and moves *i past it.
 * Returns 0, or -1 when it runs past len or 64 bits. */
int pb_varint_get(const uint8_t *buf, size_t len, size_t *i, uint64_t *v);

/* Wire types (the low 3 bits of a tag); groups (3, 4) are not supported,
 * as in protobuf-c. */
#define PB_WIRE_VARINT 0
#define PB_WIRE_I64 1
#define PB_WIRE_LEN 2
#define PB_WIRE_I32 5

/* Tag of field number n with wire type w, as one varint value. */
#define PB_TAG(n, w) (((uint64_t)(n) << 3) | (w))

/* One field of a message as it lies on the wire: buf[start, end), its
 * value from buf[value] (past a length-delimited field's length). */
struct pb_field {
    uint32_t number;
    unsigned wire;     /* PB_WIRE_* */
    size_t start, value, end;
};

/* Reads the field at buf[*i] (*i < len) into *f and moves *i past it.
 * Returns 0, or -1 where protobuf-c's unpack would find the message
 * malformed: a tag over 5 bytes or with field number 0, a group or an
 * unknown wire type, a varint over 10 bytes, a length over 5 bytes or
 * INT_MAX, or a field running past len. */
int pb_field_next(const uint8_t *buf, size_t len, size_t *i, struct pb_field *f);

#endif
