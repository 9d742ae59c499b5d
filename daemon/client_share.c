/* SPDX-License-Identifier: MIT */
/* client_share.c: per-client counts of calls and jobs (see client_share.h).
 *
 * Clients are a short list walked under the lock, as conn_limit.c keeps
 * peers: there are at most as many as calls open, and a call's start and
 * end are rare next to the bytes it moves.
 */
#include "client_share.h"

#include "budget.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLIENT_SHARE_NAME_MAX 128   /* "token NAME", "uid N", "address A" */

struct client_share_entry {
    struct client_share_entry *next;
    uint32_t calls;       /* open: 1 <= calls <= max_calls while listed */
    uint32_t jobs;        /* queued or running: jobs <= calls, jobs <= max_jobs */
    uint64_t flow;        /* its number (client_share_flow_of its name), set when listed */
    struct budget memory; /* bytes its calls hold (--max-client-memory), locked by the
                           * share's lock; used is 0 again before its last call leaves */
    char name[CLIENT_SHARE_NAME_MAX];
};

struct client_share {
    pthread_mutex_t lock;                /* guards clients and every entry's counts */
    uint32_t max_calls, max_jobs;        /* 0: no limit */
    uint64_t max_memory;                 /* 0: bytes are not counted per client */
    struct client_share_entry *clients;  /* those with a call open */
};

struct client_share *client_share_new(uint32_t max_calls, uint32_t max_jobs, uint64_t max_memory)
{
    struct client_share *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_init(&s->lock, NULL);
    s->max_calls = max_calls;
    s->max_jobs = max_jobs;
    s->max_memory = max_memory;
    return s;
}

void client_share_free(struct client_share *s)
{
    if (!s)
        return;
    while (s->clients) {
        struct client_share_entry *e = s->clients;
        s->clients = e->next;
        free(e);
    }
    pthread_mutex_destroy(&s->lock);
    free(s);
}

enum status_code client_share_enter(struct client_share *s, const char *client,
                                    struct client_share_entry **out, char *msg, size_t msglen)
{
    enum status_code code = STATUS_OK;
    pthread_mutex_lock(&s->lock);
    struct client_share_entry *e = s->clients;
    while (e && strcmp(e->name, client) != 0)
        e = e->next;
    if (e && s->max_calls && e->calls >= s->max_calls) {
        snprintf(msg, msglen, "--max-client-streams (%u) calls are already open for %s",
                 s->max_calls, client);
        code = STATUS_RESOURCE_EXHAUSTED;
    } else if (!e && !(e = calloc(1, sizeof *e))) {
        snprintf(msg, msglen, "out of memory");
        code = STATUS_RESOURCE_EXHAUSTED;
    } else {
        if (e->calls == 0) {
            snprintf(e->name, sizeof e->name, "%s", client);
            e->flow = client_share_flow_of(e->name);
            e->memory = (struct budget){ .max = s->max_memory, .name = "--max-client-memory",
                                         .owner = e->name, .lock = &s->lock };
            e->next = s->clients;
            s->clients = e;
        }
        e->calls++;
        *out = e;
    }
    pthread_mutex_unlock(&s->lock);
    return code;
}

/* FNV-1a, 64 bits: a client's number from its name, the same each time
 * it comes back; two names sharing one is a 2^-64 chance and would only
 * make them share a flow. */
#define CLIENT_SHARE_FNV_OFFSET 0xcbf29ce484222325ull
#define CLIENT_SHARE_FNV_PRIME 0x100000001b3ull

uint64_t client_share_flow_of(const char *name)
{
    uint64_t h = CLIENT_SHARE_FNV_OFFSET;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * CLIENT_SHARE_FNV_PRIME;
    return h ? h : 1;
}

uint64_t client_share_flow(const struct client_share_entry *e)
{
    return e->flow;
}

const char *client_share_name(const struct client_share_entry *e)
{
    return e->name;
}

void client_share_leave(struct client_share *s, struct client_share_entry *e)
{
    pthread_mutex_lock(&s->lock);
    if (--e->calls == 0) {
        struct client_share_entry **pp = &s->clients;
        while (*pp != e)
            pp = &(*pp)->next;
        *pp = e->next;
        free(e);
    }
    pthread_mutex_unlock(&s->lock);
}

enum status_code client_share_job(struct client_share *s, struct client_share_entry *e, char *msg,
                                  size_t msglen)
{
    enum status_code code = STATUS_OK;
    pthread_mutex_lock(&s->lock);
    if (s->max_jobs && e->jobs >= s->max_jobs) {
        snprintf(msg, msglen, "--max-client-jobs (%u) jobs are already queued or running for %s",
                 s->max_jobs, e->name);
        code = STATUS_RESOURCE_EXHAUSTED;
    } else {
        e->jobs++;
    }
    pthread_mutex_unlock(&s->lock);
    return code;
}

struct budget *client_share_memory(struct client_share *s, struct client_share_entry *e)
{
    return s->max_memory ? &e->memory : NULL;
}

void client_share_job_done(struct client_share *s, struct client_share_entry *e)
{
    pthread_mutex_lock(&s->lock);
    e->jobs--;
    pthread_mutex_unlock(&s->lock);
}
