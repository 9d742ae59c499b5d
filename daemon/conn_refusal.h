/* SPDX-License-Identifier: MIT */
/* conn_refusal.h: connections refused, or that failed before a call could
 * run, by reason. Each is counted (metrics: ampd_connections_refused_total
 * {reason}) and logged once with its peer and what it was told, under
 * log_call's rate limit, so an operator sees a client that cannot get in
 * (a full daemon, an HTTP/1.1 client, TLS spoken to a plaintext port or
 * plaintext to a tls: one) without a flood of lines from one that retries.
 */
#ifndef AMPD_CONN_REFUSAL_H
#define AMPD_CONN_REFUSAL_H

#include <stdatomic.h>
#include <stdint.h>

/* XX(name, metric label) */
#define CONN_REFUSAL_MAP(XX)                                                   \
    XX(DRAINING, "draining")                                                   \
    XX(MAX_CONNECTIONS, "max_connections")                                     \
    XX(MAX_PEER_CONNECTIONS, "max_peer_connections")                           \
    XX(MAX_UNAUTHENTICATED, "max_unauthenticated_connections")                 \
    XX(EVICTED, "evicted_unauthenticated")                                     \
    XX(NO_MEMORY, "no_memory")                                                 \
    XX(NOT_HTTP2, "not_http2")                                                 \
    XX(TLS_ON_PLAINTEXT, "tls_on_plaintext_port")                              \
    XX(TLS_FAILED, "tls_handshake_failed")                                     \
    XX(TLS_TIMEOUT, "tls_handshake_timeout")                                   \
    XX(REQUEST_TIMEOUT, "request_timeout")

enum conn_refusal {
#define CONN_REFUSAL_ENUM(name, label) CONN_REFUSED_##name,
    CONN_REFUSAL_MAP(CONN_REFUSAL_ENUM)
#undef CONN_REFUSAL_ENUM
    CONN_REFUSAL_COUNT
};

struct conn_refusals {
    atomic_uint_least64_t count[CONN_REFUSAL_COUNT];
};

/* The metric label of why ("max_connections"). */
const char *conn_refusal_label(enum conn_refusal why);

/* Counts a refusal of peer's connection and logs it (rate-limited) with
 * what the peer was told or saw: "PEER: connection refused (LABEL): WHAT". */
void conn_refusal_note(struct conn_refusals *r, enum conn_refusal why, const char *peer,
                       const char *what);

uint64_t conn_refusal_count(const struct conn_refusals *r, enum conn_refusal why);

#endif
