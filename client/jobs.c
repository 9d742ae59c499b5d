/* SPDX-License-Identifier: MIT */
/* jobs.c: the job calls of libampclient (reverse, transform, histogram,
 * fill): check the caller's arguments, encode the amp.v1 request, run it
 * through call.c, and hand the reply back in caller-owned memory.
 *
 * Local checks catch what the C API can get wrong (NULL pointers, enum
 * values out of range, a map without its 256-byte table); the daemon
 * validates the rest (bins, ranges, lengths) and its INVALID_ARGUMENT
 * message comes back through amp_last_message().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "amp.pb-c.h"
#include "async.h"
#include "call.h"
#include "conn.h"
#include "field_rx.h"
#include "heap.h"
#include "jobs.h"
#include "pb_wire.h"
#include "amp_wire.h"

#define JOBS_PATH_REVERSE "/amp.v1.Amp/Reverse"
#define JOBS_PATH_TRANSFORM "/amp.v1.Amp/Transform"
#define JOBS_PATH_HISTOGRAM "/amp.v1.Amp/Histogram"
#define JOBS_PATH_FILL "/amp.v1.Amp/Fill"

int jobs_check_opts(amp_conn *c, const amp_opts *o)
{
    if (o && abi_check_size(c, "opts", o->size, ABI_OPTS_MIN) != 0)
        return AMP_EINVAL;
    if (o && o->timeout_ms < 0)
        return conn_fail(c, AMP_EINVAL, "opts.timeout_ms must be >= 0, got %d", o->timeout_ms);
    return 0;
}

int jobs_timeout(const amp_opts *o)
{
    return o ? o->timeout_ms : 0;
}

char *jobs_device(const amp_opts *o)
{
    return (char *)(o && o->device ? o->device : "");
}

void jobs_set_device(amp_conn *c, const char *device)
{
    snprintf(c->device, sizeof c->device, "%s", device ? device : "");
}

/* The checks of a job's input and options. */
static int jobs_check_input(amp_conn *c, const amp_opts *o, const void *in, size_t len)
{
    if (!in && len > 0)
        return conn_fail(c, AMP_EINVAL, "in is NULL but len is %zu", len);
    return jobs_check_opts(c, o);
}

/* The start of a blocking data-producing call: c, out and out_len checked
 * (*out cleared), then in and o. 0 to go on, or the call's error. */
static int jobs_data_begin(amp_conn *c, const amp_opts *o, const void *in, size_t len,
                           void **out, size_t *out_len)
{
    if (!c)
        return AMP_EINVAL;
    conn_begin(c);
    if (!out || !out_len)
        return conn_fail(c, AMP_EINVAL, "out and out_len must not be NULL");
    *out = NULL;
    *out_len = 0;
    return jobs_check_input(c, o, in, len);
}

/* Copies a DataReply's bytes into a malloc'd buffer for the caller. */
static int jobs_take_data(amp_conn *c, ProtobufCMessage *msg, void **out, size_t *out_len)
{
    Amp__V1__DataReply *r = (Amp__V1__DataReply *)msg;
    void *p = malloc(r->data.len ? r->data.len : 1);
    if (!p) {
        protobuf_c_message_free_unpacked(msg, NULL);
        return conn_fail(c, AMP_ENOMEM, "out of memory for a %zu-byte reply", r->data.len);
    }
    if (r->data.len)
        memcpy(p, r->data.data, r->data.len);
    *out = p;
    *out_len = r->data.len;
    jobs_set_device(c, r->device);
    protobuf_c_message_free_unpacked(msg, NULL);
    return 0;
}

int jobs_reply_fields(const uint8_t *msg, size_t avail, size_t msg_len, uint8_t device_tag,
                      struct jobs_reply_fields *f)
{
    memset(f, 0, sizeof *f);
    size_t i = 0;
    while (i < avail) {
        uint8_t tag = msg[i++];
        uint64_t n;
        if ((tag != AMP_WIRE_DATA_REPLY_DATA && tag != device_tag) || pb_varint_get(msg, avail, &i, &n) != 0 ||
            n > msg_len - i)
            return 0;
        if (tag == device_tag) {
            if (n > avail - i)
                return 0;
            f->dev = msg + i;
            f->dev_len = (size_t)n;
        } else {
            f->has_data = 1;
            f->data_off = i;
            f->data_len = (size_t)n;
            if (n > avail - i)   /* runs past what is here: the rest of the message */
                return i + n == msg_len;
        }
        i += (size_t)n;
    }
    return i == msg_len;
}

