/* SPDX-License-Identifier: MIT */
/* async.c: many calls in flight on one connection (amp.h: amp_start_*,
 * amp_wait, amp_cancel, amp_call_*, amp_call_on_done).
 *
 * Each started call is a struct call (call.c) on its own HTTP/2 stream. It
 * waits on the connection's `calls` list, which the session callbacks
 * search beside the one blocking call (call_of), so a blocking call or an
 * amp_wait pumping the connection moves every call in flight. A call whose
 * stream ended is moved, with its outcome, to the connection's `done`
 * queue, and amp_wait hands those out oldest first, or, for a call with a
 * completion callback, to the `ready` queue whose callbacks amp_process
 * runs (loop.c). Request bytes are
 * borrowed from the caller (its input must stay put until the call is
 * done), as the blocking calls do. A started call is never sent twice: it
 * is not retried after a reconnection, and the connection is only
 * reopened when no call is in flight.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "async.h"
#include "call.h"
#include "conn.h"
#include "jobs.h"
#include "steps.h"
#include "stream.h"

/* A refused call is sent again at most this often (async_resubmit). */
#define ASYNC_RESUBMITS_MAX 3

struct amp_call {
    struct call call;           /* first: its `next` links the connection's in-flight list */
    amp_conn *c;                /* NULL once the connection closed */
    enum async_reply reply;
    const char *path;           /* the method, for a resubmission */
    int timeout_ms;
    int resubmits;              /* times refused unprocessed and sent again */
    int in_flight;              /* on c->calls */
    int queued;                 /* on c->done or c->ready: not yet handed out */
    int done;                   /* outcome below is final */
    int rc;                     /* 0 or AMP_E* */
    char message[CONN_MESSAGE_MAX];
    char device[CONN_DEVICE_MAX];
    void *out;                  /* ASYNC_DATA's bytes until amp_call_data takes them */
    size_t out_len;
    amp_hist hist;              /* ASYNC_HIST's, until amp_call_hist takes it */
    amp_step_kind *kinds;       /* ASYNC_STEPS: the steps' kinds (nsteps), owned */
    size_t nsteps;
    int in_region;              /* ASYNC_STEPS: the output went into a region */
    amp_step_result *results;   /* ASYNC_STEPS's, until amp_call_results takes them */
    struct stream *st;          /* ASYNC_STREAM: owned until the call finished */
    int taken;
    void *user;
    amp_done_cb cb;             /* NULL: amp_wait hands the call out */
    struct amp_call *done_next; /* link of c->done or c->ready, whichever holds it */
};

/* c->calls holds struct call pointers; each is the first member of its amp_call. */
static struct amp_call *async_of(struct call *call)
{
    return (struct amp_call *)call;
}

static void async_unlink(amp_conn *c, struct amp_call *a)
{
    for (struct call **pp = &c->calls; *pp; pp = &(*pp)->next) {
        if (*pp == &a->call) {
            *pp = a->call.next;
            break;
        }
    }
    a->call.next = NULL;
    a->in_flight = 0;
}

/* Appends a to the queue at *head. */
static void async_enqueue(struct amp_call **head, struct amp_call *a)
{
    a->done_next = NULL;
    while (*head)
        head = &(*head)->done_next;
    *head = a;
}

/* Takes a off the queue at *head, if it is there. */
static void async_dequeue(struct amp_call **head, struct amp_call *a)
{
    for (; *head; head = &(*head)->done_next) {
        if (*head == a) {
            *head = a->done_next;
            a->done_next = NULL;
            return;
        }
    }
}

/* Decodes a's reply by its kind. Returns 0 or an AMP_E* code. */
static int async_decode(amp_conn *c, struct amp_call *a)
{
    switch (a->reply) {
    case ASYNC_DATA: {
        int rc = jobs_data_reply(c, a->call.reply, a->call.reply_len, &a->out, &a->out_len);
        a->call.reply = NULL;   /* taken over */
        return rc;
    }
    case ASYNC_HIST:
        return jobs_hist_reply(c, a->call.reply, a->call.reply_len, &a->hist);
    case ASYNC_STEPS:
        return pipeline_reply(c, a->kinds, a->nsteps, a->in_region, a->call.reply,
                              a->call.reply_len, &a->results);
    case ASYNC_STREAM:
        return 0;
    }
    return conn_fail(c, AMP_EPROTO, "a call of no known kind");
}

/* a's outcome is known (rc, or its stream's end): off the in-flight list,
 * its reply decoded, onto the done queue, or the callbacks' (then the
 * loop is woken unless amp_process is running: it runs them). */
