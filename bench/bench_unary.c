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
 *   - unary transform (add) and unary reverse through a real ampd and
 *     libampclient (amp_transform, amp_reverse), each result checked.
 *
 * Each figure is the median of --reps runs after one untimed run. GB/s is
 * --size bytes over the seconds, both ways included. For the calls it also
 * prints the client's CPU seconds per call (user + system), so that a call
 * that waits (wall well above CPU) shows itself. ampd is started by the
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

static void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void bench_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench_unary: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static uint8_t *bench_malloc(size_t n)
{
    uint8_t *p = malloc(n ? n : 1);
    if (!p)
        bench_die("out of memory (%zu bytes)", n);
    memset(p, 0, n);   /* touched now: no page faults inside a timing */
    return p;
}


static double bench_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static double bench_median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof t[0], bench_cmp_double);
    return t[n / 2];
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
    uint8_t *far = bench_malloc(o->size), *back = bench_malloc(o->size);
    double t[BENCH_REPS_MAX];
    bench_raw_once(in, far, back, o->size, echo);
    for (int r = 0; r < o->reps; r++)
        t[r] = bench_raw_once(in, far, back, o->size, echo);
    free(far);
    free(back);
    return bench_median(t, o->reps);
}

/* --- unary calls through ampd --------------------------------------------------- */

enum bench_call { CALL_TRANSFORM, CALL_REVERSE, BENCH_NCALLS };

static const char *const bench_call_names[BENCH_NCALLS] = {"unary transform", "unary reverse"};

static int bench_call(amp_conn *c, enum bench_call which, const uint8_t *in, size_t len,
                      void **out, size_t *out_len)
{
    amp_opts ao = {.timeout_ms = BENCH_CALL_TIMEOUT_MS};
    if (which == CALL_REVERSE)
        return amp_reverse(c, &ao, in, len, out, out_len);
    amp_transform_params p;
    memset(&p, 0, sizeof p);
    p.op = AMP_OP_ADD;
    p.value = BENCH_ADD_VALUE;
    return amp_transform(c, &ao, &p, in, len, out, out_len);
}

/* One call; its wall seconds, and its client CPU seconds in *cpu. */
static double bench_call_once(amp_conn *c, enum bench_call which, const uint8_t *in,
                              const uint8_t *want, size_t len, double *cpu)
{
    void *out = NULL;
    size_t out_len = 0;
    double c0 = bench_cpu(), t0 = bench_now();
    int rc = bench_call(c, which, in, len, &out, &out_len);
    double t = bench_now() - t0;
    *cpu = bench_cpu() - c0;
    if (rc != 0)
        bench_die("%s: %s: %s", bench_call_names[which], amp_strerror(rc), amp_last_message(c));
    if (out_len != len || memcmp(out, want, len) != 0) {
        fprintf(stderr, "bench_unary: MISMATCH: %s returned other bytes\n",
                bench_call_names[which]);
        bench_failures++;
    }
    amp_free(out);
    return t;
}

static void bench_calls(const struct bench_opts *o, const uint8_t *in,
                        const uint8_t *want[BENCH_NCALLS], double wall[BENCH_NCALLS],
                        double cpu[BENCH_NCALLS])
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
        bench_call_once(c, k, in, want[k], o->size, &once);   /* warm-up */
        for (int r = 0; r < o->reps; r++)
            t[r] = bench_call_once(c, k, in, want[k], o->size, &u[r]);
        wall[k] = bench_median(t, o->reps);
        cpu[k] = bench_median(u, o->reps);
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

static void bench_row(const char *what, double s, double cpu, size_t size, double raw)
{
    char note[64] = "";
    if (cpu >= 0)
        snprintf(note, sizeof note, "cpu %.4f s", cpu);
    printf("%-22s %10.4f %8.3f %10.3f  %s\n", what, s, (double)size / s / 1e9, raw / s, note);
}

int main(int argc, char **argv)
{
    struct bench_opts o;
    memset(&o, 0, sizeof o);
    bench_parse(argc, argv, &o);
    signal(SIGPIPE, SIG_IGN);
    uint8_t *in = bench_malloc(o.size);
    bench_random(in, o.size, BENCH_SEED);
    uint8_t *added = bench_malloc(o.size), *reversed = bench_malloc(o.size);
    for (size_t i = 0; i < o.size; i++) {
        added[i] = (uint8_t)(in[i] + BENCH_ADD_VALUE);
        reversed[i] = in[o.size - 1 - i];
    }
    const uint8_t *want[BENCH_NCALLS] = {added, reversed};
    char size[32];
    bench_size_label(o.size, size, sizeof size, false);
    printf("# size %s, median of %d after 1 warm-up; GB/s = size / s; "
           "x raw = the time of a raw one-way copy / this time\n",
           size, o.reps);
    fflush(stdout);
    double raw1 = bench_raw(&o, in, 0);
    double raw2 = bench_raw(&o, in, 1);
    double wall[BENCH_NCALLS], cpu[BENCH_NCALLS];
    bench_calls(&o, in, want, wall, cpu);
    printf("%-22s %10s %8s %10s  %s\n", "path", "seconds", "GB/s", "x raw", "client");
    bench_row("raw one-way", raw1, -1, o.size, raw1);
    bench_row("raw there and back", raw2, -1, o.size, raw1);
    for (int k = 0; k < BENCH_NCALLS; k++)
        bench_row(bench_call_names[k], wall[k], cpu[k], o.size, raw1);
    free(in);
    free(added);
    free(reversed);
    return bench_failures ? 1 : 0;
}
