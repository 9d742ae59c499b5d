/* SPDX-License-Identifier: MIT */
/* test_client_args.c: libampclient refuses bad arguments locally with
 * AMP_EINVAL and a message naming the argument, before sending anything.
 *
 * The connection goes to a listening Unix socket that never accepts: the
 * kernel completes connect() from its backlog, so amp_connect succeeds,
 * and any call that did reach the wire would hang instead of failing fast
 * (each call also carries a deadline, so such a bug fails, not hangs).
 */
#include <check.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "amp.h"
#include "check_run.h"

#define ARGS_DEADLINE_MS 2000

static char dir[64];
static char sock_path[100];
static char address[220];
static int listen_fd = -1;
static amp_conn *conn;
static const amp_opts deadline_opts = { .size = sizeof(amp_opts), .device = NULL,
                                        .timeout_ms = ARGS_DEADLINE_MS };

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/amp-args-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(sock_path, sizeof sock_path, "%s/s.sock", dir);
    snprintf(address, sizeof address, "unix:%s", sock_path);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock_path);
    listen_fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_ge(listen_fd, 0);
    ck_assert_int_eq(bind(listen_fd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(listen_fd, 16), 0);
    ck_assert_int_eq(amp_connect(address, &conn), 0);
}

static void teardown(void)
{
    amp_close(conn);
    conn = NULL;
    close(listen_fd);
    unlink(sock_path);
    rmdir(dir);
}

/* rc must be AMP_EINVAL and the message must mention what. */
static void expect_einval(int rc, const char *what)
{
    ck_assert_msg(rc == AMP_EINVAL, "rc %d (%s), want AMP_EINVAL for %s", rc, amp_strerror(rc),
                  what);
    const char *msg = amp_last_message(conn);
    ck_assert_msg(strstr(msg, what), "message '%s' does not name '%s'", msg, what);
}

START_TEST(strerror_names_every_code)
{
    const char *seen[16] = { 0 };
    for (int code = AMP_OK; code >= AMP_ENOTFOUND; code--) {
        const char *s = amp_strerror(code);
        ck_assert_ptr_nonnull(s);
        ck_assert_msg(strcmp(s, amp_strerror(-1000)) != 0, "code %d has no name", code);
        for (int j = 0; j < -code; j++)
            ck_assert_msg(strcmp(seen[j], s) != 0, "codes %d and %d share '%s'", -j, code, s);
        seen[-code] = s;
    }
    ck_assert_ptr_nonnull(amp_strerror(1));
    ck_assert_ptr_nonnull(amp_strerror(-1000));
}
END_TEST

START_TEST(null_connection)
{
    void *out;
    size_t n;
    amp_hist h;
    amp_device *list;
    amp_daemon_status st = { .size = sizeof st };
    int serving;
    amp_transform_params tp = { .op = AMP_OP_ADD };
    amp_hist_params hp = { .type = AMP_TYPE_UINT8 };
    amp_fill_params fp = { .type = AMP_TYPE_INT32, .count = 1 };
    ck_assert_int_eq(amp_reverse(NULL, NULL, "a", 1, &out, &n), AMP_EINVAL);
    ck_assert_int_eq(amp_transform(NULL, NULL, &tp, "a", 1, &out, &n), AMP_EINVAL);
    ck_assert_int_eq(amp_histogram(NULL, NULL, &hp, "a", 1, &h), AMP_EINVAL);
    ck_assert_int_eq(amp_fill(NULL, NULL, &fp, &out, &n), AMP_EINVAL);
    ck_assert_int_eq(amp_devices(NULL, NULL, &list, &n), AMP_EINVAL);
    ck_assert_int_eq(amp_status(NULL, NULL, &st), AMP_EINVAL);
    ck_assert_int_eq(amp_health(NULL, NULL, "", &serving), AMP_EINVAL);
    ck_assert_int_eq(amp_connect(address, NULL), AMP_EINVAL);
    ck_assert_str_eq(amp_last_device(NULL), "");
    /* Releasing nothing is fine. */
    amp_close(NULL);
    amp_free(NULL);
    amp_hist_free(NULL);
}
END_TEST

