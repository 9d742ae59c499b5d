/* SPDX-License-Identifier: MIT */
/* bench_sock.c: raw socket copies (bench_sock.h). Every thread waits at
 * one gate until all are ready and reads the clock after it, so that a
 * 1 MiB copy is not measured as mostly pthread_create. */
#define _GNU_SOURCE
#include "bench_sock.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_util.h"

/* Opened by the caller once every thread waits at it, or closed when one
 * could not be started (then the others leave without copying). */
struct bench_sock_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int waiting;             /* threads at the gate */
    int state;               /* 0 shut, 1 open, -1 closed for good */
};

/* One direction: a writer sends src on wfd, a reader receives it from rfd. */
struct bench_sock_dir {
    int wfd, rfd;
    const uint8_t *src;
    uint8_t *dst;
    size_t len, write_size;
    struct bench_sock_gate *gate;
    pthread_t writer, reader;
    double t0, t1;           /* the writer's start, the reader's end */
    int err;                 /* errno of a failed read or write, else 0 */
};

/* Returns true when the copy goes ahead. */
static bool bench_sock_wait(struct bench_sock_gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->waiting++;
    pthread_cond_broadcast(&g->cv);
    while (g->state == 0)
        pthread_cond_wait(&g->cv, &g->mu);
    bool go = g->state > 0;
    pthread_mutex_unlock(&g->mu);
    return go;
}

