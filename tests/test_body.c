/* SPDX-License-Identifier: MIT */
/* test_body.c: message bodies (common/body.c: libampclient's requests, the
 * daemon's replies): the pieces of an encoded message are exactly
 * protobuf-c's packed bytes behind the gRPC prefix, whatever window of
 * them is asked for; large bytes fields are borrowed from the message,
 * not copied; a window over more pieces than iovecs given is refused, or
 * cut (body_iov_some); a borrowed body is its bytes; an adopted buffer
 * with lent pieces behind it is their bytes in order, moved intact. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "amp.pb-c.h"
#include "body.h"
#include "check_run.h"
#include "grpc_frame.h"

/* The request packed the usual way: prefix, then protobuf_c_message_pack. */
static uint8_t *flat(const ProtobufCMessage *m, size_t *len)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *p = malloc(GRPC_FRAME_HEADER + n);
    ck_assert_ptr_nonnull(p);
    grpc_frame_header(p, n);
    protobuf_c_message_pack(m, p + GRPC_FRAME_HEADER);
    *len = GRPC_FRAME_HEADER + n;
    return p;
}

/* The window [pos, pos + n) of b, through body_copy and body_iov, must be
 * the same bytes of want. */
static void expect_window(const struct body *b, const uint8_t *want, size_t pos, size_t n,
                          uint8_t *got)
{
    memset(got, 0, n);
    body_copy(b, pos, got, n);
    ck_assert_int_eq(memcmp(got, want + pos, n), 0);
    struct iovec iov[16];
    int k = body_iov(b, pos, n, iov, 16);
    ck_assert_int_ge(k, n > 0);
    size_t at = 0;
    for (int i = 0; i < k; i++) {
        ck_assert_int_eq(memcmp(iov[i].iov_base, want + pos + at, iov[i].iov_len), 0);
        at += iov[i].iov_len;
    }
    ck_assert_uint_eq(at, n);
}

/* Windows of several lengths from every piece boundary (and just around
 * it), and the whole body in a few strides. */
static void expect_windows(const struct body *b, const uint8_t *want, size_t len)
{
    ck_assert_uint_eq(b->len, len);
    uint8_t *got = malloc(len + 1);
    ck_assert_ptr_nonnull(got);
    const size_t lens[] = { 1, 2, 9, 4096, 65539 };
    size_t edge = 0;
    for (size_t i = 0; i <= b->npieces; i++) {
        for (size_t d = 0; d < 3; d++) {
            size_t pos = edge >= d ? edge - d : 0;
            for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++)
                if (pos + lens[k] <= len)
                    expect_window(b, want, pos, lens[k], got);
            if (pos < len)
                expect_window(b, want, pos, len - pos, got);
        }
        if (i < b->npieces)
            edge += b->pieces[i].len;
    }
    for (size_t stride = 1000003; stride > 1000; stride /= 10)
        for (size_t pos = 0; pos < len; pos += stride)
            expect_window(b, want, pos, len - pos < stride ? len - pos : stride, got);
    free(got);
}

/* True when one of b's pieces points into [p, p + len). */
static int borrows(const struct body *b, const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < b->npieces; i++)
        if (b->pieces[i].ptr >= p && b->pieces[i].ptr < p + len)
            return 1;
    return 0;
}

START_TEST(transform_requests_of_every_size)
{
    const size_t sizes[] = { 0, 1, 16383, 16384, 300000, (1u << 20) + 3 };
    uint8_t table[256];
    for (int i = 0; i < 256; i++)
        table[i] = (uint8_t)(255 - i);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        uint8_t *data = malloc(n + 1);
        ck_assert_ptr_nonnull(data);
        for (size_t i = 0; i < n; i++)
            data[i] = (uint8_t)(i * 31 + k);
        Amp__V1__TransformParams p = AMP__V1__TRANSFORM_PARAMS__INIT;
        p.op = AMP__V1__TRANSFORM_OP__TRANSFORM_OP_MAP;
        p.table = (ProtobufCBinaryData){ sizeof table, table };
        Amp__V1__TransformRequest req = AMP__V1__TRANSFORM_REQUEST__INIT;
        req.data = (ProtobufCBinaryData){ n, data };
        req.params = &p;
        req.device = "0";
        size_t len;
        uint8_t *want = flat(&req.base, &len);
        struct body b;
        body_init(&b);
        ck_assert_int_eq(body_encode(&b, &req.base), 0);
        expect_windows(&b, want, len);
        /* Large data is the caller's memory; the table and the rest are copies. */
        ck_assert_int_eq(borrows(&b, data, n), n >= 16384);
        ck_assert(!borrows(&b, table, sizeof table));
        body_free(&b);
        free(want);
        free(data);
    }
}
END_TEST

