/* SPDX-License-Identifier: MIT */
/* stream.c: amp_stream, the Stream call: a job over an input of any size,
 * sent and received in chunks with bounded memory on both sides.
 *
 * The request is one HTTP/2 stream whose body grows as we go: the first
 * gRPC message is StreamRequest{header}, each later one StreamRequest{data}
 * of up to AMP_STREAM_CHUNK input bytes, then END_STREAM (half-close).
 * call.c's body provider defers when the current message is sent;
 * stream_pump() reads the next chunk from the caller only once that
 * message is gone and the daemon's flow-control window is open, so input
 * is read as fast as the daemon takes it and never faster. Between those
 * steps conn_pump_once() polls the socket for both directions at once,
 * and replies (StreamReply{data} chunks, then one {result} per histogram
 * step) are handed to the caller as they arrive, from the session's
 * receive callbacks.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abi.h"
#include "amp.pb-c.h"
#include "async.h"
#include "call.h"
#include "conn.h"
#include "jobs.h"
#include "pb_wire.h"
#include "steps.h"
#include "stream.h"
#include "amp_wire.h"

#define STREAM_PATH "/amp.v1.Amp/Stream"
/* Longest prefix of a data message: gRPC's, the field tag, the length varint. */
#define STREAM_PREFIX_MAX (GRPC_FRAME_HEADER + 1 + PB_VARINT_MAX)
#define STREAM_FRAME_MAX (STREAM_PREFIX_MAX + AMP_STREAM_CHUNK)
/* Input messages in turn: one being sent, and those whose DATA frames may
 * still be on their way to the socket (call_set_body in call.h). */
#define STREAM_BODIES (CONN_OUTS + 1)
#define STREAM_DEVICE_MAX 160

struct stream {
    amp_conn *c;
    struct call *call;       /* own, or a started call's (async.c) */
    struct call own;         /* a blocking stream's call */
    amp_read_cb in;          /* NULL: no input */
    void *in_ctx;
    amp_write_cb out;        /* NULL: output discarded */
    void *out_ctx;
    uint8_t *dest;           /* amp_stream_mem_into: the output goes here (then out is NULL) */
    size_t dest_cap, dest_len;
    amp_hist *hists;         /* nhists caller-owned entries; nresults <= nhists filled */
    size_t nhists, nresults;
    int in_done;             /* the input ended (or there is none): the body is closed */
    long long deadline;      /* CLOCK_MONOTONIC ms, 0: none */
    uint8_t *header;         /* framed StreamRequest{header}, owned */
    size_t header_len;
    const uint8_t *mem;      /* amp_stream_mem: the input, sent from where it lies */
    size_t mem_len, mem_pos;
    uint8_t heads[STREAM_BODIES][STREAM_PREFIX_MAX]; /* amp_stream_mem: each chunk's prefix,
                                                      * in turn */
    uint8_t *frames[STREAM_BODIES]; /* STREAM_FRAME_MAX bytes each, owned: input is read in at
                              * STREAM_PREFIX_MAX and sent from there with its prefix
                              * (no copy: DATA frames point into it); used in turn */
    int next;                /* the frame the next chunk is read into */
    char device[STREAM_DEVICE_MAX]; /* the replies' device, last passed to jobs_set_device */
};

/* A callback of the caller's asked to stop: keep its code, and say so
 * unless it already said why (amp_stream_fd's callbacks do). */
static int stream_aborted(struct stream *st, const char *which, int code)
{
    if (code >= 0)
        code = AMP_EINVAL;
    if (!st->c->message[0])
        conn_fail(st->c, code, "the %s callback aborted the stream: %s", which,
                  amp_strerror(code));
    return code;
}

/* --- replies ------------------------------------------------------------------- */

