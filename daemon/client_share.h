/* SPDX-License-Identifier: MIT */
/* client_share.h: each client's share of the daemon (issue 13 item 4).
 *
 * A client is who made a call, as auth.c knows it: the name of the token
 * it carried ("token alice"), else its Unix uid ("uid 1000"), else its
 * address ("address 10.0.0.7"); its connections, on any I/O loop, count
 * together. Two shares are bounded, daemon-wide under one mutex:
 *  - calls open at once (--max-client-streams: HTTP/2 streams, as
 *    --max-streams counts them per connection);
 *  - jobs queued or running (--max-client-jobs: a unary job from its
 *    submission until its answer, a Stream call from its header until it
 *    ends), beside the daemon-wide --max-jobs;
 *  - bytes its calls hold (--max-client-memory): each client has a budget
 *    (budget.h) that h2.c takes a call's bytes from besides its
 *    connection's, since one connection may carry calls of several
 *    clients; a job that outlives its call stays in the daemon's alone.
 * A limit of 0 is no limit. Over its share, a call gets RESOURCE_EXHAUSTED
 * naming the limit and the client, while other clients go on.
 * Each client also has a number, its flow in the fair queue (fairq.h):
 * a hash of its name, so that a client whose calls come one at a time
 * (its entry going and coming back with each) stays one flow, with the
 * fair queue's memory of what it was served.
 */
#ifndef AMPD_CLIENT_SHARE_H
#define AMPD_CLIENT_SHARE_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

struct budget;
struct client_share;
struct client_share_entry;   /* one client's counts; valid while it has a call open */

/* NULL when out of memory. max_memory 0: bytes are not counted per client. */
struct client_share *client_share_new(uint32_t max_calls, uint32_t max_jobs, uint64_t max_memory);

/* Every entry must have been left. NULL is a no-op. */
void client_share_free(struct client_share *s);

/* A call of client starts: STATUS_OK with its entry in *out, or
 * RESOURCE_EXHAUSTED (its --max-client-streams reached, or no memory)
 * with the message in msg. */
enum status_code client_share_enter(struct client_share *s, const char *client,
                                    struct client_share_entry **out, char *msg, size_t msglen);

/* The budget of e's client (--max-client-memory), a chain's root whose
 * lock is the share's, valid while e is; NULL when bytes are not counted
 * per client. A call gives back all it took before it leaves. */
struct budget *client_share_memory(struct client_share *s, struct client_share_entry *e);

/* e's client's number (>= 1: client_share_flow_of its name) and name ("token alice", "uid 1000"),
 * fixed while e is valid. */
uint64_t client_share_flow(const struct client_share_entry *e);
/* The number of the client called name: FNV-1a of its bytes, never 0. */
uint64_t client_share_flow_of(const char *name);
const char *client_share_name(const struct client_share_entry *e);

/* The call of e ended (its job slot, if any, and its bytes were given back first). */
void client_share_leave(struct client_share *s, struct client_share_entry *e);

/* A call of e's client starts a job: STATUS_OK, or RESOURCE_EXHAUSTED
 * (its --max-client-jobs reached) with the message in msg. */
enum status_code client_share_job(struct client_share *s, struct client_share_entry *e, char *msg,
                                  size_t msglen);

/* That job is answered, or its call went away. */
void client_share_job_done(struct client_share *s, struct client_share_entry *e);

#endif
