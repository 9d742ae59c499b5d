/* SPDX-License-Identifier: MIT */
/* test_bulk_requests.c: a real ampd over a real Unix socket, fed unary
 * requests whose `data` field is encoded by hand, since the daemon reads
 * that field itself (daemon/rpc_bulk.c) instead of through protobuf-c:
 * a data field repeated (the last one wins, as protobuf-c keeps it), one
 * between other fields or after an unknown field, and malformed ones (a
 * length that lies, truncated varints, a tag over 5 bytes, the wrong wire
 * type, a group). Good requests get the right results, in replies that
 * are byte for byte protobuf-c's packing of what they decode to (they
 * leave from the job's results, daemon/rpc.c's rpc_reply_ref); bad ones
 * get INTERNAL naming the message type. Then a good client is served and
 * SIGTERM ends the daemon with status 0 (under ASan: nothing leaked). */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amp.pb-c.h"
#include "check_run.h"
#include "daemon_proc.h"
#include "grpc_frame.h"
#include "h2_client.h"
#include "pb_wire.h"
#include "rpc_calls.h"
#include "status.h"

#define IO_TIMEOUT_MS 60000
/* Larger than common/body.c's BODY_BORROW_MIN, so that replies borrow it. */
#define BIG_LEN (100 * 1024 + 3)
#define ADD_VALUE 7

static struct daemon_proc ampd;

/* A request being built by hand, gRPC prefix first. */
struct wire {
    uint8_t *buf;
    size_t len, cap;
};

static void wire_put(struct wire *w, const void *p, size_t n)
{
    if (w->len + n > w->cap) {
        w->cap = (w->len + n) * 2 + 64;
        w->buf = realloc(w->buf, w->cap);
        ck_assert_ptr_nonnull(w->buf);
    }
    memcpy(w->buf + w->len, p, n);
    w->len += n;
}

static void wire_varint(struct wire *w, uint64_t v)
{
    uint8_t b[PB_VARINT_MAX];
    wire_put(w, b, pb_varint_put(b, v));
}

/* A length-delimited field: tag, length, bytes. */
static void wire_bytes(struct wire *w, uint32_t field, const void *p, size_t n)
{
    wire_varint(w, PB_TAG(field, PB_WIRE_LEN));
    wire_varint(w, n);
    wire_put(w, p, n);
}

static void wire_begin(struct wire *w)
{
    memset(w, 0, sizeof(*w));
    uint8_t prefix[GRPC_FRAME_HEADER] = { 0 };
    wire_put(w, prefix, sizeof prefix);
}

static void wire_end(struct wire *w)
{
    grpc_frame_header(w->buf, w->len - GRPC_FRAME_HEADER);
}

/* Sends the first len bytes of the request (its prefix says all of it)
 * on a new connection and returns its client (caller frees); *r is the
 * call's result. */
static struct h2c *wire_call_cut(const char *path, struct wire *w, size_t len,
                                 const struct h2c_result **r)
{
    wire_end(w);
    int fd = h2c_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    struct h2c *c = h2c_new();
    int32_t id = h2c_request(c, path, NULL, w->buf, len, true);
    ck_assert_int_eq(h2c_run_fd(c, fd, IO_TIMEOUT_MS), 0);
    close(fd);
    *r = h2c_result(c, id);
    free(w->buf);
    return c;
}

static struct h2c *wire_call(const char *path, struct wire *w, const struct h2c_result **r)
{
    return wire_call_cut(path, w, w->len, r);
}

/* The reply's one message, which must be exactly what protobuf-c packs
 * from what it decodes to; the decoded message is returned. */
static ProtobufCMessage *reply_decode(const struct h2c_result *r,
                                      const ProtobufCMessageDescriptor *desc)
{
    ck_assert_int_eq(r->grpc_status, 0);
    const uint8_t *m;
    size_t len;
    ck_assert_int_eq(h2c_message(r, &m, &len), 0);
    ProtobufCMessage *msg = protobuf_c_message_unpack(desc, NULL, len, m);
    ck_assert_ptr_nonnull(msg);
    ck_assert_uint_eq(protobuf_c_message_get_packed_size(msg), len);
    uint8_t *again = malloc(len + 1);
    ck_assert_ptr_nonnull(again);
    protobuf_c_message_pack(msg, again);
    ck_assert_int_eq(memcmp(again, m, len), 0);
    free(again);
    return msg;
}

