/* SPDX-License-Identifier: MIT */
/* bench_tenants.c: one client's small jobs beside another client's bulk
 * work (issue 34, its benchmark).
 *
 * ampd is shared, and judged by its worst tenant. Client A runs tiny jobs,
 * client B bulk work, as two clients the way ampd counts them (two tokens
 * on a TCP listener: a client is its token's name). In one run:
 *
 *   - A's three measures, each from a paced schedule (a call due every
 *     --period-us; latency counted from when it was due, as HdrHistogram
 *     corrects for coordinated omission: a client that simply waits for
 *     each reply hides its stalls): a 16-byte Reverse and a 64 KiB
 *     Transform on the named device (--device; not the host path), and a
 *     16-byte Reverse on the host path (no device named); a measure
 *     during which the hypervisor took CPU time (BT_STEAL_MAX) is taken
 *     again;
 *   - B's shapes: --streams Stream transforms of --bulk-bytes each, and
 *     --unary-calls concurrent unary transforms of --unary-bytes, each
 *     call on its own connection, started again as soon as it ends, on
 *     A's device or on --device-b (two tenants on two GPUs), from a
 *     process of B's own, as a second program's would be
 *     (--b-in-process: threads of this one);
 *   - each A measure alone, beside each B shape on the same ampd, and
 *     beside the same B load sent to a second ampd that shares only the
 *     host (CPU, and on one device the device) with A's: the floor, what
 *     sharing the machine costs before any scheduling in ampd does;
 *   - B's throughput alone, beside A, on the second ampd beside A, and
 *     alone again (its alone is the mean of the two: the host drifts);
 *   - two bulk clients of weights 3 and 1 (token file weight=) at once,
 *     each keeping --streams region transforms of --unary-bytes in flight
 *     on the Unix socket (streams where there is none: those are bound by
 *     their sockets, not the device), and their throughput split;
 *   - A's 16-byte device Reverse at priority high beside B's unary load
 *     sent by the same client (A's token) at priority low.
 *
 * Every A result is checked (reverse against a CPU reversal, transform
 * against the CPU's add, the host path's reply naming "host" and the
 * device's not), and B's output bytes at a stride. Exit status: 0; 1 when
 * a result differs; 2 when something failed to run, or an ampd it started
 * did not exit 0 after SIGTERM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "amp.h"
#include "bench_daemon.h"
#include "bench_sched.h"
#include "bench_util.h"

#define BT_BULK_BYTES_DEFAULT (1ull << 30)
#define BT_STREAMS_DEFAULT 4
#define BT_UNARY_BYTES_DEFAULT (32ull << 20)
#define BT_UNARY_CALLS_DEFAULT 16
#define BT_SECONDS_DEFAULT 3.0
#define BT_WARMUP_DEFAULT 1.0
#define BT_PERIOD_US_DEFAULT 1000
#define BT_MAX_WORKERS 64           /* B's streams or concurrent unary calls */
#define BT_REVERSE_BYTES 16         /* A's tiny jobs: the ampctl bench default */
#define BT_TRANSFORM_BYTES (64u << 10)
#define BT_ADD_VALUE 0x5a
#define BT_SEED_A 3401
#define BT_SEED_B 3402
#define BT_CHECK_STRIDE 4093        /* B's output byte checked every this many (a prime) */
#define BT_MESSAGE_MIN (64ull << 20) /* room for the stream replies of any --chunk-bytes */
#define BT_MESSAGE_SLACK (1ull << 20)
#define BT_STREAM_HOLD (64ull << 20)   /* what one stream may hold in the daemon, at most */
#define BT_MEMORY_SLACK (256ull << 20) /* A's calls and the daemon's own */
#define BT_TOKEN_BYTES 16           /* random bytes of each token, in hex */
#define BT_IDLE_POLL_MS 10
#define BT_IDLE_WAIT_S 120          /* for a daemon to finish a phase's jobs */
#define BT_WEIGHT_HEAVY 3           /* the weights phase's two clients (token file weight=) */
#define BT_WEIGHT_LIGHT 1
#define BT_SAMPLE_US 1000           /* --sched-stats: A's ampd's I/O loops sampled this often */
#define BT_EXIT_WRONG 3              /* B's process: a result was wrong (bt_fail said which) */
#define BT_LONG_TURN_BUCKET 11       /* loop turns counted long: bucket 11 on, 1,024 us or more */
/* An A measure during which the hypervisor took more than this share of
 * the host's CPUs (steal) is taken again, at most BT_MEASURE_TRIES times
 * in all, and the least stolen kept: on the H200 host a measure with 1%
 * stolen had its p99 at 2-7x the same measure's without, alone as well as
 * beside B, which says nothing of ampd either way. */
#define BT_STEAL_MAX 0.005
#define BT_MEASURE_TRIES 3

/* BENCH_AMPD_DEFAULT, the ampd binary when neither --ampd nor $AMPD_BIN
 * names one, comes from CMake: the build's own ampd. */

/* The clients, as tokens of the token file. */
enum bt_client { C_A, C_B, C_HEAVY, C_LIGHT, C_COUNT };

struct bt_opts {
    uint64_t bulk_bytes;
    int streams;
    uint64_t unary_bytes;
    int unary_calls;
    double seconds;              /* each A measure */
    double warmup;               /* B's load before anything is timed */
    int period_us;               /* A's schedule */
    const char *device;          /* A's device jobs */
    const char *device_b;        /* the bulk load's (--device-b; default --device) */
    const char *ampd;
    const char *address;         /* a running ampd instead of starting one */
    const char *floor_address;   /* with --address: the second ampd, or none */
    const char *token[C_COUNT];  /* with --address: each client's token (enum bt_client); the
                                  * weights phase runs when both weighted ones are given */
    bool no_floor;
    unsigned shapes;             /* bit s: B's shape s runs (--shapes) */
    bool sched_stats;            /* --sched-stats: where A's slowest calls waited */
    bool unix_socket;            /* --unix: the clients on the ampds' Unix sockets, not TCP */
    int a_busy_poll_us;          /* A's amp_connect_opts.busy_poll_us (--a-busy-poll-us) */
    bool b_in_process;           /* --b-in-process: B's threads in this process, not its own */
    const char *const *ampd_args; /* after "--": to every ampd it starts */
};

/* Where a client's calls go, and as whom. */
struct bt_target {
    const char *address;
    const char *token;    /* NULL: none (a Unix socket: the uid is the client) */
    const char *priority; /* amp-priority of every call; NULL: none sent (normal) */
    int busy_poll_us;     /* amp_connect_opts.busy_poll_us (0: the library's default) */
    bool server_timing;   /* amp_connect_opts.server_timing (--sched-stats, A's calls) */
};

static atomic_int bt_failures;   /* wrong results, from any thread */
static pid_t bt_ampd_pid;        /* A's ampd when this run started it; 0: not known */

static void bt_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void bt_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench_tenants: wrong result: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    atomic_fetch_add(&bt_failures, 1);
}

static amp_conn *bt_connect(const struct bt_target *t)
{
    amp_connect_opts co = {.size = sizeof co, .token = t->token, .priority = t->priority,
                           .busy_poll_us = t->busy_poll_us, .server_timing = t->server_timing};
    amp_conn *c;
    if (amp_connect_with(t->address, &co, &c) != 0)
        bench_die("connect to %s: %s", t->address, amp_last_message(NULL));
    return c;
}

/* --- A: tiny calls on a paced schedule ------------------------------------------------ */

enum bt_measure { M_DEV_REVERSE, M_DEV_TRANSFORM, M_HOST_REVERSE, M_COUNT };

static const struct {
    const char *name;
    size_t size;
    bool transform;
    bool host;   /* no device named: the host path */
} bt_measures[M_COUNT] = {
    [M_DEV_REVERSE] = {"16 B reverse, device", BT_REVERSE_BYTES, false, false},
    [M_DEV_TRANSFORM] = {"64 KiB transform, device", BT_TRANSFORM_BYTES, true, false},
    [M_HOST_REVERSE] = {"16 B reverse, host path", BT_REVERSE_BYTES, false, true},
};

/* The daemon's server-timing entries A's slow calls are summed by. */
enum bt_timing { T_TOTAL, T_REQUEST, T_QUEUE, T_RUN, T_DELIVER, BT_TIMING_COUNT };
static const char *const bt_timing_names[BT_TIMING_COUNT] = {"total", "request", "queue", "run",
                                                             "deliver"};

/* --sched-stats: means over a set of A's calls, us: latency from when due,
 * duration from its send, A's own thread on a CPU and waiting runnable
 * for one during them, and the daemon's times (server-timing: headers
 * to reply ready, and of it request, queued, run, delivered). */
struct bt_calls {
    double lat, dur, run, wait;
    double daemon[BT_TIMING_COUNT];
};

