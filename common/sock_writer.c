/* SPDX-License-Identifier: MIT */
/* sock_writer.c: a socket's large writes on a thread of their own
 * (sock_writer.h). The thread sleeps on a condition variable until a
 * write is handed, sends the oldest it has not ended, says so, and goes
 * on with the next or sleeps again. Handed writes are a ring of
 * SOCK_WRITER_QUEUE: [first, first + queued) in order, of which the first
 * `ended` have ended and wait for the owner to take their results. */
#include "sock_writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bulk_thread.h"
#include "iov_send.h"

struct sock_writer_job {
    int fd;
    struct iovec iov[SOCK_WRITER_IOV];
    int n;
    size_t written;            /* once ended */
    int status;
};

struct sock_writer {
    struct bulk_thread t;      /* its lock guards what follows; cancel: end the rest unwritten */
    sock_writer_done_cb done;
    void *ctx;
    struct sock_writer_job job[SOCK_WRITER_QUEUE];
    int first, queued, ended;
    uint64_t writes;
};

static void *sock_writer_main(void *arg)
{
    struct sock_writer *w = arg;
    bulk_thread_enter(&w->t);
    pthread_mutex_lock(&w->t.lock);
    for (;;) {
        while (w->ended == w->queued && !w->t.quit)
            pthread_cond_wait(&w->t.cond, &w->t.lock);
        if (w->t.quit)
            break;
        struct sock_writer_job *j = &w->job[(w->first + w->ended) % SOCK_WRITER_QUEUE];
        size_t written = 0;
        int status = -ECANCELED;
        if (!atomic_load(&w->t.cancel)) {
            pthread_mutex_unlock(&w->t.lock);
            status = iov_send_all(j->fd, j->iov, j->n, w->t.stop_fd, &written);
            pthread_mutex_lock(&w->t.lock);
        }
        j->written = written;
        j->status = status;
        w->ended++;
        w->writes++;
        pthread_cond_broadcast(&w->t.cond);
        if (status != -ECANCELED)
            bulk_thread_tell(&w->t, w->done, w->ctx);
    }
    pthread_mutex_unlock(&w->t.lock);
    return NULL;
}

struct sock_writer *sock_writer_new(const char *name, int nice, sock_writer_done_cb done,
                                    void *ctx)
{
    struct sock_writer *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->done = done;
    w->ctx = ctx;
    if (bulk_thread_start(&w->t, name, nice, sock_writer_main, w) != 0) {
        free(w);
        return NULL;
    }
    return w;
}

void sock_writer_start(struct sock_writer *w, int fd, const struct iovec *iov, int n)
{
    pthread_mutex_lock(&w->t.lock);
    struct sock_writer_job *j = &w->job[(w->first + w->queued) % SOCK_WRITER_QUEUE];
    memcpy(j->iov, iov, (size_t)n * sizeof(*iov));
    j->n = n;
    j->fd = fd;
    w->queued++;
    pthread_cond_broadcast(&w->t.cond);
    pthread_mutex_unlock(&w->t.lock);
}

int sock_writer_queued(struct sock_writer *w)
{
    pthread_mutex_lock(&w->t.lock);
    int n = w->queued;
    pthread_mutex_unlock(&w->t.lock);
    return n;
}

bool sock_writer_busy(struct sock_writer *w)
{
    pthread_mutex_lock(&w->t.lock);
    bool busy = w->ended < w->queued;
    pthread_mutex_unlock(&w->t.lock);
    return busy;
}

bool sock_writer_take(struct sock_writer *w, size_t *written, int *status)
{
    pthread_mutex_lock(&w->t.lock);
    bool ended = w->ended > 0;
    if (ended) {
        struct sock_writer_job *j = &w->job[w->first];
        *written = j->written;
        *status = j->status;
        w->first = (w->first + 1) % SOCK_WRITER_QUEUE;
        w->queued--;
        w->ended--;
    }
    pthread_mutex_unlock(&w->t.lock);
    return ended;
}

static bool sock_writer_busy_locked(void *arg)
{
    struct sock_writer *w = arg;
    return w->ended < w->queued;
}

void sock_writer_stop(struct sock_writer *w)
{
    bulk_thread_stop(&w->t, sock_writer_busy_locked, w);
}

uint64_t sock_writer_writes(struct sock_writer *w)
{
    pthread_mutex_lock(&w->t.lock);
    uint64_t n = w->writes;
    pthread_mutex_unlock(&w->t.lock);
    return n;
}

void sock_writer_free(struct sock_writer *w)
{
    if (!w)
        return;
    sock_writer_stop(w);
    bulk_thread_end(&w->t);
    free(w);
}
