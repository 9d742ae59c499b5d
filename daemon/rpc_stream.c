/* SPDX-License-Identifier: MIT */
/* rpc_stream.c: amp.v1.Amp/Stream, one job over input of any size.
 *
 * The life of a stream, on the loop thread:
 *   header  -> validate the steps, place the job, submit OPEN (the runner
 *              admits its device memory; it may wait there for room);
 *   data    -> copy each request chunk into pinned staging buffers
 *              (staging.h); every full buffer becomes an IN task, whose
 *              output comes back in the same buffer and goes out as a
 *              StreamReply data chunk, in order;
 *   half-close -> the last partial buffer goes in; then RUN and OUT tasks
 *              for a job that needs all of its data at once (reverse,
 *              fill); then END for the histogram counts, one `result`
 *              reply per histogram step, grpc-status 0, and CLOSE.
 * A job that needs all of its data at once holds it in one device buffer
 * of the header's total_length, or of --max-unknown-length when the header
 * says 0 ("unknown", amp.proto): input past that is refused as it comes,
 * and the steps are checked against the real length once the input ends.
 * Backpressure: a stream holds at most `cap` staging buffers and lets at
 * most RPC_STREAM_UNSENT_CHUNKS reply chunks wait on its connection. Past
 * either, or when its device's pool is empty, it pauses its call
 * (h2_stream_pause): its HTTP/2 window stops being returned and the client
 * stops sending. Completions, a free buffer (staging waiter) or reply
 * bytes leaving (sent) resume it.
 * A failure or a vanished client marks the job cancelled (the runner drops
 * its queued tasks), returns the staging buffers as their tasks finish,
 * and ends with CLOSE, which frees the device side. The stream outlives
 * its call until then.
 */
#include "rpc.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amp.pb-c.h"
#include "grpc_frame.h"
#include "pb_wire.h"
#include "rpc_params.h"
#include "rpc_reply_bound.h"
#include "sched.h"
#include "stage_latency.h"
#include "staging.h"
#include "amp_wire.h"

/* Staging buffers one stream may hold: enough for a copy in, a kernel and
 * a copy out to overlap with one buffer filling, and at most half of the
 * pool so that one stream never starves the others. */
#define RPC_STREAM_BUFS_MAX 8
/* Reply chunks queued on the connection before the stream stops taking
 * input: a client that stops reading holds this much, no more. */
#define RPC_STREAM_UNSENT_CHUNKS 2
/* A data reply's bytes before the data, besides the device name: two tags
 * and two varints. */
#define RPC_REPLY_HEAD_MAX (2 + 2 * PB_VARINT_MAX)
/* Every reply message, its gRPC prefix included, fits gRPC's default
 * receive limit (grpc.max_receive_message_length, 4 MiB), so that a stock
 * client reads any --chunk-bytes: a larger chunk leaves as several data
 * replies, each borrowing its part of the staging buffer. */
#define RPC_STREAM_REPLY_MAX (4u * 1024 * 1024)

enum rpc_stream_phase {
    RS_HEADER,    /* waiting for the JobHeader */
    RS_OPENING,   /* OPEN submitted: admission and device set-up */
    RS_INPUT,     /* taking data */
    RS_RUNNING,   /* resident: RUN submitted */
    RS_OUTPUT,    /* resident: copying the result out */
    RS_ENDING,    /* END submitted: histogram counts */
    RS_CLOSING,   /* CLOSE submitted; the stream is freed when it completes */
};

struct rpc_stream {
    struct rpc_call *rc;          /* NULL once the call closed */
    struct sched_port *sched;
    size_t max_result;            /* --max-message-bytes: a histogram's result is one message */
    Amp__V1__JobHeader *header;   /* owned, kept to re-check the steps at the end */
    struct job *job;              /* owned; NULL before the header */
    size_t dev;                   /* device index, once placed */
    struct staging_port *pool;     /* this loop's view of the device's pool */
    struct staging_waiter waiter;
    enum rpc_stream_phase phase;
    bool begun;                   /* counted by sched_stream_begin */
    bool opened;                  /* OPEN submitted: CLOSE is owed */
    bool resident;                /* a reverse or fill step: whole data on the device */
    bool unsized;                 /* resident, reads its input, and no total_length: takes
                                   * up to job->in_cap bytes, steps re-checked at the end */
    bool has_data;                /* some step outputs bytes */
    bool paused;                  /* the call's input is paused */
    bool input_ended;             /* the client half-closed */
    bool failed;                  /* answered with an error, or the client is gone */
    struct staging_buf *fill;     /* being filled with input, or NULL */
    size_t fill_len;
    uint64_t fill_offset;         /* stream position of fill's first byte */
    size_t skip;                  /* bytes of a redelivered message already taken */
    uint64_t received;            /* input bytes taken */
    uint64_t out_next, out_total; /* resident: result bytes requested, and all */
    unsigned held;                /* staging buffers held, <= cap (lent ones too) */
    unsigned lent;                /* of those, lent to h2 as replies being sent */
    bool close_done;              /* CLOSE finished; freed once lent is 0 */
    unsigned cap;
    unsigned tasks;               /* submitted and not yet done */
    uint64_t device_ns;           /* its tasks' device time so far (tenant_stats.h) */
    uint64_t device_end;          /* when the last task done so far ended (stage_latency_now_ns) */
};

