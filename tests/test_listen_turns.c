/* SPDX-License-Identifier: MIT */
/* test_listen_turns.c: one connection's bulk upload cannot hold its I/O
 * loop (daemon/listen.c, LISTEN_TURN_BYTES). Two TCP connections on one
 * loop: B has megabytes waiting, A a tiny request that became readable
 * after B's. A is read before B has taken much more than one turn's bytes
 * (libuv alone would read B up to 32 times in a row first), and B is then
 * read to the end, every byte in order: the turn ends, nothing is lost. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "check_run.h"
#include "listen.h"

#define TURNS_WAITING 8                        /* B's bytes queued, in turns */
#define TURNS_SOCK_BUF (16 << 20)              /* room for them in the kernel */
#define TURNS_TINY 16                          /* A's request */
#define TURNS_POLL_NS (1000 * 1000)
#define TURNS_WAIT_POLLS 10000                 /* 10 s for the kernel to move bytes */

struct turns_conn {
    size_t got;            /* bytes read */
    size_t b_got_before_a; /* A only: B's bytes when A's first arrived */
    bool pattern_ok;
    struct turns_conn *other;
};

static uint8_t turns_byte(size_t i)
{
    return (uint8_t)(i * 7 + (i >> 13));
}

static void turns_read(void *ctx, const uint8_t *data, size_t len)
{
    struct turns_conn *c = ctx;
    if (c->got == 0 && c->other)
        c->b_got_before_a = c->other->got;
    for (size_t i = 0; i < len; i++)
        c->pattern_ok &= data[i] == turns_byte(c->got + i);
    c->got += len;
}

static void turns_eof(void *ctx) { (void)ctx; }
static void turns_written(void *ctx, int status) { (void)ctx; (void)status; }
static void turns_closed(void *ctx) { (void)ctx; }

static const struct listen_sock_cbs turns_cbs = {
    .read = turns_read, .eof = turns_eof, .written = turns_written, .closed = turns_closed,
};

/* A connected pair on loopback TCP: *client, and the accepted end. */
static int turns_pair(int lfd, int *client)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    int big = TURNS_SOCK_BUF;
    ck_assert_int_eq(setsockopt(c, SOL_SOCKET, SO_SNDBUF, &big, sizeof big), 0);
    ck_assert_int_eq(connect(c, (struct sockaddr *)&a, alen), 0);
    int s = accept(lfd, NULL, NULL);
    ck_assert_int_ge(s, 0);
    *client = c;
    return s;
}

/* Waits until fd has at least want bytes to read. */
static void turns_wait_readable(int fd, size_t want)
{
    for (int i = 0; i < TURNS_WAIT_POLLS; i++) {
        int n = 0;
        ck_assert_int_eq(ioctl(fd, FIONREAD, &n), 0);
        if ((size_t)n >= want)
            return;
        nanosleep(&(struct timespec){ 0, TURNS_POLL_NS }, NULL);
    }
    ck_abort_msg("the kernel did not queue %zu bytes", want);
}

START_TEST(bulk_reader_yields_to_tiny_one)
{
    const size_t bulk = (size_t)TURNS_WAITING * LISTEN_TURN_BYTES;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    int big = TURNS_SOCK_BUF;
    ck_assert_int_eq(setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big), 0);
    struct sockaddr_in any = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    ck_assert_int_eq(bind(lfd, (struct sockaddr *)&any, sizeof any), 0);
    ck_assert_int_eq(listen(lfd, 4), 0);
    int bc, ac;
    int bs = turns_pair(lfd, &bc), as = turns_pair(lfd, &ac);

    uint8_t *data = malloc(bulk);
    for (size_t i = 0; i < bulk; i++)
        data[i] = turns_byte(i);
    ck_assert_int_eq(write(bc, data, bulk), (ssize_t)bulk);
    turns_wait_readable(bs, bulk);
    ck_assert_int_eq(write(ac, data, TURNS_TINY), TURNS_TINY);
    turns_wait_readable(as, TURNS_TINY);

    uv_loop_t loop;
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    struct listen_sock *b, *a;
    ck_assert_int_eq(listen_sock_open(&loop, bs, false, &b), 0);
    ck_assert_int_eq(listen_sock_open(&loop, as, false, &a), 0);
    struct turns_conn cb = { .pattern_ok = true }, ca = { .pattern_ok = true, .other = &cb };
    /* B's watcher first: epoll reports the two in that order. */
    ck_assert_int_eq(listen_sock_start(b, &turns_cbs, &cb), 0);
    ck_assert_int_eq(listen_sock_start(a, &turns_cbs, &ca), 0);
    while (cb.got < bulk || ca.got < TURNS_TINY)
        uv_run(&loop, UV_RUN_ONCE);

    ck_assert_uint_eq(ca.got, TURNS_TINY);
    ck_assert(ca.pattern_ok && cb.pattern_ok);
    /* A turn ends within one read past its bytes (a read <= a turn). */
    ck_assert_msg(ca.b_got_before_a <= 2 * LISTEN_TURN_BYTES,
                  "B read %zu bytes before A's %d", ca.b_got_before_a, TURNS_TINY);

    listen_sock_close(b, 0);
    listen_sock_close(a, 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    close(bc);
    close(ac);
    close(lfd);
    free(data);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("listen_turns");
    const TTest *const tests[] = { bulk_reader_yields_to_tiny_one, NULL };
    check_run_case(s, "turns", tests);
    return check_run(s, CK_FORK_GETENV);
}
