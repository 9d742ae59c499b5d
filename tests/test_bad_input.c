/* SPDX-License-Identifier: MIT */
/* test_bad_input.c: a real ampd over a real Unix socket, fed what a broken
 * or hostile client sends: not HTTP/2 at all, broken frames, lying gRPC
 * length prefixes, undecodable protobuf, unknown methods, oversize
 * messages, clients that vanish mid-call. After each, a good client must
 * still be served, and SIGTERM must still end the daemon with status 0
 * (under ASan, that also means nothing leaked). */
#include <check.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check_run.h"
#include "amp.pb-c.h"
#include "daemon_proc.h"
#include "grpc/health/v1/health.pb-c.h"
#include "grpc_frame.h"
#include "h2_client.h"
#include "status.h"

#define IO_TIMEOUT_MS 60000
#define SMALL_LIMIT "4096"

static struct daemon_proc ampd;

static void start(void)
{
    static const char *const args[] = { "--max-message-bytes", SMALL_LIMIT, NULL };
    ck_assert_int_eq(daemon_start(&ampd, args), 0);
}

static void stop_clean(void)
{
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}

static int connect_daemon(void)
{
    int fd = h2c_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    return fd;
}

/* One call on a fresh connection; returns the client (caller frees) and
 * its stream id through *id. */
static struct h2c *call_raw(const char *path, const uint8_t *body, size_t len, int32_t *id)
{
    int fd = connect_daemon();
    struct h2c *c = h2c_new();
    *id = h2c_request(c, path, NULL, body, len, true);
    ck_assert_int_eq(h2c_run_fd(c, fd, IO_TIMEOUT_MS), 0);
    close(fd);
    return c;
}

/* A health check on a new connection must say SERVING. */
static void assert_serving(void)
{
    Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    uint8_t msg[64];
    size_t len = protobuf_c_message_pack(&req.base, msg);
    int fd = connect_daemon();
    struct h2c *c = h2c_new();
    int32_t id = h2c_call(c, "/grpc.health.v1.Health/Check", msg, len);
    ck_assert_int_eq(h2c_run_fd(c, fd, IO_TIMEOUT_MS), 0);
    const struct h2c_result *r = h2c_result(c, id);
    ck_assert_int_eq(r->grpc_status, 0);
    ck_assert_int_eq(h2c_health_status(r),
                     GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING);
    h2c_free(c);
    close(fd);
}

/* Reads until the daemon closes the connection; returns the bytes seen. */
static size_t read_until_closed(int fd)
{
    uint8_t buf[4096];
    size_t total = 0;
    for (;;) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        ck_assert_int_eq(poll(&pfd, 1, IO_TIMEOUT_MS), 1);
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n <= 0)
            return total;
        total += (size_t)n;
    }
}

START_TEST(garbage_preface)
{
    start();
    int fd = connect_daemon();
    static const char junk[] = "GET / HTTP/1.1\r\nHost: ampd\r\n\r\n";
    ck_assert_int_eq(send(fd, junk, sizeof(junk) - 1, 0), (ssize_t)sizeof(junk) - 1);
    /* SETTINGS then GOAWAY come back, then the connection closes. */
    ck_assert_uint_gt(read_until_closed(fd), 0);
    close(fd);
    assert_serving();
    stop_clean();
}
END_TEST

START_TEST(random_bytes_after_preface)
{
    start();
    srand(7);
    for (int round = 0; round < 20; round++) {
        int fd = connect_daemon();
        static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
        send(fd, preface, sizeof(preface) - 1, MSG_NOSIGNAL);
        uint8_t junk[512];
        for (size_t i = 0; i < sizeof(junk); i++)
            junk[i] = (uint8_t)rand();
        send(fd, junk, sizeof(junk), MSG_NOSIGNAL);
        read_until_closed(fd);
        close(fd);
    }
    assert_serving();
    stop_clean();
}
END_TEST

START_TEST(lying_length_prefix)
{
    start();
    /* Declares 100 bytes, sends 10, ends the stream: an error, not a hang. */
    uint8_t body[GRPC_FRAME_HEADER + 10] = { 0 };
    grpc_frame_header(body, 100);
    int32_t id;
    struct h2c *c = call_raw("/amp.v1.Amp/Reverse", body, sizeof(body), &id);
    const struct h2c_result *r = h2c_result(c, id);
    ck_assert_int_eq(r->grpc_status, STATUS_INTERNAL);
    ck_assert_ptr_nonnull(strstr(r->grpc_message, "declared 100 bytes, got 10"));
    h2c_free(c);
    assert_serving();
    stop_clean();
}
END_TEST

START_TEST(lying_prefix_then_hang_up)
{
    start();
    /* The stream stays open waiting for 90 bytes that never come; the
     * client disconnects. The daemon frees the half-read call. */
    int fd = connect_daemon();
    struct h2c *c = h2c_new();
    uint8_t body[GRPC_FRAME_HEADER + 10] = { 0 };
    grpc_frame_header(body, 100);
    h2c_request_open(c, "/amp.v1.Amp/Reverse", body, sizeof(body));
    h2c_ping(c);
    ck_assert_int_eq(h2c_flush(c, fd), 0);
    close(fd);
    h2c_free(c);
    assert_serving();
    stop_clean();
}
END_TEST

