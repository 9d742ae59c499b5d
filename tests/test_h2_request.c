/* SPDX-License-Identifier: MIT */
/* test_h2_request.c: a real ampd over a real Unix socket, sent raw HTTP/2
 * requests that test the request rules of daemon/h2_request.c: a request
 * with no :authority (gRPC makes it optional; HAProxy's gRPC health checks
 * send none) or a host header in its place is served, and each malformed
 * request (a rule of RFC 9113 section 8 broken) is reset with
 * PROTOCOL_ERROR while the connection goes on serving. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "daemon_proc.h"
#include "grpc/health/v1/health.pb-c.h"
#include "h2_client.h"

#define IO_TIMEOUT_MS 60000
#define HEALTH_CHECK "/grpc.health.v1.Health/Check"
#define PROTOCOL_ERROR 1

static struct daemon_proc ampd;
static struct h2c *client;
static int fd = -1;

static void setup(void)
{
    ck_assert_int_eq(daemon_start(&ampd, NULL), 0);
    fd = h2c_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    client = h2c_new();
}

static void teardown(void)
{
    h2c_free(client);
    close(fd);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}

/* Sends one request with exactly these fields and an empty health check
 * request as its body; returns its result once the stream closed. */
static const struct h2c_result *send_fields(const char *const *fields, size_t nfields)
{
    static const uint8_t empty_message[5] = { 0 };
    int32_t id = h2c_request_fields(client, fields, nfields, empty_message, sizeof empty_message);
    ck_assert_int_gt(id, 0);
    ck_assert_int_eq(h2c_run_fd(client, fd, IO_TIMEOUT_MS), 0);
    const struct h2c_result *r = h2c_result(client, id);
    ck_assert(r->closed);
    return r;
}

static void assert_serving(const struct h2c_result *r)
{
    ck_assert_int_eq(r->http_status, 200);
    ck_assert_int_eq(r->grpc_status, 0);
    ck_assert_int_eq(h2c_health_status(r),
                     GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING);
}

#define NFIELDS(f) (sizeof(f) / sizeof((f)[0]) / 2)

START_TEST(no_authority_is_served)
{
    /* What HAProxy 2.6's gRPC health check sends: no :authority, no host. */
    static const char *const f[] = {
        ":method", "POST", ":scheme", "http", ":path", HEALTH_CHECK,
        "content-type", "application/grpc", "te", "trailers",
    };
    assert_serving(send_fields(f, NFIELDS(f)));
}
END_TEST

START_TEST(host_instead_of_authority_is_served)
{
    static const char *const f[] = {
        ":method", "POST", ":scheme", "http", ":path", HEALTH_CHECK,
        "host", "backend:50051", "content-type", "application/grpc",
    };
    assert_serving(send_fields(f, NFIELDS(f)));
}
END_TEST

START_TEST(authority_is_served)
{
    static const char *const f[] = {
        ":method", "POST", ":scheme", "http", ":authority", "localhost:50051",
        ":path", HEALTH_CHECK, "content-type", "application/grpc",
    };
    assert_serving(send_fields(f, NFIELDS(f)));
}
END_TEST

/* Each malformed request: the fields around one broken rule. */
struct malformed {
    const char *what;
    const char *fields[2 * H2C_FIELDS_MAX];
    size_t nfields;
};

#define GOOD_TAIL "content-type", "application/grpc"
static const struct malformed malformed[] = {
    { "no :path", { ":method", "POST", ":scheme", "http", GOOD_TAIL }, 3 },
    { "no :scheme", { ":method", "POST", ":path", HEALTH_CHECK, GOOD_TAIL }, 3 },
    { "no :method", { ":scheme", "http", ":path", HEALTH_CHECK, GOOD_TAIL }, 3 },
    { ":path twice",
      { ":method", "POST", ":scheme", "http", ":path", HEALTH_CHECK, ":path", HEALTH_CHECK,
        GOOD_TAIL }, 5 },
    { "a pseudo-header field after a regular one",
      { ":method", "POST", ":scheme", "http", GOOD_TAIL, ":path", HEALTH_CHECK }, 4 },
    { "an unknown pseudo-header field",
      { ":method", "POST", ":scheme", "http", ":path", HEALTH_CHECK, ":status", "200",
        GOOD_TAIL }, 5 },
    { "a response's :protocol",
      { ":method", "POST", ":scheme", "http", ":path", HEALTH_CHECK, ":protocol", "websocket",
        GOOD_TAIL }, 5 },
    { "connection-specific field",
      { ":method", "POST", ":scheme", "http", ":path", HEALTH_CHECK, "connection", "close",
        GOOD_TAIL }, 5 },
    { "transfer-encoding",
      { ":method", "POST", ":scheme", "http", ":path", HEALTH_CHECK, "transfer-encoding",
        "chunked", GOOD_TAIL }, 5 },
    { "te other than trailers",
      { ":method", "POST", ":scheme", "http", ":path", HEALTH_CHECK, "te", "gzip", GOOD_TAIL },
      5 },
    { "an upper-case field name",
      { ":method", "POST", ":scheme", "http", ":path", HEALTH_CHECK, "Content-Type",
        "application/grpc" }, 4 },
    { "a control character in a value",
      { ":method", "POST", ":scheme", "http", ":path", HEALTH_CHECK, "x-note", "a\001b",
        GOOD_TAIL }, 5 },
    { "a bad :authority",
      { ":method", "POST", ":scheme", "http", ":authority", "two words", ":path", HEALTH_CHECK,
        GOOD_TAIL }, 5 },
    { "an empty :path", { ":method", "POST", ":scheme", "http", ":path", "", GOOD_TAIL }, 4 },
};

START_TEST(malformed_is_reset)
{
    const struct malformed *m = &malformed[_i];
    const struct h2c_result *r = send_fields(m->fields, m->nfields);
    ck_assert_msg(r->rst_code == PROTOCOL_ERROR && r->http_status == 0,
                  "%s: want RST_STREAM(PROTOCOL_ERROR) and no response, got rst %u, :status %d",
                  m->what, r->rst_code, r->http_status);
    /* The connection is unharmed: a good request on it is served. */
    static const char *const good[] = {
        ":method", "POST", ":scheme", "http", ":path", HEALTH_CHECK, GOOD_TAIL,
    };
    assert_serving(send_fields(good, NFIELDS(good)));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("h2_request");
    const TTest *const tests[] = {
        no_authority_is_served,
        host_instead_of_authority_is_served,
        authority_is_served,
        NULL,
    };
    TCase *tc = check_run_case(s, "request rules", tests);
    tcase_add_checked_fixture(tc, setup, teardown);
    check_run_loop(tc, malformed_is_reset, 0, (int)(sizeof malformed / sizeof malformed[0]));
    return check_run(s, CK_FORK_GETENV);
}