START_TEST(many_large_fields)
{
    /* A pipeline whose map tables are small but whose data is large, and
     * a request with two large fields around a small one. */
    enum { N = 200000 };
    uint8_t *data = malloc(N);
    ck_assert_ptr_nonnull(data);
    memset(data, 'd', N);
    Amp__V1__TransformParams tp = AMP__V1__TRANSFORM_PARAMS__INIT;
    tp.op = AMP__V1__TRANSFORM_OP__TRANSFORM_OP_ADD;
    tp.value = 3;
    Amp__V1__Step st = AMP__V1__STEP__INIT;
    st.kind_case = AMP__V1__STEP__KIND_TRANSFORM;
    st.transform = &tp;
    Amp__V1__Step *steps[3] = { &st, &st, &st };
    Amp__V1__PipelineRequest req = AMP__V1__PIPELINE_REQUEST__INIT;
    req.data = (ProtobufCBinaryData){ N, data };
    req.n_steps = 3;
    req.steps = steps;
    req.device = "cpu";
    size_t len;
    uint8_t *want = flat(&req.base, &len);
    struct body b;
    body_init(&b);
    ck_assert_int_eq(body_encode(&b, &req.base), 0);
    expect_windows(&b, want, len);
    /* The whole body needs every piece: one iovec is too few. */
    struct iovec iov[1];
    ck_assert_int_eq(body_iov(&b, 0, len, iov, 1), b.npieces > 1 ? -1 : 1);
    ck_assert_uint_gt(b.npieces, 1);
    body_free(&b);
    free(want);
    free(data);
}
END_TEST

START_TEST(borrowed_body)
{
    static const uint8_t bytes[] = "some framed bytes";
    struct body b;
    body_init(&b);
    body_borrow(&b, bytes, sizeof bytes);
    expect_windows(&b, bytes, sizeof bytes);
    ck_assert(borrows(&b, bytes, sizeof bytes));
    body_borrow(&b, NULL, 0);
    ck_assert_uint_eq(b.len, 0);
    ck_assert_uint_eq(b.npieces, 0);
    body_free(&b);
}
END_TEST

START_TEST(adopted_lent_and_moved)
{
    enum { HEAD = 7, A = 20000, B = 3 };
    uint8_t *head = malloc(HEAD), a[A], bb[B], want[HEAD + A + B];
    ck_assert_ptr_nonnull(head);
    for (size_t i = 0; i < sizeof want; i++)
        want[i] = (uint8_t)(i * 7 + 1);
    memcpy(head, want, HEAD);
    memcpy(a, want + HEAD, A);
    memcpy(bb, want + HEAD + A, B);
    struct body b, moved;
    body_init(&b);
    body_init(&moved);
    body_adopt(&b, head, HEAD);
    ck_assert_int_eq(body_lend(&b, a, A), 0);
    ck_assert_int_eq(body_lend(&b, bb, 0), 0);   /* nothing to lend: no piece */
    ck_assert_int_eq(body_lend(&b, bb, B), 0);
    ck_assert_uint_eq(b.npieces, 3);
    body_move(&moved, &b);
    ck_assert_uint_eq(b.len, 0);
    expect_windows(&moved, want, sizeof want);
    ck_assert(borrows(&moved, a, A) && borrows(&moved, bb, B));
    /* Two iovecs from inside the head: the rest of it and all of a. */
    struct iovec iov[2];
    size_t taken;
    ck_assert_int_eq(body_iov_some(&moved, 2, sizeof want - 2, iov, 2, &taken), 2);
    ck_assert_uint_eq(taken, HEAD - 2 + A);
    ck_assert_int_eq(body_iov(&moved, 2, sizeof want - 2, iov, 2), -1);
    body_free(&moved);   /* frees head: ASan sees a leak or a double free */
    /* A body of one adopted piece, moved: it must point at its own copy. */
    uint8_t *one = malloc(HEAD);
    ck_assert_ptr_nonnull(one);
    memcpy(one, want, HEAD);
    body_adopt(&b, one, HEAD);
    body_move(&moved, &b);
    ck_assert_ptr_eq(moved.pieces, &moved.one);
    expect_windows(&moved, want, HEAD);
    body_free(&moved);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("body");
    const TTest *const tests[] = {
        transform_requests_of_every_size,
        many_large_fields,
        borrowed_body,
        adopted_lent_and_moved,
        NULL,
    };
    check_run_case(s, "body", tests);
    return check_run(s, CK_FORK_GETENV);
}
