/* SPDX-License-Identifier: MIT */
/* test_h2_stream.c: stream calls (H2_STREAM) through the h2 layer, driven by
 * an in-memory nghttp2 client and a small handler set defined here (not
 * rpc.c): many messages each way in order, pause and resume (held message,
 * end() after it, resumes from other calls' handlers), the stream window
 * bounding what a paused call buffers while other streams keep flowing, the
 * reply queue (h2_call_unsent, sent()), finish and fail trailers, and a
 * client reset while paused.
 *
 * Every test message is [tag][seq, 4 bytes big-endian][filler]: the tag
 * says which test call it belongs to, seq its place in that call. */
#include <check.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "budget.h"
#include "grpc_frame.h"
#include "h2.h"
#include "h2_client.h"

#define MAX_MSG (8u << 20)
#define MAX_STREAMS 32
#define MAX_TAGS 8
#define MAX_SEQ 4096
#define PUMP_ROUNDS 100000
#define TEST_HDR 5 /* tag + seq in front of each test message */
#define STREAM_PATH "/t.T/Stream"
#define UNARY_PATH "/t.T/Unary"
#define NO_PAUSE UINT32_MAX

/* One call as the test handlers see it. */
struct tcall {
    struct h2_call *call;  /* NULL once closed() */
    int tag;               /* from its first message; -1 before */
    bool unary;
    uint32_t seqs[MAX_SEQ];
    size_t nseqs;          /* messages taken, in delivery order */
    size_t bytes;          /* their total length */
    int ends;
    size_t nseqs_at_end;
    int closed;
    bool in_handler;       /* a handler of this call is running */
    int reentered;         /* times a handler ran inside another of this call */
};

struct tenv {
    struct budget budget;
    struct h2_session *server;
    struct h2c *client;
    struct tcall calls[MAX_STREAMS];
    size_t ncalls;
    int want_write;
    int sent;
    /* Policies, per tag. */
    uint32_t pause_at[MAX_TAGS];      /* pause on this seq (once), or NO_PAUSE */
    bool pause_then_resume[MAX_TAGS]; /* ... and resume at once, inside message() */
    int resume_tag_on_msg[MAX_TAGS];  /* a message of this tag resumes that tag's call, or -1 */
    bool echo;                        /* send each message back */
    bool finish_on_end;
    uint32_t refill_left;             /* sent(): queue another message while > 0 */
    size_t refill_len;
    uint32_t refill_seq;
};

static struct tcall *tcall_of(struct h2_call *call)
{
    return h2_call_user(call);
}

static struct tcall *tcall_by_tag(struct tenv *e, int tag)
{
    for (size_t i = 0; i < e->ncalls; i++)
        if (e->calls[i].tag == tag)
            return &e->calls[i];
    return NULL;
}

static uint32_t msg_seq(const uint8_t *m)
{
    return ((uint32_t)m[1] << 24) | ((uint32_t)m[2] << 16) | ((uint32_t)m[3] << 8) | m[4];
}

/* Writes a test message of len >= TEST_HDR bytes: header, then a filler
 * derived from tag and seq so that corruption shows. */
static void msg_fill(uint8_t *m, int tag, uint32_t seq, size_t len)
{
    m[0] = (uint8_t)tag;
    m[1] = (uint8_t)(seq >> 24);
    m[2] = (uint8_t)(seq >> 16);
    m[3] = (uint8_t)(seq >> 8);
    m[4] = (uint8_t)seq;
    for (size_t i = TEST_HDR; i < len; i++)
        m[i] = (uint8_t)(i * 31 + seq * 7 + (uint32_t)tag);
}

static bool msg_check(const uint8_t *m, size_t len)
{
    for (size_t i = TEST_HDR; i < len; i++)
        if (m[i] != (uint8_t)(i * 31 + msg_seq(m) * 7 + m[0]))
            return false;
    return true;
}

/* A reply buffer for h2_call_send: GRPC_FRAME_HEADER free bytes first. */
static uint8_t *reply_buf(const uint8_t *msg, size_t len)
{
    uint8_t *buf = malloc(GRPC_FRAME_HEADER + len + 1);
    memcpy(buf + GRPC_FRAME_HEADER, msg, len);
    return buf;
}

static uint8_t *reply_new(int tag, uint32_t seq, size_t len)
{
    uint8_t *buf = malloc(GRPC_FRAME_HEADER + len + 1);
    msg_fill(buf + GRPC_FRAME_HEADER, tag, seq, len);
    return buf;
}

/* --- handlers ----------------------------------------------------------- */

