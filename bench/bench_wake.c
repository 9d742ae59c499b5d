/* SPDX-License-Identifier: MIT */
/* bench_wake.c: the floor under a tiny call's latency, with no ampd at all.
 *
 * A 16-byte call through ampd crosses threads four times: the client's
 * request wakes the daemon's I/O loop, the loop hands the job to a host
 * worker (or the runner) and wakes it, the worker's completion wakes the
 * loop (libuv's async handle: an eventfd the loop's epoll watches), and the
 * reply wakes the client. Each wake of a sleeping thread costs what the
 * host's scheduler and, in a virtual machine, its hypervisor take to
 * restart an idle CPU. This program times the same shapes with nothing
 * else in them, over a Unix socket pair, 16 bytes each way:
 *
 *   socket   the client writes and waits in poll(); a server thread in
 *            epoll_wait reads and answers at once: two wakes a round trip,
 *            what any server that answers on its loop thread costs;
 *   + hop    the server thread hands each request to a worker thread
 *            (mutex and condition variable) and answers when the worker's
 *            eventfd says it is done: four wakes, ampd's host path shape;
 *   + hop, loop spins / worker spins / both spin: the same, but the loop
 *            polls the eventfd without sleeping while a job is out, or the
 *            worker polls for the next job for up to WAKE_SPIN_US before it
 *            sleeps: what busy-polling would save of the two inner wakes.
 *
 * Usage: bench_wake [--calls N]. Prints p50/p90/p99 in microseconds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_util.h"

#define WAKE_MSG 16
#define WAKE_CALLS_DEFAULT 20000
#define WAKE_WARMUP 1000
#define WAKE_SPIN_US 200

enum wake_spin { SPIN_NONE, SPIN_LOOP, SPIN_WORKER, SPIN_BOTH };

/* The server side: its loop thread, and the worker when hop is set. */
struct wake_server {
    int fd;                  /* the server's end of the socket pair */
    int done_fd;             /* eventfd: the worker's completions, watched by the loop */
    bool hop;
    enum wake_spin spin;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    _Atomic int queued;      /* requests handed to the worker, not yet taken */
    bool stop;
    pthread_t loop, worker;
};

static void *wake_worker(void *arg)
{
    struct wake_server *s = arg;
    for (;;) {
        if (s->spin == SPIN_WORKER || s->spin == SPIN_BOTH) {
            double end = bench_now() + WAKE_SPIN_US / 1e6;
            while (!s->queued && bench_now() < end)
                __builtin_ia32_pause();
        }
        pthread_mutex_lock(&s->mu);
        while (!s->queued && !s->stop)
            pthread_cond_wait(&s->cv, &s->mu);
        if (s->stop) {
            pthread_mutex_unlock(&s->mu);
            return NULL;
        }
        s->queued--;
        pthread_mutex_unlock(&s->mu);
        uint64_t one = 1;   /* the job itself: nothing */
        if (write(s->done_fd, &one, sizeof one) != sizeof one)
            bench_die("eventfd write: %s", strerror(errno));
    }
}

static void wake_answer(int fd, const uint8_t *msg)
{
    if (write(fd, msg, WAKE_MSG) != WAKE_MSG)
        bench_die("server write: %s", strerror(errno));
}

static void *wake_loop(void *arg)
{
    struct wake_server *s = arg;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = s->fd};
    epoll_ctl(ep, EPOLL_CTL_ADD, s->fd, &ev);
    ev.data.fd = s->done_fd;
    epoll_ctl(ep, EPOLL_CTL_ADD, s->done_fd, &ev);
    uint8_t msg[WAKE_MSG];
    for (;;) {
        struct epoll_event got[2];
        int n = epoll_wait(ep, got, 2, -1);
        for (int i = 0; i < n; i++) {
            if (got[i].data.fd == s->done_fd) {
                uint64_t v;
                if (read(s->done_fd, &v, sizeof v) == sizeof v)
                    for (uint64_t k = 0; k < v; k++)
                        wake_answer(s->fd, msg);
                continue;
            }
            ssize_t r = read(s->fd, msg, sizeof msg);
            if (r <= 0) {
                close(ep);
                return NULL;   /* the client closed: the run is over */
            }
            if (!s->hop) {
                wake_answer(s->fd, msg);
                continue;
            }
            pthread_mutex_lock(&s->mu);
            s->queued++;
            pthread_cond_signal(&s->cv);
            pthread_mutex_unlock(&s->mu);
            if (s->spin == SPIN_LOOP || s->spin == SPIN_BOTH) {
                uint64_t v = 0;
                while (read(s->done_fd, &v, sizeof v) != sizeof v)
                    __builtin_ia32_pause();
                wake_answer(s->fd, msg);
            }
        }
    }
}

