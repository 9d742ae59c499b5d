/* SPDX-License-Identifier: MIT */
/* test_pb_wire.c: the hand-written protobuf varints (common/pb_wire.c) that
 * the streaming paths use: lengths, round trips at every size boundary, the
 * bytes protobuf defines for known values, and truncated or overlong input
 * refused; and pb_field_next's offsets of each wire type (what it refuses
 * is checked against protobuf-c in test_rpc_bulk.c). */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "check_run.h"
#include "pb_wire.h"

START_TEST(round_trips_at_boundaries)
{
    const uint64_t values[] = {0, 1, 127, 128, 16383, 16384, 1u << 20, (1u << 21) - 1, 1u << 21,
                               UINT32_MAX, (uint64_t)1 << 63, UINT64_MAX};
    for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
        uint8_t buf[PB_VARINT_MAX + 1];
        size_t n = pb_varint_put(buf, values[k]);
        ck_assert_uint_eq(n, pb_varint_len(values[k]));
        ck_assert_uint_le(n, PB_VARINT_MAX);
        size_t i = 0;
        uint64_t v;
        ck_assert_int_eq(pb_varint_get(buf, n, &i, &v), 0);
        ck_assert_uint_eq(i, n);
        ck_assert_uint_eq(v, values[k]);
    }
}
END_TEST

START_TEST(known_encodings)
{
    uint8_t buf[PB_VARINT_MAX];
    ck_assert_uint_eq(pb_varint_put(buf, 300), 2);   /* protobuf's own example: ac 02 */
    ck_assert_uint_eq(buf[0], 0xac);
    ck_assert_uint_eq(buf[1], 0x02);
    ck_assert_uint_eq(pb_varint_len(UINT64_MAX), 10);
}
END_TEST

START_TEST(truncated_and_overlong_refused)
{
    const uint8_t cut[] = {0x80, 0x80};   /* continuation bits, then nothing */
    size_t i = 0;
    uint64_t v;
    ck_assert_int_eq(pb_varint_get(cut, sizeof cut, &i, &v), -1);
    uint8_t longer[11];
    for (int k = 0; k < 11; k++)
        longer[k] = 0x80;
    i = 0;
    ck_assert_int_eq(pb_varint_get(longer, sizeof longer, &i, &v), -1);
    const uint8_t two[] = {0x05, 0x07};   /* reads one, leaves the next */
    i = 0;
    ck_assert_int_eq(pb_varint_get(two, sizeof two, &i, &v), 0);
    ck_assert_uint_eq(v, 5);
    ck_assert_uint_eq(i, 1);
}
END_TEST

START_TEST(fields_and_their_offsets)
{
    /* field 1 varint 150, field 2 "ab", field 3 fixed32, field 4 fixed64 */
    static const uint8_t m[] = { 0x08, 0x96, 0x01, 0x12, 0x02, 'a', 'b', 0x1d, 1, 2, 3, 4,
                                 0x21, 1, 2, 3, 4, 5, 6, 7, 8 };
    static const struct pb_field want[] = {
        { 1, PB_WIRE_VARINT, 0, 1, 3 },
        { 2, PB_WIRE_LEN, 3, 5, 7 },
        { 3, PB_WIRE_I32, 7, 8, 12 },
        { 4, PB_WIRE_I64, 12, 13, 21 },
    };
    size_t i = 0;
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        struct pb_field f;
        ck_assert_int_eq(pb_field_next(m, sizeof m, &i, &f), 0);
        ck_assert_uint_eq(f.number, want[k].number);
        ck_assert_uint_eq(f.wire, want[k].wire);
        ck_assert_uint_eq(f.start, want[k].start);
        ck_assert_uint_eq(f.value, want[k].value);
        ck_assert_uint_eq(f.end, want[k].end);
        ck_assert_uint_eq(i, f.end);
    }
    ck_assert_uint_eq(i, sizeof m);
    /* Every cut of it short of a field's end is refused. */
    for (size_t cut = 1; cut < sizeof m; cut++) {
        if (cut == 3 || cut == 7 || cut == 12)
            continue;
        struct pb_field f;
        size_t j = 0;
        int rc = 0;
        while (rc == 0 && j < cut)
            rc = pb_field_next(m, cut, &j, &f);
        ck_assert_int_eq(rc, -1);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pb_wire");
    const TTest *const tests[] = {
        round_trips_at_boundaries,
        known_encodings,
        truncated_and_overlong_refused,
        fields_and_their_offsets,
        NULL,
    };
    check_run_case(s, "core", tests);
    return check_run(s, CK_FORK_GETENV);
}