static int stream_on_data(struct stream *st, const ProtobufCBinaryData *data)
{
    if (st->nresults > 0)
        return conn_fail(st->c, AMP_EPROTO, "stream reply: data after a histogram result");
    if (st->dest) {
        if (data->len > st->dest_cap - st->dest_len)
            return conn_fail(st->c, AMP_EINVAL, "the output is longer than out_cap (%zu "
                             "bytes)", st->dest_cap);
        if (data->data != st->dest + st->dest_len)   /* else the socket read it there */
            memcpy(st->dest + st->dest_len, data->data, data->len);
        st->dest_len += data->len;
        return 0;
    }
    if (!st->out || data->len == 0)
        return 0;
    int rc = st->out(st->out_ctx, data->data, data->len);
    return rc == 0 ? 0 : stream_aborted(st, "output", rc);
}

static int stream_on_result(struct stream *st, const Amp__V1__StepResult *r)
{
    if (st->nresults == st->nhists)
        return conn_fail(st->c, AMP_EPROTO, "stream reply: more results than the %zu histogram "
                         "steps", st->nhists);
    if (!r)
        return conn_fail(st->c, AMP_EPROTO, "stream reply: empty result");
    int rc = jobs_copy_hist(st->c, r->histogram, &st->hists[st->nresults]);
    if (rc == 0)
        st->nresults++;
    return rc;
}

/* The replies' device, when a data reply names one: 0, or -1 when its
 * name is too long to keep (protobuf-c then decodes the reply). */
static int stream_set_device(struct stream *st, const struct jobs_reply_fields *f)
{
    if (f->dev_len >= sizeof(st->device))
        return -1;
    if (f->dev_len && (f->dev_len != strlen(st->device) ||
                       memcmp(st->device, f->dev, f->dev_len) != 0)) {
        memcpy(st->device, f->dev, f->dev_len);
        st->device[f->dev_len] = '\0';
        jobs_set_device(st->c, st->device);
    }
    return 0;
}

/* The usual data reply, StreamReply{device (field 3), data (field 1)} in
 * either order, read in place: decoding it with protobuf-c would copy every
 * chunk once more. Returns 1 when handled, 0 to fall back to protobuf-c. */
static int stream_data_view(struct stream *st, const uint8_t *msg, size_t len, int *rc)
{
    struct jobs_reply_fields f;
    if (!jobs_reply_fields(msg, len, len, AMP_WIRE_STREAM_REPLY_DEVICE, &f) || !f.has_data ||
        stream_set_device(st, &f) != 0)
        return 0;
    ProtobufCBinaryData bytes = {f.data_len, (uint8_t *)msg + f.data_off};
    *rc = stream_on_data(st, &bytes);
    return 1;
}

/* call_piece_start_cb: a data reply whose data field comes last (the
 * daemon's StreamReply{device, data}) goes to the output as it arrives;
 * anything else whole through stream_on_message. */
static size_t stream_piece_start(const uint8_t *head, size_t msg_len, void *ctx)
{
    struct stream *st = ctx;
    struct jobs_reply_fields f;
    /* msg_len > CALL_PIECE_HEAD: success means the data runs to the end. */
    if (!jobs_reply_fields(head, CALL_PIECE_HEAD, msg_len, AMP_WIRE_STREAM_REPLY_DEVICE, &f) ||
        !f.has_data || stream_set_device(st, &f) != 0)
        return 0;
    return f.data_off;
}

/* call_piece_dest_cb: amp_stream_mem_into's output goes where it belongs. */
static uint8_t *stream_piece_dest(size_t *room, void *ctx)
{
    struct stream *st = ctx;
    if (!st->dest)
        return NULL;
    *room = st->dest_cap - st->dest_len;
    return st->dest + st->dest_len;
}

static int stream_piece(const uint8_t *data, size_t len, void *ctx)
{
    ProtobufCBinaryData bytes = {len, (uint8_t *)data};
    return stream_on_data(ctx, &bytes);
}

/* call_message_cb: one StreamReply. */
static int stream_on_message(const uint8_t *msg, size_t len, void *ctx)
{
    struct stream *st = ctx;
    int rc;
    if (stream_data_view(st, msg, len, &rc))
        return rc;
    Amp__V1__StreamReply *r = amp__v1__stream_reply__unpack(NULL, len, msg);
    if (!r)
        return conn_fail(st->c, AMP_EPROTO, "cannot decode a StreamReply");
    if (r->device && r->device[0])
        jobs_set_device(st->c, r->device);
    rc = 0;
    if (r->msg_case == AMP__V1__STREAM_REPLY__MSG_DATA)
        rc = stream_on_data(st, &r->data);
    else if (r->msg_case == AMP__V1__STREAM_REPLY__MSG_RESULT)
        rc = stream_on_result(st, r->result);
    amp__v1__stream_reply__free_unpacked(r, NULL);
    return rc;
}