struct bt_lat {
    bool done;
    uint64_t calls;          /* calls made (the schedule's, less those A fell behind on) */
    double rate;             /* calls/s over the schedule's span */
    double p50, p99, p999;   /* microseconds from when each call was due */
    /* --sched-stats: the calls at or above p99, and every call; A's
     * ampd's threads' waits for a CPU (ms per second, all threads
     * together). Always: the host's busy CPU share and the share its
     * hypervisor took (steal) over the measure. */
    struct bt_calls slow, all;
    double cpu_busy, cpu_steal, ampd_wait;
    int tries;   /* which try of the measure this is (BT_STEAL_MAX) */
    double ampd_faults, own_faults, tlb;   /* per second: minor faults of A's ampd and of
                                            * this process, the host's TLB shootdowns */
    char ampd_cpus[256];   /* A's ampd's threads by kind: "ampd-io x16 0.41, ..." CPUs */
    char loops[512];       /* A's ampd's I/O loops sampled: running, or asleep where */
    /* --sched-stats: A's ampd's loop turns over the measure (amp_status's
     * loop_turn_buckets): per second, those of 1 ms or longer per second,
     * and the longest bucket's upper edge, us */
    double turns, long_turns;
    uint64_t longest_turn_us;
    /* --sched-stats: A's largest latency and when in the measure it came
     * (s), its longest call from its send (us) and its own thread's wait
     * for a CPU in it, and its longest delay before a send: from when the
     * call could have gone (its due time, or the last call's end when
     * later) to when it went (us) */
    double peak, peak_at, longest_call, longest_call_wait, longest_gap;
};

/* A's input and the results it must get back. */
struct bt_a_data {
    uint8_t in[BT_TRANSFORM_BYTES];
    uint8_t reversed[BT_REVERSE_BYTES];
    uint8_t added[BT_TRANSFORM_BYTES];
};

static void bt_a_data_make(struct bt_a_data *d)
{
    bench_random(d->in, sizeof d->in, BT_SEED_A);
    for (size_t i = 0; i < BT_REVERSE_BYTES; i++)
        d->reversed[i] = d->in[BT_REVERSE_BYTES - 1 - i];
    for (size_t i = 0; i < BT_TRANSFORM_BYTES; i++)
        d->added[i] = (uint8_t)(d->in[i] + BT_ADD_VALUE);
}

