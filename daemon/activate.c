/* SPDX-License-Identifier: MIT */
/* activate.c: sockets passed by the service manager (see activate.h).
 *
 * libsystemd reads $LISTEN_PID/$LISTEN_FDS and tells what a descriptor
 * is; this file only names each socket and pairs region sockets with
 * their listeners, by path, before the server serves them.
 */
#include "activate.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "log.h"

/* More than this many passed sockets is refused outright. */
#define ACTIVATE_FDS_MAX 64

/* Where a passed TCP socket listens, as "HOST:PORT" ("[V6]:PORT"). */
static int activate_inet_name(int fd, char *out, size_t outlen)
{
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    char host[INET6_ADDRSTRLEN];
    if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
        return -1;
    if (sa.ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        snprintf(out, outlen, "%s:%u", host, ntohs(in->sin_port));
    } else {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        snprintf(out, outlen, "[%s]:%u", host, ntohs(in6->sin6_port));
    }
    return 0;
}

/* The socket file's path of a passed Unix socket ("@NAME" when abstract,
 * which has no file and no region socket beside it). */
static int activate_unix_path(int fd, char *out, size_t outlen)
{
    struct sockaddr_un sa;
    socklen_t len = sizeof sa;
    memset(&sa, 0, sizeof sa);
    if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
        return -1;
    if (sa.sun_path[0] == '\0')
        snprintf(out, outlen, "@%.*s", (int)(sizeof sa.sun_path - 1), sa.sun_path + 1);
    else
        snprintf(out, outlen, "%.*s", (int)sizeof sa.sun_path, sa.sun_path);
    return 0;
}

/* What passed descriptor fd is, into s. Returns 0, or -1 with a reason. */
static int activate_classify(int fd, struct activate_socket *s, char *err, size_t errlen)
{
    *s = (struct activate_socket){ .fd = fd, .region_fd = -1 };
    int rv = sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0);
    if (rv > 0) {
        s->is_unix = true;
        rv = activate_unix_path(fd, s->path, sizeof s->path);
        snprintf(s->name, sizeof s->name, "unix:%s", s->path);
    } else if (rv == 0 && (rv = sd_is_socket_inet(fd, AF_UNSPEC, SOCK_STREAM, 1, 0)) > 0) {
        rv = activate_inet_name(fd, s->name, sizeof s->name);
    } else {
        snprintf(err, errlen, "passed descriptor %d is not a listening Unix or TCP stream socket "
                 "(ListenStream= in the socket unit)", fd);
        return -1;
    }
    if (rv < 0) {
        snprintf(err, errlen, "passed descriptor %d: %s", fd, strerror(errno));
        return -1;
    }
    /* accept4() in a loop until EAGAIN: a blocking listener would hang it. */
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0 ||
        fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
        snprintf(err, errlen, "passed descriptor %d: fcntl: %s", fd, strerror(errno));
        return -1;
    }
    return 0;
}

/* The index of the passed Unix socket whose region socket is s[j]
 * (s[j] at PATH.regions, it at PATH), or -1. */
static int activate_region_owner(const struct activate_socket *s, size_t n, size_t j)
{
    for (size_t i = 0; i < n; i++) {
        struct address a = { .kind = ADDRESS_UNIX };
        char region[ADDRESS_PATH_MAX];
        snprintf(a.path, sizeof a.path, "%s", s[i].path);
        if (i != j && s[i].is_unix && s[j].is_unix && a.path[0] != '@' &&
            address_region_path(&a, region, sizeof region) == 0 && strcmp(region, s[j].path) == 0)
            return (int)i;
    }
    return -1;
}

int activate_sockets(struct activate_socket *out, size_t max, size_t *n, char *err, size_t errlen)
{
    *n = 0;
    int nfds = sd_listen_fds(1);
    if (nfds <= 0) {
        if (nfds < 0)
            log_msg(LOG_WARN, "$LISTEN_FDS: %s; not socket-activated", strerror(-nfds));
        return 0;
    }
    struct activate_socket all[ACTIVATE_FDS_MAX];
    int rv = 0;
    if (nfds > ACTIVATE_FDS_MAX) {
        snprintf(err, errlen, "%d sockets passed; at most %d", nfds, ACTIVATE_FDS_MAX);
        rv = -1;
    }
    for (int i = 0; rv == 0 && i < nfds; i++)
        rv = activate_classify(SD_LISTEN_FDS_START + i, &all[i], err, errlen);
    bool is_region[ACTIVATE_FDS_MAX] = { false };
    for (size_t j = 0; rv == 0 && j < (size_t)nfds; j++) {
        int owner = activate_region_owner(all, (size_t)nfds, j);
        if (owner >= 0) {
            all[owner].region_fd = all[j].fd;
            is_region[j] = true;
        }
    }
    for (size_t j = 0; rv == 0 && j < (size_t)nfds; j++) {
        if (is_region[j])
            continue;
        if (*n == max) {
            snprintf(err, errlen, "more than %zu listening sockets passed", max);
            rv = -1;
            break;
        }
        out[(*n)++] = all[j];
    }
    if (rv != 0) {
        for (int i = 0; i < nfds; i++)
            close(SD_LISTEN_FDS_START + i);
        *n = 0;
    }
    return rv;
}
