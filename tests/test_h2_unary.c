/* SPDX-License-Identifier: MIT */
/* test_h2_unary.c: well-formed gRPC calls through the h2 layer and the rpc
 * layer, driven by an in-memory nghttp2 client (no sockets, no devices):
 * response shape (headers, one message, grpc-status 0 trailers), health
 * checks, Status, ListDevices, validation answers, several calls at once. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "amp.pb-c.h"
#include "conn_limit.h"
#include "grpc/health/v1/health.pb-c.h"
#include "grpc_frame.h"
#include "h2_pair.h"

#define MAX_MSG (1 << 20)

static uint8_t *pack(const ProtobufCMessage *m, size_t *len)
{
    *len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(*len + 1);
    protobuf_c_message_pack(m, buf);
    return buf;
}

static const struct h2c_result *health(struct h2_pair *p, const char *service)
{
    Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    req.service = (char *)service;
    size_t len;
    uint8_t *buf = pack(&req.base, &len);
    const struct h2c_result *r = h2_pair_call(p, "/grpc.health.v1.Health/Check", buf, len);
    free(buf);
    return r;
}

START_TEST(health_serving)
{
    struct h2_pair p;
    h2_pair_init(&p, MAX_MSG, 32);
    const struct h2c_result *r = health(&p, "");
    ck_assert(r->closed);
    ck_assert_int_eq(r->http_status, 200);
    ck_assert_str_eq(r->content_type, "application/grpc");
    ck_assert(!r->trailers_only);
    ck_assert_int_eq(r->grpc_status, 0);
    ck_assert_int_eq(h2c_health_status(r), GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING);
    r = health(&p, "amp.v1.Amp");
    ck_assert_int_eq(h2c_health_status(r), GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING);
    p.env.draining = true;
    r = health(&p, "");
    ck_assert_int_eq(h2c_health_status(r),
                     GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING);
    ck_assert_uint_eq(h2_session_calls(p.server), 0);
    h2_pair_free(&p);
}
END_TEST

/* A tiny call's whole reply (HEADERS, the message, the trailers) comes out
 * of one h2_session_sendv(): one write, one wake-up of the client. */
START_TEST(tiny_reply_in_one_write)
{
    struct h2_pair p;
    h2_pair_init(&p, MAX_MSG, 32);
    health(&p, "");   /* prefaces and SETTINGS both ways, out of the way */
    Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    req.service = "";
    size_t len;
    uint8_t *buf = pack(&req.base, &len);
    int32_t id = h2c_call(p.client, "/grpc.health.v1.Health/Check", buf, len);
    free(buf);
    const uint8_t *b;
    ssize_t n;
    while ((n = h2c_send(p.client, &b)) > 0)
        h2_pair_inject(&p, b, (size_t)n);
    struct iovec iov[H2_SEND_IOV];
    ck_assert_int_eq(h2_session_sendv(p.server, iov), 1);
    h2c_recv(p.client, iov[0].iov_base, iov[0].iov_len);
    h2_session_written(p.server);
    const struct h2c_result *r = h2c_result(p.client, id);
    ck_assert(r->closed);
    ck_assert_int_eq(r->grpc_status, 0);
    ck_assert_int_eq(h2c_health_status(r),
                     GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING);
    ck_assert_int_eq(h2_session_sendv(p.server, iov), 0);
    h2_pair_free(&p);
}
END_TEST

START_TEST(health_unknown_service)
{
    struct h2_pair p;
    h2_pair_init(&p, MAX_MSG, 32);
    const struct h2c_result *r = health(&p, "no.such.Service");
    ck_assert(r->trailers_only);
    ck_assert_int_eq(r->grpc_status, STATUS_NOT_FOUND);
    ck_assert_str_eq(r->grpc_message, "unknown service \"no.such.Service\"");
    h2_pair_free(&p);
}
END_TEST

START_TEST(status_reply)
{
    struct h2_pair p;
    h2_pair_init(&p, MAX_MSG, 32);
    struct conn_limit limit;   /* three connections open, daemon-wide */
    conn_limit_init(&limit, 16, 16, 16);
    bool marked;
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(conn_limit_admit(&limit, "uid 1", true, &marked), CONN_LIMIT_OK);
    p.env.conn_limit = &limit;
    Amp__V1__StatusRequest req = AMP__V1__STATUS_REQUEST__INIT;
    size_t len;
    uint8_t *buf = pack(&req.base, &len);
    const struct h2c_result *r = h2_pair_call(&p, "/amp.v1.Amp/Status", buf, len);
    free(buf);
    ck_assert_int_eq(r->grpc_status, 0);
    const uint8_t *msg;
    ck_assert_int_eq(h2c_message(r, &msg, &len), 0);
    Amp__V1__StatusReply *st = amp__v1__status_reply__unpack(NULL, len, msg);
    ck_assert_ptr_nonnull(st);
    ck_assert_str_eq(st->version, AMP_VERSION);
    ck_assert_uint_eq(st->connections, 3);
    ck_assert_uint_eq(st->jobs_in_flight, 0);
    amp__v1__status_reply__free_unpacked(st, NULL);
    h2_pair_free(&p);
    for (int i = 0; i < 3; i++) {
        conn_limit_leave_peer(&limit, "uid 1", false);
        conn_limit_leave(&limit);
    }
    conn_limit_destroy(&limit);
}
END_TEST