static void bench_sock_set(struct bench_sock_gate *g, int state, int waiting)
{
    pthread_mutex_lock(&g->mu);
    while (g->waiting < waiting)
        pthread_cond_wait(&g->cv, &g->mu);
    g->state = state;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static void *bench_sock_writer(void *arg)
{
    struct bench_sock_dir *s = arg;
    if (!bench_sock_wait(s->gate))
        return NULL;
    s->t0 = bench_now();
    for (size_t done = 0; done < s->len;) {
        size_t n = s->len - done < s->write_size ? s->len - done : s->write_size;
        ssize_t w = send(s->wfd, s->src + done, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            s->err = w < 0 ? errno : EIO;
            shutdown(s->wfd, SHUT_WR);   /* so that the reader sees the end, not a hang */
            break;
        }
        done += (size_t)w;
    }
    return NULL;
}

static void *bench_sock_reader(void *arg)
{
    struct bench_sock_dir *s = arg;
    if (!bench_sock_wait(s->gate))
        return NULL;
    for (size_t done = 0; done < s->len;) {
        size_t n = s->len - done < s->write_size ? s->len - done : s->write_size;
        ssize_t r = read(s->rfd, s->dst + done, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            s->err = r == 0 ? EPIPE : errno;
            break;
        }
        done += (size_t)r;
    }
    s->t1 = bench_now();
    return NULL;
}

static int bench_sock_tcp_pair(int fd[2])
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    int one = 1;
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    fd[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    fd[1] = -1;
    if (l < 0 || fd[0] < 0 || bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 1) < 0 ||
        getsockname(l, (struct sockaddr *)&a, &alen) < 0 ||
        connect(fd[0], (struct sockaddr *)&a, sizeof a) < 0 ||
        (fd[1] = accept4(l, NULL, NULL, SOCK_CLOEXEC)) < 0) {
        int e = errno;
        if (l >= 0)
            close(l);
        if (fd[0] >= 0)
            close(fd[0]);
        errno = e;
        return -1;
    }
    close(l);
    setsockopt(fd[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return 0;
}

int bench_sock_pair(enum bench_sock_kind kind, int fd[2])
{
    if (kind == BENCH_SOCK_TCP)
        return bench_sock_tcp_pair(fd);
    return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd);
}

double bench_sock_copy(const int fd[2], const uint8_t *in, uint8_t *in_dst, const uint8_t *out,
                       uint8_t *out_dst, size_t len, size_t write_size)
{
    struct bench_sock_gate gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    struct bench_sock_dir dir[2] = {
        {.wfd = fd[0], .rfd = fd[1], .src = in, .dst = in_dst, .len = len},
        {.wfd = fd[1], .rfd = fd[0], .src = out, .dst = out_dst, .len = len},
    };
    pthread_t *th[4] = {&dir[0].writer, &dir[0].reader, &dir[1].writer, &dir[1].reader};
    int nth = out ? 4 : 2, started = 0, e = 0;
    for (; started < nth && e == 0; started++) {
        struct bench_sock_dir *s = &dir[started / 2];
        s->write_size = write_size;
        s->gate = &gate;
        e = pthread_create(th[started], NULL, started % 2 ? bench_sock_reader : bench_sock_writer,
                           s);
    }
    if (e != 0)
        started--;   /* the last one failed */
    bench_sock_set(&gate, e == 0 ? 1 : -1, started);
    for (int i = 0; i < started; i++)
        pthread_join(*th[i], NULL);
    if (e == 0)
        e = dir[0].err ? dir[0].err : out ? dir[1].err : 0;
    if (e != 0) {
        errno = e;
        return -1;
    }
    double t0 = dir[0].t0, t1 = dir[0].t1;
    if (out) {
        t0 = dir[1].t0 < t0 ? dir[1].t0 : t0;
        t1 = dir[1].t1 > t1 ? dir[1].t1 : t1;
    }
    return t1 - t0;
}

/* One end of bench_sock_copy_loop: sends src, receives dst, on one fd. */
struct bench_sock_end {
    int fd;
    const uint8_t *src;
    uint8_t *dst;
    size_t len, write_size, sent, got;
    struct bench_sock_gate *gate;
    pthread_t thread;
    double t0, t1;
    int err;
};

static int bench_sock_end_step(struct bench_sock_end *e, short revents)
{
    if ((revents & POLLOUT) && e->sent < e->len) {
        size_t n = e->len - e->sent < e->write_size ? e->len - e->sent : e->write_size;
        ssize_t w = send(e->fd, e->src + e->sent, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno != EAGAIN && errno != EINTR)
            return errno;
        e->sent += w > 0 ? (size_t)w : 0;
    }
    if ((revents & (POLLIN | POLLHUP | POLLERR)) && e->got < e->len) {
        size_t n = e->len - e->got < e->write_size ? e->len - e->got : e->write_size;
        ssize_t r = recv(e->fd, e->dst + e->got, n, MSG_DONTWAIT);
        if (r == 0)
            return EPIPE;
        if (r < 0 && errno != EAGAIN && errno != EINTR)
            return errno;
        e->got += r > 0 ? (size_t)r : 0;
    }
    return 0;
}

static void *bench_sock_end_run(void *arg)
{
    struct bench_sock_end *e = arg;
    if (!bench_sock_wait(e->gate))
        return NULL;
    e->t0 = bench_now();
    while (e->sent < e->len || e->got < e->len) {
        struct pollfd p = { e->fd, (short)((e->sent < e->len ? POLLOUT : 0) |
                                           (e->got < e->len ? POLLIN : 0)), 0 };
        if (poll(&p, 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            e->err = errno;
            break;
        }
        if ((e->err = bench_sock_end_step(e, p.revents)) != 0) {
            shutdown(e->fd, SHUT_WR);   /* so that the other end sees the end, not a hang */
            break;
        }
    }
    e->t1 = bench_now();
    return NULL;
}

double bench_sock_copy_loop(const int fd[2], const uint8_t *in, uint8_t *in_dst,
                            const uint8_t *out, uint8_t *out_dst, size_t len, size_t write_size)
{
    struct bench_sock_gate gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    struct bench_sock_end end[2] = {
        {.fd = fd[0], .src = in, .dst = out_dst, .len = len, .write_size = write_size, .gate = &gate},
        {.fd = fd[1], .src = out, .dst = in_dst, .len = len, .write_size = write_size, .gate = &gate},
    };
    int started = 0, e = 0;
    for (; started < 2 && e == 0; started++)
        e = pthread_create(&end[started].thread, NULL, bench_sock_end_run, &end[started]);
    if (e != 0)
        started--;
    bench_sock_set(&gate, e == 0 ? 1 : -1, started);
    for (int i = 0; i < started; i++)
        pthread_join(end[i].thread, NULL);
    if (e == 0)
        e = end[0].err ? end[0].err : end[1].err;
    if (e != 0) {
        errno = e;
        return -1;
    }
    double t0 = end[0].t0 < end[1].t0 ? end[0].t0 : end[1].t0;
    double t1 = end[0].t1 > end[1].t1 ? end[0].t1 : end[1].t1;
    return t1 - t0;
}
