/* SPDX-License-Identifier: MIT */
/* test_deadline.c: a real ampd honours the client's grpc-timeout. A unary
 * job still running when its deadline passes, and a stream call whose
 * client goes quiet, are answered DEADLINE_EXCEEDED (their device work is
 * cancelled), calls with time to spare are not, and the daemon keeps
 * serving and exits cleanly (under ASan: nothing leaked). */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "amp.pb-c.h"
#include "daemon_proc.h"
#include "h2_client.h"
#include "status.h"
#include "stream_msg.h"

#define IO_TIMEOUT_MS 60000
/* Fill of 8M uint32: 32 MiB made and copied back, milliseconds of work
 * even on a fast device, far more than a 1 ms deadline. */
#define BIG_FILL_COUNT (8u << 20)

static struct daemon_proc ampd;

static uint8_t *pack(const ProtobufCMessage *m, size_t *len)
{
    *len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(*len + 1);
    ck_assert_ptr_nonnull(buf);
    protobuf_c_message_pack(m, buf);
    return buf;
}

/* One Fill call with grpc-timeout (NULL: none) on a fresh connection; the
 * result's status, and its decoded message into msg. */
static int fill_call(const char *timeout, uint64_t count, char *msg, size_t msglen)
{
    Amp__V1__FillParams params = AMP__V1__FILL_PARAMS__INIT;
    params.type = AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_UINT32;
    params.count = count;
    params.step = 1;
    Amp__V1__FillRequest req = AMP__V1__FILL_REQUEST__INIT;
    req.params = &params;
    size_t len;
    uint8_t *body = pack(&req.base, &len);
    int fd = h2c_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    struct h2c *c = h2c_new();
    h2c_set_timeout(c, timeout);
    int32_t id = h2c_call(c, "/amp.v1.Amp/Fill", body, len);
    ck_assert_int_eq(h2c_run_fd(c, fd, IO_TIMEOUT_MS), 0);
    const struct h2c_result *r = h2c_result(c, id);
    int status = r->grpc_status;
    h2c_percent_decode(r->grpc_message, msg, msglen);
    h2c_free(c);
    close(fd);
    free(body);
    return status;
}

START_TEST(unary_past_deadline)
{
    ck_assert_int_eq(daemon_start(&ampd, NULL), 0);
    char msg[H2C_MESSAGE_MAX];
    for (int round = 0; round < 3; round++) {
        ck_assert_int_eq(fill_call("1m", BIG_FILL_COUNT, msg, sizeof msg),
                         STATUS_DEADLINE_EXCEEDED);
        ck_assert_msg(strstr(msg, "deadline exceeded") && strstr(msg, "1 ms"), "message: %s", msg);
    }
    /* With time to spare the same job is answered, and so is one with no
     * deadline: the cancelled ones left nothing behind. */
    ck_assert_int_eq(fill_call("60S", BIG_FILL_COUNT, msg, sizeof msg), STATUS_OK);
    ck_assert_int_eq(fill_call(NULL, 1000, msg, sizeof msg), STATUS_OK);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

/* A stream call sends its header and then nothing: its deadline ends it,
 * its device side is freed, and the connection serves the next call. */
START_TEST(quiet_stream_past_deadline)
{
    ck_assert_int_eq(daemon_start(&ampd, NULL), 0);
    size_t len;
    uint8_t *body = stream_histogram_header(&len);
    int fd = h2c_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    struct h2c *c = h2c_new();
    h2c_set_timeout(c, "100m");
    int32_t id = h2c_request_open(c, "/amp.v1.Amp/Stream", body, len);
    ck_assert_int_eq(h2c_run_fd(c, fd, IO_TIMEOUT_MS), 0);
    const struct h2c_result *r = h2c_result(c, id);
    ck_assert_int_eq(r->grpc_status, STATUS_DEADLINE_EXCEEDED);
    char text[H2C_MESSAGE_MAX];
    h2c_percent_decode(r->grpc_message, text, sizeof text);
    ck_assert_msg(strstr(text, "100 ms") != NULL, "message: %s", text);

    h2c_set_timeout(c, NULL);
    int32_t id2 = h2c_call(c, "/amp.v1.Amp/Status", NULL, 0);
    ck_assert_int_eq(h2c_run_fd(c, fd, IO_TIMEOUT_MS), 0);
    ck_assert_int_eq(h2c_result(c, id2)->grpc_status, STATUS_OK);
    h2c_free(c);
    close(fd);
    free(body);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("deadline");
    const TTest *const tests[] = {
        unary_past_deadline,
        quiet_stream_past_deadline,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 600);
    return check_run(s, CK_FORK_GETENV);
}
