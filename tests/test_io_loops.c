/* SPDX-License-Identifier: MIT */
/* test_io_loops.c: one daemon with --io-threads 4 serving many clients at
 * once. Connections land on different I/O loops and run unary jobs and
 * streams concurrently, with a staging pool small enough that streams on
 * different loops wait for each other's buffers (a waiter woken from
 * another loop); every result is checked against the CPU reference, and
 * Status's daemon-wide counts add up and come back to zero. Then a drain
 * under load: SIGTERM while every connection is streaming; every call
 * ends with a result that checks or a clean error, and the daemon exits 0
 * (under ASan: nothing leaked on any loop).
 *
 * Worker threads do not assert (check's asserts belong to the test's own
 * thread): each records its first failure, and the test checks them all.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "amp.h"
#include "check_run.h"
#include "host_step.h"
#include "daemon_proc.h"

#define IO_LOOPS "4"
#define CLIENTS 12                     /* connections, three per loop */
#define ROUNDS 4
#define STREAM_LEN (3u * 1024 * 1024 + 4093) /* three chunks and an odd tail */
#define UNARY_LEN (64 * 1024 + 13)
#define XOR_VALUE 0x5a
#define SETTLE_MS 20000                /* for connections to close after their clients */
#define POLL_MS 20
#define ERR_MAX 256

static const char *const loop_args[] = { "--io-threads", IO_LOOPS, "--chunk-bytes", "1M",
                                         "--staging-bytes", "6M", NULL };

struct worker {
    pthread_t thread;
    const char *address;
    int index;
    atomic_bool *stop;            /* drain test: run until a call fails or this is set */
    atomic_int *streams_done;     /* drain test: streams that completed */
    unsigned calls_ok;
    char err[ERR_MAX];            /* first failure; "" if none */
};

static uint8_t *random_bytes(size_t n, uint64_t seed)
{
    uint8_t *p = malloc(n ? n : 1);
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (uint8_t)x;
    }
    return p;
}

struct src {
    const uint8_t *data;
    size_t len, pos;
};

static long src_read(void *ctx, void *buf, size_t cap)
{
    struct src *s = ctx;
    size_t n = s->len - s->pos < cap ? s->len - s->pos : cap;
    memcpy(buf, s->data + s->pos, n);
    s->pos += n;
    return (long)n;
}

struct sink {
    const uint8_t *want;
    size_t len, got;
    int mismatch;                 /* first differing offset + 1, or 0 */
};

static int sink_write(void *ctx, const void *buf, size_t len)
{
    struct sink *s = ctx;
    if (s->got + len > s->len)
        return AMP_EINVAL;
    if (!s->mismatch && memcmp(buf, s->want + s->got, len) != 0) {
        for (size_t i = 0; i < len; i++)
            if (((const uint8_t *)buf)[i] != s->want[s->got + i]) {
                s->mismatch = (int)(s->got + i) + 1;
                break;
            }
    }
    s->got += len;
    return 0;
}

/* A streamed XOR transform of STREAM_LEN bytes, checked. Returns the call's
 * code (0) or a failure recorded in w->err (-1), or the client error code. */
static int stream_xor(struct worker *w, amp_conn *c, uint64_t seed)
{
    uint8_t *in = random_bytes(STREAM_LEN, seed);
    uint8_t *want = malloc(STREAM_LEN);
    memcpy(want, in, STREAM_LEN);
    struct transform_params tp = { .op = XFORM_XOR, .value = XOR_VALUE, .length = STREAM_LEN };
    host_step_transform(&tp, want, STREAM_LEN);
    amp_step step = { .size = sizeof(amp_step), .kind = AMP_STEP_TRANSFORM,
                      .transform = { .op = AMP_OP_XOR, .value = XOR_VALUE } };
    struct src src = { in, STREAM_LEN, 0 };
    struct sink sink = { want, STREAM_LEN, 0, 0 };
    int rc = amp_stream(c, NULL, &step, 1, STREAM_LEN, src_read, &src, sink_write, &sink, NULL, 0);
    if (rc == 0 && (sink.mismatch || sink.got != STREAM_LEN)) {
        snprintf(w->err, sizeof w->err, "client %d: stream output wrong (got %zu, first bad %d)",
                 w->index, sink.got, sink.mismatch - 1);
        rc = -1000;
    }
    free(want);
    free(in);
    return rc;
}

