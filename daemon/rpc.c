/* SPDX-License-Identifier: MIT */
/* rpc.c: method table, request decoding, and answering calls.
 *
 * The layer between h2.c (which hands over whole request messages) and the
 * method families in rpc_*.c. It owns struct rpc_call: created when a call
 * for a known method starts, freed when h2.c says the call closed. A job in
 * flight points back at its call through job->owner; closing the call clears
 * that pointer and cancels the job (a queued job is not run; one already
 * running finishes), so the completion for a vanished client just frees it.
 * A call whose client sent grpc-timeout gets a timer: when it fires first,
 * the call is answered DEADLINE_EXCEEDED, which closes it. A job call's
 * scheduling class (amp-priority, amp-max-queue-time, its client's grant
 * from auth.h) is settled at its start, and every job it submits gets it
 * in rpc_job_share(); a job with a queue time gets a second timer, which
 * ends the call UNAVAILABLE when it claims the job before a runner starts
 * it (job_claim).
 */
#include "rpc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "amp.pb-c.h"
#include "auth.h"
#include "client_share.h"
#include "body.h"
#include "budget.h"
#include "call_class.h"
#include "grpc/health/v1/health.pb-c.h"
#include "grpc_frame.h"
#include "listen.h"
#include "monotonic.h"
#include "rpc_bulk.h"
#include "rpc_bulk_rx.h"
#include "amp_wire.h"
#include "sched.h"
#include "stage_latency.h"

#define RPC_NS_PER_US 1000
#define RPC_US_PER_MS 1000
#define RPC_NS_PER_MS (RPC_NS_PER_US * RPC_US_PER_MS)

static const struct rpc_method rpc_methods[] = {
    { "/amp.v1.Amp/Reverse", &amp__v1__reverse_request__descriptor, rpc_reverse, NULL, true },
    { "/amp.v1.Amp/Transform", &amp__v1__transform_request__descriptor, rpc_transform, NULL, true },
    { "/amp.v1.Amp/Histogram", &amp__v1__histogram_request__descriptor, rpc_histogram, NULL,
      true },
    { "/amp.v1.Amp/Fill", &amp__v1__fill_request__descriptor, rpc_fill, NULL, true },
    { "/amp.v1.Amp/Pipeline", &amp__v1__pipeline_request__descriptor, rpc_pipeline, NULL, true },
    { "/amp.v1.Amp/Stream", NULL, NULL, &rpc_stream_method, true },
    { "/amp.v1.Amp/ListDevices", &amp__v1__list_devices_request__descriptor, rpc_list_devices,
      NULL, false },
    { "/amp.v1.Amp/Status", &amp__v1__status_request__descriptor, rpc_status, NULL, false },
    { "/grpc.health.v1.Health/Check", &grpc__health__v1__health_check_request__descriptor,
      rpc_health_check, NULL, false },
    { "/grpc.health.v1.Health/Watch", NULL, NULL, &rpc_health_watch_method, false },
    { "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", NULL, NULL,
      &rpc_reflection_method, false },
    { "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", NULL, NULL,
      &rpc_reflection_method, false },
};

const struct rpc_method *rpc_method_find(const char *path)
{
    for (size_t i = 0; i < sizeof(rpc_methods) / sizeof(rpc_methods[0]); i++)
        if (strcmp(rpc_methods[i].path, path) == 0)
            return &rpc_methods[i];
    return NULL;
}

const struct rpc_method *rpc_method_at(size_t i)
{
    return i < sizeof(rpc_methods) / sizeof(rpc_methods[0]) ? &rpc_methods[i] : NULL;
}

uint64_t rpc_now_ms(void)
{
    return monotonic_ms();
}

/* --- deadlines ------------------------------------------------------------ */

static void rpc_on_deadline(uv_timer_t *t)
{
    struct rpc_call *rc = t->data;
    char msg[STATUS_MSG_MAX];
    snprintf(msg, sizeof msg, "deadline exceeded: the call's grpc-timeout of %llu ms passed",
             (unsigned long long)h2_call_timeout_ms(rc->h2));
    if (rc->method->streaming) {
        rc->method->streaming->fail(rc, STATUS_DEADLINE_EXCEEDED, msg);
        return;
    }
    rpc_fail(rc, STATUS_DEADLINE_EXCEEDED, "%s", msg);   /* the call closes: its job is cancelled */
}

