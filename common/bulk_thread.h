/* SPDX-License-Identifier: MIT */
/* bulk_thread.h: the life of a socket's bulk-byte thread (sock_writer.c,
 * sock_reader.c), defined once: every signal blocked (a library's thread
 * must not take the application's), a name top -H shows, a niceness above
 * its process's (so that where CPUs are short the bulk bytes wait for the
 * threads that serve every call, not the reverse), a lock and condition
 * variable shared with its owner, and a stop eventfd that ends the work in
 * hand early. */
#ifndef AMP_BULK_THREAD_H
#define AMP_BULK_THREAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

struct bulk_thread {
    char name[16];
    int nice;
    int stop_fd;               /* eventfd: readable while bulk_thread_stop() waits */
    atomic_bool cancel;        /* bulk_thread_stop(): end the work in hand where it is */
    pthread_t thread;
    pthread_mutex_t lock;      /* guards the user's state, and quit */
    pthread_cond_t cond;       /* work came or ended, or quit */
    bool quit;
};

/* Sets t up and runs main(arg) on a new thread named name (at most 15
 * characters) that runs nice more than the process (0: as it is). Returns
 * 0, or -1 (out of descriptors or threads) with nothing left to undo. */
int bulk_thread_start(struct bulk_thread *t, const char *name, int nice, void *(*main)(void *),
                      void *arg);

/* Called first on the new thread: names it and sets its niceness. */
void bulk_thread_enter(struct bulk_thread *t);

/* Under t's lock, on the thread: runs done(ctx) with the lock let go, so
 * that the owner it wakes does not find the lock held by this thread,
 * which may then wait for a CPU at its niceness. */
void bulk_thread_tell(struct bulk_thread *t, void (*done)(void *ctx), void *ctx);

/* The owner's: while busy(arg) holds under the lock, raises cancel and
 * stop_fd and waits on cond until it no longer does (the thread
 * broadcasts as its work ends); then lowers both. */
void bulk_thread_stop(struct bulk_thread *t, bool (*busy)(void *arg), void *arg);

/* Tells the thread to quit (it sees quit under the lock, after cond),
 * joins it and frees what bulk_thread_start made. */
void bulk_thread_end(struct bulk_thread *t);

#endif