struct rpc_stream_task {
    struct task t;
    struct rpc_stream *st;
    struct staging_buf *sb;       /* IN/OUT: the buffer, returned when done */
    size_t pieces;                /* data replies h2 still borrows sb for; sb goes back at 0 */
};

static void rpc_stream_pump(struct rpc_stream *st);

/* --- failing and freeing ---------------------------------------------------- */

static void rpc_stream_free(struct rpc_stream *st)
{
    if (st->pool)
        staging_cancel(st->pool, &st->waiter);
    if (st->begun)
        sched_stream_end(st->sched, st->job, st->dev, st->opened, st->device_ns, !st->failed);
    if (st->rc)
        st->rc->stream = NULL;
    if (st->header)
        protobuf_c_message_free_unpacked(&st->header->base, NULL);
    job_free(st->job);
    free(st);
}

static void rpc_stream_put(struct rpc_stream *st, struct staging_buf *sb)
{
    staging_put(st->pool, sb);
    st->held--;
}

static void rpc_stream_submit(struct rpc_stream *st, enum task_kind kind, struct staging_buf *sb,
                              uint64_t offset, size_t len);

/* The one place a CLOSE is submitted: every path that ends a stream (its
 * END, a failure, the call closing, which can happen inside either of the
 * others) comes here, and only the first submits. */
static void rpc_stream_close(struct rpc_stream *st)
{
    if (st->phase == RS_CLOSING)
        return;
    st->phase = RS_CLOSING;
    rpc_stream_submit(st, TASK_CLOSE, NULL, 0, 0);
}

/* Once nothing is in flight, a failed stream frees its device side. */
static void rpc_stream_wind_down(struct rpc_stream *st)
{
    if (!st->failed || st->tasks || st->phase == RS_CLOSING)
        return;
    if (st->opened) {
        rpc_stream_close(st);
        return;
    }
    rpc_stream_free(st);
}

static void rpc_stream_fail(struct rpc_stream *st, enum status_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Stops the stream's work without answering the call (it is answered or
 * gone): queued tasks are dropped, buffers not in a task go back. */
static void rpc_stream_stop(struct rpc_stream *st)
{
    st->failed = true;
    if (st->job)
        atomic_store(&st->job->cancelled, true);
    if (st->pool)
        staging_cancel(st->pool, &st->waiter);
    if (st->fill) {
        if (st->rc)
            h2_call_settle_read(st->rc->h2);   /* the socket's reader may be filling it */
        rpc_stream_put(st, st->fill);
        st->fill = NULL;
    }
}