/* A call's timer: a new one on its loop, started for ms; NULL when out
 * of memory. */
static uv_timer_t *rpc_timer_start(struct rpc_call *rc, uv_timer_cb fire, uint64_t ms)
{
    uv_timer_t *t = malloc(sizeof *t);
    if (!t)
        return NULL;
    uv_timer_init(rc->env->loop, t);
    t->data = rc;
    uv_timer_start(t, fire, ms, 0);
    return t;
}

static void rpc_timer_free(uv_handle_t *h)
{
    free(h);
}

static void rpc_timer_close(uv_timer_t *t)
{
    if (!t)
        return;
    uv_timer_stop(t);
    uv_close((uv_handle_t *)t, rpc_timer_free);
}

/* The queue-time limit of the call's job passed: unless its runner
 * claimed it first (or it already ended), the call ends UNAVAILABLE and
 * the job is cancelled with it, as for the deadline. */
static void rpc_on_queue_limit(uv_timer_t *t)
{
    struct rpc_call *rc = t->data;
    const struct rpc_streaming *sm = rc->method->streaming;
    struct job *job = sm ? (sm->queued ? sm->queued(rc) : NULL) : rc->job;
    if (!job)
        return;
    /* The loop's clock, which the timer ran on, lags behind when the loop
     * was busy before it was started: wait out the rest. */
    uint64_t now = monotonic_ns();
    if (now < job->cls.queue_deadline_ns) {
        uint64_t rest_ns = job->cls.queue_deadline_ns - now;
        uv_timer_start(t, rpc_on_queue_limit, rest_ns / RPC_NS_PER_MS + 1, 0);
        return;
    }
    if (!job_claim(job, JOB_EXPIRED))
        return;
    char msg[STATUS_MSG_MAX];
    job_queue_expired_msg(job, now, msg, sizeof msg);
    if (sm) {
        sm->fail(rc, STATUS_UNAVAILABLE, msg);
        return;
    }
    rpc_fail(rc, STATUS_UNAVAILABLE, "%s", msg);   /* the call closes: its job is cancelled */
}

/* --- h2 handlers ---------------------------------------------------------- */

_Static_assert(JOB_PRIORITIES == CALL_CLASS_PRIORITIES && JOB_PRIORITY_HIGH == JOB_PRIORITIES - 1,
               "amp-priority's names are job.h's priorities, lowest first");

/* Checks the call's credentials before anything of it is read (auth.h),
 * and learns what its client may use (grant); a refusal is logged with
 * who made it by traffic.c, as every call's. */
static enum status_code rpc_auth(struct h2_call *call, const char *path, struct rpc_env *env,
                                 const struct auth_conn *who, char *client, size_t clientlen,
                                 struct auth_grant *grant, char *msg, size_t msglen)
{
    const char *value;
    size_t len;
    enum h2_authorization hdr = h2_call_authorization(call, &value, &len);
    enum status_code code = auth_call(env->auth, who, path, hdr, value, len, client, clientlen,
                                      grant, msg, msglen);
    return code;
}

/* Who the call's client is, as client_share.h names it: its token's name,
 * else who the connection is from. */
static void rpc_client_name(const struct rpc_call *rc, const struct auth_conn *who, char *name,
                            size_t namelen)
{
    if (rc->client[0])
        snprintf(name, namelen, "token %s", rc->client);
    else
        snprintf(name, namelen, "%s", who && who->peer ? who->peer : "unknown");
}

/* Counts rc as one of its client's calls (--max-client-streams) and its
 * bytes in its client's (--max-client-memory). */
static enum status_code rpc_share_enter(struct rpc_call *rc, const struct auth_conn *who,
                                        char *msg, size_t msglen)
{
    if (!rc->env->shares || !who)
        return STATUS_OK;
    char name[AUTH_NAME_MAX + LISTEN_PEER_MAX];
    rpc_client_name(rc, who, name, sizeof name);
    enum status_code code = client_share_enter(rc->env->shares, name, &rc->share, msg, msglen);
    if (code == STATUS_OK)   /* the bytes it holds count for its client too */
        h2_call_share(rc->h2, client_share_memory(rc->env->shares, rc->share));
    return code;
}

/* A job call's scheduling class: its client (client_share.h) and grant,
 * and its metadata checked against them. INVALID_ARGUMENT for a malformed
 * header, PERMISSION_DENIED for a priority over the client's cap, each
 * naming it; STATUS_OK otherwise (other methods ignore the metadata). */
