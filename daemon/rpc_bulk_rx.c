/* SPDX-License-Identifier: MIT */
/* rpc_bulk_rx.c: a unary request's bulk field taken in pieces, into
 * pinned memory where a run is free, else host memory (rpc_bulk_rx.h). */
#include "rpc_bulk_rx.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "field_rx.h"
#include "h2.h"
#include "pb_wire.h"
#include "sched.h"
#include "staging.h"

/* A bulk field below 1/RPC_BULK_RX_MIN_SHARE of a staging buffer is read whole:
 * its device copies cost microseconds either way. */
#define RPC_BULK_RX_MIN_SHARE 4

struct rpc_bulk_rx {
    struct staging_port *port;  /* whose run; NULL: the field is malloc'd */
    size_t dev_index;           /* the device whose staging that is */
    size_t nbufs;
    struct field_rx rx;         /* field: the run, nbufs staging buffers in one piece, or
                                 * malloc'd (NULL once given back); rest: malloc'd */
};

void rpc_bulk_rx_free(void *p)
{
    struct rpc_bulk_rx *f = p;
    if (!f)
        return;
    if (f->port && f->rx.field)
        staging_put_run(f->port, f->rx.field, f->nbufs);
    else
        free(f->rx.field);
    free(f->rx.rest);
    free(f);
}

/* The field's tag and length at the message's head, as protobuf-c would
 * read them (each varint at most 5 bytes, the length at most INT_MAX);
 * returns the offset of its bytes, or 0 when the head is anything else. */
static size_t rpc_bulk_rx_head(const ProtobufCFieldDescriptor *bulk, const uint8_t *head,
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

size_t rpc_bulk_rx_start(struct rpc_bulk_rx **out, struct sched_port *sched, struct h2_call *call,
                         const ProtobufCFieldDescriptor *bulk, const uint8_t *head, size_t msg_len)
{
    uint64_t len;
    size_t off = rpc_bulk_rx_head(bulk, head, msg_len, &len);
    if (!off || !sched || *out)
        return 0;
    size_t dev_index = sched_default(sched);
    struct staging_port *port = sched_staging(sched, dev_index);
    size_t size = staging_buf_size(port), count = staging_count(port);
    size_t nbufs = (size_t)((len + size - 1) / size);
    if (len < size / RPC_BULK_RX_MIN_SHARE)
        return 0;
    struct rpc_bulk_rx *f = calloc(1, sizeof *f);
    if (!f)
        return 0;
    f->dev_index = dev_index;
    f->rx.len = (size_t)len;
    f->rx.rest_len = msg_len - off - (size_t)len;
    if (nbufs <= count - count / 4 && (f->rx.field = staging_get_run(port, nbufs))) {
        f->port = port;
        f->nbufs = nbufs;
    }
    f->rx.rest = malloc(f->rx.rest_len ? f->rx.rest_len : 1);
    /* A field in host memory is the client's, as a whole message is. */
    uint64_t hold = f->rx.rest_len + rpc_bulk_rx_held(f);
    if (!f->rx.rest || h2_call_hold(call, hold, NULL, 0) != 0 ||
        (!f->rx.field && !(f->rx.field = malloc(f->rx.len)))) {
        rpc_bulk_rx_free(f);
        h2_call_hold(call, 0, NULL, 0);
        return 0;   /* read whole, and refused with the limit's name */
    }
    *out = f;
    return off;
}

uint64_t rpc_bulk_rx_held(const struct rpc_bulk_rx *f)
{
    return f && !f->port ? f->rx.len : 0;
}

bool rpc_bulk_rx_piece(struct rpc_bulk_rx *f, const uint8_t *data, size_t n)
{
    field_rx_piece(&f->rx, data, n);
    return field_rx_whole(&f->rx);
}

uint8_t *rpc_bulk_rx_rest(struct rpc_bulk_rx *f, size_t *len)
{
    uint8_t *rest = f->rx.rest;
    f->rx.rest = NULL;
    *len = f->rx.rest_len;
    return rest;
}

uint8_t *rpc_bulk_rx_dest(struct rpc_bulk_rx *f, size_t *room)
{
    return f ? field_rx_dest(&f->rx, room) : NULL;
}

bool rpc_bulk_rx_give(struct rpc_bulk_rx **slot, struct job *job)
{
    struct rpc_bulk_rx *f = *slot;
    if (!f)
        return false;
    job->in = f->rx.field;
    job->in_len = f->rx.len;
    job->in_mem = f;
    job->in_mem_len = rpc_bulk_rx_held(f);   /* a run: the staging pool's, not the client's */
    job->in_mem_free = rpc_bulk_rx_free;
    job->in_pinned_dev = f->port ? (int)f->dev_index : -1;
    *slot = NULL;
    return true;
}
