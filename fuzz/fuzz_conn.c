/* SPDX-License-Identifier: MIT */
/* fuzz_conn.c: one client connection's bytes through the daemon's real
 * HTTP/2 + gRPC + rpc layers, over the in-memory backend (fuzz_backend.h).
 *
 * What conn.c does with a socket, this does with the fuzz input: bytes go
 * into h2_session_recv(), output comes out of h2_session_send() (and is
 * dropped: the input plays a client that does not need to read it). The
 * input is a list of pieces, each
 *
 *     ctrl (1 byte) | length (2 bytes, big-endian) | length bytes
 *
 * fed in order (a short last piece takes what is left). After each piece's
 * bytes, ctrl says what the rest of the daemon does before the next read:
 *   bits 0-1  output: 0 or 3 all of it, 1 one piece, 2 none (a client that
 *             stops reading: flow control and reply queues fill up);
 *   bits 2-3  device work: 0 all of it and again until quiet, 1 one task,
 *             2 none (jobs wait on a busy device), 3 the tasks queued now;
 *   bit 4     a second passes: --request-timeout is enforced at the new
 *             time, and every deadline (grpc-timeout) fires;
 *   bit 5     the first task completed fails, as a device error;
 *   bit 6     a drain starts (GOAWAY, health NOT_SERVING); the second time,
 *             the drain's time is up: every call still open is failed and
 *             the connection closes once that is out;
 *   bit 7     toggles other connections holding all but a little of the
 *             daemon-wide memory budget.
 * ctrl 0 is a daemon that keeps up, which is what fuzz/capture.py records.
 *
 * When the input ends the client is gone: the session is freed with
 * whatever is in flight, the backend runs until quiet, and the invariants
 * are checked (an abort marks the input as a crash): every call's closed()
 * ran once per accepted start(), every unary job and stream was delivered
 * and ended, every stream OPEN had its CLOSE, every staging buffer and
 * every byte of the memory budget are back, no deadline timer outlived its
 * call, and every call start() accepted was counted under some status.
 * Leaks are LeakSanitizer's to find.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "budget.h"
#include "fuzz_backend.h"
#include "h2.h"
#include "rpc.h"

#define FUZZ_CONN_CTRL_OUTPUT 0x03
#define FUZZ_CONN_OUTPUT_ONE 1
#define FUZZ_CONN_OUTPUT_NONE 2
#define FUZZ_CONN_CTRL_TASKS 0x0c
#define FUZZ_CONN_TASKS_SHIFT 2
#define FUZZ_CONN_TASKS_ONE 1
#define FUZZ_CONN_TASKS_NONE 2
#define FUZZ_CONN_TASKS_QUEUED 3
#define FUZZ_CONN_CTRL_TICK 0x10
#define FUZZ_CONN_CTRL_FAIL 0x20
#define FUZZ_CONN_CTRL_DRAIN 0x40
#define FUZZ_CONN_CTRL_CROWD 0x80
#define FUZZ_CONN_PIECE_HEADER 3

/* Small limits, so that every refusal is a few kilobytes away: messages
 * and chunks of a few KiB, a budget a handful of messages fill, four
 * staging buffers per device (a stream may hold two). */
#define FUZZ_CONN_MAX_MESSAGE (64 * 1024)
/* --max-unknown-length: a reverse stream of unknown length may bring this much. */
#define FUZZ_CONN_MAX_UNKNOWN_LENGTH (256 * 1024)
#define FUZZ_CONN_MAX_STREAMS 8
#define FUZZ_CONN_DAEMON_MEMORY (512 * 1024)   /* --max-job-memory */
#define FUZZ_CONN_MEMORY (256 * 1024)          /* --max-connection-memory */
#define FUZZ_CONN_CROWD_ROOM 1024
/* --request-timeout and --min-request-rate; each "time passes" piece is a
 * second, so a request stalls out after a few of them. */