static enum status_code t_start(struct h2_call *call, const char *path, enum h2_call_kind *kind,
                                char *msg, size_t msglen, void *ctx)
{
    struct tenv *e = ctx;
    if (strcmp(path, STREAM_PATH) == 0) {
        *kind = H2_STREAM;
    } else if (strcmp(path, UNARY_PATH) == 0) {
        *kind = H2_UNARY;
    } else {
        snprintf(msg, msglen, "no method %s", path);
        return STATUS_UNIMPLEMENTED;
    }
    ck_assert_uint_lt(e->ncalls, MAX_STREAMS);
    struct tcall *t = &e->calls[e->ncalls++];
    memset(t, 0, sizeof(*t));
    t->call = call;
    t->tag = -1;
    t->unary = *kind == H2_UNARY;
    h2_call_set_user(call, t);
    return STATUS_OK;
}

static enum status_code t_message(struct h2_call *call, const uint8_t *msg, size_t len, char *err,
                                  size_t errlen, void *ctx)
{
    struct tenv *e = ctx;
    struct tcall *t = tcall_of(call);
    if (t->in_handler)
        t->reentered++;
    if (len < TEST_HDR || msg[0] >= MAX_TAGS || !msg_check(msg, len)) {
        snprintf(err, errlen, "bad test message");
        return STATUS_INVALID_ARGUMENT;
    }
    t->tag = msg[0];
    uint32_t seq = msg_seq(msg);
    if (e->pause_at[t->tag] == seq) {
        e->pause_at[t->tag] = NO_PAUSE;
        h2_stream_pause(call);
        if (e->pause_then_resume[t->tag])
            h2_stream_resume(call);
        return STATUS_OK; /* not taken: it comes again after resume */
    }
    t->in_handler = true;
    ck_assert_uint_lt(t->nseqs, MAX_SEQ);
    t->seqs[t->nseqs++] = seq;
    t->bytes += len;
    int other = e->resume_tag_on_msg[t->tag];
    if (other >= 0) {
        struct tcall *o = tcall_by_tag(e, other);
        if (o && o->call)
            h2_stream_resume(o->call);
    }
    if (e->echo)
        ck_assert_int_eq(h2_call_send(call, reply_buf(msg, len), len), 0);
    t->in_handler = false;
    return STATUS_OK;
}

static void t_end(struct h2_call *call, void *ctx)
{
    struct tenv *e = ctx;
    struct tcall *t = tcall_of(call);
    t->ends++;
    t->nseqs_at_end = t->nseqs;
    if (!e->finish_on_end)
        return;
    if (t->unary)
        ck_assert_int_eq(h2_call_reply(call, reply_new(t->tag, 0, 8), 8), 0);
    else
        ck_assert_int_eq(h2_call_finish(call), 0);
}

static void t_closed(struct h2_call *call, void *ctx)
{
    (void)ctx;
    struct tcall *t = tcall_of(call);
    t->closed++;
    t->call = NULL;
}

static void t_want_write(void *ctx)
{
    struct tenv *e = ctx;
    e->want_write++;
}

static void t_sent(struct h2_call *call, void *ctx)
{
    struct tenv *e = ctx;
    e->sent++;
    if (e->refill_left && h2_call_unsent(call) == 0) {
        e->refill_left--;
        int tag = tcall_of(call)->tag;
        ck_assert_int_eq(h2_call_send(call, reply_new(tag, e->refill_seq++, e->refill_len),
                                      e->refill_len),
                         0);
        if (!e->refill_left)
            ck_assert_int_eq(h2_call_finish(call), 0);
    }
}

static const struct h2_handlers t_handlers = {
    .start = t_start,
    .message = t_message,
    .end = t_end,
    .closed = t_closed,
    .want_write = t_want_write,
    .sent = t_sent,
};

/* --- harness ------------------------------------------------------------ */

static void tenv_init(struct tenv *e)
{
    memset(e, 0, sizeof(*e));
    for (int i = 0; i < MAX_TAGS; i++) {
        e->pause_at[i] = NO_PAUSE;
        e->resume_tag_on_msg[i] = -1;
    }
    e->budget = (struct budget){ .max = UINT64_MAX, .name = "--max-job-memory" };
    struct h2_config cfg = { .max_message_bytes = MAX_MSG, .max_streams = MAX_STREAMS,
                             .budget = &e->budget };
    e->server = h2_session_new(&cfg, &t_handlers, e);
    e->client = h2c_new();
    ck_assert_ptr_nonnull(e->server);
}

static void tenv_free(struct tenv *e)
{
    h2_session_free(e->server);
    for (size_t i = 0; i < e->ncalls; i++)
        ck_assert_int_eq(e->calls[i].closed, 1);
    ck_assert_uint_eq(e->budget.used, 0);
    h2c_free(e->client);
}

