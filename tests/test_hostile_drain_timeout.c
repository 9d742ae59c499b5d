/* SPDX-License-Identifier: MIT */
/* test_hostile_drain_timeout.c: issue 10, reproducer 5. When
 * --drain-timeout passes, a call still open is not cut off by a bare
 * connection close: one whose request never finished gets trailers with
 * grpc-status UNAVAILABLE naming --drain-timeout, one whose reply is still
 * being sent (the client reads nothing) is reset with RST_STREAM(CANCEL).
 * The GOAWAY went out when the drain began, and the daemon exits 0. */
#include <check.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "amp.pb-c.h"
#include "check_run.h"
#include "grpc_frame.h"
#include "h2_client.h"
#include "hostile.h"
#include "status.h"

#define DRAIN_TIMEOUT_MS 1000
#define FILL_COUNT (4 * 1024 * 1024)   /* int32: a 16 MiB reply */

static struct daemon_proc ampd;

static bool reply_started(struct h2c *c, void *arg)
{
    const struct h2c_result *r = h2c_result(c, *(int32_t *)arg);
    return r->body_len > 0 || r->closed;
}

START_TEST(open_calls_get_a_status_at_drain_timeout)
{
    static const char *const args[] = { "--drain-timeout", "1", NULL };
    hostile_start(&ampd, args);
    int fd = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    struct h2c *c = h2c_new();
    /* A Reverse whose message never finishes. */
    uint8_t prefix[GRPC_FRAME_HEADER + 1];
    grpc_frame_header(prefix, 9);
    prefix[GRPC_FRAME_HEADER] = 0x0a;
    int32_t open_call = h2c_request_open(c, "/amp.v1.Amp/Reverse", prefix, sizeof prefix);
    /* A Fill whose 16 MiB reply is being sent when the drain times out. */
    Amp__V1__FillParams fp = AMP__V1__FILL_PARAMS__INIT;
    fp.type = AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_INT32;
    fp.count = FILL_COUNT;
    Amp__V1__FillRequest freq = AMP__V1__FILL_REQUEST__INIT;
    freq.params = &fp;
    uint8_t fmsg[64];
    int32_t sending = h2c_call(c, "/amp.v1.Amp/Fill", fmsg, protobuf_c_message_pack(&freq.base, fmsg));
    ck_assert_int_eq(h2c_run_until(c, fd, HOSTILE_IO_MS, reply_started, &sending), 0);
    ck_assert(!h2c_result(c, sending)->closed);
    hostile_assert_served(ampd.address);

    /* From here the client reads nothing until the drain has timed out. */
    ck_assert_int_eq(kill(ampd.pid, SIGTERM), 0);
    hostile_sleep_ms(DRAIN_TIMEOUT_MS + DRAIN_TIMEOUT_MS / 2);
    int end = h2c_run_fd(c, fd, HOSTILE_IO_MS);
    ck_assert_int_ge(end, 0);

    const struct h2c_result *r = h2c_result(c, open_call);
    char m[H2C_MESSAGE_MAX];
    h2c_percent_decode(r->grpc_message, m, sizeof m);
    ck_assert_msg(r->closed, "the unfinished call got no status before the connection closed");
    ck_assert_msg(r->grpc_status == STATUS_UNAVAILABLE, "unfinished call: status %d rst %u: %s",
                  r->grpc_status, r->rst_code, m);
    ck_assert_ptr_nonnull(strstr(m, "--drain-timeout"));

    r = h2c_result(c, sending);
    ck_assert_msg(r->closed, "the call being answered was not reset before the connection closed "
                             "(%zu reply bytes read)", r->body_len);
    ck_assert_msg(r->rst_code == HOSTILE_CANCEL && r->grpc_status == -1,
                  "call being answered: rst %u, status %d", r->rst_code, r->grpc_status);
    ck_assert(h2c_goaway(c, NULL, NULL));
    close(fd);
    h2c_free(c);
    ck_assert_int_eq(daemon_wait(&ampd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hostile_drain_timeout");
    const TTest *const tests[] = {
        open_calls_get_a_status_at_drain_timeout,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 60);
    return check_run(s, CK_FORK_GETENV);
}