#define FUZZ_CONN_REQUEST_TIMEOUT_MS 2000
#define FUZZ_CONN_MIN_REQUEST_RATE 1024
#define FUZZ_CONN_TICK_MS 1000
static const struct fuzz_sched_limits fuzz_conn_limits = {
    .max_jobs = 4,
    .staging_count = 4,
    .chunk_bytes = 4096,
    .device_memory = 1024 * 1024,
};

/* Rounds of work before a connection is declared stuck: far more than
 * the largest input's chunks, replies and tasks. */
#define FUZZ_CONN_ROUNDS_MAX (1u << 20)
/* Deadline timers fired per walk of the loop's handles. */
#define FUZZ_CONN_TIMERS_MAX 64

struct fuzz_conn {
    struct rpc_env env;
    struct budget daemon;       /* --max-job-memory: every connection's */
    struct budget budget;       /* --max-connection-memory: this one's; parent daemon */
    uint64_t crowd;             /* daemon budget bytes "other connections" hold now */
    struct status_counts status_counts; /* calls answered, by status */
    int drain;                  /* 0; 1: GOAWAY sent; 2: the drain's end came */
    struct sched_port *sched;
    struct h2_session *h2;
    uint64_t starts, closes;    /* accepted start() and closed() calls */
    bool over;                  /* the connection closed: no more input */
};

struct fuzz_conn_piece {
    uint8_t ctrl;
    const uint8_t *data;
    size_t len;
};

/* FUZZ_CONN_VERBOSE=1 in the environment: each call's path and each
 * connection's counts on stderr, to see what a seed does. */
static bool fuzz_conn_verbose(void)
{
    static int verbose = -1;
    if (verbose < 0) {
        const char *v = getenv("FUZZ_CONN_VERBOSE");
        verbose = v && *v && strcmp(v, "0") != 0;
    }
    return verbose;
}

/* --- the handlers: rpc, counted ------------------------------------------- */

static enum status_code fuzz_conn_start(struct h2_call *call, const char *path,
                                        enum h2_call_kind *kind, char *msg, size_t msglen,
                                        void *ctx)
{
    struct fuzz_conn *fc = ctx;
    enum status_code code = rpc_h2_start(call, path, kind, msg, msglen, &fc->env, NULL);
    if (code == STATUS_OK)
        fc->starts++;
    if (fuzz_conn_verbose())
        fprintf(stderr, "fuzz_conn: call %s: start %d\n", path, (int)code);
    return code;
}

static enum status_code fuzz_conn_message(struct h2_call *call, const uint8_t *msg, size_t len,
                                          char *err, size_t errlen, void *ctx)
{
    struct fuzz_conn *fc = ctx;
    return rpc_h2_message(call, msg, len, err, errlen, &fc->env);
}

static void fuzz_conn_end(struct h2_call *call, void *ctx)
{
    struct fuzz_conn *fc = ctx;
    rpc_h2_end(call, &fc->env);
}

static void fuzz_conn_closed(struct h2_call *call, void *ctx)
{
    struct fuzz_conn *fc = ctx;
    if (++fc->closes > fc->starts)
        fuzz_backend_trap("closed() ran more often than start() accepted a call");
    rpc_h2_closed(call, &fc->env);
}

static void fuzz_conn_sent(struct h2_call *call, void *ctx)
{
    struct fuzz_conn *fc = ctx;
    rpc_h2_sent(call, &fc->env);
}

/* Output is taken between pieces, as the input says: nothing to do now. */
static void fuzz_conn_want_write(void *ctx)
{
    (void)ctx;
}

static const struct h2_handlers fuzz_conn_handlers = {
    .start = fuzz_conn_start,
    .message = fuzz_conn_message,
    .end = fuzz_conn_end,
    .closed = fuzz_conn_closed,
    .sent = fuzz_conn_sent,
    .want_write = fuzz_conn_want_write,
};

/* --- time ------------------------------------------------------------------- */

/* The h2 layer's clock (h2_config.now_ms): it moves only when the input
 * says a second passed, so that a run does not depend on the machine. */
static uint64_t fuzz_conn_clock;

