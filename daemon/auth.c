/* SPDX-License-Identifier: MIT */
/* auth.c: who may call the daemon (see auth.h).
 *
 * Tokens are compared as SHA-256 digests with CRYPTO_memcmp against every
 * entry, so that the time a check takes says nothing about how much of a
 * guess was right or how long the real token is. The token set sits under
 * a mutex: each I/O loop checks calls, and SIGHUP swaps in a new set on the
 * main loop.
 */
#include "auth.h"

#include <errno.h>
#include <grp.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "job.h"
#include "listen.h"

#define AUTH_BEARER "Bearer"
/* Health checks answer without a token (auth.h says why). */
#define AUTH_OPEN_PREFIX "/grpc.health.v1.Health/"
/* Groups of a Unix peer looked at for --allow-gid: its primary and this many more. */
#define AUTH_PEER_GROUPS_MAX 256
/* getpwnam_r/getgrnam_r scratch. */
#define AUTH_LOOKUP_BUF 16384

struct auth {
    pthread_mutex_t lock;        /* guards file and the uid rules */
    struct auth_file file;       /* the tokens in force */
    struct config_uid_rules uid_weight;       /* --uid-weight */
    struct config_uid_rules uid_max_priority; /* --uid-max-priority */
    char path[AMPD_PATH_MAX];    /* --token-file; "": none */
    bool tcp_require_token;
    bool allow_plaintext_network;
    uid_t uids[AUTH_MAX_IDS];    /* --allow-uid: nuids of them */
    size_t nuids;
    gid_t gids[AUTH_MAX_IDS];    /* --allow-gid: ngids of them */
    size_t ngids;
    atomic_uint_least64_t failures[AUTH_FAILURE_COUNT];   /* calls refused, by reason */
};

/* --- allow-lists ---------------------------------------------------------- */

/* One entry of an allow-list: a number, or a user (is_user) or group name. */
static int auth_id(const char *item, bool is_user, unsigned long *id)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(item, &end, 10);
    /* (uid_t)-1 and (gid_t)-1 mean "no id" to the kernel: never a caller's. */
    if (item[0] >= '0' && item[0] <= '9' && *end == '\0' && errno == 0 && v < UINT32_MAX) {
        *id = v;
        return 0;
    }
    char *buf = malloc(AUTH_LOOKUP_BUF);
    if (!buf)
        return -1;
    int rv = -1;
    if (is_user) {
        struct passwd pw, *res = NULL;
        if (getpwnam_r(item, &pw, buf, AUTH_LOOKUP_BUF, &res) == 0 && res) {
            *id = res->pw_uid;
            rv = 0;
        }
    } else {
        struct group gr, *res = NULL;
        if (getgrnam_r(item, &gr, buf, AUTH_LOOKUP_BUF, &res) == 0 && res) {
            *id = res->gr_gid;
            rv = 0;
        }
    }
    free(buf);
    return rv;
}

/* A comma-separated list into ids (at most AUTH_MAX_IDS). */
static int auth_ids(const char *list, bool is_user, unsigned long *ids, size_t *n, char *err,
                    size_t errlen)
{
    const char *opt = is_user ? "--allow-uid" : "--allow-gid";
    char copy[AMPD_PATH_MAX];
    snprintf(copy, sizeof copy, "%s", list);
    *n = 0;
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        if (*n == AUTH_MAX_IDS) {
            snprintf(err, errlen, "%s: at most %d entries", opt, AUTH_MAX_IDS);
            return -1;
        }
        if (auth_id(item, is_user, &ids[*n]) != 0) {
            snprintf(err, errlen, "%s: no %s \"%s\"", opt, is_user ? "user" : "group", item);
            return -1;
        }
        (*n)++;
    }
    if (list[0] && *n == 0) {
        snprintf(err, errlen, "%s: \"%s\" names no %s", opt, list, is_user ? "user" : "group");
        return -1;
    }
    return 0;
}

