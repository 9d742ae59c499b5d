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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

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
    char name[16];
    int nice;
    sock_writer_done_cb done;
    void *ctx;
    int stop_fd;               /* eventfd: readable while sock_writer_stop() waits */
    pthread_t thread;
    pthread_mutex_t lock;      /* guards what follows */
    pthread_cond_t cond;       /* a write came or ended, or quit */
    struct sock_writer_job job[SOCK_WRITER_QUEUE];
    int first, queued, ended;
    bool cancel;               /* sock_writer_stop(): end the rest unwritten */
    bool quit;
    uint64_t writes;
};

static void *sock_writer_main(void *arg)
{
    struct sock_writer *w = arg;
    bulk_thread_enter(w->name, w->nice);
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (w->ended == w->queued && !w->quit)
            pthread_cond_wait(&w->cond, &w->lock);
        if (w->quit)
            break;
        struct sock_writer_job *j = &w->job[(w->first + w->ended) % SOCK_WRITER_QUEUE];
        size_t written = 0;
        int status = -ECANCELED;
        if (!w->cancel) {
            pthread_mutex_unlock(&w->lock);
            status = iov_send_all(j->fd, j->iov, j->n, w->stop_fd, &written);
            pthread_mutex_lock(&w->lock);
        }
        j->written = written;
        j->status = status;
        w->ended++;
        w->writes++;
        pthread_cond_broadcast(&w->cond);
        if (status != -ECANCELED) {
            /* Told with the lock let go (sock_reader.c says why). */
            pthread_mutex_unlock(&w->lock);
            w->done(w->ctx);
            pthread_mutex_lock(&w->lock);
        }
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

struct sock_writer *sock_writer_new(const char *name, int nice, sock_writer_done_cb done,
                                    void *ctx)
{
    struct sock_writer *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    snprintf(w->name, sizeof(w->name), "%s", name);
    w->nice = nice;
    w->done = done;
    w->ctx = ctx;
    w->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->stop_fd < 0) {
        free(w);
        return NULL;
    }
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    if (bulk_thread_start(&w->thread, sock_writer_main, w) != 0) {
        close(w->stop_fd);
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
    }
    return w;
}

void sock_writer_start(struct sock_writer *w, int fd, const struct iovec *iov, int n)
{
    pthread_mutex_lock(&w->lock);
    struct sock_writer_job *j = &w->job[(w->first + w->queued) % SOCK_WRITER_QUEUE];
    memcpy(j->iov, iov, (size_t)n * sizeof(*iov));
    j->n = n;
    j->fd = fd;
    w->queued++;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

int sock_writer_queued(struct sock_writer *w)
{
    pthread_mutex_lock(&w->lock);
    int n = w->queued;
    pthread_mutex_unlock(&w->lock);
    return n;
}

bool sock_writer_busy(struct sock_writer *w)
{
    pthread_mutex_lock(&w->lock);
    bool busy = w->ended < w->queued;
    pthread_mutex_unlock(&w->lock);
    return busy;
}

bool sock_writer_take(struct sock_writer *w, size_t *written, int *status)
{
    pthread_mutex_lock(&w->lock);
    bool ended = w->ended > 0;
    if (ended) {
        struct sock_writer_job *j = &w->job[w->first];
        *written = j->written;
        *status = j->status;
        w->first = (w->first + 1) % SOCK_WRITER_QUEUE;
        w->queued--;
        w->ended--;
    }
    pthread_mutex_unlock(&w->lock);
    return ended;
}

void sock_writer_stop(struct sock_writer *w)
{
    pthread_mutex_lock(&w->lock);
    if (w->ended < w->queued) {
        w->cancel = true;
        eventfd_write(w->stop_fd, 1);
        while (w->ended < w->queued)
            pthread_cond_wait(&w->cond, &w->lock);
        eventfd_t v;
        eventfd_read(w->stop_fd, &v);   /* the thread no longer looks: nothing left raised */
        w->cancel = false;
    }
    pthread_mutex_unlock(&w->lock);
}

uint64_t sock_writer_writes(struct sock_writer *w)
{
    pthread_mutex_lock(&w->lock);
    uint64_t n = w->writes;
    pthread_mutex_unlock(&w->lock);
    return n;
}

void sock_writer_free(struct sock_writer *w)
{
    if (!w)
        return;
    sock_writer_stop(w);
    pthread_mutex_lock(&w->lock);
    w->quit = true;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    close(w->stop_fd);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