static uint64_t fuzz_conn_now_ms(void)
{
    return fuzz_conn_clock;
}

static uv_loop_t *fuzz_conn_loop(void)
{
    static uv_loop_t loop;
    static bool ready;
    if (!ready) {
        if (uv_loop_init(&loop) != 0)
            fuzz_backend_trap("uv_loop_init");
        ready = true;
    }
    return &loop;
}

struct fuzz_conn_timers {
    uv_timer_t *t[FUZZ_CONN_TIMERS_MAX];
    size_t n;
};

static void fuzz_conn_timer_found(uv_handle_t *h, void *arg)
{
    struct fuzz_conn_timers *ts = arg;
    if (uv_handle_get_type(h) == UV_TIMER && uv_is_active(h) && !uv_is_closing(h) && ts->n < FUZZ_CONN_TIMERS_MAX)
        ts->t[ts->n++] = (uv_timer_t *)h;
}

/* Fires every active deadline timer now, instead of waiting for the clock.
 * rpc.c's timer callback is private to it; the uv_timer_t keeps it in
 * timer_cb, a field of uv.h's public struct that libuv itself calls. The
 * handles are collected first: a callback may close other calls' timers. */
static void fuzz_conn_fire_deadlines(void)
{
    struct fuzz_conn_timers ts = { .n = 0 };
    uv_walk(fuzz_conn_loop(), fuzz_conn_timer_found, &ts);
    for (size_t i = 0; i < ts.n; i++) {
        uv_timer_t *t = ts.t[i];
        if (!uv_is_active((uv_handle_t *)t) || uv_is_closing((uv_handle_t *)t))
            continue;
        uv_timer_stop(t);
        t->timer_cb(t);
    }
}

static void fuzz_conn_timer_left(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (uv_is_active(h) && !uv_is_closing(h))
        fuzz_backend_trap("a deadline timer outlived its call");
}

/* --- the daemon's side between reads ------------------------------------------ */

/* Takes output as conn.c would: one piece, or all until nghttp2 has none.
 * Returns whether any was taken. A fatal session error ends the connection. */
static bool fuzz_conn_output(struct fuzz_conn *fc, bool all)
{
    bool moved = false;
    for (;;) {
        const uint8_t *out;
        ssize_t n = h2_session_send(fc->h2, &out);
        if (n < 0) {
            fc->over = true;
            return moved;
        }
        if (n == 0)
            break;
        moved = true;
        if (!all)
            return moved;
    }
    if (!h2_session_want_read(fc->h2) && !h2_session_want_write(fc->h2))
        fc->over = true;
    return moved;
}

/* Device work and staging wake-ups until neither has anything to do.
 * Returns whether anything happened. */
static bool fuzz_conn_settle(struct fuzz_conn *fc, bool fail)
{
    bool any = false;
    for (unsigned round = 0;; round++) {
        if (round == FUZZ_CONN_ROUNDS_MAX)
            fuzz_backend_trap("the backend never went quiet");
        bool moved = fuzz_sched_complete(fc->sched, SIZE_MAX, fail && !any) > 0;
        moved |= fuzz_sched_idle(fc->sched);
        if (!moved)
            return any;
        any = true;
    }
}

/* A daemon that keeps up: work, wake-ups and output until all are quiet. */
static void fuzz_conn_keep_up(struct fuzz_conn *fc, bool fail)
{
    for (unsigned round = 0; !fc->over; round++) {
        if (round == FUZZ_CONN_ROUNDS_MAX)
            fuzz_backend_trap("the connection never went quiet");
        bool moved = fuzz_conn_settle(fc, fail && round == 0);
        moved |= fuzz_conn_output(fc, true);
        if (!moved)
            return;
    }
}

