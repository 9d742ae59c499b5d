/* SPDX-License-Identifier: MIT */
/* bench_loop.c: many small calls in flight from one thread, the blocking
 * way beside the event-loop way (issue 38: the libuv loop must keep at
 * least 0.9 of the blocking path's calls/s).
 *
 * Both keep --in-flight (256) reverses of --len (64) bytes in flight on one
 * connection from one thread until --calls (100000) finished, each answer
 * checked, and replace each finished call at once:
 *
 *   - blocking: amp_start_reverse, then amp_wait(-1) for the next one
 *     (the path before amp_fd existed);
 *   - libuv: a uv_poll_t on amp_fd() calling amp_process(), each call
 *     finished through its amp_call_on_done() callback, the next started
 *     from there (examples/libuv_many.c's loop).
 *
 * The two run in turn, --reps (5) times each after one untimed run of
 * each, on a fresh connection each run, so that load from elsewhere on a
 * shared machine moves both; it prints each path's median calls/s and
 * their ratio (libuv / blocking). ampd is started by the bench (--ampd,
 * else $AMPD_BIN, else the build's) or found running (--address). Exit
 * status: 0, 1 when an answer was wrong, 2 when something failed to run.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "amp.h"
#include "bench_daemon.h"
#include "bench_util.h"

#define BENCH_CALLS_DEFAULT 100000
#define BENCH_IN_FLIGHT_DEFAULT 256
#define BENCH_LEN_DEFAULT 64
#define BENCH_LEN_MAX 4096
#define BENCH_REPS_DEFAULT 5
#define BENCH_REPS_MAX 64

/* BENCH_AMPD_DEFAULT comes from CMake: the build's own ampd. */

struct bench_opts {
    long calls, in_flight;
    size_t len;
    int reps;
    const char *ampd, *address;
};

/* One run's state, either path: a slot per call in flight, its input. */
struct bench_run {
    const struct bench_opts *o;
    amp_conn *c;
    uint8_t *in;          /* in_flight slots of len bytes */
    long started, finished, wrong;
    int error;
    uv_poll_t poll;       /* the libuv path's watcher on amp_fd() */
};

static struct bench_run run;   /* the libuv callbacks' context */

/* Call number n's input, in slot: distinct per call. */
static uint8_t *bench_input(long slot, long n)
{
    uint8_t *p = run.in + (size_t)slot * run.o->len;
    for (size_t i = 0; i < run.o->len; i++)
        p[i] = (uint8_t)(n * 131 + (long)i * 7);
    return p;
}

/* Checks a finished call's answer against its slot's input and frees it. */
static void bench_check(amp_call *call, long slot)
{
    const uint8_t *in = run.in + (size_t)slot * run.o->len;
    void *out;
    size_t n;
    int ok = amp_call_data(call, &out, &n) == 0 && n == run.o->len;
    for (size_t i = 0; ok && i < n; i++)
        ok = ((uint8_t *)out)[i] == in[n - 1 - i];
    if (ok)
        amp_free(out);
    else if (!run.wrong++)
        fprintf(stderr, "bench_loop: a wrong answer: %s\n", amp_call_message(call));
    amp_call_free(call);
    run.finished++;
}

static void bench_on_done(amp_call *call, void *user);

/* Starts the next call in slot; with_cb: through a callback. */
static void bench_start(long slot, int with_cb)
{
    long n = run.started++;
    amp_call *call;
    int rc = amp_start_reverse(run.c, NULL, bench_input(slot, n), run.o->len, &call);
    if (rc == 0)
        rc = with_cb ? amp_call_on_done(call, bench_on_done, (void *)(intptr_t)slot)
                     : (amp_call_set_user(call, (void *)(intptr_t)slot), 0);
    if (rc != 0 && !run.error) {
        fprintf(stderr, "bench_loop: start: %s: %s\n", amp_strerror(rc),
                amp_last_message(run.c));
        run.error = rc;
    }
}

static void bench_on_done(amp_call *call, void *user)
{
    long slot = (long)(intptr_t)user;
    bench_check(call, slot);
    if (run.started < run.o->calls && !run.error)
        bench_start(slot, 1);
}

static void bench_on_readable(uv_poll_t *poll, int status, int events)
{
    (void)events;
    int rc = status < 0 ? -1 : amp_process(run.c);
    if (rc != 0 && !run.error) {
        fprintf(stderr, "bench_loop: amp_process: %s\n", amp_last_message(run.c));
        run.error = rc;
    }
    if (run.error || run.finished == run.o->calls)
        uv_poll_stop(poll);
}

/* The blocking path: amp_wait hands back each finished call. */
static void bench_blocking(void)
{
    for (long slot = 0; slot < run.o->in_flight; slot++)
        bench_start(slot, 0);
    amp_call *done;
    while (!run.error && run.finished < run.o->calls) {
        int rc = amp_wait(run.c, -1, &done);
        if (rc != 0) {
            fprintf(stderr, "bench_loop: amp_wait: %s\n", amp_last_message(run.c));
            run.error = rc;
            break;
        }
        long slot = (long)(intptr_t)amp_call_user(done);
        bench_check(done, slot);
        if (run.started < run.o->calls)
            bench_start(slot, 0);
    }
}