START_TEST(reverse_args)
{
    void *out = (void *)1;
    size_t n = 99;
    expect_einval(amp_reverse(conn, &deadline_opts, "abc", 3, NULL, &n), "out");
    expect_einval(amp_reverse(conn, &deadline_opts, "abc", 3, &out, NULL), "out_len");
    expect_einval(amp_reverse(conn, &deadline_opts, NULL, 3, &out, &n), "in is NULL");
    ck_assert_ptr_null(out); /* cleared even on failure */
    ck_assert_uint_eq(n, 0);
    amp_opts bad = { .size = sizeof(amp_opts), .device = NULL, .timeout_ms = -5 };
    expect_einval(amp_reverse(conn, &bad, "abc", 3, &out, &n), "timeout_ms");
    ck_assert_str_eq(amp_last_device(conn), "");
}
END_TEST

/* amp.h's growth rules: a sized struct's size must cover its first
 * layout; a reserved tail must be zero. */
START_TEST(struct_layout_args)
{
    void *out = NULL;
    size_t n = 0;
    amp_opts unsized = { .timeout_ms = 1000 };
    expect_einval(amp_reverse(conn, &unsized, "abc", 3, &out, &n), "opts.size is 0");
    amp_opts short_opts = { .size = offsetof(amp_opts, timeout_ms), .timeout_ms = 1000 };
    expect_einval(amp_reverse(conn, &short_opts, "abc", 3, &out, &n), "opts.size");
    amp_transform_params p = { .op = AMP_OP_XOR, .value = 1 };
    p.reserved[3] = 1;
    expect_einval(amp_transform(conn, &deadline_opts, &p, "ab", 2, &out, &n), "params.reserved");
    amp_daemon_status st = { .size = 3 };
    expect_einval(amp_status(conn, &deadline_opts, &st), "st.size");
    amp_conn *c = (amp_conn *)&st;
    amp_connect_opts co = { .timeout_ms = 1 };
    ck_assert_int_eq(amp_connect_with(NULL, &co, &c), AMP_EINVAL);
    ck_assert_ptr_null(c);
    ck_assert_ptr_nonnull(strstr(amp_last_message(NULL), "opts.size"));
    co = (amp_connect_opts){ .size = sizeof co, .busy_poll_us = AMP_BUSY_POLL_MAX_US + 1 };
    ck_assert_int_eq(amp_connect_with(NULL, &co, &c), AMP_EINVAL);
    ck_assert_ptr_nonnull(strstr(amp_last_message(NULL), "opts.busy_poll_us"));
}
END_TEST

/* amp_connect_opts.priority must name one of the three priorities; any
 * max_queue_us is a duration (0: none). */
START_TEST(class_args)
{
    const char *bad[] = { "", "urgent", "HIGH", "high ", "norma" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        amp_conn *c = (amp_conn *)&c;
        amp_connect_opts co = { .size = sizeof co, .priority = bad[i] };
        ck_assert_int_eq(amp_connect_with(address, &co, &c), AMP_EINVAL);
        ck_assert_ptr_null(c);
        ck_assert_ptr_nonnull(strstr(amp_last_message(NULL), "opts.priority"));
    }
    const char *good[] = { NULL, "low", "normal", "high" };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        amp_conn *c = NULL;
        amp_connect_opts co = { .size = sizeof co, .priority = good[i], .max_queue_us = UINT_MAX };
        ck_assert_int_eq(amp_connect_with(address, &co, &c), 0);
        amp_close(c);
    }
    /* A caller built before the fields: they are not read. */
    amp_connect_opts old = { .size = offsetof(amp_connect_opts, priority), .priority = "urgent" };
    amp_conn *c = NULL;
    ck_assert_int_eq(amp_connect_with(address, &old, &c), 0);
    amp_close(c);
}
END_TEST

