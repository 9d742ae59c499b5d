/* SPDX-License-Identifier: MIT */
/* rpc_health.c: grpc.health.v1.Health, the standard health probe.
 *
 * The daemon serves two names: "" (the whole server) and "amp.v1.Amp".
 * Both are NOT_SERVING while the devices open (env->starting), SERVING
 * once every loop has its port into the scheduler (io_loop_ready), and
 * NOT_SERVING again from a drain's start. Check answers
 * once (an unknown name is NOT_FOUND, as the health checking protocol
 * asks); Watch, a server stream, sends the status at once (SERVICE_UNKNOWN
 * for an unknown name) and again when it changes: rpc_health_ready() sends
 * SERVING to the loop's watches when the daemon is ready; after the
 * drain, which the daemon never serves again: the watch sends
 * NOT_SERVING and ends (grpc-status 0) once that is out, so that open
 * watches do not hold the drain until --drain-timeout. Each loop keeps its
 * watches in env->watches; io_loop.c calls rpc_health_drain() when its
 * drain begins.
 */
#include "rpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/health/v1/health.pb-c.h"
#include "grpc_frame.h"

#define RPC_HEALTH_SERVICE "amp.v1.Amp"

typedef Grpc__Health__V1__HealthCheckResponse__ServingStatus rpc_health_status_t;

/* One Watch call, linked in its loop's env->watches once its request came. */
struct rpc_health_watch {
    struct rpc_call *rc;
    struct rpc_health_watch *next;
    struct rpc_health_watch **prev;  /* where this is linked from; NULL: not linked */
    rpc_health_status_t status;      /* the last one sent */
};

/* What service's health is now (the one definition Check and Watch share). */
static rpc_health_status_t rpc_health_status(const struct rpc_env *env, const char *service)
{
    if (service[0] && strcmp(service, RPC_HEALTH_SERVICE) != 0)
        return GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN;
    return env->draining || env->starting
               ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING
               : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
}

void rpc_health_check(struct rpc_call *rc, ProtobufCMessage *req)
{
    const Grpc__Health__V1__HealthCheckRequest *r = (const void *)req;
    Grpc__Health__V1__HealthCheckResponse reply = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
    reply.status = rpc_health_status(rc->env, r->service);
    if (reply.status == GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN) {
        rpc_fail(rc, STATUS_NOT_FOUND, "unknown service \"%s\"", r->service);
        return;
    }
    rpc_reply(rc, &reply.base);
}

/* --- Watch -------------------------------------------------------------------- */

/* Queues one HealthCheckResponse with status. Returns 0, or -1 when the
 * call failed. */
static int rpc_health_send(struct rpc_call *rc, rpc_health_status_t status)
{
    Grpc__Health__V1__HealthCheckResponse reply = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
    reply.status = status;
    size_t len = protobuf_c_message_get_packed_size(&reply.base);
    uint8_t *buf = malloc(GRPC_FRAME_HEADER + len);
    if (!buf) {
        h2_call_fail(rc->h2, STATUS_RESOURCE_EXHAUSTED, "out of memory for a health reply");
        return -1;
    }
    protobuf_c_message_pack(&reply.base, buf + GRPC_FRAME_HEADER);
    return h2_call_send(rc->h2, buf, len);
}

static void rpc_health_unlink(struct rpc_health_watch *w)
{
    if (!w->prev)
        return;
    *w->prev = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->next = NULL;
    w->prev = NULL;
}

static enum status_code rpc_health_watch_message(struct rpc_call *rc, const uint8_t *msg,
                                                 size_t len, char *err, size_t errlen)
{
    if (rc->stream) {
        /* gRPC's word for a call with the wrong number of messages. */
        snprintf(err, errlen, "Watch takes exactly one request message, got more");
        return STATUS_UNIMPLEMENTED;
    }
    struct rpc_health_watch *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory for a health watch");
        return STATUS_RESOURCE_EXHAUSTED;
    }
    w->rc = rc;
    rc->stream = w;   /* freed by closed() */
    Grpc__Health__V1__HealthCheckRequest *req = (Grpc__Health__V1__HealthCheckRequest *)
        protobuf_c_message_unpack(&grpc__health__v1__health_check_request__descriptor, NULL, len,
                                  msg);
    if (!req) {
        snprintf(err, errlen, "request is not a valid %s message",
                 grpc__health__v1__health_check_request__descriptor.name);
        return STATUS_INTERNAL;
    }
    w->status = rpc_health_status(rc->env, req->service);
    protobuf_c_message_free_unpacked(&req->base, NULL);
    if (rpc_health_send(rc, w->status) != 0)
        return STATUS_OK;   /* the call failed already */
    if (rc->env->draining) {
        h2_call_finish(rc->h2);   /* nothing will change any more */
        return STATUS_OK;
    }
    w->next = rc->env->watches;
    if (w->next)
        w->next->prev = &w->next;
    w->prev = &rc->env->watches;
    rc->env->watches = w;
    return STATUS_OK;
}

static void rpc_health_watch_end(struct rpc_call *rc)
{
    if (!rc->stream)
        h2_call_fail(rc->h2, STATUS_UNIMPLEMENTED,
                     "Watch takes exactly one request message, got none");
    /* Otherwise the client only half-closed: the watch goes on. */
}

static void rpc_health_watch_sent(struct rpc_call *rc)
{
    (void)rc;   /* one small message per change: nothing to hold back */
}

static void rpc_health_watch_closed(struct rpc_call *rc)
{
    struct rpc_health_watch *w = rc->stream;
    if (w)
        rpc_health_unlink(w);
    free(w);
}

static void rpc_health_watch_fail(struct rpc_call *rc, enum status_code code, const char *msg)
{
    h2_call_fail(rc->h2, code, msg);
}

void rpc_health_drain(struct rpc_env *env)
{
    while (env->watches) {
        struct rpc_health_watch *w = env->watches;
        rpc_health_unlink(w);
        rpc_health_status_t now = rpc_health_status(env, "");
        /* A watch of an unknown name saw SERVICE_UNKNOWN, which stays. */
        if (w->status != GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN &&
            rpc_health_send(w->rc, now) != 0)
            continue;   /* the call failed */
        h2_call_finish(w->rc->h2);
    }
}

void rpc_health_ready(struct rpc_env *env)
{
    rpc_health_status_t now = rpc_health_status(env, "");
    struct rpc_health_watch *w = env->watches;
    while (w) {
        struct rpc_health_watch *next = w->next;   /* a failed send may close w's call */
        if (w->status != GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN &&
            w->status != now && rpc_health_send(w->rc, now) == 0)
            w->status = now;
        w = next;
    }
}

const struct rpc_streaming rpc_health_watch_method = {
    .message = rpc_health_watch_message,
    .end = rpc_health_watch_end,
    .sent = rpc_health_watch_sent,
    .closed = rpc_health_watch_closed,
    .fail = rpc_health_watch_fail,
};
