/* SPDX-License-Identifier: MIT */
/* cmd_bench.c: `ampctl bench`: a load generator, as redis-benchmark or
 * h2load are for their servers.
 *
 * Each of --connections threads opens its own connection and keeps
 * --in-flight calls running on it (one: blocking calls one after another;
 * more: started calls, amp_wait, and a new one for each that finishes) for
 * --duration seconds or until --count calls are done among them, timing
 * every call from the client's memory to the client's memory. Then one
 * table (or --json): calls per second, latency percentiles over every
 * call, and the failures by error. A warm-up call per connection is not
 * counted.
 */
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ampctl.h"
#include "choice.h"
#include "monotonic.h"
#include "size_text.h"

#define BENCH_MAX_CONNECTIONS 1024
#define BENCH_MAX_IN_FLIGHT 4096
#define BENCH_DEFAULT_SECONDS 5.0
#define BENCH_DEFAULT_SIZE 16
#define BENCH_DEFAULT_CONNECTIONS 1
#define BENCH_DEFAULT_IN_FLIGHT 1   /* blocking calls */
#define BENCH_ERRORS 32   /* distinct error codes kept (amp.h has fewer) */

enum bench_kind { BENCH_REVERSE, BENCH_TRANSFORM, BENCH_HIST, BENCH_FILL };

_Static_assert(BENCH_FILL == 3, "choice_kind's words follow enum bench_kind");

static void bench_usage(FILE *f)
{
    char size[SIZE_TEXT_MAX];
    size_text_format(BENCH_DEFAULT_SIZE, size, sizeof size);
    fprintf(f, "Usage: ampctl bench [-k KIND] [-s SIZE] [-c N] [-f N] [-d SECONDS | -n COUNT]\n"
               "Loads the daemon with jobs and reports calls per second and latency.\n"
               "\n"
               "  -k, --kind KIND        reverse (default), transform (xor), hist or fill (int32)\n"
               "  -s, --size SIZE        bytes per job's input, or fill's output (default %s;\n"
               "                         K, M, G, T suffixes)\n"
               "  -c, --connections N    connections, each with its own thread (default %d)\n"
               "  -f, --in-flight N      calls running at once on each connection (default %d:\n"
               "                         blocking calls; more: started calls, not for fill)\n"
               "  -d, --duration SECONDS how long to run (default %g)\n"
               "  -n, --count N          stop after N calls in all instead\n"
               "  -h, --help             this help\n"
               "\n"
               "--device picks the device as for every job (default: the daemon's choice);\n"
               "--json prints one JSON object instead of the table. Latency is each call\n"
               "from the client's memory to the client's memory; a warm-up call per\n"
               "connection is not counted. Exit status 1 if any call failed.\n",
            size, BENCH_DEFAULT_CONNECTIONS, BENCH_DEFAULT_IN_FLIGHT, BENCH_DEFAULT_SECONDS);
}

struct bench_args {
    enum bench_kind kind;
    uint64_t size;
    uint32_t connections;
    uint32_t in_flight;
    double seconds;
    uint64_t count;      /* 0: run for seconds */
};

/* One connection's thread and what it measured. */
struct bench_worker {
    const struct ampctl *ctx;
    const struct bench_args *a;
    atomic_uint_fast64_t *started;  /* calls begun by every worker (--count) */
    long long deadline_ns;
    pthread_t thread;
    uint64_t *lat_ns;               /* latencies of the calls that succeeded */
    size_t nlat, cap;
    uint64_t errors[BENCH_ERRORS];  /* failed calls by -code */
    int connect_rc;                 /* amp_connect's result */
    char connect_msg[256];
};

static long long bench_now_ns(void)
{
    return (long long)monotonic_ns();
}

/* The parameters of every transform and histogram job the bench runs. */
static const amp_transform_params bench_xor = { .op = AMP_OP_XOR, .value = 0x5a };
static const amp_hist_params bench_bytes = { .type = AMP_TYPE_UINT8, .bins = 256 };

/* One job of the chosen kind; returns amp's code. */
static int bench_call(amp_conn *c, const amp_opts *o, const struct bench_args *a,
                      const uint8_t *in)
{
    void *out = NULL;
    size_t n = 0;
    int rc;
    switch (a->kind) {
    case BENCH_TRANSFORM:
        rc = amp_transform(c, o, &bench_xor, in, a->size, &out, &n);
        break;
    case BENCH_HIST: {
        amp_hist h = { 0 };
        rc = amp_histogram(c, o, &bench_bytes, in, a->size, &h);
        amp_hist_free(&h);
        break;
    }
    case BENCH_FILL: {
        amp_fill_params p = { .type = AMP_TYPE_INT32, .count = a->size / 4, .step = 1 };
        rc = amp_fill(c, o, &p, &out, &n);
        break;
    }
    default:
        rc = amp_reverse(c, o, in, a->size, &out, &n);
        break;
    }
    amp_free(out);
    return rc;
}