static enum status_code rpc_class(struct rpc_call *rc, const struct auth_conn *who,
                                  const struct auth_grant *grant, char *msg, size_t msglen)
{
    rc->cls = (struct job_class){ .weight = JOB_WEIGHT_DEFAULT, .priority = JOB_PRIORITY_NORMAL };
    if (!rc->method->jobs)
        return STATUS_OK;
    const struct h2_call_class *hdr = h2_call_class(rc->h2);
    if (hdr->priority_bad) {
        snprintf(msg, msglen, "%s: want low, normal or high, sent once",
                 CALL_CLASS_PRIORITY_HEADER);
        return STATUS_INVALID_ARGUMENT;
    }
    if (hdr->max_queue_bad) {
        snprintf(msg, msglen, "%s: want a duration as grpc-timeout writes it (1 to 8 digits and "
                 "H, M, S, m, u or n; 5m is 5 ms), more than 0, sent once",
                 CALL_CLASS_MAX_QUEUE_HEADER);
        return STATUS_INVALID_ARGUMENT;
    }
    if (hdr->max_reply_bad) {
        snprintf(msg, msglen, "%s: want the reply bytes your client accepts, a decimal number "
                 "above 0, sent once", AMP_WIRE_MAX_REPLY_HEADER);
        return STATUS_INVALID_ARGUMENT;
    }
    if (hdr->server_timing_bad) {
        snprintf(msg, msglen, "%s: want 1, sent once", AMP_WIRE_SERVER_TIMING_HEADER);
        return STATUS_INVALID_ARGUMENT;
    }
    char name[AUTH_NAME_MAX + LISTEN_PEER_MAX];
    rpc_client_name(rc, who, name, sizeof name);
    /* A call that asks for none runs at normal, or at its cap below that. */
    int priority = hdr->priority >= 0                        ? hdr->priority
                   : grant->max_priority < JOB_PRIORITY_NORMAL ? grant->max_priority
                                                               : JOB_PRIORITY_NORMAL;
    if (priority > grant->max_priority) {
        snprintf(msg, msglen, "%s %s is above what %s may ask for (%s): a token file's "
                 "max-priority= or --uid-max-priority grants more", CALL_CLASS_PRIORITY_HEADER,
                 call_class_priority_name(priority), name,
                 call_class_priority_name(grant->max_priority));
        return STATUS_PERMISSION_DENIED;
    }
    struct job_class *c = &rc->cls;
    c->flow = rc->share ? client_share_flow(rc->share) : 0;
    snprintf(c->client, sizeof c->client, "%.*s", (int)sizeof c->client - 1,
             rc->share ? client_share_name(rc->share) : name);
    c->weight = grant->weight;
    c->priority = (enum job_priority)priority;
    c->queue_limit_default = !hdr->max_queue_us;
    rc->queue_limit_us = hdr->max_queue_us ? hdr->max_queue_us : rc->env->max_queue_us[priority];
    return STATUS_OK;
}

enum status_code rpc_h2_start(struct h2_call *call, const char *path, enum h2_call_kind *kind,
                              char *msg, size_t msglen, struct rpc_env *env,
                              const struct auth_conn *who)
{
    char client[AUTH_NAME_MAX] = "";
    struct auth_grant grant;
    enum status_code code =
        rpc_auth(call, path, env, who, client, sizeof client, &grant, msg, msglen);
    if (code != STATUS_OK)
        return code;
    const struct rpc_method *m = rpc_method_find(path);
    if (!m) {
        snprintf(msg, msglen, "unknown method %s", path);
        return STATUS_UNIMPLEMENTED;
    }
    struct rpc_call *rc = calloc(1, sizeof(*rc));
    if (!rc) {
        snprintf(msg, msglen, "out of memory");
        return STATUS_RESOURCE_EXHAUSTED;
    }
    rc->h2 = call;
    rc->env = env;
    rc->method = m;
    rc->t_start = stage_latency_now_ns();
    rc->peer_uid = who ? who->uid : -1;
    memcpy(rc->client, client, sizeof rc->client);
    code = rpc_share_enter(rc, who, msg, msglen);
    if (code != STATUS_OK) {
        free(rc);
        return code;
    }
    code = rpc_class(rc, who, &grant, msg, msglen);
    if (code != STATUS_OK) {
        if (rc->share)
            client_share_leave(env->shares, rc->share);
        free(rc);
        return code;
    }
    uint64_t timeout = h2_call_timeout_ms(call);
    if (timeout && env->loop && !(rc->deadline = rpc_timer_start(rc, rpc_on_deadline, timeout))) {
        if (rc->share)
            client_share_leave(env->shares, rc->share);
        free(rc);
        snprintf(msg, msglen, "out of memory");
        return STATUS_RESOURCE_EXHAUSTED;
    }
    h2_call_set_user(call, rc);
    *kind = m->streaming ? H2_STREAM : H2_UNARY;
    return STATUS_OK;
}

