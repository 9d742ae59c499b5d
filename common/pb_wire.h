/* pb_wire.h: the few protobuf wire pieces the streaming hot paths write
 * and read by hand (a data chunk's tag and length), where going through
 * protobuf-c would copy every chunk once more. Everything else is
 * protobuf-c's. */
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

#endif
