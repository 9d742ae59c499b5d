/* SPDX-License-Identifier: MIT */
/* test_grpc_frame.c: the gRPC length-prefix reader, fed in every way a
 * socket might slice a stream: whole, byte by byte, and in random splits;
 * plus the refusals (oversize before buffering, compressed flag, bad flag),
 * the "stream ended inside a message" check, buffers bought whole for a
 * trusted length, and buffers taken over by the callback. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "grpc_frame.h"

#define MAX_MSGS 16

struct sink {
    size_t n;
    size_t lens[MAX_MSGS];
    uint8_t *msgs[MAX_MSGS];
    int stop_after; /* nonzero: return 7 after this many messages */
};

static int sink_cb(const uint8_t *msg, size_t len, void *ctx)
{
    struct sink *s = ctx;
    ck_assert_uint_lt(s->n, MAX_MSGS);
    s->msgs[s->n] = malloc(len + 1);
    memcpy(s->msgs[s->n], msg, len);
    s->lens[s->n++] = len;
    if (s->stop_after && (int)s->n == s->stop_after)
        return 7;
    return 0;
}

static void sink_free(struct sink *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->msgs[i]);
}

/* Three messages of lengths 0, 300 and 70000 back to back. */
static uint8_t *make_stream(size_t *out_len)
{
    static const size_t lens[] = { 0, 300, 70000 };
    size_t total = 0;
    for (size_t i = 0; i < 3; i++)
        total += GRPC_FRAME_HEADER + lens[i];
    uint8_t *buf = malloc(total), *p = buf;
    for (size_t i = 0; i < 3; i++) {
        grpc_frame_header(p, lens[i]);
        p += GRPC_FRAME_HEADER;
        for (size_t k = 0; k < lens[i]; k++)
            *p++ = (uint8_t)(k * 7 + i);
    }
    *out_len = total;
    return buf;
}

static void check_three(const struct sink *s)
{
    ck_assert_uint_eq(s->n, 3);
    ck_assert_uint_eq(s->lens[0], 0);
    ck_assert_uint_eq(s->lens[1], 300);
    ck_assert_uint_eq(s->lens[2], 70000);
    for (size_t k = 0; k < 70000; k++)
        ck_assert_uint_eq(s->msgs[2][k], (uint8_t)(k * 7 + 2));
    for (size_t k = 0; k < 300; k++)
        ck_assert_uint_eq(s->msgs[1][k], (uint8_t)(k * 7 + 1));
}

START_TEST(whole)
{
    size_t len;
    uint8_t *buf = make_stream(&len);
    struct grpc_frame_reader r;
    struct sink s = { 0 };
    grpc_frame_reader_init(&r, 1 << 20);
    ck_assert_int_eq(grpc_frame_feed(&r, buf, len, sink_cb, &s), GRPC_FRAME_OK);
    ck_assert(!grpc_frame_pending(&r));
    check_three(&s);
    grpc_frame_reader_free(&r);
    sink_free(&s);
    free(buf);
}
END_TEST

START_TEST(byte_by_byte)
{
    size_t len;
    uint8_t *buf = make_stream(&len);
    struct grpc_frame_reader r;
    struct sink s = { 0 };
    grpc_frame_reader_init(&r, 1 << 20);
    for (size_t i = 0; i < len; i++) {
        size_t before = s.n;
        ck_assert_int_eq(grpc_frame_feed(&r, buf + i, 1, sink_cb, &s), GRPC_FRAME_OK);
        /* Never pending right after a message completed, always before. */
        ck_assert_int_eq(grpc_frame_pending(&r), s.n == before);
    }
    ck_assert(!grpc_frame_pending(&r));
    check_three(&s);
    grpc_frame_reader_free(&r);
    sink_free(&s);
    free(buf);
}
END_TEST

START_TEST(random_splits)
{
    size_t len;
    uint8_t *buf = make_stream(&len);
    srand(12345 + (unsigned)_i);
    struct grpc_frame_reader r;
    struct sink s = { 0 };
    grpc_frame_reader_init(&r, 1 << 20);
    size_t pos = 0;
    while (pos < len) {
        size_t n = (size_t)rand() % 9000 + 1;
        if (n > len - pos)
            n = len - pos;
        ck_assert_int_eq(grpc_frame_feed(&r, buf + pos, n, sink_cb, &s), GRPC_FRAME_OK);
        pos += n;
    }
    ck_assert(!grpc_frame_pending(&r));
    check_three(&s);
    grpc_frame_reader_free(&r);
    sink_free(&s);
    free(buf);
}
END_TEST

START_TEST(oversize_refused_at_prefix)
{
    struct grpc_frame_reader r;
    struct sink s = { 0 };
    grpc_frame_reader_init(&r, 100);
    uint8_t hdr[GRPC_FRAME_HEADER];
    grpc_frame_header(hdr, 101);
    /* Only the prefix: refused before any body byte arrives. */
    ck_assert_int_eq(grpc_frame_feed(&r, hdr, sizeof(hdr), sink_cb, &s), GRPC_FRAME_TOO_LARGE);
    ck_assert_uint_eq(r.msg_len, 101);
    ck_assert_ptr_null(r.msg);
    ck_assert_uint_eq(s.n, 0);
    grpc_frame_reader_free(&r);
}
END_TEST

