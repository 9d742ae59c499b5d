/* SPDX-License-Identifier: MIT */
/* bench_split.c: one large job on one device against the same job left to
 * the daemon, which splits it over every device of the default type
 * (daemon/split.c), in one run on the same bytes.
 *
 * For each --sizes size, a 256-bin byte histogram and a transform (xor)
 * run through shared-memory regions (amp_run_region: the input already in
 * a region, the output written into one), so the socket carries no bytes
 * and the devices' copies and kernels are what is timed: once naming
 * device 0, once naming none. The table shows both rates and their
 * ratio beside the number of devices (the target on a 2-GPU host:
 * >= 1.8x), and beside the same ratio for the limit under it: pinned host
 * memory copied to device 0 alone, then to every device of the default
 * type at once, one thread each (a histogram's bytes go in; a transform's
 * go in and come out at the same time), so that a split short of Nx shows
 * whether the host's copies, not the daemon, stop it there. Every result is checked: histograms against the CPU
 * reference, the split transform against the one-device output.
 *
 * It starts its own ampd (--ampd PATH, else $AMPD_BIN, else the build's)
 * with the message and memory limits raised; extra ampd options follow
 * `--` (on this machine: POCL_DEVICES="pthread pthread" in the
 * environment gives two PoCL devices). Exit 1 on a wrong result, 2 on a
 * failure to run.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amp.h"
#include "bench_daemon.h"
#include "bench_util.h"
#include "dev_internal.h"
#include "host_step.h"

#define BS_MAX_SIZES 8
#define BS_MAX_DEVICES 16
#define BS_LIMIT_MAX (1ull << 30)   /* per device: the copies' rate does not grow past it */

struct bs_opts {
    uint64_t sizes[BS_MAX_SIZES];
    size_t nsizes;
    int reps;
    const char *ampd;
    const char *const *ampd_args;
};

static void bs_usage(void)
{
    fprintf(stderr, "usage: bench_split [--sizes 256M,1G] [--reps N] [--ampd PATH] "
                    "[-- AMPD_OPTION...]\n");
    exit(2);
}

static void bs_parse(int argc, char **argv, struct bs_opts *o)
{
    static const char *default_sizes = "256M";
    const char *sizes = default_sizes;
    o->reps = 3;
    o->ampd = getenv("AMPD_BIN") ? getenv("AMPD_BIN") : BENCH_AMPD_DEFAULT;
    int i = 1;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if (i + 1 >= argc)
            bs_usage();
        if (strcmp(argv[i], "--sizes") == 0)
            sizes = argv[++i];
        else if (strcmp(argv[i], "--reps") == 0)
            o->reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--ampd") == 0)
            o->ampd = argv[++i];
        else
            bs_usage();
    }
    o->ampd_args = (const char *const *)&argv[i];
    char *list = strdup(sizes);
    for (char *tok = strtok(list, ","); tok && o->nsizes < BS_MAX_SIZES; tok = strtok(NULL, ","))
        o->sizes[o->nsizes++] = bench_parse_size(tok);
    free(list);
    if (o->reps < 1 || o->nsizes == 0)
        bs_usage();
}

static int bs_failures;

/* One region job; returns seconds. */
static double bs_once(amp_conn *c, const char *device, const amp_step *st, amp_region *in,
                      size_t len, amp_region *out, amp_step_result **res)
{
    amp_opts ao = { .size = sizeof ao, .device = device };
    amp_slice sin = { .size = sizeof sin, .region = in, .length = len };
    amp_slice sout = { .size = sizeof sout, .region = out, .length = len };
    double t0 = bench_now();
    int rc = amp_run_region(c, &ao, st, 1, &sin, st->kind == AMP_STEP_HISTOGRAM ? NULL : &sout,
                            res);
    double t = bench_now() - t0;
    if (rc != 0)
        bench_die("amp_run_region (device %s): %s: %s", device ? device : "any",
                  amp_strerror(rc), amp_last_message(c));
    return t;
}

/* Median seconds of reps runs after one warm-up; the last run's results
 * and device are left in *res and dev. */
static double bs_time(amp_conn *c, const char *device, const amp_step *st, amp_region *in,
                      size_t len, amp_region *out, int reps, amp_step_result **res, char *dev,
                      size_t devlen)
{
    double t[64];
    reps = reps > 64 ? 64 : reps;
    for (int r = -1; r < reps; r++) {
        amp_step_results_free(*res, 1);
        *res = NULL;
        double s = bs_once(c, device, st, in, len, out, res);
        if (r >= 0)
            t[r] = s;
    }
    snprintf(dev, devlen, "%s", amp_last_device(c));
    return bench_median(t, reps);
}

static void bs_check_hist(const amp_step_result *r, const uint8_t *in, size_t len)
{
    struct hist_params hp = { .type = ELEM_U8, .bins = 256 };
    struct hist_result want;
    if (host_step_hist(&hp, in, len, &want) != 0)
        bench_die("out of memory");
    if (memcmp(want.counts, r->hist.counts, 256 * sizeof(uint64_t)) != 0) {
        fprintf(stderr, "bench_split: a histogram differs from the CPU reference\n");
        bs_failures++;
    }
    free(want.counts);
}

