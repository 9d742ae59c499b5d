/* SPDX-License-Identifier: MIT */
/* connect.c: opening a connection's socket, Unix or TCP, within a time
 * limit. conn.c then runs HTTP/2 over it; this file only connects.
 *
 * Both connect non-blocking, so that a daemon that does not accept cannot
 * hold the caller past its limit: a TCP connect to a full accept queue
 * (whose SYNs the kernel drops) waits in poll() for the limit; a Unix
 * connect to a full queue fails with EAGAIN at once and is tried again,
 * with growing pauses, until the limit.
 *
 * Where there are several places to connect to (amp_connect's address
 * list, a name with several DNS records), each new connection starts at
 * the next one, process-wide, and goes on to the others if it cannot
 * connect: connections spread over them as gRPC's round_robin spreads
 * calls.
 */
#include "connect.h"

#include <errno.h>
#include <grp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "conn.h"

#define CONNECT_RETRY_FIRST_MS 1   /* first pause before a Unix connect is tried again */
#define CONNECT_RETRY_MAX_MS 50    /* longest pause between tries */
#define CONNECT_HINT_MAX 256       /* what to do about a refused Unix socket */

size_t connect_rotation(size_t n)
{
    static atomic_size_t next;
    return n ? atomic_fetch_add_explicit(&next, 1, memory_order_relaxed) % n : 0;
}

static int connect_left_ms(long long deadline_ms)
{
    long long left = deadline_ms - conn_now_ms();
    return left <= 0 ? 0 : left > INT32_MAX ? INT32_MAX : (int)left;
}

/* Waits for a non-blocking connect in progress on fd; 0 or an errno. */
static int connect_wait(int fd, long long deadline_ms)
{
    for (;;) {
        struct pollfd p = { fd, POLLOUT, 0 };
        int n = poll(&p, 1, connect_left_ms(deadline_ms));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        if (n == 0)
            return ETIMEDOUT;
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            return errno;
        return err;
    }
}

/* Connects a fresh non-blocking fd to sa; 0 or an errno. */
static int connect_one(int fd, const struct sockaddr *sa, socklen_t len, long long deadline_ms)
{
    int pause = CONNECT_RETRY_FIRST_MS;
    for (;;) {
        if (connect(fd, sa, len) == 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno == EINPROGRESS)
            return connect_wait(fd, deadline_ms);
        if (errno != EAGAIN)
            return errno;
        /* A Unix listener's queue is full: no completion to wait for. */
        int left = connect_left_ms(deadline_ms);
        if (left == 0)
            return ETIMEDOUT;
        poll(NULL, 0, pause < left ? pause : left);
        pause = pause * 2 < CONNECT_RETRY_MAX_MS ? pause * 2 : CONNECT_RETRY_MAX_MS;
    }
}

/* What to do about a Unix socket refused for permission: its group may
 * use it (the daemon's --socket-group, "ampd" under the shipped unit). */
static void connect_unix_hint(const char *path, int err, char *hint, size_t len)
{
    struct stat st;
    if (err != EACCES || stat(path, &st) != 0)
        return;
    struct group *g = getgrgid(st.st_gid);
    if (g)
        snprintf(hint, len, " (the socket is for group %s: ask to be added to it, e.g. "
                 "sudo usermod -aG %s $USER, then log in again)", g->gr_name, g->gr_name);
    else
        snprintf(hint, len, " (the socket is for group %lu)", (unsigned long)st.st_gid);
}

static int connect_unix(amp_conn *c, const struct address *a, long long deadline_ms)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, a->path, strlen(a->path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return conn_fail(c, AMP_ECONNECT, "socket: %s", strerror(errno));
    int err = connect_one(fd, (struct sockaddr *)&sa, sizeof sa, deadline_ms);
    if (err != 0) {
        close(fd);
        char hint[CONNECT_HINT_MAX] = "";
        connect_unix_hint(a->path, err, hint, sizeof hint);
        return conn_fail(c, AMP_ECONNECT, "connect to unix:%s: %s%s", a->path, strerror(err),
                         hint);
    }
    c->fd = fd;
    return 0;
}

static int connect_tcp(amp_conn *c, const struct address *a, long long deadline_ms)
{
    char port[16];
    snprintf(port, sizeof port, "%d", a->port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(a->host, port, &hints, &res);
    if (gai != 0)
        return conn_fail(c, AMP_EADDR, "cannot resolve %s: %s", a->host, gai_strerror(gai));
    size_t nrecords = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next)
        nrecords++;
    size_t first = connect_rotation(nrecords);
    int err = 0;
    for (size_t k = 0; k < nrecords && err != ETIMEDOUT; k++) {
        struct addrinfo *ai = res;
        for (size_t skip = (first + k) % nrecords; skip; skip--)
            ai = ai->ai_next;
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                        ai->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        err = connect_one(fd, ai->ai_addr, ai->ai_addrlen, deadline_ms);
        if (err == 0) {
            int one = 1;
            /* gRPC messages are small frames written back to back. */
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            c->fd = fd;
            freeaddrinfo(res);
            return 0;
        }
        close(fd);
    }
    freeaddrinfo(res);
    return conn_fail(c, AMP_ECONNECT, "connect to %s:%d: %s", a->host, a->port, strerror(err));
}

int connect_open(amp_conn *c, const struct address *a, int timeout_ms)
{
    long long deadline = conn_now_ms() + timeout_ms;
    int rc = a->kind == ADDRESS_UNIX ? connect_unix(c, a, deadline) : connect_tcp(c, a, deadline);
    if (rc == AMP_ECONNECT && connect_left_ms(deadline) == 0)
        snprintf(c->message + strlen(c->message), sizeof c->message - strlen(c->message),
                 " (within %d ms)", timeout_ms);
    return rc;
}
