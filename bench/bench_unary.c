/* SPDX-License-Identifier: MIT */
/* bench_unary.c: one large unary call against the socket it travels on.
 *
 * A unary Transform or Reverse sends its whole input in one request
 * message and gets its whole output back in one reply. Issue 11 asks that
 * such a call run at the socket's speed, not wait on the layers between:
 * this program measures both in one run, so that load from elsewhere on a
 * shared machine moves them together. For --size random bytes:
 *
 *   - raw one-way: the bytes through a Unix socket pair, a writer and a
 *     reader thread, 1 MiB per write, into memory already touched;
 *   - raw there and back: the bytes sent, echoed by a thread once all have
 *     arrived, and read back: the traffic of a unary call, with nothing
 *     between (no HTTP/2, no protobuf, no device);
 *   - unary transform (add), reverse, histogram (256 bins) and a pipeline
 *     (transform, then histogram) through a real ampd and libampclient,
 *     each result checked.
 *
 * Each figure is the median of --reps runs after one untimed run. GB/s is
 * --size bytes over the seconds, both ways included. For the calls it also
 * prints the client's CPU seconds per call (user + system, median), and
 * the daemon's (its total over the timed calls / their count, from
 * /proc: a daemon found with --address has none), so that a call that
 * waits (wall well above both) shows itself. ampd is started by the
 * bench (--ampd, else $AMPD_BIN, else the build's) or found running
 * (--address). Exit status: 0, 1 when a result differs, 2 when something
 * failed to run or the ampd it started did not exit 0 after SIGTERM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "amp.h"
#include "bench_daemon.h"
#include "bench_util.h"

#define BENCH_SIZE_DEFAULT (32ull << 20)
#define BENCH_REPS_DEFAULT 5
#define BENCH_REPS_MAX 64
#define BENCH_SOCK_WRITE (1u << 20)   /* bytes per raw write: AMP_STREAM_CHUNK's size */
#define BENCH_ADD_VALUE 0x5a
#define BENCH_SEED 1111
#define BENCH_CALL_TIMEOUT_MS 600000

/* BENCH_AMPD_DEFAULT, the ampd binary when neither --ampd nor $AMPD_BIN
 * names one, comes from CMake: the build's own ampd. */

struct bench_opts {
    size_t size;
    int reps;
    const char *ampd;
    const char *address;
};

static int bench_failures;


static double bench_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* CPU seconds (user + system, every thread) of process pid so far, from
 * /proc; -1 when unknown. */