static void async_finish(amp_conn *c, struct amp_call *a, int rc)
{
    async_unlink(c, a);
    if (rc == 0) {
        conn_begin(c);   /* a failure given here keeps the message that came with it */
        rc = call_outcome(c, &a->call);
    }
    if (rc == 0)
        rc = async_decode(c, a);
    if (a->call.stream_id > 0 && !a->call.closed && !c->broken)
        nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, a->call.stream_id, NGHTTP2_CANCEL);
    conn_own_output(c);   /* a DATA frame may still point into its body, or a stream's buffers */
    call_release(&a->call);
    if (a->st) {
        rc = stream_end(a->st, rc);
        a->st = NULL;
    }
    a->rc = rc;
    snprintf(a->message, sizeof a->message, "%s", rc == 0 ? "" : c->message);
    snprintf(a->device, sizeof a->device, "%s", rc == 0 ? c->device : "");
    a->done = 1;
    a->queued = 1;
    if (a->cb) {
        async_enqueue(&c->ready, a);
        loop_wake(c);
    } else {
        async_enqueue(&c->done, a);
    }
}

/* A call the daemon refused unprocessed (REFUSED_STREAM: more streams
 * than its SETTINGS allow, sent before those arrived) goes again: nghttp2
 * now knows the limit and holds it until a stream is free. */
static bool async_resubmit(amp_conn *c, struct amp_call *a)
{
    if (a->call.reset_code != NGHTTP2_REFUSED_STREAM || a->call.grpc_status >= 0 ||
        a->call.http_status > 0 || a->call.err || c->broken ||
        c->goaway_error != NGHTTP2_NO_ERROR || a->resubmits == ASYNC_RESUBMITS_MAX)
        return false;
    a->resubmits++;
    call_restart(&a->call);
    return call_submit(c, &a->call, a->path, a->timeout_ms) == 0;
}

void async_collect(amp_conn *c)
{
    for (struct call *call = c->calls, *next; call; call = next) {
        next = call->next;
        if (call->done && !async_resubmit(c, async_of(call)))
            async_finish(c, async_of(call), 0);
    }
}

void async_fail_all(amp_conn *c, int rc)
{
    while (c->calls)
        async_finish(c, async_of(c->calls), rc);
}

int async_new(amp_conn *c, enum async_reply reply, amp_call **out)
{
    if (c->closing)
        return conn_fail(c, AMP_EINVAL, "the connection is closing: no call can start on it");
    int rc = c->calls ? 0 : conn_ready(c);   /* never reopen under calls in flight */
    if (rc == 0 && c->broken)
        rc = conn_fail(c, AMP_EIO, "the connection to the daemon broke; finish its calls first");
    if (rc != 0)
        return rc;
    struct amp_call *a = calloc(1, sizeof *a);
    if (!a)
        return conn_fail(c, AMP_ENOMEM, "out of memory for a call");
    call_init(&a->call);
    a->call.no_copy = 1;   /* borrows the caller's input until the call is done */
    a->c = c;
    a->reply = reply;
    *out = a;
    return 0;
}

struct call *async_call(amp_call *a)
{
    return &a->call;
}

int async_set_steps(amp_conn *c, amp_call *a, const amp_step *steps, size_t n, int in_region)
{
    a->kinds = malloc(n * sizeof *a->kinds);
    if (!a->kinds)
        return conn_fail(c, AMP_ENOMEM, "out of memory for %zu steps", n);
    for (size_t i = 0; i < n; i++)
        a->kinds[i] = steps_kind(steps, i);
    a->nsteps = n;
    a->in_region = in_region;
    return 0;
}

void async_set_stream(amp_call *a, struct stream *st)
{
    a->st = st;
}

/* Also for a call the caller frees (amp_call_free): what it holds goes. */
void async_drop(struct amp_call *a)
{
    call_release(&a->call);
    stream_free(a->st);
    amp_free(a->out);
    amp_hist_free(&a->hist);
    amp_step_results_free(a->results, a->nsteps);
    free(a->kinds);
    free(a);
}

int async_submit(amp_conn *c, amp_call *a, const char *path, const ProtobufCMessage *msg,
                 int timeout_ms, amp_call **out)
{
    a->path = path;
    a->timeout_ms = timeout_ms;
    int rc = msg ? body_encode(&a->call.body, msg) : 0;
    if (rc == -2)
        rc = conn_fail(c, AMP_EINVAL, "request exceeds gRPC's 4 GiB message limit");
    else if (rc != 0)
        rc = conn_fail(c, AMP_ENOMEM, "out of memory encoding the request");
    if (rc == 0)
        rc = call_submit(c, &a->call, path, timeout_ms);
    if (rc != 0) {
        async_drop(a);
        return rc;
    }
    a->call.next = c->calls;
    c->calls = &a->call;
    a->in_flight = 1;
    conn_flush_nowait(c);
    if (a->st)
        loop_wake(c);   /* amp_process feeds its input once the header has gone */
    loop_watch(c);
    *out = a;
    return 0;
}

