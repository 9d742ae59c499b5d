/* SPDX-License-Identifier: MIT */
/* test_hostile_compression.c: compressed request messages (grpc-encoding
 * gzip or deflate, message flag 1) from a bare HTTP/2 client, over a real
 * socket. Good gzip and deflate bodies are inflated and answered right; an
 * unknown grpc-encoding gets UNIMPLEMENTED naming what ampd takes; a body
 * that is not gzip, a cut one, and a flag 1 without grpc-encoding get
 * INTERNAL; a decompression bomb (16 MiB of zeros in 16 KiB) stops at
 * --max-message-bytes with RESOURCE_EXHAUSTED, and the daemon's memory
 * comes back. Replies: a 1 KiB+ histogram reply to a client whose
 * grpc-accept-encoding lists gzip (or only deflate) comes compressed and
 * inflates to the very reply an identity client gets. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "check_run.h"
#include "grpc_frame.h"
#include "h2_client.h"
#include "hostile.h"
#include "status.h"

#define MAX_MESSAGE "65536"
#define PLAIN_LEN 1000            /* ReverseRequest.data of the good calls */
#define BOMB_LEN (16u << 20)      /* zeros in the bomb: far past MAX_MESSAGE */
#define PACKED_CAP (64 * 1024)    /* a whole compressed message fits */
#define WBITS_GZIP (16 + 15)
#define WBITS_ZLIB 15

static struct daemon_proc ampd;

/* A gRPC message (prefix with flag 1) of src compressed with wbits. */
static size_t pack(int wbits, const uint8_t *src, size_t n, uint8_t *out, size_t cap)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    ck_assert_int_eq(deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, wbits, 8,
                                  Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (Bytef *)src;
    z.avail_in = (uInt)n;
    z.next_out = out + GRPC_FRAME_HEADER;
    z.avail_out = (uInt)(cap - GRPC_FRAME_HEADER);
    ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t len = z.total_out;
    deflateEnd(&z);
    grpc_frame_header(out, len);
    out[0] = 1;   /* compressed */
    return GRPC_FRAME_HEADER + len;
}

/* ReverseRequest{data: PLAIN_LEN bytes} and its data. */
static size_t reverse_request(uint8_t *out, uint8_t *data)
{
    for (size_t i = 0; i < PLAIN_LEN; i++)
        data[i] = (uint8_t)(i * 7 + 3);
    out[0] = 0x0a;
    out[1] = (uint8_t)(PLAIN_LEN & 0x7f) | 0x80;
    out[2] = (uint8_t)(PLAIN_LEN >> 7);
    memcpy(out + 3, data, PLAIN_LEN);
    return 3 + PLAIN_LEN;
}

static int32_t call_to(struct h2c *c, const char *path, const char *name, const char *value,
                       const uint8_t *body, size_t len)
{
    const char *fields[] = {
        ":method", "POST", ":scheme", "http", ":path", path,
        ":authority", "localhost", "content-type", "application/grpc", "te", "trailers",
        name, value,
    };
    size_t n = sizeof fields / sizeof fields[0] / 2;   /* pairs */
    return h2c_request_fields(c, fields, value ? n : n - 1, body, len);
}

static int32_t call(struct h2c *c, const char *encoding, const uint8_t *body, size_t len)
{
    return call_to(c, "/amp.v1.Amp/Reverse", "grpc-encoding", encoding, body, len);
}

static void expect_status(struct h2c *c, int32_t id, int status, const char *message)
{
    const struct h2c_result *r = h2c_result(c, id);
    char m[H2C_MESSAGE_MAX];
    h2c_percent_decode(r->grpc_message, m, sizeof m);
    ck_assert_msg(r->grpc_status == status, "stream %d: status %d: %s", (int)id, r->grpc_status,
                  m);
    if (message)
        ck_assert_str_eq(m, message);
}