/* --- the limit: pinned copies on one device, then on all at once ---------------- */

struct bs_copy {
    struct dev *d;
    cl_mem in_buf, out_buf;          /* size bytes each on the device */
    uint8_t *src, *dst;              /* pinned, mapped once */
    struct dev_pinned *src_h, *dst_h;
    size_t size;
    bool both;                       /* in and out at once (a transform), else in only */
    pthread_barrier_t *go;
    pthread_t thread;
    double end;
};

static void *bs_copy_run(void *arg)
{
    struct bs_copy *c = arg;
    pthread_barrier_wait(c->go);
    cl_int rc = clEnqueueWriteBuffer(c->d->q[DEV_Q_IN], c->in_buf, CL_FALSE, 0, c->size, c->src,
                                     0, NULL, NULL);
    if (rc == CL_SUCCESS && c->both)
        rc = clEnqueueReadBuffer(c->d->q[DEV_Q_OUT], c->out_buf, CL_FALSE, 0, c->size, c->dst,
                                 0, NULL, NULL);
    if (rc == CL_SUCCESS)
        rc = clFinish(c->d->q[DEV_Q_IN]);
    if (rc == CL_SUCCESS && c->both)
        rc = clFinish(c->d->q[DEV_Q_OUT]);
    if (rc != CL_SUCCESS)
        bench_die("pinned copy on device %u: %s", dev_info(c->d)->index, dev_cl_error_name(rc));
    c->end = bench_now();
    return NULL;
}

/* Seconds for n devices to copy their size bytes at once, from the start
 * to the last one done: best of reps after a warm-up. */
static double bs_copy_time(struct bs_copy *cs, size_t n, bool both, int reps)
{
    double best = 0;
    for (int r = -1; r < reps; r++) {
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, (unsigned)n + 1);
        for (size_t i = 0; i < n; i++) {
            cs[i].both = both;
            cs[i].go = &go;
            pthread_create(&cs[i].thread, NULL, bs_copy_run, &cs[i]);
        }
        pthread_barrier_wait(&go);
        double t0 = bench_now(), end = t0;
        for (size_t i = 0; i < n; i++) {
            pthread_join(cs[i].thread, NULL);
            end = cs[i].end > end ? cs[i].end : end;
        }
        pthread_barrier_destroy(&go);
        if (r >= 0 && (best == 0 || end - t0 < best))
            best = end - t0;
    }
    return best;
}

/* GB/s of pinned copies (bytes in per second, as the job rows count them)
 * for [0] device 0 alone and [1] every device of its type at once; [job]
 * 0 histogram (in), 1 transform (in and out). Before ampd starts, so that
 * the devices are the bench's alone. Returns the devices used at once. */
static size_t bs_limits(uint64_t size, int reps, double gbs[2][2])
{
    struct dev **devs;
    size_t ndevs, n = 0;
    char err[512];
    if (dev_open_all(&devs, &ndevs, err, sizeof err) < 0)
        bench_die("%s", err);
    struct bs_copy cs[BS_MAX_DEVICES];
    size_t per = size < BS_LIMIT_MAX ? (size_t)size : (size_t)BS_LIMIT_MAX;
    for (size_t i = 0; i < ndevs && n < BS_MAX_DEVICES; i++) {
        if (dev_info(devs[i])->type != dev_info(devs[0])->type)
            continue;
        struct bs_copy *c = &cs[n++];
        memset(c, 0, sizeof *c);
        c->d = devs[i];
        c->size = per;
        cl_int rc1, rc2;
        c->in_buf = clCreateBuffer(c->d->ctx, CL_MEM_READ_WRITE, per, NULL, &rc1);
        c->out_buf = clCreateBuffer(c->d->ctx, CL_MEM_READ_WRITE, per, NULL, &rc2);
        c->src = dev_pinned_alloc(c->d, per, &c->src_h);
        c->dst = dev_pinned_alloc(c->d, per, &c->dst_h);
        if (rc1 != CL_SUCCESS || rc2 != CL_SUCCESS || !c->src || !c->dst)
            bench_die("device %zu: buffers and pinned memory for the limit copies", i);
        bench_random(c->src, per, i);
    }
    for (int job = 0; job < 2; job++) {
        gbs[0][job] = (double)per / bs_copy_time(cs, 1, job == 1, reps) / 1e9;
        gbs[1][job] = (double)per * (double)n / bs_copy_time(cs, n, job == 1, reps) / 1e9;
    }
    for (size_t i = 0; i < n; i++) {
        clReleaseMemObject(cs[i].in_buf);
        clReleaseMemObject(cs[i].out_buf);
        dev_pinned_free(cs[i].src_h);
        dev_pinned_free(cs[i].dst_h);
    }
    dev_close_all(devs, ndevs);
    return n;
}