START_TEST(limit_is_inclusive)
{
    struct grpc_frame_reader r;
    struct sink s = { 0 };
    grpc_frame_reader_init(&r, 4);
    uint8_t buf[GRPC_FRAME_HEADER + 4] = { 0 };
    grpc_frame_header(buf, 4);
    ck_assert_int_eq(grpc_frame_feed(&r, buf, sizeof(buf), sink_cb, &s), GRPC_FRAME_OK);
    ck_assert_uint_eq(s.n, 1);
    grpc_frame_reader_free(&r);
    sink_free(&s);
}
END_TEST

START_TEST(compressed_flag)
{
    struct grpc_frame_reader r;
    struct sink s = { 0 };
    grpc_frame_reader_init(&r, 100);
    uint8_t buf[] = { 1, 0, 0, 0, 2, 'h', 'i' };
    ck_assert_int_eq(grpc_frame_feed(&r, buf, sizeof(buf), sink_cb, &s), GRPC_FRAME_COMPRESSED);
    ck_assert_uint_eq(s.n, 0);
    grpc_frame_reader_free(&r);
}
END_TEST

START_TEST(bad_flag)
{
    struct grpc_frame_reader r;
    struct sink s = { 0 };
    grpc_frame_reader_init(&r, 100);
    uint8_t buf[] = { 0x80, 0, 0, 0, 0 };
    ck_assert_int_eq(grpc_frame_feed(&r, buf, sizeof(buf), sink_cb, &s), GRPC_FRAME_BAD_FLAG);
    grpc_frame_reader_free(&r);
}
END_TEST

START_TEST(pending_detects_truncation)
{
    struct grpc_frame_reader r;
    struct sink s = { 0 };
    grpc_frame_reader_init(&r, 100);
    ck_assert(!grpc_frame_pending(&r));
    uint8_t part[] = { 0, 0, 0 };
    grpc_frame_feed(&r, part, sizeof(part), sink_cb, &s);
    ck_assert(grpc_frame_pending(&r)); /* inside the prefix */
    uint8_t rest[] = { 0, 10, 'a', 'b' };
    grpc_frame_feed(&r, rest, sizeof(rest), sink_cb, &s);
    ck_assert(grpc_frame_pending(&r)); /* 2 of 10 body bytes */
    ck_assert_uint_eq(r.msg_len, 10);
    ck_assert_uint_eq(r.msg_have, 2);
    ck_assert_uint_eq(s.n, 0);
    grpc_frame_reader_free(&r); /* frees the partial body */
}
END_TEST

START_TEST(callback_stops_feed)
{
    size_t len;
    uint8_t *buf = make_stream(&len);
    struct grpc_frame_reader r;
    struct sink s = { .stop_after = 2 };
    grpc_frame_reader_init(&r, 1 << 20);
    ck_assert_int_eq(grpc_frame_feed(&r, buf, len, sink_cb, &s), 7);
    ck_assert_uint_eq(s.n, 2);
    grpc_frame_reader_free(&r);
    sink_free(&s);
    free(buf);
}
END_TEST

/* Growth is offered to the reserve hook: sums what the reader asked for. */
static int count_reserve(void *ctx, size_t more)
{
    *(size_t *)ctx += more;
    return 0;
}

/* A trusted length (prealloc_max) buys its whole buffer with the prefix;
 * others start at GRPC_FRAME_FIRST_CAP and grow as bytes come. */
START_TEST(prealloc_up_to_the_trusted_length)
{
    size_t len;
    uint8_t *stream = make_stream(&len);
    const size_t big = GRPC_FRAME_HEADER + 70000;   /* the third message */
    const uint8_t *third = stream + len - big;
    for (int trusted = 0; trusted <= 1; trusted++) {
        struct grpc_frame_reader r;
        size_t reserved = 0;
        grpc_frame_reader_init(&r, 1 << 20);
        r.reserve = count_reserve;
        r.reserve_ctx = &reserved;
        r.prealloc_max = trusted ? 70000 : 0;
        struct sink s = { 0 };
        ck_assert_int_eq(grpc_frame_feed(&r, third, GRPC_FRAME_HEADER + 1, sink_cb, &s), 0);
        ck_assert_uint_eq(reserved, trusted ? 70000 + 1 : GRPC_FRAME_FIRST_CAP);
        const uint8_t *rest = third + GRPC_FRAME_HEADER + 1;
        ck_assert_int_eq(grpc_frame_feed(&r, rest, big - GRPC_FRAME_HEADER - 1, sink_cb, &s), 0);
        ck_assert_uint_eq(s.n, 1);
        ck_assert_uint_eq(s.lens[0], 70000);
        ck_assert_int_eq(memcmp(s.msgs[0], third + GRPC_FRAME_HEADER, 70000), 0);
        ck_assert_uint_eq(reserved, 70000 + 1);
        sink_free(&s);
        grpc_frame_reader_free(&r);
    }
    free(stream);
}
END_TEST

