/* SPDX-License-Identifier: MIT */
/* test_client_http_status.c: a reply that is not gRPC at all (a proxy's
 * HTML error page: an HTTP status, content-type text/html, no grpc-status)
 * from a small real HTTP/2 server (support/http_status_server.c). Unary,
 * streamed and in-flight calls of libampclient, and ampctl, take its status
 * from the HTTP code by gRPC's "HTTP to gRPC status code mapping" and say
 * the code in their message, instead of reading the page as gRPC
 * messages. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "amp.h"
#include "check_run.h"
#include "http_status_server.h"

/* gRPC's table (doc/http-grpc-status-mapping.md), as libampclient codes. */
static const struct {
    int http, grpc, amp;
} mapping[] = {
    { 400, 13, AMP_EINTERNAL }, { 401, 16, AMP_EUNAUTH },  { 403, 7, AMP_EPERM },
    { 404, 12, AMP_EUNIMPL },   { 429, 14, AMP_EUNAVAIL }, { 502, 14, AMP_EUNAVAIL },
    { 503, 14, AMP_EUNAVAIL },  { 504, 14, AMP_EUNAVAIL }, { 500, 2, AMP_EUNKNOWN },
    { 302, 2, AMP_EUNKNOWN },
};

static char dir[] = "/tmp/amp-http-status-XXXXXX";
static char sock_path[128], address[160];

static struct http_status_server *serve(int http_status)
{
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(sock_path, sizeof sock_path, "%s/proxy.sock", dir);
    snprintf(address, sizeof address, "unix:%s", sock_path);
    struct http_status_server *s = http_status_server_start(sock_path, http_status);
    ck_assert_ptr_nonnull(s);
    return s;
}

static void done(struct http_status_server *s)
{
    http_status_server_stop(s);
    rmdir(dir);
}

/* The call failed as the HTTP code maps, saying the code. */
static void assert_mapped(amp_conn *c, int rc, int i)
{
    char want[64];
    snprintf(want, sizeof want, "HTTP status %d", mapping[i].http);
    ck_assert_msg(rc == mapping[i].amp, "HTTP %d: got %s (%s), want %s", mapping[i].http,
                  amp_error_name(rc), amp_last_message(c), amp_error_name(mapping[i].amp));
    ck_assert_int_eq(amp_last_grpc_status(c), mapping[i].grpc);
    ck_assert_msg(strstr(amp_last_message(c), want), "message '%s'", amp_last_message(c));
}

START_TEST(unary_calls_map_the_http_status)
{
    struct http_status_server *s = serve(mapping[_i].http);
    amp_conn *c;
    ck_assert_int_eq(amp_connect(address, &c), AMP_OK);
    static const char in[] = "abcdef";
    void *out = NULL;
    size_t out_len = 0;
    assert_mapped(c, amp_reverse(c, NULL, in, sizeof in, &out, &out_len), _i);
    ck_assert_ptr_null(out);
    int serving = -1;
    assert_mapped(c, amp_health(c, NULL, "", &serving), _i);
    ck_assert_int_eq(http_status_server_answered(s), 2);
    amp_close(c);
    done(s);
}
END_TEST

static int discard(void *ctx, const void *buf, size_t len)
{
    (void)buf;
    *(size_t *)ctx += len;
    return 0;
}

START_TEST(streams_map_the_http_status)
{
    struct http_status_server *s = serve(mapping[_i].http);
    amp_conn *c;
    ck_assert_int_eq(amp_connect(address, &c), AMP_OK);
    static uint8_t in[256 * 1024];
    amp_step step = { .size = sizeof step, .kind = AMP_STEP_REVERSE };
    size_t got = 0;
    assert_mapped(c, amp_stream_mem(c, NULL, &step, 1, in, sizeof in, discard, &got, NULL, 0),
                  _i);
    ck_assert_uint_eq(got, 0);
    amp_close(c);
    done(s);
}
END_TEST

START_TEST(calls_in_flight_map_the_http_status)
{
    struct http_status_server *s = serve(503);
    amp_conn *c;
    ck_assert_int_eq(amp_connect(address, &c), AMP_OK);
    amp_call *calls[4];
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(amp_start_reverse(c, NULL, "xyz", 3, &calls[i]), AMP_OK);
    for (int i = 0; i < 4; i++) {
        amp_call *call;
        ck_assert_int_eq(amp_wait(c, 60000, &call), AMP_OK);
        ck_assert_int_eq(amp_call_status(call), AMP_EUNAVAIL);
        ck_assert_ptr_nonnull(strstr(amp_call_message(call), "HTTP status 503"));
        amp_call_free(call);
    }
    amp_close(c);
    done(s);
}
END_TEST

/* ampctl prints the mapped refusal and exits 1 (the server answered). */
START_TEST(ampctl_says_the_http_status)
{
    struct http_status_server *s = serve(503);
    const char *bin = getenv("AMPCTL_BIN");
    ck_assert_ptr_nonnull(bin);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s --address %s status 2>&1", bin, address);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    char out[1024] = "";
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "ampctl: status %d: %s", status,
                  out);
    ck_assert_msg(strstr(out, "HTTP status 503") && strstr(out, "UNAVAILABLE"), "ampctl: %s",
                  out);
    ck_assert_msg(!strstr(out, "flag"), "ampctl read the page as gRPC: %s", out);
    done(s);
}
END_TEST

int main(void)
{
    int n = (int)(sizeof mapping / sizeof mapping[0]);
    Suite *s = suite_create("client_http_status");
    const TTest *const tests[] = {
        calls_in_flight_map_the_http_status,
        ampctl_says_the_http_status,
        NULL,
    };
    TCase *tc = check_run_case(s, "not gRPC", tests);
    check_run_loop(tc, unary_calls_map_the_http_status, 0, n);
    check_run_loop(tc, streams_map_the_http_status, 0, n);
    return check_run(s, CK_FORK_GETENV);
}