/* Records a DataReply's device field (not NUL-terminated on the wire). */
static void jobs_set_reply_device(amp_conn *c, const struct jobs_reply_fields *f)
{
    char device[CONN_DEVICE_MAX];
    snprintf(device, sizeof device, "%.*s",
             (int)(f->dev_len < sizeof device ? f->dev_len : sizeof device - 1),
             f->dev ? (const char *)f->dev : "");
    jobs_set_device(c, device);
}

/* The usual DataReply, {data (field 1), device (field 2)} in any order,
 * read in place: its data moves to the front of the message's own buffer,
 * which becomes the caller's output. Decoding it with protobuf-c and
 * copying the bytes out would write the whole output into fresh memory
 * twice more. Returns 1 when handled, 0 to fall back to protobuf-c. */
static int jobs_data_view(amp_conn *c, uint8_t *msg, size_t len, void **out, size_t *out_len)
{
    struct jobs_reply_fields f;
    if (!jobs_reply_fields(msg, len, len, AMP_WIRE_DATA_REPLY_DEVICE, &f))
        return 0;
    jobs_set_reply_device(c, &f);
    if (f.data_len)
        memmove(msg, msg + f.data_off, f.data_len);
    *out = msg;
    *out_len = f.data_len;
    return 1;
}

/* A long DataReply whose data comes first (as protobuf-c packs it) is read
 * in pieces: its data straight into the caller's output buffer, from the
 * socket where the connection can (call_read_dest), and the few bytes
 * after it (the device) into rest. Collecting the message first, then
 * moving the data to its front, went over every byte twice more. */
#define JOBS_PIECES_MIN (64 * 1024)   /* smaller data is read whole */
#define JOBS_REST_MAX 512             /* room for what follows the data: the device */

struct jobs_data_rx {
    struct field_rx data;             /* field: the data's bytes, heap_take'n (NULL: not in
                                       * pieces); rest: rest_buf */
    uint8_t rest_buf[JOBS_REST_MAX];
};

static size_t jobs_rx_start(const uint8_t *head, size_t msg_len, void *ctx)
{
    struct jobs_data_rx *rx = ctx;
    size_t i = 1;
    uint64_t n;
    if (head[0] != AMP_WIRE_DATA_REPLY_DATA || pb_varint_get(head, CALL_PIECE_HEAD, &i, &n) != 0 ||
        n > msg_len - i || n < JOBS_PIECES_MIN || msg_len - i - n > JOBS_REST_MAX)
        return 0;
    size_t cap;
    rx->data.field = heap_take((size_t)n, &cap);
    if (!rx->data.field)
        rx->data.field = malloc((size_t)n);
    if (!rx->data.field)
        return 0;   /* whole, where running out of memory is reported */
    rx->data.len = (size_t)n;
    rx->data.rest = rx->rest_buf;
    rx->data.rest_len = msg_len - i - (size_t)n;
    return i;
}

static int jobs_rx_piece(const uint8_t *data, size_t len, void *ctx)
{
    field_rx_piece(&((struct jobs_data_rx *)ctx)->data, data, len);
    return 0;
}

static uint8_t *jobs_rx_dest(size_t *room, void *ctx)
{
    return field_rx_dest(&((struct jobs_data_rx *)ctx)->data, room);
}

/* The reply was taken in pieces: what followed the data is the device (a
 * later data field, which would win, is left to protobuf-c). */
static int jobs_rx_finish(amp_conn *c, struct jobs_data_rx *rx, void **out, size_t *out_len)
{
    struct jobs_reply_fields f;
    if (!jobs_reply_fields(rx->data.rest, rx->data.rest_len, rx->data.rest_len,
                           AMP_WIRE_DATA_REPLY_DEVICE, &f) ||
        f.has_data) {
        heap_give(rx->data.field);
        return conn_fail(c, AMP_EPROTO, "cannot decode the %s reply",
                         amp__v1__data_reply__descriptor.name);
    }
    jobs_set_reply_device(c, &f);
    *out = rx->data.field;
    *out_len = rx->data.len;
    return 0;
}

