/* SPDX-License-Identifier: MIT */
/* traffic.c: calls and bytes counted, refusals logged (see traffic.h). */
#include "traffic.h"

#include <stdlib.h>
#include <string.h>

#include "rpc.h"

int traffic_init(struct traffic *t)
{
    memset(t, 0, sizeof(*t));
    while (rpc_method_at(t->nmethods))
        t->nmethods++;
    t->nmethods++;   /* the row of unknown paths */
    t->calls = calloc(t->nmethods, sizeof(*t->calls));
    return t->calls ? 0 : -1;
}

void traffic_destroy(struct traffic *t)
{
    free(t->calls);
    t->calls = NULL;
}

const char *traffic_method_name(const struct traffic *t, size_t i)
{
    const struct rpc_method *m = i + 1 < t->nmethods ? rpc_method_at(i) : NULL;
    return m ? m->path + 1 : "unknown";
}

static size_t traffic_method_row(const struct traffic *t, const char *path)
{
    const struct rpc_method *m = rpc_method_find(path);
    return m ? (size_t)(m - rpc_method_at(0)) : t->nmethods - 1;
}

/* The log level of a call answered with code: debug for OK and for a
 * client that left (CANCELLED), error for the daemon's own faults
 * (UNKNOWN, INTERNAL, DATA_LOSS), warn for every other refusal. */
static enum log_level traffic_log_level(enum status_code code)
{
    switch (code) {
    case STATUS_OK:
    case STATUS_CANCELLED:
        return LOG_DEBUG;
    case STATUS_UNKNOWN:
    case STATUS_INTERNAL:
    case STATUS_DATA_LOSS:
        return LOG_ERROR;
    default:
        return LOG_WARN;
    }
}

void traffic_answered(struct traffic *t, const char *path, enum status_code code, const char *msg,
                      const char *peer)
{
    if (t && (unsigned)code < STATUS_CODE_COUNT)
        atomic_fetch_add_explicit(&t->calls[traffic_method_row(t, path)][code], 1,
                                  memory_order_relaxed);
    enum log_level level = traffic_log_level(code);
    if (!log_enabled(level))
        return;
    /* The path as the client sent it, quoted: it may be no method. */
    log_call(level, "call \"%s\" from %s: %s%s%s", path, peer, status_name(code),
             msg[0] ? ": " : "", msg);
}

void traffic_read(struct traffic *t, uint64_t n)
{
    atomic_fetch_add_explicit(&t->bytes_in, n, memory_order_relaxed);
}

void traffic_wrote(struct traffic *t, uint64_t n)
{
    atomic_fetch_add_explicit(&t->bytes_out, n, memory_order_relaxed);
}
