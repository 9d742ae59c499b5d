/* SPDX-License-Identifier: MIT */
/* loop.c: a connection in the application's event loop (amp.h: amp_fd,
 * amp_process; docs/event-loop.md).
 *
 * amp_fd() is an epoll descriptor, so one descriptor stands for all a
 * connection may wait on and stays the same across reconnections: the
 * socket (readable; writable too while output waits for room), the
 * writer thread's eventfd (conn_writer.h), and an eventfd of its own
 * raised when work is due that no other descriptor would show (a
 * callback due after amp_cancel or a blocking call, a stream's next
 * input, a round cut short). amp_process() then runs the rounds that
 * conn_pump_once() runs for a blocking call, without waiting, feeding
 * streams between them (async.c), and runs the callbacks of the calls
 * that finished. conn.c calls loop_forget() before it closes the socket
 * or the writer, and every path that queues output or finishes a call
 * calls loop_watch() or loop_wake(), so the watch list never names a
 * closed descriptor and never misses work.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "async.h"
#include "conn.h"

/* Rounds of reading and writing one amp_process() does at most before it
 * lets the loop serve others (the descriptor stays readable, or is woken,
 * when work is left): 256 in flight on one connection finish in a few. */
#define LOOP_ROUNDS 64

/* Sets fd's registration in the epoll set from *have to want (0: none). */
static int loop_set(amp_conn *c, int fd, uint32_t have, uint32_t want)
{
    if (have == want)
        return 0;
    struct epoll_event ev = { .events = want, .data.fd = fd };
    int op = !want ? EPOLL_CTL_DEL : !have ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
    if (epoll_ctl(c->loop.epfd, op, fd, &ev) == 0)
        return 0;
    return conn_fail(c, AMP_EIO, "epoll_ctl on amp_fd: %s", strerror(errno));
}

void loop_watch(amp_conn *c)
{
    struct conn_loop *l = &c->loop;
    if (l->epfd < 0)
        return;
    /* A broken connection's socket is not watched: it would stay readable
     * (its end) while nothing is left to do until the next call opens
     * another. */
    int sock = !c->broken && c->fd >= 0 ? c->fd : -1;
    uint32_t want = sock < 0 ? 0 : EPOLLIN | (conn_wants_write(c) ? EPOLLOUT : 0);
    if (sock != l->sock && l->sock >= 0) {
        loop_set(c, l->sock, l->sock_events, 0);
        l->sock = -1;
        l->sock_events = 0;
    }
    if (sock >= 0 && loop_set(c, sock, l->sock_events, want) == 0) {
        l->sock = sock;
        l->sock_events = want;
    }
    int writer = conn_writer_handed(&c->writer) ? conn_writer_fd(&c->writer) : -1;
    if (writer >= 0 && l->writer != writer && loop_set(c, writer, 0, EPOLLIN) == 0)
        l->writer = writer;   /* kept until conn_shut() ends the writer: idle, it is quiet */
}

void loop_wake(amp_conn *c)
{
    struct conn_loop *l = &c->loop;
    if (l->epfd < 0 || l->processing || l->woken)
        return;
    if (eventfd_write(l->wake, 1) == 0)
        l->woken = 1;
}

void loop_forget(amp_conn *c)
{
    struct conn_loop *l = &c->loop;
    if (l->epfd < 0)
        return;
    if (l->sock >= 0)
        loop_set(c, l->sock, l->sock_events, 0);
    if (l->writer >= 0)
        loop_set(c, l->writer, EPOLLIN, 0);
    l->sock = l->writer = -1;
    l->sock_events = 0;
}

void loop_close(amp_conn *c)
{
    struct conn_loop *l = &c->loop;
    if (l->epfd < 0)
        return;
    close(l->wake);
    close(l->epfd);
    l->epfd = l->wake = -1;
}

int amp_fd(amp_conn *c)
{
    if (!c)
        return AMP_EINVAL;
    struct conn_loop *l = &c->loop;
    if (l->epfd >= 0)
        return l->epfd;
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (l->epfd < 0 || l->wake < 0) {
        int e = errno;
        if (l->epfd >= 0)
            close(l->epfd);
        if (l->wake >= 0)
            close(l->wake);
        l->epfd = l->wake = -1;
        return conn_fail(c, e == ENOMEM ? AMP_ENOMEM : AMP_EIO, "amp_fd: %s", strerror(e));
    }
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = l->wake };
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->wake, &ev) != 0) {
        int e = errno;
        loop_close(c);
        return conn_fail(c, AMP_EIO, "amp_fd: epoll_ctl: %s", strerror(e));
    }
    loop_watch(c);
    /* Work may be due already (calls finished under a blocking call). */
    if (c->ready || c->calls)
        loop_wake(c);
    return l->epfd;
}

/* Lowers the wake-up: amp_process is about to do what it stood for. */
static void loop_unwake(amp_conn *c)
{
    struct conn_loop *l = &c->loop;
    eventfd_t v;
    if (l->woken && eventfd_read(l->wake, &v) == 0)
        l->woken = 0;
}

/* Reads and writes until nothing is ready, or LOOP_ROUNDS. Returns 0, 1
 * when rounds were left undone, or the error that broke c. */
static int loop_rounds(amp_conn *c)
{
    if (!c->calls && (c->broken || c->fd < 0))
        return 0;   /* idle and closed: the next call reopens it */
    for (int i = 0; i < LOOP_ROUNDS; i++) {
        async_feed(c);
        int rc = conn_pump_nowait(c);
        if (rc == AMP_EDEADLINE)
            return 0;   /* nothing ready */
        if (rc != 0)
            return rc;
        async_collect(c);
    }
    return 1;
}

int amp_process(amp_conn *c)
{
    if (!c)
        return AMP_EINVAL;
    struct conn_loop *l = &c->loop;
    if (l->firing)
        return conn_fail(c, AMP_EINVAL, "amp_process from a completion callback");
    conn_begin(c);
    if (l->epfd >= 0)
        loop_unwake(c);
    l->processing = 1;
    int busy = c->calls != NULL;
    int rc = loop_rounds(c);
    int more = rc == 1;
    char why[CONN_MESSAGE_MAX] = "";
    if (rc < 0 && busy) {
        memcpy(why, c->message, sizeof why);
        async_fail_all(c, rc);
    } else {
        rc = 0;   /* an idle connection that ended (a GOAWAY, an idle close): the next
                     call reopens it, as a blocking one does */
    }
    async_collect(c);
    l->processing = 0;
    async_fire(c);   /* the callbacks may start calls: those watch and wake for themselves */
    if (more)
        loop_wake(c);
    loop_watch(c);
    return rc == 0 ? 0 : conn_fail(c, rc, "%s", why);
}
