/* SPDX-License-Identifier: MIT */
/* test_client_pieces.c: how a call's reply DATA reaches its handlers
 * (client/call.c, call_feed). A stream takes each long reply message in
 * pieces, as it arrives, and a short one whole, whatever shares a DATA
 * chunk with it: the daemon sends a chunk's reply and the short rest of the
 * chunk back to back, so a short message's tail is often followed in the
 * same chunk by the next long message's head. That long message once went
 * whole into the reader (a copy of every byte, and a buffer of its size).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "check_run.h"
#include "grpc_frame.h"

#define LONG_LEN 4096               /* past CALL_PIECE_HEAD: goes in pieces */
#define SHORT_LEN 40                /* under it: goes whole */
#define HEAD_OFF 3                  /* where a long message's bytes start after its head */

/* What the handlers saw. */
struct seen {
    int whole;                      /* messages through on_message */
    size_t whole_bytes;
    int starts;                     /* messages taken in pieces */
    size_t piece_bytes;
    uint8_t out[4 * LONG_LEN];      /* the bytes after each long message's head, in order */
    size_t out_len;
};

static int on_message(const uint8_t *msg, size_t len, void *ctx)
{
    struct seen *s = ctx;
    (void)msg;
    s->whole++;
    s->whole_bytes += len;
    return 0;
}

static size_t on_piece_start(const uint8_t *head, size_t msg_len, void *ctx)
{
    struct seen *s = ctx;
    (void)head;
    ck_assert_uint_eq(msg_len, LONG_LEN);
    s->starts++;
    return HEAD_OFF;
}

static int on_piece(const uint8_t *data, size_t len, void *ctx)
{
    struct seen *s = ctx;
    ck_assert_uint_le(s->out_len + len, sizeof s->out);
    memcpy(s->out + s->out_len, data, len);
    s->out_len += len;
    s->piece_bytes += len;
    return 0;
}

/* Appends a framed message of len bytes, byte i being (seed + i), to buf. */
static size_t put_message(uint8_t *buf, size_t len, uint8_t seed)
{
    grpc_frame_header(buf, len);
    for (size_t i = 0; i < len; i++)
        buf[GRPC_FRAME_HEADER + i] = (uint8_t)(seed + i);
    return GRPC_FRAME_HEADER + len;
}

static void call_setup(struct call *call, struct seen *s)
{
    memset(s, 0, sizeof *s);
    call_init(call);
    call->on_message = on_message;
    call->on_piece_start = on_piece_start;
    call->on_piece = on_piece;
    call->on_message_ctx = s;
}

/* long, short, long, short, long: fed in chunks of `step` bytes. */
static void feed_sequence(size_t step)
{
    static uint8_t buf[4 * (GRPC_FRAME_HEADER + LONG_LEN)];
    size_t n = 0;
    n += put_message(buf + n, LONG_LEN, 1);
    n += put_message(buf + n, SHORT_LEN, 2);
    n += put_message(buf + n, LONG_LEN, 3);
    n += put_message(buf + n, SHORT_LEN, 4);
    n += put_message(buf + n, LONG_LEN, 5);
    struct call call;
    struct seen s;
    call_setup(&call, &s);
    for (size_t off = 0; off < n; off += step)
        ck_assert_int_eq(call_feed(&call, buf + off, n - off < step ? n - off : step), 0);
    ck_assert_int_eq(s.starts, 3);
    ck_assert_int_eq(s.whole, 2);
    ck_assert_uint_eq(s.whole_bytes, 2 * SHORT_LEN);
    ck_assert_uint_eq(s.piece_bytes, 3 * (LONG_LEN - HEAD_OFF));
    for (int m = 0; m < 3; m++) {
        uint8_t seed = (uint8_t)(1 + 2 * m);
        for (size_t i = HEAD_OFF; i < LONG_LEN; i++)
            ck_assert_uint_eq(s.out[m * (LONG_LEN - HEAD_OFF) + i - HEAD_OFF],
                              (uint8_t)(seed + i));
    }
    call_release(&call);
}

START_TEST(all_in_one_chunk)
{
    feed_sequence(1 << 20);
}
END_TEST

START_TEST(chunk_sizes)
{
    static const size_t steps[] = { 1, 2, 5, 7, 64, 191, 192, 193, 1000, LONG_LEN + 1 };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        feed_sequence(steps[i]);
}
END_TEST

/* A unary call (no pieces) still refuses a second message. */
START_TEST(unary_second_message)
{
    uint8_t buf[2 * (GRPC_FRAME_HEADER + SHORT_LEN)];
    size_t n = put_message(buf, SHORT_LEN, 1);
    n += put_message(buf + n, SHORT_LEN, 2);
    struct call call;
    call_init(&call);
    ck_assert_int_ne(call_feed(&call, buf, n), 0);
    ck_assert_uint_eq(call.reply_len, SHORT_LEN);
    call_release(&call);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_pieces");
    const TTest *const tests[] = {
        all_in_one_chunk,
        chunk_sizes,
        unary_second_message,
        NULL,
    };
    check_run_case(s, "feed", tests);
    return check_run(s, CK_FORK_GETENV);
}
