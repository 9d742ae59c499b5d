/* SPDX-License-Identifier: MIT */
/* h2_client.c: a bare nghttp2 client that records what the server does
 * (see h2_client.h). Streams are kept in a small list; tests start few. */
#define _GNU_SOURCE
#include "h2_client.h"

#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "grpc/health/v1/health.pb-c.h"
#include "grpc_frame.h"
#include "amp_wire.h"

#define H2C_READ_BUF 65536

struct h2c_stream {
    int32_t id;
    struct h2c_result r;
    size_t body_cap;          /* bytes allocated at r.body */
    bool got_headers;
    const uint8_t *body;      /* request body being sent (owned copy) */
    uint8_t *body_owned;
    size_t body_len, body_pos;
    bool end_stream;
    bool open_body;           /* more body may come through h2c_append() */
    struct h2c_stream *next;
};

struct h2c {
    nghttp2_session *ng;
    char timeout[32];             /* grpc-timeout of new requests; "" for none */
    char authorization[320];      /* authorization of new requests; "" for none */
    struct h2c_stream *streams;
    bool goaway;
    uint32_t goaway_code;
    char goaway_debug[256];
    int pings_acked;
};

/* amp-max-reply-bytes this client sends: what a gRPC length prefix can frame. */
#define H2C_MAX_REPLY_TEXT "4294967295"

static struct h2c_stream *h2c_find(const struct h2c *c, int32_t id)
{
    for (struct h2c_stream *s = c->streams; s; s = s->next)
        if (s->id == id)
            return s;
    return NULL;
}

static int h2c_on_header(nghttp2_session *ng, const nghttp2_frame *frame, const uint8_t *name,
                         size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                         void *user_data)
{
    (void)ng;
    (void)flags;
    struct h2c_stream *s = h2c_find(user_data, frame->hd.stream_id);
    if (!s)
        return 0;
    char v[H2C_MESSAGE_MAX];
    snprintf(v, sizeof(v), "%.*s", (int)valuelen, (const char *)value);
    if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
        s->r.http_status = atoi(v);
    } else if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0) {
        s->r.grpc_status = atoi(v);
        s->r.trailers_only = !s->got_headers;
    } else if (namelen == 12 && memcmp(name, "grpc-message", 12) == 0) {
        snprintf(s->r.grpc_message, sizeof(s->r.grpc_message), "%s", v);
    } else if (namelen == 12 && memcmp(name, "content-type", 12) == 0) {
        snprintf(s->r.content_type, sizeof(s->r.content_type), "%.*s",
                 (int)(sizeof(s->r.content_type) - 1), v);
    }
    return 0;
}

static int h2c_on_frame_recv(nghttp2_session *ng, const nghttp2_frame *frame, void *user_data)
{
    (void)ng;
    struct h2c *c = user_data;
    if (frame->hd.type == NGHTTP2_GOAWAY) {
        c->goaway = true;
        c->goaway_code = frame->goaway.error_code;
        snprintf(c->goaway_debug, sizeof(c->goaway_debug), "%.*s",
                 (int)frame->goaway.opaque_data_len, (const char *)frame->goaway.opaque_data);
    }
    if (frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK))
        c->pings_acked++;
    if (frame->hd.type == NGHTTP2_HEADERS) {
        struct h2c_stream *s = h2c_find(c, frame->hd.stream_id);
        if (s)
            s->got_headers = true;
    }
    return 0;
}

static int h2c_on_data(nghttp2_session *ng, uint8_t flags, int32_t stream_id, const uint8_t *data,
                       size_t len, void *user_data)
{
    (void)ng;
    (void)flags;
    struct h2c_stream *s = h2c_find(user_data, stream_id);
    if (!s)
        return 0;
    if (s->r.body_len + len + 1 > s->body_cap) {
        /* Doubling: a reply of many MiB in small chunks is copied O(1)
         * times per byte (under ASan every realloc copies). */
        size_t cap = s->body_cap ? 2 * s->body_cap : 4096;
        while (cap < s->r.body_len + len + 1)
            cap *= 2;
        uint8_t *nb = realloc(s->r.body, cap);
        if (!nb)
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        s->r.body = nb;
        s->body_cap = cap;
    }
    memcpy(s->r.body + s->r.body_len, data, len);
    s->r.body_len += len;
    return 0;
}

