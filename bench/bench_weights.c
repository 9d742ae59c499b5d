/* SPDX-License-Identifier: MIT */
/* bench_weights.c: two local clients of weights 3 and 1 sharing one
 * device (issue 34: "two bulk clients with weights 3:1: device throughput
 * split 3:1 within 10%").
 *
 * The split shows only where the device is what both wait for: streams
 * and unary calls are bound by their sockets (bench_tenants' weights
 * phase measured 1:1 for that reason), so each client here keeps --jobs
 * region transforms of --bytes in flight on --device, each on its own
 * connection: no job byte crosses a socket. A client on a Unix socket is
 * its uid (client_share.h), so the light one is a child process that runs
 * as --light-uid (default 65534; the bench must start as root) and ampd
 * weighs them with --uid-weight. Both count the bytes of the jobs they
 * finish inside one window of --seconds that starts after a warm-up, and
 * keep the device busy past its end. Each client checks its first result
 * against the CPU's xor. Exit status: 0; 1 when a result differs; 2 when
 * something failed to run; 77 when not started as root.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "amp.h"
#include "bench_daemon.h"
#include "bench_util.h"

#define BW_WEIGHT_HEAVY 3
#define BW_WEIGHT_LIGHT 1
#define BW_SPLIT_TOL 0.10          /* the target: the split within this of 3:1 */
#define BW_WARMUP_S 1.0            /* before the window: both clients under way */
#define BW_TAIL_S 0.5              /* after it: still busy, so the window's end is shared */
#define BW_XOR 0x5a
#define BW_NOT_ROOT 77             /* ctest's skip code: the smoke test needs root */

struct bw_opts {
    const char *ampd;
    const char *device;
    uint64_t bytes;
    int jobs;
    double seconds;
    uid_t light_uid;
    const char *ampd_args[32];
};

/* One client's worker: its own connection and regions, transforms until
 * the window and the tail are over. */
struct bw_worker {
    const struct bw_opts *o;
    const char *address;
    double start, end;             /* the window, bench_now() */
    uint64_t bytes;                /* of jobs finished inside the window */
    bool wrong;                    /* the first result differed */
    pthread_t thread;
};

static void *bw_worker_run(void *arg)
{
    struct bw_worker *w = arg;
    amp_conn *c = NULL;
    amp_region *in = NULL, *out = NULL;
    if (amp_connect(w->address, &c) != 0 || amp_region_create(c, w->o->bytes, &in) != 0 ||
        amp_region_create(c, w->o->bytes, &out) != 0)
        bench_die("uid %u: connecting and making regions: %s", (unsigned)getuid(),
                  c ? amp_last_message(c) : "no connection");
    uint8_t *src = amp_region_data(in);
    bench_random(src, w->o->bytes, (uint64_t)(uintptr_t)w);
    amp_opts o = {.size = sizeof o, .device = w->o->device};
    amp_step st = {.size = sizeof st, .kind = AMP_STEP_TRANSFORM,
                   .transform = {.op = AMP_OP_XOR, .value = BW_XOR}};
    amp_slice si = {.size = sizeof si, .region = in, .length = w->o->bytes};
    amp_slice so = {.size = sizeof so, .region = out, .length = w->o->bytes};
    bool first = true;
    for (double now = bench_now(); now < w->end + BW_TAIL_S; now = bench_now()) {
        amp_step_result *res = NULL;
        if (amp_run_region(c, &o, &st, 1, &si, &so, &res) != 0)
            bench_die("uid %u: a region transform: %s", (unsigned)getuid(), amp_last_message(c));
        amp_step_results_free(res, 1);
        double done = bench_now();
        if (done >= w->start && done < w->end)
            w->bytes += w->o->bytes;
        if (first) {
            const uint8_t *dst = amp_region_data(out);
            for (size_t i = 0; i < w->o->bytes && !w->wrong; i += 4093)
                w->wrong = dst[i] != (uint8_t)(src[i] ^ BW_XOR);
            first = false;
        }
    }
    amp_region_release(in);
    amp_region_release(out);
    amp_close(c);
    return NULL;
}

/* One client: --jobs workers over [start, end). Returns its bytes in the
 * window; *wrong when a result differed. */
static uint64_t bw_client(const struct bw_opts *o, const char *address, double start, double end,
                          bool *wrong)
{
    struct bw_worker *ws = calloc((size_t)o->jobs, sizeof(*ws));
    if (!ws)
        bench_die("out of memory");
    for (int i = 0; i < o->jobs; i++) {
        ws[i] = (struct bw_worker){.o = o, .address = address, .start = start, .end = end};
        if (pthread_create(&ws[i].thread, NULL, bw_worker_run, &ws[i]) != 0)
            bench_die("pthread_create failed");
    }
    uint64_t bytes = 0;
    for (int i = 0; i < o->jobs; i++) {
        pthread_join(ws[i].thread, NULL);
        bytes += ws[i].bytes;
        *wrong |= ws[i].wrong;
    }
    free(ws);
    return bytes;
}

/* The light client in a child running as o->light_uid; its bytes come back
 * through fd. */