static void rpc_stream_fail(struct rpc_stream *st, enum status_code code, const char *fmt, ...)
{
    if (st->failed)
        return;
    rpc_stream_stop(st);
    /* Answering may close the call at once (closed() runs inside): the
     * stream stays alive, since its CLOSE is still owed or in flight. */
    if (st->rc) {
        char msg[STATUS_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        rpc_fail(st->rc, code, "%s", msg);
    }
}

/* --- replies ------------------------------------------------------------------ */

static void rpc_stream_reply(struct rpc_stream *st, const Amp__V1__StreamReply *r)
{
    if (!st->rc || st->failed)
        return;
    size_t len = protobuf_c_message_get_packed_size(&r->base);
    uint8_t *buf = malloc(GRPC_FRAME_HEADER + len);
    if (!buf) {
        rpc_stream_fail(st, STATUS_RESOURCE_EXHAUSTED, "out of memory for a %zu-byte reply", len);
        return;
    }
    protobuf_c_message_pack(&r->base, buf + GRPC_FRAME_HEADER);
    if (h2_call_send(st->rc->h2, buf, len) != 0)
        rpc_stream_stop(st);   /* the layer answered the call itself */
}

static void rpc_stream_release(struct rpc_stream_task *rt);

/* h2 is done with one data reply over rt's buffer (maybe from inside h2,
 * and after the call closed): the last one gives the buffer back. */
static void rpc_stream_piece_sent(void *ctx)
{
    struct rpc_stream_task *rt = ctx;
    if (--rt->pieces == 0)
        rpc_stream_release(rt);
}

/* Data bytes per reply message: within RPC_STREAM_REPLY_MAX and
 * --max-message-bytes, with room for a head of head bytes. */
static size_t rpc_stream_piece_max(const struct rpc_stream *st, size_t head)
{
    size_t max = RPC_STREAM_REPLY_MAX - GRPC_FRAME_HEADER;
    if (st->max_result < max)
        max = st->max_result;
    return max > head ? max - head : 1;
}

/* One data reply of the n bytes at data, which h2 sends from where they
 * are and gives back through rpc_stream_piece_sent():
 * StreamReply{device (field 3), data (field 1)} - field order is free in
 * protobuf, and this one puts the borrowed bytes last. Returns 0, or -1
 * when it failed (its piece given back already). */
static int rpc_stream_send_piece(struct rpc_stream *st, struct rpc_stream_task *rt,
                                 const uint8_t *data, size_t n)
{
    size_t devlen = strlen(st->job->device);
    uint8_t *head = malloc(GRPC_FRAME_HEADER + RPC_REPLY_HEAD_MAX + devlen);
    if (!head) {
        rpc_stream_fail(st, STATUS_RESOURCE_EXHAUSTED, "out of memory for a reply");
        rpc_stream_piece_sent(rt);
        return -1;
    }
    uint8_t *p = head + GRPC_FRAME_HEADER;
    *p++ = AMP_WIRE_STREAM_REPLY_DEVICE;
    p += pb_varint_put(p, devlen);
    memcpy(p, st->job->device, devlen);
    p += devlen;
    *p++ = AMP_WIRE_STREAM_REPLY_DATA;
    p += pb_varint_put(p, n);
    if (h2_call_send_ref(st->rc->h2, head, (size_t)(p - head) - GRPC_FRAME_HEADER, data, n,
                         rpc_stream_piece_sent, rt) != 0) {
        rpc_stream_stop(st);   /* the layer answered the call itself */
        return -1;
    }
    return 0;
}

/* A task's output straight from its staging buffer, as one data reply or,
 * past RPC_STREAM_REPLY_MAX, several: the buffer is lent to h2 until the
 * last of them is sent (rt->pieces), so it is never packed into a message
 * buffer first. */
static void rpc_stream_send_data(struct rpc_stream *st, struct rpc_stream_task *rt)
{
    size_t len = rt->t.out_len;
    size_t piece = rpc_stream_piece_max(st, RPC_REPLY_HEAD_MAX + strlen(st->job->device));
    st->lent++;   /* from here on rpc_stream_release gives it back */
    rt->pieces = (len + piece - 1) / piece;
    const uint8_t *buf = rt->t.buf;
    for (size_t off = 0; off < len; off += piece) {
        size_t n = len - off < piece ? len - off : piece;
        size_t unsent = (len - off - n + piece - 1) / piece;   /* after this one */
        if (rpc_stream_send_piece(st, rt, buf + off, n) != 0) {
            /* Its piece is given back (rt may be gone if it was the last);
             * those never queued go with it. */
            if (unsent && (rt->pieces -= unsent) == 0)
                rpc_stream_release(rt);
            return;
        }
    }
}

/* Every data reply over rt's buffer is done: back to the pool. It may run
 * inside h2, after the sent() that took the last of its bytes, so it does
 * not pump the stream here: a stream held back by its buffers (paused, or
 * copying a resident result out) waits on the pool instead, whose wake-up
 * the buffer just returned fires on this loop at once. May free a stream
 * whose CLOSE already finished. */
static void rpc_stream_release(struct rpc_stream_task *rt)
{
    struct rpc_stream *st = rt->st;
    st->lent--;
    rpc_stream_put(st, rt->sb);
    free(rt);
    if (st->close_done && st->lent == 0)
        rpc_stream_free(st);
    else if (!st->failed && (st->paused || st->phase == RS_OUTPUT))
        staging_wait(st->pool, &st->waiter);
}

static void rpc_stream_send_results(struct rpc_stream *st)
{
    struct job *job = st->job;
    for (size_t i = 0; i < job->nsteps; i++) {
        if (job->steps[i].kind != STEP_HISTOGRAM)
            continue;
        const struct hist_result *h = &job->results[i].hist;
        Amp__V1__Histogram hist = AMP__V1__HISTOGRAM__INIT;
        hist.n_counts = h->bins;
        hist.counts = h->counts;
        hist.below = h->below;
        hist.above = h->above;
        hist.nan = h->nan;
        Amp__V1__StepResult res = AMP__V1__STEP_RESULT__INIT;
        res.histogram = &hist;
        Amp__V1__StreamReply r;
        amp__v1__stream_reply__init(&r);
        r.msg_case = AMP__V1__STREAM_REPLY__MSG_RESULT;
        r.result = &res;
        r.device = job->device;
        rpc_stream_reply(st, &r);
    }
}

/* --- tasks --------------------------------------------------------------------- */

static void rpc_stream_task_done(struct task *t);

static void rpc_stream_submit(struct rpc_stream *st, enum task_kind kind, struct staging_buf *sb,
                              uint64_t offset, size_t len)
{
    struct rpc_stream_task *rt = calloc(1, sizeof(*rt));
    if (!rt) {
        /* Without a task nothing can free the device side but shutdown. */
        if (sb)
            rpc_stream_put(st, sb);
        rpc_stream_fail(st, STATUS_RESOURCE_EXHAUSTED, "out of memory for a stream task");
        return;
    }
    rt->st = st;
    rt->sb = sb;
    rt->t.kind = kind;
    rt->t.job = st->job;
    rt->t.buf = sb ? sb->host : NULL;
    rt->t.offset = offset;
    rt->t.len = len;
    rt->t.done = rpc_stream_task_done;
    st->tasks++;
    if (kind == TASK_OPEN)
        st->opened = true;
    sched_stream_task(st->sched, st->dev, &rt->t);
}

/* The input is complete: check it against the header now that its length
 * is known, then run what needs the whole of it. */
static void rpc_stream_input_done(struct rpc_stream *st)
{
    struct job *job = st->job;
    if (job->total_len && st->received != job->total_len) {
        rpc_stream_fail(st, STATUS_INVALID_ARGUMENT,
                        "header.total_length is %" PRIu64 " but %" PRIu64 " bytes were sent",
                        job->total_len, st->received);
        return;
    }
    /* A resident job's steps run over the whole input at once: with its
     * length known only now (unsized), they take their ranges from it. */
    uint64_t len = st->received;
    for (size_t i = 0; i < st->header->n_steps; i++) {
        struct step check;
        struct step *to = st->unsized ? &job->steps[i] : &check;
        char err[STATUS_MSG_MAX];
        if (rpc_params_step(st->header->steps[i], i, SIZE_MAX, st->max_result, to, &len, err,
                            sizeof err) != STATUS_OK) {
            rpc_stream_fail(st, STATUS_INVALID_ARGUMENT, "%s", err);
            return;
        }
    }
    if (st->resident) {
        st->phase = RS_RUNNING;
        rpc_stream_submit(st, TASK_RUN, NULL, 0, (size_t)st->received);
    } else {
        st->phase = RS_ENDING;
        rpc_stream_submit(st, TASK_END, NULL, 0, 0);
    }
}

static void rpc_stream_task_done(struct task *t)
{
    struct rpc_stream_task *rt = (struct rpc_stream_task *)t;
    struct rpc_stream *st = rt->st;
    st->tasks--;
    /* Its tasks overlap on the device (several in flight) and end in
     * order: device time counts each moment once, from the later of the
     * task's start and the last one's end. */
    uint64_t from = t->t_begin > st->device_end ? t->t_begin : st->device_end;
    if (t->t_begin && t->t_end > from) {
        st->device_ns += t->t_end - from;
        st->device_end = t->t_end;
    }
    if (t->status != STATUS_OK && t->kind != TASK_CLOSE)
        rpc_stream_fail(st, t->status, "%s", t->msg);
    bool ok = !st->failed;
    switch (t->kind) {
    case TASK_OPEN:
        st->job->t_start = t->t_begin;   /* its queue time ends here */
        if (ok)
            st->phase = RS_INPUT;
        break;
    case TASK_IN:
    case TASK_OUT:
        if (ok && t->out_len && st->rc) {
            rpc_stream_send_data(st, rt);   /* rt and its buffer go to h2 */
            rpc_stream_pump(st);
            return;
        }
        rpc_stream_put(st, rt->sb);
        break;
    case TASK_RUN:
        st->out_total = t->out_len;
        if (ok)
            st->phase = RS_OUTPUT;
        break;
    case TASK_END:
        if (ok) {
            /* A result the layer refuses (over --max-message-bytes) fails
             * the call, which may close it right here and wind the stream
             * down: rpc_stream_close() submits CLOSE once either way. */
            rpc_stream_send_results(st);
            /* CLOSE first: finishing may close the call right here, and
             * closed() must find the stream on its way out already. */
            bool finish = st->rc && !st->failed;
            rpc_stream_close(st);
            if (finish)
                h2_call_finish(st->rc->h2);
        }
        break;
    case TASK_CLOSE:
        free(rt);
        if (st->lent)
            st->close_done = true;   /* the last release frees it */
        else
            rpc_stream_free(st);
        return;
    default:
        break;
    }
    free(rt);
    rpc_stream_pump(st);
}

/* --- input ---------------------------------------------------------------------- */

static bool rpc_stream_congested(const struct rpc_stream *st)
{
    return st->rc && h2_call_unsent(st->rc->h2) >
                         RPC_STREAM_UNSENT_CHUNKS * (size_t)(st->job->chunk_bytes + GRPC_FRAME_HEADER);
}

static void rpc_stream_pause(struct rpc_stream *st)
{
    if (st->rc && !st->paused) {
        st->paused = true;
        h2_stream_pause(st->rc->h2);
    }
}

/* Moves the full (or, at the end, partial) fill buffer to the device. */
static void rpc_stream_flush(struct rpc_stream *st)
{
    struct staging_buf *sb = st->fill;
    st->fill = NULL;
    rpc_stream_submit(st, TASK_IN, sb, st->fill_offset, st->fill_len);
}

/* Copies data[pos..n) into staging buffers, submitting each full one;
 * returns where it stopped: n, or less when it paused (no buffer, or
 * replies waiting) or the stream failed. */
static size_t rpc_stream_fill(struct rpc_stream *st, const uint8_t *data, size_t pos, size_t n)
{
    size_t chunk = st->job->chunk_bytes;
    while (pos < n && !st->failed) {
        if (!st->fill) {
            struct staging_buf *sb = NULL;
            if (st->held < st->cap && !rpc_stream_congested(st))
                sb = staging_get(st->pool);
            if (!sb) {
                if (st->held < st->cap && !rpc_stream_congested(st))
                    staging_wait(st->pool, &st->waiter);
                rpc_stream_pause(st);
                return pos;
            }
            st->held++;
            st->fill = sb;
            st->fill_len = 0;
            st->fill_offset = st->received;
        }
        size_t take = n - pos < chunk - st->fill_len ? n - pos : chunk - st->fill_len;
        if (st->unsized && take > st->job->in_cap - st->received) {
            rpc_stream_fail(st, STATUS_RESOURCE_EXHAUSTED,
                            "header.total_length is 0 (unknown) and the input passed "
                            "--max-unknown-length (%" PRIu64 " bytes), the most held for a job "
                            "that needs all of it at once (a reverse step): send total_length",
                            st->job->in_cap);
            return n;   /* dropped, as a failed stream's messages are */
        }
        uint8_t *to = (uint8_t *)st->fill->host + st->fill_len;
        if (to != data + pos)   /* else the socket read it here (rpc_stream_in_dest) */
            memmove(to, data + pos, take);
        st->fill_len += take;
        st->received += take;
        pos += take;
        if (st->fill_len == chunk)
            rpc_stream_flush(st);
    }
    return pos;
}

/* Takes a whole message's data[skip..n). Returns false when it had to
 * pause (st->skip says how far it got in this message, redelivered). */
static bool rpc_stream_take(struct rpc_stream *st, const uint8_t *data, size_t n)
{
    size_t pos = rpc_stream_fill(st, data, st->skip, n);
    if (pos < n && !st->failed) {
        st->skip = pos;
        return false;
    }
    st->skip = 0;
    return true;
}

/* Where a StreamRequest's data begins when the message is that one field
 * alone (the usual encoding), read from its first avail bytes (all of it,
 * or the head h2 offers for pieces): 0 when it is anything else, which
 * then goes through protobuf-c. */
static size_t rpc_stream_data_offset(const uint8_t *msg, size_t avail, size_t msg_len)
{
    if (avail < 2 || msg[0] != AMP_WIRE_STREAM_REQUEST_DATA)
        return 0;
    uint64_t v;
    size_t i = 1;
    if (pb_varint_get(msg, avail, &i, &v) != 0 || v != msg_len - i)
        return 0;
    return i;
}

/* --- header ---------------------------------------------------------------------- */

/* A histogram step's result is one reply message: one that could pass
 * --max-message-bytes is refused with the header, before any input. */
static enum status_code rpc_stream_result_fits(const struct rpc_stream *st, size_t i,
                                               uint64_t len, char *err, size_t errlen)
{
    if (st->job->steps[i].kind != STEP_HISTOGRAM)
        return STATUS_OK;
    uint64_t bound = rpc_reply_bound_stream_result(st->job, i, len);
    if (bound <= st->max_result)
        return STATUS_OK;
    snprintf(err, errlen,
             "header.steps[%zu].histogram: its result could take %" PRIu64
             " bytes, over --max-message-bytes (%zu): ask for fewer bins%s", i, bound,
             st->max_result,
             st->header->total_length ? "" : ", or send total_length (which bounds the counts)");
    return STATUS_RESOURCE_EXHAUSTED;
}

/* A resident job that reads its input (its first step is no fill) but
 * whose header gives no total_length (amp.proto: 0 is "unknown") takes up
 * to --max-unknown-length bytes, which its device reserves at OPEN; with
 * that at 0, the header is refused. */
static enum status_code rpc_stream_unsized(struct rpc_stream *st, const Amp__V1__JobHeader *h,
                                           char *err, size_t errlen)
{
    if (!st->resident || h->total_length || h->steps[0]->kind_case == AMP__V1__STEP__KIND_FILL)
        return STATUS_OK;
    uint64_t cap = st->rc->env->max_unknown_length;
    if (cap == 0) {
        snprintf(err, errlen, "header.total_length is required: the job needs all of its input "
                              "at once (a reverse step), and this daemon holds none of unknown "
                              "length (--max-unknown-length 0)");
        return STATUS_INVALID_ARGUMENT;
    }
    st->unsized = true;
    st->job->in_cap = cap;
    return STATUS_OK;
}

static enum status_code rpc_stream_steps(struct rpc_stream *st, const Amp__V1__JobHeader *h,
                                         char *err, size_t errlen)
{
    if (h->n_steps == 0) {
        snprintf(err, errlen, "header.steps: a job needs at least one step");
        return STATUS_INVALID_ARGUMENT;
    }
    if (h->n_steps > AMP_WIRE_MAX_STEPS) {
        snprintf(err, errlen, "header.steps: at most %d steps, got %zu", AMP_WIRE_MAX_STEPS,
                 h->n_steps);
        return STATUS_INVALID_ARGUMENT;
    }
    st->job = job_new(h->n_steps);
    if (!st->job) {
        snprintf(err, errlen, "out of memory for a job");
        return STATUS_RESOURCE_EXHAUSTED;
    }
    for (size_t i = 0; i < h->n_steps; i++) {
        Amp__V1__Step *s = h->steps[i];
        st->resident |= s && (s->kind_case == AMP__V1__STEP__KIND_REVERSE ||
                              s->kind_case == AMP__V1__STEP__KIND_FILL);
    }
    enum status_code code = rpc_stream_unsized(st, h, err, errlen);
    if (code != STATUS_OK)
        return code;
    /* A resident job holds its whole input: its length is what the header
     * says (0 when it says nothing and a fill comes first, so there is
     * none), so a step's default range is checked against that, not
     * against a length yet to be learnt; an unsized one's steps are
     * checked again when the input has ended. */
    uint64_t len = (h->total_length || st->resident) && !st->unsized ? h->total_length
                                                                     : JOB_UNKNOWN_LEN;
    for (size_t i = 0; i < h->n_steps; i++) {
        /* Streamed data is not bound by the message size (SIZE_MAX); a
         * histogram's result is one message all the same. */
        uint64_t seen = len;
        code = rpc_params_step(h->steps[i], i, SIZE_MAX, st->max_result, &st->job->steps[i],
                               &len, err, errlen);
        if (code == STATUS_OK)
            code = rpc_stream_result_fits(st, i, seen, err, errlen);
        if (code != STATUS_OK)
            return code;
        st->has_data |= st->job->steps[i].kind != STEP_HISTOGRAM;
    }
    st->job->total_len = h->total_length;
    return rpc_params_device(h->device, st->job, err, errlen);
}

static enum status_code rpc_stream_header(struct rpc_stream *st, Amp__V1__JobHeader *h,
                                          char *err, size_t errlen)
{
    enum status_code code = rpc_stream_steps(st, h, err, errlen);
    if (code != STATUS_OK)
        return code;
    if (!st->sched) {
        snprintf(err, errlen, "%s", rpc_no_device(st->rc->env));
        return STATUS_UNAVAILABLE;
    }
    code = rpc_job_share(st->rc, st->job, err, errlen);   /* given back when the call closes */
    if (code != STATUS_OK)
        return code;
    st->job->t_submit = stage_latency_now_ns();
    code = sched_stream_begin(st->sched, st->job, &st->dev, err, errlen);
    if (code != STATUS_OK)
        return code;
    st->begun = true;
    st->pool = sched_staging(st->sched, st->dev);
    size_t half = staging_count(st->pool) / 2;
    st->cap = half < 1 ? 1 : half > RPC_STREAM_BUFS_MAX ? RPC_STREAM_BUFS_MAX : (unsigned)half;
    const struct dev_info *di = sched_dev_info(st->sched, st->dev);
    dev_name_job(di, st->job);
    st->phase = RS_OPENING;
    rpc_stream_submit(st, TASK_OPEN, NULL, 0, 0);
    return STATUS_OK;
}

/* --- the resident job's output, and what to do next ------------------------------ */

static void rpc_stream_output(struct rpc_stream *st)
{
    size_t chunk = st->job->chunk_bytes;
    while (st->out_next < st->out_total && st->held < st->cap && !rpc_stream_congested(st)) {
        struct staging_buf *sb = staging_get(st->pool);
        if (!sb) {
            staging_wait(st->pool, &st->waiter);
            return;
        }
        st->held++;
        uint64_t rest = st->out_total - st->out_next;
        size_t len = rest < chunk ? (size_t)rest : chunk;
        rpc_stream_submit(st, TASK_OUT, sb, st->out_next, len);
        st->out_next += len;
    }
    if (st->out_next == st->out_total && st->tasks == 0) {
        st->phase = RS_ENDING;
        rpc_stream_submit(st, TASK_END, NULL, 0, 0);
    }
}

static void rpc_stream_pump(struct rpc_stream *st)
{
    if (st->failed) {
        rpc_stream_wind_down(st);
        return;
    }
    if (st->phase == RS_OUTPUT) {
        rpc_stream_output(st);
        return;
    }
    if (st->phase != RS_INPUT)
        return;
    if (st->paused) {
        if (st->held >= st->cap || rpc_stream_congested(st) || st->waiter.waiting)
            return;
        st->paused = false;
        h2_stream_resume(st->rc->h2);   /* may deliver messages and end() right here */
        return;
    }
    if (!st->input_ended)
        return;
    if (st->fill)
        rpc_stream_flush(st);
    if (st->tasks == 0)
        rpc_stream_input_done(st);
}

static void rpc_stream_on_buffer(struct staging_waiter *w)
{
    struct rpc_stream *st = (struct rpc_stream *)((char *)w - offsetof(struct rpc_stream, waiter));
    rpc_stream_pump(st);
}

/* --- the method's handlers --------------------------------------------------------- */

static struct rpc_stream *rpc_stream_of(struct rpc_call *rc)
{
    if (!rc->stream) {
        struct rpc_stream *st = calloc(1, sizeof(*st));
        if (!st)
            return NULL;
        st->rc = rc;
        st->sched = rc->env->sched;
        st->max_result = rc->env->max_message_bytes;
        st->waiter.ready = rpc_stream_on_buffer;
        rc->stream = st;
    }
    return rc->stream;
}

static enum status_code rpc_stream_message(struct rpc_call *rc, const uint8_t *msg, size_t len,
                                           char *err, size_t errlen)
{
    struct rpc_stream *st = rpc_stream_of(rc);
    if (!st) {
        snprintf(err, errlen, "out of memory for a stream");
        return STATUS_RESOURCE_EXHAUSTED;
    }
    if (st->failed)
        return STATUS_OK;
    size_t off = st->phase != RS_HEADER ? rpc_stream_data_offset(msg, len, len) : 0;
    if (off) {
        if (st->phase != RS_INPUT) {
            rpc_stream_pause(st);   /* OPEN is still being admitted */
            return STATUS_OK;
        }
        rpc_stream_take(st, msg + off, len - off);
        return STATUS_OK;
    }
    Amp__V1__StreamRequest *req = amp__v1__stream_request__unpack(NULL, len, msg);
    if (!req) {
        snprintf(err, errlen, "request is not a valid amp.v1.StreamRequest message");
        return STATUS_INTERNAL;
    }
    enum status_code code = STATUS_OK;
    if (st->phase == RS_HEADER) {
        if (req->msg_case != AMP__V1__STREAM_REQUEST__MSG_HEADER) {
            snprintf(err, errlen, "the first message of a stream must be its header");
            code = STATUS_INVALID_ARGUMENT;
        } else {
            st->header = req->header;   /* kept; the rest of req goes */
            req->header = NULL;
            req->msg_case = AMP__V1__STREAM_REQUEST__MSG__NOT_SET;
            code = rpc_stream_header(st, st->header, err, errlen);
        }
    } else if (req->msg_case != AMP__V1__STREAM_REQUEST__MSG_DATA) {
        snprintf(err, errlen, "only the first message of a stream may be a header");
        code = STATUS_INVALID_ARGUMENT;
    } else if (st->phase != RS_INPUT) {
        rpc_stream_pause(st);
    } else {
        rpc_stream_take(st, req->data.data, req->data.len);
    }
    amp__v1__stream_request__free_unpacked(req, NULL);
    if (code != STATUS_OK) {
        rpc_stream_stop(st);   /* the layer fails the call with err */
        rpc_stream_wind_down(st);
    }
    return code;
}

/* Data messages go into staging as they arrive (h2.h's pieces) once the
 * stream takes input; the header, and data before OPEN was admitted, come
 * whole through rpc_stream_message. */
static size_t rpc_stream_in_start(struct rpc_call *rc, const uint8_t *head, size_t msg_len)
{
    struct rpc_stream *st = rc->stream;
    if (!st || st->failed || st->phase != RS_INPUT || st->paused)
        return 0;
    return rpc_stream_data_offset(head, H2_PIECE_HEAD, msg_len);
}

static size_t rpc_stream_in_piece(struct rpc_call *rc, const uint8_t *data, size_t n)
{
    struct rpc_stream *st = rc->stream;
    if (st->failed)
        return n;   /* dropped, as a failed stream's messages are */
    return rpc_stream_fill(st, data, 0, n);
}

/* Where the next input bytes go: the rest of the buffer being filled. */
static uint8_t *rpc_stream_in_dest(struct rpc_call *rc, size_t *room)
{
    struct rpc_stream *st = rc->stream;
    if (!st || st->failed || !st->fill || st->paused)
        return NULL;
    *room = st->job->chunk_bytes - st->fill_len;
    return (uint8_t *)st->fill->host + st->fill_len;
}

static void rpc_stream_end(struct rpc_call *rc)
{
    struct rpc_stream *st = rpc_stream_of(rc);
    if (!st) {
        rpc_fail(rc, STATUS_RESOURCE_EXHAUSTED, "out of memory for a stream");
        return;
    }
    if (st->phase == RS_HEADER) {
        rpc_stream_free(st);   /* nothing was started */
        rpc_fail(rc, STATUS_INVALID_ARGUMENT, "the stream ended before its header");
        return;
    }
    st->input_ended = true;
    rpc_stream_pump(st);
}

static void rpc_stream_sent(struct rpc_call *rc)
{
    if (rc->stream)
        rpc_stream_pump(rc->stream);
}

static void rpc_stream_closed(struct rpc_call *rc)
{
    struct rpc_stream *st = rc->stream;
    if (!st)
        return;
    st->rc = NULL;
    rc->stream = NULL;
    if (!st->failed && st->phase == RS_CLOSING)   /* answered OK: its time counts */
        stage_latency_record(rc->env->stages, STAGE_STREAM, rc->t_start, stage_latency_now_ns());
    if (!st->failed && st->phase != RS_CLOSING)
        rpc_stream_fail(st, STATUS_CANCELLED, "the client went away");
    rpc_stream_wind_down(st);
}

/* The job whose start the call's queue-time limit waits for: the stream's
 * while its OPEN is queued. */
static struct job *rpc_stream_queued(struct rpc_call *rc)
{
    struct rpc_stream *st = rc->stream;
    return st && st->phase == RS_OPENING ? st->job : NULL;
}

/* The layer fails the call (its deadline or queue time passed): stop
 * first, since the answer may close the call at once. */
static void rpc_stream_fail_call(struct rpc_call *rc, enum status_code code, const char *msg)
{
    struct rpc_stream *st = rc->stream;
    if (st) {
        rpc_stream_stop(st);
        rpc_stream_wind_down(st);   /* may free st; rc->stream is cleared then */
    }
    rpc_fail(rc, code, "%s", msg);
}

const struct rpc_streaming rpc_stream_method = {
    .message = rpc_stream_message,
    .piece_start = rpc_stream_in_start,
    .piece = rpc_stream_in_piece,
    .piece_dest = rpc_stream_in_dest,
    .end = rpc_stream_end,
    .sent = rpc_stream_sent,
    .closed = rpc_stream_closed,
    .fail = rpc_stream_fail_call,
    .queued = rpc_stream_queued,
};