static void pump(struct tenv *e)
{
    for (int round = 0; round < PUMP_ROUNDS; round++) {
        bool moved = false;
        const uint8_t *b;
        ssize_t n;
        while ((n = h2c_send(e->client, &b)) > 0) {
            ck_assert_int_eq(h2_session_recv(e->server, b, (size_t)n), 0);
            moved = true;
        }
        while ((n = h2_session_send(e->server, &b)) > 0) {
            ck_assert_int_eq(h2c_recv(e->client, b, (size_t)n), 0);
            moved = true;
        }
        if (!moved)
            return;
    }
    ck_abort_msg("pump did not settle");
}

/* Request bytes: count messages of tag with seqs first.., each of len
 * (varied when len is 0), gRPC prefixes included. */
static uint8_t *body_new(int tag, uint32_t first, uint32_t count, size_t len, size_t *out_len)
{
    size_t total = 0;
    for (uint32_t i = 0; i < count; i++) {
        size_t l = len ? len : TEST_HDR + ((first + i) * 977u) % 20000u;
        total += GRPC_FRAME_HEADER + l;
    }
    uint8_t *b = malloc(total + 1), *p = b;
    for (uint32_t i = 0; i < count; i++) {
        size_t l = len ? len : TEST_HDR + ((first + i) * 977u) % 20000u;
        grpc_frame_header(p, l);
        msg_fill(p + GRPC_FRAME_HEADER, tag, first + i, l);
        p += GRPC_FRAME_HEADER + l;
    }
    *out_len = total;
    return b;
}

/* Opens a stream call carrying count messages; end says whether it
 * half-closes after them. */
static int32_t stream_open(struct tenv *e, int tag, uint32_t count, size_t len, bool end)
{
    size_t blen;
    uint8_t *b = body_new(tag, 0, count, len, &blen);
    int32_t id = end ? h2c_request(e->client, STREAM_PATH, NULL, b, blen, true)
                     : h2c_request_open(e->client, STREAM_PATH, b, blen);
    free(b);
    ck_assert_int_gt(id, 0);
    return id;
}

static void stream_more(struct tenv *e, int32_t id, int tag, uint32_t first, uint32_t count,
                        size_t len, bool end)
{
    size_t blen;
    uint8_t *b = body_new(tag, first, count, len, &blen);
    ck_assert_int_eq(h2c_append(e->client, id, b, blen, end), 0);
    free(b);
}

static void assert_seqs(const struct tcall *t, uint32_t count)
{
    ck_assert_uint_eq(t->nseqs, count);
    for (uint32_t i = 0; i < count; i++)
        ck_assert_uint_eq(t->seqs[i], i);
}

/* Walks a reply body: every message well-formed, of tag, seqs 0.. in
 * order. Returns the count. */
static uint32_t reply_count(const struct h2c_result *r, int tag)
{
    uint32_t n = 0;
    size_t off = 0;
    while (off < r->body_len) {
        ck_assert_uint_ge(r->body_len - off, GRPC_FRAME_HEADER + TEST_HDR);
        const uint8_t *h = r->body + off;
        size_t len = ((size_t)h[1] << 24) | ((size_t)h[2] << 16) | ((size_t)h[3] << 8) | h[4];
        ck_assert_uint_eq(h[0], 0);
        ck_assert_uint_le(len, r->body_len - off - GRPC_FRAME_HEADER);
        const uint8_t *m = h + GRPC_FRAME_HEADER;
        ck_assert_int_eq(m[0], tag);
        ck_assert_uint_eq(msg_seq(m), n);
        ck_assert(msg_check(m, len));
        off += GRPC_FRAME_HEADER + len;
        n++;
    }
    return n;
}

/* --- tests -------------------------------------------------------------- */

START_TEST(many_messages_in_order)
{
    struct tenv e;
    tenv_init(&e);
    e.echo = true;
    e.finish_on_end = true;
    int32_t id = stream_open(&e, 1, 150, 0, false);
    pump(&e);
    stream_more(&e, id, 1, 150, 150, 0, true);
    pump(&e);
    ck_assert_uint_eq(e.ncalls, 1);
    struct tcall *t = &e.calls[0];
    assert_seqs(t, 300);
    ck_assert_int_eq(t->ends, 1);
    ck_assert_uint_eq(t->nseqs_at_end, 300);
    ck_assert_int_eq(t->closed, 1);
    const struct h2c_result *r = h2c_result(e.client, id);
    ck_assert(r->closed);
    ck_assert(!r->trailers_only);
    ck_assert_int_eq(r->http_status, 200);
    ck_assert_int_eq(r->grpc_status, 0);
    ck_assert_uint_eq(reply_count(r, 1), 300);
    ck_assert_int_gt(e.sent, 0);
    ck_assert_uint_eq(h2_session_calls(e.server), 0);
    tenv_free(&e);
}
END_TEST

