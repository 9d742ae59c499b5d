/* SPDX-License-Identifier: MIT */
/* test_limits.c: every daemon limit, hit on purpose against a real ampd:
 * --max-message-bytes (request and reply), --max-connections,
 * --max-streams, --max-jobs, --max-job-memory and --max-connection-memory. Each refusal is
 * RESOURCE_EXHAUSTED (or INVALID_ARGUMENT where the request itself asks for
 * too much) with a message naming the limit and its value. */
#include <check.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check_run.h"
#include "amp.pb-c.h"
#include "daemon_proc.h"
#include "grpc_frame.h"
#include "h2_client.h"
#include "status.h"

#define IO_TIMEOUT_MS 60000
#define MAX_CALLS 16

static struct daemon_proc ampd;

static void start(const char *const *args)
{
    ck_assert_int_eq(daemon_start(&ampd, args), 0);
}

static void stop_clean(void)
{
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}

static size_t pack_reverse(const uint8_t *data, size_t n, uint8_t *out)
{
    Amp__V1__ReverseRequest req = AMP__V1__REVERSE_REQUEST__INIT;
    req.data.data = (uint8_t *)data;
    req.data.len = n;
    return protobuf_c_message_pack(&req.base, out);
}

static size_t pack_fill(uint64_t count, uint8_t *out)
{
    Amp__V1__FillParams p = AMP__V1__FILL_PARAMS__INIT;
    p.type = AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_INT32;
    p.count = count;
    Amp__V1__FillRequest req = AMP__V1__FILL_REQUEST__INIT;
    req.params = &p;
    return protobuf_c_message_pack(&req.base, out);
}

static char *decoded(const struct h2c_result *r)
{
    static char msg[H2C_MESSAGE_MAX];
    h2c_percent_decode(r->grpc_message, msg, sizeof(msg));
    return msg;
}

/* Runs calls already queued on c over a new connection. */
static void run(struct h2c *c)
{
    int fd = h2c_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(h2c_run_fd(c, fd, IO_TIMEOUT_MS), 0);
    close(fd);
}

START_TEST(message_bytes_request_and_reply)
{
    static const char *const args[] = { "--max-message-bytes", "1000", NULL };
    start(args);
    uint8_t data[2000], msg[2100];
    memset(data, 'z', sizeof(data));
    struct h2c *c = h2c_new();
    /* Request over the limit. */
    int32_t big = h2c_call(c, "/amp.v1.Amp/Reverse", msg, pack_reverse(data, 1200, msg));
    /* Request under it, but the reply (data + device name) could be
     * over: refused before running. */
    int32_t reply = h2c_call(c, "/amp.v1.Amp/Reverse", msg, pack_reverse(data, 995, msg));
    /* Fill whose output alone is over: refused before running. */
    Amp__V1__FillParams fp = AMP__V1__FILL_PARAMS__INIT;
    fp.type = AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_INT32;
    fp.count = 251;
    Amp__V1__FillRequest freq = AMP__V1__FILL_REQUEST__INIT;
    freq.params = &fp;
    int32_t fill = h2c_call(c, "/amp.v1.Amp/Fill", msg, protobuf_c_message_pack(&freq.base, msg));
    /* And one that fits. */
    int32_t ok = h2c_call(c, "/amp.v1.Amp/Reverse", msg, pack_reverse(data, 10, msg));
    run(c);

    const struct h2c_result *r = h2c_result(c, big);
    ck_assert_int_eq(r->grpc_status, STATUS_RESOURCE_EXHAUSTED);
    ck_assert_ptr_nonnull(strstr(decoded(r), "exceeds --max-message-bytes (1000)"));
    r = h2c_result(c, reply);
    ck_assert_int_eq(r->grpc_status, STATUS_RESOURCE_EXHAUSTED);
    ck_assert_ptr_nonnull(strstr(decoded(r), "the reply could take"));
    ck_assert_ptr_nonnull(strstr(decoded(r), "--max-message-bytes (1000)"));
    r = h2c_result(c, fill);
    ck_assert_int_eq(r->grpc_status, STATUS_INVALID_ARGUMENT);
    ck_assert_str_eq(decoded(r), "params.count * element size exceeds --max-message-bytes (1000)");
    ck_assert_int_eq(h2c_result(c, ok)->grpc_status, 0);
    h2c_free(c);
    stop_clean();
}
END_TEST

/* Opens a connection and completes one call on it, so the daemon has
 * surely accepted and counted it. A refusal (daemon_start's readiness
 * probe may not be closed on the daemon's side yet) is retried. */
static int open_served(struct h2c **out)
{
    for (;;) {
        int fd = h2c_connect_unix(ampd.sock_path);
        ck_assert_int_ge(fd, 0);
        struct h2c *c = h2c_new();
        int32_t id = h2c_call(c, "/amp.v1.Amp/Status", NULL, 0);
        if (h2c_run_fd(c, fd, IO_TIMEOUT_MS) == 0 && h2c_result(c, id)->grpc_status == 0) {
            *out = c;
            return fd;
        }
        close(fd);
        h2c_free(c);
        usleep(10000);
    }
}

static bool got_goaway(struct h2c *c, void *arg)
{
    (void)arg;
    return h2c_goaway(c, NULL, NULL);
}