static void bt_sleep_until(double t)
{
    struct timespec ts = {.tv_sec = (time_t)t, .tv_nsec = (long)((t - floor(t)) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* One of A's calls, its result checked. Returns 0, or the call's code. */
static int bt_a_call(amp_conn *c, const amp_opts *ao, enum bt_measure m, const struct bt_a_data *d)
{
    void *out = NULL;
    size_t len = 0;
    const uint8_t *want = bt_measures[m].transform ? d->added : d->reversed;
    int rc;
    if (bt_measures[m].transform) {
        amp_transform_params p = {.op = AMP_OP_ADD, .value = BT_ADD_VALUE};
        rc = amp_transform(c, ao, &p, d->in, bt_measures[m].size, &out, &len);
    } else {
        rc = amp_reverse(c, ao, d->in, bt_measures[m].size, &out, &len);
    }
    if (rc != 0)
        return rc;
    if (len != bt_measures[m].size || memcmp(out, want, len) != 0)
        bt_fail("A's %s", bt_measures[m].name);
    bool on_host = strcmp(amp_last_device(c), "host") == 0;
    if (on_host != bt_measures[m].host)
        bt_fail("A's %s ran on \"%s\"", bt_measures[m].name, amp_last_device(c));
    amp_free(out);
    return 0;
}

static double bt_percentile(const double *sorted, size_t n, double q)
{
    size_t i = (size_t)ceil(q * (double)n);
    return sorted[i ? i - 1 : 0];
}

/* The means over A's calls whose latency is at least min_lat (us). */
static struct bt_calls bt_calls_mean(const struct bt_calls *call, size_t n, double min_lat)
{
    struct bt_calls sum = {0};
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (call[i].lat < min_lat)
            continue;
        sum.lat += call[i].lat;
        sum.dur += call[i].dur;
        sum.run += call[i].run;
        sum.wait += call[i].wait;
        for (int g = 0; g < BT_TIMING_COUNT; g++)
            sum.daemon[g] += call[i].daemon[g];
        k++;
    }
    double div = k ? (double)k : 1;
    sum.lat /= div;
    sum.dur /= div;
    sum.run /= div;
    sum.wait /= div;
    for (int g = 0; g < BT_TIMING_COUNT; g++)
        sum.daemon[g] /= div;
    return sum;
}

/* The daemon's times of the last call on c (its server-timing), us; 0
 * where it sent none. */
static void bt_server_timing(const amp_conn *c, double daemon[BT_TIMING_COUNT])
{
    const char *text = amp_last_server_timing(c);
    for (int t = 0; t < BT_TIMING_COUNT; t++) {
        char key[32];
        snprintf(key, sizeof key, "%s;dur=", bt_timing_names[t]);
        const char *p = strstr(text, key);
        daemon[t] = p ? strtod(p + strlen(key), NULL) * 1e3 : 0;
    }
}

/* A's ampd's threads by kind since `from`, as CPUs busy over secs, into
 * text: "ampd-io x16 0.41, ampd-runner x1 0.95, ...". Returns their waits
 * for a CPU since then, all together, in ms per second. */
static double bt_ampd_cpus(const struct bench_sched_kinds *from, double secs, char *text,
                           size_t len)
{
    static struct bench_sched_kinds now;
    bench_sched_process_kinds(bt_ampd_pid, &now);
    size_t at = 0;
    double wait_ms = 0;
    text[0] = '\0';
    for (size_t i = 0; i < now.n; i++) {
        uint64_t run0 = 0, wait0 = 0;
        for (size_t k = 0; k < from->n; k++)
            if (strcmp(from->kind[k].name, now.kind[i].name) == 0) {
                run0 = from->kind[k].run_ns;
                wait0 = from->kind[k].wait_ns;
            }
        /* A kind whose threads ended since may have less than before. */
        if (now.kind[i].wait_ns > wait0)
            wait_ms += (double)(now.kind[i].wait_ns - wait0) / 1e6;
        double cpus = now.kind[i].run_ns > run0 ? (double)(now.kind[i].run_ns - run0) / 1e9 / secs
                                                : 0;
        if (cpus < 0.005 || at >= len)
            continue;
        int w = snprintf(text + at, len - at, "%s%s x%u %.2f", at ? ", " : "",
                         now.kind[i].name[0] ? now.kind[i].name : "(unnamed)",
                         now.kind[i].threads, cpus);
        at += w > 0 ? (size_t)w : 0;
    }
    return wait_ms / secs;
}

/* The ampd at t's Status, on a connection of its own; valid until the
 * next call. Dies when it cannot be had. */
static const amp_daemon_status *bt_status(const struct bt_target *t)
{
    static amp_daemon_status st;
    st.size = sizeof st;
    amp_conn *c = bt_connect(t);
    int rc = amp_status(c, NULL, &st);
    if (rc != 0)
        bench_die("status of %s: %s (%s)", t->address, amp_strerror(rc), amp_last_message(c));
    amp_close(c);
    return &st;
}

/* The loop turns A's ampd at t has counted so far, by bucket. */
static void bt_loop_turns(const struct bt_target *t, uint64_t buckets[AMP_LATENCY_BUCKETS])
{
    const amp_daemon_status *st = bt_status(t);
    memcpy(buckets, st->loop_turn_buckets, sizeof st->loop_turn_buckets);
}

/* The turns between two bt_loop_turns() over secs into r. */
static void bt_loop_turns_between(const uint64_t from[AMP_LATENCY_BUCKETS],
                                  const uint64_t to[AMP_LATENCY_BUCKETS], double secs,
                                  struct bt_lat *r)
{
    uint64_t all = 0, lng = 0;
    r->longest_turn_us = 0;
    for (unsigned i = 0; i < AMP_LATENCY_BUCKETS; i++) {
        uint64_t n = to[i] - from[i];
        all += n;
        if (i >= BT_LONG_TURN_BUCKET)
            lng += n;
        if (n)
            r->longest_turn_us = (uint64_t)1 << i;
    }
    r->turns = (double)all / secs;
    r->long_turns = (double)lng / secs;
}

/* --sched-stats: call k's part in b's peak .. longest_gap; k ended at
 * s into the measure, and its send came behind_us after it could have. */
static void bt_backlog_note(struct bt_lat *b, const struct bt_calls *k, double behind_us,
                            double at)
{
    if (k->lat > b->peak) {
        b->peak = k->lat;
        b->peak_at = at;
    }
    if (k->dur > b->longest_call) {
        b->longest_call = k->dur;
        b->longest_call_wait = k->wait;
    }
    if (behind_us > b->longest_gap)
        b->longest_gap = behind_us;
}

/* A's measure m for --seconds: a call due every --period-us from the
 * first; one that is late starts at once, and its latency still counts
 * from when it was due. No call starts after --seconds: a call due by
 * then but not made (A fell behind) counts with its wait until the end,
 * a lower bound, so that a stall neither hides nor stretches the run. */
static struct bt_lat bt_a_measure(const struct bt_target *t, const struct bt_opts *o,
                                  enum bt_measure m, const struct bt_a_data *d)
{
    amp_conn *c = bt_connect(t);
    amp_opts ao = {.size = sizeof ao, .device = bt_measures[m].host ? NULL : o->device};
    int rc = bt_a_call(c, &ao, m, d);   /* warm-up, not counted */
    double period = o->period_us / 1e6;
    size_t due_n = (size_t)ceil(o->seconds / period), made = 0;
    double *lat = bench_alloc_touched(due_n * sizeof *lat);
    struct bt_calls *call = o->sched_stats ? bench_alloc_touched(due_n * sizeof *call) : NULL;
    static uint64_t turns0[AMP_LATENCY_BUCKETS], turns1[AMP_LATENCY_BUCKETS];
    if (call)
        bt_loop_turns(t, turns0);
    struct bench_sched_thread self = {-1};
    if (call)
        bench_sched_thread_open(&self);
    struct bench_sched_cpu cpu0 = bench_sched_cpu_now();   /* steal: always */
    uint64_t faults0[2] = {bt_ampd_pid ? bench_sched_minor_faults(bt_ampd_pid) : 0,
                           bench_sched_minor_faults(0)};
    uint64_t tlb0 = bench_sched_tlb_shootdowns();
    static struct bench_sched_kinds kinds0;
    static struct bench_sched_sampler loops;
    static const char *const loop_names[] = {"ampd-io", NULL};
    bool sampling = call && bt_ampd_pid &&
                    bench_sched_sampler_start(&loops, bt_ampd_pid, loop_names, BT_SAMPLE_US) == 0;
    if (call && bt_ampd_pid)
        bench_sched_process_kinds(bt_ampd_pid, &kinds0);
    struct bt_lat backlog = {0};
    double start = bench_now(), stop = start + o->seconds, end = start;
    for (; made < due_n && rc == 0 && end < stop; made++) {
        double due = start + (double)made * period;
        if (end < due)
            bt_sleep_until(due);
        uint64_t r0 = 0, w0 = 0, r1, w1;
        if (call)
            bench_sched_thread_times(&self, &r0, &w0);
        double sent = bench_now(), behind = (sent - (end > due ? end : due)) * 1e6;
        rc = bt_a_call(c, &ao, m, d);
        end = bench_now();
        lat[made] = (end - due) * 1e6;
        if (call) {
            bench_sched_thread_times(&self, &r1, &w1);
            struct bt_calls *k = &call[made];
            k->lat = lat[made];
            k->dur = (end - sent) * 1e6;
            k->run = (double)(r1 - r0) / 1e3;
            k->wait = (double)(w1 - w0) / 1e3;
            bt_server_timing(c, k->daemon);
            bt_backlog_note(&backlog, k, made ? behind : 0, end - start);
        }
    }
    struct bench_sched_cpu cpu1 = bench_sched_cpu_now();
    struct bt_lat r = backlog;
    r.done = true;
    r.calls = made;
    r.tries = 1;
    r.cpu_busy = bench_sched_cpu_busy(cpu0, cpu1);
    r.cpu_steal = bench_sched_cpu_steal(cpu0, cpu1);
    if (call) {
        double secs = bench_now() - start;
        r.own_faults = (double)(bench_sched_minor_faults(0) - faults0[1]) / secs;
        r.tlb = (double)(bench_sched_tlb_shootdowns() - tlb0) / secs;
        if (bt_ampd_pid) {
            r.ampd_faults = (double)(bench_sched_minor_faults(bt_ampd_pid) - faults0[0]) / secs;
            r.ampd_wait = bt_ampd_cpus(&kinds0, secs, r.ampd_cpus, sizeof r.ampd_cpus);
        }
        bench_sched_thread_close(&self);
        bt_loop_turns(t, turns1);
        bt_loop_turns_between(turns0, turns1, secs, &r);
    }
    if (sampling)
        bench_sched_sampler_stop(&loops, r.loops, sizeof r.loops);
    if (rc != 0)
        bench_die("A's %s: %s (%s)", bt_measures[m].name, amp_strerror(rc), amp_last_message(c));
    amp_close(c);
    for (size_t k = made; k < due_n; k++)
        lat[k] = (end - (start + (double)k * period)) * 1e6;
    /* Calls made over the schedule's span, or longer when the last one
     * ended late: at most one call per period. */
    double span = end > stop ? end - start : o->seconds;
    double *sorted = bench_alloc_touched(due_n * sizeof *sorted);
    memcpy(sorted, lat, due_n * sizeof *lat);
    qsort(sorted, due_n, sizeof *sorted, bench_cmp_double);
    r.rate = (double)made / span;
    r.p50 = bt_percentile(sorted, due_n, 0.5);
    r.p99 = bt_percentile(sorted, due_n, 0.99);
    r.p999 = bt_percentile(sorted, due_n, 0.999);
    if (call) {
        r.slow = bt_calls_mean(call, made, r.p99);
        r.all = bt_calls_mean(call, made, -INFINITY);
    }
    free(sorted);
    free(call);
    free(lat);
    return r;
}

/* --- B: bulk work on its own threads, in a process of its own ---------------------------- */

enum bt_shape { S_STREAMS, S_UNARY, S_COUNT };

struct bt_load;

struct bt_worker {
    struct bt_load *l;
    pthread_t thread;
    amp_conn *c;
    uint64_t offset;   /* output bytes of the current stream seen so far */
    bool warm;         /* it has delivered output once (counted in l->warm) */
};

/* B's load: workers that each run its calls again and again until told to
 * stop. It lives in memory shared with B's process (bt_load_new), where
 * the workers run unless --b-in-process: A's calls then share no address
 * space, allocator or library lock with B's, as two programs' would not. */
struct bt_load {
    pid_t pid;                       /* B's process; 0: B's threads run in this one */
    bool regions;                    /* region transforms instead of the shape's calls */
    enum bt_shape shape;
    const struct bt_opts *o;
    const struct bt_target *t;
    const uint8_t *in;               /* B's input: the largest of its sizes */
    int nworkers;
    struct bt_worker w[BT_MAX_WORKERS];
    atomic_bool stop;
    atomic_uint_fast64_t bytes;      /* output bytes delivered and checked */
    atomic_int warm;                 /* workers that have delivered output */
    atomic_int wrong;                /* output bytes that differed */
    pthread_mutex_t lock;
    char error[256];                 /* the first call that failed; "" when none */
};

static void bt_load_error(struct bt_load *l, const char *what, int rc, amp_conn *c)
{
    pthread_mutex_lock(&l->lock);
    if (!l->error[0])
        snprintf(l->error, sizeof l->error, "%s: %s (%s)", what, amp_strerror(rc),
                 amp_last_message(c));
    pthread_mutex_unlock(&l->lock);
    atomic_store(&l->stop, true);
}

/* Every BT_CHECK_STRIDE-th byte of out (at offset off of the output)
 * against the CPU's add. */
static void bt_load_check(struct bt_load *l, const uint8_t *out, uint64_t off, size_t len)
{
    uint64_t first = (off + BT_CHECK_STRIDE - 1) / BT_CHECK_STRIDE * BT_CHECK_STRIDE;
    for (uint64_t i = first; i < off + len; i += BT_CHECK_STRIDE)
        if (out[i - off] != (uint8_t)(l->in[i] + BT_ADD_VALUE)) {
            atomic_fetch_add(&l->wrong, 1);
            return;
        }
}

/* Counts len bytes of w's output, and w as warm the first time. */
static void bt_worker_count(struct bt_worker *w, size_t len)
{
    atomic_fetch_add(&w->l->bytes, len);
    if (!w->warm) {
        w->warm = true;
        atomic_fetch_add(&w->l->warm, 1);
    }
}

static int bt_stream_out(void *ctx, const void *buf, size_t len)
{
    struct bt_worker *w = ctx;
    if (atomic_load(&w->l->stop))
        return AMP_ECANCELLED;   /* ends this stream early: the phase is over */
    bt_load_check(w->l, buf, w->offset, len);
    w->offset += len;
    bt_worker_count(w, len);
    return 0;
}

static void bt_worker_stream(struct bt_worker *w, const amp_opts *ao, const amp_step *st)
{
    struct bt_load *l = w->l;
    w->offset = 0;
    int rc = amp_stream_mem(w->c, ao, st, 1, l->in, l->o->bulk_bytes, bt_stream_out, w, NULL, 0);
    if (rc == AMP_ECANCELLED && atomic_load(&l->stop))
        return;
    if (rc != 0)
        bt_load_error(l, "B's stream", rc, w->c);
    else if (w->offset != l->o->bulk_bytes)
        bt_fail("B's stream gave %" PRIu64 " bytes of %" PRIu64, w->offset, l->o->bulk_bytes);
}

static void bt_worker_unary(struct bt_worker *w, const amp_opts *ao, const amp_step *st)
{
    struct bt_load *l = w->l;
    void *out = NULL;
    size_t len = 0;
    int rc = amp_transform(w->c, ao, &st->transform, l->in, l->o->unary_bytes, &out, &len);
    if (rc != 0) {
        bt_load_error(l, "B's unary transform", rc, w->c);
        return;
    }
    if (len != l->o->unary_bytes)
        bt_fail("B's unary transform gave %zu bytes of %" PRIu64, len, l->o->unary_bytes);
    else
        bt_load_check(l, out, 0, len);
    bt_worker_count(w, len);
    amp_free(out);
}

/* Region transforms of --unary-bytes until told to stop: the weights
 * phase's load, whose bytes cross no socket, so that the device is what
 * the two clients share (their streams are bound by their sockets). */
static void bt_worker_regions(struct bt_worker *w, const amp_opts *ao, const amp_step *st)
{
    struct bt_load *l = w->l;
    size_t len = l->o->unary_bytes;
    amp_region *in = NULL, *out = NULL;
    int rc = amp_region_create(w->c, len, &in);
    if (rc == 0)
        rc = amp_region_create(w->c, len, &out);
    if (rc == 0) {
        memcpy(amp_region_data(in), l->in, len);
        amp_slice si = {.size = sizeof si, .region = in, .length = len};
        amp_slice so = {.size = sizeof so, .region = out, .length = len};
        while (rc == 0 && !atomic_load(&l->stop)) {
            amp_step_result *res = NULL;
            if ((rc = amp_run_region(w->c, ao, st, 1, &si, &so, &res)) != 0)
                break;
            amp_step_results_free(res, 1);
            bt_load_check(l, amp_region_data(out), 0, len);
            bt_worker_count(w, len);
        }
    }
    if (rc != 0)
        bt_load_error(l, "B's region transform", rc, w->c);
    amp_region_release(in);
    amp_region_release(out);
}

static void *bt_worker_main(void *arg)
{
    struct bt_worker *w = arg;
    struct bt_load *l = w->l;
    amp_opts ao = {.size = sizeof ao, .device = l->o->device_b};
    amp_step st = {.size = sizeof st, .kind = AMP_STEP_TRANSFORM,
                   .transform = {.op = AMP_OP_ADD, .value = BT_ADD_VALUE}};
    if (l->regions) {
        bt_worker_regions(w, &ao, &st);
        return NULL;
    }
    while (!atomic_load(&l->stop)) {
        if (l->shape == S_STREAMS)
            bt_worker_stream(w, &ao, &st);
        else
            bt_worker_unary(w, &ao, &st);
    }
    return NULL;
}

/* A bt_load in memory shared with the processes forked after. */
static struct bt_load *bt_load_new(void)
{
    void *p = mmap(NULL, sizeof(struct bt_load), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        bench_die("mmap: %s", strerror(errno));
    return p;
}

/* B's workers: each on its own connection and thread. */
static void bt_load_run(struct bt_load *l)
{
    for (int i = 0; i < l->nworkers; i++) {
        l->w[i].l = l;
        l->w[i].c = bt_connect(l->t);
        int e = pthread_create(&l->w[i].thread, NULL, bt_worker_main, &l->w[i]);
        if (e != 0)
            bench_die("pthread_create: %s", strerror(e));
    }
}

/* Joins B's workers once told to stop, and closes their connections. */
static void bt_load_join(struct bt_load *l)
{
    for (int i = 0; i < l->nworkers; i++) {
        pthread_join(l->w[i].thread, NULL);
        amp_close(l->w[i].c);
    }
}

static void bt_load_start(struct bt_load *l, enum bt_shape shape, bool regions,
                          const struct bt_opts *o, const struct bt_target *t, const uint8_t *in)
{
    memset(l, 0, sizeof *l);
    l->shape = shape;
    l->regions = regions;
    l->o = o;
    l->t = t;
    l->in = in;
    l->nworkers = shape == S_STREAMS ? o->streams : o->unary_calls;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&l->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    if (o->b_in_process) {
        bt_load_run(l);
        return;
    }
    fflush(NULL);   /* or the child writes this process's buffered output again */
    pid_t pid = fork();   /* l is shared: only this process writes its pid there */
    if (pid < 0)
        bench_die("fork: %s", strerror(errno));
    if (pid == 0) {
        bt_load_run(l);
        bt_load_join(l);
        _exit(atomic_load(&bt_failures) ? BT_EXIT_WRONG : 0);
    }
    l->pid = pid;
}

/* Until every worker has delivered output (a unary call ended; a stream's
 * first piece came back: the daemon's and the client's memory for it are
 * touched) and --warmup seconds have passed; at most BT_IDLE_WAIT_S. */
static void bt_load_warm_up(struct bt_load *l)
{
    double t0 = bench_now();
    while ((atomic_load(&l->warm) < l->nworkers || bench_now() < t0 + l->o->warmup) &&
           bench_now() < t0 + BT_IDLE_WAIT_S && !atomic_load(&l->stop))
        bench_sleep_ms(BT_IDLE_POLL_MS);
}

static uint64_t bt_load_bytes(struct bt_load *l)
{
    return atomic_load(&l->bytes);
}

/* Stops B's workers (a stream ends at its next output, a unary call when
 * it is answered) and closes their connections; dies when a call failed. */
static void bt_load_stop(struct bt_load *l)
{
    atomic_store(&l->stop, true);
    if (!l->pid) {
        bt_load_join(l);
    } else {
        int status;
        while (waitpid(l->pid, &status, 0) < 0 && errno == EINTR) {
        }
        /* It said why on stderr: a wrong result, or bench_die's reason. */
        if (!WIFEXITED(status) || WEXITSTATUS(status) == BT_EXIT_WRONG)
            bt_fail("B's process ended with status %#x", status);
        else if (WEXITSTATUS(status) != 0)
            bench_die("B's process could not run");
    }
    pthread_mutex_destroy(&l->lock);
    if (atomic_load(&l->wrong))
        bt_fail("%d of B's outputs differ from the CPU's add", atomic_load(&l->wrong));
    if (l->error[0])
        bench_die("%s", l->error);
}

/* Waits until the ampd at t has no job in flight (an aborted stream's
 * chunks may still be on its device), so that one phase's leftovers do not
 * load the next; at most BT_IDLE_WAIT_S, then says so and goes on. */
static void bt_wait_idle(const struct bt_target *t)
{
    amp_conn *c = bt_connect(t);
    amp_daemon_status st = {.size = sizeof st};
    double give_up = bench_now() + BT_IDLE_WAIT_S;
    int rc;
    while ((rc = amp_status(c, NULL, &st)) == 0 && st.jobs_in_flight > 0 &&
           bench_now() < give_up)
        bench_sleep_ms(BT_IDLE_POLL_MS);
    if (rc != 0)
        bench_die("status of %s: %s (%s)", t->address, amp_strerror(rc), amp_last_message(c));
    if (st.jobs_in_flight > 0)
        fprintf(stderr, "bench_tenants: %s still has %u jobs in flight after %d s\n", t->address,
                st.jobs_in_flight, BT_IDLE_WAIT_S);
    amp_close(c);
}

static const char *const bt_shape_names[S_COUNT] = {"streams", "unary"};

/* --- the phases ---------------------------------------------------------------------------- */

/* Where B's load runs beside A (or alone). */
enum bt_place { P_ALONE, P_SAME, P_FLOOR, P_COUNT };

struct bt_results {
    struct bt_lat a_alone[M_COUNT];
    struct bt_lat a[S_COUNT][P_COUNT][M_COUNT];   /* [shape][P_SAME or P_FLOOR][measure] */
    double b[S_COUNT][P_COUNT];                   /* B's GB/s; 0: not measured */
    double b_again[S_COUNT];                      /* B alone once more, after A's phases */
    double weighted[2];                           /* GB/s of the heavy and light clients */
    bool weighted_regions;                        /* theirs were region transforms, not streams */
    struct bt_lat high[M_COUNT];                  /* A at high beside its own low load */
    double low;                                   /* that low load's GB/s */
};

#define BT_ALL_MEASURES ((1u << M_COUNT) - 1)

/* B's GB/s alone in shape s: the mean of its runs alone before and after
 * those beside A, so that a drift of the host over the run (B alone
 * minutes apart moved by up to a tenth on the H200) counts as neither
 * A's cost nor its gain. */
static double bt_b_alone(const struct bt_results *r, int s)
{
    return (r->b[s][P_ALONE] + r->b_again[s]) / 2;
}

/* A's measures in the mask (bit m: measure m), one after another, on
 * target a. */
static void bt_a_all(const struct bt_target *a, const struct bt_opts *o,
                     const struct bt_a_data *d, unsigned measures, struct bt_lat *out)
{
    for (int m = 0; m < M_COUNT; m++) {
        if (!(measures & 1u << m))
            continue;
        for (int k = 1; k <= BT_MEASURE_TRIES; k++) {
            struct bt_lat l = bt_a_measure(a, o, (enum bt_measure)m, d);
            l.tries = k;
            if (k == 1 || l.cpu_steal < out[m].cpu_steal)
                out[m] = l;
            if (l.cpu_steal <= BT_STEAL_MAX)
                break;
            fprintf(stderr, "bench_tenants: A's %s: the host's hypervisor took %.1f%% of its CPUs "
                    "during it (try %d of %d)\n", bt_measures[m].name, 100 * l.cpu_steal, k,
                    BT_MEASURE_TRIES);
        }
    }
}

/* B's shape on target b, after its warm-up: alone for as long as A's
 * three measures take, or beside A's measures on a (NULL: alone). */
static void bt_phase(enum bt_shape shape, const struct bt_target *b, const struct bt_target *a,
                     unsigned measures, const struct bt_opts *o, const uint8_t *in,
                     const struct bt_a_data *d, struct bt_lat *a_out, double *b_out)
{
    static struct bt_load *lp;
    if (!lp)
        lp = bt_load_new();
    struct bt_load *l = lp;
    double start = bench_now();
    bt_load_start(l, shape, false, o, b, in);
    bt_load_warm_up(l);
    uint64_t b0 = bt_load_bytes(l);
    double t0 = bench_now();
    if (a)
        bt_a_all(a, o, d, measures, a_out);
    else
        bench_sleep_ms((int)(o->seconds * M_COUNT * 1000));
    double t1 = bench_now();
    *b_out = (double)(bt_load_bytes(l) - b0) / (t1 - t0) / 1e9;
    bt_load_stop(l);
    bt_wait_idle(b);
    fprintf(stderr, "bench_tenants: B %s on %s%s: %.1f s warm-up, %.1f s measured, %.1f s "
            "to stop\n", bt_shape_names[shape], b->address, a ? " beside A" : " alone",
            t0 - start, t1 - t0, bench_now() - t1);
}

/* Two bulk clients at once, each running B's streams shape (regions:
 * as many region transforms of --unary-bytes instead): w[i]'s GB/s into
 * gbs[i], over as long as A's three measures take. */
static void bt_weights_phase(const struct bt_target w[2], bool regions, const struct bt_opts *o,
                             const uint8_t *in, double gbs[2])
{
    static struct bt_load *l[2];
    for (int i = 0; i < 2; i++) {
        if (!l[i])
            l[i] = bt_load_new();
        bt_load_start(l[i], S_STREAMS, regions, o, &w[i], in);
    }
    for (int i = 0; i < 2; i++)
        bt_load_warm_up(l[i]);
    uint64_t b0[2] = {bt_load_bytes(l[0]), bt_load_bytes(l[1])};
    double t0 = bench_now();
    bench_sleep_ms((int)(o->seconds * M_COUNT * 1000));
    double t1 = bench_now();
    for (int i = 0; i < 2; i++)
        gbs[i] = (double)(bt_load_bytes(l[i]) - b0[i]) / (t1 - t0) / 1e9;
    for (int i = 0; i < 2; i++)
        bt_load_stop(l[i]);
    bt_wait_idle(&w[0]);
    fprintf(stderr, "bench_tenants: weights %d and %d on %s: %.1f s measured\n", BT_WEIGHT_HEAVY,
            BT_WEIGHT_LIGHT, w[0].address, t1 - t0);
}

/* --- the daemons ----------------------------------------------------------------------------- */

/* The clients' table (bt_clients): A (granted high priority, which its
 * priority phase asks for), B, and the two weighted bulk clients. */
static const struct {
    const char *name;
    int weight;                /* its token line's weight=; 0: none (the default) */
    const char *max_priority;  /* its max-priority=; NULL: none */
} bt_clients[C_COUNT] = {
    [C_A] = {"tenant-a", 0, "high"},
    [C_B] = {"tenant-b", 0, NULL},
    [C_HEAVY] = {"tenant-w3", BT_WEIGHT_HEAVY, NULL},
    [C_LIGHT] = {"tenant-w1", BT_WEIGHT_LIGHT, NULL},
};

/* The ampds it starts: A's (and B's) and the floor's second one, each
 * with a TCP listener whose tokens name the clients. */
struct bt_daemons {
    struct bench_daemon dm[2];
    char tcp[2][64];
    char token_file[64];
    char token[C_COUNT][2 * BT_TOKEN_BYTES + 16];
    int n;
};

/* Random tokens in a 0600 file ampd reads (--token-file). */
static void bt_tokens_make(struct bt_daemons *ds)
{
    snprintf(ds->token_file, sizeof ds->token_file, "/tmp/bench_tenants.tokens.XXXXXX");
    int fd = mkstemp(ds->token_file);
    if (fd < 0)
        bench_die("mkstemp: %s", strerror(errno));
    FILE *f = fdopen(fd, "w");
    for (int i = 0; i < C_COUNT; i++) {
        uint8_t r[BT_TOKEN_BYTES];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
            bench_die("getrandom: %s", strerror(errno));
        char *p = ds->token[i];
        p += sprintf(p, "bench-");
        for (size_t k = 0; k < sizeof r; k++)
            p += sprintf(p, "%02x", r[k]);
        fprintf(f, "%s %s", bt_clients[i].name, ds->token[i]);
        if (bt_clients[i].weight)
            fprintf(f, " weight=%d", bt_clients[i].weight);
        if (bt_clients[i].max_priority)
            fprintf(f, " max-priority=%s", bt_clients[i].max_priority);
        fputc('\n', f);
    }
    if (fclose(f) != 0)
        bench_die("writing %s: %s", ds->token_file, strerror(errno));
}

static void bt_daemon_start(struct bt_daemons *ds, int i, const struct bt_opts *o)
{
    uint64_t msg = (o->unary_bytes > BT_MESSAGE_MIN ? o->unary_bytes : BT_MESSAGE_MIN) +
                   BT_MESSAGE_SLACK;
    /* The weights phase runs two clients' streams at once. */
    uint64_t mem = 2 * o->unary_bytes * (uint64_t)o->unary_calls +
                   2 * BT_STREAM_HOLD * (uint64_t)o->streams + BT_MEMORY_SLACK;
    char msg_s[32], mem_s[32];
    snprintf(msg_s, sizeof msg_s, "%" PRIu64, msg);
    snprintf(mem_s, sizeof mem_s, "%" PRIu64, mem);
    snprintf(ds->tcp[i], sizeof ds->tcp[i], "127.0.0.1:%d", bench_daemon_free_port());
    /* B's load must be admitted whole, whatever the defaults: memory for
     * all its calls at once, from one client and one connection. */
    const char *base[] = {"--listen", ds->tcp[i], "--token-file", ds->token_file,
                          "--max-message-bytes", msg_s, "--max-job-memory", mem_s,
                          "--max-connection-memory", mem_s, "--max-client-memory", mem_s};
    const char *args[64];
    size_t n = 0;
    for (size_t k = 0; k < sizeof base / sizeof base[0]; k++)
        args[n++] = base[k];
    for (size_t k = 0; o->ampd_args[k] && n < 63; k++)
        args[n++] = o->ampd_args[k];
    args[n] = NULL;
    char err[256];
    if (bench_daemon_start(&ds->dm[i], o->ampd, "bench_tenants", args, err, sizeof err) != 0)
        bench_die("starting ampd: %s", err);
    printf("# ampd %d: %s --listen %s", i + 1, o->ampd, ds->dm[i].address);
    for (size_t k = 0; k < n; k++)
        printf(" %s", args[k]);
    printf("\n");
    ds->n = i + 1;
}

/* Stops every ampd it started; -1 when one did not exit 0. */
static int bt_daemons_stop(struct bt_daemons *ds)
{
    int rc = 0;
    for (int i = 0; i < ds->n; i++) {
        printf("# ampd %d peak resident memory (VmHWM): %.1f MiB\n", i + 1,
               (double)bench_vm_hwm(ds->dm[i].pid) / (1 << 20));
        if (bench_daemon_stop(&ds->dm[i]) != 0)
            rc = -1;
    }
    ds->n = 0;
    if (ds->token_file[0])
        unlink(ds->token_file);
    ds->token_file[0] = '\0';
    return rc;
}

static struct bt_daemons bt_daemons;

/* A run that dies (bench_die) still stops the ampds it started. */
static pid_t bt_main_pid;   /* this process, not B's (which leaves the daemons alone) */

static void bt_daemons_atexit(void)
{
    if (getpid() == bt_main_pid)
        bt_daemons_stop(&bt_daemons);
}

/* --- the table --------------------------------------------------------------------------- */

static void bt_ratio(double x, double base)
{
    if (x > 0 && base > 0)
        printf(" %.2f |", x / base);
    else
        printf(" - |");
}

/* The host's CPU share its hypervisor took during the measure kept, and
 * which try that was (BT_STEAL_MAX). */
static void bt_steal_cell(const struct bt_lat *r)
{
    static const char *const nth[BT_MEASURE_TRIES + 1] = {"", "", ", 2nd try", ", 3rd try"};
    printf(" %.1f%%%s |", 100 * r->cpu_steal, nth[r->tries]);
}

static void bt_a_row(const char *beside, const struct bt_lat *r, const struct bt_lat *alone,
                     const struct bt_lat *floor_)
{
    if (!r->done)
        return;
    printf("| | %s | %.0f | %.1f | %.1f | %.1f |", beside, r->rate, r->p50, r->p99, r->p999);
    bt_ratio(r->p50, alone->p50);
    bt_ratio(r->p99, alone->p99);
    bt_ratio(r->p50, floor_ && floor_->done ? floor_->p50 : 0);
    bt_ratio(r->p99, floor_ && floor_->done ? floor_->p99 : 0);
    bt_steal_cell(r);
    printf("\n");
}

/* The --sched-stats tables, each with a row per measure. */
enum bt_sched_table { BT_SLOW, BT_ALL, BT_BACKLOG, BT_LOOPS };

/* "total / request / queued / run / delivered" of k's daemon times. */
static void bt_print_daemon(const struct bt_calls *k)
{
    printf("%.1f / %.1f / %.1f / %.1f / %.1f", k->daemon[T_TOTAL], k->daemon[T_REQUEST],
           k->daemon[T_QUEUE], k->daemon[T_RUN], k->daemon[T_DELIVER]);
}

/* Its row of one of the --sched-stats tables. */
static void bt_sched_row(const char *call, const char *beside, const struct bt_lat *r,
                         enum bt_sched_table table)
{
    if (!r->done)
        return;
    if (table == BT_LOOPS) {
        printf("| %s | %s | %.0f | %.1f | %" PRIu64 " | %s |\n", call, beside, r->turns,
               r->long_turns, r->longest_turn_us, bt_ampd_pid ? r->loops : "-");
        return;
    }
    if (table == BT_BACKLOG) {
        printf("| %s | %s | %.0f | %.2f | %.0f (%.0f) | %.0f |\n", call, beside, r->peak,
               r->peak_at, r->longest_call, r->longest_call_wait, r->longest_gap);
        return;
    }
    if (table == BT_ALL) {
        printf("| %s | %s | %.0f | %.1f | ", call, beside, r->rate, r->all.dur);
        bt_print_daemon(&r->all);
        printf(" | %.1f / %.1f |\n", r->all.run, r->all.wait);
        return;
    }
    printf("| %s | %s | %.1f | %.1f | ", call, beside, r->p99, r->slow.lat);
    bt_print_daemon(&r->slow);
    printf(" | %.1f / %.1f | %.2f / %.3f | %.0f / %.0f | %.0f |", r->slow.run, r->slow.wait,
           r->cpu_busy, r->cpu_steal, r->ampd_faults, r->own_faults, r->tlb);
    if (bt_ampd_pid)
        printf(" %.1f | %s |\n", r->ampd_wait, r->ampd_cpus);
    else
        printf(" - | - |\n");
}

/* Every measured row of r, in the first table's order. */
static void bt_sched_rows(const struct bt_results *r, const char *const beside[S_COUNT][P_COUNT],
                          enum bt_sched_table table)
{
    char high[64];
    snprintf(high, sizeof high, "%s, high", bt_measures[M_DEV_REVERSE].name);
    for (int m = 0; m < M_COUNT; m++) {
        bt_sched_row(bt_measures[m].name, "nothing (alone)", &r->a_alone[m], table);
        for (int s = 0; s < S_COUNT; s++)
            for (int p = P_SAME; p < P_COUNT; p++)
                bt_sched_row(bt_measures[m].name, beside[s][p], &r->a[s][p][m], table);
    }
    bt_sched_row(high, "A's unary at low", &r->high[M_DEV_REVERSE], table);
}

/* --sched-stats: whether A's slowest calls waited for a CPU (the host's
 * doing) or for the daemon. */
static void bt_print_sched(const struct bt_results *r, const char *const beside[S_COUNT][P_COUNT],
                           int period_us)
{
    printf("\n# where A's slowest 1%% went (--sched-stats): the calls at or above p99, their "
           "time in ampd (its replies' server-timing), and how "
           "long A's own thread ran, and waited runnable for a CPU, during them; over each "
           "measure, the "
           "host's busy CPU share (and the share its hypervisor took), A's ampd's threads' "
           "waits for a CPU (all together) and the CPUs its threads kept busy, by kind; the page "
           "faults of A's ampd and of this process (A's and B's clients), and the host's TLB "
           "shootdowns\n");
    printf("| A's call | beside | p99 us | slowest 1%%, mean us | of it in ampd (headers to reply "
           "ready) / request / queued / run / delivered, mean us | "
           "A's thread on a CPU / waiting for one in them, mean us | "
           "host CPUs busy / stolen | minor faults/s, ampd / bench | "
           "TLB shootdowns/s | ampd's threads waiting, ms/s | ampd's threads busy, CPUs |\n");
    printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    bt_sched_rows(r, beside, BT_SLOW);
    printf("\n# every call of A's: how long it took from its send, on average (above the period, "
           "%d us, A falls behind its schedule and its latencies hold the backlog), of it in "
           "ampd, and A's own thread on a CPU and waiting for one during it\n",
           period_us);
    printf("| A's call | beside | calls/s | call from its send, mean us | in ampd (headers to "
           "reply ready) / request / queued / run / delivered, mean us | A's thread on a CPU / "
           "waiting for one, mean us |\n|---|---|---:|---:|---:|---:|\n");
    bt_sched_rows(r, beside, BT_ALL);
    printf("\n# A's largest latency beside its longest single call and its longest delay "
           "before a send: a peak far above both is a backlog built over many calls, each a "
           "little over the period, not one stall\n");
    printf("| A's call | beside | largest latency, us | at, s into the measure | longest call "
           "from its send, us (A's thread waiting for a CPU in it) | longest delay before a "
           "send, us |\n|---|---|---:|---:|---:|---:|\n");
    bt_sched_rows(r, beside, BT_BACKLOG);
    printf("\n# A's ampd's I/O loops during each measure: their turns (amp_status: a loop's run "
           "from one wait for events to the next, which a call arriving meanwhile waits "
           "behind), and the loops (ampd-io*; A's own ampd only) sampled every %d us\n",
           BT_SAMPLE_US);
    printf("| A's call | beside | loop turns/s | of %u us or longer, /s | longest, us (<=) | "
           "loops: running, or asleep where (wchan) |\n|---|---|---:|---:|---:|---|\n",
           1u << (BT_LONG_TURN_BUCKET - 1));
    bt_sched_rows(r, beside, BT_LOOPS);
}

/* --sched-stats: the daemon's own account of each client's jobs over
 * the whole run (amp_status): time queued and on the device. */
static void bt_print_client_times(const struct bt_target *t)
{
    const amp_daemon_status *st = bt_status(t);
    printf("\n# the daemon's times of each client's jobs over the whole run (amp_status; "
           "power-of-two buckets' upper edges)\n");
    printf("| client | priority | jobs | queued p50 / p99 us | on the device p50 / p99 us |\n"
           "|---|---|---:|---:|---:|\n");
    for (size_t i = 0; i < st->nclient_times; i++) {
        const amp_client_times *ct = &st->client_times[i];
        printf("| %s | %s | %" PRIu64 " | %" PRIu64 " / %" PRIu64 " | %" PRIu64 " / %" PRIu64
               " |\n", ct->client, ct->priority, ct->jobs, ct->queue_p50_us, ct->queue_p99_us,
               ct->device_p50_us, ct->device_p99_us);
    }
}

static void bt_print(const struct bt_results *r, const struct bt_opts *o)
{
    char bulk[32], unary[32];
    bench_size_label(o->bulk_bytes, bulk, sizeof bulk, false);
    bench_size_label(o->unary_bytes, unary, sizeof unary, false);
    const char *beside[S_COUNT][P_COUNT] = {
        [S_STREAMS] = {"", "B streams, same ampd", "B streams, 2nd ampd (floor)"},
        [S_UNARY] = {"", "B unary, same ampd", "B unary, 2nd ampd (floor)"},
    };
    printf("\n# A: a call due every %d us for %g s per measure, latency from when it was due; "
           "device %s, the bulk load's %s\n", o->period_us, o->seconds, o->device, o->device_b);
    printf("# B streams: %d x %s Stream transforms; B unary: %d x %s unary transforms at once\n",
           o->streams, bulk, o->unary_calls, unary);
    printf("# a measure with more than %.1f%% of the host's CPUs stolen by its hypervisor is taken "
           "again, up to %d times, the least stolen kept\n", 100 * BT_STEAL_MAX, BT_MEASURE_TRIES);
    printf("| A's call | beside | calls/s | p50 us | p99 us | p99.9 us | p50 x alone | "
           "p99 x alone | p50 x floor | p99 x floor | stolen |\n");
    printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int m = 0; m < M_COUNT; m++) {
        printf("| %s | | | | | | | | | | |\n", bt_measures[m].name);
        bt_a_row("nothing (alone)", &r->a_alone[m], &r->a_alone[m], NULL);
        for (int s = 0; s < S_COUNT; s++)
            for (int p = P_SAME; p < P_COUNT; p++)
                bt_a_row(beside[s][p], &r->a[s][p][m], &r->a_alone[m],
                         p == P_SAME ? &r->a[s][P_FLOOR][m] : NULL);
    }
    printf("\n# B's throughput: output bytes delivered over A's measures (or as long, alone: "
           "before the runs beside A and after them; x alone is against their mean)\n");
    printf("| B's load | alone before / after GB/s | beside A, same ampd GB/s | x alone | "
           "beside A, 2nd ampd GB/s | x alone |\n");
    printf("|---|---:|---:|---:|---:|---:|\n");
    for (int s = 0; s < S_COUNT; s++) {
        printf("| %s | %.3f / %.3f | %.3f |", bt_shape_names[s], r->b[s][P_ALONE], r->b_again[s],
               r->b[s][P_SAME]);
        bt_ratio(r->b[s][P_SAME], bt_b_alone(r, s));
        if (r->b[s][P_FLOOR] > 0)
            printf(" %.3f |", r->b[s][P_FLOOR]);
        else
            printf(" - |");
        bt_ratio(r->b[s][P_FLOOR], bt_b_alone(r, s));
        printf("\n");
    }
    if (r->weighted_regions)
        printf("\n# weights: two clients each keeping %d region transforms of %" PRIu64 " bytes in "
               "flight at once (Unix socket: their bytes cross no socket)\n", o->streams,
               o->unary_bytes);
    else
        printf("\n# weights: two clients each running B's streams at once\n");
    printf("| client | weight | GB/s | share |\n|---|---:|---:|---:|\n");
    double all = r->weighted[0] + r->weighted[1];
    for (int i = 0; i < 2; i++)
        printf("| %s | %d | %.3f | %.3f |\n", bt_clients[C_HEAVY + i].name,
               bt_clients[C_HEAVY + i].weight, r->weighted[i], all > 0 ? r->weighted[i] / all : 0);
    printf("\n# priority: A's 16 B reverse at high beside A's own unary load at low\n");
    printf("| A's call | beside | calls/s | p50 us | p99 us | p99.9 us | p50 x alone | "
           "p99 x alone | low load GB/s | stolen |\n");
    printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    const struct bt_lat *h = &r->high[M_DEV_REVERSE], *alone = &r->a_alone[M_DEV_REVERSE];
    printf("| %s, high | A's unary at low | %.0f | %.1f | %.1f | %.1f |",
           bt_measures[M_DEV_REVERSE].name, h->rate, h->p50, h->p99, h->p999);
    bt_ratio(h->p50, alone->p50);
    bt_ratio(h->p99, alone->p99);
    printf(" %.3f |", r->low);
    bt_steal_cell(h);
    printf("\n");
    if (o->sched_stats)
        bt_print_sched(r, beside, o->period_us);
}

/* --- the targets -------------------------------------------------------------------------- */

/* Issue 34's targets. On a GPU, A beside B on the same ampd is held to A
 * alone; on a CPU device (PoCL), where B's clients and B's device work
 * take every core and no daemon can keep A near alone, to the floor (A
 * beside the same B load sent to a second ampd). */
#define BT_B_SHARE_GPU 0.9          /* B beside A over B alone, at least */
#define BT_B_SHARE_CPU 0.8
#define BT_FLOOR_X_CPU 2.0          /* A's p50 and p99 beside B over the floor's, at most */
#define BT_WEIGHT_SPLIT_TOL 0.10    /* the weighted clients' split within this of their weights' */
#define BT_HIGH_X_ALONE 1.5         /* A's p99 at high beside its own low load over alone */

/* One bound on A: measure m's p50 (else p99) beside shape s on the same
 * ampd, at most max times A alone (GPU). */
static const struct {
    enum bt_measure m;
    enum bt_shape s;
    bool p50;
    double max;
} bt_gpu_targets[] = {
    {M_DEV_REVERSE, S_STREAMS, false, 2.0},
    {M_DEV_REVERSE, S_UNARY, true, 2.0},
    {M_DEV_REVERSE, S_UNARY, false, 3.0},
    {M_DEV_TRANSFORM, S_STREAMS, false, 2.0},
};

struct bt_tally {
    int met, missed, unmeasured;
};

/* One target's row: what, its bound, the ratio measured, met or not. */
static void bt_target_row(struct bt_tally *t, const char *what, const char *bound, double x,
                          bool at_least, double limit)
{
    if (!(x > 0)) {
        printf("| %s | %s | - | not measured |\n", what, bound);
        t->unmeasured++;
        return;
    }
    bool met = at_least ? x >= limit : x <= limit;
    printf("| %s | %s | %.2f | %s |\n", what, bound, x, met ? "met" : "MISSED");
    if (met)
        t->met++;
    else
        t->missed++;
}

static double bt_x(double v, double base)
{
    return v > 0 && base > 0 ? v / base : 0;
}

static void bt_targets(const struct bt_results *r, bool gpu)
{
    struct bt_tally t = {0, 0, 0};
    char what[160], bound[64];
    printf("\n# issue 34's targets (%s)\n", gpu ? "GPU: against A alone"
                                                : "CPU device: against the floor");
    printf("| target | bound | measured | |\n|---|---|---:|---|\n");
    if (gpu) {
        for (size_t i = 0; i < sizeof bt_gpu_targets / sizeof bt_gpu_targets[0]; i++) {
            enum bt_measure m = bt_gpu_targets[i].m;
            enum bt_shape s = bt_gpu_targets[i].s;
            bool p50 = bt_gpu_targets[i].p50;
            const struct bt_lat *x = &r->a[s][P_SAME][m], *alone = &r->a_alone[m];
            snprintf(what, sizeof what, "A's %s %s beside B %s", bt_measures[m].name,
                     p50 ? "p50" : "p99", bt_shape_names[s]);
            snprintf(bound, sizeof bound, "<= %.1fx alone", bt_gpu_targets[i].max);
            bt_target_row(&t, what, bound, bt_x(p50 ? x->p50 : x->p99, p50 ? alone->p50
                                                                            : alone->p99),
                          false, bt_gpu_targets[i].max);
        }
    } else {
        for (int m = 0; m < M_COUNT; m++) {
            if (bt_measures[m].host)
                continue;   /* the targets are the device's */
            for (int s = 0; s < S_COUNT; s++) {
                const struct bt_lat *x = &r->a[s][P_SAME][m], *fl = &r->a[s][P_FLOOR][m];
                snprintf(bound, sizeof bound, "<= %.1fx floor", BT_FLOOR_X_CPU);
                snprintf(what, sizeof what, "A's %s p50 beside B %s", bt_measures[m].name,
                         bt_shape_names[s]);
                bt_target_row(&t, what, bound, bt_x(x->p50, fl->p50), false, BT_FLOOR_X_CPU);
                snprintf(what, sizeof what, "A's %s p99 beside B %s", bt_measures[m].name,
                         bt_shape_names[s]);
                bt_target_row(&t, what, bound, bt_x(x->p99, fl->p99), false, BT_FLOOR_X_CPU);
            }
        }
    }
    /* The issue sets these two on the GPU. The weights' split holds on any
     * device, as it compares one daemon's clients with each other; A at
     * high beside its own low load is held to A alone, which on a CPU
     * device, where that load takes every core, no daemon can keep near
     * (the floor's reason), so there it is shown and not counted. */
    double want = (double)BT_WEIGHT_HEAVY / BT_WEIGHT_LIGHT;
    double split = bt_x(r->weighted[0], r->weighted[1]);
    snprintf(what, sizeof what, "weights %d:%d, throughput split", BT_WEIGHT_HEAVY,
             BT_WEIGHT_LIGHT);
    snprintf(bound, sizeof bound, "%.2f to %.2f", want * (1 - BT_WEIGHT_SPLIT_TOL),
             want * (1 + BT_WEIGHT_SPLIT_TOL));
    if (split > 0 && split < want * (1 - BT_WEIGHT_SPLIT_TOL))
        bt_target_row(&t, what, bound, split, true, want * (1 - BT_WEIGHT_SPLIT_TOL));
    else
        bt_target_row(&t, what, bound, split, false, want * (1 + BT_WEIGHT_SPLIT_TOL));
    snprintf(what, sizeof what, "A's %s p99 at high beside its own low load",
             bt_measures[M_DEV_REVERSE].name);
    snprintf(bound, sizeof bound, "<= %.1fx alone", BT_HIGH_X_ALONE);
    double high = bt_x(r->high[M_DEV_REVERSE].p99, r->a_alone[M_DEV_REVERSE].p99);
    if (gpu)
        bt_target_row(&t, what, bound, high, false, BT_HIGH_X_ALONE);
    else
        printf("| %s | %s on a GPU | %.2f | not a target on a CPU device |\n", what, bound, high);
    double share = gpu ? BT_B_SHARE_GPU : BT_B_SHARE_CPU;
    for (int s = 0; s < S_COUNT; s++) {
        snprintf(what, sizeof what, "B's %s throughput beside A", bt_shape_names[s]);
        snprintf(bound, sizeof bound, ">= %.1fx alone", share);
        bt_target_row(&t, what, bound, bt_x(r->b[s][P_SAME], bt_b_alone(r, s)), true, share);
    }
    printf("# targets: %d met, %d missed, %d not measured\n", t.met, t.missed, t.unmeasured);
}

/* Whether A's device (--device: a type, or an index) is a GPU: its
 * targets are the GPU's, else the CPU device's. */
static bool bt_device_is_gpu(const struct bt_target *t, const char *device)
{
    char *end;
    unsigned long index = strtoul(device, &end, 10);
    if (*device && !*end) {
        amp_conn *c = bt_connect(t);
        amp_device *list = NULL;
        size_t n = 0;
        if (amp_devices(c, NULL, &list, &n) != 0)
            bench_die("devices of %s: %s", t->address, amp_last_message(c));
        bool gpu = index < n && strcmp(list[index].type, "gpu") == 0;
        amp_free(list);
        amp_close(c);
        return gpu;
    }
    return strcmp(device, "gpu") == 0;
}

/* --- options ------------------------------------------------------------------------------ */

static void bt_usage(void)
{
    fprintf(stderr,
            "usage: bench_tenants [--bulk-bytes 1G] [--streams 4] [--unary-bytes 32M]\n"
            "                     [--unary-calls 16] [--seconds 3] [--warmup 1]\n"
            "                     [--period-us 1000] [--device 0] [--device-b D] [--no-floor]\n"
            "                     [--shapes streams,unary] [--sched-stats] [--a-busy-poll-us N]\n"
            "                     [--unix] [--b-in-process]\n"
            "                     [--ampd PATH | --address ADDR [--floor-address ADDR]\n"
            "                      [--token-a T] [--token-b T] [--token-w3 T --token-w1 T]]\n"
            "                     [-- AMPD-OPTIONS]\n");
    exit(2);
}

static uint64_t bt_size_arg(const char *s)
{
    uint64_t v = s ? bench_parse_size(s) : 0;
    if (!v)
        bt_usage();
    return v;
}

static double bt_seconds_arg(const char *s, double min)
{
    char *end;
    double v = s ? strtod(s, &end) : -1;
    if (!s || *end || !(v >= min))
        bt_usage();
    return v;
}

static int bt_count_arg(const char *s, int max)
{
    char *end;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || *end || v < 1 || v > max)
        bt_usage();
    return (int)v;
}

/* A comma-separated list of B's shapes, as a mask. */
static unsigned bt_shapes_arg(const char *s)
{
    unsigned mask = 0;
    while (*s) {
        size_t n = strcspn(s, ",");
        int k = 0;
        while (k < S_COUNT && !(strlen(bt_shape_names[k]) == n && !strncmp(s, bt_shape_names[k], n)))
            k++;
        if (k == S_COUNT)
            bt_usage();
        mask |= 1u << k;
        s += n + (s[n] == ',');
    }
    if (!mask)
        bt_usage();
    return mask;
}

/* amp_connect_opts.busy_poll_us: < 0 never polls, 0 the default. */
static int bt_busy_poll_arg(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < -1 || v > AMP_BUSY_POLL_MAX_US)
        bt_usage();
    return (int)v;
}