static void fuzz_conn_tasks(struct fuzz_conn *fc, unsigned mode, bool fail)
{
    switch (mode) {
    case FUZZ_CONN_TASKS_ONE:
        fuzz_sched_complete(fc->sched, 1, fail);
        fuzz_sched_idle(fc->sched);
        break;
    case FUZZ_CONN_TASKS_NONE:
        fuzz_sched_idle(fc->sched);
        break;
    case FUZZ_CONN_TASKS_QUEUED:
        fuzz_sched_complete(fc->sched, fuzz_sched_queued(fc->sched), fail);
        fuzz_sched_idle(fc->sched);
        break;
    default:
        fuzz_conn_settle(fc, fail);
        break;
    }
}

/* Other connections take (or give back) all of the budget but a little. */
static void fuzz_conn_crowd(struct fuzz_conn *fc)
{
    struct budget *b = &fc->daemon;
    if (fc->crowd) {
        b->used -= fc->crowd;
        fc->crowd = 0;
        return;
    }
    if (b->max - b->used > FUZZ_CONN_CROWD_ROOM) {
        fc->crowd = b->max - b->used - FUZZ_CONN_CROWD_ROOM;
        b->used += fc->crowd;
    }
}

/* A second passes: requests that stalled are answered (or the connection
 * is given up, as the sweep in server.c does), and deadlines fire. */
static void fuzz_conn_tick(struct fuzz_conn *fc)
{
    fuzz_conn_clock += FUZZ_CONN_TICK_MS;
    if (h2_session_expire(fc->h2, fuzz_conn_clock) != 0) {
        fuzz_conn_output(fc, true);
        fc->over = true;
        return;
    }
    fuzz_conn_fire_deadlines();
}

/* The drain: GOAWAY first; at its end (the second time) every call still
 * open is failed, and the connection closes once that is out, as server.c
 * and conn.c do at --drain-timeout. */
static void fuzz_conn_drain(struct fuzz_conn *fc)
{
    if (fc->drain == 0) {
        fc->drain = 1;
        fc->env.draining = true;
        h2_session_goaway(fc->h2);
        return;
    }
    if (fc->drain == 1) {
        fc->drain = 2;
        h2_session_fail_all(fc->h2, STATUS_UNAVAILABLE, "fuzz: --drain-timeout passed");
        fuzz_conn_output(fc, true);
        fc->over = true;
    }
}

static void fuzz_conn_between(struct fuzz_conn *fc, uint8_t ctrl)
{
    unsigned output = ctrl & FUZZ_CONN_CTRL_OUTPUT;
    unsigned tasks = (ctrl & FUZZ_CONN_CTRL_TASKS) >> FUZZ_CONN_TASKS_SHIFT;
    bool fail = ctrl & FUZZ_CONN_CTRL_FAIL;
    if (ctrl & FUZZ_CONN_CTRL_CROWD)
        fuzz_conn_crowd(fc);
    if (ctrl & FUZZ_CONN_CTRL_DRAIN)
        fuzz_conn_drain(fc);
    if (ctrl & FUZZ_CONN_CTRL_TICK && !fc->over)
        fuzz_conn_tick(fc);
    if (fc->over)
        return;
    if (output != FUZZ_CONN_OUTPUT_ONE && output != FUZZ_CONN_OUTPUT_NONE && tasks == 0) {
        fuzz_conn_keep_up(fc, fail);
        return;
    }
    fuzz_conn_tasks(fc, tasks, fail);
    if (output != FUZZ_CONN_OUTPUT_NONE)
        fuzz_conn_output(fc, output != FUZZ_CONN_OUTPUT_ONE);
}

/* --- a connection's life ------------------------------------------------------ */

static bool fuzz_conn_next(const uint8_t **in, size_t *left, struct fuzz_conn_piece *p)
{
    if (*left == 0)
        return false;
    const uint8_t *d = *in;
    size_t header = *left < FUZZ_CONN_PIECE_HEADER ? *left : FUZZ_CONN_PIECE_HEADER;
    size_t len = header == FUZZ_CONN_PIECE_HEADER ? (size_t)d[1] << 8 | d[2] : 0;
    if (len > *left - header)
        len = *left - header;
    p->ctrl = d[0];
    p->data = d + header;
    p->len = len;
    *in += header + len;
    *left -= header + len;
    return true;
}

