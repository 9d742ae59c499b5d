/* SPDX-License-Identifier: MIT */
/* auth.h: who may call the daemon (issue 13).
 *
 * Three rules, fixed at start-up from the options, and one secret that can
 * change while running:
 *  - a TCP listener must be TLS unless it is on a loopback address, or the
 *    operator says the network is trusted (--allow-plaintext-network);
 *  - calls on a TCP listener (TLS or not, loopback too) carry a bearer token
 *    from --token-file ("authorization: Bearer TOKEN") unless
 *    --tcp-require-token off; Unix-socket calls need none (the socket
 *    file's mode and group let them in), but a token one sends is checked;
 *  - Unix-socket peers may be narrowed to --allow-uid / --allow-gid (their
 *    SO_PEERCRED uid, primary and supplementary groups);
 *  - the token file is re-read on SIGHUP (auth_reload): a file that does not
 *    read keeps the tokens loaded before.
 * It also says what a call's client may use of the devices (auth_grant):
 * its weight beside other clients and the highest priority it may ask for,
 * from its token's line (weight=, max-priority=), else its uid's
 * (--uid-weight, --uid-max-priority, changed by SIGHUP: auth_set_uid_rules),
 * else the defaults.
 * Health checks (grpc.health.v1.Health) need no token, so that load
 * balancers and systemd probes can ask without a secret; they say nothing
 * but SERVING or NOT_SERVING (a good token still names their client).
 * Everything else, reflection included, does.
 *
 * A connection's standing (auth_conn) is fixed when it is accepted; each
 * call is judged by auth_call() when its headers are whole, before any of
 * its request is read into a job. Every function may be called from any
 * thread.
 */
#ifndef AMPD_AUTH_H
#define AMPD_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth_file.h"
#include "config.h"
#include "h2.h"
#include "status.h"

#define AUTH_MAX_IDS 32   /* entries of --allow-uid, and of --allow-gid */

struct auth_rules {
    const char *token_file;        /* "": no tokens */
    bool tcp_require_token;        /* --tcp-require-token */
    bool allow_plaintext_network;  /* --allow-plaintext-network */
    const char *allow_uid;         /* "": any; else comma-separated users or uids */
    const char *allow_gid;         /* "": any; else comma-separated groups or gids */
    const struct config_uid_rules *uid_weight;       /* --uid-weight; NULL: none */
    const struct config_uid_rules *uid_max_priority; /* --uid-max-priority; NULL: none */
};

/* What a call's client may use (issue 34). */
struct auth_grant {
    uint32_t weight;    /* its share beside other clients: 1..JOB_WEIGHT_MAX */
    int max_priority;   /* the highest enum job_priority its calls may ask for */
};

/* Calls refused for who they come from, by reason: XX(name, metric label). */
#define AUTH_FAILURE_MAP(XX)                                                   \
    XX(MISSING, "missing_token")                                               \
    XX(UNKNOWN, "unknown_token")                                               \
    XX(MALFORMED, "malformed_authorization")                                   \
    XX(BAD_HEADER, "bad_authorization_header")                                 \
    XX(PEER_DENIED, "peer_not_allowed")

enum auth_failure {
#define AUTH_FAILURE_ENUM(name, label) AUTH_FAILED_##name,
    AUTH_FAILURE_MAP(AUTH_FAILURE_ENUM)
#undef AUTH_FAILURE_ENUM
    AUTH_FAILURE_COUNT
};

struct auth;

const char *auth_failure_label(enum auth_failure why);

/* Calls refused for reason why since the start (metrics). */
uint64_t auth_failures(const struct auth *a, enum auth_failure why);

/* Reads the token file and resolves the allow-lists. Returns 0, or -1 with
 * the reason in err. */
int auth_new(const struct auth_rules *rules, struct auth **out, char *err, size_t errlen);

/* Re-reads the token file (SIGHUP). Returns 0 with what happened in msg
 * ("N tokens"), or -1 with why in msg, the old tokens kept. A daemon with
 * no token file returns 1 (nothing to reload). */
int auth_reload(struct auth *a, char *msg, size_t msglen);

/* Puts new --uid-weight and --uid-max-priority rules in force (SIGHUP),
 * for calls from now on; NULL: none. */
void auth_set_uid_rules(struct auth *a, const struct config_uid_rules *weight,
                        const struct config_uid_rules *max_priority);

/* Calls fn with each token's name and the calls that carried it (a name's
 * count goes on across reloads), under the token set's lock: fn must not
 * call back into a. a NULL: no calls. For metrics. */
typedef void (*auth_token_calls_fn)(void *ctx, const char *name, uint64_t calls);
void auth_token_calls(struct auth *a, auth_token_calls_fn fn, void *ctx);

/* NULL is a no-op. */
void auth_free(struct auth *a);

/* May a listener at text (its parsed kind, TLS, and whether the bound
 * address is loopback) be opened under these rules? Returns 0, or -1 with
 * the reason and the option that would allow it in err. */
int auth_listener(const struct auth *a, const char *text, bool tcp, bool tls, bool loopback,
                  char *err, size_t errlen);

/* A connection's standing, fixed when accepted (auth_admit). */
struct auth_conn {
    long uid;          /* Unix socket: the peer's uid (SO_PEERCRED); -1 on TCP or unknown */
    bool need_token;   /* a TCP connection under --tcp-require-token on */
    bool denied;       /* a Unix peer in neither --allow-uid nor --allow-gid */
    bool health_only;  /* from a --health-listen listener (set by conn_admit) */
    const char *peer;  /* "uid 1000", "address 10.0.0.7": for log lines; owned by the
                        * connection, valid while it is */
};

/* Judges the fd of a connection just accepted (is_unix: from a Unix
 * listener). a NULL: anyone, no token. out->peer is left to the caller. */
void auth_admit(const struct auth *a, int fd, bool is_unix, struct auth_conn *out);

/* Judges one call to path from who, given its authorization header
 * (h2_call_authorization). STATUS_OK, with the token's name in client (""
 * when the call carried none) and what the client may use in *grant
 * (grant NULL: not asked; a or who NULL: the defaults); or UNAUTHENTICATED (no token where one is
 * needed, a wrong one, a malformed or oversized header: the message does
 * not say which of the first two) or PERMISSION_DENIED (a Unix peer outside
 * the allow-lists) or UNIMPLEMENTED (anything but Health on a
 * --health-listen connection), with the message for the client in msg. a
 * NULL or who NULL: STATUS_OK but for the last. */
enum status_code auth_call(struct auth *a, const struct auth_conn *who, const char *path,
                           enum h2_authorization hdr, const char *value, size_t len,
                           char *client, size_t clientlen, struct auth_grant *grant, char *msg,
                           size_t msglen);

/* Whether calls to path answer anyone, token or not (Health): such a call
 * passing proves nothing about its connection (conn_limit.h). */
bool auth_path_open(const char *path);

#endif
