/* SPDX-License-Identifier: MIT */
/* test_h2_errors.c: every way a request can be wrong at the HTTP/2 + gRPC
 * layer, and the status the daemon answers with (gRPC's status code table:
 * unknown method and request cardinality UNIMPLEMENTED, undecodable request
 * INTERNAL, oversize RESOURCE_EXHAUSTED, a compressed message without
 * grpc-encoding INTERNAL). In memory, against the real h2 + rpc layers. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "grpc_frame.h"
#include "h2_pair.h"

#define MAX_MSG 1024

static struct h2_pair pair;

static void setup(void)
{
    h2_pair_init(&pair, MAX_MSG, 4);
}

static void teardown(void)
{
    h2_pair_free(&pair);
}

static const struct h2c_result *raw(const char *path, const char *ct, const uint8_t *body,
                                    size_t len)
{
    int32_t id = h2c_request(pair.client, path, ct, body, len, true);
    h2_pair_pump(&pair);
    const struct h2c_result *r = h2c_result(pair.client, id);
    ck_assert(r->closed);
    return r;
}

START_TEST(unknown_method)
{
    const struct h2c_result *r = h2_pair_call(&pair, "/x.y/Z", NULL, 0);
    ck_assert_int_eq(r->http_status, 200);
    ck_assert(r->trailers_only);
    ck_assert_int_eq(r->grpc_status, STATUS_UNIMPLEMENTED);
    ck_assert_str_eq(r->grpc_message, "unknown method /x.y/Z");
}
END_TEST

START_TEST(stream_needs_header_first)
{
    /* An empty StreamRequest: neither header nor data. */
    const struct h2c_result *r = h2_pair_call(&pair, "/amp.v1.Amp/Stream", NULL, 0);
    ck_assert_int_eq(r->grpc_status, STATUS_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(r->grpc_message, "header"));
}
END_TEST

/* grpc-timeout must be 1 to 8 digits and one of H M S m u n; a malformed
 * one is answered INTERNAL (as gRPC servers do), a good one changes
 * nothing here (these layers run no timers; test_deadline.c does). */
START_TEST(malformed_timeout)
{
    static const char *const bad[] = {"S", "12", "12x", "5s", "-1S", "1.5S", "123456789S",
                                      "1 S", "0x1S"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        h2c_set_timeout(pair.client, bad[i]);
        const struct h2c_result *r = h2_pair_call(&pair, "/amp.v1.Amp/Status", NULL, 0);
        ck_assert_msg(r->grpc_status == STATUS_INTERNAL, "grpc-timeout \"%s\": status %d", bad[i],
                      r->grpc_status);
        char msg[H2C_MESSAGE_MAX];
        h2c_percent_decode(r->grpc_message, msg, sizeof msg);
        ck_assert_ptr_nonnull(strstr(msg, "malformed grpc-timeout"));
    }
    static const char *const good[] = {"1n", "999u", "50m", "5S", "1M", "99999999H", "00000001S"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        h2c_set_timeout(pair.client, good[i]);
        const struct h2c_result *r = h2_pair_call(&pair, "/amp.v1.Amp/Status", NULL, 0);
        ck_assert_msg(r->grpc_status == 0, "grpc-timeout \"%s\": status %d", good[i],
                      r->grpc_status);
    }
}
END_TEST

START_TEST(stream_without_devices)
{
    /* StreamRequest{header{steps: [{reverse: {}}]}}: valid, but this
     * daemon has no scheduler. */
    static const uint8_t msg[] = {0x0a, 0x04, 0x0a, 0x02, 0x0a, 0x00};
    const struct h2c_result *r = h2_pair_call(&pair, "/amp.v1.Amp/Stream", msg, sizeof msg);
    ck_assert_int_eq(r->grpc_status, STATUS_UNAVAILABLE);
    ck_assert_ptr_nonnull(strstr(r->grpc_message, "no device"));
}
END_TEST

START_TEST(bad_content_type)
{
    uint8_t body[GRPC_FRAME_HEADER];
    grpc_frame_header(body, 0);
    const struct h2c_result *r = raw("/amp.v1.Amp/Status", "application/json", body, sizeof(body));
    ck_assert_int_eq(r->http_status, 415);
    ck_assert_int_eq(r->grpc_status, STATUS_INTERNAL);
    r = raw("/amp.v1.Amp/Status", "application/grpcx", body, sizeof(body));
    ck_assert_int_eq(r->http_status, 415);
}
END_TEST