/* --- requests ------------------------------------------------------------------- */

static int stream_encode_header(struct stream *st, const struct steps_pb *pb, const amp_opts *o,
                                uint64_t total_length)
{
    Amp__V1__JobHeader h = AMP__V1__JOB_HEADER__INIT;
    h.n_steps = pb->n;
    h.steps = pb->steps;
    h.device = jobs_device(o);
    h.total_length = total_length;
    Amp__V1__StreamRequest req = AMP__V1__STREAM_REQUEST__INIT;
    req.msg_case = AMP__V1__STREAM_REQUEST__MSG_HEADER;
    req.header = &h;
    return call_encode(st->c, &req.base, &st->header, &st->header_len);
}

/* Gathers up to a chunk of input and queues it as the next data message;
 * at the end of input the body closes (with the last chunk, or empty). The
 * input is read straight into a frame, after room for the longest prefix
 * (gRPC prefix, field tag, length); the prefix is then written just before
 * it, so the chunk is not copied again to be encoded, nor to be sent (the
 * call is no_copy). Frames are used in turn: the previous ones may still be
 * on their way to the socket (call_set_body in call.h). */
/* The prefix of a data message of n bytes into head; returns its length. */
static size_t stream_prefix(uint8_t *head, size_t n)
{
    size_t lenlen = pb_varint_len(n);
    grpc_frame_header(head, 1 + lenlen + n);
    head[GRPC_FRAME_HEADER] = AMP_WIRE_STREAM_REQUEST_DATA;
    pb_varint_put(head + GRPC_FRAME_HEADER + 1, n);
    return GRPC_FRAME_HEADER + 1 + lenlen;
}

/* amp_stream_mem's next chunk: its prefix, then the caller's bytes lent. */
static int stream_next_mem(struct stream *st)
{
    size_t n = st->mem_len - st->mem_pos;
    if (n > AMP_STREAM_CHUNK)
        n = AMP_STREAM_CHUNK;
    st->in_done = st->mem_pos + n == st->mem_len;
    if (n == 0) {
        call_set_body(st->c, st->call, NULL, 0, 0);
        return 0;
    }
    uint8_t *head = st->heads[st->next];
    size_t head_len = stream_prefix(head, n);
    int rc = call_set_body2(st->c, st->call, head, head_len, st->mem + st->mem_pos, n,
                            !st->in_done);
    st->mem_pos += n;
    st->next = (st->next + 1) % STREAM_BODIES;
    return rc;
}

static int stream_next_chunk(struct stream *st)
{
    if (st->mem)
        return stream_next_mem(st);
    uint8_t *frame = st->frames[st->next];
    uint8_t *chunk = frame + STREAM_PREFIX_MAX;
    size_t have = 0;
    while (have < AMP_STREAM_CHUNK) {
        /* A slow source can take long to fill a chunk: the deadline holds here too. */
        if (st->deadline && have > 0 && conn_now_ms() >= st->deadline)
            return conn_fail(st->c, AMP_EDEADLINE, "deadline exceeded reading the input");
        long n = st->in(st->in_ctx, chunk + have, AMP_STREAM_CHUNK - have);
        if (n == 0) {
            st->in_done = 1;
            break;
        }
        if (n < 0)
            return stream_aborted(st, "input", (int)n);
        if ((size_t)n > AMP_STREAM_CHUNK - have)
            return conn_fail(st->c, AMP_EINVAL, "the input callback returned %ld bytes for a "
                             "%zu-byte buffer", n, AMP_STREAM_CHUNK - have);
        have += (size_t)n;
    }
    if (have == 0) {
        call_set_body(st->c, st->call, NULL, 0, 0);
        return 0;
    }
    /* StreamRequest{data = chunk}: tag, length, bytes. */
    uint8_t *p = chunk - (GRPC_FRAME_HEADER + 1 + pb_varint_len(have));
    stream_prefix(p, have);
    call_set_body(st->c, st->call, p, (size_t)(chunk + have - p), !st->in_done);
    st->next = (st->next + 1) % STREAM_BODIES;
    return 0;
}

