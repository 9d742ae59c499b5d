/* SPDX-License-Identifier: MIT */
/* test_sock_writer.c: a socket's writer thread (common/sock_writer.c),
 * which both ends use, over a real socket pair: a large write arrives
 * whole and in order while the peer reads slowly, a second write handed
 * behind it follows it and each has its own result, a vanished peer is an
 * error (not SIGPIPE), stopping a write the peer never reads returns what
 * went out (and ends the one behind it unwritten) and leaves the writer
 * ready for the next, freeing the writer in the middle of such a write
 * returns, and the thread runs as much nicer as it was asked. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check_run.h"
#include "done_efd.h"
#include "proc_thread.h"
#include "sock_writer.h"

#define WRITER_BYTES ((size_t)8 << 20)

static int writer_status(struct sock_writer *w)
{
    size_t written;
    int status;
    ck_assert(sock_writer_take(w, &written, &status));
    return status;
}

static void writer_pair(int sv[2])
{
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ck_assert_int_eq(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);   /* as the loop's sockets are */
}

/* A writer over a socket pair, WRITER_BYTES of patterned source and room
 * to read them back. */
struct flow {
    int sv[2], efd;
    uint8_t *src, *got;
    struct sock_writer *w;
};

static void flow_start(struct flow *f, unsigned mul)
{
    f->efd = eventfd(0, EFD_CLOEXEC);
    writer_pair(f->sv);
    f->src = malloc(WRITER_BYTES);
    f->got = malloc(WRITER_BYTES);
    ck_assert_ptr_nonnull(f->src);
    ck_assert_ptr_nonnull(f->got);
    for (size_t i = 0; i < WRITER_BYTES; i++)
        f->src[i] = (uint8_t)(i * mul + (i >> 12));
    f->w = sock_writer_new("test-writer", 0, done_efd_add, &f->efd);
    ck_assert_ptr_nonnull(f->w);
}

/* Reads every byte in small reads (a slow reader) and checks them. */
static void flow_read_all(struct flow *f)
{
    size_t have = 0;
    while (have < WRITER_BYTES) {
        ssize_t k = read(f->sv[1], f->got + have, 64 * 1024);
        ck_assert_int_gt(k, 0);
        have += (size_t)k;
    }
    ck_assert_mem_eq(f->got, f->src, WRITER_BYTES);
}

static void flow_end(struct flow *f)
{
    sock_writer_free(f->w);
    close(f->sv[0]);
    close(f->sv[1]);
    close(f->efd);
    free(f->src);
    free(f->got);
}

START_TEST(large_write_arrives_whole_and_in_order)
{
    struct flow f;
    flow_start(&f, 131);
    /* Three uneven pieces, as a frame header and borrowed payloads come. */
    struct iovec iov[3] = { { f.src, 9 }, { f.src + 9, 3 << 20 }, { f.src + 9 + (3 << 20), 0 } };
    iov[2].iov_len = WRITER_BYTES - iov[0].iov_len - iov[1].iov_len;
    sock_writer_start(f.w, f.sv[0], iov, 3);
    memset(iov, 0, sizeof iov);   /* the writer keeps its own copy of the array */
    flow_read_all(&f);
    ck_assert_int_eq(done_efd_wait(f.efd, 10000), 1);
    ck_assert_int_eq(writer_status(f.w), 0);
    ck_assert(!sock_writer_busy(f.w));
    ck_assert_uint_eq(sock_writer_writes(f.w), 1);
    flow_end(&f);
}
END_TEST

/* Two writes handed at once go out one after the other, whole, and their
 * results come back in order, each once. */