static void bt_parse(int argc, char **argv, struct bt_opts *o)
{
    static const char *const none[] = {NULL};
    *o = (struct bt_opts){.bulk_bytes = BT_BULK_BYTES_DEFAULT, .streams = BT_STREAMS_DEFAULT,
                          .unary_bytes = BT_UNARY_BYTES_DEFAULT,
                          .unary_calls = BT_UNARY_CALLS_DEFAULT, .seconds = BT_SECONDS_DEFAULT,
                          .warmup = BT_WARMUP_DEFAULT, .period_us = BT_PERIOD_US_DEFAULT,
                          .device = "0", .shapes = (1u << S_COUNT) - 1, .ampd_args = none};
    o->ampd = getenv("AMPD_BIN") ? getenv("AMPD_BIN") : BENCH_AMPD_DEFAULT;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--") == 0) {
            o->ampd_args = (const char *const *)&argv[i + 1];
            break;
        }
        bool *flag = !strcmp(a, "--no-floor")      ? &o->no_floor
                     : !strcmp(a, "--sched-stats") ? &o->sched_stats
                     : !strcmp(a, "--unix")        ? &o->unix_socket
                     : !strcmp(a, "--b-in-process") ? &o->b_in_process
                                                   : NULL;
        if (flag) {
            *flag = true;
            continue;
        }
        i++;
        if (strcmp(a, "--bulk-bytes") == 0)
            o->bulk_bytes = bt_size_arg(v);
        else if (strcmp(a, "--streams") == 0)
            o->streams = bt_count_arg(v, BT_MAX_WORKERS);
        else if (strcmp(a, "--unary-bytes") == 0)
            o->unary_bytes = bt_size_arg(v);
        else if (strcmp(a, "--unary-calls") == 0)
            o->unary_calls = bt_count_arg(v, BT_MAX_WORKERS);
        else if (strcmp(a, "--seconds") == 0)
            o->seconds = bt_seconds_arg(v, 0.001);
        else if (strcmp(a, "--warmup") == 0)
            o->warmup = bt_seconds_arg(v, 0);
        else if (strcmp(a, "--period-us") == 0)
            o->period_us = bt_count_arg(v, 1000000);
        else if (strcmp(a, "--shapes") == 0 && v)
            o->shapes = bt_shapes_arg(v);
        else if (strcmp(a, "--a-busy-poll-us") == 0 && v)
            o->a_busy_poll_us = bt_busy_poll_arg(v);
        else if (strcmp(a, "--device") == 0 && v)
            o->device = v;
        else if (strcmp(a, "--device-b") == 0 && v)
            o->device_b = v;
        else if (strcmp(a, "--ampd") == 0 && v)
            o->ampd = v;
        else if (strcmp(a, "--address") == 0 && v)
            o->address = v;
        else if (strcmp(a, "--floor-address") == 0 && v)
            o->floor_address = v;
        else if (strcmp(a, "--token-a") == 0 && v)
            o->token[C_A] = v;
        else if (strcmp(a, "--token-b") == 0 && v)
            o->token[C_B] = v;
        else if (strcmp(a, "--token-w3") == 0 && v)
            o->token[C_HEAVY] = v;
        else if (strcmp(a, "--token-w1") == 0 && v)
            o->token[C_LIGHT] = v;
        else
            bt_usage();
    }
    if (!o->device_b)
        o->device_b = o->device;
}