static int auth_lists(struct auth *a, const struct auth_rules *r, char *err, size_t errlen)
{
    unsigned long ids[AUTH_MAX_IDS];
    if (auth_ids(r->allow_uid ? r->allow_uid : "", true, ids, &a->nuids, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < a->nuids; i++)
        a->uids[i] = (uid_t)ids[i];
    if (auth_ids(r->allow_gid ? r->allow_gid : "", false, ids, &a->ngids, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < a->ngids; i++)
        a->gids[i] = (gid_t)ids[i];
    return 0;
}

/* --- the token set ---------------------------------------------------------- */

int auth_new(const struct auth_rules *rules, struct auth **out, char *err, size_t errlen)
{
    struct auth *a = calloc(1, sizeof *a);
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&a->lock, NULL);
    a->tcp_require_token = rules->tcp_require_token;
    a->allow_plaintext_network = rules->allow_plaintext_network;
    snprintf(a->path, sizeof a->path, "%s", rules->token_file ? rules->token_file : "");
    auth_set_uid_rules(a, rules->uid_weight, rules->uid_max_priority);
    if (auth_lists(a, rules, err, errlen) != 0 ||
        (a->path[0] && auth_file_read(a->path, &a->file, err, errlen) != 0)) {
        auth_free(a);
        return -1;
    }
    *out = a;
    return 0;
}

int auth_reload(struct auth *a, char *msg, size_t msglen)
{
    if (!a || !a->path[0])
        return 1;
    struct auth_file fresh;
    if (auth_file_read(a->path, &fresh, msg, msglen) != 0)
        return -1;
    pthread_mutex_lock(&a->lock);
    struct auth_file old = a->file;
    /* A name's count goes on across reloads (its metric is by name). */
    for (size_t i = 0; i < fresh.n; i++)
        for (size_t j = 0; j < old.n; j++)
            if (strcmp(fresh.tokens[i].name, old.tokens[j].name) == 0)
                fresh.tokens[i].calls = old.tokens[j].calls;
    a->file = fresh;
    pthread_mutex_unlock(&a->lock);
    auth_file_free(&old);
    snprintf(msg, msglen, "%zu tokens from %s", fresh.n, a->path);
    return 0;
}

void auth_set_uid_rules(struct auth *a, const struct config_uid_rules *weight,
                        const struct config_uid_rules *max_priority)
{
    pthread_mutex_lock(&a->lock);
    a->uid_weight = weight ? *weight : (struct config_uid_rules){ .n = 0 };
    a->uid_max_priority = max_priority ? *max_priority : (struct config_uid_rules){ .n = 0 };
    pthread_mutex_unlock(&a->lock);
}

/* The value rules give uid, or dflt when none names it. Under a's lock. */
static uint32_t auth_uid_rule(const struct config_uid_rules *rules, long uid, uint32_t dflt)
{
    for (uint32_t i = 0; i < rules->n; i++)
        if ((long)rules->r[i].uid == uid)
            return rules->r[i].value;
    return dflt;
}

/* Fills what the token (t, NULL: none) left unsaid from who's uid's rules,
 * then the defaults: a token's own settings win over its uid's. Under a's
 * lock. */
static void auth_grant_fill(const struct auth *a, const struct auth_token *t, long uid,
                            struct auth_grant *grant)
{
    grant->weight = t && t->weight ? t->weight
                                   : auth_uid_rule(&a->uid_weight, uid, JOB_WEIGHT_DEFAULT);
    grant->max_priority = t && t->max_priority >= 0
                              ? t->max_priority
                              : (int)auth_uid_rule(&a->uid_max_priority, uid, JOB_PRIORITY_NORMAL);
}

void auth_token_calls(struct auth *a, auth_token_calls_fn fn, void *ctx)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    for (size_t i = 0; i < a->file.n; i++)
        fn(ctx, a->file.tokens[i].name, a->file.tokens[i].calls);
    pthread_mutex_unlock(&a->lock);
}

