/* SPDX-License-Identifier: MIT */
/* bulk_thread.c: starting and setting up a bulk-byte thread (bulk_thread.h). */
#define _GNU_SOURCE   /* pthread_setname_np */
#include "bulk_thread.h"

#include <errno.h>
#include <signal.h>
#include <sys/resource.h>

int bulk_thread_start(pthread_t *thread, void *(*main)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);   /* the thread inherits it */
    int rc = pthread_create(thread, NULL, main, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

void bulk_thread_enter(const char *name, int nice)
{
    pthread_setname_np(pthread_self(), name);
    if (!nice)
        return;
    /* Linux's niceness is a thread's own; raising it cannot fail for want
     * of privilege, and at worst the thread runs as before. */
    errno = 0;
    int now = getpriority(PRIO_PROCESS, 0);
    if (errno == 0)
        (void)setpriority(PRIO_PROCESS, 0, now + nice);
}
