/* SPDX-License-Identifier: MIT */
/* h2_client.h: a bare gRPC-over-HTTP/2 client for protocol tests.
 *
 * Unlike libampclient, it sends whatever bytes a test asks for (wrong
 * content-types, lying length prefixes, several messages on a unary call)
 * and records everything that comes back per stream: HTTP status, headers,
 * raw DATA, trailers, RST_STREAM, and the connection's GOAWAY. Like h2.c it
 * does no I/O itself (h2c_send / h2c_recv), so the h2 layer's tests pump
 * bytes in memory; h2c_run_fd() drives it over a real socket.
 */
#ifndef AMP_TEST_H2_CLIENT_H
#define AMP_TEST_H2_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define H2C_MESSAGE_MAX 1024

struct h2c_result {
    bool closed;                   /* the stream is over */
    bool trailers_only;            /* grpc-status came in the first HEADERS */
    int http_status;               /* :status, 0 if none */
    int grpc_status;               /* grpc-status, -1 if none */
    char grpc_message[H2C_MESSAGE_MAX]; /* as on the wire (percent-encoded) */
    char content_type[128];
    uint8_t *body;                 /* every DATA byte, gRPC prefixes included */
    size_t body_len;
    uint32_t rst_code;             /* error code of a RST_STREAM or stream close */
};

struct h2c;

struct h2c *h2c_new(void);
void h2c_free(struct h2c *c);

/* Starts a POST to path with the given content-type (NULL:
 * application/grpc) and body bytes sent verbatim; end_stream false leaves
 * the request open. Returns the stream id, or -1. */
int32_t h2c_request(struct h2c *c, const char *path, const char *content_type, const uint8_t *body,
                    size_t len, bool end_stream);

/* The grpc-timeout header value (sent verbatim, e.g. "50m" or "12x") of
 * the requests started after this; NULL: none (the default). */
void h2c_set_timeout(struct h2c *c, const char *grpc_timeout);

/* The authorization header value (e.g. "Bearer TOKEN", sent verbatim) of
 * the requests started after this; NULL: none (the default). */
void h2c_set_authorization(struct h2c *c, const char *value);

/* Same, with one gRPC message built from msg (prefix added). */
int32_t h2c_call(struct h2c *c, const char *path, const uint8_t *msg, size_t len);

/* Same, with :method given (for non-POST tests). */
int32_t h2c_request_method(struct h2c *c, const char *method, const char *path, const uint8_t *body,
                           size_t len);

/* Starts a request with exactly the header fields given (name, value
 * pairs: fields[2i] and fields[2i+1], at most H2C_FIELDS_MAX), in that
 * order, case and bytes unchecked (so the strings must outlive the sending),
 * and body as its whole DATA: for the HTTP/2 rules on requests (a missing
 * :authority, a misplaced pseudo-header field). */
#define H2C_FIELDS_MAX 16
int32_t h2c_request_fields(struct h2c *c, const char *const *fields, size_t nfields,
                           const uint8_t *body, size_t len);

/* Starts a POST whose body stays open: more comes with h2c_append(), and
 * end=true there ends the stream. */
int32_t h2c_request_open(struct h2c *c, const char *path, const uint8_t *body, size_t len);
int h2c_append(struct h2c *c, int32_t stream_id, const uint8_t *data, size_t len, bool end);

/* Flow control as the client sees it: how much more DATA the server lets
 * the stream send now, and how many body bytes are still waiting to go. */
int32_t h2c_send_window(const struct h2c *c, int32_t stream_id);
size_t h2c_body_unsent(const struct h2c *c, int32_t stream_id);

/* Cancels a stream with RST_STREAM(CANCEL). */
int h2c_reset(struct h2c *c, int32_t stream_id);

/* Sends a PING; the server answers after every frame sent before it has
 * been processed, so an acked ping means the server has seen them. */
int h2c_ping(struct h2c *c);
int h2c_pings_acked(const struct h2c *c);

/* Bytes the client wants to write; see nghttp2_session_mem_send. */
ssize_t h2c_send(struct h2c *c, const uint8_t **out);
/* Feeds bytes from the server. Returns 0 or -1 (protocol error). */
int h2c_recv(struct h2c *c, const uint8_t *data, size_t len);

/* The result of stream_id (NULL if unknown). */
const struct h2c_result *h2c_result(const struct h2c *c, int32_t stream_id);
/* True once every stream started is closed. */
bool h2c_all_closed(const struct h2c *c);
/* True once a GOAWAY arrived; its code and debug data (NUL-terminated). */
bool h2c_goaway(const struct h2c *c, uint32_t *code, const char **debug);

/* A SETTINGS value the server sent (nghttp2_settings_id). */
uint32_t h2c_remote_setting(const struct h2c *c, int id);

/* For h2c_run_until: true once the server's SETTINGS_MAX_FRAME_SIZE is at
 * least *(const size_t *)arg (its SETTINGS came), so that a frame that
 * large may be sent. */
bool h2c_frame_allowed(struct h2c *c, void *arg);

/* The first gRPC message of a result's body, or -1. */
int h2c_message(const struct h2c_result *r, const uint8_t **msg, size_t *len);

/* The serving status (GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__*)
 * of the grpc.health.v1 HealthCheckResponse a result carries, or -1 when it
 * carries none that parses. */
int h2c_health_status(const struct h2c_result *r);

/* Decodes a percent-encoded grpc-message into out. */
void h2c_percent_decode(const char *in, char *out, size_t outlen);

/* Connects to a Unix socket; returns the fd or -1. */
int h2c_connect_unix(const char *path);

/* Pumps the session over fd until every stream is closed, the server
 * closes the connection, or timeout_ms pass. Returns 0 when all streams
 * closed, 1 when the connection ended first, -1 on timeout or error. */
int h2c_run_fd(struct h2c *c, int fd, int timeout_ms);

/* Like h2c_run_fd, but done(c, arg) decides when to stop (returns 0). */
int h2c_run_until(struct h2c *c, int fd, int timeout_ms, bool (*done)(struct h2c *c, void *arg),
                  void *arg);

/* Writes what the client has queued to fd in one send(). 0 or -1. */
int h2c_flush(struct h2c *c, int fd);

#endif