static pid_t bw_light_start(const struct bw_opts *o, const char *address, double start,
                            double end, int *fd)
{
    int p[2];
    if (pipe(p) != 0)
        bench_die("pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        bench_die("fork: %s", strerror(errno));
    if (pid == 0) {
        close(p[0]);
        if (setgid((gid_t)o->light_uid) != 0 || setuid(o->light_uid) != 0) {
            fprintf(stderr, "bench_weights: cannot run as uid %u (%s): start as root\n",
                    (unsigned)o->light_uid, strerror(errno));
            _exit(2);
        }
        bool wrong = false;
        uint64_t bytes = bw_client(o, address, start, end, &wrong);
        uint64_t msg[2] = {bytes, wrong};
        _exit(write(p[1], msg, sizeof msg) == (ssize_t)sizeof msg ? 0 : 2);
    }
    close(p[1]);
    *fd = p[0];
    return pid;
}

static void bw_usage(void)
{
    fprintf(stderr,
            "usage: bench_weights [--ampd PATH] [--device 0] [--bytes 256M] [--jobs 4]\n"
            "                     [--seconds 3] [--light-uid 65534] [-- AMPD-OPTIONS...]\n");
    exit(2);
}

static void bw_parse(int argc, char **argv, struct bw_opts *o)
{
    *o = (struct bw_opts){.ampd = BENCH_AMPD_DEFAULT, .device = "0", .bytes = 256ull << 20,
                          .jobs = 4, .seconds = 3.0, .light_uid = 65534};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--") == 0) {
            for (int k = 0; i + 1 < argc && k < 31; k++)
                o->ampd_args[k] = argv[++i];
            break;
        }
        if (!v)
            bw_usage();
        if (strcmp(a, "--ampd") == 0)
            o->ampd = v;
        else if (strcmp(a, "--device") == 0)
            o->device = v;
        else if (strcmp(a, "--bytes") == 0)
            o->bytes = bench_parse_size(v);
        else if (strcmp(a, "--jobs") == 0)
            o->jobs = atoi(v);
        else if (strcmp(a, "--seconds") == 0)
            o->seconds = atof(v);
        else if (strcmp(a, "--light-uid") == 0)
            o->light_uid = (uid_t)strtoul(v, NULL, 10);
        else
            bw_usage();
        i++;
    }
    if (o->bytes == 0 || o->jobs < 1 || o->jobs > 64 || o->seconds <= 0)
        bw_usage();
}

int main(int argc, char **argv)
{
    struct bw_opts o;
    bw_parse(argc, argv, &o);
    if (geteuid() != 0) {
        fprintf(stderr, "bench_weights: the light client runs as another uid: start as root\n");
        return BW_NOT_ROOT;
    }
    if (o.light_uid == getuid())
        bench_die("--light-uid %u is this process's own uid: the two clients would be one",
                  (unsigned)o.light_uid);
    char heavy[48], light[48], regions[32];
    snprintf(heavy, sizeof heavy, "%u:%d", (unsigned)getuid(), BW_WEIGHT_HEAVY);
    snprintf(light, sizeof light, "%u:%d", (unsigned)o.light_uid, BW_WEIGHT_LIGHT);
    snprintf(regions, sizeof regions, "%" PRIu64, 4 * (uint64_t)o.jobs * o.bytes);
    const char *args[48] = {"--socket-mode", "0666", "--uid-weight", heavy, "--uid-weight", light,
                            "--max-region-bytes", regions, "--max-client-region-bytes", regions};
    size_t n = 10;
    for (size_t i = 0; o.ampd_args[i] && n < 47; i++)
        args[n++] = o.ampd_args[i];
    struct bench_daemon dm;
    char err[256];
    if (bench_daemon_start(&dm, o.ampd, "bench_weights", args, err, sizeof err) != 0)
        bench_die("starting ampd: %s", err);
    chmod(dm.dir, 0755);   /* the light client's uid reaches the socket */

    double start = bench_now() + BW_WARMUP_S, end = start + o.seconds;
    int fd;
    pid_t child = bw_light_start(&o, dm.address, start, end, &fd);
    bool wrong = false;
    uint64_t heavy_bytes = bw_client(&o, dm.address, start, end, &wrong);
    uint64_t msg[2] = {0, 0};
    int status = 0;
    bool got = read(fd, msg, sizeof msg) == (ssize_t)sizeof msg;
    waitpid(child, &status, 0);
    close(fd);
    int stopped = bench_daemon_stop(&dm);
    if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || stopped != 0)
        bench_die("the light client or ampd failed (child status %d)", status);
    wrong |= msg[1] != 0;

    double h = (double)heavy_bytes / o.seconds / 1e9, l = (double)msg[0] / o.seconds / 1e9;
    double ratio = l > 0 ? h / l : 0, want = (double)BW_WEIGHT_HEAVY / BW_WEIGHT_LIGHT;
    bool met = ratio >= want * (1 - BW_SPLIT_TOL) && ratio <= want * (1 + BW_SPLIT_TOL);
    char size[32];
    bench_size_label(o.bytes, size, sizeof size, true);
    printf("# bench_weights: two uids of weights %d:%d, each %d region transforms of %s in flight "
           "on device %s; %.1f s window\n",
           BW_WEIGHT_HEAVY, BW_WEIGHT_LIGHT, o.jobs, size, o.device, o.seconds);
    printf("| client | weight | GB/s | share |\n|---|---:|---:|---:|\n");
    printf("| uid %u | %d | %.2f | %.3f |\n", (unsigned)getuid(), BW_WEIGHT_HEAVY, h,
           h + l > 0 ? h / (h + l) : 0);
    printf("| uid %u | %d | %.2f | %.3f |\n", (unsigned)o.light_uid, BW_WEIGHT_LIGHT, l,
           h + l > 0 ? l / (h + l) : 0);
    printf("\n| target | bound | measured | |\n|---|---|---:|---|\n");
    printf("| weights %d:%d, device throughput split | %.2f to %.2f | %.2f | %s |\n",
           BW_WEIGHT_HEAVY, BW_WEIGHT_LIGHT, want * (1 - BW_SPLIT_TOL), want * (1 + BW_SPLIT_TOL),
           ratio, met ? "met" : "MISSED");
    if (wrong)
        fprintf(stderr, "bench_weights: a region transform differs from the CPU's xor\n");
    return wrong ? 1 : 0;
}
