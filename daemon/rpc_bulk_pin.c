/* SPDX-License-Identifier: MIT */
/* rpc_bulk_pin.c: a unary request's bulk bytes taken in pieces, into
 * pinned memory where a run is free (rpc_bulk_pin.h). */
#include "rpc_bulk_pin.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "field_rx.h"
#include "h2.h"
#include "pb_wire.h"
#include "sched.h"
#include "staging.h"

/* A bulk field below 1/RPC_PIN_MIN_SHARE of a staging buffer is read whole:
 * its device copies cost microseconds either way. */
#define RPC_PIN_MIN_SHARE 4

struct rpc_pin {
    struct staging_port *port;  /* whose run; NULL: the field is malloc'd */
    size_t dev_index;           /* the device whose staging that is */
    size_t nbufs;
    struct field_rx rx;         /* field: the run, nbufs staging buffers in one piece, or
                                 * malloc'd (NULL once given back); rest: malloc'd */
};

void rpc_bulk_pin_free(void *p)
{
    struct rpc_pin *pin = p;
    if (!pin)
        return;
    if (pin->port && pin->rx.field)
        staging_put_run(pin->port, pin->rx.field, pin->nbufs);
    else
        free(pin->rx.field);
    free(pin->rx.rest);
    free(pin);
}

/* The field's tag and length at the message's head, as protobuf-c would
 * read them (each varint at most 5 bytes, the length at most INT_MAX);
 * returns the offset of its bytes, or 0 when the head is anything else. */
static size_t rpc_bulk_pin_head(const ProtobufCFieldDescriptor *bulk, const uint8_t *head,
                                size_t msg_len, uint64_t *len)
{
    size_t i = 0;
    uint64_t tag;
    if (pb_varint_get(head, H2_PIECE_HEAD, &i, &tag) != 0 || i > 5 ||
        tag != PB_TAG(bulk->id, PB_WIRE_LEN))
        return 0;
    size_t tag_end = i;
    if (pb_varint_get(head, H2_PIECE_HEAD, &i, len) != 0 || i - tag_end > 5 || *len > INT_MAX ||
        *len > msg_len - i)
        return 0;
    return i;
}

size_t rpc_bulk_pin_start(struct rpc_pin **out, struct sched_port *sched, struct h2_call *call,
                          const ProtobufCFieldDescriptor *bulk, const uint8_t *head,
                          size_t msg_len)
{
    uint64_t len;
    size_t off = rpc_bulk_pin_head(bulk, head, msg_len, &len);
    if (!off || !sched || *out)
        return 0;
    size_t dev_index = sched_default(sched);
    struct staging_port *port = sched_staging(sched, dev_index);
    size_t size = staging_buf_size(port), count = staging_count(port);
    size_t nbufs = (size_t)((len + size - 1) / size);
    if (len < size / RPC_PIN_MIN_SHARE)
        return 0;
    struct rpc_pin *pin = calloc(1, sizeof *pin);
    if (!pin)
        return 0;
    pin->dev_index = dev_index;
    pin->rx.len = (size_t)len;
    pin->rx.rest_len = msg_len - off - (size_t)len;
    if (nbufs <= count - count / 4 && (pin->rx.field = staging_get_run(port, nbufs))) {
        pin->port = port;
        pin->nbufs = nbufs;
    }
    pin->rx.rest = malloc(pin->rx.rest_len ? pin->rx.rest_len : 1);
    /* A field in host memory is the client's, as a whole message is. */
    uint64_t hold = pin->rx.rest_len + rpc_bulk_pin_held(pin);
    if (!pin->rx.rest || h2_call_hold(call, hold, NULL, 0) != 0 ||
        (!pin->rx.field && !(pin->rx.field = malloc(pin->rx.len)))) {
        rpc_bulk_pin_free(pin);
        h2_call_hold(call, 0, NULL, 0);
        return 0;   /* read whole, and refused with the limit's name */
    }
    *out = pin;
    return off;
}

uint64_t rpc_bulk_pin_held(const struct rpc_pin *pin)
{
    return pin && !pin->port ? pin->rx.len : 0;
}

bool rpc_bulk_pin_piece(struct rpc_pin *pin, const uint8_t *data, size_t n)
{
    field_rx_piece(&pin->rx, data, n);
    return field_rx_whole(&pin->rx);
}

uint8_t *rpc_bulk_pin_rest(struct rpc_pin *pin, size_t *len)
{
    uint8_t *rest = pin->rx.rest;
    pin->rx.rest = NULL;
    *len = pin->rx.rest_len;
    return rest;
}

uint8_t *rpc_bulk_pin_dest(struct rpc_pin *pin, size_t *room)
{
    return pin ? field_rx_dest(&pin->rx, room) : NULL;
}

bool rpc_bulk_pin_give(struct rpc_pin **slot, struct job *job)
{
    struct rpc_pin *pin = *slot;
    if (!pin)
        return false;
    job->in = pin->rx.field;
    job->in_len = pin->rx.len;
    job->in_mem = pin;
    job->in_mem_len = rpc_bulk_pin_held(pin);   /* a run: the staging pool's, not the client's */
    job->in_mem_free = rpc_bulk_pin_free;
    job->in_pinned_dev = pin->port ? (int)pin->dev_index : -1;
    *slot = NULL;
    return true;
}