static void expect_reversed(struct h2c *c, int32_t id, const uint8_t *data)
{
    expect_status(c, id, STATUS_OK, NULL);
    const uint8_t *msg;
    size_t len;
    ck_assert_int_eq(h2c_message(h2c_result(c, id), &msg, &len), 0);
    ck_assert_uint_ge(len, 3 + PLAIN_LEN);   /* ReverseReply.data first, then the rest */
    ck_assert_uint_eq(msg[0], 0x0a);
    for (size_t i = 0; i < PLAIN_LEN; i++)
        ck_assert_uint_eq(msg[3 + i], data[PLAIN_LEN - 1 - i]);
}

START_TEST(compressed_requests_answered)
{
    static const char *const args[] = { "--max-message-bytes", MAX_MESSAGE, NULL };
    long base = hostile_start(&ampd, args);
    int fd = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    static uint8_t plain[3 + PLAIN_LEN], data[PLAIN_LEN], gz[PACKED_CAP], zl[PACKED_CAP],
        bomb[PACKED_CAP];
    size_t plain_len = reverse_request(plain, data);
    size_t gz_len = pack(WBITS_GZIP, plain, plain_len, gz, sizeof gz);
    size_t zl_len = pack(WBITS_ZLIB, plain, plain_len, zl, sizeof zl);
    uint8_t *zeros = calloc(1, BOMB_LEN);
    ck_assert_ptr_nonnull(zeros);
    size_t bomb_len = pack(WBITS_GZIP, zeros, BOMB_LEN, bomb, sizeof bomb);
    free(zeros);
    static const uint8_t not_gzip[] = { 1, 0, 0, 0, 4, 'a', 'b', 'c', 'd' };

    struct h2c *c = h2c_new();
    int32_t id_gzip = call(c, "gzip", gz, gz_len);
    int32_t id_deflate = call(c, "deflate", zl, zl_len);
    int32_t id_unknown = call(c, "br", gz, gz_len);
    int32_t id_not_gzip = call(c, "gzip", not_gzip, sizeof not_gzip);
    /* The cut one: its prefix declares fewer bytes, the stream stays whole. */
    uint8_t cut[PACKED_CAP];
    memcpy(cut, gz, gz_len);
    grpc_frame_header(cut, gz_len - GRPC_FRAME_HEADER - 4);
    cut[0] = 1;
    int32_t id_cut = call(c, "gzip", cut, gz_len - 4);
    int32_t id_no_encoding = call(c, NULL, gz, gz_len);
    int32_t id_bomb = call(c, "gzip", bomb, bomb_len);
    ck_assert_int_eq(h2c_run_fd(c, fd, HOSTILE_IO_MS), 0);

    expect_reversed(c, id_gzip, data);
    expect_reversed(c, id_deflate, data);
    expect_status(c, id_unknown, STATUS_UNIMPLEMENTED,
                  "grpc-encoding is not one ampd takes (grpc-accept-encoding: "
                  "identity,deflate,gzip)");
    expect_status(c, id_not_gzip, STATUS_INTERNAL, "request message is not valid gzip data");
    expect_status(c, id_cut, STATUS_INTERNAL, "request message is not valid gzip data");
    expect_status(c, id_no_encoding, STATUS_INTERNAL,
                  "compressed message flag set without a grpc-encoding");
    expect_status(c, id_bomb, STATUS_RESOURCE_EXHAUSTED,
                  "request message inflates past --max-message-bytes (" MAX_MESSAGE ")");
    close(fd);
    h2c_free(c);
    ck_assert(hostile_wait_quiet(ampd.address, 1, HOSTILE_IO_MS));
    hostile_assert_served(ampd.address);
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

#define HIST_BINS 1024   /* one count each: a reply of over 1 KiB */

/* Histogram of int32 0..HIST_BINS-1 into HIST_BINS bins over [0, HIST_BINS). */
static size_t hist_request(uint8_t *out)
{
    size_t o = GRPC_FRAME_HEADER;
    out[o++] = 0x0a;   /* data: HIST_BINS * 4 bytes */
    out[o++] = (uint8_t)((HIST_BINS * 4) & 0x7f) | 0x80;
    out[o++] = (uint8_t)((HIST_BINS * 4) >> 7);
    for (int32_t v = 0; v < HIST_BINS; v++, o += 4)
        memcpy(out + o, &v, 4);   /* little-endian, as the host */
    double hi = HIST_BINS;
    uint8_t params[] = { 0x08, 3, 0x10, (uint8_t)(HIST_BINS & 0x7f) | 0x80,
                         (uint8_t)(HIST_BINS >> 7), 0x21 };   /* INT32, bins, hi: */
    out[o++] = 0x12;
    out[o++] = (uint8_t)(sizeof params + sizeof hi);
    memcpy(out + o, params, sizeof params);
    memcpy(out + o + sizeof params, &hi, sizeof hi);
    o += sizeof params + sizeof hi;
    grpc_frame_header(out, o - GRPC_FRAME_HEADER);
    return o;
}

/* The reply of result r, inflated with wbits when it is compressed. */
static size_t reply_of(const struct h2c_result *r, int wbits, uint8_t *out, size_t cap)
{
    ck_assert_int_eq(r->grpc_status, STATUS_OK);
    ck_assert_uint_ge(r->body_len, GRPC_FRAME_HEADER);
    size_t len = r->body_len - GRPC_FRAME_HEADER;
    if (!wbits) {
        ck_assert_uint_eq(r->body[0], 0);
        ck_assert_uint_le(len, cap);
        memcpy(out, r->body + GRPC_FRAME_HEADER, len);
        return len;
    }
    ck_assert_uint_eq(r->body[0], 1);
    z_stream z;
    memset(&z, 0, sizeof z);
    ck_assert_int_eq(inflateInit2(&z, wbits), Z_OK);
    z.next_in = r->body + GRPC_FRAME_HEADER;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    ck_assert_int_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
    size_t n = z.total_out;
    inflateEnd(&z);
    ck_assert_uint_lt(len, n);   /* it was worth it */
    return n;
}

START_TEST(replies_compressed_as_accepted)
{
    long base = hostile_start(&ampd, NULL);
    int fd = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    static uint8_t req[GRPC_FRAME_HEADER + HIST_BINS * 4 + 64];
    size_t req_len = hist_request(req);
    const char *path = "/amp.v1.Amp/Histogram", *accept = "grpc-accept-encoding";
    struct h2c *c = h2c_new();
    int32_t plain = call_to(c, path, accept, NULL, req, req_len);
    int32_t identity = call_to(c, path, accept, "identity", req, req_len);
    int32_t gzip = call_to(c, path, accept, "identity, deflate, gzip", req, req_len);
    int32_t deflate = call_to(c, path, accept, "identity,deflate", req, req_len);
    ck_assert_int_eq(h2c_run_fd(c, fd, HOSTILE_IO_MS), 0);
    static uint8_t want[4 * HIST_BINS], got[4 * HIST_BINS];
    size_t n = reply_of(h2c_result(c, plain), 0, want, sizeof want);
    ck_assert_uint_ge(n, HIST_BINS);
    ck_assert_uint_eq(reply_of(h2c_result(c, identity), 0, got, sizeof got), n);
    ck_assert_uint_eq(reply_of(h2c_result(c, gzip), WBITS_GZIP, got, sizeof got), n);
    ck_assert_mem_eq(got, want, n);
    ck_assert_uint_eq(reply_of(h2c_result(c, deflate), WBITS_ZLIB, got, sizeof got), n);
    ck_assert_mem_eq(got, want, n);
    close(fd);
    h2c_free(c);
    ck_assert(hostile_wait_quiet(ampd.address, 1, HOSTILE_IO_MS));
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hostile_compression");
    const TTest *const tests[] = {
        compressed_requests_answered,
        replies_compressed_as_accepted,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 60);
    return check_run(s, CK_FORK_GETENV);
}
