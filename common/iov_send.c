/* SPDX-License-Identifier: MIT */
/* iov_send.c: an iovec array's bytes to a non-blocking socket
 * (iov_send.h). */
#include "iov_send.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <sys/socket.h>

size_t iov_total(const struct iovec *iov, int n)
{
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += iov[i].iov_len;
    return len;
}

int iov_skip(struct iovec *iov, int n, size_t k)
{
    int i = 0;
    while (i < n && k >= iov[i].iov_len)
        k -= iov[i++].iov_len;
    if (i < n) {
        iov[i].iov_base = (uint8_t *)iov[i].iov_base + k;
        iov[i].iov_len -= k;
    }
    return i;
}

int iov_send_all(int fd, struct iovec *iov, int n, int stop_fd, size_t *sent)
{
    *sent = 0;
    while (n > 0) {
        struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)n };
        ssize_t k = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k > 0) {
            *sent += (size_t)k;
            int i = iov_skip(iov, n, (size_t)k);
            iov += i;
            n -= i;
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && errno != EAGAIN)
            return -errno;
        struct pollfd p[2] = { { fd, POLLOUT, 0 }, { stop_fd, POLLIN, 0 } };
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            return -errno;
        if (p[1].revents & POLLIN)
            return -ECANCELED;
    }
    return 0;
}
