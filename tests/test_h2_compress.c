/* SPDX-License-Identifier: MIT */
/* test_h2_compress.c: the pure parts of message compression: which
 * grpc-encoding names are taken, which reply encoding a
 * grpc-accept-encoding list picks, a round trip through h2_deflate and
 * h2_inflate in both formats, the inflate bound (exactly the limit passes,
 * one byte over does not, and the output never grows past limit + 1 bytes,
 * as the reserve hook sees), and a refusing reserve hook. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "h2_deflate.h"
#include "h2_inflate.h"

#define LEN 100000

static enum h2_encoding choose(const char *s)
{
    return h2_deflate_choose((const uint8_t *)s, strlen(s));
}

START_TEST(names_and_choice)
{
    ck_assert_int_eq(h2_inflate_encoding((const uint8_t *)"gzip", 4), H2_ENCODING_GZIP);
    ck_assert_int_eq(h2_inflate_encoding((const uint8_t *)"deflate", 7), H2_ENCODING_DEFLATE);
    ck_assert_int_eq(h2_inflate_encoding((const uint8_t *)"identity", 8), H2_ENCODING_IDENTITY);
    ck_assert_int_eq(h2_inflate_encoding((const uint8_t *)"gzi", 3), H2_ENCODING_UNKNOWN);
    ck_assert_int_eq(h2_inflate_encoding((const uint8_t *)"br", 2), H2_ENCODING_UNKNOWN);
    ck_assert_int_eq(choose("identity,deflate,gzip"), H2_ENCODING_GZIP);
    ck_assert_int_eq(choose(" gzip "), H2_ENCODING_GZIP);
    ck_assert_int_eq(choose("identity, deflate"), H2_ENCODING_DEFLATE);
    ck_assert_int_eq(choose("identity"), H2_ENCODING_IDENTITY);
    ck_assert_int_eq(choose(""), H2_ENCODING_IDENTITY);
    ck_assert_int_eq(choose("gzipx,br"), H2_ENCODING_IDENTITY);
}
END_TEST

static size_t reserved;

static int count_reserve(void *ctx, size_t more)
{
    (void)ctx;
    reserved += more;
    return 0;
}

static int refuse_reserve(void *ctx, size_t more)
{
    (void)ctx;
    (void)more;
    return -1;
}

static void round_trip(enum h2_encoding enc)
{
    static uint8_t in[LEN], packed[LEN];
    for (size_t i = 0; i < LEN; i++)
        in[i] = (uint8_t)(i % 251 < 200 ? 'a' : i);
    size_t n = 0;
    ck_assert_int_eq(h2_deflate(enc, in, LEN, packed, sizeof packed, &n), 0);
    ck_assert_uint_lt(n, LEN);
    ck_assert_int_eq(h2_deflate(enc, in, LEN, packed, 8, &n), -1);   /* no room: not worth it */
    ck_assert_int_eq(h2_deflate(enc, in, LEN, packed, sizeof packed, &n), 0);
    uint8_t *out;
    size_t out_len;
    reserved = 0;
    ck_assert_int_eq(h2_inflate(enc, packed, n, LEN, count_reserve, NULL, &out, &out_len),
                     H2_INFLATE_OK);
    ck_assert_uint_eq(out_len, LEN);
    ck_assert_mem_eq(out, in, LEN);
    ck_assert_uint_le(reserved, LEN + 1);
    free(out);
    reserved = 0;
    ck_assert_int_eq(h2_inflate(enc, packed, n, LEN - 1, count_reserve, NULL, &out, &out_len),
                     H2_INFLATE_TOO_LARGE);
    ck_assert_ptr_null(out);
    ck_assert_uint_le(reserved, LEN);   /* stopped at the limit + 1 */
    ck_assert_int_eq(h2_inflate(enc, packed, n, LEN, refuse_reserve, NULL, &out, &out_len),
                     H2_INFLATE_REFUSED);
    ck_assert_int_eq(h2_inflate(enc, packed, n - 1, LEN, NULL, NULL, &out, &out_len),
                     H2_INFLATE_CORRUPT);   /* cut */
    packed[n] = 0;
    ck_assert_int_eq(h2_inflate(enc, packed, n + 1, LEN, NULL, NULL, &out, &out_len),
                     H2_INFLATE_CORRUPT);   /* trailing byte */
}

START_TEST(gzip_round_trip_and_bound)
{
    round_trip(H2_ENCODING_GZIP);
}
END_TEST

START_TEST(deflate_round_trip_and_bound)
{
    round_trip(H2_ENCODING_DEFLATE);
}
END_TEST

START_TEST(wrong_format_is_corrupt)
{
    static const uint8_t in[] = "not compressed at all";
    uint8_t packed[256], *out;
    size_t n, out_len;
    ck_assert_int_eq(h2_inflate(H2_ENCODING_GZIP, in, sizeof in, LEN, NULL, NULL, &out, &out_len),
                     H2_INFLATE_CORRUPT);
    ck_assert_int_eq(h2_deflate(H2_ENCODING_DEFLATE, in, sizeof in, packed, sizeof packed, &n), 0);
    ck_assert_int_eq(h2_inflate(H2_ENCODING_GZIP, packed, n, LEN, NULL, NULL, &out, &out_len),
                     H2_INFLATE_CORRUPT);   /* zlib data read as gzip */
    ck_assert_int_eq(h2_inflate(H2_ENCODING_DEFLATE, packed, n, LEN, NULL, NULL, &out, &out_len),
                     H2_INFLATE_OK);
    ck_assert_mem_eq(out, in, sizeof in);
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("h2_compress");
    const TTest *const tests[] = {
        names_and_choice,
        gzip_round_trip_and_bound,
        deflate_round_trip_and_bound,
        wrong_format_is_corrupt,
        NULL,
    };
    check_run_case(s, "core", tests);
    return check_run(s, CK_FORK_GETENV);
}