static int h2c_on_close(nghttp2_session *ng, int32_t stream_id, uint32_t error_code, void *user_data)
{
    (void)ng;
    struct h2c_stream *s = h2c_find(user_data, stream_id);
    if (s) {
        s->r.closed = true;
        s->r.rst_code = error_code;
    }
    return 0;
}

struct h2c *h2c_new(void)
{
    struct h2c *c = calloc(1, sizeof(*c));
    nghttp2_session_callbacks *cbs;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_on_header_callback(cbs, h2c_on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, h2c_on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, h2c_on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, h2c_on_close);
    nghttp2_session_client_new(&c->ng, cbs, c);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_settings_entry iv[] = { { NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 16 * 1024 * 1024 } };
    nghttp2_submit_settings(c->ng, NGHTTP2_FLAG_NONE, iv, 1);
    nghttp2_session_set_local_window_size(c->ng, NGHTTP2_FLAG_NONE, 0, 64 * 1024 * 1024);
    return c;
}

void h2c_free(struct h2c *c)
{
    if (!c)
        return;
    while (c->streams) {
        struct h2c_stream *s = c->streams;
        c->streams = s->next;
        free(s->r.body);
        free(s->body_owned);
        free(s);
    }
    nghttp2_session_del(c->ng);
    free(c);
}

static ssize_t h2c_body_read(nghttp2_session *ng, int32_t stream_id, uint8_t *buf, size_t length,
                             uint32_t *flags, nghttp2_data_source *source, void *user_data)
{
    (void)ng;
    (void)stream_id;
    (void)user_data;
    struct h2c_stream *s = source->ptr;
    size_t n = s->body_len - s->body_pos;
    if (n == 0 && s->open_body)
        return NGHTTP2_ERR_DEFERRED;
    if (n > length)
        n = length;
    memcpy(buf, s->body + s->body_pos, n);
    s->body_pos += n;
    if (s->body_pos == s->body_len && !s->open_body) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        if (!s->end_stream)
            *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    }
    return (ssize_t)n;
}

/* Submits the header fields nv with body; the stream's result starts empty. */
static int32_t h2c_submit_nv(struct h2c *c, const nghttp2_nv *nv, size_t nnv, const uint8_t *body,
                             size_t len, bool end_stream)
{
    struct h2c_stream *s = calloc(1, sizeof(*s));
    s->r.grpc_status = -1;
    s->body_owned = malloc(len + 1);
    if (len)
        memcpy(s->body_owned, body, len);
    s->body = s->body_owned;
    s->body_len = len;
    s->end_stream = end_stream;
    nghttp2_data_provider dp = { .source.ptr = s, .read_callback = h2c_body_read };
    int32_t id = nghttp2_submit_request(c->ng, NULL, nv, nnv, (len || end_stream) ? &dp : NULL,
                                        NULL);
    if (id < 0) {
        free(s->body_owned);
        free(s);
        return -1;
    }
    s->id = id;
    s->next = c->streams;
    c->streams = s;
    return id;
}

