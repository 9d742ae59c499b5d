/* SPDX-License-Identifier: MIT */
/* test_field_rx.c: a long bytes field taken in pieces (common/field_rx.c),
 * as the daemon takes bulk request bytes and the client long reply data:
 * every split of a message gives the field and what follows it exactly,
 * bytes the socket wrote at field_rx_dest() are not copied again, and the
 * message is whole only at its last byte. No sockets involved. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "check_run.h"
#include "field_rx.h"

#define FIELD_LEN 40
#define REST_LEN 7

static uint8_t msg[FIELD_LEN + REST_LEN];

static void msg_fill(void)
{
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (uint8_t)(i * 37 + 11);
}

static void rx_init(struct field_rx *rx, uint8_t *field, uint8_t *rest)
{
    memset(rx, 0, sizeof *rx);
    rx->field = field;
    rx->len = FIELD_LEN;
    rx->rest = rest;
    rx->rest_len = REST_LEN;
}

/* Every piece size from 1 to the whole message, pieces copied in. */
START_TEST(any_split_gives_field_and_rest)
{
    msg_fill();
    for (size_t step = 1; step <= sizeof msg; step++) {
        uint8_t field[FIELD_LEN], rest[REST_LEN];
        struct field_rx rx;
        rx_init(&rx, field, rest);
        for (size_t at = 0; at < sizeof msg; at += step) {
            ck_assert(!field_rx_whole(&rx));
            size_t n = sizeof msg - at < step ? sizeof msg - at : step;
            field_rx_piece(&rx, msg + at, n);
        }
        ck_assert_msg(field_rx_whole(&rx), "step %zu: not whole", step);
        ck_assert_mem_eq(field, msg, FIELD_LEN);
        ck_assert_mem_eq(rest, msg + FIELD_LEN, REST_LEN);
        size_t room = 99;
        ck_assert_ptr_null(field_rx_dest(&rx, &room));
    }
}
END_TEST

/* The socket reads the field's first bytes where field_rx_dest points,
 * then field_rx_piece counts them; dest moves on by what arrived, and the
 * rest comes as an ordinary piece. */
START_TEST(bytes_read_at_dest_stay)
{
    msg_fill();
    uint8_t field[FIELD_LEN], rest[REST_LEN];
    struct field_rx rx;
    rx_init(&rx, field, rest);
    size_t room;
    uint8_t *dest = field_rx_dest(&rx, &room);
    ck_assert_ptr_eq(dest, field);
    ck_assert_uint_eq(room, FIELD_LEN);
    memcpy(dest, msg, 25);   /* the socket's read */
    field_rx_piece(&rx, dest, 25);
    dest = field_rx_dest(&rx, &room);
    ck_assert_ptr_eq(dest, field + 25);
    ck_assert_uint_eq(room, FIELD_LEN - 25);
    uint8_t piece[FIELD_LEN - 25 + REST_LEN];
    memcpy(piece, msg + 25, sizeof piece);
    field_rx_piece(&rx, piece, sizeof piece);
    ck_assert(field_rx_whole(&rx));
    ck_assert_mem_eq(field, msg, FIELD_LEN);
    ck_assert_mem_eq(rest, msg + FIELD_LEN, REST_LEN);
}
END_TEST

START_TEST(empty_rest_and_empty_field)
{
    msg_fill();
    uint8_t field[FIELD_LEN], rest[1];
    struct field_rx rx = { .field = field, .len = FIELD_LEN, .rest = rest, .rest_len = 0 };
    field_rx_piece(&rx, msg, FIELD_LEN);
    ck_assert(field_rx_whole(&rx));
    ck_assert_mem_eq(field, msg, FIELD_LEN);
    struct field_rx none = { .field = field, .len = 0, .rest = rest, .rest_len = 1 };
    size_t room;
    ck_assert_ptr_null(field_rx_dest(&none, &room));
    ck_assert(!field_rx_whole(&none));
    field_rx_piece(&none, msg + 3, 1);
    ck_assert(field_rx_whole(&none));
    ck_assert_uint_eq(rest[0], msg[3]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("field_rx");
    const TTest *const tests[] = {
        any_split_gives_field_and_rest,
        bytes_read_at_dest_stay,
        empty_rest_and_empty_field,
        NULL,
    };
    check_run_case(s, "pieces", tests);
    return check_run(s, CK_FORK_GETENV);
}