static void bs_row(const char *kind, uint64_t size, double one, double all, const double lim[2],
                   const char *dev)
{
    char label[32];
    bench_size_label(size, label, sizeof label, true);
    double g1 = (double)size / one / 1e9, ga = (double)size / all / 1e9;
    printf("| %-9s | %6s | %8.2f | %8.2f | %5.2fx | %8.2f | %8.2f | %5.2fx | %s |\n", kind, label,
           g1, ga, ga / g1, lim[0], lim[1], lim[1] / lim[0], dev);
    fflush(stdout);
}

static void bs_size(amp_conn *c, const struct bs_opts *o, uint64_t size, amp_region *in,
                    amp_region *out, double lim[2][2])
{
    uint8_t *src = amp_region_data(in);
    bench_random(src, (size_t)size, size);
    amp_step_result *res = NULL;
    char dev[160];

    amp_step hist = { .size = sizeof hist, .kind = AMP_STEP_HISTOGRAM,
                      .hist = { .type = AMP_TYPE_UINT8 } };
    double one = bs_time(c, "0", &hist, in, (size_t)size, NULL, o->reps, &res, dev, sizeof dev);
    bs_check_hist(res, src, (size_t)size);
    double all = bs_time(c, NULL, &hist, in, (size_t)size, NULL, o->reps, &res, dev, sizeof dev);
    bs_check_hist(res, src, (size_t)size);
    bs_row("histogram", size, one, all, (double[2]){lim[0][0], lim[1][0]}, dev);

    amp_step xf = { .size = sizeof xf, .kind = AMP_STEP_TRANSFORM,
                    .transform = { .op = AMP_OP_XOR, .value = 0x5a } };
    one = bs_time(c, "0", &xf, in, (size_t)size, out, o->reps, &res, dev, sizeof dev);
    uint8_t *want = malloc((size_t)size);
    if (!want)
        bench_die("out of memory");
    memcpy(want, amp_region_data(out), (size_t)size);
    memset(amp_region_data(out), 0, (size_t)size);
    all = bs_time(c, NULL, &xf, in, (size_t)size, out, o->reps, &res, dev, sizeof dev);
    if (memcmp(want, amp_region_data(out), (size_t)size) != 0) {
        fprintf(stderr, "bench_split: the split transform differs from one device's\n");
        bs_failures++;
    }
    free(want);
    bs_row("transform", size, one, all, (double[2]){lim[0][1], lim[1][1]}, dev);
    amp_step_results_free(res, 1);
}

int main(int argc, char **argv)
{
    struct bs_opts o = {0};
    bs_parse(argc, argv, &o);
    uint64_t largest = 0;
    for (size_t i = 0; i < o.nsizes; i++)
        largest = o.sizes[i] > largest ? o.sizes[i] : largest;
    double lim[2][2];
    size_t nlim = bs_limits(largest, o.reps, lim);
    char mem[32];
    snprintf(mem, sizeof mem, "%llu", (unsigned long long)(largest * 3));
    const char *base[] = { "--max-job-memory", mem, "--max-connection-memory", mem };
    const char *args[64];
    size_t n = 0;
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
        args[n++] = base[i];
    for (size_t i = 0; o.ampd_args[i] && n < 63; i++)
        args[n++] = o.ampd_args[i];
    args[n] = NULL;

    struct bench_daemon dm;
    char err[256];
    if (bench_daemon_start(&dm, o.ampd, "bench_split", args, err, sizeof err) != 0)
        bench_die("starting ampd: %s", err);
    amp_conn *c = NULL;
    amp_region *in = NULL, *out = NULL;
    if (amp_connect(dm.address, &c) != 0 || amp_region_create(c, (size_t)largest, &in) != 0 ||
        amp_region_create(c, (size_t)largest, &out) != 0) {
        bench_daemon_stop(&dm);
        bench_die("connecting and making regions: %s", c ? amp_last_message(c) : "");
    }
    printf("# bench_split: one device (device 0) against the daemon's choice (split over the "
           "default type's devices); regions; median of %d after 1 warm-up; GB/s = input bytes / s\n",
           o.reps);
    printf("# limit: pinned copies (in; a transform's in and out at once) of up to 1 GiB a device, "
           "device 0 alone, then %zu devices at once; best of %d\n", nlim, o.reps);
    printf("| job       |   size | 1 dev GB/s | all GB/s | ratio | limit 1 dev | limit all | "
           "limit ratio | devices that ran it |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (size_t i = 0; i < o.nsizes; i++)
        bs_size(c, &o, o.sizes[i], in, out, lim);
    amp_region_release(in);
    amp_region_release(out);
    amp_close(c);
    int daemon_rc = bench_daemon_stop(&dm);
    if (bs_failures)
        fprintf(stderr, "bench_split: %d wrong result(s)\n", bs_failures);
    return bs_failures ? 1 : daemon_rc < 0 ? 2 : 0;
}