START_TEST(undecodable_protobuf)
{
    start();
    static const uint8_t bad[] = { 0, 0, 0, 0, 3, 0x0a, 0x7f, 'x' };
    int32_t id;
    struct h2c *c = call_raw("/amp.v1.Amp/Reverse", bad, sizeof(bad), &id);
    const struct h2c_result *r = h2c_result(c, id);
    ck_assert_int_eq(r->grpc_status, STATUS_INTERNAL);
    ck_assert_ptr_nonnull(strstr(r->grpc_message, "amp.v1.ReverseRequest"));
    h2c_free(c);
    assert_serving();
    stop_clean();
}
END_TEST

START_TEST(unknown_method)
{
    start();
    uint8_t body[GRPC_FRAME_HEADER];
    grpc_frame_header(body, 0);
    int32_t id;
    struct h2c *c = call_raw("/amp.v1.Amp/Explode", body, sizeof(body), &id);
    const struct h2c_result *r = h2c_result(c, id);
    ck_assert_int_eq(r->grpc_status, STATUS_UNIMPLEMENTED);
    ck_assert_str_eq(r->grpc_message, "unknown method /amp.v1.Amp/Explode");
    h2c_free(c);
    stop_clean();
}
END_TEST

START_TEST(oversize_message)
{
    start();
    size_t len = 4097;
    uint8_t *body = calloc(1, GRPC_FRAME_HEADER + len);
    grpc_frame_header(body, len);
    int32_t id;
    struct h2c *c = call_raw("/amp.v1.Amp/Reverse", body, GRPC_FRAME_HEADER + len, &id);
    const struct h2c_result *r = h2c_result(c, id);
    ck_assert_int_eq(r->grpc_status, STATUS_RESOURCE_EXHAUSTED);
    char msg[256];
    h2c_percent_decode(r->grpc_message, msg, sizeof(msg));
    ck_assert_str_eq(msg, "request message of 4097 bytes exceeds --max-message-bytes (4096)");
    h2c_free(c);
    free(body);
    assert_serving();
    stop_clean();
}
END_TEST

START_TEST(disconnect_while_job_runs)
{
    start();
    /* Several Reverse jobs, then hang up before the answers: the jobs
     * finish on the runner and find their calls gone. */
    Amp__V1__ReverseRequest req = AMP__V1__REVERSE_REQUEST__INIT;
    uint8_t data[3000];
    memset(data, 'q', sizeof(data));
    req.data.data = data;
    req.data.len = sizeof(data);
    uint8_t msg[4096];
    size_t len = protobuf_c_message_pack(&req.base, msg);
    for (int round = 0; round < 5; round++) {
        int fd = connect_daemon();
        struct h2c *c = h2c_new();
        for (int i = 0; i < 8; i++)
            h2c_call(c, "/amp.v1.Amp/Reverse", msg, len);
        h2c_ping(c);
        /* Wait until the daemon has seen every call (the ping's ack). */
        ck_assert_int_eq(h2c_flush(c, fd), 0);
        uint8_t buf[65536];
        while (h2c_pings_acked(c) == 0) {
            struct pollfd pfd = { .fd = fd, .events = POLLIN };
            ck_assert_int_eq(poll(&pfd, 1, IO_TIMEOUT_MS), 1);
            ssize_t n = recv(fd, buf, sizeof(buf), 0);
            ck_assert_int_gt(n, 0);
            h2c_recv(c, buf, (size_t)n);
        }
        close(fd);
        h2c_free(c);
    }
    assert_serving();
    stop_clean();
}
END_TEST

START_TEST(reset_stream_mid_request)
{
    start();
    /* Half a message, then RST_STREAM(CANCEL) on the same connection: the
     * call is freed, and the connection goes on serving. */
    int fd = connect_daemon();
    struct h2c *c = h2c_new();
    uint8_t body[GRPC_FRAME_HEADER + 1] = { 0 };
    grpc_frame_header(body, 50);
    int32_t id = h2c_request_open(c, "/grpc.health.v1.Health/Check", body, sizeof(body));
    ck_assert_int_eq(h2c_flush(c, fd), 0);
    ck_assert_int_eq(h2c_reset(c, id), 0);
    int32_t id2 = h2c_call(c, "/amp.v1.Amp/Status", NULL, 0);
    ck_assert_int_eq(h2c_run_fd(c, fd, IO_TIMEOUT_MS), 0);
    ck_assert_int_eq(h2c_result(c, id2)->grpc_status, 0);
    close(fd);
    h2c_free(c);
    stop_clean();
}
END_TEST

START_TEST(half_close_mid_request)
{
    start();
    /* Half a message, then the client shuts its socket's write side: the
     * daemon sees EOF, closes the connection and frees the call. */
    int fd = connect_daemon();
    struct h2c *c = h2c_new();
    uint8_t body[GRPC_FRAME_HEADER + 1] = { 0 };
    grpc_frame_header(body, 50);
    h2c_request_open(c, "/grpc.health.v1.Health/Check", body, sizeof(body));
    ck_assert_int_eq(h2c_flush(c, fd), 0);
    shutdown(fd, SHUT_WR);
    read_until_closed(fd);
    close(fd);
    h2c_free(c);
    assert_serving();
    stop_clean();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bad_input");
    const TTest *const tests[] = {
        garbage_preface,
        random_bytes_after_preface,
        lying_length_prefix,
        lying_prefix_then_hang_up,
        undecodable_protobuf,
        unknown_method,
        oversize_message,
        disconnect_while_job_runs,
        reset_stream_mid_request,
        half_close_mid_request,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 600);
    return check_run(s, CK_FORK_GETENV);
}
