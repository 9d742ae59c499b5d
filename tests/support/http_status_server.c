/* SPDX-License-Identifier: MIT */
/* http_status_server.c: see http_status_server.h. nghttp2 does the HTTP/2;
 * this file moves its bytes over blocking sockets with poll(), and a pipe
 * tells the thread to stop. */
#include "http_status_server.h"

#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Starts with '<', which a gRPC reader would take for a message's flag byte. */
#define HTTP_STATUS_PAGE "<html><body><h1>Service Unavailable</h1>\n" \
                         "No server is available to handle this request.\n</body></html>\n"

struct http_status_server {
    int listen_fd;
    int stop_pipe[2];      /* writing a byte to [1] ends the thread */
    char path[108];
    char status[4];        /* the :status every reply carries */
    atomic_int answered;
    pthread_t thread;
};

/* The page goes in one DATA frame, so a stream needs no state (that would
 * outlive a session deleted with streams open): it is far smaller than
 * the frame and window sizes of the few calls a test makes. */
static ssize_t http_status_page(nghttp2_session *ng, int32_t stream_id, uint8_t *buf, size_t len,
                                uint32_t *flags, nghttp2_data_source *src, void *user_data)
{
    (void)ng;
    (void)stream_id;
    (void)src;
    (void)user_data;
    size_t n = sizeof(HTTP_STATUS_PAGE) - 1;
    if (n > len)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;   /* resets the stream */
    memcpy(buf, HTTP_STATUS_PAGE, n);
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

/* Answers a request as soon as its headers are whole, as a proxy refusing
 * it does, whatever its body. */
static int http_status_on_frame(nghttp2_session *ng, const nghttp2_frame *frame, void *user_data)
{
    struct http_status_server *s = user_data;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    char length[16];
    snprintf(length, sizeof length, "%zu", sizeof(HTTP_STATUS_PAGE) - 1);
    nghttp2_nv nv[] = {
        { (uint8_t *)":status", (uint8_t *)s->status, 7, strlen(s->status), 0 },
        { (uint8_t *)"content-type", (uint8_t *)"text/html", 12, 9, 0 },
        { (uint8_t *)"content-length", (uint8_t *)length, 14, strlen(length), 0 },
    };
    nghttp2_data_provider dp = { .read_callback = http_status_page };
    if (nghttp2_submit_response(ng, frame->hd.stream_id, nv, 3, &dp) != 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    atomic_fetch_add(&s->answered, 1);
    return 0;
}

static bool http_status_flush(nghttp2_session *ng, int fd)
{
    const uint8_t *out;
    ssize_t n;
    while ((n = nghttp2_session_mem_send(ng, &out)) > 0)
        for (ssize_t off = 0; off < n;) {
            ssize_t w = send(fd, out + off, (size_t)(n - off), MSG_NOSIGNAL);
            if (w <= 0)
                return false;
            off += w;
        }
    return n == 0;
}

/* Serves one connection until the client leaves or the server stops.
 * Returns false when told to stop. */
static bool http_status_serve(struct http_status_server *s, int fd)
{
    nghttp2_session_callbacks *cbs;
    nghttp2_session *ng;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, http_status_on_frame);
    nghttp2_session_server_new(&ng, cbs, s);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_submit_settings(ng, NGHTTP2_FLAG_NONE, NULL, 0);
    bool go_on = true;
    uint8_t buf[16384];
    while (http_status_flush(ng, fd)) {
        struct pollfd p[2] = { { fd, POLLIN, 0 }, { s->stop_pipe[0], POLLIN, 0 } };
        if (poll(p, 2, -1) < 0)
            break;
        if (p[1].revents) {
            go_on = false;
            break;
        }
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0 || nghttp2_session_mem_recv(ng, buf, (size_t)n) < 0)
            break;
    }
    nghttp2_session_del(ng);
    close(fd);
    return go_on;
}

static void *http_status_thread(void *arg)
{
    struct http_status_server *s = arg;
    for (;;) {
        struct pollfd p[2] = { { s->listen_fd, POLLIN, 0 }, { s->stop_pipe[0], POLLIN, 0 } };
        if (poll(p, 2, -1) < 0 || p[1].revents)
            return NULL;
        int fd = accept(s->listen_fd, NULL, NULL);
        if (fd >= 0 && !http_status_serve(s, fd))
            return NULL;
    }
}

struct http_status_server *http_status_server_start(const char *sock_path, int http_status)
{
    struct http_status_server *s = calloc(1, sizeof(*s));
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (!s || strlen(sock_path) >= sizeof sa.sun_path || http_status < 100 || http_status > 999)
        goto fail;
    snprintf(s->path, sizeof s->path, "%s", sock_path);
    snprintf(s->status, sizeof s->status, "%d", http_status);
    memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
    s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->listen_fd < 0 || bind(s->listen_fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(s->listen_fd, 16) != 0 || pipe(s->stop_pipe) != 0)
        goto fail;
    if (pthread_create(&s->thread, NULL, http_status_thread, s) != 0)
        goto fail;
    return s;
fail:
    fprintf(stderr, "http_status_server: cannot listen on %s\n", sock_path);
    if (s && s->listen_fd > 0)
        close(s->listen_fd);
    free(s);
    return NULL;
}

int http_status_server_answered(const struct http_status_server *s)
{
    return atomic_load(&s->answered);
}

void http_status_server_stop(struct http_status_server *s)
{
    if (write(s->stop_pipe[1], "x", 1) != 1)
        perror("http_status_server: stop");
    pthread_join(s->thread, NULL);
    close(s->stop_pipe[0]);
    close(s->stop_pipe[1]);
    close(s->listen_fd);
    unlink(s->path);
    free(s);
}
