/* test_pb_wire.c: the hand-written protobuf varints (common/pb_wire.c) that
 * the streaming paths use: lengths, round trips at every size boundary, the
 * bytes protobuf defines for known values, and truncated or overlong input
 * refused. */
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

int main(void)
{
    Suite *s = suite_create("pb_wire");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, round_trips_at_boundaries);
    tcase_add_test(tc, known_encodings);
    tcase_add_test(tc, truncated_and_overlong_refused);
    suite_add_tcase(s, tc);
    return check_run(s, CK_FORK_GETENV);
}
