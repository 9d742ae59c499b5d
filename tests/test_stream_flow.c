/* SPDX-License-Identifier: MIT */
/* test_stream_flow.c: backpressure and clean-up of streams in a real ampd
 * with a small staging pool (--staging-bytes 4M --chunk-bytes 1M: four
 * buffers, at most two per stream).
 *
 * - A libampclient stream whose output callback holds (the library stops
 *   reading and sending): the daemon's RSS stays put, another client's
 *   unary job and stream (which needs staging buffers from the same pool)
 *   proceed meanwhile, and once released the held stream finishes with the
 *   right bytes. A client that keeps sending while it does not read is
 *   tests/test_stream_stalled.py (grpcio can do that).
 * - A client process that dies mid-stream: the daemon frees the stream
 *   (jobs in flight back to 0, every staging buffer usable again by a
 *   stream that needs them) and keeps serving; a leak would fail the
 *   daemon's exit status under LeakSanitizer.
 */
#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_run.h"
#include "amp.h"
#include "daemon_proc.h"

#define MIB (1024u * 1024u)
#define STALL_INPUT (256ull * MIB)   /* far more than the daemon may hold */
#define STALL_BOUND (48ull * MIB)    /* what a stalled stream may take in at most */
#define RSS_BOUND (48ull * MIB)      /* daemon growth allowed while it is stalled */
#define DIE_AFTER (8ull * MIB)
#define SETTLE_MS 600                /* input unchanged this long: the stream is stalled */
#define WAIT_MS 30000                /* give up waiting for a state after this */

static struct daemon_proc ampd;

static void start(void)
{
    static const char *const args[] = {"--staging-bytes", "4M", "--chunk-bytes", "1M", NULL};
    ck_assert_int_eq(daemon_start(&ampd, args), 0);
}

static void stop(void)
{
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t daemon_rss(void)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)ampd.pid);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    uint64_t kib = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %lu kB", &kib) == 1)
            break;
    fclose(f);
    return kib * 1024;
}

/* Input byte i of the generated streams. */
static uint8_t gen(uint64_t i)
{
    return (uint8_t)(i * 2654435761u >> 13);
}

/* --- the stalled client ------------------------------------------------------ */

struct stalled {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint64_t sent;       /* input bytes handed to the library */
    uint64_t got;        /* output bytes received and checked */
    bool blocked;        /* the write callback is holding */
    bool release;
    bool bad;            /* an output byte was wrong */
    int rc;
    bool done;
};

static long stalled_read(void *ctx, void *buf, size_t cap)
{
    struct stalled *s = ctx;
    pthread_mutex_lock(&s->lock);
    uint64_t pos = s->sent;
    pthread_mutex_unlock(&s->lock);
    size_t n = STALL_INPUT - pos < cap ? (size_t)(STALL_INPUT - pos) : cap;
    for (size_t i = 0; i < n; i++)
        ((uint8_t *)buf)[i] = gen(pos + i);
    pthread_mutex_lock(&s->lock);
    s->sent += n;
    pthread_mutex_unlock(&s->lock);
    return (long)n;
}

static int stalled_write(void *ctx, const void *buf, size_t len)
{
    struct stalled *s = ctx;
    pthread_mutex_lock(&s->lock);
    s->blocked = true;
    pthread_cond_broadcast(&s->cond);
    while (!s->release)
        pthread_cond_wait(&s->cond, &s->lock);
    s->blocked = false;
    uint64_t pos = s->got;
    pthread_mutex_unlock(&s->lock);
    for (size_t i = 0; i < len; i++)
        if (((const uint8_t *)buf)[i] != (uint8_t)(gen(pos + i) ^ 0x5a))
            s->bad = true;
    s->got += len;
    return 0;
}

