/* listen_writer.c: one accepted socket's large writes on a thread of its
 * own (listen_writer.h). The thread sleeps on a condition variable until a
 * write comes, then sends it (iov_send_all), polling the socket and an
 * eventfd that asks it to stop, until it is done or fails. */
#define _GNU_SOURCE   /* pthread_setname_np */
#include "listen_writer.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "iov_send.h"

struct listen_writer {
    int fd;                             /* the socket, not owned */
    int stop_fd;                        /* eventfd: readable once free() asks the thread to end */
    listen_writer_done_cb done;
    void *ctx;
    pthread_t thread;
    pthread_mutex_t lock;               /* guards pending, stopping and status */
    pthread_cond_t wake;
    bool pending;                       /* iov holds a write not yet taken */
    bool stopping;
    int status;
    struct iovec iov[LISTEN_WRITE_IOV];
    int n;
};

static void *listen_writer_main(void *arg)
{
    struct listen_writer *w = arg;
    pthread_setname_np(pthread_self(), "ampd-writer");   /* as top -H shows it */
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->pending && !w->stopping)
            pthread_cond_wait(&w->wake, &w->lock);
        if (w->stopping)
            break;
        w->pending = false;
        pthread_mutex_unlock(&w->lock);
        size_t sent;
        int status = iov_send_all(w->fd, w->iov, w->n, w->stop_fd, &sent);
        pthread_mutex_lock(&w->lock);
        w->status = status;
        if (w->stopping)
            break;
        pthread_mutex_unlock(&w->lock);
        w->done(w->ctx);
        pthread_mutex_lock(&w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

struct listen_writer *listen_writer_new(int fd, listen_writer_done_cb done, void *ctx)
{
    struct listen_writer *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->fd = fd;
    w->done = done;
    w->ctx = ctx;
    w->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    if (w->stop_fd < 0 || pthread_create(&w->thread, NULL, listen_writer_main, w) != 0) {
        if (w->stop_fd >= 0)
            close(w->stop_fd);
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
    }
    return w;
}

void listen_writer_start(struct listen_writer *w, const struct iovec *iov, int n)
{
    pthread_mutex_lock(&w->lock);
    memcpy(w->iov, iov, (size_t)n * sizeof(*iov));
    w->n = n;
    w->status = 0;
    w->pending = true;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
}

int listen_writer_status(struct listen_writer *w)
{
    pthread_mutex_lock(&w->lock);
    int status = w->status;
    pthread_mutex_unlock(&w->lock);
    return status;
}

void listen_writer_free(struct listen_writer *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stopping = true;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    eventfd_write(w->stop_fd, 1);
    pthread_join(w->thread, NULL);
    close(w->stop_fd);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