START_TEST(not_post)
{
    int32_t id = h2c_request_method(pair.client, "PUT", "/amp.v1.Amp/Status", NULL, 0);
    h2_pair_pump(&pair);
    const struct h2c_result *r = h2c_result(pair.client, id);
    ck_assert(r->closed);
    ck_assert_int_eq(r->http_status, 405);
}
END_TEST

START_TEST(bad_protobuf)
{
    /* Field 1 as a length-delimited string whose length runs past the end. */
    static const uint8_t garbage[] = { 0x0a, 0x7f, 'x' };
    const struct h2c_result *r = h2_pair_call(&pair, "/grpc.health.v1.Health/Check", garbage,
                                              sizeof(garbage));
    ck_assert_int_eq(r->grpc_status, STATUS_INTERNAL);
    ck_assert_ptr_nonnull(strstr(r->grpc_message, "grpc.health.v1.HealthCheckRequest"));
}
END_TEST

START_TEST(oversize)
{
    uint8_t *body = calloc(1, GRPC_FRAME_HEADER + MAX_MSG + 1);
    grpc_frame_header(body, MAX_MSG + 1);
    const struct h2c_result *r = raw("/amp.v1.Amp/Reverse", NULL, body, GRPC_FRAME_HEADER + MAX_MSG + 1);
    ck_assert_int_eq(r->grpc_status, STATUS_RESOURCE_EXHAUSTED);
    char msg[256];
    h2c_percent_decode(r->grpc_message, msg, sizeof(msg));
    ck_assert_str_eq(msg, "request message of 1025 bytes exceeds --max-message-bytes (1024)");
    free(body);
}
END_TEST

START_TEST(oversize_prefix_only)
{
    /* A prefix declaring 4 GiB - 1, no body, stream left open: refused at
     * once, nothing buffered, the stream reset for the client to stop. */
    uint8_t body[GRPC_FRAME_HEADER] = { 0, 0xff, 0xff, 0xff, 0xff };
    int32_t id = h2c_request(pair.client, "/amp.v1.Amp/Reverse", NULL, body, sizeof(body), false);
    h2_pair_pump(&pair);
    const struct h2c_result *r = h2c_result(pair.client, id);
    ck_assert(r->closed);
    ck_assert_int_eq(r->grpc_status, STATUS_RESOURCE_EXHAUSTED);
    ck_assert_uint_eq(h2_session_calls(pair.server), 0);
}
END_TEST

START_TEST(budget_bounds_buffering)
{
    /* A budget of 300 bytes: a call that declared 100 holds its buffer
     * (100 + 1 bytes: a message's buffer has one spare) as its bytes
     * arrive; a second call whose 200 bytes would need 201 more is refused
     * once they arrive; after the first finishes, everything is back. */
    pair.budget.max = 300;
    uint8_t body[GRPC_FRAME_HEADER + 100] = { 0 };
    grpc_frame_header(body, 100);
    int32_t first = h2c_request_open(pair.client, "/amp.v1.Amp/Reverse", body, GRPC_FRAME_HEADER + 10);
    h2_pair_pump(&pair);
    ck_assert_uint_eq(pair.budget.used, 101);
    uint8_t body2[GRPC_FRAME_HEADER + 200] = { 0 };
    grpc_frame_header(body2, 200);
    const struct h2c_result *r = raw("/amp.v1.Amp/Reverse", NULL, body2, sizeof(body2));
    ck_assert_int_eq(r->grpc_status, STATUS_RESOURCE_EXHAUSTED);
    char msg[256];
    h2c_percent_decode(r->grpc_message, msg, sizeof(msg));
    ck_assert_str_eq(msg, "no room for the request message of 200 bytes: --max-job-memory (300) is "
                          "in use: 101 bytes held, 201 more wanted");
    ck_assert_uint_eq(pair.budget.used, 101);
    ck_assert_int_eq(h2c_append(pair.client, first, body + GRPC_FRAME_HEADER + 10, 90, true), 0);
    h2_pair_pump(&pair);
    ck_assert(h2c_result(pair.client, first)->closed);
    ck_assert_uint_eq(pair.budget.used, 0);
    r = raw("/amp.v1.Amp/Reverse", NULL, body, sizeof(body));
    /* Admitted, raw and decoded copy at once (201 bytes): it gets as far as
     * decoding (100 zero bytes are no protobuf). */
    ck_assert_int_eq(r->grpc_status, STATUS_INTERNAL);
    /* A prefix alone holds nothing but a first buffer for what it declared:
     * a call that dies mid-message gives it back. */
    int32_t third = h2c_request_open(pair.client, "/amp.v1.Amp/Reverse", body, GRPC_FRAME_HEADER + 10);
    h2_pair_pump(&pair);
    ck_assert_uint_eq(pair.budget.used, 101);
    ck_assert_int_eq(h2c_reset(pair.client, third), 0);
    h2_pair_pump(&pair);
    ck_assert_uint_eq(pair.budget.used, 0);
}
END_TEST

