/* SPDX-License-Identifier: MIT */
/* thread_nice.c: a thread's nice value, counted from its process's
 * (thread_nice.h). */
#include "thread_nice.h"

#include <errno.h>
#include <pthread.h>
#include <sys/resource.h>

static int thread_nice_base;   /* set once, by thread_nice_take */
static pthread_once_t thread_nice_once = PTHREAD_ONCE_INIT;

static void thread_nice_take(void)
{
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0);   /* Linux: the calling thread's */
    thread_nice_base = errno ? 0 : nice;
}

void thread_nice_init(void)
{
    pthread_once(&thread_nice_once, thread_nice_take);
}

int thread_nice_set(int delta)
{
    thread_nice_init();
    return setpriority(PRIO_PROCESS, 0, thread_nice_base + delta);
}
