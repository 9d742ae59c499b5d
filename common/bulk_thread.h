/* SPDX-License-Identifier: MIT */
/* bulk_thread.h: the one way a socket's bulk-byte thread (sock_writer.c,
 * sock_reader.c) is started and set up: every signal blocked (a library's
 * thread must not take the application's), a name top -H shows, and a
 * niceness above its process's, so that where CPUs are short the bulk
 * bytes wait for the threads that serve every call, not the reverse. */
#ifndef AMP_BULK_THREAD_H
#define AMP_BULK_THREAD_H

#include <pthread.h>

/* pthread_create with every signal blocked in the new thread. Returns 0 or
 * pthread_create's error. */
int bulk_thread_start(pthread_t *thread, void *(*main)(void *), void *arg);

/* Called first on the new thread: names it (at most 15 characters) and
 * raises its niceness by nice (0 leaves it as it is). */
void bulk_thread_enter(const char *name, int nice);

#endif