START_TEST(list_devices_empty)
{
    struct h2_pair p;
    h2_pair_init(&p, MAX_MSG, 32);
    /* An empty request message is zero bytes: still one gRPC message. */
    const struct h2c_result *r = h2_pair_call(&p, "/amp.v1.Amp/ListDevices", NULL, 0);
    ck_assert_int_eq(r->grpc_status, 0);
    const uint8_t *msg;
    size_t len;
    ck_assert_int_eq(h2c_message(r, &msg, &len), 0);
    ck_assert_uint_eq(len, 0);
    h2_pair_free(&p);
}
END_TEST

START_TEST(job_without_devices_is_unavailable)
{
    struct h2_pair p;
    h2_pair_init(&p, MAX_MSG, 32);
    Amp__V1__ReverseRequest req = AMP__V1__REVERSE_REQUEST__INIT;
    uint8_t data[] = "abc";
    req.data.data = data;
    req.data.len = 3;
    size_t len;
    uint8_t *buf = pack(&req.base, &len);
    const struct h2c_result *r = h2_pair_call(&p, "/amp.v1.Amp/Reverse", buf, len);
    free(buf);
    ck_assert(r->trailers_only);
    ck_assert_int_eq(r->grpc_status, STATUS_UNAVAILABLE);
    h2_pair_free(&p);
}
END_TEST

START_TEST(validation_before_devices)
{
    struct h2_pair p;
    h2_pair_init(&p, MAX_MSG, 32);
    Amp__V1__TransformRequest req = AMP__V1__TRANSFORM_REQUEST__INIT;
    size_t len;
    uint8_t *buf = pack(&req.base, &len);
    const struct h2c_result *r = h2_pair_call(&p, "/amp.v1.Amp/Transform", buf, len);
    free(buf);
    ck_assert_int_eq(r->grpc_status, STATUS_INVALID_ARGUMENT);
    ck_assert_str_eq(r->grpc_message, "params.op is required");
    h2_pair_free(&p);
}
END_TEST

START_TEST(content_type_variants)
{
    static const char *const types[] = { "application/grpc+proto", "application/grpc;charset=x" };
    for (size_t i = 0; i < 2; i++) {
        struct h2_pair p;
        h2_pair_init(&p, MAX_MSG, 32);
        uint8_t body[GRPC_FRAME_HEADER];
        grpc_frame_header(body, 0);
        int32_t id = h2c_request(p.client, "/amp.v1.Amp/Status", types[i], body, sizeof(body), true);
        h2_pair_pump(&p);
        ck_assert_int_eq(h2c_result(p.client, id)->grpc_status, 0);
        h2_pair_free(&p);
    }
}
END_TEST

START_TEST(many_calls_at_once)
{
    struct h2_pair p;
    h2_pair_init(&p, MAX_MSG, 32);
    int32_t ids[20];
    for (int i = 0; i < 20; i++)
        ids[i] = h2c_call(p.client, "/amp.v1.Amp/Status", NULL, 0);
    h2_pair_pump(&p);
    for (int i = 0; i < 20; i++) {
        const struct h2c_result *r = h2c_result(p.client, ids[i]);
        ck_assert(r->closed);
        ck_assert_int_eq(r->grpc_status, 0);
    }
    ck_assert_uint_eq(h2_session_calls(p.server), 0);
    h2_pair_free(&p);
}
END_TEST

START_TEST(request_over_many_frames)
{
    /* 40 KB of request: several DATA frames, reassembled into one message. */
    struct h2_pair p;
    h2_pair_init(&p, MAX_MSG, 32);
    char *service = malloc(40001);
    memset(service, 'x', 40000);
    service[40000] = '\0';
    const struct h2c_result *r = health(&p, service);
    ck_assert_int_eq(r->grpc_status, STATUS_NOT_FOUND);
    ck_assert(strncmp(r->grpc_message, "unknown service \"xxxx", 21) == 0);
    free(service);
    h2_pair_free(&p);
}
END_TEST

START_TEST(open_call_freed_with_session)
{
    /* Half a message and no END_STREAM: the call stays open, unanswered,
     * and freeing the session releases it (ASan checks the leak). */
    struct h2_pair p;
    h2_pair_init(&p, MAX_MSG, 32);
    uint8_t body[GRPC_FRAME_HEADER + 2];
    grpc_frame_header(body, 10);
    int32_t id = h2c_request(p.client, "/grpc.health.v1.Health/Check", NULL, body, sizeof(body), false);
    h2_pair_pump(&p);
    ck_assert(!h2c_result(p.client, id)->closed);
    ck_assert_uint_eq(h2_session_calls(p.server), 1);
    h2_pair_free(&p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("h2_unary");
    const TTest *const tests[] = {
        health_serving,
        tiny_reply_in_one_write,
        health_unknown_service,
        status_reply,
        list_devices_empty,
        job_without_devices_is_unavailable,
        validation_before_devices,
        content_type_variants,
        many_calls_at_once,
        request_over_many_frames,
        open_call_freed_with_session,
        NULL,
    };
    check_run_case(s, "core", tests);
    return check_run(s, CK_FORK_GETENV);
}