START_TEST(second_write_follows_the_first)
{
    struct flow f;
    flow_start(&f, 7);
    size_t half = WRITER_BYTES / 2 + 5;   /* uneven: a boundary inside a read */
    sock_writer_start(f.w, f.sv[0], &(struct iovec){ f.src, half }, 1);
    sock_writer_start(f.w, f.sv[0], &(struct iovec){ f.src + half, WRITER_BYTES - half }, 1);
    ck_assert_int_eq(sock_writer_queued(f.w), 2);
    flow_read_all(&f);
    int done = 0;
    while (done < 2) {
        int k = done_efd_wait(f.efd, 10000);
        ck_assert_int_gt(k, 0);
        done += k;
    }
    size_t written;
    int status;
    ck_assert(sock_writer_take(f.w, &written, &status));
    ck_assert_int_eq(status, 0);
    ck_assert_uint_eq(written, half);
    ck_assert(sock_writer_take(f.w, &written, &status));
    ck_assert_int_eq(status, 0);
    ck_assert_uint_eq(written, WRITER_BYTES - half);
    ck_assert(!sock_writer_take(f.w, &written, &status));
    ck_assert_int_eq(sock_writer_queued(f.w), 0);
    flow_end(&f);
}
END_TEST

START_TEST(vanished_peer_is_an_error)
{
    int sv[2], efd = eventfd(0, EFD_CLOEXEC);
    writer_pair(sv);
    close(sv[1]);
    uint8_t *src = calloc(1, WRITER_BYTES);
    ck_assert_ptr_nonnull(src);
    struct sock_writer *w = sock_writer_new("test-writer", 0, done_efd_add, &efd);
    ck_assert_ptr_nonnull(w);
    sock_writer_start(w, sv[0], &(struct iovec){ src, WRITER_BYTES }, 1);
    ck_assert_int_eq(done_efd_wait(efd, 10000), 1);
    ck_assert_int_eq(writer_status(w), -EPIPE);
    sock_writer_free(w);
    close(sv[0]);
    close(efd);
    free(src);
}
END_TEST

/* A writer in the middle of a write of WRITER_BYTES that the peer
 * (sv[1]) never reads, so it cannot finish. */
struct stalled {
    int sv[2], efd;
    uint8_t *src;
    struct sock_writer *w;
};

static void stalled_start(struct stalled *t)
{
    t->efd = eventfd(0, EFD_CLOEXEC);
    writer_pair(t->sv);
    t->src = calloc(1, WRITER_BYTES);
    ck_assert_ptr_nonnull(t->src);
    t->w = sock_writer_new("test-writer", 0, done_efd_add, &t->efd);
    ck_assert_ptr_nonnull(t->w);
    sock_writer_start(t->w, t->sv[0], &(struct iovec){ t->src, WRITER_BYTES }, 1);
    ck_assert_int_eq(done_efd_wait(t->efd, 200), 0);
    ck_assert(sock_writer_busy(t->w));
}

/* After the writer was freed. */
static void stalled_end(struct stalled *t)
{
    close(t->sv[0]);
    close(t->sv[1]);
    close(t->efd);
    free(t->src);
}

START_TEST(stop_mid_write_returns_what_went)
{
    struct stalled t;
    stalled_start(&t);
    sock_writer_stop(t.w);
    ck_assert(!sock_writer_busy(t.w));
    ck_assert_int_eq(done_efd_wait(t.efd, 0), 0);   /* done() is not called for it */
    ck_assert_int_eq(sock_writer_queued(t.w), 1);   /* until its result is taken */
    size_t written;
    int status;
    ck_assert(sock_writer_take(t.w, &written, &status));
    ck_assert_int_eq(status, -ECANCELED);
    ck_assert_int_eq(sock_writer_queued(t.w), 0);
    ck_assert_uint_gt(written, 0);                     /* the socket's buffer took some */
    ck_assert_uint_lt(written, WRITER_BYTES);
    /* The next write goes through: the peer drains the first's bytes. */
    sock_writer_start(t.w, t.sv[0], &(struct iovec){ t.src, 4096 }, 1);
    uint8_t *got = malloc(written + 4096);
    ck_assert_ptr_nonnull(got);
    size_t have = 0;
    while (have < written + 4096) {
        ssize_t k = read(t.sv[1], got + have, written + 4096 - have);
        ck_assert_int_gt(k, 0);
        have += (size_t)k;
    }
    ck_assert_int_eq(done_efd_wait(t.efd, 10000), 1);
    ck_assert_int_eq(writer_status(t.w), 0);
    ck_assert_uint_eq(sock_writer_writes(t.w), 2);
    sock_writer_free(t.w);
    stalled_end(&t);
    free(got);
}
END_TEST