/* One round trip as libampclient makes it: write, then poll() and read. */
static double wake_call(int fd)
{
    uint8_t msg[WAKE_MSG] = {0};
    double t0 = bench_now();
    if (write(fd, msg, sizeof msg) != sizeof msg)
        bench_die("client write: %s", strerror(errno));
    struct pollfd p = {fd, POLLIN, 0};
    while (poll(&p, 1, -1) < 0 && errno == EINTR) {
    }
    if (read(fd, msg, sizeof msg) != sizeof msg)
        bench_die("client read: %s", strerror(errno));
    return bench_now() - t0;
}

static void wake_row(const char *name, bool hop, enum wake_spin spin, int calls, double *t)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        bench_die("socketpair: %s", strerror(errno));
    struct wake_server s = {.fd = sv[1], .hop = hop, .mu = PTHREAD_MUTEX_INITIALIZER,
                            .cv = PTHREAD_COND_INITIALIZER};
    s.spin = spin;
    s.done_fd = eventfd(0, EFD_CLOEXEC | (spin == SPIN_LOOP || spin == SPIN_BOTH ? EFD_NONBLOCK : 0));
    if (s.done_fd < 0)
        bench_die("eventfd: %s", strerror(errno));
    pthread_create(&s.loop, NULL, wake_loop, &s);
    if (hop)
        pthread_create(&s.worker, NULL, wake_worker, &s);
    for (int i = 0; i < WAKE_WARMUP; i++)
        wake_call(sv[0]);
    for (int i = 0; i < calls; i++)
        t[i] = wake_call(sv[0]) * 1e6;
    close(sv[0]);
    pthread_join(s.loop, NULL);
    if (hop) {
        pthread_mutex_lock(&s.mu);
        s.stop = true;
        pthread_cond_signal(&s.cv);
        pthread_mutex_unlock(&s.mu);
        pthread_join(s.worker, NULL);
    }
    close(sv[1]);
    close(s.done_fd);
    qsort(t, (size_t)calls, sizeof *t, bench_cmp_double);
    static const int wakes[] = {4, 3, 3, 2};
    printf("%-22s %6d %9.1f %9.1f %9.1f\n", name, hop ? wakes[spin] : 2, t[calls / 2], t[calls * 9 / 10],
           t[calls * 99 / 100]);
}

int main(int argc, char **argv)
{
    int calls = WAKE_CALLS_DEFAULT;
    if (argc == 3 && strcmp(argv[1], "--calls") == 0)
        calls = atoi(argv[2]);
    else if (argc != 1)
        bench_die("usage: bench_wake [--calls N]");
    if (calls < 100)
        bench_die("--calls: at least 100");
    double *t = malloc((size_t)calls * sizeof *t);
    if (!t)
        bench_die("out of memory");
    printf("# %d round trips of %d bytes each way over a Unix socket pair, after %d warm-up\n",
           calls, WAKE_MSG, WAKE_WARMUP);
    printf("%-22s %6s %9s %9s %9s\n", "shape", "wakes", "p50 us", "p90 us", "p99 us");
    wake_row("socket", false, SPIN_NONE, calls, t);
    wake_row("+ hop", true, SPIN_NONE, calls, t);
    wake_row("+ hop, loop spins", true, SPIN_LOOP, calls, t);
    wake_row("+ hop, worker spins", true, SPIN_WORKER, calls, t);
    wake_row("+ hop, both spin", true, SPIN_BOTH, calls, t);
    free(t);
    return 0;
}