/* A unary reverse and a unary histogram, checked. */
static int unary_pair(struct worker *w, amp_conn *c, uint64_t seed)
{
    size_t n = UNARY_LEN + (size_t)(seed % 97);
    uint8_t *in = random_bytes(n, seed), *want = malloc(n);
    host_step_reverse(in, want, n);
    void *out = NULL;
    size_t out_len = 0;
    int rc = amp_reverse(c, NULL, in, n, &out, &out_len);
    if (rc == 0 && (out_len != n || memcmp(out, want, n) != 0)) {
        snprintf(w->err, sizeof w->err, "client %d: reverse output wrong", w->index);
        rc = -1000;
    }
    amp_free(out);
    if (rc == 0) {
        amp_hist_params hp = { .type = AMP_TYPE_UINT8, .bins = 256 };
        amp_hist h = { 0 };
        rc = amp_histogram(c, NULL, &hp, in, n, &h);
        uint64_t counts[256] = { 0 };
        for (size_t i = 0; i < n; i++)
            counts[in[i]]++;
        if (rc == 0 && (h.bins != 256 || memcmp(h.counts, counts, sizeof counts) != 0)) {
            snprintf(w->err, sizeof w->err, "client %d: histogram wrong", w->index);
            rc = -1000;
        }
        amp_hist_free(&h);
    }
    free(want);
    free(in);
    return rc;
}

/* Records rc as w's failure unless it is 0 or already recorded. */
static void note(struct worker *w, amp_conn *c, const char *what, int rc)
{
    if (rc != 0 && !w->err[0])
        snprintf(w->err, sizeof w->err, "client %d: %s: %s: %s", w->index, what,
                 amp_strerror(rc), amp_last_message(c));
}

static void *mixed_worker(void *arg)
{
    struct worker *w = arg;
    amp_conn *c = NULL;
    int rc = amp_connect(w->address, &c);
    note(w, c, "connect", rc);
    for (int r = 0; rc == 0 && r < ROUNDS; r++) {
        uint64_t seed = (uint64_t)w->index * 1000 + (uint64_t)r;
        rc = stream_xor(w, c, seed);
        note(w, c, "stream", rc);
        if (rc == 0) {
            rc = unary_pair(w, c, seed);
            note(w, c, "unary", rc);
        }
        w->calls_ok += rc == 0 ? 3 : 0;
    }
    amp_close(c);
    return NULL;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

START_TEST(many_connections_across_loops)
{
    struct daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, loop_args), 0);
    struct worker w[CLIENTS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < CLIENTS; i++) {
        w[i].address = d.address;
        w[i].index = i;
        ck_assert_int_eq(pthread_create(&w[i].thread, NULL, mixed_worker, &w[i]), 0);
    }
    unsigned ok = 0;
    for (int i = 0; i < CLIENTS; i++) {
        pthread_join(w[i].thread, NULL);
        ok += w[i].calls_ok;
    }
    for (int i = 0; i < CLIENTS; i++)
        ck_assert_msg(!w[i].err[0], "%s", w[i].err);
    ck_assert_uint_eq(ok, CLIENTS * ROUNDS * 3);

    /* Daemon-wide counts, whichever loop answers: every job counted once,
     * and the connections, memory and jobs of the clients gone are back
     * to none but this one. */
    amp_conn *c = NULL;
    ck_assert_int_eq(amp_connect(d.address, &c), 0);
    amp_daemon_status st = { .size = sizeof st };
    long long deadline = now_ms() + SETTLE_MS;
    for (;;) {
        ck_assert_int_eq(amp_status(c, NULL, &st), 0);
        if ((st.connections == 1 && st.held_bytes == 0 && st.jobs_in_flight == 0) ||
            now_ms() > deadline)
            break;
        sleep_ms(POLL_MS);
    }
    ck_assert_uint_eq(st.connections, 1);
    ck_assert_uint_eq(st.held_bytes, 0);
    ck_assert_uint_eq(st.jobs_in_flight, 0);
    ck_assert_uint_eq(st.jobs_completed, CLIENTS * ROUNDS * 3);
    ck_assert_uint_eq(st.jobs_failed, 0);
    ck_assert_uint_ge(st.calls[0], CLIENTS * ROUNDS * 3);
    amp_close(c);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