/* gRPC's status table: a server failing to parse a request says INTERNAL. */
static enum status_code rpc_invalid(struct rpc_call *rc, char *err, size_t errlen)
{
    snprintf(err, errlen, "request is not a valid %s message", rc->method->request->name);
    return STATUS_INTERNAL;
}

enum status_code rpc_decode_bulk(struct rpc_call *rc, uint8_t *buf, size_t len, uint64_t held,
                                 char *err, size_t errlen)
{
    rc->msg = buf;
    rc->msg_len = (size_t)held;
    const ProtobufCFieldDescriptor *bulk = rpc_bulk_field(rc->method->request);
    struct rpc_bulk b;
    if (rpc_bulk_scan(bulk, buf, len, &b) != 0)
        return rpc_invalid(rc, err, errlen);
    char why[STATUS_MSG_MAX];
    if (h2_call_hold(rc->h2, held + b.rest_len + rpc_bulk_scratch(&b), why, sizeof(why)) != 0) {
        snprintf(err, errlen, "no room to decode the %zu-byte request: %s", len, why);
        return STATUS_RESOURCE_EXHAUSTED;
    }
    rc->req = rpc_bulk_unpack(rc->method->request, bulk, buf, len, &b);
    h2_call_hold(rc->h2, held + b.rest_len, NULL, 0);   /* the scratch is gone */
    if (!rc->req)
        return rpc_invalid(rc, err, errlen);
    rc->bulk = b.data;
    rc->bulk_len = b.len;
    return STATUS_OK;
}

void rpc_take_bulk(struct rpc_call *rc, struct job *job)
{
    if (rpc_bulk_rx_give(&rc->bulk_rx, job)) {
        free(rc->msg);   /* what followed the field: decoded already */
        rc->msg = NULL;
        return;
    }
    if (!rc->msg)
        return;
    job->in = (uint8_t *)(uintptr_t)rc->bulk;
    job->in_len = rc->bulk_len;
    job->in_mem = rc->msg;
    job->in_mem_len = rc->msg_len;
    rc->msg = NULL;
    rc->bulk = NULL;
    rc->bulk_len = 0;
}

enum status_code rpc_h2_message(struct h2_call *call, const uint8_t *msg, size_t len, char *err,
                                size_t errlen, void *ctx)
{
    (void)ctx;
    struct rpc_call *rc = h2_call_user(call);
    if (rc->method->streaming)
        return rc->method->streaming->message(rc, msg, len, err, errlen);
    if (rpc_bulk_field(rc->method->request)) {
        /* The bulk bytes stay in the message's buffer, which rc keeps. */
        uint64_t held;
        uint8_t *buf = h2_call_take_message(rc->h2, &held);
        if (!buf) {
            snprintf(err, errlen, "internal error: the request's buffer could not be kept");
            return STATUS_INTERNAL;
        }
        return rpc_decode_bulk(rc, buf, len, held, err, errlen);
    }
    /* The decoded copy is about as large as the message (its bytes fields). */
    char why[STATUS_MSG_MAX];
    if (h2_call_hold(call, len, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "no room to decode the %zu-byte request: %s", len, why);
        return STATUS_RESOURCE_EXHAUSTED;
    }
    rc->req = protobuf_c_message_unpack(rc->method->request, NULL, len, msg);
    if (!rc->req)
        return rpc_invalid(rc, err, errlen);
    return STATUS_OK;
}

/* Pieces: a streaming method's own, or a unary request's bulk field
 * received in pieces (rpc_bulk_rx.h). */
