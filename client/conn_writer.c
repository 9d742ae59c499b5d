/* conn_writer.c: the writer thread of a plain connection (conn_writer.h).
 *
 * A single thread that moves a GiB both ways spends its time in two kernel
 * copies in turn, the write of the request and the read of the reply; with
 * the write on a thread of its own the two copies run at once. conn.c
 * hands a batch (the unwritten output, typically a 1 MiB DATA frame still
 * in the caller's memory) and keeps reading; the thread sends it
 * (iov_send_all: POLLOUT as needed) until it is written, the socket fails, or
 * the caller raises stop_fd (a deadline, a call ending, the connection
 * closing), then says so on done_fd, which the caller's poll watches.
 *
 * The thread is started on the first large batch and lives until the
 * connection shuts (conn_writer_end()); between batches it sleeps on the
 * condition variable. It blocks every signal: a library's thread must not
 * take the application's.
 */
#define _GNU_SOURCE   /* pthread_setname_np */
#include "conn_writer.h"

#include <errno.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "iov_send.h"

/* Sends the batch, in place, until it is written, the socket fails or
 * stop_fd is raised. Runs on the writer thread, without the lock: while
 * job is set the caller leaves the batch alone. */
static void conn_writer_write(struct conn_writer *w)
{
    size_t written;
    int rc = iov_send_all(w->fd, w->iov, w->niov, w->stop_fd, &written);
    int err = rc == -ECANCELED ? 0 : -rc;   /* stopped: the caller takes what was written */
    pthread_mutex_lock(&w->lock);
    w->written = written;
    w->err = err;
    w->job = 0;
    w->batches++;
    /* Raised under the lock: a caller that sees job clear also finds it
     * raised, and drains it (conn_writer_take), never leaving it up for
     * the next batch's poll. */
    eventfd_write(w->done_fd, 1);
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

static void *conn_writer_main(void *arg)
{
    struct conn_writer *w = arg;
    pthread_setname_np(pthread_self(), "amp-writer");   /* as top -H shows it */
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->job && !w->quit)
            pthread_cond_wait(&w->cond, &w->lock);
        if (w->quit)
            break;
        pthread_mutex_unlock(&w->lock);
        conn_writer_write(w);
        pthread_mutex_lock(&w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* Sets up the fds, the lock and the thread. Returns 0 or -1. */
static int conn_writer_start(struct conn_writer *w)
{
    w->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    w->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    w->job = w->quit = 0;
    int rc = w->done_fd >= 0 && w->stop_fd >= 0 ? 0 : -1;
    if (rc == 0 && pthread_mutex_init(&w->lock, NULL) != 0)
        rc = -1;
    if (rc == 0 && pthread_cond_init(&w->cond, NULL) != 0) {
        pthread_mutex_destroy(&w->lock);
        rc = -1;
    }
    if (rc == 0) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);   /* the thread inherits it */
        rc = pthread_create(&w->thread, NULL, conn_writer_main, w) == 0 ? 0 : -1;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc != 0) {
            pthread_cond_destroy(&w->cond);
            pthread_mutex_destroy(&w->lock);
        }
    }
    if (rc != 0) {
        if (w->done_fd >= 0)
            close(w->done_fd);
        if (w->stop_fd >= 0)
            close(w->stop_fd);
        w->done_fd = w->stop_fd = -1;
        return -1;
    }
    w->started = 1;
    return 0;
}

int conn_writer_hand(struct conn_writer *w, int fd, struct iovec *iov, int n)
{
    if (!w->started && conn_writer_start(w) != 0)
        return -1;
    pthread_mutex_lock(&w->lock);
    w->fd = fd;
    w->iov = iov;
    w->niov = n;
    w->written = 0;
    w->err = 0;
    w->job = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    w->busy = 1;
    return 0;
}

int conn_writer_busy(const struct conn_writer *w)
{
    return w->busy;
}

int conn_writer_fd(const struct conn_writer *w)
{
    return w->done_fd;
}

int conn_writer_take(struct conn_writer *w, size_t *written, int *err)
{
    if (!w->busy)
        return 0;
    pthread_mutex_lock(&w->lock);
    int ended = !w->job;
    *written = w->written;
    *err = w->err;
    pthread_mutex_unlock(&w->lock);
    if (!ended)
        return 0;
    eventfd_t v;
    eventfd_read(w->done_fd, &v);   /* one batch, one wake: drained for the next */
    w->busy = 0;
    return 1;
}

void conn_writer_stop(struct conn_writer *w)
{
    if (!w->busy)
        return;
    pthread_mutex_lock(&w->lock);
    if (w->job) {
        eventfd_write(w->stop_fd, 1);
        while (w->job)
            pthread_cond_wait(&w->cond, &w->lock);
    }
    eventfd_t v;
    eventfd_read(w->stop_fd, &v);   /* the thread no longer looks: nothing left raised */
    pthread_mutex_unlock(&w->lock);
}

uint64_t conn_writer_batches(struct conn_writer *w)
{
    if (!w->started)
        return w->batches;
    pthread_mutex_lock(&w->lock);
    uint64_t n = w->batches;
    pthread_mutex_unlock(&w->lock);
    return n;
}

void conn_writer_end(struct conn_writer *w)
{
    if (!w->started)
        return;
    conn_writer_stop(w);
    pthread_mutex_lock(&w->lock);
    w->quit = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    close(w->done_fd);
    close(w->stop_fd);
    w->done_fd = w->stop_fd = -1;
    w->busy = 0;
    w->started = 0;
}