/* True when the daemon can take at least one more byte of this stream. */
static int stream_window_open(const struct stream *st)
{
    nghttp2_session *h2 = st->c->h2;
    return nghttp2_session_get_stream_remote_window_size(h2, st->call->stream_id) > 0 &&
           nghttp2_session_get_remote_window_size(h2) > 0;
}

int stream_feed(struct stream *st)
{
    struct call *call = st->call;
    if (st->in_done || call->err || !call_body_drained(call) || !stream_window_open(st))
        return 0;
    return stream_next_chunk(st);
}

/* Sends and receives until the reply ends. */
static int stream_pump(struct stream *st)
{
    long long deadline = st->deadline;
    struct call *call = st->call;
    while (!call->done) {
        int rc = stream_feed(st);
        if (rc == 0)
            rc = conn_pump_once(st->c, deadline, &call->done);
        if (rc != 0)
            return rc;
    }
    return conn_pump_once(st->c, deadline, &call->done); /* flush window updates */
}

/* --- the call ---------------------------------------------------------------------- */

static int stream_check(amp_conn *c, const amp_opts *o, const amp_step *steps, size_t nsteps,
                        amp_hist *hists, size_t nhists)
{
    int rc = jobs_check_opts(c, o);
    if (rc != 0)
        return rc;
    if (!hists && nhists > 0)
        return conn_fail(c, AMP_EINVAL, "hists is NULL but nhists is %zu", nhists);
    size_t want = steps_count_hist(steps, nsteps);
    if (nhists != want)
        return conn_fail(c, AMP_EINVAL, "nhists is %zu but the steps have %zu histogram steps",
                         nhists, want);
    return 0;
}

/* Checks st's job and encodes its header; buffers for a read input. */
static int stream_prepare(struct stream *st, const amp_opts *o, const amp_step *steps,
                          size_t nsteps, uint64_t total_length)
{
    amp_conn *c = st->c;
    if (st->hists)
        memset(st->hists, 0, st->nhists * sizeof *st->hists);
    struct steps_pb pb;
    int rc = steps_encode(c, steps, nsteps, &pb);
    if (rc == 0)
        rc = stream_check(c, o, steps, nsteps, st->hists, st->nhists);
    if (rc == 0)
        rc = stream_encode_header(st, &pb, o, total_length);
    steps_free(&pb);
    for (int i = 0; i < STREAM_BODIES && rc == 0 && st->in; i++)
        if (!(st->frames[i] = malloc(STREAM_FRAME_MAX)))
            rc = conn_fail(c, AMP_ENOMEM, "out of memory for stream buffers");
    return rc;
}

/* Makes call (initialised) st's Stream call: its handlers, the header as
 * its first body, the deadline. Returns the timeout to send. */
static int stream_bind(struct stream *st, struct call *call, const amp_opts *o)
{
    st->call = call;
    call->no_copy = 1;   /* bodies: the header and the frames, kept as call.h asks */
    call->on_message = stream_on_message;
    call->on_piece_start = stream_piece_start;
    call->on_piece = stream_piece;
    call->on_piece_dest = stream_piece_dest;
    call->on_message_ctx = st;
    body_borrow(&call->body, st->header, st->header_len);
    call->body_open = !st->in_done;
    int timeout = jobs_timeout(o);
    st->deadline = timeout > 0 ? conn_now_ms() + timeout : 0;
    return timeout;
}

/* The stream's outcome from the call's rc: its results counted, its
 * buffers freed, and on failure its histograms. */