static double bench_cpu_of(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* Fields 14 and 15 (utime, stime), counted after the ")" that ends
     * field 2, the command name, which may hold spaces. */
    const char *p = strrchr(buf, ')');
    unsigned long long ut, st;
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
                     &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* --- the raw socket ------------------------------------------------------------ */

static int bench_write_all(int fd, const uint8_t *p, size_t len)
{
    for (size_t done = 0; done < len;) {
        size_t n = len - done < BENCH_SOCK_WRITE ? len - done : BENCH_SOCK_WRITE;
        ssize_t w = write(fd, p + done, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return errno ? errno : EIO;
        done += (size_t)w;
    }
    return 0;
}

static int bench_read_all(int fd, uint8_t *p, size_t len)
{
    for (size_t done = 0; done < len;) {
        size_t n = len - done < BENCH_SOCK_WRITE ? len - done : BENCH_SOCK_WRITE;
        ssize_t r = read(fd, p + done, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r == 0 ? EPIPE : errno;
        done += (size_t)r;
    }
    return 0;
}

/* The far end of the socket: reads len bytes into buf, then (echo) sends
 * them back. */
struct bench_peer {
    int fd;
    uint8_t *buf;
    size_t len;
    int echo;
    int err;
};

static void *bench_peer_run(void *arg)
{
    struct bench_peer *p = arg;
    p->err = bench_read_all(p->fd, p->buf, p->len);
    if (!p->err && p->echo)
        p->err = bench_write_all(p->fd, p->buf, p->len);
    return NULL;
}

/* Seconds to send in through a fresh Unix socket pair; with echo, until
 * the same bytes are back in back. */
static double bench_raw_once(const uint8_t *in, uint8_t *far, uint8_t *back, size_t len,
                             int echo)
{
    int fd[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd) < 0)
        bench_die("socketpair: %s", strerror(errno));
    struct bench_peer peer = {.fd = fd[1], .buf = far, .len = len, .echo = echo};
    pthread_t th;
    double t0 = bench_now();
    int e = pthread_create(&th, NULL, bench_peer_run, &peer);
    if (e != 0)
        bench_die("pthread_create: %s", strerror(e));
    e = bench_write_all(fd[0], in, len);
    if (!e && echo)
        e = bench_read_all(fd[0], back, len);
    pthread_join(th, NULL);
    double t = bench_now() - t0;
    close(fd[0]);
    close(fd[1]);
    if (e || peer.err)
        bench_die("raw socket: %s", strerror(e ? e : peer.err));
    if (memcmp(far, in, len) != 0 || (echo && memcmp(back, in, len) != 0))
        bench_die("raw socket: the bytes that arrived differ");
    return t;
}

static double bench_raw(const struct bench_opts *o, const uint8_t *in, int echo)
{
    uint8_t *far = bench_alloc_touched(o->size), *back = bench_alloc_touched(o->size);
    double t[BENCH_REPS_MAX];
    bench_raw_once(in, far, back, o->size, echo);
    for (int r = 0; r < o->reps; r++)
        t[r] = bench_raw_once(in, far, back, o->size, echo);
    free(far);
    free(back);
    return bench_median(t, o->reps);
}

/* --- unary calls through ampd --------------------------------------------------- */

enum bench_call { CALL_TRANSFORM, CALL_REVERSE, CALL_HISTOGRAM, CALL_PIPELINE, BENCH_NCALLS };

static const char *const bench_call_names[BENCH_NCALLS] = {
    "unary transform", "unary reverse", "unary histogram", "unary pipeline"};

/* What each call must return: its bytes (the pipeline's transform step's)
 * and the input's 256-bin histogram (the pipeline's histogram step sees
 * the transformed bytes). */
struct bench_want {
    const uint8_t *data[BENCH_NCALLS];
    uint64_t counts[256], added_counts[256];
};

static void bench_transform_params(amp_transform_params *p)
{
    memset(p, 0, sizeof *p);
    p->op = AMP_OP_ADD;
    p->value = BENCH_ADD_VALUE;
}

static void bench_hist_params(amp_hist_params *p)
{
    memset(p, 0, sizeof *p);
    p->type = AMP_TYPE_UINT8;
    p->bins = 256;
}

static int bench_hist_ok(const amp_hist *h, const uint64_t want[256])
{
    return h->bins == 256 && memcmp(h->counts, want, 256 * sizeof *want) == 0;
}

/* Runs one call; 0, 1 when its result differs, or an AMP_E* code. */
static int bench_call(amp_conn *c, enum bench_call which, const uint8_t *in, size_t len,
                      const struct bench_want *w)
{
    amp_opts ao = { .size = sizeof(amp_opts), .timeout_ms = BENCH_CALL_TIMEOUT_MS};
    amp_transform_params tp;
    amp_hist_params hp;
    bench_transform_params(&tp);
    bench_hist_params(&hp);
    void *out = NULL;
    size_t out_len = 0;
    int rc, bad;
    switch (which) {
    case CALL_HISTOGRAM: {
        amp_hist h;
        if ((rc = amp_histogram(c, &ao, &hp, in, len, &h)) != 0)
            return rc;
        bad = !bench_hist_ok(&h, w->counts);
        amp_hist_free(&h);
        return bad;
    }
    case CALL_PIPELINE: {
        amp_step steps[2];
        memset(steps, 0, sizeof steps);
        steps[0].size = sizeof steps[0];
        steps[0].kind = AMP_STEP_TRANSFORM;
        steps[0].transform = tp;
        steps[1].size = sizeof steps[1];
        steps[1].kind = AMP_STEP_HISTOGRAM;
        steps[1].hist = hp;
        amp_step_result *r;
        if ((rc = amp_pipeline(c, &ao, steps, 2, in, len, &r)) != 0)
            return rc;
        bad = r[0].len != len || memcmp(r[0].data, w->data[which], len) != 0 ||
              !bench_hist_ok(&r[1].hist, w->added_counts);
        amp_step_results_free(r, 2);
        return bad;
    }
    case CALL_REVERSE:
        rc = amp_reverse(c, &ao, in, len, &out, &out_len);
        break;
    default:
        rc = amp_transform(c, &ao, &tp, in, len, &out, &out_len);
        break;
    }
    if (rc != 0)
        return rc;
    bad = out_len != len || memcmp(out, w->data[which], len) != 0;
    amp_free(out);
    return bad;
}

/* One call; its wall seconds, and its client CPU seconds in *cpu. */
static double bench_call_once(amp_conn *c, enum bench_call which, const uint8_t *in, size_t len,
                              const struct bench_want *w, double *cpu)
{
    double c0 = bench_cpu(), t0 = bench_now();
    int rc = bench_call(c, which, in, len, w);
    double t = bench_now() - t0;
    *cpu = bench_cpu() - c0;
    if (rc < 0)
        bench_die("%s: %s: %s", bench_call_names[which], amp_strerror(rc), amp_last_message(c));
    if (rc > 0) {
        fprintf(stderr, "bench_unary: MISMATCH: %s returned other results\n",
                bench_call_names[which]);
        bench_failures++;
    }
    return t;
}

/* Per call: wall seconds and client CPU seconds (medians), and the
 * daemon's CPU seconds (mean; -1 when its pid is unknown). */
struct bench_result {
    double wall, cpu, daemon_cpu;
};

static void bench_calls(const struct bench_opts *o, const uint8_t *in, const struct bench_want *w,
                        struct bench_result res[BENCH_NCALLS])
{
    struct bench_daemon dm = { 0 };   /* pid 0: a daemon someone else runs */
    char err[256];
    if (o->address)
        snprintf(dm.address, sizeof dm.address, "%s", o->address);
    else if (bench_daemon_start(&dm, o->ampd, "bench_unary", NULL, err, sizeof err) != 0) {
        fprintf(stderr, "bench_unary: %s\n", err);
        exit(2);
    }
    amp_conn *c;
    if (amp_connect(dm.address, &c) != 0)
        bench_die("%s", amp_last_message(NULL));
    for (int k = 0; k < BENCH_NCALLS; k++) {
        double t[BENCH_REPS_MAX], u[BENCH_REPS_MAX], once;
        bench_call_once(c, k, in, o->size, w, &once);   /* warm-up */
        double d0 = dm.pid > 0 ? bench_cpu_of(dm.pid) : -1;
        for (int r = 0; r < o->reps; r++)
            t[r] = bench_call_once(c, k, in, o->size, w, &u[r]);
        double d1 = dm.pid > 0 ? bench_cpu_of(dm.pid) : -1;
        res[k].wall = bench_median(t, o->reps);
        res[k].cpu = bench_median(u, o->reps);
        res[k].daemon_cpu = d0 >= 0 && d1 >= 0 ? (d1 - d0) / o->reps : -1;
    }
    printf("# device %s\n", amp_last_device(c));
    amp_close(c);
    if (bench_daemon_stop(&dm) != 0)
        exit(2);
}

/* --- options and main ------------------------------------------------------------- */

static void bench_usage(void)
{
    fprintf(stderr,
            "usage: bench_unary [--size N] [--reps N] [--ampd PATH | --address ADDR]\n"
            "  --size    bytes of each call's input (default 32M; K, M, G suffixes)\n"
            "  --reps    median of N runs after one warm-up (default 5, at most 64)\n"
            "  --ampd    the ampd binary to start (default $AMPD_BIN, else the build's)\n"
            "  --address a running ampd to use instead\n");
    exit(2);
}

static void bench_parse(int argc, char **argv, struct bench_opts *o)
{
    o->size = BENCH_SIZE_DEFAULT;
    o->reps = BENCH_REPS_DEFAULT;
    o->ampd = getenv("AMPD_BIN") ? getenv("AMPD_BIN") : BENCH_AMPD_DEFAULT;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            bench_usage();
        const char *v = argv[++i];
        if (strcmp(argv[i - 1], "--size") == 0)
            o->size = (size_t)bench_parse_size(v);
        else if (strcmp(argv[i - 1], "--reps") == 0)
            o->reps = atoi(v);
        else if (strcmp(argv[i - 1], "--ampd") == 0)
            o->ampd = v;
        else if (strcmp(argv[i - 1], "--address") == 0)
            o->address = v;
        else
            bench_usage();
    }
    if (o->size == 0 || o->reps < 1 || o->reps > BENCH_REPS_MAX)
        bench_usage();
}

static void bench_row(const char *what, double s, double cpu, double daemon_cpu, size_t size,
                      double raw)
{
    char note[64] = "", dnote[64] = "";
    if (cpu >= 0)
        snprintf(note, sizeof note, "%.4f", cpu);
    if (daemon_cpu >= 0)
        snprintf(dnote, sizeof dnote, "%.4f", daemon_cpu);
    printf("%-22s %10.4f %8.3f %10.3f %10s %10s\n", what, s, (double)size / s / 1e9, raw / s,
           note, dnote);
}

/* The 256-bin histogram of n bytes. */
static void bench_count(const uint8_t *p, size_t n, uint64_t counts[256])
{
    memset(counts, 0, 256 * sizeof *counts);
    for (size_t i = 0; i < n; i++)
        counts[p[i]]++;
}

int main(int argc, char **argv)
{
    struct bench_opts o;
    memset(&o, 0, sizeof o);
    bench_parse(argc, argv, &o);
    signal(SIGPIPE, SIG_IGN);
    uint8_t *in = bench_alloc_touched(o.size);
    bench_random(in, o.size, BENCH_SEED);
    uint8_t *added = bench_alloc_touched(o.size), *reversed = bench_alloc_touched(o.size);
    for (size_t i = 0; i < o.size; i++) {
        added[i] = (uint8_t)(in[i] + BENCH_ADD_VALUE);
        reversed[i] = in[o.size - 1 - i];
    }
    struct bench_want want = {.data = {added, reversed, NULL, added}};
    bench_count(in, o.size, want.counts);
    bench_count(added, o.size, want.added_counts);
    char size[32];
    bench_size_label(o.size, size, sizeof size, false);
    printf("# size %s, median of %d after 1 warm-up; GB/s = size / s; "
           "x raw = the time of a raw one-way copy / this time\n",
           size, o.reps);
    fflush(stdout);
    double raw1 = bench_raw(&o, in, 0);
    double raw2 = bench_raw(&o, in, 1);
    struct bench_result res[BENCH_NCALLS];
    bench_calls(&o, in, &want, res);
    printf("%-22s %10s %8s %10s %10s %10s\n", "path", "seconds", "GB/s", "x raw", "client s",
           "daemon s");
    bench_row("raw one-way", raw1, -1, -1, o.size, raw1);
    bench_row("raw there and back", raw2, -1, -1, o.size, raw1);
    for (int k = 0; k < BENCH_NCALLS; k++)
        bench_row(bench_call_names[k], res[k].wall, res[k].cpu, res[k].daemon_cpu, o.size, raw1);
    free(in);
    free(added);
    free(reversed);
    return bench_failures ? 1 : 0;
}
