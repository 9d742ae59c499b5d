/* SPDX-License-Identifier: MIT */
/* h2_pair.h: the daemon's h2 layer and a test client, joined in memory.
 *
 * The server side is a real h2_session whose calls go to the real rpc layer
 * (rpc.c) with a test-owned rpc_env (sched NULL: no devices, so job methods
 * validate and then answer UNAVAILABLE). h2_pair_pump() moves bytes both
 * ways until neither side has anything to say. No sockets, no loop.
 */
#ifndef AMP_TEST_H2_PAIR_H
#define AMP_TEST_H2_PAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "budget.h"
#include "h2.h"
#include "h2_client.h"
#include "rpc.h"

struct h2_pair {
    struct rpc_env env;
    struct budget budget;     /* max starts unlimited; tests may lower it */
    struct h2_session *server;
    struct h2c *client;
    int server_recv_rv;   /* last h2_session_recv() result */
    int want_write_calls; /* times the server asked to be flushed */
};

/* max_message_bytes and max_streams configure the server session. */
void h2_pair_init(struct h2_pair *p, size_t max_message_bytes, uint32_t max_streams);
void h2_pair_free(struct h2_pair *p);

/* Exchanges bytes until both sides are quiet. */
void h2_pair_pump(struct h2_pair *p);

/* Feeds raw bytes to the server as if the client had sent them. */
void h2_pair_inject(struct h2_pair *p, const uint8_t *data, size_t len);

/* One unary call with msg as its only message; pumps; returns the result. */
const struct h2c_result *h2_pair_call(struct h2_pair *p, const char *path, const uint8_t *msg,
                                      size_t len);

#endif