START_TEST(pause_then_resume_delivers_in_order)
{
    struct tenv e;
    tenv_init(&e);
    e.finish_on_end = true;
    e.pause_at[2] = 3;
    e.budget.max = 1 << 20;
    int32_t id = stream_open(&e, 2, 10, 1000, true);
    pump(&e);
    struct tcall *t = &e.calls[0];
    assert_seqs(t, 3);
    ck_assert_int_eq(t->ends, 0); /* the client half-closed, but 7 messages wait */
    ck_assert(!h2c_result(e.client, id)->closed);
    /* The held message plus the six raw ones behind it, prefixes included. */
    ck_assert_uint_eq(h2_stream_buffered(t->call), 1000 + 6 * (GRPC_FRAME_HEADER + 1000));
    /* The held message keeps its buffer's reservation (1000 + 1), and the
     * raw bytes behind it theirs (a 4 KiB buffer, doubled to 8 KiB). */
    ck_assert_uint_eq(e.budget.used, 1001 + 8192);
    h2_stream_resume(t->call); /* from outside: delivered now */
    assert_seqs(t, 10);
    ck_assert_int_eq(t->ends, 1);
    ck_assert_uint_eq(t->nseqs_at_end, 10);
    ck_assert_uint_eq(e.budget.used, 0);
    ck_assert_int_gt(e.want_write, 0); /* the trailers wait for a flush */
    pump(&e);
    const struct h2c_result *r = h2c_result(e.client, id);
    ck_assert(r->closed);
    ck_assert_int_eq(r->grpc_status, 0);
    ck_assert(r->trailers_only); /* finished without a reply message */
    ck_assert_int_eq(t->reentered, 0);
    tenv_free(&e);
}
END_TEST

START_TEST(resume_from_handlers_is_deferred)
{
    /* Tag 0 pauses on seq 1 and resumes itself inside message(); tag 1
     * pauses on seq 0 and is resumed from a message() of tag 2's call. */
    struct tenv e;
    tenv_init(&e);
    e.finish_on_end = true;
    e.pause_at[0] = 1;
    e.pause_then_resume[0] = true;
    e.pause_at[1] = 0;
    int32_t a = stream_open(&e, 0, 5, 64, true);
    int32_t b = stream_open(&e, 1, 5, 64, true);
    pump(&e);
    assert_seqs(tcall_by_tag(&e, 0), 5);
    ck_assert_int_eq(tcall_by_tag(&e, 0)->ends, 1);
    struct tcall *tb = tcall_by_tag(&e, 1);
    ck_assert_uint_eq(tb->nseqs, 0);
    e.resume_tag_on_msg[2] = 1;
    int32_t c = stream_open(&e, 2, 2, 64, true);
    pump(&e);
    assert_seqs(tb, 5);
    ck_assert_int_eq(tb->ends, 1);
    assert_seqs(tcall_by_tag(&e, 2), 2);
    for (size_t i = 0; i < e.ncalls; i++)
        ck_assert_int_eq(e.calls[i].reentered, 0);
    ck_assert_int_eq(h2c_result(e.client, a)->grpc_status, 0);
    ck_assert_int_eq(h2c_result(e.client, b)->grpc_status, 0);
    ck_assert_int_eq(h2c_result(e.client, c)->grpc_status, 0);
    ck_assert(h2c_all_closed(e.client));
    tenv_free(&e);
}
END_TEST