static int stream_finish(struct stream *st, int rc)
{
    amp_conn *c = st->c;
    if (rc == 0 && st->nresults != st->nhists)
        rc = conn_fail(c, AMP_EPROTO, "stream reply has %zu results for %zu histogram steps",
                       st->nresults, st->nhists);
    free(st->header);
    st->header = NULL;
    for (int i = 0; i < STREAM_BODIES; i++) {
        free(st->frames[i]);
        st->frames[i] = NULL;
    }
    if (rc != 0) {
        for (size_t i = 0; st->hists && i < st->nhists; i++)
            amp_hist_free(&st->hists[i]);
        c->device[0] = '\0';
    }
    return rc;
}

static int stream_run(struct stream *st, const amp_opts *o)
{
    amp_conn *c = st->c;
    int rc = conn_ready(c);   /* a stream is never sent twice: its input is read once */
    if (rc != 0)
        return rc;
    call_init(&st->own);
    int timeout = stream_bind(st, &st->own, o);
    rc = call_submit(c, st->call, STREAM_PATH, timeout);
    if (rc == 0) {
        c->call = st->call;
        rc = stream_pump(st);
        call_abandon(c, st->call);
    }
    if (rc == 0)
        rc = call_outcome(c, st->call);
    call_release(st->call);
    return rc;
}

/* amp_stream and amp_stream_mem: st says where the input comes from. */
static int stream_job(struct stream *st, const amp_opts *o, const amp_step *steps, size_t nsteps,
                      uint64_t total_length)
{
    conn_begin(st->c);
    int rc = stream_prepare(st, o, steps, nsteps, total_length);
    if (rc == 0)
        rc = stream_run(st, o);
    return stream_finish(st, rc);
}

int stream_end(struct stream *st, int rc)
{
    rc = stream_finish(st, rc);
    if (rc == 0 && st->device[0])
        jobs_set_device(st->c, st->device);
    free(st);
    return rc;
}

void stream_free(struct stream *st)
{
    if (!st)
        return;
    stream_finish(st, AMP_ECANCELLED);
    free(st);
}

int amp_stream_mem(amp_conn *c, const amp_opts *o, const amp_step *steps, size_t nsteps,
                   const void *in, size_t len, amp_write_cb out, void *out_ctx, amp_hist *hists,
                   size_t nhists)
{
    if (!c)
        return AMP_EINVAL;
    if (!in && len)
        return conn_fail(c, AMP_EINVAL, "in is NULL but len is %zu", len);
    struct stream st = {
        .c = c, .mem = in, .mem_len = len, .out = out, .out_ctx = out_ctx,
        .hists = hists, .nhists = nhists, .in_done = len == 0,
    };
    return stream_job(&st, o, steps, nsteps, len);
}

int amp_stream_mem_into(amp_conn *c, const amp_opts *o, const amp_step *steps, size_t nsteps,
                        const void *in, size_t len, void *out, size_t out_cap, size_t *out_len,
                        amp_hist *hists, size_t nhists)
{
    static uint8_t no_room[1];   /* out NULL: room for nothing, yet a place to point at */
    if (!c)
        return AMP_EINVAL;
    if (out_len)
        *out_len = 0;
    if (!in && len)
        return conn_fail(c, AMP_EINVAL, "in is NULL but len is %zu", len);
    if (!out_len)
        return conn_fail(c, AMP_EINVAL, "out_len is NULL");
    if (!out && out_cap)
        return conn_fail(c, AMP_EINVAL, "out is NULL but out_cap is %zu", out_cap);
    struct stream st = {
        .c = c, .mem = in, .mem_len = len, .dest = out ? out : no_room, .dest_cap = out_cap,
        .hists = hists, .nhists = nhists, .in_done = len == 0,
    };
    int rc = stream_job(&st, o, steps, nsteps, len);
    *out_len = st.dest_len;
    return rc;
}

/* The stream that a describes (its size checked), on c. */
static int stream_args(amp_conn *c, const amp_stream_args *a, struct stream *st)
{
    if (!a)
        return conn_fail(c, AMP_EINVAL, "no stream arguments (a is NULL)");
    int rc = abi_check_size(c, "amp_stream_args", a->size, ABI_STREAM_ARGS_MIN);
    if (rc != 0)
        return rc;
    *st = (struct stream){
        .c = c, .in = a->in, .in_ctx = a->in_ctx, .out = a->out, .out_ctx = a->out_ctx,
        .hists = a->hists, .nhists = a->nhists, .in_done = a->in == NULL,
    };
    return 0;
}