static int fuzz_conn_open(struct fuzz_conn *fc)
{
    memset(fc, 0, sizeof(*fc));
    fc->daemon = (struct budget){ .max = FUZZ_CONN_DAEMON_MEMORY, .name = "--max-job-memory" };
    fc->budget = (struct budget){ .max = FUZZ_CONN_MEMORY, .parent = &fc->daemon,
                                  .name = "--max-connection-memory" };
    fc->sched = fuzz_sched_new(&fuzz_conn_limits);
    fc->env.sched = fc->sched;
    fc->env.max_message_bytes = FUZZ_CONN_MAX_MESSAGE;
    fc->env.max_unknown_length = FUZZ_CONN_MAX_UNKNOWN_LENGTH;
    fc->env.start_ms = rpc_now_ms();
    fc->env.loop = fuzz_conn_loop();
    fc->env.budget = &fc->daemon;
    fc->env.status_counts = &fc->status_counts;
    struct h2_config cfg = {
        .max_message_bytes = FUZZ_CONN_MAX_MESSAGE,
        .max_streams = FUZZ_CONN_MAX_STREAMS,
        .budget = &fc->budget,
        .now_ms = fuzz_conn_now_ms,
        .request_timeout_ms = FUZZ_CONN_REQUEST_TIMEOUT_MS,
        .min_request_rate = FUZZ_CONN_MIN_REQUEST_RATE,
        .status_counts = &fc->status_counts,
    };
    fc->h2 = fc->sched ? h2_session_new(&cfg, &fuzz_conn_handlers, fc) : NULL;
    if (!fc->h2) {
        fuzz_sched_free(fc->sched);
        return -1;
    }
    return 0;
}

/* The client is gone: free the session with what is in flight, let the
 * backend finish, and check that everything came back. */
static void fuzz_conn_close(struct fuzz_conn *fc)
{
    if (fc->crowd)
        fuzz_conn_crowd(fc);
    h2_session_free(fc->h2);
    fuzz_conn_settle(fc, false);
    if (fuzz_conn_verbose()) {
        const struct fuzz_sched_counts *c = fuzz_sched_counts(fc->sched);
        fprintf(stderr, "fuzz_conn: %llu calls, %llu jobs, %llu streams, %llu tasks\n",
                (unsigned long long)fc->starts, (unsigned long long)c->jobs_submitted,
                (unsigned long long)c->streams_begun, (unsigned long long)c->tasks_run);
    }
    uv_walk(fuzz_conn_loop(), fuzz_conn_timer_left, NULL);
    uv_run(fuzz_conn_loop(), UV_RUN_NOWAIT);   /* closed timers' callbacks free them */
    if (uv_loop_alive(fuzz_conn_loop()))
        fuzz_backend_trap("the loop has handles left");
    if (fc->starts != fc->closes)
        fuzz_backend_trap("a call accepted by start() never got closed()");
    if (fc->budget.used != 0)
        fuzz_backend_trap("--max-connection-memory bytes not given back");
    if (fc->daemon.used != 0)
        fuzz_backend_trap("--max-job-memory bytes not given back");
    uint64_t counted = 0;
    for (size_t i = 0; i < STATUS_CODE_COUNT; i++)
        counted += status_counted(&fc->status_counts, (enum status_code)i);
    if (counted < fc->starts)
        fuzz_backend_trap("a call start() accepted was never counted under a status");
    fuzz_sched_free(fc->sched);   /* checks that it is quiet */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_conn fc;
    if (fuzz_conn_open(&fc) != 0)
        return 0;
    struct fuzz_conn_piece p;
    while (!fc.over && fuzz_conn_next(&data, &size, &p)) {
        if (h2_session_recv(fc.h2, p.data, p.len) != 0) {
            /* conn.c: flush what the session still says (its GOAWAY), then close */
            fuzz_conn_output(&fc, true);
            break;
        }
        fuzz_conn_between(&fc, p.ctrl);
    }
    fuzz_conn_close(&fc);
    return 0;
}
