/* SPDX-License-Identifier: MIT */
/* sock_reader.c: a socket's large reads on a thread of their own
 * (sock_reader.h). The thread sleeps on a condition variable until a read
 * is handed, reads until it is filled (POLLIN as needed), says so, and
 * sleeps again. */
#include "sock_reader.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "bulk_thread.h"

struct sock_reader {
    struct bulk_thread t;      /* its lock guards what follows; cancel: end the read where it is */
    size_t step;
    sock_reader_done_cb done;
    void *ctx;
    int fd;
    uint8_t *dest;
    size_t len;
    bool handed;               /* a read is handed and not taken */
    bool ended;                /* ... and has ended: got and status hold its result */
    size_t got;
    int status;
};

/* Reads len bytes from fd into dest, or until the peer closes (0), the
 * socket fails (-errno) or the read is stopped (-ECANCELED); *got is what
 * was read either way. */
static int sock_reader_fill(struct sock_reader *r, int fd, uint8_t *dest, size_t len, size_t *got)
{
    *got = 0;
    while (*got < len) {
        if (atomic_load(&r->t.cancel))
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
        struct pollfd pf[2] = {{.fd = fd, .events = POLLIN}, {.fd = r->t.stop_fd, .events = POLLIN}};
        if (poll(pf, 2, -1) < 0 && errno != EINTR)
            return -errno;
    }
    return 0;
}

static void *sock_reader_main(void *arg)
{
    struct sock_reader *r = arg;
    bulk_thread_enter(&r->t);
    pthread_mutex_lock(&r->t.lock);
    for (;;) {
        while ((!r->handed || r->ended) && !r->t.quit)
            pthread_cond_wait(&r->t.cond, &r->t.lock);
        if (r->t.quit)
            break;
        int fd = r->fd;
        uint8_t *dest = r->dest;
        size_t len = r->len, got = 0;
        pthread_mutex_unlock(&r->t.lock);
        int status = sock_reader_fill(r, fd, dest, len, &got);
        pthread_mutex_lock(&r->t.lock);
        r->got = got;
        r->status = status;
        r->ended = true;
        pthread_cond_broadcast(&r->t.cond);
        if (status != -ECANCELED)
            bulk_thread_tell(&r->t, r->done, r->ctx);   /* after the owner may have taken it */
    }
    pthread_mutex_unlock(&r->t.lock);
    return NULL;
}

struct sock_reader *sock_reader_new(const char *name, int nice, size_t step,
                                    sock_reader_done_cb done, void *ctx)
{
    struct sock_reader *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->step = step ? step : 1;
    r->done = done;
    r->ctx = ctx;
    if (bulk_thread_start(&r->t, name, nice, sock_reader_main, r) != 0) {
        free(r);
        return NULL;
    }
    return r;
}

void sock_reader_start(struct sock_reader *r, int fd, uint8_t *dest, size_t len)
{
    pthread_mutex_lock(&r->t.lock);
    r->fd = fd;
    r->dest = dest;
    r->len = len;
    r->handed = true;
    r->ended = false;
    pthread_cond_broadcast(&r->t.cond);
    pthread_mutex_unlock(&r->t.lock);
}

bool sock_reader_take(struct sock_reader *r, size_t *got, int *status)
{
    pthread_mutex_lock(&r->t.lock);
    bool ended = r->handed && r->ended;
    if (ended) {
        *got = r->got;
        *status = r->status;
        r->handed = r->ended = false;
    }
    pthread_mutex_unlock(&r->t.lock);
    return ended;
}

static bool sock_reader_busy_locked(void *arg)
{
    struct sock_reader *r = arg;
    return r->handed && !r->ended;
}

void sock_reader_stop(struct sock_reader *r)
{
    bulk_thread_stop(&r->t, sock_reader_busy_locked, r);
}

void sock_reader_free(struct sock_reader *r)
{
    if (!r)
        return;
    sock_reader_stop(r);
    bulk_thread_end(&r->t);
    free(r);
}
