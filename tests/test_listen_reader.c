/* SPDX-License-Identifier: MIT */
/* test_listen_reader.c: reads straight into a call's memory on the
 * socket's reader thread (daemon/listen.c, the reader_wanted callback). Over
 * loopback TCP, with read_dest offering a 1 MiB place as a stream's
 * staging buffer does, and reader_wanted saying yes:
 * - the place is filled by one read larger than the loop's own reads
 *   into a place (LISTEN_READ_DEST_MAX) and reaches read() as that very
 *   pointer; the loop's next read is a peek at the next frame;
 * - settling a read the peer has not finished keeps the bytes that came:
 *   the place can be given up and overwritten at once, and read() still
 *   gets every byte, in order;
 * - a peer closing in the middle of the reader's read is the connection's
 *   end, after read() got what came;
 * and with reader_wanted saying no, the loop reads the place itself. */
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

#define PLACE_BYTES ((size_t)1 << 20)
#define SOCK_BUF (8 << 20)
#define POLL_NS (1000 * 1000)
#define WAIT_POLLS 10000   /* 10 s for the kernel or the reader to move bytes */

struct peer {
    uint8_t *place;        /* what read_dest offers, while offering */
    bool offering;
    size_t got;            /* bytes read() saw */
    bool pattern_ok;
    size_t largest_in_place; /* largest read() that arrived in the place */
    size_t first_after_place; /* length of the first read() after a read into the place */
    bool after_place;
    bool eof;
    bool reader;           /* what reader_wanted says */
};

static uint8_t test_byte(size_t i)
{
    return (uint8_t)(i * 7 + (i >> 13));
}

static uint8_t *peer_dest(void *ctx, size_t *len)
{
    struct peer *p = ctx;
    if (!p->offering || p->got >= PLACE_BYTES)
        return NULL;
    *len = PLACE_BYTES - p->got;
    return p->place + p->got;
}

static void peer_read(void *ctx, const uint8_t *data, size_t len)
{
    struct peer *p = ctx;
    for (size_t i = 0; i < len; i++)
        p->pattern_ok &= data[i] == test_byte(p->got + i);
    bool in_place = data >= p->place && data < p->place + PLACE_BYTES;
    if (in_place && len > p->largest_in_place)
        p->largest_in_place = len;
    if (!in_place && p->after_place && !p->first_after_place)
        p->first_after_place = len;
    p->after_place |= in_place;
    p->got += len;
}

static bool peer_wants_reader(void *ctx) { return ((struct peer *)ctx)->reader; }
static void peer_eof(void *ctx) { ((struct peer *)ctx)->eof = true; }
static void peer_written(void *ctx, int status) { (void)ctx; (void)status; }
static void peer_closed(void *ctx) { (void)ctx; }

static const struct listen_sock_cbs peer_cbs = {
    .read = peer_read, .read_dest = peer_dest, .reader_wanted = peer_wants_reader,
    .eof = peer_eof, .written = peer_written, .closed = peer_closed,
};

struct rig {
    int lfd, client, server;
    uv_loop_t loop;
    struct listen_sock *sock;
    struct peer p;
    uint8_t *data;
};