/* Starts the call of r. */
static int async_start(amp_conn *c, const struct jobs_req *r, enum async_reply reply,
                       int timeout_ms, amp_call **out)
{
    amp_call *a;
    int rc = async_new(c, reply, &a);
    return rc != 0 ? rc : async_submit(c, a, r->path, r->msg, timeout_ms, out);
}

int amp_start_reverse(amp_conn *c, const amp_opts *o, const void *in, size_t len,
                      amp_call **call)
{
    if (!c || !call)
        return AMP_EINVAL;
    conn_begin(c);
    *call = NULL;
    struct jobs_req r;
    int rc = jobs_reverse_req(c, o, in, len, &r);
    return rc != 0 ? rc : async_start(c, &r, ASYNC_DATA, jobs_timeout(o), call);
}

int amp_start_transform(amp_conn *c, const amp_opts *o, const amp_transform_params *p,
                        const void *in, size_t len, amp_call **call)
{
    if (!c || !call)
        return AMP_EINVAL;
    conn_begin(c);
    *call = NULL;
    struct jobs_req r;
    int rc = jobs_transform_req(c, o, p, in, len, &r);
    return rc != 0 ? rc : async_start(c, &r, ASYNC_DATA, jobs_timeout(o), call);
}

int amp_start_histogram(amp_conn *c, const amp_opts *o, const amp_hist_params *p,
                        const void *in, size_t len, amp_call **call)
{
    if (!c || !call)
        return AMP_EINVAL;
    conn_begin(c);
    *call = NULL;
    struct jobs_req r;
    int rc = jobs_hist_req(c, o, p, in, len, &r);
    return rc != 0 ? rc : async_start(c, &r, ASYNC_HIST, jobs_timeout(o), call);
}

size_t amp_in_flight(const amp_conn *c)
{
    size_t n = 0;
    for (const struct call *call = c ? c->calls : NULL; call; call = call->next)
        n++;
    for (const struct amp_call *a = c ? c->done : NULL; a; a = a->done_next)
        n++;
    for (const struct amp_call *a = c ? c->ready : NULL; a; a = a->done_next)
        n++;
    return n;
}

/* amp_wait's work; amp_wait then brings amp_fd's watch up to date. */
static int async_wait(amp_conn *c, int timeout_ms, amp_call **done)
{
    conn_begin(c);
    *done = NULL;
    long long deadline = timeout_ms > 0 ? conn_now_ms() + timeout_ms : 0;
    const int not_yet = 0;
    for (;;) {
        async_feed(c);
        async_collect(c);
        struct amp_call *a = c->done;
        if (a) {
            c->done = a->done_next;
            a->done_next = NULL;
            a->queued = 0;
            a->c = NULL;   /* handed out: nothing of c is needed any more */
            *done = a;
            return 0;
        }
        if (!c->calls)
            return conn_fail(c, AMP_EINVAL, "no call started to wait for");
        if (timeout_ms == 0 || (deadline && conn_now_ms() >= deadline))
            return conn_fail(c, AMP_EDEADLINE, "no call finished in time");
        /* One round at most until the deadline; a poll (timeout 0) waits not at all. */
        int rc = conn_pump_once(c, deadline, &not_yet);
        if (rc == AMP_EDEADLINE)
            continue;   /* the loop reports it after collecting */
        if (rc != 0) {
            char why[CONN_MESSAGE_MAX];
            snprintf(why, sizeof why, "%s", c->message);
            async_fail_all(c, rc);
            conn_fail(c, rc, "%s", why);
        }
    }
}

int amp_wait(amp_conn *c, int timeout_ms, amp_call **done)
{
    if (!c || !done)
        return AMP_EINVAL;
    if (c->loop.firing) {
        *done = NULL;
        return conn_fail(c, AMP_EINVAL, "amp_wait from a completion callback");
    }
    int rc = async_wait(c, timeout_ms, done);
    loop_watch(c);   /* output it left waiting for room in the socket */
    return rc;
}

int amp_cancel(amp_call *a)
{
    if (!a)
        return AMP_EINVAL;
    if (a->done || !a->c)
        return 0;   /* too late: it has its outcome */
    amp_conn *c = a->c;
    conn_fail(c, AMP_ECANCELLED, "the call was cancelled");
    async_finish(c, a, AMP_ECANCELLED);
    conn_flush_nowait(c);
    loop_watch(c);   /* the reset may wait for room in the socket */
    return 0;
}