START_TEST(paused_stream_is_bounded_by_its_window)
{
    /* Four streams pause on their first message, each with 10 MiB behind
     * it: each may send only its stream window, and together they would use
     * up the connection window if it were not consumed at once. A fifth
     * stream must still flow; resuming lets the rest of the four arrive. */
    enum { PAUSED = 4, CHUNK = 64 * 1024, CHUNKS = 160 };
    struct tenv e;
    tenv_init(&e);
    e.finish_on_end = true;
    int32_t ids[PAUSED];
    for (int i = 0; i < PAUSED; i++) {
        e.pause_at[i] = 0;
        ids[i] = stream_open(&e, i, CHUNKS, CHUNK, true);
    }
    pump(&e);
    uint32_t window = h2c_remote_setting(e.client, NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE);
    ck_assert_uint_ge(window, 1 << 20);
    for (int i = 0; i < PAUSED; i++) {
        struct tcall *t = tcall_by_tag(&e, i);
        ck_assert_ptr_nonnull(t);
        ck_assert_uint_eq(t->nseqs, 0);
        ck_assert_int_eq(h2c_send_window(e.client, ids[i]), 0);
        ck_assert_uint_gt(h2c_body_unsent(e.client, ids[i]), 0);
        ck_assert_uint_le(h2_stream_buffered(t->call), CHUNK + window);
        ck_assert_uint_ge(h2_stream_buffered(t->call), window - (GRPC_FRAME_HEADER + CHUNK));
    }
    int32_t other = stream_open(&e, 5, CHUNKS, CHUNK, true);
    pump(&e);
    const struct h2c_result *r = h2c_result(e.client, other);
    ck_assert(r->closed);
    ck_assert_int_eq(r->grpc_status, 0);
    assert_seqs(tcall_by_tag(&e, 5), CHUNKS);
    for (int i = 0; i < PAUSED; i++) {
        struct tcall *t = tcall_by_tag(&e, i);
        ck_assert_uint_eq(t->nseqs, 0);
        ck_assert_uint_le(h2_stream_buffered(t->call), CHUNK + window);
        h2_stream_resume(t->call);
    }
    pump(&e);
    for (int i = 0; i < PAUSED; i++) {
        struct tcall *t = tcall_by_tag(&e, i);
        assert_seqs(t, CHUNKS);
        ck_assert_int_eq(t->ends, 1);
        ck_assert_int_eq(h2c_result(e.client, ids[i])->grpc_status, 0);
        ck_assert_uint_eq(h2c_body_unsent(e.client, ids[i]), 0);
    }
    tenv_free(&e);
}
END_TEST

START_TEST(pause_outside_message_holds_later_ones)
{
    /* Paused between messages (from the loop, say): nothing is held, the
     * messages that follow wait, and resume delivers them and end(). */
    struct tenv e;
    tenv_init(&e);
    e.finish_on_end = true;
    int32_t id = stream_open(&e, 3, 2, 100, false);
    pump(&e);
    struct tcall *t = &e.calls[0];
    assert_seqs(t, 2);
    h2_stream_resume(t->call); /* not paused: a no-op */
    h2_stream_pause(t->call);
    ck_assert_uint_eq(h2_stream_buffered(t->call), 0);
    stream_more(&e, id, 3, 2, 3, 100, true);
    pump(&e);
    assert_seqs(t, 2);
    ck_assert_int_eq(t->ends, 0);
    ck_assert_uint_eq(h2_stream_buffered(t->call), 3 * (GRPC_FRAME_HEADER + 100));
    int before = e.want_write;
    h2_stream_resume(t->call);
    assert_seqs(t, 5);
    ck_assert_int_eq(t->ends, 1);
    ck_assert_int_gt(e.want_write, before);
    pump(&e);
    ck_assert_int_eq(h2c_result(e.client, id)->grpc_status, 0);
    tenv_free(&e);
}
END_TEST

START_TEST(reply_queue_unsent_and_sent)
{
    struct tenv e;
    tenv_init(&e);
    int32_t id = stream_open(&e, 3, 1, 16, false);
    pump(&e);
    struct tcall *t = &e.calls[0];
    struct h2_call *call = t->call;
    static const size_t lens[] = { 10, 100000, 7 };
    size_t total = 0;
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(h2_call_send(call, reply_new(3, (uint32_t)i, lens[i]), lens[i]), 0);
        total += GRPC_FRAME_HEADER + lens[i];
    }
    ck_assert_uint_eq(h2_call_unsent(call), total);
    ck_assert_int_eq(e.sent, 0);
    ck_assert_int_gt(e.want_write, 0);
    /* Take output one piece at a time until some reply bytes went. */
    const uint8_t *b;
    ssize_t n;
    while (h2_call_unsent(call) == total && (n = h2_session_send(e.server, &b)) > 0)
        ck_assert_int_eq(h2c_recv(e.client, b, (size_t)n), 0);
    ck_assert_uint_lt(h2_call_unsent(call), total);
    ck_assert_int_gt(e.sent, 0);
    pump(&e);
    ck_assert_uint_eq(h2_call_unsent(call), 0);
    ck_assert(!h2c_result(e.client, id)->closed);
    /* A reply over max_message_bytes is refused and fails the call. */
    ck_assert_int_eq(h2_call_send(call, malloc(GRPC_FRAME_HEADER + 1), (size_t)MAX_MSG + 1), -1);
    pump(&e);
    const struct h2c_result *r = h2c_result(e.client, id);
    ck_assert(r->closed);
    ck_assert(!r->trailers_only);
    ck_assert_int_eq(r->grpc_status, STATUS_RESOURCE_EXHAUSTED);
    ck_assert_uint_eq(reply_count(r, 3), 3);
    tenv_free(&e);
}
END_TEST