/* Starts one call of the chosen kind without waiting (not fill). */
static int bench_start(amp_conn *c, const amp_opts *o, const struct bench_args *a,
                       const uint8_t *in, amp_call **call)
{
    switch (a->kind) {
    case BENCH_TRANSFORM:
        return amp_start_transform(c, o, &bench_xor, in, a->size, call);
    case BENCH_HIST:
        return amp_start_histogram(c, o, &bench_bytes, in, a->size, call);
    default:
        return amp_start_reverse(c, o, in, a->size, call);
    }
}

/* A finished started call's result, taken and dropped; returns its code. */
static int bench_finish(const struct bench_args *a, amp_call *call)
{
    int rc = amp_call_status(call);
    if (rc == 0 && a->kind == BENCH_HIST) {
        amp_hist h;
        rc = amp_call_hist(call, &h);
        amp_hist_free(&h);
    } else if (rc == 0) {
        void *out;
        size_t n;
        rc = amp_call_data(call, &out, &n);
        amp_free(out);
    }
    return rc;
}

static int bench_keep(struct bench_worker *w, uint64_t ns)
{
    if (w->nlat == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 4096;
        uint64_t *p = realloc(w->lat_ns, cap * sizeof(*p));
        if (!p)
            return -1;
        w->lat_ns = p;
        w->cap = cap;
    }
    w->lat_ns[w->nlat++] = ns;
    return 0;
}

/* Whether the worker should start another call. */
static bool bench_more(struct bench_worker *w)
{
    const struct bench_args *a = w->a;
    return a->count ? atomic_fetch_add(w->started, 1) < a->count
                    : bench_now_ns() < w->deadline_ns;
}

/* Counts one call that began at t0 and ended with rc. Returns -1 when
 * there is no memory left to keep its latency. */
static int bench_count(struct bench_worker *w, int rc, long long t0)
{
    if (rc == 0)
        return bench_keep(w, (uint64_t)(bench_now_ns() - t0));
    w->errors[-rc < BENCH_ERRORS && rc < 0 ? -rc : 0]++;
    return 0;
}

/* --in-flight 1: one blocking call after another. */
static void bench_worker_blocking(struct bench_worker *w, amp_conn *c, const uint8_t *in)
{
    while (bench_more(w)) {
        long long t0 = bench_now_ns();
        if (bench_count(w, bench_call(c, &w->ctx->opts, w->a, in), t0) != 0)
            break;
    }
}

/* --in-flight N: N started calls, each replaced by a new one as it finishes.
 * Each call carries its start time in its user pointer's slot. */
static void bench_worker_async(struct bench_worker *w, amp_conn *c, const uint8_t *in)
{
    const struct bench_args *a = w->a;
    long long *t0 = calloc(a->in_flight, sizeof(*t0));
    if (!t0)
        return;
    for (uint32_t i = 0; i < a->in_flight && bench_more(w); i++) {
        amp_call *call;
        t0[i] = bench_now_ns();
        int rc = bench_start(c, &w->ctx->opts, a, in, &call);
        if (rc != 0) {
            bench_count(w, rc, t0[i]);
            continue;
        }
        amp_call_set_user(call, &t0[i]);
    }
    amp_call *done;
    while (amp_in_flight(c) && amp_wait(c, -1, &done) == 0) {
        long long *slot = amp_call_user(done);
        bench_count(w, bench_finish(a, done), *slot);
        amp_call_free(done);
        if (!bench_more(w))
            continue;
        *slot = bench_now_ns();
        int rc = bench_start(c, &w->ctx->opts, a, in, &done);
        if (rc != 0)
            bench_count(w, rc, *slot);
        else
            amp_call_set_user(done, slot);
    }
    free(t0);
}

static void *bench_worker_main(void *arg)
{
    struct bench_worker *w = arg;
    const struct bench_args *a = w->a;
    amp_conn *c = NULL;
    w->connect_rc = amp_connect_with(w->ctx->address, &w->ctx->connect, &c);
    if (w->connect_rc != 0) {
        snprintf(w->connect_msg, sizeof w->connect_msg, "%s", amp_last_message(NULL));
        amp_close(c);
        return NULL;
    }
    uint8_t *in = calloc(1, a->size ? a->size : 1);
    if (!in) {
        w->connect_rc = AMP_ENOMEM;
        amp_close(c);
        return NULL;
    }
    for (size_t i = 0; i < a->size; i++)
        in[i] = (uint8_t)(i * 131 + 7);
    bench_call(c, &w->ctx->opts, a, in);   /* warm-up: connection, first-call costs */
    if (a->in_flight > 1)
        bench_worker_async(w, c, in);
    else
        bench_worker_blocking(w, c, in);
    free(in);
    amp_close(c);
    return NULL;
}