START_TEST(truncated_message)
{
    uint8_t body[GRPC_FRAME_HEADER + 3] = { 0, 0, 0, 0, 100, 'a', 'b', 'c' };
    const struct h2c_result *r = raw("/amp.v1.Amp/Reverse", NULL, body, sizeof(body));
    ck_assert_int_eq(r->grpc_status, STATUS_INTERNAL);
    char msg[256];
    h2c_percent_decode(r->grpc_message, msg, sizeof(msg));
    ck_assert_str_eq(msg, "request stream ended inside a message (declared 100 bytes, got 3)");
    /* Inside the prefix, too. */
    r = raw("/amp.v1.Amp/Reverse", NULL, body, 2);
    ck_assert_int_eq(r->grpc_status, STATUS_INTERNAL);
}
END_TEST

START_TEST(two_messages_on_unary)
{
    uint8_t body[2 * GRPC_FRAME_HEADER];
    grpc_frame_header(body, 0);
    grpc_frame_header(body + GRPC_FRAME_HEADER, 0);
    const struct h2c_result *r = raw("/amp.v1.Amp/Status", NULL, body, sizeof(body));
    ck_assert_int_eq(r->grpc_status, STATUS_UNIMPLEMENTED);
    ck_assert_ptr_nonnull(strstr(r->grpc_message, "exactly one request message"));
}
END_TEST

START_TEST(no_message_on_unary)
{
    const struct h2c_result *r = raw("/amp.v1.Amp/Status", NULL, NULL, 0);
    ck_assert_int_eq(r->grpc_status, STATUS_UNIMPLEMENTED);
    ck_assert_ptr_nonnull(strstr(r->grpc_message, "got 0"));
}
END_TEST

START_TEST(compressed_message)
{
    uint8_t body[] = { 1, 0, 0, 0, 1, 0 };
    const struct h2c_result *r = raw("/amp.v1.Amp/Status", NULL, body, sizeof(body));
    ck_assert_int_eq(r->grpc_status, STATUS_INTERNAL);   /* flag 1, no grpc-encoding */
    ck_assert_ptr_nonnull(strstr(r->grpc_message, "grpc-encoding"));
    body[0] = 2;
    r = raw("/amp.v1.Amp/Status", NULL, body, sizeof(body));
    ck_assert_int_eq(r->grpc_status, STATUS_INTERNAL);
}
END_TEST

START_TEST(garbage_preface)
{
    static const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    h2_pair_inject(&pair, (const uint8_t *)junk, sizeof(junk) - 1);
    ck_assert_int_eq(pair.server_recv_rv, -1);
    /* A GOAWAY is queued, then the session wants nothing more. */
    const uint8_t *out;
    ck_assert_int_gt(h2_session_send(pair.server, &out), 0);
    while (h2_session_send(pair.server, &out) > 0) {
    }
    ck_assert(!h2_session_want_read(pair.server));
    ck_assert(!h2_session_want_write(pair.server));
}
END_TEST

