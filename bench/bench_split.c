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
 * >= 1.8x). Every result is checked: histograms against the CPU
 * reference, the split transform against the one-device output.
 *
 * It starts its own ampd (--ampd PATH, else $AMPD_BIN, else the build's)
 * with the message and memory limits raised; extra ampd options follow
 * `--` (on this machine: POCL_DEVICES="pthread pthread" in the
 * environment gives two PoCL devices). Exit 1 on a wrong result, 2 on a
 * failure to run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amp.h"
#include "bench_daemon.h"
#include "bench_util.h"
#include "host_step.h"

#define BS_MAX_SIZES 8

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

static void bs_row(const char *kind, uint64_t size, double one, double all, const char *dev)
{
    char label[32];
    bench_size_label(size, label, sizeof label, true);
    double g1 = (double)size / one / 1e9, ga = (double)size / all / 1e9;
    printf("| %-9s | %6s | %8.2f | %8.2f | %5.2fx | %s |\n", kind, label, g1, ga, ga / g1, dev);
    fflush(stdout);
}

static void bs_size(amp_conn *c, const struct bs_opts *o, uint64_t size, amp_region *in,
                    amp_region *out)
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
    bs_row("histogram", size, one, all, dev);

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
    bs_row("transform", size, one, all, dev);
    amp_step_results_free(res, 1);
}

int main(int argc, char **argv)
{
    struct bs_opts o = {0};
    bs_parse(argc, argv, &o);
    uint64_t largest = 0;
    for (size_t i = 0; i < o.nsizes; i++)
        largest = o.sizes[i] > largest ? o.sizes[i] : largest;
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
    printf("| job       |   size | 1 dev GB/s | all GB/s | ratio | devices that ran it |\n");
    printf("|---|---:|---:|---:|---:|---|\n");
    for (size_t i = 0; i < o.nsizes; i++)
        bs_size(c, &o, o.sizes[i], in, out);
    amp_region_release(in);
    amp_region_release(out);
    amp_close(c);
    int daemon_rc = bench_daemon_stop(&dm);
    if (bs_failures)
        fprintf(stderr, "bench_split: %d wrong result(s)\n", bs_failures);
    return bs_failures ? 1 : daemon_rc < 0 ? 2 : 0;
}
