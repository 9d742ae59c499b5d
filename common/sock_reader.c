/* SPDX-License-Identifier: MIT */
/* sock_reader.c: a socket's large reads on a thread of their own
 * (sock_reader.h). The thread sleeps on a condition variable until a read
 * is handed, reads until it is filled (POLLIN as needed), says so, and
 * sleeps again. */
#include "sock_reader.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bulk_thread.h"

struct sock_reader {
    char name[16];
    int nice;
    size_t step;
    sock_reader_done_cb done;
    void *ctx;
    int stop_fd;               /* eventfd: readable while sock_reader_stop() waits */
    atomic_bool cancel;        /* sock_reader_stop(): end the read where it is */
    pthread_t thread;
    pthread_mutex_t lock;      /* guards what follows */
    pthread_cond_t cond;       /* a read came or ended, or quit */
    int fd;
    uint8_t *dest;
    size_t len;
    bool handed;               /* a read is handed and not taken */
    bool ended;                /* ... and has ended: got and status hold its result */
    size_t got;
    int status;
    bool quit;
};

/* Reads len bytes from fd into dest, or until the peer closes (0), the
 * socket fails (-errno) or the read is stopped (-ECANCELED); *got is what
 * was read either way. */
static int sock_reader_fill(struct sock_reader *r, int fd, uint8_t *dest, size_t len, size_t *got)
{
    *got = 0;
    while (*got < len) {
        if (atomic_load(&r->cancel))
            return -ECANCELED;
        size_t want = len - *got < r->step ? len - *got : r->step;
        ssize_t n = recv(fd, dest + *got, want, MSG_DONTWAIT);
        if (n > 0) {
            *got += (size_t)n;
            continue;
        }
        if (n == 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -errno;
        struct pollfd pf[2] = {{.fd = fd, .events = POLLIN}, {.fd = r->stop_fd, .events = POLLIN}};
        if (poll(pf, 2, -1) < 0 && errno != EINTR)
            return -errno;
    }
    return 0;
}

static void *sock_reader_main(void *arg)
{
    struct sock_reader *r = arg;
    bulk_thread_enter(r->name, r->nice);
    pthread_mutex_lock(&r->lock);
    for (;;) {
        while ((!r->handed || r->ended) && !r->quit)
            pthread_cond_wait(&r->cond, &r->lock);
        if (r->quit)
            break;
        int fd = r->fd;
        uint8_t *dest = r->dest;
        size_t len = r->len, got = 0;
        pthread_mutex_unlock(&r->lock);
        int status = sock_reader_fill(r, fd, dest, len, &got);
        pthread_mutex_lock(&r->lock);
        r->got = got;
        r->status = status;
        r->ended = true;
        pthread_cond_broadcast(&r->cond);
        if (status != -ECANCELED) {
            /* Told with the lock let go: the owner it wakes must not find
             * it held by this thread, which then waits for a CPU at its
             * niceness. A result the owner takes first is told anyway. */
            pthread_mutex_unlock(&r->lock);
            r->done(r->ctx);
            pthread_mutex_lock(&r->lock);
        }
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

struct sock_reader *sock_reader_new(const char *name, int nice, size_t step,
                                    sock_reader_done_cb done, void *ctx)
{
    struct sock_reader *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    snprintf(r->name, sizeof(r->name), "%s", name);
    r->nice = nice;
    r->step = step ? step : 1;
    r->done = done;
    r->ctx = ctx;
    atomic_init(&r->cancel, false);
    r->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (r->stop_fd < 0) {
        free(r);
        return NULL;
    }
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->cond, NULL);
    if (bulk_thread_start(&r->thread, sock_reader_main, r) != 0) {
        close(r->stop_fd);
        pthread_cond_destroy(&r->cond);
        pthread_mutex_destroy(&r->lock);
        free(r);
        return NULL;
    }
    return r;
}

void sock_reader_start(struct sock_reader *r, int fd, uint8_t *dest, size_t len)
{
    pthread_mutex_lock(&r->lock);
    r->fd = fd;
    r->dest = dest;
    r->len = len;
    r->handed = true;
    r->ended = false;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
}

bool sock_reader_take(struct sock_reader *r, size_t *got, int *status)
{
    pthread_mutex_lock(&r->lock);
    bool ended = r->handed && r->ended;
    if (ended) {
        *got = r->got;
        *status = r->status;
        r->handed = r->ended = false;
    }
    pthread_mutex_unlock(&r->lock);
    return ended;
}

void sock_reader_stop(struct sock_reader *r)
{
    pthread_mutex_lock(&r->lock);
    if (r->handed && !r->ended) {
        atomic_store(&r->cancel, true);
        eventfd_write(r->stop_fd, 1);
        while (!r->ended)
            pthread_cond_wait(&r->cond, &r->lock);
        eventfd_t v;
        eventfd_read(r->stop_fd, &v);   /* the thread no longer looks: nothing left raised */
        atomic_store(&r->cancel, false);
    }
    pthread_mutex_unlock(&r->lock);
}

void sock_reader_free(struct sock_reader *r)
{
    if (!r)
        return;
    sock_reader_stop(r);
    pthread_mutex_lock(&r->lock);
    r->quit = true;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    close(r->stop_fd);
    pthread_cond_destroy(&r->cond);
    pthread_mutex_destroy(&r->lock);
    free(r);
}