/* Connections opened at once, none of them busy yet, end up two on each
 * loop: the acceptor counts one handed to a loop until that loop holds
 * it, so a burst of accepts does not pile onto a loop that looks empty
 * (two busy streams on one loop share its thread and run at half speed).
 * Status reports each loop's count. */
START_TEST(a_burst_spreads_over_loops)
{
    struct daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, loop_args), 0);
    enum { LOOPS = 4, PER_LOOP = 2, CONNS = LOOPS * PER_LOOP };
    amp_conn *c[CONNS];   /* c[0] stays; each round opens the others at once */
    ck_assert_int_eq(amp_connect(d.address, &c[0]), 0);
    amp_daemon_status st = { .size = sizeof st };
    long long deadline = now_ms() + SETTLE_MS;   /* daemon_start's probe closes first */
    while (amp_status(c[0], NULL, &st) == 0 && st.connections > 1 && now_ms() < deadline)
        sleep_ms(POLL_MS);
    for (int round = 0; round < 3; round++) {
        for (int i = 1; i < CONNS; i++)
            ck_assert_int_eq(amp_connect(d.address, &c[i]), 0);
        int serving;
        for (int i = 1; i < CONNS; i++)   /* after the burst: each was accepted */
            ck_assert_int_eq(amp_health(c[i], NULL, NULL, &serving), 0);
        ck_assert_int_eq(amp_status(c[0], NULL, &st), 0);
        ck_assert_uint_eq(st.connections, CONNS);
        ck_assert_uint_eq(st.nloops, LOOPS);
        for (int l = 0; l < LOOPS; l++)
            ck_assert_msg(st.loop_connections[l] == PER_LOOP,
                          "round %d: loop %d serves %u of %d connections, not %d", round, l,
                          st.loop_connections[l], CONNS, PER_LOOP);
        for (int i = 1; i < CONNS; i++)
            amp_close(c[i]);
        deadline = now_ms() + SETTLE_MS;
        while (amp_status(c[0], NULL, &st) == 0 && st.connections > 1 && now_ms() < deadline)
            sleep_ms(POLL_MS);
        ck_assert_uint_eq(st.connections, 1);
    }
    amp_close(c[0]);
    ck_assert_int_eq(daemon_stop(&d), 0);
}
END_TEST

static void *stream_worker(void *arg)
{
    struct worker *w = arg;
    amp_conn *c = NULL;
    int rc = amp_connect(w->address, &c);
    note(w, c, "connect", rc);
    for (int r = 0; rc == 0 && !atomic_load(w->stop); r++) {
        rc = stream_xor(w, c, (uint64_t)w->index * 1000 + (uint64_t)r);
        if (rc == 0)
            atomic_fetch_add(w->streams_done, 1);
    }
    /* The drain may refuse the next call (GOAWAY) or end the connection:
     * any clean error is fine, a wrong result is not. */
    if (rc != -1000)
        w->err[0] = '\0';
    amp_close(c);
    return NULL;
}

START_TEST(drain_under_load)
{
    struct daemon_proc d;
    ck_assert_int_eq(daemon_start(&d, loop_args), 0);
    struct worker w[CLIENTS];
    memset(w, 0, sizeof w);
    atomic_bool stop = false;
    atomic_int streams_done = 0;
    for (int i = 0; i < CLIENTS; i++) {
        w[i].address = d.address;
        w[i].index = i;
        w[i].stop = &stop;
        w[i].streams_done = &streams_done;
        ck_assert_int_eq(pthread_create(&w[i].thread, NULL, stream_worker, &w[i]), 0);
    }
    /* Every client has streamed at least once on average: all are busy. */
    long long deadline = now_ms() + SETTLE_MS;
    while (atomic_load(&streams_done) < CLIENTS && now_ms() < deadline)
        sleep_ms(POLL_MS);
    ck_assert_int_ge(atomic_load(&streams_done), CLIENTS);
    ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
    ck_assert_int_eq(daemon_wait(&d), 0);   /* a clean drain, on every loop */
    atomic_store(&stop, true);
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(w[i].thread, NULL);
    for (int i = 0; i < CLIENTS; i++)
        ck_assert_msg(!w[i].err[0], "%s", w[i].err);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("io_loops");
    const TTest *const tests[] = {
        many_connections_across_loops,
        a_burst_spreads_over_loops,
        drain_under_load,
        NULL,
    };
    check_run_case(s, "io_loops", tests);
    return check_run(s, CK_FORK_GETENV);
}