int amp_call_status(const amp_call *a)
{
    return !a ? AMP_EINVAL : a->done ? a->rc : AMP_EPENDING;
}

const char *amp_call_message(const amp_call *a)
{
    return a ? a->message : "";
}

const char *amp_call_device(const amp_call *a)
{
    return a ? a->device : "";
}

/* What amp_call_data and amp_call_hist may hand over: 0, or why not. */
static int async_result(const amp_call *a, enum async_reply reply)
{
    if (!a || a->reply != reply)
        return AMP_EINVAL;
    if (!a->done)
        return AMP_EPENDING;
    if (a->rc != 0)
        return a->rc;
    return a->taken ? AMP_EINVAL : 0;
}

int amp_call_data(amp_call *a, void **out, size_t *out_len)
{
    if (!out || !out_len)
        return AMP_EINVAL;
    *out = NULL;
    *out_len = 0;
    int rc = async_result(a, ASYNC_DATA);
    if (rc != 0)
        return rc;
    *out = a->out;
    *out_len = a->out_len;
    a->out = NULL;
    a->taken = 1;
    return 0;
}

int amp_call_hist(amp_call *a, amp_hist *h)
{
    if (!h)
        return AMP_EINVAL;
    memset(h, 0, sizeof *h);
    int rc = async_result(a, ASYNC_HIST);
    if (rc != 0)
        return rc;
    *h = a->hist;
    memset(&a->hist, 0, sizeof a->hist);
    a->taken = 1;
    return 0;
}

void *amp_call_user(const amp_call *a)
{
    return a ? a->user : NULL;
}

void amp_call_set_user(amp_call *a, void *user)
{
    if (a)
        a->user = user;
}

int amp_call_results(amp_call *a, amp_step_result **results, size_t *n)
{
    if (!results || !n)
        return AMP_EINVAL;
    *results = NULL;
    *n = 0;
    int rc = async_result(a, ASYNC_STEPS);
    if (rc != 0)
        return rc;
    *results = a->results;
    *n = a->nsteps;
    a->results = NULL;
    a->taken = 1;
    return 0;
}

int amp_call_on_done(amp_call *a, amp_done_cb cb, void *user)
{
    if (!a || !a->c)
        return AMP_EINVAL;   /* handed out already: nothing is left to call back */
    a->cb = cb;
    a->user = user;
    amp_conn *c = a->c;
    if (!a->queued)
        return 0;   /* still running */
    /* Finished and queued: onto the queue its callback (or none) says. */
    async_dequeue(&c->done, a);
    async_dequeue(&c->ready, a);
    if (cb) {
        async_enqueue(&c->ready, a);
        loop_wake(c);
    } else {
        async_enqueue(&c->done, a);
    }
    return 0;
}

void amp_call_free(amp_call *a)
{
    if (!a)
        return;
    a->cb = NULL;   /* given up: no callback */
    if (!a->done && a->c)
        amp_cancel(a);
    amp_conn *c = a->c;
    if (c && a->queued) {   /* finished but never handed out: off its queue */
        async_dequeue(&c->done, a);
        async_dequeue(&c->ready, a);
    }
    async_drop(a);
}

void async_feed(amp_conn *c)
{
    for (struct call *call = c->calls, *next; call; call = next) {
        next = call->next;
        struct amp_call *a = async_of(call);
        int rc = a->st && !call->done ? stream_feed(a->st) : 0;
        if (rc != 0)
            async_finish(c, a, rc);
    }
}

void async_fire(amp_conn *c)
{
    /* The calls due now, taken one at a time off the queue: a callback may
     * free another call that is due (it leaves the queue) or cancel one
     * (it joins the queue, for the next amp_process). */
    size_t due = 0;
    for (const struct amp_call *a = c->ready; a; a = a->done_next)
        due++;
    c->loop.firing++;
    while (due-- > 0 && c->ready) {
        struct amp_call *a = c->ready;
        c->ready = a->done_next;
        a->done_next = NULL;
        a->queued = 0;
        a->c = NULL;   /* handed out: nothing of c is needed any more */
        a->cb(a, a->user);   /* may free a */
    }
    c->loop.firing--;
}

void async_close(amp_conn *c)
{
    c->closing = 1;
    async_fail_all(c, conn_fail(c, AMP_EIO, "the connection was closed"));
    async_fire(c);
    for (struct amp_call *a = c->done; a; a = a->done_next)
        a->c = NULL;
    c->done = NULL;
}
