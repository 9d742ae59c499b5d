/* SPDX-License-Identifier: MIT */
/* metrics_deadline.c: whole-request deadlines for the metrics listener
 * (see metrics_deadline.h).
 *
 * The connections are kept in one list ordered by deadline: a new or
 * renewed deadline is always the latest, so it goes to the tail, and the
 * thread needs to look only at the head. Each entry holds a dup() of the
 * connection's socket: shutdown() through it reaches the socket even if
 * libmicrohttpd is closing its own descriptor at that moment, and no
 * descriptor number is ever reused under the thread's feet.
 */
#define _GNU_SOURCE
#include "metrics_deadline.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "monotonic.h"
#include "time_units.h"

#define METRICS_DEADLINE_NS_PER_MS 1000000ull

struct metrics_deadline_conn {
    struct metrics_deadline_conn *prev, *next;   /* in the list while linked is true */
    bool linked;                                 /* false once cut or never linked */
    int fd;                                      /* our dup of the socket; -1: none */
    uint64_t deadline_ms;                        /* monotonic_ms() */
};

struct metrics_deadline {
    pthread_mutex_t lock;                        /* guards all below */
    pthread_cond_t wake;                         /* a new head, or stop */
    struct metrics_deadline_conn *head, *tail;   /* deadlines ascending */
    uint32_t deadline_ms;
    bool stop;
    pthread_t thread;
};

static void metrics_deadline_unlink(struct metrics_deadline *d, struct metrics_deadline_conn *c)
{
    if (!c->linked)
        return;
    *(c->prev ? &c->prev->next : &d->head) = c->next;
    *(c->next ? &c->next->prev : &d->tail) = c->prev;
    c->prev = c->next = NULL;
    c->linked = false;
}

/* Gives c a fresh deadline, at the list's tail; wakes the thread if c
 * became the head (the thread may be sleeping with no deadline at all). */
static void metrics_deadline_push(struct metrics_deadline *d, struct metrics_deadline_conn *c)
{
    metrics_deadline_unlink(d, c);
    c->deadline_ms = monotonic_ms() + d->deadline_ms;
    c->prev = d->tail;
    *(d->tail ? &d->tail->next : &d->head) = c;
    d->tail = c;
    c->linked = true;
    if (d->head == c)
        pthread_cond_signal(&d->wake);
}

/* Shuts down every socket past its deadline; returns the next deadline,
 * or 0 when none is left. Called under the lock. */
static uint64_t metrics_deadline_cut(struct metrics_deadline *d)
{
    uint64_t now = monotonic_ms();
    while (d->head && d->head->deadline_ms <= now) {
        struct metrics_deadline_conn *c = d->head;
        metrics_deadline_unlink(d, c);
        shutdown(c->fd, SHUT_RDWR);   /* libmicrohttpd reads the end and closes */
        log_msg(LOG_DEBUG, "metrics: a connection closed: no whole request within %u ms",
                (unsigned)d->deadline_ms);
    }
    return d->head ? d->head->deadline_ms : 0;
}

static void *metrics_deadline_main(void *arg)
{
    struct metrics_deadline *d = arg;
    pthread_mutex_lock(&d->lock);
    while (!d->stop) {
        uint64_t next = metrics_deadline_cut(d);
        if (!next) {
            pthread_cond_wait(&d->wake, &d->lock);
            continue;
        }
        struct timespec at = {
            .tv_sec = (time_t)(next / TIME_MS_PER_S),
            .tv_nsec = (long)(next % TIME_MS_PER_S * METRICS_DEADLINE_NS_PER_MS),
        };
        pthread_cond_timedwait(&d->wake, &d->lock, &at);
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

int metrics_deadline_start(uint32_t deadline_ms, struct metrics_deadline **out)
{
    struct metrics_deadline *d = calloc(1, sizeof *d);
    if (!d)
        return -1;
    d->deadline_ms = deadline_ms;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);   /* monotonic_ms()'s clock */
    pthread_cond_init(&d->wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&d->lock, NULL);
    if (pthread_create(&d->thread, NULL, metrics_deadline_main, d) != 0) {
        pthread_cond_destroy(&d->wake);
        pthread_mutex_destroy(&d->lock);
        free(d);
        return -1;
    }
    *out = d;
    return 0;
}

void metrics_deadline_stop(struct metrics_deadline *d)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->lock);
    d->stop = true;
    pthread_cond_signal(&d->wake);
    pthread_mutex_unlock(&d->lock);
    pthread_join(d->thread, NULL);
    pthread_cond_destroy(&d->wake);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

static void metrics_deadline_open(struct metrics_deadline *d, struct MHD_Connection *conn,
                                  void **socket_context)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct metrics_deadline_conn *c = calloc(1, sizeof *c);
    int fd = info ? fcntl(info->connect_fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (!c || fd < 0) {
        /* Out of memory or descriptors: this connection cannot be timed,
         * so it is not served at all. */
        free(c);
        if (info)
            shutdown(info->connect_fd, SHUT_RDWR);
        log_msg(LOG_WARN, "metrics: a connection refused: cannot time it (%s)",
                c ? "no descriptor" : "out of memory");
        return;
    }
    c->fd = fd;
    pthread_mutex_lock(&d->lock);
    metrics_deadline_push(d, c);
    pthread_mutex_unlock(&d->lock);
    *socket_context = c;
}

void metrics_deadline_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                             enum MHD_ConnectionNotificationCode code)
{
    struct metrics_deadline *d = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        metrics_deadline_open(d, conn, socket_context);
        return;
    }
    struct metrics_deadline_conn *c = *socket_context;
    if (!c)
        return;
    pthread_mutex_lock(&d->lock);
    metrics_deadline_unlink(d, c);
    pthread_mutex_unlock(&d->lock);
    close(c->fd);
    free(c);
    *socket_context = NULL;
}

void metrics_deadline_renew(struct metrics_deadline *d, struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct metrics_deadline_conn *c = info ? info->socket_context : NULL;
    if (!c)
        return;
    pthread_mutex_lock(&d->lock);
    if (c->linked)   /* one already cut stays cut */
        metrics_deadline_push(d, c);
    pthread_mutex_unlock(&d->lock);
}