static int32_t h2c_submit(struct h2c *c, const char *method, const char *path, const char *ct,
                          const uint8_t *body, size_t len, bool end_stream)
{
    nghttp2_nv nv[] = {
        { (uint8_t *)":method", (uint8_t *)method, 7, strlen(method), 0 },
        { (uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0 },
        { (uint8_t *)":authority", (uint8_t *)"localhost", 10, 9, 0 },
        { (uint8_t *)":path", (uint8_t *)path, 5, strlen(path), 0 },
        { (uint8_t *)"content-type", (uint8_t *)ct, 12, strlen(ct), 0 },
        { (uint8_t *)"te", (uint8_t *)"trailers", 2, 8, 0 },
        /* This client reads replies of any size (amp_wire.h). */
        { (uint8_t *)AMP_WIRE_MAX_REPLY_HEADER, (uint8_t *)H2C_MAX_REPLY_TEXT,
          sizeof AMP_WIRE_MAX_REPLY_HEADER - 1, sizeof H2C_MAX_REPLY_TEXT - 1, 0 },
    };
    nghttp2_nv all[sizeof(nv) / sizeof(nv[0]) + 2];
    size_t nnv = sizeof(nv) / sizeof(nv[0]);
    memcpy(all, nv, sizeof nv);
    if (c->timeout[0])
        all[nnv++] = (nghttp2_nv){ (uint8_t *)"grpc-timeout", (uint8_t *)c->timeout, 12,
                                   strlen(c->timeout), 0 };
    if (c->authorization[0])
        all[nnv++] = (nghttp2_nv){ (uint8_t *)"authorization", (uint8_t *)c->authorization, 13,
                                   strlen(c->authorization), NGHTTP2_NV_FLAG_NO_INDEX };
    return h2c_submit_nv(c, all, nnv, body, len, end_stream);
}

int32_t h2c_request_fields(struct h2c *c, const char *const *fields, size_t nfields,
                           const uint8_t *body, size_t len)
{
    nghttp2_nv nv[H2C_FIELDS_MAX];
    if (nfields > H2C_FIELDS_MAX)
        return -1;
    for (size_t i = 0; i < nfields; i++) {
        const char *name = fields[2 * i], *value = fields[2 * i + 1];
        nv[i] = (nghttp2_nv){ (uint8_t *)name, (uint8_t *)value, strlen(name), strlen(value),
                              NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE };
    }
    return h2c_submit_nv(c, nv, nfields, body, len, true);
}

void h2c_set_timeout(struct h2c *c, const char *grpc_timeout)
{
    snprintf(c->timeout, sizeof c->timeout, "%s", grpc_timeout ? grpc_timeout : "");
}

void h2c_set_authorization(struct h2c *c, const char *value)
{
    snprintf(c->authorization, sizeof c->authorization, "%s", value ? value : "");
}

int32_t h2c_request(struct h2c *c, const char *path, const char *content_type, const uint8_t *body,
                    size_t len, bool end_stream)
{
    return h2c_submit(c, "POST", path, content_type ? content_type : "application/grpc", body, len,
                      end_stream);
}

int32_t h2c_request_method(struct h2c *c, const char *method, const char *path, const uint8_t *body,
                           size_t len)
{
    return h2c_submit(c, method, path, "application/grpc", body, len, true);
}

int32_t h2c_request_open(struct h2c *c, const char *path, const uint8_t *body, size_t len)
{
    int32_t id = h2c_submit(c, "POST", path, "application/grpc", body, len, true);
    if (id > 0) {
        h2c_find(c, id)->open_body = true;
    }
    return id;
}

int h2c_append(struct h2c *c, int32_t stream_id, const uint8_t *data, size_t len, bool end)
{
    struct h2c_stream *s = h2c_find(c, stream_id);
    if (!s || !s->open_body)
        return -1;
    uint8_t *nb = realloc(s->body_owned, s->body_len + len + 1);
    if (!nb)
        return -1;
    if (len)
        memcpy(nb + s->body_len, data, len);
    s->body_owned = nb;
    s->body = nb;
    s->body_len += len;
    s->open_body = !end;
    /* Fails harmlessly when the provider was not deferred yet. */
    nghttp2_session_resume_data(c->ng, stream_id);
    return 0;
}

int32_t h2c_send_window(const struct h2c *c, int32_t stream_id)
{
    return nghttp2_session_get_stream_remote_window_size(c->ng, stream_id);
}

size_t h2c_body_unsent(const struct h2c *c, int32_t stream_id)
{
    struct h2c_stream *s = h2c_find(c, stream_id);
    return s ? s->body_len - s->body_pos : 0;
}

int h2c_reset(struct h2c *c, int32_t stream_id)
{
    return nghttp2_submit_rst_stream(c->ng, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL) == 0 ? 0
                                                                                          : -1;
}

int h2c_ping(struct h2c *c)
{
    return nghttp2_submit_ping(c->ng, NGHTTP2_FLAG_NONE, NULL) == 0 ? 0 : -1;
}

int h2c_pings_acked(const struct h2c *c)
{
    return c->pings_acked;
}

int32_t h2c_call(struct h2c *c, const char *path, const uint8_t *msg, size_t len)
{
    uint8_t *buf = malloc(GRPC_FRAME_HEADER + len);
    grpc_frame_header(buf, len);
    if (len)
        memcpy(buf + GRPC_FRAME_HEADER, msg, len);
    int32_t id = h2c_request(c, path, NULL, buf, GRPC_FRAME_HEADER + len, true);
    free(buf);
    return id;
}

ssize_t h2c_send(struct h2c *c, const uint8_t **out)
{
    return nghttp2_session_mem_send(c->ng, out);
}

int h2c_recv(struct h2c *c, const uint8_t *data, size_t len)
{
    return nghttp2_session_mem_recv(c->ng, data, len) < 0 ? -1 : 0;
}

const struct h2c_result *h2c_result(const struct h2c *c, int32_t stream_id)
{
    struct h2c_stream *s = h2c_find(c, stream_id);
    return s ? &s->r : NULL;
}

bool h2c_all_closed(const struct h2c *c)
{
    for (struct h2c_stream *s = c->streams; s; s = s->next)
        if (!s->r.closed)
            return false;
    return true;
}

bool h2c_goaway(const struct h2c *c, uint32_t *code, const char **debug)
{
    if (code)
        *code = c->goaway_code;
    if (debug)
        *debug = c->goaway_debug;
    return c->goaway;
}

uint32_t h2c_remote_setting(const struct h2c *c, int id)
{
    return nghttp2_session_get_remote_settings(c->ng, (nghttp2_settings_id)id);
}

bool h2c_frame_allowed(struct h2c *c, void *arg)
{
    return h2c_remote_setting(c, NGHTTP2_SETTINGS_MAX_FRAME_SIZE) >= *(const size_t *)arg;
}

int h2c_message(const struct h2c_result *r, const uint8_t **msg, size_t *len)
{
    if (r->body_len < GRPC_FRAME_HEADER)
        return -1;
    const uint8_t *b = r->body;
    size_t n = ((size_t)b[1] << 24) | ((size_t)b[2] << 16) | ((size_t)b[3] << 8) | b[4];
    if (b[0] != 0 || n > r->body_len - GRPC_FRAME_HEADER)
        return -1;
    *msg = b + GRPC_FRAME_HEADER;
    *len = n;
    return 0;
}

int h2c_health_status(const struct h2c_result *r)
{
    const uint8_t *m;
    size_t len;
    if (h2c_message(r, &m, &len) != 0)
        return -1;
    Grpc__Health__V1__HealthCheckResponse *resp =
        grpc__health__v1__health_check_response__unpack(NULL, len, m);
    if (!resp)
        return -1;
    int status = resp->status;
    grpc__health__v1__health_check_response__free_unpacked(resp, NULL);
    return status;
}

void h2c_percent_decode(const char *in, char *out, size_t outlen)
{
    size_t o = 0;
    for (size_t i = 0; in[i] && o + 1 < outlen; i++) {
        unsigned v;
        if (in[i] == '%' && in[i + 1] && in[i + 2] && sscanf(in + i + 1, "%2x", &v) == 1) {
            out[o++] = (char)v;
            i += 2;
        } else {
            out[o++] = in[i];
        }
    }
    out[o] = '\0';
}

int h2c_connect_unix(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static long long h2c_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Writes everything the session has queued, gathered into one send() so
 * that small requests reach the server in one read. 0, or -1 if the peer
 * is gone. */
static int h2c_flush_fd(struct h2c *c, int fd)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    for (;;) {
        const uint8_t *p;
        ssize_t n = nghttp2_session_mem_send(c->ng, &p);
        if (n < 0) {
            free(buf);
            return -1;
        }
        if (n == 0)
            break;
        uint8_t *nb = realloc(buf, len + (size_t)n);
        if (!nb) {
            free(buf);
            return -1;
        }
        buf = nb;
        memcpy(buf + len, p, (size_t)n);
        len += (size_t)n;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = send(fd, buf + off, len - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            free(buf);
            return -1;
        }
        off += (size_t)w;
    }
    free(buf);
    return 0;
}

int h2c_flush(struct h2c *c, int fd)
{
    return h2c_flush_fd(c, fd);
}

int h2c_run_fd(struct h2c *c, int fd, int timeout_ms)
{
    return h2c_run_until(c, fd, timeout_ms, NULL, NULL);
}

int h2c_run_until(struct h2c *c, int fd, int timeout_ms, bool (*done)(struct h2c *c, void *arg),
                  void *arg)
{
    long long deadline = h2c_now_ms() + timeout_ms;
    uint8_t buf[H2C_READ_BUF];
    for (;;) {
        if (h2c_flush_fd(c, fd) != 0)
            return 1;
        if (done ? done(c, arg) : (c->streams && h2c_all_closed(c)))
            return 0;
        long long left = deadline - h2c_now_ms();
        if (left <= 0)
            return -1;
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        int pr = poll(&pfd, 1, (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            continue;
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 1;
        if (h2c_recv(c, buf, (size_t)n) != 0)
            return 1;
    }
}
