/* SPDX-License-Identifier: MIT */
/* test_drain.c: graceful shutdown. Calls the daemon has started when
 * SIGTERM arrives are finished and answered (a job among them), the health
 * check says NOT_SERVING meanwhile, new connections are not accepted, and
 * the daemon exits 0 having freed everything (ASan/LSan builds check). */
#include <check.h>
#include <poll.h>
#include <signal.h>
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

static struct daemon_proc ampd;

static bool ping_acked(struct h2c *c, void *arg)
{
    (void)arg;
    return h2c_pings_acked(c) > 0;
}

static bool got_goaway(struct h2c *c, void *arg)
{
    (void)arg;
    return h2c_goaway(c, NULL, NULL);
}

/* Sends the prefix and the first byte of msg, keeping the rest back. */
static int32_t start_call(struct h2c *c, const char *path, const uint8_t *msg, size_t len,
                          uint8_t *framed)
{
    grpc_frame_header(framed, len);
    memcpy(framed + GRPC_FRAME_HEADER, msg, len);
    return h2c_request_open(c, path, framed, GRPC_FRAME_HEADER + 1);
}

START_TEST(sigterm_finishes_calls_in_flight)
{
    ck_assert_int_eq(daemon_start(&ampd, NULL), 0);
    int fd = h2c_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    struct h2c *c = h2c_new();

    uint8_t hmsg[16], rmsg[128], hbuf[64], rbuf[256];
    Grpc__Health__V1__HealthCheckRequest hreq = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    size_t hlen = protobuf_c_message_pack(&hreq.base, hmsg);
    Amp__V1__ReverseRequest rreq = AMP__V1__REVERSE_REQUEST__INIT;
    rreq.data.data = (uint8_t *)"drain me";
    rreq.data.len = 8;
    size_t rlen = protobuf_c_message_pack(&rreq.base, rmsg);
    /* hlen is 0 (all defaults): send its prefix only, hold END_STREAM. */
    int32_t health = h2c_request_open(c, "/grpc.health.v1.Health/Check", hbuf, 0);
    grpc_frame_header(hbuf, hlen);
    int32_t rev = start_call(c, "/amp.v1.Amp/Reverse", rmsg, rlen, rbuf);
    ck_assert_int_eq(h2c_append(c, health, hbuf, GRPC_FRAME_HEADER, false), 0);
    h2c_ping(c);
    /* The ping's ack means the daemon has taken both calls. */
    ck_assert_int_eq(h2c_run_until(c, fd, IO_TIMEOUT_MS, ping_acked, NULL), 0);

    ck_assert_int_eq(kill(ampd.pid, SIGTERM), 0);
    ck_assert_int_eq(h2c_run_until(c, fd, IO_TIMEOUT_MS, got_goaway, NULL), 0);
    /* Listeners are closed before the GOAWAY goes out. */
    ck_assert_int_lt(h2c_connect_unix(ampd.sock_path), 0);

    /* Finish both requests: both are answered. */
    ck_assert_int_eq(h2c_append(c, health, NULL, 0, true), 0);
    ck_assert_int_eq(h2c_append(c, rev, rbuf + GRPC_FRAME_HEADER + 1, rlen - 1, true), 0);
    ck_assert_int_eq(h2c_run_fd(c, fd, IO_TIMEOUT_MS), 0);

    const struct h2c_result *r = h2c_result(c, health);
    ck_assert_int_eq(r->grpc_status, 0);
    ck_assert_int_eq(h2c_health_status(r),
                     GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING);

    r = h2c_result(c, rev);
    ck_assert_int_eq(r->grpc_status, 0);
    const uint8_t *m;
    size_t len;
    ck_assert_int_eq(h2c_message(r, &m, &len), 0);
    Amp__V1__DataReply *reply = amp__v1__data_reply__unpack(NULL, len, m);
    ck_assert_ptr_nonnull(reply);
    ck_assert_uint_eq(reply->data.len, 8);
    ck_assert(memcmp(reply->data.data, "em niard", 8) == 0);
    amp__v1__data_reply__free_unpacked(reply, NULL);

    /* With its calls done, the daemon closes the connection and exits. */
    uint8_t buf[256];
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    while (poll(&pfd, 1, IO_TIMEOUT_MS) == 1 && recv(fd, buf, sizeof(buf), 0) > 0) {
    }
    close(fd);
    h2c_free(c);
    ck_assert_int_eq(daemon_wait(&ampd), 0);
}
END_TEST

START_TEST(drain_timeout_bounds_a_stuck_call)
{
    /* A call whose client never finishes its request: the drain gives up
     * after --drain-timeout, answers it UNAVAILABLE (a status, not a
     * broken connection), closes the connection, and still exits 0. */
    static const char *const args[] = { "--drain-timeout", "1", NULL };
    ck_assert_int_eq(daemon_start(&ampd, args), 0);
    int fd = h2c_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    struct h2c *c = h2c_new();
    uint8_t body[GRPC_FRAME_HEADER] = { 0, 0, 0, 0, 9 };
    int32_t id = h2c_request_open(c, "/amp.v1.Amp/Reverse", body, sizeof(body));
    h2c_ping(c);
    ck_assert_int_eq(h2c_run_until(c, fd, IO_TIMEOUT_MS, ping_acked, NULL), 0);
    ck_assert_int_eq(kill(ampd.pid, SIGTERM), 0);
    /* The call ends with a status, then the daemon closes the connection. */
    ck_assert_int_ge(h2c_run_fd(c, fd, IO_TIMEOUT_MS), 0);
    const struct h2c_result *r = h2c_result(c, id);
    ck_assert(r->closed);
    ck_assert_int_eq(r->grpc_status, STATUS_UNAVAILABLE);
    char msg[H2C_MESSAGE_MAX];
    h2c_percent_decode(r->grpc_message, msg, sizeof(msg));
    ck_assert_str_eq(msg, "the daemon is shutting down: --drain-timeout (1 s) passed");
    uint8_t buf[256];
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    while (poll(&pfd, 1, IO_TIMEOUT_MS) == 1 && recv(fd, buf, sizeof(buf), 0) > 0) {
    }
    for (int i = 0; i < IO_TIMEOUT_MS / 10 && daemon_alive(&ampd); i++)
        usleep(10000);
    ck_assert(!daemon_alive(&ampd));
    close(fd);
    h2c_free(c);
    ck_assert_int_eq(daemon_wait(&ampd), 0);
}
END_TEST

START_TEST(sigterm_idle)
{
    ck_assert_int_eq(daemon_start(&ampd, NULL), 0);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("drain");
    const TTest *const tests[] = {
        sigterm_idle,
        sigterm_finishes_calls_in_flight,
        drain_timeout_bounds_a_stuck_call,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 600);
    return check_run(s, CK_FORK_GETENV);
}