START_TEST(transform_args)
{
    void *out;
    size_t n;
    uint8_t table[256] = { 0 };
    amp_transform_params p = { .op = AMP_OP_XOR, .value = 1 };
    expect_einval(amp_transform(conn, &deadline_opts, NULL, "ab", 2, &out, &n), "params");
    expect_einval(amp_transform(conn, &deadline_opts, &p, NULL, 2, &out, &n), "in is NULL");
    expect_einval(amp_transform(conn, &deadline_opts, &p, "ab", 2, NULL, &n), "out");
    p.op = 0;
    expect_einval(amp_transform(conn, &deadline_opts, &p, "ab", 2, &out, &n), "params.op");
    p.op = (amp_op)77;
    expect_einval(amp_transform(conn, &deadline_opts, &p, "ab", 2, &out, &n), "params.op");
    p.op = AMP_OP_MAP;
    p.table_len = sizeof table;
    expect_einval(amp_transform(conn, &deadline_opts, &p, "ab", 2, &out, &n), "params.table");
    p.table = table;
    p.table_len = 255;
    expect_einval(amp_transform(conn, &deadline_opts, &p, "ab", 2, &out, &n),
                  "params.table_len");
    p.table_len = 257;
    expect_einval(amp_transform(conn, &deadline_opts, &p, "ab", 2, &out, &n),
                  "params.table_len");
}
END_TEST

START_TEST(histogram_args)
{
    amp_hist h;
    amp_hist_params p = { .type = AMP_TYPE_FLOAT32, .bins = 4, .lo = 0, .hi = 1 };
    expect_einval(amp_histogram(conn, &deadline_opts, &p, "abcd", 4, NULL), "h must not");
    expect_einval(amp_histogram(conn, &deadline_opts, NULL, "abcd", 4, &h), "params");
    ck_assert_ptr_null(h.counts);
    expect_einval(amp_histogram(conn, &deadline_opts, &p, NULL, 4, &h), "in is NULL");
    p.type = 0;
    expect_einval(amp_histogram(conn, &deadline_opts, &p, "abcd", 4, &h), "params.type");
    p.type = (amp_type)9;
    expect_einval(amp_histogram(conn, &deadline_opts, &p, "abcd", 4, &h), "params.type");
    amp_hist_free(&h); /* a cleared result frees cleanly */
}
END_TEST

START_TEST(fill_args)
{
    void *out;
    size_t n;
    amp_fill_params p = { .type = AMP_TYPE_INT32, .count = 4 };
    expect_einval(amp_fill(conn, &deadline_opts, NULL, &out, &n), "params");
    expect_einval(amp_fill(conn, &deadline_opts, &p, NULL, &n), "out");
    p.type = 0;
    expect_einval(amp_fill(conn, &deadline_opts, &p, &out, &n), "params.type");
    p.type = (amp_type)-3;
    expect_einval(amp_fill(conn, &deadline_opts, &p, &out, &n), "params.type");
}
END_TEST

START_TEST(introspection_args)
{
    amp_device *list;
    size_t n;
    expect_einval(amp_devices(conn, NULL, NULL, &n), "list");
    expect_einval(amp_devices(conn, NULL, &list, NULL), "n must not");
    expect_einval(amp_status(conn, &deadline_opts, NULL), "st");
    expect_einval(amp_health(conn, &deadline_opts, "", NULL), "serving");
}
END_TEST

START_TEST(message_cleared_by_next_call)
{
    void *out;
    size_t n;
    expect_einval(amp_reverse(conn, &deadline_opts, NULL, 1, &out, &n), "in is NULL");
    expect_einval(amp_fill(conn, &deadline_opts, NULL, &out, &n), "params");
    ck_assert_ptr_null(strstr(amp_last_message(conn), "in is NULL"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("client_args");
    const TTest *const tests[] = {
        strerror_names_every_code,
        null_connection,
        reverse_args,
        struct_layout_args,
        class_args,
        transform_args,
        histogram_args,
        fill_args,
        introspection_args,
        message_cleared_by_next_call,
        NULL,
    };
    TCase *tc = check_run_case(s, "local checks", tests);
    tcase_add_checked_fixture(tc, setup, teardown);
    return check_run(s, CK_FORK_GETENV);
}