size_t rpc_h2_piece_start(struct h2_call *call, const uint8_t *head, size_t msg_len, void *ctx)
{
    (void)ctx;
    struct rpc_call *rc = h2_call_user(call);
    const struct rpc_streaming *sm = rc->method->streaming;
    if (sm)
        return sm->piece_start ? sm->piece_start(rc, head, msg_len) : 0;
    const ProtobufCFieldDescriptor *bulk = rpc_bulk_field(rc->method->request);
    return bulk ? rpc_bulk_rx_start(&rc->bulk_rx, rc->env->sched, rc->h2, bulk, head, msg_len) : 0;
}

/* A request taken in pieces is whole: decode what follows the field,
 * holding the field's bytes too where they are the client's. A later
 * occurrence of the field wins, as in protobuf-c: the pieces are not
 * needed then (the hold stays until the job replaces it). */
static void rpc_pieces_whole(struct rpc_call *rc)
{
    size_t len;
    uint8_t *rest = rpc_bulk_rx_rest(rc->bulk_rx, &len);
    char err[STATUS_MSG_MAX];
    enum status_code code =
        rpc_decode_bulk(rc, rest, len, len + rpc_bulk_rx_held(rc->bulk_rx), err, sizeof err);
    if (code == STATUS_OK && rc->bulk) {
        rpc_bulk_rx_free(rc->bulk_rx);
        rc->bulk_rx = NULL;
    }
    if (code != STATUS_OK)
        rpc_fail(rc, code, "%s", err);
}

size_t rpc_h2_piece(struct h2_call *call, const uint8_t *data, size_t n, void *ctx)
{
    (void)ctx;
    struct rpc_call *rc = h2_call_user(call);
    if (rc->method->streaming)
        return rc->method->streaming->piece(rc, data, n);
    if (rpc_bulk_rx_piece(rc->bulk_rx, data, n))
        rpc_pieces_whole(rc);
    return n;
}

uint8_t *rpc_h2_piece_dest(struct h2_call *call, size_t *room, void *ctx)
{
    (void)ctx;
    struct rpc_call *rc = h2_call_user(call);
    const struct rpc_streaming *sm = rc->method->streaming;
    if (sm)
        return sm->piece_dest ? sm->piece_dest(rc, room) : NULL;
    return rpc_bulk_rx_dest(rc->bulk_rx, room);
}

void rpc_h2_end(struct h2_call *call, void *ctx)
{
    (void)ctx;
    struct rpc_call *rc = h2_call_user(call);
    if (rc->method->streaming) {
        rc->method->streaming->end(rc);
    } else {
        rc->t_request = stage_latency_now_ns();
        rc->method->handle(rc, rc->req);
    }
}

void rpc_h2_sent(struct h2_call *call, void *ctx)
{
    (void)ctx;
    struct rpc_call *rc = h2_call_user(call);
    if (rc && rc->method->streaming)
        rc->method->streaming->sent(rc);
}

/* A unary job call's stage g (STAGE_REQUEST to STAGE_TOTAL) as its
 * stamps say, the reply's stages ending at end: the one account that the
 * histograms and the server-timing trailer both read. */
static void rpc_stage_span(const struct rpc_call *rc, enum stage g, uint64_t end,
                           uint64_t *from, uint64_t *to)
{
    const uint64_t span[][2] = {
        [STAGE_REQUEST] = {rc->t_start, rc->t_request}, [STAGE_QUEUE] = {rc->t_submit, rc->t_run},
        [STAGE_RUN] = {rc->t_run, rc->t_done},          [STAGE_DELIVER] = {rc->t_done, rc->t_delivered},
        [STAGE_REPLY] = {rc->t_delivered, end},         [STAGE_TOTAL] = {rc->t_start, end},
    };
    *from = span[g][0];
    *to = span[g][1];
}

/* A call whose job was delivered: each stage's time (stage_latency.h). */
static void rpc_count_stages(const struct rpc_call *rc, struct stage_latency *s)
{
    uint64_t now = stage_latency_now_ns(), from, to;
    for (enum stage g = STAGE_REQUEST; g <= STAGE_TOTAL; g++) {
        rpc_stage_span(rc, g, now, &from, &to);
        stage_latency_record(s, g, from, to);
    }
}

/* rc's job, counted by rpc_job_share, no longer counts for its client: it
 * ended, was refused, or its call closed. */
static void rpc_job_share_done(struct rpc_call *rc)
{
    if (!rc->share_job)
        return;
    rc->share_job = false;
    client_share_job_done(rc->env->shares, rc->share);
}

