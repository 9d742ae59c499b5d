/* SPDX-License-Identifier: MIT */
/* bulk_thread.c: a socket's bulk-byte thread's life (bulk_thread.h). */
#define _GNU_SOURCE   /* pthread_setname_np */
#include "bulk_thread.h"

#include <signal.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "thread_nice.h"

int bulk_thread_start(struct bulk_thread *t, const char *name, int nice, void *(*main)(void *),
                      void *arg)
{
    snprintf(t->name, sizeof(t->name), "%s", name);
    t->nice = nice;
    t->quit = false;
    atomic_init(&t->cancel, false);
    t->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (t->stop_fd < 0)
        return -1;
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->cond, NULL);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);   /* the thread inherits it */
    int rc = pthread_create(&t->thread, NULL, main, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        close(t->stop_fd);
        pthread_cond_destroy(&t->cond);
        pthread_mutex_destroy(&t->lock);
        return -1;
    }
    return 0;
}

void bulk_thread_enter(struct bulk_thread *t)
{
    pthread_setname_np(pthread_self(), t->name);
    /* From the process's nice, not its creator's (a daemon's loop runs
     * ahead of it); going behind cannot fail for want of privilege, and
     * at worst the thread runs as before. */
    if (t->nice)
        (void)thread_nice_set(t->nice);
}

void bulk_thread_tell(struct bulk_thread *t, void (*done)(void *ctx), void *ctx)
{
    pthread_mutex_unlock(&t->lock);
    done(ctx);
    pthread_mutex_lock(&t->lock);
}

void bulk_thread_stop(struct bulk_thread *t, bool (*busy)(void *arg), void *arg)
{
    pthread_mutex_lock(&t->lock);
    if (busy(arg)) {
        atomic_store(&t->cancel, true);
        eventfd_write(t->stop_fd, 1);
        while (busy(arg))
            pthread_cond_wait(&t->cond, &t->lock);
        eventfd_t v;
        eventfd_read(t->stop_fd, &v);   /* the thread no longer looks: nothing left raised */
        atomic_store(&t->cancel, false);
    }
    pthread_mutex_unlock(&t->lock);
}

void bulk_thread_end(struct bulk_thread *t)
{
    pthread_mutex_lock(&t->lock);
    t->quit = true;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->thread, NULL);
    close(t->stop_fd);
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
}
