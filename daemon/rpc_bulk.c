/* SPDX-License-Identifier: MIT */
/* rpc_bulk.c: a unary request's bulk bytes as a view (rpc_bulk.h).
 *
 * One pass over the message's top-level fields finds the bulk field's
 * occurrences (field number and wire type both match: one with another
 * wire type stays in the rest, where protobuf-c refuses it as it would
 * have), and measures what is left; a second pass copies that rest only
 * when it is not one range already (the usual request has its `data`
 * first or last, since encoders write fields in number order).
 */
#include "rpc_bulk.h"

#include <stdlib.h>
#include <string.h>

#include "pb_wire.h"

/* The bulk field's name in every request that has one (amp.proto). */
#define RPC_BULK_NAME "data"

const ProtobufCFieldDescriptor *rpc_bulk_field(const ProtobufCMessageDescriptor *desc)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(desc,
                                                                                       RPC_BULK_NAME);
    if (!f || f->type != PROTOBUF_C_TYPE_BYTES || f->label == PROTOBUF_C_LABEL_REPEATED ||
        (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
        return NULL;
    return f;
}

static bool rpc_bulk_is(const ProtobufCFieldDescriptor *field, const struct pb_field *f)
{
    return f->number == field->id && f->wire == PB_WIRE_LEN;
}

int rpc_bulk_scan(const ProtobufCFieldDescriptor *field, const uint8_t *msg, size_t len,
                  struct rpc_bulk *b)
{
    memset(b, 0, sizeof(*b));
    size_t runs = 0;        /* maximal ranges of other fields */
    bool in_run = false;
    for (size_t i = 0; i < len;) {
        struct pb_field f;
        if (pb_field_next(msg, len, &i, &f) != 0)
            return -1;
        if (rpc_bulk_is(field, &f)) {
            b->data = msg + f.value;
            b->len = f.end - f.value;
            in_run = false;
            continue;
        }
        if (!in_run && runs++ == 0)
            b->rest_at = f.start;
        in_run = true;
        b->rest_len += f.end - f.start;
    }
    b->rest_whole = runs <= 1;
    return 0;
}

size_t rpc_bulk_scratch(const struct rpc_bulk *b)
{
    return b->rest_whole ? 0 : b->rest_len;
}

/* Copies the fields other than field's into rest (rest_len bytes). */
static void rpc_bulk_gather(const ProtobufCFieldDescriptor *field, const uint8_t *msg, size_t len,
                            uint8_t *rest)
{
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        struct pb_field f;
        if (pb_field_next(msg, len, &i, &f) != 0)
            return;   /* rpc_bulk_scan read the same bytes whole */
        if (!rpc_bulk_is(field, &f)) {
            memcpy(rest + o, msg + f.start, f.end - f.start);
            o += f.end - f.start;
        }
    }
}

ProtobufCMessage *rpc_bulk_unpack(const ProtobufCMessageDescriptor *desc,
                                  const ProtobufCFieldDescriptor *field, const uint8_t *msg,
                                  size_t len, const struct rpc_bulk *b)
{
    if (b->rest_whole)
        return protobuf_c_message_unpack(desc, NULL, b->rest_len, msg + b->rest_at);
    uint8_t *rest = malloc(b->rest_len);
    if (!rest)
        return NULL;
    rpc_bulk_gather(field, msg, len, rest);
    ProtobufCMessage *m = protobuf_c_message_unpack(desc, NULL, b->rest_len, rest);
    free(rest);
    return m;
}