START_TEST(refill_from_sent_then_finish)
{
    /* The handler keeps one message queued at a time, refilling from
     * sent(); the last refill finishes the call. */
    struct tenv e;
    tenv_init(&e);
    int32_t id = stream_open(&e, 4, 1, 16, true);
    pump(&e);
    struct tcall *t = &e.calls[0];
    ck_assert_int_eq(t->ends, 1);
    e.refill_len = 30000;
    e.refill_left = 39;
    e.refill_seq = 1;
    ck_assert_int_eq(h2_call_send(t->call, reply_new(4, 0, e.refill_len), e.refill_len), 0);
    pump(&e);
    const struct h2c_result *r = h2c_result(e.client, id);
    ck_assert(r->closed);
    ck_assert_int_eq(r->grpc_status, 0);
    ck_assert(!r->trailers_only);
    ck_assert_uint_eq(reply_count(r, 4), 40);
    ck_assert_int_ge(e.sent, 40);
    tenv_free(&e);
}
END_TEST

START_TEST(finish_after_messages_and_calls_refused_after)
{
    struct tenv e;
    tenv_init(&e);
    int32_t id = stream_open(&e, 5, 2, 32, true);
    pump(&e);
    struct h2_call *call = e.calls[0].call;
    for (uint32_t i = 0; i < 5; i++)
        ck_assert_int_eq(h2_call_send(call, reply_new(5, i, 100), 100), 0);
    ck_assert_int_eq(h2_call_finish(call), 0);
    /* The status is decided: no second answer, no more messages. */
    ck_assert_int_eq(h2_call_finish(call), -1);
    ck_assert_int_eq(h2_call_fail(call, STATUS_INTERNAL, "late"), -1);
    ck_assert_int_eq(h2_call_send(call, reply_new(5, 9, 100), 100), -1);
    pump(&e);
    const struct h2c_result *r = h2c_result(e.client, id);
    ck_assert(r->closed);
    ck_assert_int_eq(r->grpc_status, 0);
    ck_assert_str_eq(r->grpc_message, "");
    ck_assert_uint_eq(reply_count(r, 5), 5); /* every queued message before the trailers */
    tenv_free(&e);
}
END_TEST

START_TEST(fail_after_messages_goes_in_trailers)
{
    struct tenv e;
    tenv_init(&e);
    int32_t id = stream_open(&e, 6, 1, 32, false);
    pump(&e);
    struct h2_call *call = e.calls[0].call;
    ck_assert_int_eq(h2_call_send(call, reply_new(6, 0, 50), 50), 0);
    ck_assert_int_eq(h2_call_send(call, reply_new(6, 1, 50), 50), 0);
    pump(&e);
    /* Queued but not begun when the call fails: dropped. */
    ck_assert_int_eq(h2_call_send(call, reply_new(6, 2, 50), 50), 0);
    ck_assert_int_eq(h2_call_fail(call, STATUS_INVALID_ARGUMENT, "chunk 3: bad"), 0);
    ck_assert_uint_eq(h2_call_unsent(call), 0);
    pump(&e);
    const struct h2c_result *r = h2c_result(e.client, id);
    ck_assert(r->closed);
    ck_assert(!r->trailers_only);
    ck_assert_int_eq(r->grpc_status, STATUS_INVALID_ARGUMENT);
    char msg[64];
    h2c_percent_decode(r->grpc_message, msg, sizeof(msg));
    ck_assert_str_eq(msg, "chunk 3: bad");
    ck_assert_uint_eq(reply_count(r, 6), 2);
    ck_assert_int_eq(e.calls[0].ends, 0);
    tenv_free(&e);
}
END_TEST

/* h2_call_send_ref: the borrowed tail reaches the client as part of the
 * message, and release runs exactly once per message: when it is sent,
 * when the failing call drops it, and from inside a refused send. */
static int ref_released[4];

static void ref_release(void *ctx)
{
    ref_released[(intptr_t)ctx]++;
}

