/* sock_writer.c: a socket's large writes on a thread of their own
 * (sock_writer.h). The thread sleeps on a condition variable until a
 * write comes, sends it, says so, and sleeps again. */
#define _GNU_SOURCE   /* pthread_setname_np */
#include "sock_writer.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "iov_send.h"

struct sock_writer {
    char name[16];
    sock_writer_done_cb done;
    void *ctx;
    int stop_fd;               /* eventfd: readable while sock_writer_stop() waits */
    pthread_t thread;
    pthread_mutex_t lock;      /* guards what follows */
    pthread_cond_t cond;       /* a write came or ended, or quit */
    bool job;                  /* a write was started and has not ended */
    bool quit;
    int fd;
    struct iovec iov[SOCK_WRITER_IOV];
    int n;
    size_t written;            /* of the last ended write */
    int status;
    uint64_t writes;
};

static void *sock_writer_main(void *arg)
{
    struct sock_writer *w = arg;
    pthread_setname_np(pthread_self(), w->name);
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->job && !w->quit)
            pthread_cond_wait(&w->cond, &w->lock);
        if (w->quit)
            break;
        pthread_mutex_unlock(&w->lock);
        size_t written;
        int status = iov_send_all(w->fd, w->iov, w->n, w->stop_fd, &written);
        pthread_mutex_lock(&w->lock);
        w->written = written;
        w->status = status;
        w->job = false;
        w->writes++;
        if (status != -ECANCELED)
            w->done(w->ctx);
        pthread_cond_broadcast(&w->cond);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

struct sock_writer *sock_writer_new(const char *name, sock_writer_done_cb done, void *ctx)
{
    struct sock_writer *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    snprintf(w->name, sizeof(w->name), "%s", name);
    w->done = done;
    w->ctx = ctx;
    w->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->stop_fd < 0) {
        free(w);
        return NULL;
    }
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);   /* the thread inherits it */
    int rc = pthread_create(&w->thread, NULL, sock_writer_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
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
    memcpy(w->iov, iov, (size_t)n * sizeof(*iov));
    w->n = n;
    w->fd = fd;
    w->written = 0;
    w->status = 0;
    w->job = true;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

bool sock_writer_busy(struct sock_writer *w)
{
    pthread_mutex_lock(&w->lock);
    bool busy = w->job;
    pthread_mutex_unlock(&w->lock);
    return busy;
}

void sock_writer_result(struct sock_writer *w, size_t *written, int *status)
{
    pthread_mutex_lock(&w->lock);
    *written = w->written;
    *status = w->status;
    pthread_mutex_unlock(&w->lock);
}

void sock_writer_stop(struct sock_writer *w)
{
    pthread_mutex_lock(&w->lock);
    if (w->job) {
        eventfd_write(w->stop_fd, 1);
        while (w->job)
            pthread_cond_wait(&w->cond, &w->lock);
        eventfd_t v;
        eventfd_read(w->stop_fd, &v);   /* the thread no longer looks: nothing left raised */
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
