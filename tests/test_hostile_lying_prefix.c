/* SPDX-License-Identifier: MIT */
/* test_hostile_lying_prefix.c: gRPC length prefixes that do not match
 * what is sent on a unary call. Declared longer than sent, then the
 * request ends: INTERNAL, naming both counts. Declared shorter, so the
 * rest is a cut second prefix: INTERNAL for the cut message. Declared
 * shorter, the rest a whole second message: UNIMPLEMENTED (a unary method
 * takes one). Declared 4 GiB - 1: RESOURCE_EXHAUSTED naming
 * --max-message-bytes, at once. The daemon serves on and keeps nothing. */
#include <check.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "grpc_frame.h"
#include "h2_client.h"
#include "hostile.h"
#include "status.h"

#define MAX_MESSAGE "65536"

static struct daemon_proc ampd;

struct lie {
    uint8_t body[32];
    size_t len;
    bool end_stream;
    int status;
    const char *message;
};

static const struct lie lies[] = {
    /* Declares 100, sends 10 (ReverseRequest{data: 8 bytes}). */
    { { 0, 0, 0, 0, 100, 0x0a, 8, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h' }, 15, true,
      STATUS_INTERNAL, "request stream ended inside a message (declared 100 bytes, got 10)" },
    /* Declares 3 (ReverseRequest{data: "x"}), then 3 bytes of a prefix. */
    { { 0, 0, 0, 0, 3, 0x0a, 1, 'x', 0, 0, 0 }, 11, true, STATUS_INTERNAL,
      "request stream ended inside a message (declared 0 bytes, got 0)" },
    /* Declares 3, then a whole second message. */
    { { 0, 0, 0, 0, 3, 0x0a, 1, 'x', 0, 0, 0, 0, 2, 0x0a, 0 }, 15, true, STATUS_UNIMPLEMENTED,
      "unary method needs exactly one request message, got more" },
    /* Declares 4 GiB - 1 and leaves the request open. */
    { { 0, 0xff, 0xff, 0xff, 0xff, 0x0a }, 6, false, STATUS_RESOURCE_EXHAUSTED,
      "request message of 4294967295 bytes exceeds --max-message-bytes (" MAX_MESSAGE ")" },
};

#define NLIES ((int)(sizeof lies / sizeof lies[0]))

START_TEST(lying_prefixes_answered)
{
    static const char *const args[] = { "--max-message-bytes", MAX_MESSAGE, NULL };
    long base = hostile_start(&ampd, args);
    int fd = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    struct h2c *c = h2c_new();
    int32_t ids[NLIES];
    for (int i = 0; i < NLIES; i++)
        ids[i] = h2c_request(c, "/amp.v1.Amp/Reverse", NULL, lies[i].body, lies[i].len,
                             lies[i].end_stream);
    ck_assert_int_eq(h2c_run_fd(c, fd, HOSTILE_IO_MS), 0);
    for (int i = 0; i < NLIES; i++) {
        const struct h2c_result *r = h2c_result(c, ids[i]);
        char m[H2C_MESSAGE_MAX];
        h2c_percent_decode(r->grpc_message, m, sizeof m);
        ck_assert_msg(r->grpc_status == lies[i].status, "lie %d: status %d: %s", i,
                      r->grpc_status, m);
        ck_assert_str_eq(m, lies[i].message);
    }
    close(fd);
    h2c_free(c);
    ck_assert(hostile_wait_quiet(ampd.address, 1, HOSTILE_IO_MS));
    hostile_assert_served(ampd.address);
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hostile_lying_prefix");
    const TTest *const tests[] = {
        lying_prefixes_answered,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 60);
    return check_run(s, CK_FORK_GETENV);
}