static void *stalled_main(void *arg)
{
    struct stalled *s = arg;
    amp_conn *c;
    int rc = amp_connect(ampd.address, &c);
    if (rc == 0) {
        amp_step step = {.size = sizeof(amp_step), .kind = AMP_STEP_TRANSFORM,
                         .transform = {.op = AMP_OP_XOR, .value = 0x5a}};
        rc = amp_stream(c, NULL, &step, 1, STALL_INPUT, stalled_read, s, stalled_write, s, NULL,
                        0);
        amp_close(c);
    }
    pthread_mutex_lock(&s->lock);
    s->rc = rc;
    s->done = true;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static uint64_t stalled_sent(struct stalled *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t v = s->sent;
    pthread_mutex_unlock(&s->lock);
    return v;
}

/* Another client's work while the first is stalled. */
static void other_client_proceeds(void)
{
    amp_conn *c;
    ck_assert_int_eq(amp_connect(ampd.address, &c), 0);
    const char in[] = "other clients proceed";
    void *out = NULL;
    size_t out_len = 0;
    int rc = amp_reverse(c, NULL, in, sizeof in - 1, &out, &out_len);
    ck_assert_msg(rc == 0, "reverse: %s: %s", amp_strerror(rc), amp_last_message(c));
    ck_assert_uint_eq(out_len, sizeof in - 1);
    ck_assert_int_eq(((char *)out)[0], 'd');
    amp_free(out);

    /* A histogram stream of 3 MiB needs staging buffers too. */
    amp_step step = {.size = sizeof(amp_step), .kind = AMP_STEP_HISTOGRAM,
                     .hist = {.type = AMP_TYPE_UINT8}};
    amp_hist h;
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    pid_t writer = fork();
    if (writer == 0) {
        static uint8_t zeros[64 * 1024];
        for (int i = 0; i < 48; i++)
            if (write(fd[1], zeros, sizeof zeros) != (ssize_t)sizeof zeros)
                _exit(1);
        _exit(0);
    }
    close(fd[1]);
    rc = amp_stream_fd(c, NULL, &step, 1, 0, fd[0], -1, &h, 1);
    close(fd[0]);
    waitpid(writer, NULL, 0);
    ck_assert_msg(rc == 0, "stream: %s: %s", amp_strerror(rc), amp_last_message(c));
    ck_assert_uint_eq(h.counts[0], 48 * 64 * 1024);
    amp_hist_free(&h);
    amp_close(c);
}

START_TEST(held_stream_others_proceed)
{
    struct stalled s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.lock, NULL);
    pthread_cond_init(&s.cond, NULL);
    uint64_t rss0 = daemon_rss();
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, stalled_main, &s), 0);

    /* Wait for the first result to be held, then for the input to stop. */
    pthread_mutex_lock(&s.lock);
    while (!s.blocked && !s.done)
        pthread_cond_wait(&s.cond, &s.lock);
    pthread_mutex_unlock(&s.lock);
    ck_assert_msg(!s.done, "the stream ended early: %s", amp_strerror(s.rc));
    uint64_t last = stalled_sent(&s), since = now_ms(), start_ms = now_ms();
    while (now_ms() - since < SETTLE_MS) {
        ck_assert_msg(now_ms() - start_ms < WAIT_MS, "the stalled stream never stopped taking input");
        usleep(50 * 1000);
        uint64_t v = stalled_sent(&s);
        if (v != last) {
            last = v;
            since = now_ms();
        }
    }
    ck_assert_msg(last <= STALL_BOUND, "a client that stopped reading pushed %llu bytes",
                  (unsigned long long)last);
    uint64_t rss = daemon_rss();
    ck_assert_msg(rss < rss0 + RSS_BOUND, "daemon RSS grew from %llu to %llu",
                  (unsigned long long)rss0, (unsigned long long)rss);

    other_client_proceeds();

    pthread_mutex_lock(&s.lock);
    s.release = true;
    pthread_cond_broadcast(&s.cond);
    while (!s.done)
        pthread_cond_wait(&s.cond, &s.lock);
    pthread_mutex_unlock(&s.lock);
    pthread_join(t, NULL);
    ck_assert_msg(s.rc == 0, "the stalled stream failed: %s", amp_strerror(s.rc));
    ck_assert_uint_eq(s.sent, STALL_INPUT);
    ck_assert_uint_eq(s.got, STALL_INPUT);
    ck_assert(!s.bad);
}
END_TEST

/* --- a client that dies mid-stream ------------------------------------------- */

static long dying_read(void *ctx, void *buf, size_t cap)
{
    uint64_t *pos = ctx;
    if (*pos >= DIE_AFTER)
        _exit(0);   /* the process vanishes; the kernel closes its socket */
    memset(buf, 7, cap);
    *pos += cap;
    return (long)cap;
}

static int discard_write(void *ctx, const void *buf, size_t len)
{
    (void)ctx;
    (void)buf;
    (void)len;
    return 0;
}

static void wait_idle(void)
{
    amp_conn *c;
    ck_assert_int_eq(amp_connect(ampd.address, &c), 0);
    uint64_t t0 = now_ms();
    for (;;) {
        amp_daemon_status st = { .size = sizeof st };
        ck_assert_int_eq(amp_status(c, NULL, &st), 0);
        if (st.jobs_in_flight == 0)
            break;
        ck_assert_msg(now_ms() - t0 < WAIT_MS, "%u jobs still in flight", st.jobs_in_flight);
        usleep(20 * 1000);
    }
    amp_close(c);
}

START_TEST(client_dying_mid_stream_is_cleaned_up)
{
    for (int round = 0; round < 3; round++) {
        pid_t child = fork();
        ck_assert_int_ge(child, 0);
        if (child == 0) {
            amp_conn *c;
            if (amp_connect(ampd.address, &c) != 0)
                _exit(2);
            uint64_t pos = 0;
            amp_step steps[2] = {
                {.size = sizeof(amp_step), .kind = AMP_STEP_TRANSFORM,
                 .transform = {.op = AMP_OP_ADD, .value = 1}},
                {.size = sizeof(amp_step), .kind = AMP_STEP_HISTOGRAM,
                 .hist = {.type = AMP_TYPE_UINT8}},
            };
            amp_hist h;
            amp_stream(c, NULL, steps, 2, 0, dying_read, &pos, discard_write, NULL, &h, 1);
            _exit(3);   /* the stream should not have finished */
        }
        int status;
        ck_assert_int_eq(waitpid(child, &status, 0), child);
        ck_assert(WIFEXITED(status));
        ck_assert_int_eq(WEXITSTATUS(status), 0);
        wait_idle();
    }
    ck_assert(daemon_alive(&ampd));
    /* Every buffer is back: a whole stream through the pool still works. */
    other_client_proceeds();
    wait_idle();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream_flow");
    const TTest *const tests[] = {
        held_stream_others_proceed,
        client_dying_mid_stream_is_cleaned_up,
        NULL,
    };
    TCase *tc = check_run_case(s, "stream_flow", tests);
    tcase_add_checked_fixture(tc, start, stop);
    tcase_set_timeout(tc, 300);
    return check_run(s, CK_NOFORK);
}