static void rig_start(struct rig *r, size_t data_len, bool reader)
{
    r->lfd = socket(AF_INET, SOCK_STREAM, 0);
    int big = SOCK_BUF;
    ck_assert_int_eq(setsockopt(r->lfd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big), 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof a;
    ck_assert_int_eq(bind(r->lfd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(r->lfd, 1), 0);
    ck_assert_int_eq(getsockname(r->lfd, (struct sockaddr *)&a, &alen), 0);
    r->client = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_eq(setsockopt(r->client, SOL_SOCKET, SO_SNDBUF, &big, sizeof big), 0);
    ck_assert_int_eq(connect(r->client, (struct sockaddr *)&a, alen), 0);
    r->server = accept(r->lfd, NULL, NULL);
    ck_assert_int_ge(r->server, 0);
    r->data = malloc(data_len);
    ck_assert_ptr_nonnull(r->data);
    for (size_t i = 0; i < data_len; i++)
        r->data[i] = test_byte(i);
    r->p = (struct peer){ .place = calloc(1, PLACE_BYTES), .offering = true, .pattern_ok = true,
                          .reader = reader };
    ck_assert_ptr_nonnull(r->p.place);
    ck_assert_int_eq(uv_loop_init(&r->loop), 0);
    ck_assert_int_eq(listen_sock_open(&r->loop, r->server, false, &r->sock), 0);
    ck_assert_int_eq(listen_sock_start(r->sock, &peer_cbs, &r->p), 0);
}

static void rig_send(struct rig *r, size_t from, size_t len)
{
    ck_assert_int_eq(write(r->client, r->data + from, len), (ssize_t)len);
}

/* Runs the loop until read() has seen want bytes (or the end). */
static void rig_run_until(struct rig *r, size_t want)
{
    for (int i = 0; i < WAIT_POLLS && r->p.got < want && !r->p.eof; i++) {
        uv_run(&r->loop, UV_RUN_NOWAIT);
        if (r->p.got < want && !r->p.eof)
            nanosleep(&(struct timespec){ 0, POLL_NS }, NULL);
    }
    ck_assert_uint_ge(r->p.got, want);
}

/* Waits until the server's end has no bytes left to read: the reader
 * thread took them. */
static void rig_wait_taken(struct rig *r)
{
    for (int i = 0; i < WAIT_POLLS; i++) {
        int n = 0;
        ck_assert_int_eq(ioctl(r->server, FIONREAD, &n), 0);
        if (n == 0)
            return;
        uv_run(&r->loop, UV_RUN_NOWAIT);
        nanosleep(&(struct timespec){ 0, POLL_NS }, NULL);
    }
    ck_abort_msg("the bytes were not read");
}

static void rig_end(struct rig *r)
{
    listen_sock_close(r->sock, 0);
    uv_run(&r->loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&r->loop), 0);
    if (r->client >= 0)
        close(r->client);
    close(r->lfd);
    free(r->data);
    free(r->p.place);
}

START_TEST(place_is_filled_by_the_reader)
{
    struct rig r;
    size_t tail = 100 * 1024;
    rig_start(&r, PLACE_BYTES + tail, true);
    rig_send(&r, 0, PLACE_BYTES + tail);
    rig_run_until(&r, PLACE_BYTES + tail);
    ck_assert(r.p.pattern_ok);
    ck_assert_uint_eq(r.p.got, PLACE_BYTES + tail);
    ck_assert_msg(r.p.largest_in_place > 128 * 1024,
                  "the place came in reads of at most %zu bytes: the loop's own",
                  r.p.largest_in_place);
    ck_assert_uint_le(r.p.first_after_place, 16 * 1024);   /* a peek */
    ck_assert(!r.p.eof);
    rig_end(&r);
}
END_TEST

/* Not wanted (a connection alone on its loop): the loop reads the place
 * itself, in its own reads. */
START_TEST(place_is_read_on_the_loop_unless_wanted)
{
    struct rig r;
    rig_start(&r, PLACE_BYTES, false);
    rig_send(&r, 0, PLACE_BYTES);
    rig_run_until(&r, PLACE_BYTES);
    ck_assert(r.p.pattern_ok);
    ck_assert_uint_le(r.p.largest_in_place, 128 * 1024);
    rig_end(&r);
}
END_TEST

START_TEST(settled_bytes_stay_in_order)
{
    struct rig r;
    size_t part = 300 * 1024 + 5;
    rig_start(&r, PLACE_BYTES, true);
    /* A first read: a small one into the place starts it (the place is
     * offered whole: the reader takes it). */
    rig_send(&r, 0, part);
    rig_wait_taken(&r);
    ck_assert_uint_eq(r.p.got, 0);   /* the reader has them; read() not yet */
    /* The owner gives the place up: the reader's bytes are kept, and the
     * place may be reused at once. */
    listen_sock_read_settle(r.sock);
    r.p.offering = false;
    memset(r.p.place, 0xee, PLACE_BYTES);
    rig_send(&r, part, PLACE_BYTES - part);
    rig_run_until(&r, PLACE_BYTES);
    ck_assert_uint_eq(r.p.got, PLACE_BYTES);
    ck_assert(r.p.pattern_ok);
    ck_assert(!r.p.eof);
    rig_end(&r);
}
END_TEST

START_TEST(peer_closing_mid_read_is_the_end)
{
    struct rig r;
    size_t part = 300 * 1024;
    rig_start(&r, part, true);
    rig_send(&r, 0, part);
    close(r.client);
    r.client = -1;
    for (int i = 0; i < WAIT_POLLS && !r.p.eof; i++) {
        uv_run(&r.loop, UV_RUN_NOWAIT);
        nanosleep(&(struct timespec){ 0, POLL_NS }, NULL);
    }
    ck_assert(r.p.eof);
    ck_assert_uint_eq(r.p.got, part);
    ck_assert(r.p.pattern_ok);
    rig_end(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("listen_reader");
    const TTest *const tests[] = { place_is_filled_by_the_reader,
                                   place_is_read_on_the_loop_unless_wanted,
                                   settled_bytes_stay_in_order, peer_closing_mid_read_is_the_end,
                                   NULL };
    check_run_case(s, "reader", tests);
    return check_run(s, CK_FORK_GETENV);
}
