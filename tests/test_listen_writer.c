/* test_listen_writer.c: a socket's writer thread (daemon/listen_writer.c)
 * over a real socket pair: a large write arrives whole and in order while
 * the peer reads slowly, a vanished peer is an error (not SIGPIPE), and
 * freeing the writer in the middle of a write the peer never reads
 * returns. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check_run.h"
#include "listen_writer.h"

#define WRITER_BYTES ((size_t)8 << 20)

/* done(): counts into an eventfd the test thread can wait on. */
static void writer_done(void *ctx)
{
    uint64_t one = 1;
    ck_assert_int_eq(write(*(int *)ctx, &one, sizeof one), sizeof one);
}

static int writer_wait_done(int efd, int timeout_ms)
{
    struct pollfd p = { efd, POLLIN, 0 };
    if (poll(&p, 1, timeout_ms) != 1)
        return 0;
    uint64_t n = 0;
    ck_assert_int_eq(read(efd, &n, sizeof n), sizeof n);
    return (int)n;
}

static void writer_pair(int sv[2])
{
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ck_assert_int_eq(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);   /* as the loop's sockets are */
}

START_TEST(large_write_arrives_whole_and_in_order)
{
    int sv[2], efd = eventfd(0, EFD_CLOEXEC);
    writer_pair(sv);
    uint8_t *src = malloc(WRITER_BYTES), *got = malloc(WRITER_BYTES);
    ck_assert_ptr_nonnull(src);
    ck_assert_ptr_nonnull(got);
    for (size_t i = 0; i < WRITER_BYTES; i++)
        src[i] = (uint8_t)(i * 131 + (i >> 12));
    struct listen_writer *w = listen_writer_new(sv[0], writer_done, &efd);
    ck_assert_ptr_nonnull(w);
    /* Three uneven pieces, as a frame header and borrowed payloads come. */
    struct iovec iov[3] = { { src, 9 }, { src + 9, 3 << 20 }, { src + 9 + (3 << 20), 0 } };
    iov[2].iov_len = WRITER_BYTES - iov[0].iov_len - iov[1].iov_len;
    listen_writer_start(w, iov, 3);
    memset(iov, 0, sizeof iov);   /* the writer keeps its own copy of the array */
    size_t have = 0;
    while (have < WRITER_BYTES) {
        ssize_t k = read(sv[1], got + have, 64 * 1024);   /* a slow reader: small reads */
        ck_assert_int_gt(k, 0);
        have += (size_t)k;
    }
    ck_assert_int_eq(writer_wait_done(efd, 10000), 1);
    ck_assert_int_eq(listen_writer_status(w), 0);
    ck_assert_mem_eq(got, src, WRITER_BYTES);
    listen_writer_free(w);
    close(sv[0]);
    close(sv[1]);
    close(efd);
    free(src);
    free(got);
}
END_TEST

START_TEST(vanished_peer_is_an_error)
{
    int sv[2], efd = eventfd(0, EFD_CLOEXEC);
    writer_pair(sv);
    close(sv[1]);
    uint8_t *src = calloc(1, WRITER_BYTES);
    ck_assert_ptr_nonnull(src);
    struct listen_writer *w = listen_writer_new(sv[0], writer_done, &efd);
    ck_assert_ptr_nonnull(w);
    listen_writer_start(w, &(struct iovec){ src, WRITER_BYTES }, 1);
    ck_assert_int_eq(writer_wait_done(efd, 10000), 1);
    ck_assert_int_eq(listen_writer_status(w), -EPIPE);
    listen_writer_free(w);
    close(sv[0]);
    close(efd);
    free(src);
}
END_TEST

START_TEST(free_mid_write_returns)
{
    int sv[2], efd = eventfd(0, EFD_CLOEXEC);
    writer_pair(sv);
    uint8_t *src = calloc(1, WRITER_BYTES);
    ck_assert_ptr_nonnull(src);
    struct listen_writer *w = listen_writer_new(sv[0], writer_done, &efd);
    ck_assert_ptr_nonnull(w);
    listen_writer_start(w, &(struct iovec){ src, WRITER_BYTES }, 1);
    /* The peer reads nothing: the write cannot finish. */
    ck_assert_int_eq(writer_wait_done(efd, 200), 0);
    listen_writer_free(w);
    ck_assert_int_eq(writer_wait_done(efd, 0), 0);   /* done() is not called for it */
    close(sv[0]);
    close(sv[1]);
    close(efd);
    free(src);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("listen_writer");
    const TTest *const tests[] = {
        large_write_arrives_whole_and_in_order,
        vanished_peer_is_an_error,
        free_mid_write_returns,
        NULL,
    };
    check_run_case(s, "writer", tests);
    return check_run(s, CK_FORK_GETENV);
}