/* The libuv path: one loop, one watcher on amp_fd(). */
static void bench_libuv(void)
{
    uv_loop_t loop;
    if (uv_loop_init(&loop) != 0 || uv_poll_init(&loop, &run.poll, amp_fd(run.c)) != 0)
        bench_die("libuv set-up failed");
    for (long slot = 0; slot < run.o->in_flight; slot++)
        bench_start(slot, 1);
    uv_poll_start(&run.poll, UV_READABLE, bench_on_readable);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&run.poll, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
}

/* One run of a path on a fresh connection: its calls/s. */
static double bench_one(const struct bench_opts *o, const char *address, int libuv)
{
    memset(&run, 0, sizeof run);
    run.o = o;
    run.in = malloc((size_t)o->in_flight * o->len);
    if (!run.in)
        bench_die("out of memory");
    if (amp_connect(address, &run.c) != 0)
        bench_die("connect to %s: %s", address, amp_last_message(NULL));
    double t0 = bench_now();
    if (libuv)
        bench_libuv();
    else
        bench_blocking();
    double secs = bench_now() - t0;
    amp_close(run.c);
    free(run.in);
    if (run.error)
        exit(2);
    if (run.wrong)
        exit(1);
    return (double)run.finished / secs;
}

static void bench_usage(void)
{
    fprintf(stderr,
            "usage: bench_loop [--calls N] [--in-flight N] [--len N] [--reps N]\n"
            "                  [--ampd PATH | --address ADDR]\n"
            "  --calls     calls per run (default %d)\n"
            "  --in-flight calls kept in flight on the connection (default %d)\n"
            "  --len       input bytes per call (default %d, at most %d)\n"
            "  --reps      median of N runs of each path after one warm-up (default %d, at most %d)\n"
            "  --ampd      the ampd binary to start (default $AMPD_BIN, else the build's)\n"
            "  --address   a running ampd to use instead\n",
            BENCH_CALLS_DEFAULT, BENCH_IN_FLIGHT_DEFAULT, BENCH_LEN_DEFAULT, BENCH_LEN_MAX,
            BENCH_REPS_DEFAULT, BENCH_REPS_MAX);
    exit(2);
}

static void bench_parse(int argc, char **argv, struct bench_opts *o)
{
    *o = (struct bench_opts){ .calls = BENCH_CALLS_DEFAULT, .in_flight = BENCH_IN_FLIGHT_DEFAULT,
                              .len = BENCH_LEN_DEFAULT, .reps = BENCH_REPS_DEFAULT };
    o->ampd = getenv("AMPD_BIN") ? getenv("AMPD_BIN") : BENCH_AMPD_DEFAULT;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            bench_usage();
        const char *v = argv[++i];
        if (strcmp(argv[i - 1], "--calls") == 0)
            o->calls = atol(v);
        else if (strcmp(argv[i - 1], "--in-flight") == 0)
            o->in_flight = atol(v);
        else if (strcmp(argv[i - 1], "--len") == 0)
            o->len = (size_t)atol(v);
        else if (strcmp(argv[i - 1], "--reps") == 0)
            o->reps = atoi(v);
        else if (strcmp(argv[i - 1], "--ampd") == 0)
            o->ampd = v;
        else if (strcmp(argv[i - 1], "--address") == 0)
            o->address = v;
        else
            bench_usage();
    }
    if (o->calls < 1 || o->in_flight < 1 || o->len < 1 || o->len > BENCH_LEN_MAX ||
        o->reps < 1 || o->reps > BENCH_REPS_MAX)
        bench_usage();
    if (o->in_flight > o->calls)
        o->in_flight = o->calls;
}

int main(int argc, char **argv)
{
    struct bench_opts o;
    bench_parse(argc, argv, &o);
    signal(SIGPIPE, SIG_IGN);
    struct bench_daemon dm = { 0 };
    char err[256];
    const char *address = o.address;
    if (!address) {
        if (bench_daemon_start(&dm, o.ampd, "bench-loop", NULL, err, sizeof err) != 0)
            bench_die("%s", err);
        address = dm.address;
    }
    printf("# %ld calls of %zu bytes per run, %ld in flight on one connection, one thread; "
           "median of %d runs after 1 warm-up\n", o.calls, o.len, o.in_flight, o.reps);
    fflush(stdout);
    bench_one(&o, address, 0);
    bench_one(&o, address, 1);
    double blocking[BENCH_REPS_MAX], libuv[BENCH_REPS_MAX];
    for (int r = 0; r < o.reps; r++) {
        blocking[r] = bench_one(&o, address, 0);
        libuv[r] = bench_one(&o, address, 1);
    }
    double b = bench_median(blocking, o.reps), u = bench_median(libuv, o.reps);
    printf("%-34s %12s\n", "path", "calls/s");
    printf("%-34s %12.0f\n", "blocking (amp_start + amp_wait)", b);
    printf("%-34s %12.0f\n", "libuv (amp_fd + amp_process + cb)", u);
    printf("ratio libuv / blocking: %.3f (target >= 0.9)\n", u / b);
    if (!o.address && bench_daemon_stop(&dm) != 0)
        return 2;
    return 0;
}
