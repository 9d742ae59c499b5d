/* SPDX-License-Identifier: MIT */
/* rpc_bulk.h: a unary request's bulk bytes as a view into its message.
 *
 * protobuf-c's unpack copies every bytes field into fresh memory: for a
 * 32 MiB Transform that copy cost about as much as the job. rpc.c instead
 * finds the request's bulk field (its `data`) by hand (common/pb_wire.c),
 * leaves it where it lies in the message's buffer (which it took from h2,
 * h2_call_take_message), and has protobuf-c unpack and validate every
 * other field as before. The result is the message protobuf-c would make,
 * with the bulk field empty and its bytes given as a view instead.
 */
#ifndef AMPD_RPC_BULK_H
#define AMPD_RPC_BULK_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What rpc_bulk_scan found in a message. */
struct rpc_bulk {
    const uint8_t *data;   /* the field's bytes in the message: its last occurrence, which
                            * protobuf-c would keep too; NULL when absent */
    size_t len;
    size_t rest_len;       /* bytes of the message outside every occurrence */
    size_t rest_at;        /* when rest_whole: where those bytes start */
    bool rest_whole;       /* they are one range of the message (no copy to unpack them) */
};

/* The field of desc read as a view: a singular bytes field named "data"
 * outside any oneof, or NULL when desc's messages have none. */
const ProtobufCFieldDescriptor *rpc_bulk_field(const ProtobufCMessageDescriptor *desc);

/* Finds field's occurrences in the len-byte message msg. Returns 0, or -1
 * when the message is malformed where protobuf-c's unpack would say so
 * (pb_field_next). */
int rpc_bulk_scan(const ProtobufCFieldDescriptor *field, const uint8_t *msg, size_t len,
                  struct rpc_bulk *b);

/* Bytes rpc_bulk_unpack() allocates for the duration of the call, besides
 * the message it returns (about rest_len bytes): a copy of the rest when
 * it is not one range. */
size_t rpc_bulk_scratch(const struct rpc_bulk *b);

/* Unpacks msg, as scanned into b, without field's occurrences: every
 * other field is protobuf-c's, validated by it. Returns the message (free
 * with protobuf_c_message_free_unpacked), or NULL when the rest is not a
 * valid desc message or memory ran out. */
ProtobufCMessage *rpc_bulk_unpack(const ProtobufCMessageDescriptor *desc,
                                  const ProtobufCFieldDescriptor *field, const uint8_t *msg,
                                  size_t len, const struct rpc_bulk *b);

#endif