/* Runs a call whose reply is a DataReply and hands its bytes over. */
static int jobs_data_call(amp_conn *c, const char *path, const ProtobufCMessage *req,
                          int timeout_ms, void **out, size_t *out_len)
{
    uint8_t *msg;
    size_t len;
    struct jobs_data_rx rx = { 0 };
    const struct call_pieces pieces = { jobs_rx_start, jobs_rx_piece, jobs_rx_dest, &rx };
    int rc = call_unary_pieces(c, path, req, timeout_ms, &pieces, &msg, &len);
    if (rc != 0) {
        heap_give(rx.data.field);
        return rc;
    }
    if (!msg)
        return jobs_rx_finish(c, &rx, out, out_len);
    heap_give(rx.data.field);   /* NULL: the reply came whole */
    return jobs_data_reply(c, msg, len, out, out_len);
}

int jobs_data_reply(amp_conn *c, uint8_t *msg, size_t len, void **out, size_t *out_len)
{
    if (jobs_data_view(c, msg, len, out, out_len))
        return 0;
    ProtobufCMessage *reply = protobuf_c_message_unpack(&amp__v1__data_reply__descriptor, NULL,
                                                        len, msg);
    free(msg);
    if (!reply)
        return conn_fail(c, AMP_EPROTO, "cannot decode the %s reply",
                         amp__v1__data_reply__descriptor.name);
    return jobs_take_data(c, reply, out, out_len);
}

ProtobufCBinaryData jobs_bytes(const void *in, size_t len)
{
    ProtobufCBinaryData b = { len, (uint8_t *)(uintptr_t)in };
    return b;
}

int jobs_reverse_req(amp_conn *c, const amp_opts *o, const void *in, size_t len,
                     struct jobs_req *r)
{
    int rc = jobs_check_input(c, o, in, len);
    if (rc != 0)
        return rc;
    amp__v1__reverse_request__init(&r->u.reverse);
    r->u.reverse.data = jobs_bytes(in, len);
    r->u.reverse.device = jobs_device(o);
    r->path = JOBS_PATH_REVERSE;
    r->msg = &r->u.reverse.base;
    return 0;
}

int amp_reverse(amp_conn *c, const amp_opts *o, const void *in, size_t len, void **out,
                size_t *out_len)
{
    struct jobs_req r;
    int rc = jobs_data_begin(c, o, in, len, out, out_len);
    if (rc == 0)
        rc = jobs_reverse_req(c, o, in, len, &r);
    return rc != 0 ? rc : jobs_data_call(c, r.path, r.msg, jobs_timeout(o), out, out_len);
}

/* --- transform ---------------------------------------------------------------- */

static int jobs_op(amp_op op, Amp__V1__TransformOp *out)
{
    switch (op) {
    case AMP_OP_ADD: *out = AMP__V1__TRANSFORM_OP__TRANSFORM_OP_ADD; return 0;
    case AMP_OP_XOR: *out = AMP__V1__TRANSFORM_OP__TRANSFORM_OP_XOR; return 0;
    case AMP_OP_AND: *out = AMP__V1__TRANSFORM_OP__TRANSFORM_OP_AND; return 0;
    case AMP_OP_OR: *out = AMP__V1__TRANSFORM_OP__TRANSFORM_OP_OR; return 0;
    case AMP_OP_SET: *out = AMP__V1__TRANSFORM_OP__TRANSFORM_OP_SET; return 0;
    case AMP_OP_MAP: *out = AMP__V1__TRANSFORM_OP__TRANSFORM_OP_MAP; return 0;
    }
    return -1;
}

int jobs_transform_params(amp_conn *c, const char *where, const amp_transform_params *p,
                          Amp__V1__TransformParams *tp)
{
    if (!p)
        return conn_fail(c, AMP_EINVAL, "%s must not be NULL", where);
    if (abi_check_reserved(c, where, p->reserved, sizeof p->reserved) != 0)
        return AMP_EINVAL;
    if (jobs_op(p->op, &tp->op) != 0)
        return conn_fail(c, AMP_EINVAL, "%s.op: %d is not an amp_op", where, (int)p->op);
    if (p->op == AMP_OP_MAP) {
        if (!p->table)
            return conn_fail(c, AMP_EINVAL, "%s.table: map needs a table, got NULL", where);
        if (p->table_len != AMP_MAP_TABLE_LEN)
            return conn_fail(c, AMP_EINVAL, "%s.table_len: map needs exactly %d bytes, got %zu",
                             where, AMP_MAP_TABLE_LEN, p->table_len);
        tp->table = jobs_bytes(p->table, p->table_len);
    }
    tp->value = p->value;
    tp->offset = p->offset;
    if (p->has_length) {
        tp->has_length_case = AMP__V1__TRANSFORM_PARAMS__HAS_LENGTH_LENGTH;
        tp->length = p->length;
    }
    return 0;
}

