/* listen_writer.c: one accepted socket's large writes on a thread of its
 * own (listen_writer.h). The thread sleeps on a condition variable until a
 * write comes, then polls the socket (and an eventfd that asks it to stop)
 * and writes until the write is done or fails. */
#include "listen_writer.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

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

/* Writes all of iov[0..n) (shortened in place as it goes): 0, or a
 * negative errno; -ECANCELED when asked to stop. */
static int listen_writer_all(struct listen_writer *w, struct iovec *iov, int n)
{
    while (n > 0) {
        /* sendmsg for MSG_NOSIGNAL: a vanished peer is an error, not SIGPIPE. */
        struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)n };
        ssize_t k = sendmsg(w->fd, &m, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && errno != EAGAIN)
            return -errno;
        if (k < 0) {
            struct pollfd p[2] = { { w->fd, POLLOUT, 0 }, { w->stop_fd, POLLIN, 0 } };
            if (poll(p, 2, -1) < 0 && errno != EINTR)
                return -errno;
            if (p[1].revents)
                return -ECANCELED;
            continue;
        }
        while (n > 0 && (size_t)k >= iov[0].iov_len) {
            k -= (ssize_t)iov[0].iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov[0].iov_base = (uint8_t *)iov[0].iov_base + k;
            iov[0].iov_len -= (size_t)k;
        }
    }
    return 0;
}

static void *listen_writer_main(void *arg)
{
    struct listen_writer *w = arg;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->pending && !w->stopping)
            pthread_cond_wait(&w->wake, &w->lock);
        if (w->stopping)
            break;
        w->pending = false;
        pthread_mutex_unlock(&w->lock);
        int status = listen_writer_all(w, w->iov, w->n);
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
    uint64_t one = 1;
    if (write(w->stop_fd, &one, sizeof one) < 0) {
        /* An eventfd's counter does not fill with one write. */
    }
    pthread_join(w->thread, NULL);
    close(w->stop_fd);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