static int bench_cmp(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* The p-th percentile (0 < p <= 100) of n sorted values, in microseconds. */
static double bench_pct(const uint64_t *v, size_t n, double p)
{
    if (!n)
        return 0;
    size_t i = (size_t)(p / 100.0 * (double)n + 0.999999);
    i = i ? i - 1 : 0;
    return (double)v[i < n ? i : n - 1] / 1000.0;
}

static const char bench_short_options[] = "k:s:c:f:d:n:h";
static const struct option bench_options[] = {
    { "kind", required_argument, NULL, 'k' },     { "size", required_argument, NULL, 's' },
    { "connections", required_argument, NULL, 'c' },
    { "in-flight", required_argument, NULL, 'f' },
    { "duration", required_argument, NULL, 'd' }, { "count", required_argument, NULL, 'n' },
    { "help", no_argument, NULL, 'h' },           { NULL, 0, NULL, 0 },
};

static int bench_parse(int argc, char **argv, struct bench_args *a)
{
    memset(a, 0, sizeof(*a));
    a->kind = BENCH_REVERSE;
    a->size = BENCH_DEFAULT_SIZE;
    a->connections = BENCH_DEFAULT_CONNECTIONS;
    a->in_flight = BENCH_DEFAULT_IN_FLIGHT;
    a->seconds = BENCH_DEFAULT_SECONDS;
    int ch;
    while ((ch = getopt_long(argc, argv, bench_short_options, bench_options, NULL)) != -1) {
        switch (ch) {
        case 'k': {
            int k = choice_find(&choice_kind, optarg);
            if (k < 0) {
                char words[CHOICE_TEXT_MAX];
                choice_text(&choice_kind, words, sizeof words);
                return ampctl_usage_error("bench", "--kind: %s, not \"%s\"", words, optarg);
            }
            a->kind = (enum bench_kind)k;
            break;
        }
        case 's':
            if (size_text_parse(optarg, &a->size) != 0)
                return ampctl_usage_error("bench", "--size: not a byte count: \"%s\"", optarg);
            break;
        case 'c':
            if (parse_u32(optarg, BENCH_MAX_CONNECTIONS, &a->connections) != 0 ||
                !a->connections)
                return ampctl_usage_error("bench", "--connections: 1 to %d, not \"%s\"",
                                          BENCH_MAX_CONNECTIONS, optarg);
            break;
        case 'f':
            if (parse_u32(optarg, BENCH_MAX_IN_FLIGHT, &a->in_flight) != 0 || !a->in_flight)
                return ampctl_usage_error("bench", "--in-flight: 1 to %d, not \"%s\"",
                                          BENCH_MAX_IN_FLIGHT, optarg);
            break;
        case 'd':
            if (parse_double(optarg, &a->seconds) != 0 || !(a->seconds > 0))
                return ampctl_usage_error("bench", "--duration: seconds > 0, not \"%s\"",
                                          optarg);
            break;
        case 'n':
            if (parse_u64(optarg, &a->count) != 0 || !a->count)
                return ampctl_usage_error("bench", "--count: a number >= 1, not \"%s\"", optarg);
            break;
        case 'h': bench_usage(stdout); return AMPCTL_OK;
        default: return ampctl_bad_option_in("bench", argv, bench_options);
        }
    }
    if (optind < argc)
        return ampctl_usage_error("bench", "unexpected argument \"%s\"", argv[optind]);
    if (a->kind == BENCH_FILL && a->in_flight > 1)
        return ampctl_usage_error("bench", "--in-flight over 1 is for reverse, transform and hist");
    if (a->kind == BENCH_FILL && a->size % 4)
        return ampctl_usage_error("bench", "--size of a fill must be whole int32s (a multiple "
                                           "of 4)");
    return -1;
}

static void bench_report(const struct ampctl *ctx, const struct bench_args *a,
                         const uint64_t *lat, size_t n, const uint64_t *errors, uint64_t failed,
                         double secs)
{
    static const double pcts[] = { 50, 90, 99, 99.9 };
    static const char *const pct_names[] = { "p50", "p90", "p99", "p99.9" };
    double rate = secs > 0 ? (double)n / secs : 0;
    const char *device = ctx->opts.device && *ctx->opts.device ? ctx->opts.device : "";
    if (ctx->json) {
        printf("{\"kind\":\"%s\",\"size\":%" PRIu64 ",\"connections\":%u,\"in_flight\":%u,"
               "\"device\":",
               choice_word(&choice_kind, a->kind), a->size, a->connections, a->in_flight);
        json_string(stdout, device);
        printf(",\"seconds\":%.3f,\"calls\":%zu,\"calls_per_s\":%.1f,\"latency_us\":{", secs, n,
               rate);
        for (size_t i = 0; i < 4; i++)
            printf("%s\"%s\":%.1f", i ? "," : "", pct_names[i], bench_pct(lat, n, pcts[i]));
        printf(",\"max\":%.1f},\"failed\":%" PRIu64 ",\"errors\":{", n ? (double)lat[n - 1] / 1000.0 : 0,
               failed);
        for (int e = 0, first = 1; e < BENCH_ERRORS; e++) {
            if (!errors[e])
                continue;
            printf("%s", first ? "" : ",");
            json_string(stdout, amp_strerror(-e));
            printf(":%" PRIu64, errors[e]);
            first = 0;
        }
        printf("}}\n");
        return;
    }
    printf("%s of %" PRIu64 " bytes, %u connection%s x %u in flight, device %s: %zu calls in "
           "%.2f s\n",
           choice_word(&choice_kind, a->kind), a->size, a->connections, a->connections == 1 ? "" : "s",
           a->in_flight, *device ? device : "(daemon's choice)", n, secs);
    printf("%-12s %12.0f\n", "calls/s", rate);
    char t[HUMAN_TEXT_MAX];
    for (size_t i = 0; i < 4; i++) {
        human_us(t, sizeof t, bench_pct(lat, n, pcts[i]));
        printf("%-12s %12s\n", pct_names[i], t);
    }
    human_us(t, sizeof t, n ? (double)lat[n - 1] / 1000.0 : 0);
    printf("%-12s %12s\n", "max", t);
    printf("%-12s %12" PRIu64 "\n", "failed", failed);
    for (int e = 0; e < BENCH_ERRORS; e++)
        if (errors[e])
            printf("  %-24s %" PRIu64 "\n", amp_strerror(-e), errors[e]);
}

static int bench_run(struct ampctl *ctx, int argc, char **argv)
{
    struct bench_args a;
    int rc = bench_parse(argc, argv, &a);
    if (rc >= 0)
        return rc;
    rc = ampctl_connect_prepare(ctx);
    if (rc != AMPCTL_OK)
        return rc;
    struct bench_worker *w = calloc(a.connections, sizeof(*w));
    if (!w) {
        ampctl_error("out of memory");
        return AMPCTL_EIO;
    }
    atomic_uint_fast64_t started = 0;
    long long t0 = bench_now_ns();
    uint32_t running = 0;
    for (; running < a.connections; running++) {
        w[running] = (struct bench_worker){ .ctx = ctx, .a = &a, .started = &started,
                                            .deadline_ns = t0 + (long long)(a.seconds * 1e9) };
        if (pthread_create(&w[running].thread, NULL, bench_worker_main, &w[running]) != 0)
            break;
    }
    size_t total = 0;
    for (uint32_t i = 0; i < running; i++) {
        pthread_join(w[i].thread, NULL);
        total += w[i].nlat;
    }
    double secs = (double)(bench_now_ns() - t0) / 1e9;
    rc = AMPCTL_OK;
    for (uint32_t i = 0; i < running && rc == AMPCTL_OK; i++) {
        if (w[i].connect_rc != 0) {
            ampctl_error("connection %u: %s: %s", i, amp_strerror(w[i].connect_rc),
                         w[i].connect_msg);
            rc = AMPCTL_ECONNECT;
        }
    }
    if (running < a.connections && rc == AMPCTL_OK) {
        ampctl_error("cannot start thread %u", running);
        rc = AMPCTL_EIO;
    }
    uint64_t *lat = rc == AMPCTL_OK ? malloc((total ? total : 1) * sizeof(*lat)) : NULL;
    if (rc == AMPCTL_OK && !lat) {
        ampctl_error("out of memory");
        rc = AMPCTL_EIO;
    }
    if (rc == AMPCTL_OK) {
        uint64_t errors[BENCH_ERRORS] = { 0 }, failed = 0;
        size_t n = 0;
        for (uint32_t i = 0; i < running; i++) {
            if (w[i].nlat)
                memcpy(lat + n, w[i].lat_ns, w[i].nlat * sizeof(*lat));
            n += w[i].nlat;
            for (int e = 0; e < BENCH_ERRORS; e++) {
                errors[e] += w[i].errors[e];
                failed += w[i].errors[e];
            }
        }
        qsort(lat, n, sizeof(*lat), bench_cmp);
        bench_report(ctx, &a, lat, n, errors, failed, secs);
        rc = failed ? AMPCTL_EREFUSED : AMPCTL_OK;
    }
    free(lat);
    for (uint32_t i = 0; i < running; i++)
        free(w[i].lat_ns);
    free(w);
    return rc;
}

const struct ampctl_cmd cmd_bench = {
    .name = "bench",
    .summary = "load the daemon with jobs; calls/s and latency percentiles",
    .run = bench_run,
    .usage = bench_usage,
    .options = bench_options,
    .short_options = bench_short_options,
    .json = 1,
};