int jobs_transform_req(amp_conn *c, const amp_opts *o, const amp_transform_params *p,
                       const void *in, size_t len, struct jobs_req *r)
{
    int rc = jobs_check_input(c, o, in, len);
    amp__v1__transform_params__init(&r->transform);
    if (rc == 0)
        rc = jobs_transform_params(c, "params", p, &r->transform);
    if (rc != 0)
        return rc;
    amp__v1__transform_request__init(&r->u.transform);
    r->u.transform.data = jobs_bytes(in, len);
    r->u.transform.params = &r->transform;
    r->u.transform.device = jobs_device(o);
    r->path = JOBS_PATH_TRANSFORM;
    r->msg = &r->u.transform.base;
    return 0;
}

int amp_transform(amp_conn *c, const amp_opts *o, const amp_transform_params *p, const void *in,
                  size_t len, void **out, size_t *out_len)
{
    struct jobs_req r;
    int rc = jobs_data_begin(c, o, in, len, out, out_len);
    if (rc == 0)
        rc = jobs_transform_req(c, o, p, in, len, &r);
    return rc != 0 ? rc : jobs_data_call(c, r.path, r.msg, jobs_timeout(o), out, out_len);
}

/* --- histogram ---------------------------------------------------------------- */

static int jobs_type(amp_type t, int *out)
{
    switch (t) {
    case AMP_TYPE_UINT8: *out = AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_UINT8; return 0;
    case AMP_TYPE_UINT32: *out = AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_UINT32; return 0;
    case AMP_TYPE_INT32: *out = AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_INT32; return 0;
    case AMP_TYPE_FLOAT32: *out = AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_FLOAT32; return 0;
    case AMP_TYPE_INT64: *out = AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_INT64; return 0;
    }
    return -1;
}

int jobs_copy_hist(amp_conn *c, const Amp__V1__Histogram *src, amp_hist *h)
{
    memset(h, 0, sizeof *h);
    if (!src)
        return conn_fail(c, AMP_EPROTO, "the reply has no histogram");
    if (src->n_counts > UINT32_MAX)
        return conn_fail(c, AMP_EPROTO, "histogram reply has %zu bins", src->n_counts);
    h->counts = malloc(src->n_counts ? src->n_counts * sizeof *h->counts : 1);
    if (!h->counts)
        return conn_fail(c, AMP_ENOMEM, "out of memory for %zu bins", src->n_counts);
    if (src->n_counts)
        memcpy(h->counts, src->counts, src->n_counts * sizeof *h->counts);
    h->bins = (uint32_t)src->n_counts;
    h->below = src->below;
    h->above = src->above;
    h->nan = src->nan;
    return 0;
}

int jobs_hist_reply(amp_conn *c, const uint8_t *msg, size_t len, amp_hist *h)
{
    memset(h, 0, sizeof *h);
    Amp__V1__HistogramReply *r = amp__v1__histogram_reply__unpack(NULL, len, msg);
    if (!r)
        return conn_fail(c, AMP_EPROTO, "cannot decode the %s reply",
                         amp__v1__histogram_reply__descriptor.name);
    int rc = jobs_copy_hist(c, r->histogram, h);
    if (rc == 0)
        jobs_set_device(c, r->device);
    amp__v1__histogram_reply__free_unpacked(r, NULL);
    return rc;
}

int jobs_hist_params(amp_conn *c, const char *where, const amp_hist_params *p,
                     Amp__V1__HistogramParams *hp)
{
    if (!p)
        return conn_fail(c, AMP_EINVAL, "%s must not be NULL", where);
    int type;
    if (abi_check_reserved(c, where, p->reserved, sizeof p->reserved) != 0)
        return AMP_EINVAL;
    if (jobs_type(p->type, &type) != 0)
        return conn_fail(c, AMP_EINVAL, "%s.type: %d is not an amp_type", where, (int)p->type);
    hp->type = (Amp__V1__ElementType)type;
    hp->bins = p->bins;
    hp->lo = p->lo;
    hp->hi = p->hi;
    hp->out_of_range = p->clamp ? AMP__V1__OUT_OF_RANGE__OUT_OF_RANGE_CLAMP
                                : AMP__V1__OUT_OF_RANGE__OUT_OF_RANGE_DROP;
    return 0;
}