void auth_free(struct auth *a)
{
    if (!a)
        return;
    auth_file_free(&a->file);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

/* --- listeners and connections ------------------------------------------------ */

int auth_listener(const struct auth *a, const char *text, bool tcp, bool tls, bool loopback,
                  char *err, size_t errlen)
{
    if (!tcp)
        return 0;
    if (!tls && !loopback && !a->allow_plaintext_network) {
        snprintf(err, errlen,
                 "plaintext TCP beyond loopback would show tokens and data to the network: "
                 "use tls:%s (with --tls-cert and --tls-key), or --allow-plaintext-network on "
                 "if this network is trusted", text);
        return -1;
    }
    if (a->tcp_require_token && !a->path[0]) {
        snprintf(err, errlen,
                 "calls on TCP must carry a bearer token: give --token-file FILE, or "
                 "--tcp-require-token off to serve anyone who can reach %s", text);
        return -1;
    }
    return 0;
}

static bool auth_has_id(const unsigned *ids, size_t n, long id)
{
    for (size_t i = 0; i < n; i++)
        if ((long)ids[i] == id)
            return true;
    return false;
}

/* May this Unix peer (uid, primary group, supplementary groups) call? */
static bool auth_peer_allowed(const struct auth *a, int fd, long uid, long gid)
{
    if (!a->nuids && !a->ngids)
        return true;
    if (auth_has_id(a->uids, a->nuids, uid) || auth_has_id(a->gids, a->ngids, gid))
        return true;
    gid_t groups[AUTH_PEER_GROUPS_MAX];
    socklen_t len = sizeof groups;
    if (a->ngids && getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0) {
        for (size_t i = 0; i < len / sizeof(gid_t); i++)
            if (auth_has_id(a->gids, a->ngids, (long)groups[i]))
                return true;
    }
    return false;
}

void auth_admit(const struct auth *a, int fd, bool is_unix, struct auth_conn *out)
{
    long gid = -1;
    out->uid = -1;
    out->need_token = a && !is_unix && a->tcp_require_token;
    out->denied = false;
    if (!is_unix)
        return;
    if (listen_fd_cred(fd, is_unix, &out->uid, &gid) != 0) {
        out->denied = a && (a->nuids || a->ngids);   /* unknown: on no list */
        return;
    }
    out->denied = a && !auth_peer_allowed(a, fd, out->uid, gid);
}

/* --- calls ---------------------------------------------------------------------- */

/* The token in "Bearer TOKEN" (scheme case-insensitive, RFC 6750), or
 * NULL when value is not that shape. */
static const char *auth_bearer(const char *value, size_t len, size_t *toklen)
{
    size_t n = strlen(AUTH_BEARER);
    if (len <= n || strncasecmp(value, AUTH_BEARER, n) != 0 || value[n] != ' ')
        return NULL;
    while (n < len && value[n] == ' ')
        n++;
    *toklen = len - n;
    if (*toklen == 0 || *toklen > AUTH_TOKEN_MAX || !auth_file_token_chars(value + n, *toklen))
        return NULL;
    return value + n;
}

/* The name of the token, or -1: checks every entry, whatever matched.
 * A match fills grant (NULL: not asked) from its line and uid. */
static int auth_match(struct auth *a, const char *token, size_t len, long uid, char *client,
                      size_t clientlen, struct auth_grant *grant)
{
    uint8_t digest[AUTH_DIGEST_LEN];
    if (auth_file_digest(token, len, digest) != 0)
        return -1;
    int found = -1;
    pthread_mutex_lock(&a->lock);
    for (size_t i = 0; i < a->file.n; i++)
        if (CRYPTO_memcmp(a->file.tokens[i].digest, digest, AUTH_DIGEST_LEN) == 0)
            found = (int)i;
    if (found >= 0) {
        snprintf(client, clientlen, "%s", a->file.tokens[found].name);
        a->file.tokens[found].calls++;
        if (grant)
            auth_grant_fill(a, &a->file.tokens[found], uid, grant);
    }
    pthread_mutex_unlock(&a->lock);
    return found;
}

const char *auth_failure_label(enum auth_failure why)
{
    static const char *const labels[AUTH_FAILURE_COUNT] = {
#define AUTH_FAILURE_LABEL(name, label) label,
        AUTH_FAILURE_MAP(AUTH_FAILURE_LABEL)
#undef AUTH_FAILURE_LABEL
    };
    return (unsigned)why < AUTH_FAILURE_COUNT ? labels[why] : "unknown";
}

uint64_t auth_failures(const struct auth *a, enum auth_failure why)
{
    return a && (unsigned)why < AUTH_FAILURE_COUNT ? atomic_load(&a->failures[why]) : 0;
}

/* The token part of auth_call(): the header against the token set; *why
 * says which check failed. */
static enum status_code auth_token(struct auth *a, const struct auth_conn *who,
                                   enum h2_authorization hdr, const char *value, size_t len,
                                   char *client, size_t clientlen, struct auth_grant *grant,
                                   enum auth_failure *why, char *msg, size_t msglen)
{
    if (hdr == H2_AUTHORIZATION_BAD) {
        snprintf(msg, msglen, "authorization metadata sent twice or longer than %d bytes",
                 H2_AUTHORIZATION_MAX);
        *why = AUTH_FAILED_BAD_HEADER;
        return STATUS_UNAUTHENTICATED;
    }
    /* A token is checked wherever one is sent and tokens exist: a client
     * that sends a credential expects it to count. */
    if (hdr == H2_AUTHORIZATION_NONE || !a->path[0]) {
        if (!who->need_token)
            return STATUS_OK;
        snprintf(msg, msglen, "missing or invalid bearer token (authorization: Bearer TOKEN)");
        *why = AUTH_FAILED_MISSING;
        return STATUS_UNAUTHENTICATED;
    }
    size_t toklen;
    const char *token = auth_bearer(value, len, &toklen);
    if (!token) {
        snprintf(msg, msglen, "malformed authorization metadata: want \"Bearer TOKEN\", a token of "
                              "at most %d letters, digits, - . _ ~ + / then any =", AUTH_TOKEN_MAX);
        *why = AUTH_FAILED_MALFORMED;
        return STATUS_UNAUTHENTICATED;
    }
    if (auth_match(a, token, toklen, who->uid, client, clientlen, grant) < 0) {
        /* The client is told the same as for none sent: which it was is
         * for the operator (metrics), not for someone guessing tokens. */
        snprintf(msg, msglen, "missing or invalid bearer token (authorization: Bearer TOKEN)");
        *why = AUTH_FAILED_UNKNOWN;
        return STATUS_UNAUTHENTICATED;
    }
    return STATUS_OK;
}

bool auth_path_open(const char *path)
{
    return strncmp(path, AUTH_OPEN_PREFIX, strlen(AUTH_OPEN_PREFIX)) == 0;
}

enum status_code auth_call(struct auth *a, const struct auth_conn *who, const char *path,
                           enum h2_authorization hdr, const char *value, size_t len,
                           char *client, size_t clientlen, struct auth_grant *grant, char *msg,
                           size_t msglen)
{
    if (clientlen)
        client[0] = '\0';
    if (grant)
        *grant = (struct auth_grant){ .weight = JOB_WEIGHT_DEFAULT,
                                      .max_priority = JOB_PRIORITY_NORMAL };
    /* Before any token: a health listener is plaintext, maybe beyond
     * loopback, so nothing else may pass there. */
    if (who && who->health_only && !auth_path_open(path)) {
        snprintf(msg, msglen, "this listener (--health-listen) serves grpc.health.v1.Health only: "
                              "call %s on a --listen address", path);
        return STATUS_UNIMPLEMENTED;
    }
    if (!a || !who)
        return STATUS_OK;
    if (who->denied) {
        snprintf(msg, msglen, "%s may not use this socket (--allow-uid, --allow-gid)", who->peer);
        atomic_fetch_add(&a->failures[AUTH_FAILED_PEER_DENIED], 1);
        return STATUS_PERMISSION_DENIED;
    }
    /* Health answers anyone; a good token still names the client. */
    bool open = auth_path_open(path);
    enum auth_failure why = AUTH_FAILED_MISSING;
    enum status_code code =
        auth_token(a, who, hdr, value, len, client, clientlen, grant, &why, msg, msglen);
    if (code != STATUS_OK && !open)
        atomic_fetch_add(&a->failures[why], 1);
    if (grant && !client[0] && who->uid >= 0) {   /* no token: its uid's, if any */
        pthread_mutex_lock(&a->lock);
        auth_grant_fill(a, NULL, who->uid, grant);
        pthread_mutex_unlock(&a->lock);
    }
    return open ? STATUS_OK : code;
}