START_TEST(send_ref_releases_once)
{
    struct tenv e;
    tenv_init(&e);
    memset(ref_released, 0, sizeof ref_released);
    int32_t id = stream_open(&e, 7, 1, 32, false);
    pump(&e);
    struct h2_call *call = e.calls[0].call;
    enum { LEN = 100, HEAD = 10 };
    uint8_t *whole[3];
    for (int i = 0; i < 3; i++) {
        whole[i] = reply_new(7, (uint32_t)i, LEN);   /* the message, then split */
        uint8_t *head = malloc(GRPC_FRAME_HEADER + HEAD);
        memcpy(head + GRPC_FRAME_HEADER, whole[i] + GRPC_FRAME_HEADER, HEAD);
        ck_assert_int_eq(h2_call_send_ref(call, head, HEAD, whole[i] + GRPC_FRAME_HEADER + HEAD,
                                          LEN - HEAD, ref_release, (void *)(intptr_t)i),
                         0);
        if (i == 1)
            pump(&e);   /* the first two go out; the third stays queued */
    }
    ck_assert_int_eq(ref_released[0], 1);
    ck_assert_int_eq(ref_released[1], 1);
    ck_assert_int_eq(ref_released[2], 0);
    ck_assert_int_eq(h2_call_fail(call, STATUS_INTERNAL, "stop"), 0);
    ck_assert_int_eq(ref_released[2], 1);   /* dropped with the call's queue */
    /* Refused (the call is answered): released from inside, once. */
    uint8_t *head = malloc(GRPC_FRAME_HEADER + HEAD);
    ck_assert_int_eq(h2_call_send_ref(call, head, HEAD, whole[0], LEN, ref_release,
                                      (void *)(intptr_t)3),
                     -1);
    ck_assert_int_eq(ref_released[3], 1);
    pump(&e);
    const struct h2c_result *r = h2c_result(e.client, id);
    ck_assert(r->closed);
    ck_assert_uint_eq(reply_count(r, 7), 2);   /* whole, valid messages */
    tenv_free(&e);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(ref_released[i], 1);
    for (int i = 0; i < 3; i++)
        free(whole[i]);
}
END_TEST

START_TEST(fail_before_any_message_is_trailers_only)
{
    /* A bad request message fails a stream call like a unary one. */
    struct tenv e;
    tenv_init(&e);
    uint8_t body[GRPC_FRAME_HEADER + 2] = { 0 };
    grpc_frame_header(body, 2);
    int32_t id = h2c_request(e.client, STREAM_PATH, NULL, body, sizeof(body), true);
    pump(&e);
    const struct h2c_result *r = h2c_result(e.client, id);
    ck_assert(r->closed);
    ck_assert(r->trailers_only);
    ck_assert_int_eq(r->grpc_status, STATUS_INVALID_ARGUMENT);
    ck_assert_int_eq(e.calls[0].ends, 0);
    tenv_free(&e);
}
END_TEST

START_TEST(bad_message_after_replies_goes_in_trailers)
{
    struct tenv e;
    tenv_init(&e);
    e.echo = true;
    int32_t id = stream_open(&e, 2, 2, 64, false);
    pump(&e);
    uint8_t bad[GRPC_FRAME_HEADER + 2] = { 0 };
    grpc_frame_header(bad, 2);
    ck_assert_int_eq(h2c_append(e.client, id, bad, sizeof(bad), false), 0);
    pump(&e);
    const struct h2c_result *r = h2c_result(e.client, id);
    ck_assert(r->closed);
    ck_assert(!r->trailers_only);
    ck_assert_int_eq(r->grpc_status, STATUS_INVALID_ARGUMENT);
    ck_assert_str_eq(r->grpc_message, "bad test message");
    ck_assert_uint_eq(reply_count(r, 2), 2);
    tenv_free(&e);
}
END_TEST

START_TEST(truncated_stream_after_resume_is_internal)
{
    /* Paused, then the client half-closes inside a message: once resumed
     * the truncation is found, and no end() is delivered. */
    struct tenv e;
    tenv_init(&e);
    e.pause_at[7] = 0;
    int32_t id = stream_open(&e, 7, 2, 40, false);
    pump(&e);
    uint8_t part[GRPC_FRAME_HEADER + 3];
    grpc_frame_header(part, 40);
    memset(part + GRPC_FRAME_HEADER, 0, 3);
    ck_assert_int_eq(h2c_append(e.client, id, part, sizeof(part), true), 0);
    pump(&e);
    struct tcall *t = &e.calls[0];
    ck_assert_int_eq(t->ends, 0);
    h2_stream_resume(t->call);
    assert_seqs(t, 2);
    ck_assert_int_eq(t->ends, 0);
    pump(&e);
    const struct h2c_result *r = h2c_result(e.client, id);
    ck_assert_int_eq(r->grpc_status, STATUS_INTERNAL);
    tenv_free(&e);
}
END_TEST