int amp_histogram(amp_conn *c, const amp_opts *o, const amp_hist_params *p, const void *in,
                  size_t len, amp_hist *h)
{
    if (!c)
        return AMP_EINVAL;
    conn_begin(c);
    if (!h)
        return conn_fail(c, AMP_EINVAL, "h must not be NULL");
    memset(h, 0, sizeof *h);
    struct jobs_req r;
    int rc = jobs_hist_req(c, o, p, in, len, &r);
    if (rc != 0)
        return rc;
    uint8_t *msg;
    size_t n;
    rc = call_unary_raw(c, r.path, r.msg, jobs_timeout(o), &msg, &n);
    if (rc == 0)
        rc = jobs_hist_reply(c, msg, n, h);
    free(msg);
    return rc;
}

int jobs_hist_req(amp_conn *c, const amp_opts *o, const amp_hist_params *p, const void *in,
                  size_t len, struct jobs_req *r)
{
    if (!p)
        return conn_fail(c, AMP_EINVAL, "params must not be NULL");
    int rc = jobs_check_input(c, o, in, len);
    amp__v1__histogram_params__init(&r->hist);
    if (rc == 0)
        rc = jobs_hist_params(c, "params", p, &r->hist);
    if (rc != 0)
        return rc;
    amp__v1__histogram_request__init(&r->u.hist);
    r->u.hist.data = jobs_bytes(in, len);
    r->u.hist.params = &r->hist;
    r->u.hist.device = jobs_device(o);
    r->path = JOBS_PATH_HISTOGRAM;
    r->msg = &r->u.hist.base;
    return 0;
}

void amp_hist_free(amp_hist *h)
{
    if (!h)
        return;
    free(h->counts);
    memset(h, 0, sizeof *h);
}

/* --- fill --------------------------------------------------------------------- */

int jobs_fill_params(amp_conn *c, const char *where, const amp_fill_params *p,
                     Amp__V1__FillParams *fp)
{
    if (!p)
        return conn_fail(c, AMP_EINVAL, "%s must not be NULL", where);
    int type;
    if (abi_check_reserved(c, where, p->reserved, sizeof p->reserved) != 0)
        return AMP_EINVAL;
    if (jobs_type(p->type, &type) != 0)
        return conn_fail(c, AMP_EINVAL, "%s.type: %d is not an amp_type", where, (int)p->type);
    fp->type = (Amp__V1__ElementType)type;
    fp->count = p->count;
    fp->tile = p->tile;
    fp->start = p->start;
    fp->step = p->step;
    fp->start_float = p->start_f;
    fp->step_float = p->step_f;
    return 0;
}

/* The Fill request over *fp, checked. */
static int jobs_fill_req(amp_conn *c, const amp_opts *o, const amp_fill_params *p,
                         Amp__V1__FillParams *fp, Amp__V1__FillRequest *req)
{
    amp__v1__fill_params__init(fp);
    int rc = jobs_fill_params(c, "params", p, fp);
    if (rc != 0)
        return rc;
    amp__v1__fill_request__init(req);
    req->params = fp;
    req->device = jobs_device(o);
    return 0;
}

int amp_fill(amp_conn *c, const amp_opts *o, const amp_fill_params *p, void **out,
             size_t *out_len)
{
    int rc = jobs_data_begin(c, o, NULL, 0, out, out_len);
    if (rc != 0)
        return rc;
    Amp__V1__FillParams fp;
    Amp__V1__FillRequest req;
    if ((rc = jobs_fill_req(c, o, p, &fp, &req)) != 0)
        return rc;
    return jobs_data_call(c, JOBS_PATH_FILL, &req.base, jobs_timeout(o), out, out_len);
}

int amp_start_fill(amp_conn *c, const amp_opts *o, const amp_fill_params *p, amp_call **call)
{
    if (!c || !call)
        return AMP_EINVAL;
    conn_begin(c);
    *call = NULL;
    Amp__V1__FillParams fp;
    Amp__V1__FillRequest req;
    int rc = jobs_check_opts(c, o);
    if (rc == 0)
        rc = jobs_fill_req(c, o, p, &fp, &req);
    amp_call *a;
    if (rc == 0)
        rc = async_new(c, ASYNC_DATA, &a);
    return rc != 0 ? rc : async_submit(c, a, JOBS_PATH_FILL, &req.base, jobs_timeout(o), call);
}
