/* SPDX-License-Identifier: MIT */
/* http_status_server.h: a small real HTTP/2 server that is not gRPC.
 *
 * It answers every request with one HTTP status, content-type text/html
 * and an HTML page, the way a proxy with no backend to send to does
 * (HAProxy's 503 page), so that tests can see what libampclient and ampctl
 * make of a reply with no grpc-status. It listens on a Unix socket and
 * serves one connection after another on a thread of its own.
 */
#ifndef AMP_TEST_HTTP_STATUS_SERVER_H
#define AMP_TEST_HTTP_STATUS_SERVER_H

struct http_status_server;

/* Listens on sock_path and answers every request with http_status.
 * Returns NULL if it cannot listen. */
struct http_status_server *http_status_server_start(const char *sock_path, int http_status);

/* Requests answered so far. */
int http_status_server_answered(const struct http_status_server *s);

/* Stops the thread, closes the sockets, removes sock_path, frees s. */
void http_status_server_stop(struct http_status_server *s);

#endif