/* Stopping ends the write going where it got to and the one behind it
 * unwritten; both results are taken, the first first. */
START_TEST(stop_ends_the_write_behind_unwritten)
{
    struct stalled t;
    stalled_start(&t);
    sock_writer_start(t.w, t.sv[0], &(struct iovec){ t.src, 4096 }, 1);
    ck_assert_int_eq(sock_writer_queued(t.w), 2);
    sock_writer_stop(t.w);
    ck_assert(!sock_writer_busy(t.w));
    ck_assert_int_eq(done_efd_wait(t.efd, 0), 0);   /* done() for neither */
    size_t written;
    int status;
    ck_assert(sock_writer_take(t.w, &written, &status));
    ck_assert_int_eq(status, -ECANCELED);
    ck_assert_uint_gt(written, 0);
    ck_assert(sock_writer_take(t.w, &written, &status));
    ck_assert_int_eq(status, -ECANCELED);
    ck_assert_uint_eq(written, 0);
    ck_assert_int_eq(sock_writer_queued(t.w), 0);
    sock_writer_free(t.w);
    stalled_end(&t);
}
END_TEST

START_TEST(free_mid_write_returns)
{
    struct stalled t;
    stalled_start(&t);
    sock_writer_free(t.w);
    ck_assert_int_eq(done_efd_wait(t.efd, 0), 0);   /* done() is not called for it */
    stalled_end(&t);
}
END_TEST

/* Asked to, the thread runs nicer than the process by that much (the
 * daemon's writers: bulk bytes wait for the threads serving calls). */
START_TEST(writer_runs_nicer_when_asked)
{
    int sv[2], efd = eventfd(0, EFD_CLOEXEC);
    writer_pair(sv);
    errno = 0;
    int base = getpriority(PRIO_PROCESS, 0);
    ck_assert_int_eq(errno, 0);
    struct sock_writer *w = sock_writer_new("test-nicer", 3, done_efd_add, &efd);
    ck_assert_ptr_nonnull(w);
    uint8_t byte = 7, got = 0;
    sock_writer_start(w, sv[0], &(struct iovec){ &byte, 1 }, 1);
    ck_assert_int_eq(done_efd_wait(efd, 10000), 1);   /* so it has set its own */
    ck_assert_int_eq(read(sv[1], &got, 1), 1);
    ck_assert_int_eq(got, 7);
    int id = proc_thread_find(0, "test-nicer");
    ck_assert_int_gt(id, 0);
    ck_assert_int_eq(getpriority(PRIO_PROCESS, (id_t)id), (base + 3 > 19 ? 19 : base + 3));
    ck_assert_int_eq(getpriority(PRIO_PROCESS, 0), base);   /* the caller's own is untouched */
    ck_assert_int_eq(writer_status(w), 0);
    sock_writer_free(w);
    close(sv[0]);
    close(sv[1]);
    close(efd);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sock_writer");
    const TTest *const tests[] = {
        large_write_arrives_whole_and_in_order,
        second_write_follows_the_first,
        vanished_peer_is_an_error,
        stop_mid_write_returns_what_went,
        stop_ends_the_write_behind_unwritten,
        free_mid_write_returns,
        writer_runs_nicer_when_asked,
        NULL,
    };
    check_run_case(s, "writer", tests);
    return check_run(s, CK_FORK_GETENV);
}