static void expect_invalid(const char *path, struct wire *w, const char *type)
{
    const struct h2c_result *r;
    struct h2c *c = wire_call(path, w, &r);
    ck_assert_int_eq(r->grpc_status, STATUS_INTERNAL);
    char want[128];
    snprintf(want, sizeof want, "request is not a valid %s message", type);
    char msg[256];
    h2c_percent_decode(r->grpc_message, msg, sizeof msg);
    ck_assert_str_eq(msg, want);
    h2c_free(c);
}

static uint8_t *pattern(size_t n, uint8_t seed)
{
    uint8_t *p = malloc(n);
    ck_assert_ptr_nonnull(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 31 + seed);
    return p;
}

/* A Reverse of data must answer its reverse. */
static void expect_reversed(const struct h2c_result *r, const uint8_t *data, size_t n)
{
    Amp__V1__DataReply *d = (Amp__V1__DataReply *)reply_decode(r, &amp__v1__data_reply__descriptor);
    ck_assert_uint_eq(d->data.len, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_uint_eq(d->data.data[i], data[n - 1 - i]);
    /* A device's "index: name", or the host path for small jobs. */
    ck_assert(strchr(d->device, ':') || strcmp(d->device, "host") == 0);
    protobuf_c_message_free_unpacked(&d->base, NULL);
}

static void assert_served(void)
{
    uint8_t data[5] = { 1, 2, 3, 4, 5 };
    struct wire w;
    wire_begin(&w);
    wire_bytes(&w, 1, data, sizeof data);
    const struct h2c_result *r;
    struct h2c *c = wire_call("/amp.v1.Amp/Reverse", &w, &r);
    expect_reversed(r, data, sizeof data);
    h2c_free(c);
}

/* Staging buffers of 64 KiB, so that BIG_LEN of data is received into a
 * run of two pinned buffers (daemon/rpc_bulk_rx.c) when it comes first. */
static const char *const small_chunks[] = { "--chunk-bytes", "65536", NULL };

/* Waits a few seconds at most for the daemon's staging memory in use to
 * be want (a run goes back when its reply was written, which the client
 * may see first; it is taken when the data's first bytes were read, which
 * may be after the client sent them); returns the last value seen. */
static uint64_t staging_wait_for(uint64_t want)
{
    uint64_t in_use = rpc_calls_staging_in_use(ampd.sock_path);
    for (int tries = 0; tries < 200 && in_use != want; tries++) {
        usleep(20 * 1000);
        in_use = rpc_calls_staging_in_use(ampd.sock_path);
    }
    return in_use;
}

static uint64_t staging_settled(void)
{
    return staging_wait_for(0);
}

static bool body_sent(struct h2c *c, void *arg)
{
    return h2c_body_unsent(c, *(int32_t *)arg) == 0;
}

START_TEST(repeated_data_last_wins)
{
    ck_assert_int_eq(daemon_start(&ampd, small_chunks), 0);
    uint8_t *first = pattern(BIG_LEN, 1), *last = pattern(BIG_LEN - 5, 2);
    struct wire w;
    wire_begin(&w);
    wire_bytes(&w, 1, first, BIG_LEN);
    wire_bytes(&w, 2, "", 0);   /* device "" between the two */
    wire_bytes(&w, 1, last, BIG_LEN - 5);
    const struct h2c_result *r;
    struct h2c *c = wire_call("/amp.v1.Amp/Reverse", &w, &r);
    expect_reversed(r, last, BIG_LEN - 5);
    h2c_free(c);
    /* Two in a row, the last one empty: no input at all. */
    wire_begin(&w);
    wire_bytes(&w, 1, first, BIG_LEN);
    wire_bytes(&w, 1, "", 0);
    c = wire_call("/amp.v1.Amp/Reverse", &w, &r);
    expect_reversed(r, NULL, 0);
    h2c_free(c);
    free(first);
    free(last);
    ck_assert_uint_eq(staging_settled(), 0);   /* the runs the first fields took went back */
    assert_served();
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

/* data after the params and between unknown fields: the rest is not one
 * range of the message, so the daemon copies it out to decode it. */
START_TEST(data_between_other_fields)
{
    ck_assert_int_eq(daemon_start(&ampd, small_chunks), 0);
    Amp__V1__TransformParams p = AMP__V1__TRANSFORM_PARAMS__INIT;
    p.op = AMP__V1__TRANSFORM_OP__TRANSFORM_OP_ADD;
    p.value = ADD_VALUE;
    uint8_t params[64];
    size_t plen = protobuf_c_message_pack(&p.base, params);
    uint8_t *data = pattern(BIG_LEN, 3);
    struct wire w;
    wire_begin(&w);
    wire_bytes(&w, 2, params, plen);
    wire_varint(&w, PB_TAG(99, PB_WIRE_VARINT));   /* unknown fields are kept by protobuf-c */
    wire_varint(&w, 12345);
    wire_bytes(&w, 1, data, BIG_LEN);
    wire_bytes(&w, 3, "cpu", 3);
    const struct h2c_result *r;
    struct h2c *c = wire_call("/amp.v1.Amp/Transform", &w, &r);
    Amp__V1__DataReply *d = (Amp__V1__DataReply *)reply_decode(r, &amp__v1__data_reply__descriptor);
    ck_assert_uint_eq(d->data.len, BIG_LEN);
    for (size_t i = 0; i < BIG_LEN; i++)
        ck_assert_uint_eq(d->data.data[i], (uint8_t)(data[i] + ADD_VALUE));
    protobuf_c_message_free_unpacked(&d->base, NULL);
    h2c_free(c);
    free(data);
    assert_served();
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

/* A Pipeline whose results are two data steps (both borrowed by the
 * reply) around a histogram: the reply is protobuf-c's bytes. */
START_TEST(pipeline_reply_is_protobuf_c)
{
    ck_assert_int_eq(daemon_start(&ampd, small_chunks), 0);
    Amp__V1__TransformParams tp = AMP__V1__TRANSFORM_PARAMS__INIT;
    tp.op = AMP__V1__TRANSFORM_OP__TRANSFORM_OP_ADD;
    tp.value = ADD_VALUE;
    Amp__V1__HistogramParams hp = AMP__V1__HISTOGRAM_PARAMS__INIT;
    Amp__V1__ReverseParams rp = AMP__V1__REVERSE_PARAMS__INIT;
    Amp__V1__Step s[3] = { AMP__V1__STEP__INIT, AMP__V1__STEP__INIT, AMP__V1__STEP__INIT };
    s[0].kind_case = AMP__V1__STEP__KIND_TRANSFORM;
    s[0].transform = &tp;
    s[1].kind_case = AMP__V1__STEP__KIND_HISTOGRAM;
    s[1].histogram = &hp;
    s[2].kind_case = AMP__V1__STEP__KIND_REVERSE;
    s[2].reverse = &rp;
    Amp__V1__Step *steps[3] = { &s[0], &s[1], &s[2] };
    Amp__V1__PipelineRequest req = AMP__V1__PIPELINE_REQUEST__INIT;
    req.n_steps = 3;
    req.steps = steps;
    uint8_t *data = pattern(BIG_LEN, 4);
    req.data.data = data;
    req.data.len = BIG_LEN;
    struct wire w;
    wire_begin(&w);
    size_t n = protobuf_c_message_get_packed_size(&req.base);
    uint8_t *packed = malloc(n);
    ck_assert_ptr_nonnull(packed);
    protobuf_c_message_pack(&req.base, packed);
    wire_put(&w, packed, n);
    free(packed);
    const struct h2c_result *r;
    struct h2c *c = wire_call("/amp.v1.Amp/Pipeline", &w, &r);
    Amp__V1__PipelineReply *p =
        (Amp__V1__PipelineReply *)reply_decode(r, &amp__v1__pipeline_reply__descriptor);
    ck_assert_uint_eq(p->n_results, 3);
    ck_assert_uint_eq(p->results[0]->data.len, BIG_LEN);
    ck_assert_uint_eq(p->results[2]->data.len, BIG_LEN);
    ck_assert_ptr_nonnull(p->results[1]->histogram);
    ck_assert_uint_eq(p->results[1]->histogram->n_counts, 256);
    for (size_t i = 0; i < BIG_LEN; i++) {
        uint8_t added = (uint8_t)(data[i] + ADD_VALUE);
        ck_assert_uint_eq(p->results[0]->data.data[i], added);
        ck_assert_uint_eq(p->results[2]->data.data[BIG_LEN - 1 - i], added);
    }
    protobuf_c_message_free_unpacked(&p->base, NULL);
    h2c_free(c);
    free(data);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

START_TEST(malformed_data_fields)
{
    ck_assert_int_eq(daemon_start(&ampd, NULL), 0);
    static const char *const reverse = "/amp.v1.Amp/Reverse", *const type = "amp.v1.ReverseRequest";
    struct wire w;
    /* A length that lies: 16 bytes declared, 2 there. */
    wire_begin(&w);
    wire_varint(&w, PB_TAG(1, PB_WIRE_LEN));
    wire_varint(&w, 16);
    wire_put(&w, "ab", 2);
    expect_invalid(reverse, &w, type);
    /* The same lie on a data field after a good one. */
    wire_begin(&w);
    wire_bytes(&w, 1, "abc", 3);
    wire_varint(&w, PB_TAG(1, PB_WIRE_LEN));
    wire_varint(&w, 1000);
    expect_invalid(reverse, &w, type);
    /* A tag cut off inside its varint. */
    wire_begin(&w);
    wire_put(&w, "\x8a", 1);
    expect_invalid(reverse, &w, type);
    /* A length cut off inside its varint. */
    wire_begin(&w);
    wire_put(&w, "\x0a\x80\x80", 3);
    expect_invalid(reverse, &w, type);
    /* A length of 6 varint bytes (protobuf-c reads at most 5). */
    wire_begin(&w);
    wire_put(&w, "\x0a\x81\x80\x80\x80\x80\x00" "a", 8);
    expect_invalid(reverse, &w, type);
    /* A tag of 6 varint bytes, naming field 1 by its low bits. */
    wire_begin(&w);
    wire_put(&w, "\x8a\x80\x80\x80\x80\x00\x01" "a", 8);
    expect_invalid(reverse, &w, type);
    /* Field number 0. */
    wire_begin(&w);
    wire_put(&w, "\x02\x01" "a", 3);
    expect_invalid(reverse, &w, type);
    /* data with the varint wire type, and as a group. */
    wire_begin(&w);
    wire_put(&w, "\x08\x05", 2);
    expect_invalid(reverse, &w, type);
    wire_begin(&w);
    wire_put(&w, "\x0b\x0c", 2);
    expect_invalid(reverse, &w, type);
    /* A good data field, then a malformed device (its length lies). */
    wire_begin(&w);
    wire_bytes(&w, 1, "abc", 3);
    wire_put(&w, "\x12\x05" "cp", 4);
    expect_invalid(reverse, &w, type);
    /* The same on the Histogram and Pipeline methods. */
    wire_begin(&w);
    wire_put(&w, "\x0a\x03" "a", 3);
    expect_invalid("/amp.v1.Amp/Histogram", &w, "amp.v1.HistogramRequest");
    wire_begin(&w);
    wire_put(&w, "\x0a\x03" "a", 3);
    expect_invalid("/amp.v1.Amp/Pipeline", &w, "amp.v1.PipelineRequest");
    assert_served();
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

/* A Transform of data first, params after, as encoders write it. */
static void wire_transform(struct wire *w, const uint8_t *data, size_t n, uint64_t offset,
                           uint64_t length)
{
    Amp__V1__TransformParams p = AMP__V1__TRANSFORM_PARAMS__INIT;
    p.op = AMP__V1__TRANSFORM_OP__TRANSFORM_OP_ADD;
    p.value = ADD_VALUE;
    p.offset = offset;
    p.has_length_case = AMP__V1__TRANSFORM_PARAMS__HAS_LENGTH_LENGTH;
    p.length = length;
    uint8_t params[64];
    size_t plen = protobuf_c_message_pack(&p.base, params);
    wire_begin(w);
    wire_bytes(w, 1, data, n);
    wire_bytes(w, 2, params, plen);
}

/* The answer to wire_transform: ADD_VALUE added to [offset, offset+length). */
static void expect_transformed(const struct h2c_result *r, const uint8_t *data, size_t n,
                               uint64_t offset, uint64_t length)
{
    Amp__V1__DataReply *d = (Amp__V1__DataReply *)reply_decode(r, &amp__v1__data_reply__descriptor);
    ck_assert_uint_eq(d->data.len, n);
    for (size_t i = 0; i < n; i++) {
        bool in = i >= offset && i - offset < length;
        ck_assert_uint_eq(d->data.data[i], (uint8_t)(data[i] + (in ? ADD_VALUE : 0)));
    }
    protobuf_c_message_free_unpacked(&d->base, NULL);
}

/* Requests whose data comes first go through pinned runs, and jobs with
 * one data step write over their input there: every kind must still
 * answer right, and every run must come back. */
START_TEST(pinned_data_every_kind)
{
    ck_assert_int_eq(daemon_start(&ampd, small_chunks), 0);
    uint8_t *data = pattern(BIG_LEN, 5);
    struct wire w;
    const struct h2c_result *r;
    /* The data has arrived, the params not yet: it sits in a run of two
     * buffers. */
    wire_transform(&w, data, BIG_LEN, 0, BIG_LEN);
    wire_end(&w);
    size_t head = w.len - 8;   /* the params' field is longer than 8 bytes */
    int fd = h2c_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    struct h2c *c = h2c_new();
    int32_t id = h2c_request_open(c, "/amp.v1.Amp/Transform", w.buf, head);
    ck_assert_int_eq(h2c_run_until(c, fd, IO_TIMEOUT_MS, body_sent, &id), 0);
    ck_assert_uint_eq(staging_wait_for(2 * 65536), 2 * 65536);
    ck_assert_int_eq(h2c_append(c, id, w.buf + head, w.len - head, true), 0);
    ck_assert_int_eq(h2c_run_fd(c, fd, IO_TIMEOUT_MS), 0);
    close(fd);
    expect_transformed(h2c_result(c, id), data, BIG_LEN, 0, BIG_LEN);
    h2c_free(c);
    free(w.buf);
    /* A sub-range: the bytes outside it come back as they were sent. */
    wire_transform(&w, data, BIG_LEN, 1000, BIG_LEN - 3000);
    c = wire_call("/amp.v1.Amp/Transform", &w, &r);
    expect_transformed(r, data, BIG_LEN, 1000, BIG_LEN - 3000);
    h2c_free(c);
    wire_begin(&w);
    wire_bytes(&w, 1, data, BIG_LEN);
    c = wire_call("/amp.v1.Amp/Reverse", &w, &r);
    expect_reversed(r, data, BIG_LEN);
    h2c_free(c);
    /* A histogram reads the run and writes nothing into it. */
    wire_begin(&w);
    wire_bytes(&w, 1, data, BIG_LEN);
    c = wire_call("/amp.v1.Amp/Histogram", &w, &r);
    Amp__V1__HistogramReply *h =
        (Amp__V1__HistogramReply *)reply_decode(r, &amp__v1__histogram_reply__descriptor);
    ck_assert_uint_eq(h->histogram->n_counts, 256);
    uint64_t want[256] = { 0 };
    for (size_t i = 0; i < BIG_LEN; i++)
        want[data[i]]++;
    for (size_t b = 0; b < 256; b++)
        ck_assert_uint_eq(h->histogram->counts[b], want[b]);
    protobuf_c_message_free_unpacked(&h->base, NULL);
    h2c_free(c);
    /* A pipeline of a histogram around a reverse: one data step, in place;
     * the second histogram counts its output. */
    Amp__V1__HistogramParams hp = AMP__V1__HISTOGRAM_PARAMS__INIT;
    Amp__V1__ReverseParams rp = AMP__V1__REVERSE_PARAMS__INIT;
    Amp__V1__Step s[3] = { AMP__V1__STEP__INIT, AMP__V1__STEP__INIT, AMP__V1__STEP__INIT };
    s[0].kind_case = s[2].kind_case = AMP__V1__STEP__KIND_HISTOGRAM;
    s[0].histogram = s[2].histogram = &hp;
    s[1].kind_case = AMP__V1__STEP__KIND_REVERSE;
    s[1].reverse = &rp;
    wire_begin(&w);
    wire_bytes(&w, 1, data, BIG_LEN);
    for (int i = 0; i < 3; i++) {
        uint8_t step[64];
        wire_bytes(&w, 2, step, protobuf_c_message_pack(&s[i].base, step));
    }
    c = wire_call("/amp.v1.Amp/Pipeline", &w, &r);
    Amp__V1__PipelineReply *p =
        (Amp__V1__PipelineReply *)reply_decode(r, &amp__v1__pipeline_reply__descriptor);
    ck_assert_uint_eq(p->n_results, 3);
    ck_assert_uint_eq(p->results[1]->data.len, BIG_LEN);
    for (size_t i = 0; i < BIG_LEN; i++)
        ck_assert_uint_eq(p->results[1]->data.data[i], data[BIG_LEN - 1 - i]);
    for (size_t b = 0; b < 256; b++) {
        ck_assert_uint_eq(p->results[0]->histogram->counts[b], want[b]);
        ck_assert_uint_eq(p->results[2]->histogram->counts[b], want[b]);
    }
    protobuf_c_message_free_unpacked(&p->base, NULL);
    h2c_free(c);
    free(data);
    ck_assert_uint_eq(staging_settled(), 0);
    assert_served();
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

/* Bad messages whose data went into a run: the rest after it malformed,
 * the stream ending inside the data or inside the rest. Each is refused
 * and its run comes back. */
START_TEST(pinned_data_bad_messages)
{
    ck_assert_int_eq(daemon_start(&ampd, small_chunks), 0);
    uint8_t *data = pattern(BIG_LEN, 6);
    struct wire w;
    const struct h2c_result *r;
    wire_begin(&w);
    wire_bytes(&w, 1, data, BIG_LEN);
    wire_put(&w, "\x12\x05" "cp", 4);   /* device's length lies */
    expect_invalid("/amp.v1.Amp/Reverse", &w, "amp.v1.ReverseRequest");
    char msg[256];
    static const size_t cuts[] = { 1000, BIG_LEN / 2 };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        wire_transform(&w, data, BIG_LEN, 0, BIG_LEN);
        struct h2c *c = wire_call_cut("/amp.v1.Amp/Transform", &w, cuts[i], &r);
        ck_assert_int_eq(r->grpc_status, STATUS_INTERNAL);
        h2c_percent_decode(r->grpc_message, msg, sizeof msg);
        ck_assert_ptr_nonnull(strstr(msg, "request stream ended inside a message"));
        h2c_free(c);
    }
    /* Cut inside the params that follow the data. */
    wire_transform(&w, data, BIG_LEN, 0, BIG_LEN);
    struct h2c *c = wire_call_cut("/amp.v1.Amp/Transform", &w, w.len - 2, &r);
    ck_assert_int_eq(r->grpc_status, STATUS_INTERNAL);
    h2c_free(c);
    free(data);
    ck_assert_uint_eq(staging_settled(), 0);
    assert_served();
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

/* A pool of four 64 KiB buffers: a request needing more than three is read
 * whole, as before, and answered the same. */
START_TEST(pinned_run_too_large_reads_whole)
{
    static const char *const args[] = { "--chunk-bytes", "65536", "--staging-bytes", "262144",
                                        NULL };
    ck_assert_int_eq(daemon_start(&ampd, args), 0);
    size_t sizes[] = { 3 * 65536, 3 * 65536 + 1 };
    for (size_t i = 0; i < 2; i++) {
        uint8_t *data = pattern(sizes[i], 7);
        struct wire w;
        const struct h2c_result *r;
        wire_transform(&w, data, sizes[i], 0, sizes[i]);
        struct h2c *c = wire_call("/amp.v1.Amp/Transform", &w, &r);
        expect_transformed(r, data, sizes[i], 0, sizes[i]);
        h2c_free(c);
        free(data);
    }
    ck_assert_uint_eq(staging_settled(), 0);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bulk_requests");
    const TTest *const tests[] = {
        repeated_data_last_wins,
        data_between_other_fields,
        pipeline_reply_is_protobuf_c,
        malformed_data_fields,
        pinned_data_every_kind,
        pinned_data_bad_messages,
        pinned_run_too_large_reads_whole,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 600);
    return check_run(s, CK_FORK_GETENV);
}