START_TEST(reset_while_paused_closes_once)
{
    struct tenv e;
    tenv_init(&e);
    e.pause_at[0] = 2;
    e.budget.max = 1 << 20;
    int32_t id = stream_open(&e, 0, 50, 5000, false);
    pump(&e);
    struct tcall *t = &e.calls[0];
    assert_seqs(t, 2);
    ck_assert_uint_gt(h2_stream_buffered(t->call), 5000);
    ck_assert_uint_eq(e.budget.used, 5001 + 256 * 1024);   /* held message + pending buffer */
    ck_assert_int_eq(h2_call_send(t->call, reply_new(0, 0, 100), 100), 0);
    ck_assert_int_eq(h2c_reset(e.client, id), 0);
    pump(&e);
    ck_assert_int_eq(t->closed, 1);
    ck_assert_ptr_null(t->call);
    ck_assert_int_eq(t->ends, 0);
    ck_assert_uint_eq(e.budget.used, 0);
    ck_assert_uint_eq(h2_session_calls(e.server), 0);
    /* The connection goes on: a new call still works. */
    e.finish_on_end = true;
    int32_t id2 = stream_open(&e, 1, 3, 10, true);
    pump(&e);
    ck_assert_int_eq(h2c_result(e.client, id2)->grpc_status, 0);
    tenv_free(&e);
}
END_TEST

START_TEST(unary_calls_unchanged)
{
    struct tenv e;
    tenv_init(&e);
    e.finish_on_end = true;
    uint8_t m[20];
    msg_fill(m, 2, 0, sizeof(m));
    int32_t id = h2c_call(e.client, UNARY_PATH, m, sizeof(m));
    pump(&e);
    const struct h2c_result *r = h2c_result(e.client, id);
    ck_assert_int_eq(r->grpc_status, 0);
    ck_assert_uint_eq(reply_count(r, 2), 1);
    ck_assert_int_eq(e.sent, 0); /* sent() is for stream calls only */
    /* Two messages on a unary call are still refused. */
    size_t blen;
    uint8_t *b = body_new(2, 0, 2, 20, &blen);
    id = h2c_request(e.client, UNARY_PATH, NULL, b, blen, true);
    free(b);
    pump(&e);
    ck_assert_int_eq(h2c_result(e.client, id)->grpc_status, STATUS_UNIMPLEMENTED);
    tenv_free(&e);
}
END_TEST

START_TEST(stream_api_refused_on_unary_calls)
{
    struct tenv e;
    tenv_init(&e);
    uint8_t body[GRPC_FRAME_HEADER + 8];
    grpc_frame_header(body, 8);
    msg_fill(body + GRPC_FRAME_HEADER, 0, 0, 8);
    int32_t id = h2c_request_open(e.client, UNARY_PATH, body, sizeof(body));
    pump(&e);
    struct h2_call *call = e.calls[0].call;
    ck_assert_int_eq(h2_call_send(call, reply_new(0, 0, 8), 8), -1);
    ck_assert_int_eq(h2_call_finish(call), -1);
    h2_stream_pause(call); /* no-op */
    ck_assert_int_eq(h2c_append(e.client, id, NULL, 0, true), 0);
    pump(&e);
    ck_assert_int_eq(e.calls[0].ends, 1);
    ck_assert_int_eq(h2_call_fail(call, STATUS_CANCELLED, "x"), 0);
    pump(&e);
    ck_assert_int_eq(h2c_result(e.client, id)->grpc_status, STATUS_CANCELLED);
    tenv_free(&e);
}
END_TEST

START_TEST(session_freed_with_paused_call)
{
    /* Freeing the session releases held and pending bytes and the budget
     * (tenv_free checks budget and closed(); ASan the rest). */
    struct tenv e;
    tenv_init(&e);
    e.pause_at[0] = 0;
    stream_open(&e, 0, 20, 3000, false);
    pump(&e);
    ck_assert_uint_gt(h2_stream_buffered(e.calls[0].call), 0);
    ck_assert_int_eq(h2_call_send(e.calls[0].call, reply_new(0, 0, 10), 10), 0);
    tenv_free(&e);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("h2_stream");
    const TTest *const tests[] = {
        many_messages_in_order,
        pause_then_resume_delivers_in_order,
        resume_from_handlers_is_deferred,
        paused_stream_is_bounded_by_its_window,
        pause_outside_message_holds_later_ones,
        reply_queue_unsent_and_sent,
        refill_from_sent_then_finish,
        finish_after_messages_and_calls_refused_after,
        fail_after_messages_goes_in_trailers,
        send_ref_releases_once,
        fail_before_any_message_is_trailers_only,
        bad_message_after_replies_goes_in_trailers,
        truncated_stream_after_resume_is_internal,
        reset_while_paused_closes_once,
        unary_calls_unchanged,
        stream_api_refused_on_unary_calls,
        session_freed_with_paused_call,
        NULL,
    };
    TCase *tc = check_run_case(s, "core", tests);
    tcase_set_timeout(tc, 60);
    return check_run(s, CK_FORK_GETENV);
}