int main(int argc, char **argv)
{
    struct bt_opts o;
    bt_parse(argc, argv, &o);
    struct bt_daemons *ds = &bt_daemons;
    bt_main_pid = getpid();
    atexit(bt_daemons_atexit);
    static struct bt_results r;
    const char *tok[C_COUNT];
    const char *addr, *floor_addr;
    bool has_floor = !o.no_floor;
    if (o.address) {
        memcpy(tok, o.token, sizeof tok);
        addr = o.address;
        floor_addr = o.floor_address;
        has_floor = has_floor && o.floor_address;
    } else {
        bt_tokens_make(ds);
        for (int i = 0; i < (has_floor ? 2 : 1); i++)
            bt_daemon_start(ds, i, &o);
        for (int i = 0; i < C_COUNT; i++)
            tok[i] = ds->token[i];
        addr = o.unix_socket ? ds->dm[0].address : ds->tcp[0];
        floor_addr = o.unix_socket ? ds->dm[1].address : ds->tcp[1];
        bt_ampd_pid = ds->dm[0].pid;
    }
    /* A, B on A's ampd, B on the floor's; A at high priority and its own
     * load at low; the two weighted clients. */
    struct bt_target a = {addr, tok[C_A], NULL, o.a_busy_poll_us, o.sched_stats},
                     b = {addr, tok[C_B], NULL, 0, false}, fb = {floor_addr, tok[C_B], NULL, 0, false},
                     a_high = {addr, tok[C_A], "high", o.a_busy_poll_us, o.sched_stats},
                     a_low = {addr, tok[C_A], "low", 0, false},
                     w[2] = {{addr, tok[C_HEAVY], NULL, 0, false}, {addr, tok[C_LIGHT], NULL, 0, false}};
    bool has_weights = tok[C_HEAVY] && tok[C_LIGHT];
    /* The weighted clients keep region transforms in flight where they
     * can (a Unix socket: the ampd started here has one), else streams. */
    const char *unix_addr = o.address ? (strncmp(o.address, "unix:", 5) == 0 ? o.address : NULL)
                                      : ds->dm[0].address;
    r.weighted_regions = unix_addr != NULL;
    if (unix_addr)
        w[0].address = w[1].address = unix_addr;
    printf("# clients: A and B as two tokens of %s%s; weights %d:%d as two more%s\n", a.address,
           has_floor ? "; the floor: B on a second ampd" : "; no floor", BT_WEIGHT_HEAVY,
           BT_WEIGHT_LIGHT, has_weights ? "" : " (no tokens given: not run)");

    static struct bt_a_data d;
    bt_a_data_make(&d);
    uint64_t in_len = o.bulk_bytes > o.unary_bytes ? o.bulk_bytes : o.unary_bytes;
    uint8_t *in = bench_alloc_touched(in_len);
    bench_random(in, in_len, BT_SEED_B);

    bt_a_all(&a, &o, &d, BT_ALL_MEASURES, r.a_alone);
    for (int s = 0; s < S_COUNT; s++) {
        enum bt_shape shape = (enum bt_shape)s;
        if (!(o.shapes & 1u << s))
            continue;
        bt_phase(shape, &b, NULL, 0, &o, in, &d, NULL, &r.b[s][P_ALONE]);
        bt_phase(shape, &b, &a, BT_ALL_MEASURES, &o, in, &d, r.a[s][P_SAME], &r.b[s][P_SAME]);
        if (has_floor)
            bt_phase(shape, &fb, &a, BT_ALL_MEASURES, &o, in, &d, r.a[s][P_FLOOR],
                     &r.b[s][P_FLOOR]);
        bt_phase(shape, &b, NULL, 0, &o, in, &d, NULL, &r.b_again[s]);
    }
    if (has_weights)
        bt_weights_phase(w, r.weighted_regions, &o, in, r.weighted);
    /* A's own unary load at low saturates the device; A's tiny calls at
     * high must go first. */
    bt_phase(S_UNARY, &a_low, &a_high, 1u << M_DEV_REVERSE, &o, in, &d, r.high, &r.low);
    bt_print(&r, &o);
    if (o.sched_stats)
        bt_print_client_times(&a);
    bt_targets(&r, bt_device_is_gpu(&a, o.device));
    free(in);
    int daemon_rc = bt_daemons_stop(ds);
    int failures = atomic_load(&bt_failures);
    if (failures)
        fprintf(stderr, "bench_tenants: %d wrong result(s)\n", failures);
    return failures ? 1 : daemon_rc < 0 ? 2 : 0;
}