void rpc_h2_closed(struct h2_call *call, void *ctx)
{
    (void)ctx;
    struct rpc_call *rc = h2_call_user(call);
    if (!rc)
        return;
    struct rpc_env *env = rc->env;
    if (rc->t_delivered)
        rpc_count_stages(rc, env->stages);
    rpc_timer_close(rc->deadline);
    rpc_timer_close(rc->queue_timer);
    if (rc->method->streaming)
        rc->method->streaming->closed(rc);
    if (rc->job) {
        rc->job->owner = NULL; /* the completion will find the call gone */
        atomic_store(&rc->job->cancelled, true);   /* and if it has not run, it will not */
        sched_abandon(env->sched, rc->job);
        /* The call's hold went back to its connection's budget just now,
         * but the job's memory lives until the runner hands it back: the
         * daemon-wide budget keeps counting it (room is there, since the
         * same bytes were just given back). */
        if (env->budget && !budget_take(env->budget, rc->job_held)) {
            rc->job->held_in = env->budget;
            rc->job->held = rc->job_held;
        }
    }
    rpc_job_share_done(rc);   /* an abandoned job no longer counts for its client */
    if (rc->share)
        client_share_leave(env->shares, rc->share);
    if (rc->req)
        protobuf_c_message_free_unpacked(rc->req, NULL);
    free(rc->msg);
    rpc_bulk_rx_free(rc->bulk_rx);
    free(rc);
}

/* --- answering ------------------------------------------------------------ */

void rpc_reply(struct rpc_call *rc, const ProtobufCMessage *reply)
{
    size_t len = protobuf_c_message_get_packed_size(reply);
    if (len > rc->env->max_message_bytes) {
        rpc_fail(rc, STATUS_RESOURCE_EXHAUSTED,
                 "reply message of %zu bytes exceeds --max-message-bytes (%zu)", len,
                 rc->env->max_message_bytes);
        return;
    }
    uint8_t *buf = malloc(GRPC_FRAME_HEADER + len);
    if (!buf) {
        rpc_fail(rc, STATUS_RESOURCE_EXHAUSTED, "out of memory for a %zu-byte reply", len);
        return;
    }
    protobuf_c_message_pack(reply, buf + GRPC_FRAME_HEADER);
    /* What the handler held (the request, the job) is freed as it returns;
     * the reply is held instead until it is sent. */
    h2_call_hold(rc->h2, 0, NULL, 0);
    h2_call_reply(rc->h2, buf, len);
}

void rpc_reply_ref(struct rpc_call *rc, const ProtobufCMessage *reply,
                   void (*release)(void *ctx), void *ctx)
{
    size_t len = protobuf_c_message_get_packed_size(reply);
    if (len > rc->env->max_message_bytes) {
        release(ctx);
        rpc_fail(rc, STATUS_RESOURCE_EXHAUSTED,
                 "reply message of %zu bytes exceeds --max-message-bytes (%zu)", len,
                 rc->env->max_message_bytes);
        return;
    }
    struct body b;
    body_init(&b);
    if (body_encode(&b, reply) != 0) {
        release(ctx);
        rpc_fail(rc, STATUS_RESOURCE_EXHAUSTED, "out of memory for a %zu-byte reply", len);
        return;
    }
    /* As in rpc_reply: the reply's hold (all of its bytes, the borrowed
     * results too) replaces the handler's. */
    h2_call_hold(rc->h2, 0, NULL, 0);
    h2_call_reply_body(rc->h2, &b, release, ctx);
}

void rpc_fail(struct rpc_call *rc, enum status_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    h2_call_vfailf(rc->h2, code, fmt, ap);
    va_end(ap);
}

/* --- jobs ----------------------------------------------------------------- */

const char *rpc_no_device(const struct rpc_env *env)
{
    return env->starting ? "devices starting: ampd is still opening its devices and building "
                           "its kernels; retry, or wait for health SERVING"
                         : "no device: this daemon has no OpenCL device";
}