START_TEST(connections)
{
    static const char *const args[] = { "--max-connections", "2", NULL };
    start(args);
    struct h2c *a, *b;
    int fa = open_served(&a), fb = open_served(&b);
    /* The third is accepted, told why in a GOAWAY, and closed. */
    int fd = h2c_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    struct h2c *c = h2c_new();
    ck_assert_int_eq(h2c_run_until(c, fd, IO_TIMEOUT_MS, got_goaway, NULL), 0);
    uint32_t code;
    const char *debug;
    ck_assert(h2c_goaway(c, &code, &debug));
    ck_assert_uint_eq(code, 11 /* ENHANCE_YOUR_CALM */);
    ck_assert_str_eq(debug, "RESOURCE_EXHAUSTED: --max-connections (2) reached");
    uint8_t buf[256];
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    ck_assert_int_eq(poll(&pfd, 1, IO_TIMEOUT_MS), 1);
    ck_assert_int_le(recv(fd, buf, sizeof(buf), 0), 0);
    close(fd);
    h2c_free(c);
    /* One closes: a new connection is served again. Closing is seen by the
     * daemon asynchronously, so retry until a slot frees up. */
    close(fa);
    h2c_free(a);
    fa = open_served(&a);
    close(fa);
    h2c_free(a);
    close(fb);
    h2c_free(b);
    stop_clean();
}
END_TEST

START_TEST(streams)
{
    static const char *const args[] = { "--max-streams", "3", NULL };
    start(args);
    struct h2c *c;
    int fd = open_served(&c);
    ck_assert_uint_eq(h2c_remote_setting(c, 3 /* MAX_CONCURRENT_STREAMS */), 3);
    close(fd);
    h2c_free(c);
    stop_clean();
}
END_TEST

START_TEST(jobs)
{
    static const char *const args[] = { "--max-jobs", "1", NULL };
    start(args);
    /* 16 small jobs in one write: the daemon reads them in one go, before
     * any completion can come back, so exactly one is admitted. */
    uint8_t data[64], msg[128];
    memset(data, 'j', sizeof(data));
    size_t len = pack_reverse(data, sizeof(data), msg);
    struct h2c *c = h2c_new();
    int32_t ids[MAX_CALLS];
    for (int i = 0; i < MAX_CALLS; i++)
        ids[i] = h2c_call(c, "/amp.v1.Amp/Reverse", msg, len);
    run(c);
    int ok = 0, refused = 0;
    for (int i = 0; i < MAX_CALLS; i++) {
        const struct h2c_result *r = h2c_result(c, ids[i]);
        if (r->grpc_status == 0) {
            ok++;
        } else {
            ck_assert_int_eq(r->grpc_status, STATUS_RESOURCE_EXHAUSTED);
            ck_assert_str_eq(decoded(r), "--max-jobs (1) jobs are already queued or running");
            refused++;
        }
    }
    ck_assert_int_ge(ok, 1);
    ck_assert_int_ge(refused, 1);
    h2c_free(c);
    stop_clean();
}
END_TEST

START_TEST(job_memory)
{
    /* A job's input and outputs are held while it runs: a Fill of 300
     * int32 (1200 bytes out) can never fit in 1000; one of 200 (800) does.
     * (A connection may hold all of it here: by default it holds a quarter.) */
    static const char *const args[] = { "--max-job-memory", "1000", "--max-connection-memory",
                                        "1000", NULL };
    start(args);
    uint8_t msg[64];
    struct h2c *c = h2c_new();
    int32_t big = h2c_call(c, "/amp.v1.Amp/Fill", msg, pack_fill(300, msg));
    int32_t ok = h2c_call(c, "/amp.v1.Amp/Fill", msg, pack_fill(200, msg));
    run(c);
    const struct h2c_result *r = h2c_result(c, big);
    ck_assert_int_eq(r->grpc_status, STATUS_RESOURCE_EXHAUSTED);
    ck_assert_str_eq(decoded(r), "the job needs 1200 bytes: --max-job-memory (1000) is less than "
                                 "the 1200 bytes wanted");
    ck_assert_int_eq(h2c_result(c, ok)->grpc_status, 0);
    h2c_free(c);
    stop_clean();
}
END_TEST

START_TEST(connection_memory)
{
    /* One connection may hold --max-connection-memory of it: the same
     * 800-byte Fill is refused there, naming that limit (its client may
     * hold all: by default, half, which a refusal would name first). */
    static const char *const args[] = { "--max-job-memory", "1000", "--max-connection-memory",
                                        "500", "--max-client-memory", "1000", NULL };
    start(args);
    uint8_t msg[64];
    struct h2c *c = h2c_new();
    int32_t big = h2c_call(c, "/amp.v1.Amp/Fill", msg, pack_fill(200, msg));
    int32_t ok = h2c_call(c, "/amp.v1.Amp/Fill", msg, pack_fill(100, msg));
    run(c);
    const struct h2c_result *r = h2c_result(c, big);
    ck_assert_int_eq(r->grpc_status, STATUS_RESOURCE_EXHAUSTED);
    ck_assert_str_eq(decoded(r), "the job needs 800 bytes: --max-connection-memory (500) is less "
                                 "than the 800 bytes wanted");
    ck_assert_int_eq(h2c_result(c, ok)->grpc_status, 0);
    h2c_free(c);
    stop_clean();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("limits");
    const TTest *const tests[] = {
        message_bytes_request_and_reply,
        connections,
        streams,
        jobs,
        job_memory,
        connection_memory,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 600);
    return check_run(s, CK_FORK_GETENV);
}
