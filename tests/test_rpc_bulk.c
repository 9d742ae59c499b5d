/* SPDX-License-Identifier: MIT */
/* test_rpc_bulk.c: a request's bulk bytes read by hand (daemon/rpc_bulk.c)
 * against protobuf-c's unpack of the same message: for hand-made and
 * thousands of generated messages, good and malformed, both must agree
 * on whether it is valid, and when it is, on the data bytes (the view
 * points into the message, no copy) and on every other field (packing
 * the two with the same data gives the same bytes). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "amp.pb-c.h"
#include "check_run.h"
#include "pb_wire.h"
#include "rpc_bulk.h"

#define GEN_CASES 20000
#define GEN_FIELDS_MAX 6
#define GEN_BUF 512

/* splitmix64: reproducible cases. */
static uint64_t rng_state = 7;
static uint64_t rng(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint8_t *pack(const ProtobufCMessage *m, size_t *len)
{
    *len = protobuf_c_message_get_packed_size(m);
    uint8_t *p = malloc(*len + 1);
    ck_assert_ptr_nonnull(p);
    protobuf_c_message_pack(m, p);
    return p;
}

/* Checks that rpc_bulk and protobuf-c agree on msg; returns whether it
 * was valid. */
static bool agree(const ProtobufCMessageDescriptor *desc, const uint8_t *msg, size_t len)
{
    const ProtobufCFieldDescriptor *field = rpc_bulk_field(desc);
    ck_assert_ptr_nonnull(field);
    ProtobufCMessage *want = protobuf_c_message_unpack(desc, NULL, len, msg);
    struct rpc_bulk b;
    ProtobufCMessage *got = NULL;
    if (rpc_bulk_scan(field, msg, len, &b) == 0)
        got = rpc_bulk_unpack(desc, field, msg, len, &b);
    ck_assert_msg((want == NULL) == (got == NULL), "protobuf-c says %s, rpc_bulk says %s",
                  want ? "valid" : "invalid", got ? "valid" : "invalid");
    if (!want)
        return false;
    ProtobufCBinaryData *wd = (ProtobufCBinaryData *)((uint8_t *)want + field->offset);
    ProtobufCBinaryData *gd = (ProtobufCBinaryData *)((uint8_t *)got + field->offset);
    ck_assert_uint_eq(gd->len, 0);   /* the field stays out of the decoded message */
    ck_assert_uint_eq(b.len, wd->len);
    if (b.len) {
        ck_assert(b.data >= msg && b.data + b.len <= msg + len);
        ck_assert_int_eq(memcmp(b.data, wd->data, b.len), 0);
    }
    gd->data = (uint8_t *)(uintptr_t)b.data;
    gd->len = b.len;
    size_t wl, gl;
    uint8_t *wp = pack(want, &wl), *gp = pack(got, &gl);
    ck_assert_uint_eq(wl, gl);
    ck_assert_int_eq(memcmp(wp, gp, wl), 0);
    gd->data = NULL;
    gd->len = 0;
    free(wp);
    free(gp);
    protobuf_c_message_free_unpacked(want, NULL);
    protobuf_c_message_free_unpacked(got, NULL);
    return true;
}

START_TEST(bulk_field_found_where_it_exists)
{
    ck_assert_ptr_nonnull(rpc_bulk_field(&amp__v1__reverse_request__descriptor));
    ck_assert_ptr_nonnull(rpc_bulk_field(&amp__v1__transform_request__descriptor));
    ck_assert_ptr_nonnull(rpc_bulk_field(&amp__v1__histogram_request__descriptor));
    ck_assert_ptr_nonnull(rpc_bulk_field(&amp__v1__pipeline_request__descriptor));
    ck_assert_ptr_null(rpc_bulk_field(&amp__v1__fill_request__descriptor));
    ck_assert_ptr_null(rpc_bulk_field(&amp__v1__status_request__descriptor));
    /* StreamRequest's data is in a oneof: not read this way. */
    ck_assert_ptr_null(rpc_bulk_field(&amp__v1__stream_request__descriptor));
}
END_TEST

START_TEST(hand_made)
{
    const ProtobufCMessageDescriptor *t = &amp__v1__transform_request__descriptor;
    static const struct {
        const char *bytes;
        size_t len;
        bool valid;
    } cases[] = {
        { "", 0, true },
        { "\x0a\x03" "abc", 5, true },
        { "\x0a\x03" "abc\x1a\x03" "cpu", 10, true },             /* data first: rest whole */
        { "\x1a\x03" "cpu\x0a\x03" "abc", 10, true },             /* data last: rest whole */
        { "\x1a\x01" "c\x0a\x01" "a\x1a\x01" "d", 9, true },      /* data between: rest copied */
        { "\x0a\x01" "a\x0a\x02" "bc", 7, true },                 /* repeated: the last wins */
        { "\x0a\x01" "a\x0a\x00", 5, true },                      /* the last one empty */
        { "\x8a\x80\x80\x80\x00\x01" "z", 7, true },              /* a 5-byte tag for field 1 */
        { "\x0a\x81\x80\x80\x80\x00" "a", 7, true },              /* a 5-byte length */
        { "\xf8\x07\x05", 3, true },                              /* unknown field 127 */
        { "\x0a\x05" "ab", 4, false },                            /* length past the end */
        { "\x8a", 1, false },                                     /* tag cut short */
        { "\x0a\x80", 2, false },                                 /* length cut short */
        { "\x8a\x80\x80\x80\x80\x00\x01" "z", 8, false },         /* 6-byte tag */
        { "\x0a\x81\x80\x80\x80\x80\x00" "a", 8, false },         /* 6-byte length */
        { "\x0a\xff\xff\xff\xff\x0f", 6, false },                 /* length over INT_MAX */
        { "\x02\x01" "a", 3, false },                             /* field number 0 */
        { "\x08\x05", 2, false },                                 /* data as a varint */
        { "\x0b\x0c", 2, false },                                 /* a group */
        { "\x0e", 1, false },                                     /* wire type 6 */
        { "\x09" "1234567", 8, false },                           /* a fixed64 cut short */
        { "\x0a\x01" "a\x12\x05\x08", 5, false },                 /* bad params after data */
        { "\x20\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 12, false }, /* 11-byte varint */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bool valid = agree(t, (const uint8_t *)cases[i].bytes, cases[i].len);
        ck_assert_msg(valid == cases[i].valid, "case %zu", i);
    }
}
END_TEST

/* A random field: mostly well formed, now and then cut, lying or odd. */
static size_t gen_field(uint8_t *p, size_t room)
{
    static const uint32_t numbers[] = { 1, 1, 1, 2, 3, 4, 5, 99 };
    static const unsigned wires[] = { 0, 1, 2, 2, 2, 5, 3 };
    uint8_t tmp[64];
    size_t n = pb_varint_put(tmp, PB_TAG(numbers[rng() % 8], wires[rng() % 7]));
    unsigned wire = tmp[0] & 7;
    if (wire == PB_WIRE_VARINT) {
        n += pb_varint_put(tmp + n, rng() >> (rng() % 64));
    } else if (wire == PB_WIRE_I64 || wire == PB_WIRE_I32) {
        size_t k = wire == PB_WIRE_I64 ? 8 : 4;
        for (size_t i = 0; i < k; i++)
            tmp[n++] = (uint8_t)rng();
    } else if (wire == PB_WIRE_LEN) {
        size_t k = rng() % 20;
        n += pb_varint_put(tmp + n, k);
        for (size_t i = 0; i < k; i++)
            tmp[n++] = (uint8_t)rng();
    }
    if (rng() % 16 == 0 && n > 1)
        n -= 1 + rng() % (n - 1);   /* cut short */
    if (rng() % 32 == 0)
        tmp[rng() % n] ^= (uint8_t)(1u << (rng() % 8));   /* a flipped bit */
    if (n > room)
        n = room;
    memcpy(p, tmp, n);
    return n;
}

START_TEST(generated_messages)
{
    static const ProtobufCMessageDescriptor *const descs[] = {
        &amp__v1__reverse_request__descriptor, &amp__v1__transform_request__descriptor,
        &amp__v1__histogram_request__descriptor, &amp__v1__pipeline_request__descriptor,
    };
    uint8_t buf[GEN_BUF];
    size_t valid = 0;
    for (int c = 0; c < GEN_CASES; c++) {
        size_t len = 0, nf = rng() % (GEN_FIELDS_MAX + 1);
        for (size_t f = 0; f < nf; f++)
            len += gen_field(buf + len, sizeof buf - len);
        valid += agree(descs[rng() % 4], buf, len);
    }
    /* Both kinds must have been tried often. */
    ck_assert_uint_gt(valid, GEN_CASES / 10);
    ck_assert_uint_lt(valid, GEN_CASES - GEN_CASES / 10);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rpc_bulk");
    const TTest *const tests[] = {
        bulk_field_found_where_it_exists,
        hand_made,
        generated_messages,
        NULL,
    };
    check_run_case(s, "rpc_bulk", tests);
    return check_run(s, CK_FORK_GETENV);
}
