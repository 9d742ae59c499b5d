/* SPDX-License-Identifier: MIT */
/* test_sock_reader.c: a socket's reader thread (common/sock_reader.c) over
 * a real socket pair: a large read is filled whole and in order while the
 * peer writes slowly; a peer that closes early ends it with what came;
 * stopping a read the peer never finishes returns what came, without
 * done(), and leaves the reader ready for the next; freeing the reader in
 * the middle of such a read returns. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check_run.h"
#include "done_efd.h"
#include "sock_reader.h"

#define READER_BYTES ((size_t)8 << 20)
#define READER_STEP (128 * 1024)
#define READER_WAIT_MS 10000

static uint8_t reader_byte(size_t i)
{
    return (uint8_t)(i * 131 + (i >> 12));
}

/* A reader over a socket pair (sv[0] the reader's end, non-blocking as the
 * loop's sockets are), READER_BYTES of patterned source and a place to
 * read them into. */
struct flow {
    int sv[2], efd;
    uint8_t *src, *dest;
    struct sock_reader *r;
};

static void flow_start(struct flow *f)
{
    f->efd = eventfd(0, EFD_CLOEXEC);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, f->sv), 0);
    ck_assert_int_eq(fcntl(f->sv[0], F_SETFL, O_NONBLOCK), 0);
    f->src = malloc(READER_BYTES);
    f->dest = calloc(1, READER_BYTES);
    ck_assert_ptr_nonnull(f->src);
    ck_assert_ptr_nonnull(f->dest);
    for (size_t i = 0; i < READER_BYTES; i++)
        f->src[i] = reader_byte(i);
    f->r = sock_reader_new("test-reader", 0, READER_STEP, done_efd_add, &f->efd);
    ck_assert_ptr_nonnull(f->r);
}

static void flow_end(struct flow *f)
{
    sock_reader_free(f->r);
    close(f->sv[0]);
    if (f->sv[1] >= 0)
        close(f->sv[1]);
    close(f->efd);
    free(f->src);
    free(f->dest);
}

/* Writes src[0..n) to fd in small writes with pauses: a slow peer. */
struct slow_writer {
    int fd;
    const uint8_t *src;
    size_t n;
};

static void *slow_write_main(void *arg)
{
    struct slow_writer *w = arg;
    for (size_t done = 0; done < w->n;) {
        size_t k = w->n - done < 100000 ? w->n - done : 100000;   /* not a step's multiple */
        ssize_t put = write(w->fd, w->src + done, k);
        ck_assert_int_gt(put, 0);
        done += (size_t)put;
        nanosleep(&(struct timespec){ 0, 200 * 1000 }, NULL);
    }
    return NULL;
}

/* Waits until the reader has taken every byte the peer wrote: the
 * reader's end has none left to read. */
static void flow_wait_taken(struct flow *f)
{
    for (int i = 0; i < READER_WAIT_MS; i++) {
        int n = 0;
        ck_assert_int_eq(ioctl(f->sv[0], FIONREAD, &n), 0);
        if (n == 0)
            return;
        nanosleep(&(struct timespec){ 0, 1000 * 1000 }, NULL);
    }
    ck_abort_msg("the reader did not take the bytes");
}

START_TEST(large_read_is_filled_whole_and_in_order)
{
    struct flow f;
    flow_start(&f);
    sock_reader_start(f.r, f.sv[0], f.dest, READER_BYTES);
    struct slow_writer w = { f.sv[1], f.src, READER_BYTES };
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, slow_write_main, &w), 0);
    ck_assert_int_eq(done_efd_wait(f.efd, READER_WAIT_MS), 1);
    pthread_join(t, NULL);
    size_t got;
    int status;
    ck_assert(sock_reader_take(f.r, &got, &status));
    ck_assert_int_eq(status, 0);
    ck_assert_uint_eq(got, READER_BYTES);
    ck_assert_mem_eq(f.dest, f.src, READER_BYTES);
    ck_assert(!sock_reader_take(f.r, &got, &status));   /* taken once */
    flow_end(&f);
}
END_TEST

START_TEST(peer_closing_ends_the_read_with_what_came)
{
    struct flow f;
    flow_start(&f);
    ck_assert_int_eq(write(f.sv[1], f.src, 1000), 1000);
    close(f.sv[1]);
    f.sv[1] = -1;
    sock_reader_start(f.r, f.sv[0], f.dest, READER_BYTES);
    ck_assert_int_eq(done_efd_wait(f.efd, READER_WAIT_MS), 1);
    size_t got;
    int status;
    ck_assert(sock_reader_take(f.r, &got, &status));
    ck_assert_int_eq(status, 0);
    ck_assert_uint_eq(got, 1000);
    ck_assert_mem_eq(f.dest, f.src, 1000);
    flow_end(&f);
}
END_TEST

START_TEST(stop_returns_what_came_and_the_reader_goes_on)
{
    struct flow f;
    flow_start(&f);
    size_t part = 3 * READER_STEP + 17;
    sock_reader_start(f.r, f.sv[0], f.dest, READER_BYTES);
    ck_assert_int_eq(write(f.sv[1], f.src, part), (ssize_t)part);
    flow_wait_taken(&f);
    size_t got;
    int status;
    ck_assert(!sock_reader_take(f.r, &got, &status));   /* still running */
    sock_reader_stop(f.r);
    ck_assert(sock_reader_take(f.r, &got, &status));
    ck_assert_int_eq(status, -ECANCELED);
    ck_assert_uint_eq(got, part);
    ck_assert_mem_eq(f.dest, f.src, part);
    ck_assert_int_eq(done_efd_wait(f.efd, 100), 0);   /* a stopped read is not told */
    /* The next read starts where the socket is. */
    memset(f.dest, 0, READER_BYTES);
    sock_reader_start(f.r, f.sv[0], f.dest, 1000);
    ck_assert_int_eq(write(f.sv[1], f.src + part, 1000), 1000);
    ck_assert_int_eq(done_efd_wait(f.efd, READER_WAIT_MS), 1);
    ck_assert(sock_reader_take(f.r, &got, &status));
    ck_assert_int_eq(status, 0);
    ck_assert_uint_eq(got, 1000);
    ck_assert_mem_eq(f.dest, f.src + part, 1000);
    flow_end(&f);
}
END_TEST

START_TEST(free_in_the_middle_of_a_read_returns)
{
    struct flow f;
    flow_start(&f);
    sock_reader_start(f.r, f.sv[0], f.dest, READER_BYTES);
    ck_assert_int_eq(write(f.sv[1], f.src, 5000), 5000);
    flow_wait_taken(&f);
    sock_reader_free(f.r);   /* the peer never sends the rest */
    f.r = NULL;
    ck_assert_mem_eq(f.dest, f.src, 5000);
    flow_end(&f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sock_reader");
    const TTest *const tests[] = { large_read_is_filled_whole_and_in_order,
                                   peer_closing_ends_the_read_with_what_came,
                                   stop_returns_what_came_and_the_reader_goes_on,
                                   free_in_the_middle_of_a_read_returns, NULL };
    check_run_case(s, "reader", tests);
    return check_run(s, CK_FORK_GETENV);
}