/* A message of whole_min or more is read into one buffer, never moved,
 * while its charge doubles as its bytes come, as a grown one's would. */
START_TEST(whole_buffer_charged_as_bytes_arrive)
{
    const size_t body = 3 * GRPC_FRAME_FIRST_CAP * 8 + 5, piece = GRPC_FRAME_FIRST_CAP / 2;
    uint8_t *msg = malloc(GRPC_FRAME_HEADER + body);
    ck_assert_ptr_nonnull(msg);
    grpc_frame_header(msg, body);
    for (size_t i = 0; i < body; i++)
        msg[GRPC_FRAME_HEADER + i] = (uint8_t)(i * 7);
    for (int at_once = 0; at_once <= 1; at_once++) {
        struct grpc_frame_reader r;
        size_t reserved = 0, fed = 0;
        grpc_frame_reader_init(&r, body);
        r.reserve = count_reserve;
        r.reserve_ctx = &reserved;
        r.whole_min = at_once ? body : 0;
        struct sink s = { 0 };
        ck_assert_int_eq(grpc_frame_feed(&r, msg, GRPC_FRAME_HEADER, sink_cb, &s), 0);
        ck_assert_uint_eq(reserved, GRPC_FRAME_FIRST_CAP);
        ck_assert_uint_eq(r.msg_cap, at_once ? body + 1 : GRPC_FRAME_FIRST_CAP);
        const uint8_t *buf = r.msg;
        bool moved = false;
        while (fed < body) {
            size_t n = body - fed < piece ? body - fed : piece;
            ck_assert_int_eq(grpc_frame_feed(&r, msg + GRPC_FRAME_HEADER + fed, n, sink_cb, &s),
                             0);
            fed += n;
            if (fed < body) {
                /* Charged: what came, at most doubled, never the rest. */
                ck_assert_uint_ge(reserved, fed + 1);
                ck_assert_uint_le(reserved, 2 * fed + GRPC_FRAME_FIRST_CAP);
                moved |= r.msg != buf;
            }
        }
        ck_assert_msg(!at_once || !moved, "the whole buffer moved");
        ck_assert_uint_eq(s.n, 1);
        ck_assert_uint_eq(s.lens[0], body);
        ck_assert_int_eq(memcmp(s.msgs[0], msg + GRPC_FRAME_HEADER, body), 0);
        ck_assert_uint_eq(reserved, body + 1);
        sink_free(&s);
        grpc_frame_reader_free(&r);
    }
    free(msg);
}
END_TEST

/* A callback that takes the message's buffer (grpc_frame_take). */
struct taker {
    uint8_t *got[MAX_MSGS];
    size_t n;
    struct grpc_frame_reader *r;
};

static int take_cb(const uint8_t *msg, size_t len, void *ctx)
{
    struct taker *t = ctx;
    uint8_t *own = grpc_frame_take(t->r);
    ck_assert_ptr_eq(own, msg);
    own[len] = 0;   /* at least len + 1 bytes */
    t->got[t->n++] = own;
    return 0;
}

/* Taken buffers are the caller's: the reader neither frees nor reuses
 * them (not even as its spare), and take outside a callback is NULL. */
START_TEST(take_hands_the_buffer_over)
{
    size_t len;
    uint8_t *stream = make_stream(&len);
    struct grpc_frame_reader r;
    grpc_frame_reader_init(&r, 1 << 20);
    r.keep_max = 1 << 20;
    struct taker t = { .r = &r };
    ck_assert_int_eq(grpc_frame_feed(&r, stream, len, take_cb, &t), 0);
    ck_assert_int_eq(grpc_frame_feed(&r, stream, len, take_cb, &t), 0);
    ck_assert_uint_eq(t.n, 6);
    ck_assert_ptr_null(r.spare);
    ck_assert_ptr_null(grpc_frame_take(&r));
    for (size_t i = 0; i < t.n; i++) {
        for (size_t j = 0; j < i; j++)
            ck_assert_ptr_ne(t.got[i], t.got[j]);
        free(t.got[i]);
    }
    grpc_frame_reader_free(&r);
    free(stream);
}
END_TEST

START_TEST(header_bytes)
{
    uint8_t h[GRPC_FRAME_HEADER];
    grpc_frame_header(h, 0x01020304);
    ck_assert_uint_eq(h[0], 0);
    ck_assert_uint_eq(h[1], 1);
    ck_assert_uint_eq(h[2], 2);
    ck_assert_uint_eq(h[3], 3);
    ck_assert_uint_eq(h[4], 4);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("grpc_frame");
    const TTest *const tests[] = {
        whole,
        byte_by_byte,
        oversize_refused_at_prefix,
        limit_is_inclusive,
        compressed_flag,
        bad_flag,
        pending_detects_truncation,
        callback_stops_feed,
        prealloc_up_to_the_trusted_length,
        whole_buffer_charged_as_bytes_arrive,
        take_hands_the_buffer_over,
        header_bytes,
        NULL,
    };
    TCase *tc = check_run_case(s, "core", tests);
    check_run_loop(tc, random_splits, 0, 20);
    return check_run(s, CK_FORK_GETENV);
}