int amp_stream_run(amp_conn *c, const amp_opts *o, const amp_stream_args *a)
{
    if (!c)
        return AMP_EINVAL;
    conn_begin(c);
    struct stream st;
    int rc = stream_args(c, a, &st);
    return rc != 0 ? rc : stream_job(&st, o, a->steps, a->nsteps, a->total_length);
}

int amp_start_stream(amp_conn *c, const amp_opts *o, const amp_stream_args *a, amp_call **call)
{
    if (!c || !call)
        return AMP_EINVAL;
    conn_begin(c);
    *call = NULL;
    struct stream *st = malloc(sizeof *st);
    if (!st)
        return conn_fail(c, AMP_ENOMEM, "out of memory for a stream");
    int rc = stream_args(c, a, st);
    if (rc != 0) {
        free(st);
        return rc;
    }
    rc = stream_prepare(st, o, a->steps, a->nsteps, a->total_length);
    amp_call *ac = NULL;
    if (rc == 0)
        rc = async_new(c, ASYNC_STREAM, &ac);
    if (rc != 0) {
        stream_free(st);
        return rc;
    }
    int timeout = stream_bind(st, async_call(ac), o);
    async_set_stream(ac, st);   /* the call owns it now */
    return async_submit(c, ac, STREAM_PATH, NULL, timeout, call);
}

int amp_stream(amp_conn *c, const amp_opts *o, const amp_step *steps, size_t nsteps,
               uint64_t total_length, amp_read_cb in, void *in_ctx, amp_write_cb out,
               void *out_ctx, amp_hist *hists, size_t nhists)
{
    const amp_stream_args a = {
        .size = sizeof a, .steps = steps, .nsteps = nsteps, .total_length = total_length,
        .in = in, .in_ctx = in_ctx, .out = out, .out_ctx = out_ctx, .hists = hists,
        .nhists = nhists,
    };
    return amp_stream_run(c, o, &a);
}

/* --- over file descriptors ------------------------------------------------------ */

struct stream_fd {
    amp_conn *c;
    int fd;
};

/* Waits until fd is ready for events (a non-blocking descriptor said EAGAIN). */
static int stream_fd_wait(int fd, short events)
{
    struct pollfd p = { fd, events, 0 };
    int n;
    while ((n = poll(&p, 1, -1)) < 0 && errno == EINTR)
        ;
    return n < 0 ? -1 : 0;
}

static long stream_fd_read(void *ctx, void *buf, size_t cap)
{
    struct stream_fd *f = ctx;
    for (;;) {
        ssize_t n = read(f->fd, buf, cap);
        if (n >= 0)
            return (long)n;
        if (errno == EINTR)
            continue;
        if ((errno == EAGAIN || errno == EWOULDBLOCK) && stream_fd_wait(f->fd, POLLIN) == 0)
            continue;
        return conn_fail(f->c, AMP_EIO, "read from input fd %d: %s", f->fd, strerror(errno));
    }
}

static int stream_fd_write(void *ctx, const void *buf, size_t len)
{
    struct stream_fd *f = ctx;
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = write(f->fd, p, len);
        if (n >= 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (errno == EINTR)
            continue;
        if ((errno == EAGAIN || errno == EWOULDBLOCK) && stream_fd_wait(f->fd, POLLOUT) == 0)
            continue;
        return conn_fail(f->c, AMP_EIO, "write to output fd %d: %s", f->fd, strerror(errno));
    }
    return 0;
}

int amp_stream_fd(amp_conn *c, const amp_opts *o, const amp_step *steps, size_t nsteps,
                  uint64_t total_length, int in_fd, int out_fd, amp_hist *hists, size_t nhists)
{
    struct stream_fd in = { c, in_fd }, out = { c, out_fd };
    return amp_stream(c, o, steps, nsteps, total_length, in_fd >= 0 ? stream_fd_read : NULL, &in,
                      out_fd >= 0 ? stream_fd_write : NULL, &out, hists, nhists);
}