START_TEST(bad_frame_after_preface)
{
    /* A good session first, then a DATA frame on stream 0: a connection
     * error; nghttp2 answers GOAWAY(PROTOCOL_ERROR). */
    h2_pair_call(&pair, "/amp.v1.Amp/Status", NULL, 0);
    static const uint8_t bad[] = { 0, 0, 1, 0x0, 0x0, 0, 0, 0, 0, 'x' };
    h2_pair_inject(&pair, bad, sizeof(bad));
    h2_pair_pump(&pair);
    uint32_t code;
    ck_assert(h2c_goaway(pair.client, &code, NULL));
    ck_assert_uint_eq(code, 1 /* PROTOCOL_ERROR */);
    ck_assert(!h2_session_want_read(pair.server));
}
END_TEST

START_TEST(streams_limit_advertised)
{
    /* max_streams is 4: the server says so in SETTINGS, and a well-behaved
     * client holds a 5th call back while 4 are open (nghttp2 refuses
     * streams over the limit from clients that do not). */
    uint8_t body[GRPC_FRAME_HEADER];
    grpc_frame_header(body, 0);
    for (int i = 0; i < 4; i++)
        h2c_request(pair.client, "/amp.v1.Amp/Status", NULL, body, 2, false);
    h2_pair_pump(&pair);
    ck_assert_uint_eq(h2c_remote_setting(pair.client, 3 /* MAX_CONCURRENT_STREAMS */), 4);
    ck_assert_uint_eq(h2_session_calls(pair.server), 4);
    int32_t id = h2c_request(pair.client, "/amp.v1.Amp/Status", NULL, body, sizeof(body), true);
    h2_pair_pump(&pair);
    ck_assert(!h2c_result(pair.client, id)->closed);
    ck_assert_uint_eq(h2_session_calls(pair.server), 4);
}
END_TEST

START_TEST(percent_encoding)
{
    char out[64];
    h2_percent_encode("a b%c\n\xc3\xbc~", out, sizeof(out));
    ck_assert_str_eq(out, "a b%25c%0A%C3%BC~");
    /* Truncation never splits an escape. */
    ck_assert_uint_eq(h2_percent_encode("%%%%", out, 8), 6);
    ck_assert_str_eq(out, "%25%25");
}
END_TEST

START_TEST(trailers_percent_encoded_on_wire)
{
    /* The health check echoes the unknown service name in its message. */
    static const uint8_t req[] = { 0x0a, 7, 'u', 0xc3, 0xbc, '%', '\n', '"', 'z' };
    const struct h2c_result *r = h2_pair_call(&pair, "/grpc.health.v1.Health/Check", req, sizeof(req));
    ck_assert_int_eq(r->grpc_status, STATUS_NOT_FOUND);
    ck_assert_str_eq(r->grpc_message, "unknown service \"u%C3%BC%25%0A\"z\"");
    char msg[64];
    h2c_percent_decode(r->grpc_message, msg, sizeof(msg));
    ck_assert_str_eq(msg, "unknown service \"u\xc3\xbc%\n\"z\"");
}
END_TEST

START_TEST(others_keep_working)
{
    /* After a string of bad calls, a good one on the same connection. */
    h2_pair_call(&pair, "/x.y/Z", NULL, 0);
    uint8_t body[] = { 1, 0, 0, 0, 1, 0 };
    raw("/amp.v1.Amp/Status", NULL, body, sizeof(body));
    const struct h2c_result *r = h2_pair_call(&pair, "/amp.v1.Amp/Status", NULL, 0);
    ck_assert_int_eq(r->grpc_status, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("h2_errors");
    const TTest *const tests[] = {
        unknown_method,
        stream_needs_header_first,
        stream_without_devices,
        bad_content_type,
        not_post,
        bad_protobuf,
        oversize,
        oversize_prefix_only,
        budget_bounds_buffering,
        truncated_message,
        two_messages_on_unary,
        no_message_on_unary,
        compressed_message,
        garbage_preface,
        bad_frame_after_preface,
        streams_limit_advertised,
        percent_encoding,
        trailers_percent_encoded_on_wire,
        others_keep_working,
        malformed_timeout,
        NULL,
    };
    TCase *tc = check_run_case(s, "core", tests);
    tcase_add_checked_fixture(tc, setup, teardown);
    return check_run(s, CK_FORK_GETENV);
}