void rpc_submit(struct rpc_call *rc, struct job *job, void (*done)(struct job *job))
{
    if (!rc->env->sched) {
        job_free(job);
        rpc_fail(rc, STATUS_UNAVAILABLE, "%s", rpc_no_device(rc->env));
        return;
    }
    job->owner = rc;
    job->done = done;
    char msg[STATUS_MSG_MAX];
    /* The job's input and outputs replace the decoded request in the
     * call's hold (its bytes moved into the job). */
    uint64_t need = job_memory(job);
    h2_call_hold(rc->h2, 0, NULL, 0);
    if (h2_call_hold(rc->h2, need, msg, sizeof(msg)) != 0) {
        job_free(job);
        rpc_fail(rc, STATUS_RESOURCE_EXHAUSTED, "the job needs %llu bytes: %s",
                 (unsigned long long)need, msg);
        return;
    }
    rc->job_held = need;
    job->t_submit = stage_latency_now_ns();
    enum status_code code = rpc_job_share(rc, job, msg, sizeof(msg));
    if (code == STATUS_OK)
        code = sched_submit(rc->env->sched, job, msg, sizeof(msg));
    if (code != STATUS_OK) {
        rpc_job_share_done(rc);
        job_free(job);
        rpc_fail(rc, code, "%s", msg);
        return;
    }
    rc->job = job;
}

/* The job's class is the call's; a queue time starts now, its timer with
 * it (one per call: a call submits one job at a time). */
static enum status_code rpc_job_class(struct rpc_call *rc, struct job *job, char *msg,
                                      size_t msglen)
{
    job->cls = rc->cls;
    if (!rc->queue_limit_us)
        return STATUS_OK;
    job->cls.queue_limit_us = rc->queue_limit_us;
    job->cls.queue_deadline_ns = monotonic_ns() + rc->queue_limit_us * RPC_NS_PER_US;
    if (!rc->env->loop || rc->queue_timer)
        return STATUS_OK;
    uint64_t ms = rc->queue_limit_us / RPC_US_PER_MS + (rc->queue_limit_us % RPC_US_PER_MS != 0);
    if (!(rc->queue_timer = rpc_timer_start(rc, rpc_on_queue_limit, ms))) {
        snprintf(msg, msglen, "out of memory");
        return STATUS_RESOURCE_EXHAUSTED;
    }
    return STATUS_OK;
}

enum status_code rpc_job_share(struct rpc_call *rc, struct job *job, char *msg, size_t msglen)
{
    enum status_code code = rpc_job_class(rc, job, msg, msglen);
    if (code != STATUS_OK || !rc->share || rc->share_job)
        return code;
    code = client_share_job(rc->env->shares, rc->share, msg, msglen);
    rc->share_job = code == STATUS_OK;
    return code;
}

/* The reply's server-timing trailer, for a call that asked for it
 * (amp_wire.h): where its time in the daemon went until its reply was
 * ready (the stages to deliver, and total to then), so that a client can
 * tell the daemon's time from the rest (the sockets, the hosts). */
static void rpc_server_timing(struct rpc_call *rc)
{
    char text[AMP_WIRE_SERVER_TIMING_MAX];
    size_t at = 0;
    for (enum stage g = STAGE_REQUEST; g <= STAGE_TOTAL && at < sizeof text; g++) {
        uint64_t from, to;
        if (g == STAGE_REPLY)
            continue;   /* it starts when the reply is ready */
        rpc_stage_span(rc, g, rc->t_delivered, &from, &to);
        double ms = from && to > from ? (double)(to - from) / 1e6 : 0;
        int n = snprintf(text + at, sizeof text - at, "%s%s;dur=%.3f", at ? ", " : "",
                         stage_latency_name(g), ms);
        at += n > 0 ? (size_t)n : 0;
    }
    h2_call_set_server_timing(rc->h2, text);
}

struct rpc_call *rpc_job_call(struct job *job)
{
    struct rpc_call *rc = job->owner;
    if (!rc) {
        if (job->held)
            budget_give(job->held_in, job->held);
        job_free(job);
        return NULL;
    }
    rc->job = NULL;
    rpc_job_share_done(rc);
    rc->t_submit = job->t_submit;
    rc->t_run = job->t_start;
    rc->t_done = job->t_done;
    rc->t_delivered = stage_latency_now_ns();
    if (h2_call_class(rc->h2)->server_timing)
        rpc_server_timing(rc);
    job_drop_input(job);   /* the results are all the reply needs */
    if (job->status != STATUS_OK) {
        enum status_code code = job->status;
        char msg[STATUS_MSG_MAX];
        snprintf(msg, sizeof(msg), "%s", job->msg);
        job_free(job);
        rpc_fail(rc, code, "%s", msg);
        return NULL;
    }
    return rc;
}
