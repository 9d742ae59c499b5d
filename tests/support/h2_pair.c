/* SPDX-License-Identifier: MIT */
/* h2_pair.c: in-memory server + client for h2 layer tests (see h2_pair.h). */
#include "h2_pair.h"

#include <string.h>

#include "config.h"

#define H2_PAIR_MAX_ROUNDS 100000

static enum status_code pair_start(struct h2_call *call, const char *path, enum h2_call_kind *kind,
                                   char *msg, size_t msglen, void *ctx)
{
    struct h2_pair *p = ctx;
    return rpc_h2_start(call, path, kind, msg, msglen, &p->env, NULL);
}

static void pair_want_write(void *ctx)
{
    struct h2_pair *p = ctx;
    p->want_write_calls++;
}

static const struct h2_handlers pair_handlers = {
    .start = pair_start,
    .message = rpc_h2_message,
    .end = rpc_h2_end,
    .closed = rpc_h2_closed,
    .want_write = pair_want_write,
};

void h2_pair_init(struct h2_pair *p, size_t max_message_bytes, uint32_t max_streams)
{
    memset(p, 0, sizeof(*p));
    p->env.max_message_bytes = max_message_bytes;
    p->env.max_unknown_length = AMPD_DEFAULT_MAX_UNKNOWN_LENGTH;   /* as a daemon runs */
    p->env.start_ms = rpc_now_ms();
    p->budget = (struct budget){ .max = UINT64_MAX, .name = "--max-job-memory" };
    struct h2_config cfg = { .max_message_bytes = max_message_bytes, .max_streams = max_streams,
                             .budget = &p->budget };
    p->server = h2_session_new(&cfg, &pair_handlers, p);
    p->client = h2c_new();
}

void h2_pair_free(struct h2_pair *p)
{
    h2_session_free(p->server);
    h2c_free(p->client);
}

void h2_pair_inject(struct h2_pair *p, const uint8_t *data, size_t len)
{
    p->server_recv_rv = h2_session_recv(p->server, data, len);
}

void h2_pair_pump(struct h2_pair *p)
{
    for (int round = 0; round < H2_PAIR_MAX_ROUNDS; round++) {
        bool moved = false;
        const uint8_t *b;
        ssize_t n;
        while ((n = h2c_send(p->client, &b)) > 0) {
            h2_pair_inject(p, b, (size_t)n);
            moved = true;
        }
        while ((n = h2_session_send(p->server, &b)) > 0) {
            h2c_recv(p->client, b, (size_t)n);
            moved = true;
        }
        if (!moved)
            return;
    }
}

const struct h2c_result *h2_pair_call(struct h2_pair *p, const char *path, const uint8_t *msg,
                                      size_t len)
{
    int32_t id = h2c_call(p->client, path, msg, len);
    h2_pair_pump(p);
    return h2c_result(p->client, id);
}
