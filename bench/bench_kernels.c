/* SPDX-License-Identifier: MIT */
/* bench_kernels.c: every kernel against the device's own copy bandwidth.
 *
 * For sizes from --min-size up to --max-size (default 1 KiB .. 1 GiB, capped
 * by the device's memory), runs each kernel through the daemon's own op_*.c
 * on device-resident buffers, with warm-up runs and then repetitions that
 * rotate among several input buffers (so caches do not flatter large
 * sizes), and takes the median device time from OpenCL profiling events.
 * clEnqueueCopyBuffer of the same size, measured in the same run, is the
 * roofline: the ratio column is the kernel's GB/s over the copy's (each
 * run paired with a copy just before it, see bench_median), where
 * bytes are read+written for copy/reverse/transforms, written for fill and
 * read for histograms. Every result is checked against the CPU reference
 * (tests/support/host_step.c); a mismatch makes the exit status nonzero.
 * Where a family has several GPU kernels (op.h), GPU-shaped devices also
 * get a row for each one the daemon does not choose (its choice is the
 * device's tuning at open, dev_tune.c, named in the header): "reverse (v1)",
 * "add (v1)" ... (or "(v2)"), two of "map (v1)", "(v2)" and "(v3)", for
 * 256-bin histograms two of "(atomic)", "(bytes)" and "(inc)", and for N
 * bins "(local)" or "(inc)". --build-options measures a kernel's
 * compile-time knobs (those hist.cl lets -D set: its unroll, its atomic).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "host_step.h"
#include "dev_internal.h"
#include "op.h"

#define BENCH_NBUF 4                     /* rotating inputs */
#define BENCH_NOUT 2                     /* rotating outputs */
#define BENCH_DEV_BUFFERS (BENCH_NBUF + 1 + BENCH_NOUT)   /* + the all-equal input */
#define BENCH_WARMUP 2
#define BENCH_MIN_REPS 5
#define BENCH_MAX_REPS 50
#define BENCH_REP_BYTES (2ull << 30)     /* aim per case: reps * size */
#define BENCH_MIN_SIZE_DEFAULT 1024ull
#define BENCH_MAX_SIZE_DEFAULT (1ull << 30)
#define BENCH_SIZE_FACTOR 4
#define BENCH_EQUAL_BYTE 0x41
#define BENCH_NBINS 1024                 /* N-bin histograms, unless --bins */
#define BENCH_TILE_MAX UINT32_MAX        /* the fill kernel's largest work-group */

enum bench_kind { B_REVERSE, B_TRANSFORM, B_HIST, B_FILL };
enum bench_bytes { BYTES_RW, BYTES_READ, BYTES_WRITE };

/* Which GPU kernel a case runs where its family has two (op.h): the
 * daemon's choice, or one forced. A forced row runs only on GPU-shaped
 * devices and only when it is not the daemon's choice already, so each
 * family shows both kernels side by side whichever is the default. */
enum bench_kernel { K_DAEMON, K_V1, K_V2, K_V3 };

struct bench_case {
    const char *name;
    enum bench_kind kind;
    enum bench_bytes bytes;
    bool equal_input;            /* all bytes BENCH_EQUAL_BYTE */
    enum transform_op op;
    enum elem_type type;         /* histograms and fills */
    uint32_t tile;               /* fills */
    enum bench_kernel kernel;
};

#define XFORM_CASES(NAME, OP)                                                     \
    {NAME, B_TRANSFORM, BYTES_RW, false, OP, 0, 0, K_DAEMON},                     \
    {NAME " (v2)", B_TRANSFORM, BYTES_RW, false, OP, 0, 0, K_V2},                 \
    {NAME " (v1)", B_TRANSFORM, BYTES_RW, false, OP, 0, 0, K_V1}
#define MAP_CASES(NAME)                                                           \
    XFORM_CASES(NAME, XFORM_MAP),                                                 \
    {NAME " (v3)", B_TRANSFORM, BYTES_RW, false, XFORM_MAP, 0, 0, K_V3}
#define HISTN_CASES(NAME, EQUAL)                                                  \
    {NAME, B_HIST, BYTES_READ, EQUAL, 0, ELEM_U32, 0, K_DAEMON},                  \
    {NAME " (local)", B_HIST, BYTES_READ, EQUAL, 0, ELEM_U32, 0, K_V1},           \
    {NAME " (inc)", B_HIST, BYTES_READ, EQUAL, 0, ELEM_U32, 0, K_V2}
#define HIST256_CASES(NAME, EQUAL)                                                \
    {NAME, B_HIST, BYTES_READ, EQUAL, 0, ELEM_U8, 0, K_DAEMON},                   \
    {NAME " (bytes)", B_HIST, BYTES_READ, EQUAL, 0, ELEM_U8, 0, K_V2},            \
    {NAME " (atomic)", B_HIST, BYTES_READ, EQUAL, 0, ELEM_U8, 0, K_V1},           \
    {NAME " (inc)", B_HIST, BYTES_READ, EQUAL, 0, ELEM_U8, 0, K_V3}

static const struct bench_case bench_cases[] = {
    {"reverse", B_REVERSE, BYTES_RW, false, 0, 0, 0, K_DAEMON},
    {"reverse (v2)", B_REVERSE, BYTES_RW, false, 0, 0, 0, K_V2},
    {"reverse (v1)", B_REVERSE, BYTES_RW, false, 0, 0, 0, K_V1},
    XFORM_CASES("add", XFORM_ADD),
    XFORM_CASES("xor", XFORM_XOR),
    XFORM_CASES("and", XFORM_AND),
    XFORM_CASES("or", XFORM_OR),
    XFORM_CASES("set", XFORM_SET),
    MAP_CASES("map"),
    HIST256_CASES("hist256 random", false),
    HIST256_CASES("hist256 equal", true),
    HISTN_CASES("histN u32 random", false),
    HISTN_CASES("histN u32 equal", true),
    {"fill i32", B_FILL, BYTES_WRITE, false, 0, ELEM_I32, 0, K_DAEMON},
    {"fill u32", B_FILL, BYTES_WRITE, false, 0, ELEM_U32, 0, K_DAEMON},
    {"fill i64", B_FILL, BYTES_WRITE, false, 0, ELEM_I64, 0, K_DAEMON},
    {"fill f32", B_FILL, BYTES_WRITE, false, 0, ELEM_F32, 0, K_DAEMON},
    {"fill u32 tile 64", B_FILL, BYTES_WRITE, false, 0, ELEM_U32, 64, K_DAEMON},
    {"fill u32 tile max", B_FILL, BYTES_WRITE, false, 0, ELEM_U32, BENCH_TILE_MAX, K_DAEMON},
};
#define BENCH_NCASES (sizeof bench_cases / sizeof bench_cases[0])

struct bench_opts {
    uint64_t min_size, max_size;
    unsigned device;
    int reps;                    /* 0: from BENCH_REP_BYTES */
    const char *only;            /* run only cases whose name contains one of these (a,b) */
    const char *shape;           /* "gpu"/"cpu": kernel shape forced (checks only) */
    const char *build_options;   /* appended to the kernels' build options */
    int hist_groups;             /* histograms' groups per compute unit; -1: tuned */
    unsigned hist_copies;        /* op_set_hist_copies_for_bench; 0: the default */
};

/* One size's buffers on the device and their host copies. */
struct bench {
    struct dev *d;
    size_t size;
    struct dev_buf in[BENCH_NBUF], equal, out[BENCH_NOUT];
    uint8_t *host[BENCH_NBUF], *host_equal, *got, *want;
    struct job job;              /* where dev_exec reports failures */
    int failures;
};

static void bench_job_die(const char *what, const struct job *job)
{
    fprintf(stderr, "bench_kernels: %s: %s\n", what, job->msg);
    exit(2);
}

static void *bench_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "bench_kernels: out of host memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

static struct dev_exec bench_exec_begin(struct bench *b)
{
    struct dev_exec x;
    b->job.status = STATUS_OK;
    b->job.msg[0] = '\0';
    dev_exec_init(&x, b->d, &b->job);
    return x;
}

static void bench_setup(struct bench *b, struct dev *d, size_t size)
{
    memset(b, 0, sizeof(*b));
    b->d = d;
    b->size = size;
    struct dev_exec x = bench_exec_begin(b);
    for (int i = 0; i < BENCH_NBUF; i++) {
        b->host[i] = bench_malloc(size);
        bench_random(b->host[i], size, 1000 + (uint64_t)i);
        dev_buf_create(&x, &b->in[i], size, "a benchmark input");
        dev_exec_write(&x, &b->in[i], b->host[i], size, DEV_HOST_PAGEABLE);
    }
    b->host_equal = bench_malloc(size);
    memset(b->host_equal, BENCH_EQUAL_BYTE, size);
    dev_buf_create(&x, &b->equal, size, "the all-equal input");
    dev_exec_write(&x, &b->equal, b->host_equal, size, DEV_HOST_PAGEABLE);
    for (int i = 0; i < BENCH_NOUT; i++)
        dev_buf_create(&x, &b->out[i], size, "a benchmark output");
    if (dev_exec_finish(&x) != STATUS_OK)
        bench_job_die("setting up buffers", &b->job);
    b->got = bench_malloc(size);
    b->want = bench_malloc(size);
}

static void bench_teardown(struct bench *b)
{
    for (int i = 0; i < BENCH_NBUF; i++) {
        dev_buf_release(&b->in[i]);
        free(b->host[i]);
    }
    dev_buf_release(&b->equal);
    for (int i = 0; i < BENCH_NOUT; i++)
        dev_buf_release(&b->out[i]);
    free(b->host_equal);
    free(b->got);
    free(b->want);
}

static struct transform_params bench_xform(enum transform_op op, size_t size)
{
    struct transform_params p;
    memset(&p, 0, sizeof p);
    p.op = op;
    p.value = 0x5a;
    p.length = size;
    for (int i = 0; i < 256; i++)
        p.table[i] = (uint8_t)(i * 167 + 13);
    return p;
}

static uint32_t bench_nbins = BENCH_NBINS;

static struct hist_params bench_hist(enum elem_type t)
{
    if (t == ELEM_U8)
        return (struct hist_params){.type = ELEM_U8, .bins = 256};
    return (struct hist_params){.type = t, .bins = bench_nbins, .lo = 0, .hi = 4294967296.0};
}

static struct fill_params bench_fill(const struct bench *b, const struct bench_case *c)
{
    uint32_t tile = c->tile;
    const char *kernel = b->d->shape == DEV_SHAPE_CPU ? "fill_u32_scalar" : "fill_u32";
    if (tile == BENCH_TILE_MAX)
        tile = (uint32_t)dev_kernel_wg_max(b->d, dev_kernel(b->d, kernel));
    return (struct fill_params){.type = c->type, .count = b->size / elem_size(c->type),
                                .tile = tile, .start = 17, .step = -3, .start_f = 1.5f,
                                .step_f = 0.25f};
}

/* The GPU kernel a forced case runs. */
static enum dev_variant bench_forced(enum bench_kernel k)
{
    return (enum dev_variant)(DEV_VARIANT_V1 + (k - K_V1));
}

/* The field of c's family in v, or NULL where the family has one kernel. */
static enum dev_variant *bench_family_variant(struct dev_variants *v, const struct bench_case *c)
{
    if (c->kind == B_REVERSE)
        return &v->reverse;
    if (c->kind == B_TRANSFORM)
        return c->op == XFORM_MAP ? &v->map : &v->transform;
    if (c->kind == B_HIST)
        return c->type == ELEM_U8 ? &v->hist256 : &v->histn;
    return NULL;
}

/* The kernels the daemon runs on the device: its tuning at open. */
static struct dev_variants bench_daemon_variants;

/* Whether c's row runs on d: a forced kernel only on GPU-shaped devices,
 * and only when the daemon would not pick it anyway. */
static bool bench_case_runs(const struct dev *d, const struct bench_case *c)
{
    struct dev_variants serving = bench_daemon_variants;
    enum dev_variant *f = bench_family_variant(&serving, c);
    if (c->kernel == K_DAEMON || !f)
        return true;
    if (d->shape == DEV_SHAPE_CPU)
        return false;
    return *f != bench_forced(c->kernel);
}

/* Makes d run the kernels c asks for: the daemon's, or a forced one. */
static void bench_variants(struct dev *d, const struct bench_case *c)
{
    struct dev_variants v = bench_daemon_variants;
    enum dev_variant *f = bench_family_variant(&v, c);
    if (f && c->kernel != K_DAEMON) {
        *f = bench_forced(c->kernel);
        v.map_min = 0;   /* a forced map row runs its kernel at every size */
    }
    char err[512];
    if (memcmp(&v, &d->variants, sizeof v) != 0 &&
        dev_set_variants_for_test(d, &v, err, sizeof err) != 0) {
        fprintf(stderr, "bench_kernels: building the kernel variants: %s\n", err);
        exit(2);
    }
}

/* Runs c once on input rep and returns the device nanoseconds. */
static uint64_t bench_once(struct bench *b, const struct bench_case *c, int rep, uint64_t *slots)
{
    struct dev_buf *src = c->equal_input ? &b->equal : &b->in[rep % BENCH_NBUF];
    struct dev_buf *dst = &b->out[rep % BENCH_NOUT];
    bench_variants(b->d, c);
    struct dev_exec x = bench_exec_begin(b);
    if (c->kind == B_REVERSE) {
        op_reverse(&x, src, dst);
    } else if (c->kind == B_TRANSFORM) {
        struct transform_params p = bench_xform(c->op, b->size);
        op_transform(&x, &p, src, dst);
    } else if (c->kind == B_HIST) {
        struct hist_params p = bench_hist(c->type);
        op_hist(&x, &p, src, slots);
    } else {
        struct fill_params p = bench_fill(b, c);
        if (op_fill_check(b->d, &p, &b->job) == STATUS_OK)
            op_fill(&x, &p, dst);
        else
            x.failed = true;
    }
    if (dev_exec_finish(&x) != STATUS_OK)
        bench_job_die(c->name, &b->job);
    return x.device_ns;
}

static uint64_t bench_copy_once(struct bench *b, int rep)
{
    cl_event ev;
    cl_int rc = clEnqueueCopyBuffer(b->d->q[DEV_Q_KERNEL], b->in[rep % BENCH_NBUF].mem,
                                    b->out[rep % BENCH_NOUT].mem, 0, 0, b->size, 0, NULL, &ev);
    if (rc != CL_SUCCESS) {
        fprintf(stderr, "bench_kernels: clEnqueueCopyBuffer: %s\n", dev_cl_error_name(rc));
        exit(2);
    }
    clWaitForEvents(1, &ev);
    cl_ulong start = 0, end = 0;
    clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL);
    clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL);
    clReleaseEvent(ev);
    return end > start ? end - start : 0;
}

static int bench_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int bench_reps(const struct bench_opts *o, size_t size)
{
    if (o->reps > 0)
        return o->reps;
    uint64_t r = BENCH_REP_BYTES / size;
    return r < BENCH_MIN_REPS ? BENCH_MIN_REPS : r > BENCH_MAX_REPS ? BENCH_MAX_REPS : (int)r;
}

static double bench_bytes(enum bench_bytes mode, size_t size)
{
    return mode == BYTES_RW ? 2.0 * (double)size : (double)size;
}

/* Median device time of reps runs of c (the copy when c is NULL) after the
 * warm-up. For a kernel, each run is paired with a copy just before it (on
 * other buffers) and *ratio is the median over runs of the kernel's GB/s
 * over that copy's: on a shared CPU device, load from other processes
 * moves both alike, where medians taken apart compare different moments. */
static uint64_t bench_case_median(struct bench *b, const struct bench_case *c, int reps,
                             uint64_t *slots, double *ratio)
{
    uint64_t t[BENCH_MAX_REPS > 64 ? BENCH_MAX_REPS : 64];
    double r[sizeof t / sizeof t[0]];
    if (reps > (int)(sizeof t / sizeof t[0]))
        reps = (int)(sizeof t / sizeof t[0]);
    for (int i = 0; i < BENCH_WARMUP; i++)
        c ? bench_once(b, c, i, slots) : bench_copy_once(b, i);
    for (int i = 0; i < reps; i++) {
        if (!c) {
            t[i] = bench_copy_once(b, i);
            continue;
        }
        uint64_t copy_ns = bench_copy_once(b, i + 1);
        t[i] = bench_once(b, c, i, slots);
        double copy_gbs = bench_bytes(BYTES_RW, b->size) / (double)(copy_ns ? copy_ns : 1);
        r[i] = bench_bytes(c->bytes, b->size) / (double)(t[i] ? t[i] : 1) / copy_gbs;
    }
    qsort(t, (size_t)reps, sizeof t[0], bench_cmp_u64);
    if (c && ratio) {
        qsort(r, (size_t)reps, sizeof r[0], bench_cmp_double);
        *ratio = r[reps / 2];
    }
    return t[reps / 2];
}

static bool bench_check_hist(struct bench *b, const struct bench_case *c, const uint8_t *in,
                             const uint64_t *slots)
{
    struct hist_params p = bench_hist(c->type);
    struct hist_result got = {0}, want = {0};
    bool ok = op_hist_result(&p, slots, &got, &b->job) == STATUS_OK &&
              host_step_hist(&p, in, b->size, &want) == 0 &&
              memcmp(got.counts, want.counts, p.bins * sizeof(uint64_t)) == 0 &&
              got.below == want.below && got.above == want.above && got.nan == want.nan;
    free(got.counts);
    free(want.counts);
    return ok;
}

/* Whether name contains one of only's comma-separated parts (no only: all). */
static bool bench_only(const char *only, const char *name)
{
    if (!only)
        return true;
    for (const char *p = only; *p;) {
        size_t n = strcspn(p, ",");
        for (const char *q = name; n && strlen(q) >= n; q++)
            if (strncmp(q, p, n) == 0)
                return true;
        p += n + (p[n] == ',');
    }
    return false;
}

/* Checks the output of the run on input rep against the CPU reference. */
static bool bench_check(struct bench *b, const struct bench_case *c, int rep,
                        const uint64_t *slots)
{
    const uint8_t *in = c->equal_input ? b->host_equal : b->host[rep % BENCH_NBUF];
    if (c->kind == B_HIST)
        return bench_check_hist(b, c, in, slots);
    size_t len = b->size;
    if (c->kind == B_REVERSE) {
        host_step_reverse(in, b->want, len);
    } else if (c->kind == B_TRANSFORM) {
        struct transform_params p = bench_xform(c->op, b->size);
        memcpy(b->want, in, len);
        host_step_transform(&p, b->want, len);
    } else {
        struct fill_params p = bench_fill(b, c);
        len = (size_t)p.count * elem_size(p.type);
        host_step_fill(&p, b->want);
    }
    struct dev_exec x = bench_exec_begin(b);
    dev_exec_read(&x, &b->out[rep % BENCH_NOUT], b->got, 0, len, DEV_HOST_PAGEABLE);
    if (dev_exec_finish(&x) != STATUS_OK)
        bench_job_die("reading a result back", &b->job);
    return memcmp(b->got, b->want, len) == 0;
}

static void bench_size(struct bench_opts *o, struct dev *d, size_t size, int *failures)
{
    struct bench b;
    bench_setup(&b, d, size);
    int reps = bench_reps(o, size);
    uint64_t *slots = bench_malloc(OP_HIST_SLOTS(bench_nbins) * sizeof(uint64_t));
    char label[32];
    bench_size_label(size, label, sizeof label, false);
    uint64_t copy_ns = bench_case_median(&b, NULL, reps, NULL, NULL);
    double copy_gbs = bench_bytes(BYTES_RW, size) / (double)(copy_ns ? copy_ns : 1);
    printf("%-24s %9s %11.1f %9.2f %8.3f %s\n", "copy", label, copy_ns / 1e3, copy_gbs, 1.0,
           "-");
    for (size_t i = 0; i < BENCH_NCASES; i++) {
        const struct bench_case *c = &bench_cases[i];
        if (!bench_only(o->only, c->name) || !bench_case_runs(d, c))
            continue;
        double ratio = 0;
        uint64_t ns = bench_case_median(&b, c, reps, slots, &ratio);
        /* The last timed run used input reps - 1; its output is still there. */
        bool ok = bench_check(&b, c, reps - 1, slots);
        double gbs = bench_bytes(c->bytes, size) / (double)(ns ? ns : 1);
        printf("%-24s %9s %11.1f %9.2f %8.3f %s\n", c->name, label, ns / 1e3, gbs,
               ratio, ok ? "ok" : "MISMATCH");
        fflush(stdout);
        if (!ok)
            (*failures)++;
    }
    free(slots);
    bench_teardown(&b);
}

static void bench_usage(void)
{
    fprintf(stderr, "usage: bench_kernels [--min-size N] [--max-size N] [--device I] [--reps N]\n"
                    "                     [--only NAME[,NAME]...] [--shape gpu|cpu]\n"
                    "                     [--build-options S] [--hist-groups N]\n"
                    "                     [--hist-copies N] [--bins N]\n"
                    "  sizes take K, M or G suffixes; defaults 1K .. 1G (capped by device\n"
                    "  memory and max_mem_alloc_size); --only runs the kernels whose name\n"
                    "  contains a NAME (copy always runs); --shape runs the kernels written\n"
                    "  for the other device type (to check them, e.g. GPU kernels on PoCL;\n"
                    "  their times there say nothing of a GPU); --build-options appends S\n"
                    "  (-DNAME=VALUE) to the kernels' build options, to measure a kernel\n"
                    "  file's compile-time knobs; --hist-groups launches the histograms\n"
                    "  that count in local memory with N groups per compute unit (0: as\n"
                    "  many as fit; default: the device's tuning);\n"
                    "  --hist-copies caps the local copies of an N-bin histogram (default 8),\n"
                    "  --bins sets N (default 1024)\n");
    exit(2);
}

static void bench_parse(int argc, char **argv, struct bench_opts *o)
{
    o->min_size = BENCH_MIN_SIZE_DEFAULT;
    o->max_size = BENCH_MAX_SIZE_DEFAULT;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            bench_usage();
        if (strcmp(argv[i], "--max-size") == 0)
            o->max_size = bench_parse_size(argv[++i]);
        else if (strcmp(argv[i], "--min-size") == 0)
            o->min_size = bench_parse_size(argv[++i]);
        else if (strcmp(argv[i], "--device") == 0)
            o->device = (unsigned)atoi(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0)
            o->reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--only") == 0)
            o->only = argv[++i];
        else if (strcmp(argv[i], "--shape") == 0)
            o->shape = argv[++i];
        else if (strcmp(argv[i], "--build-options") == 0)
            o->build_options = argv[++i];
        else if (strcmp(argv[i], "--hist-groups") == 0)
            o->hist_groups = atoi(argv[++i]);
        else if (strcmp(argv[i], "--hist-copies") == 0)
            o->hist_copies = (unsigned)atoi(argv[++i]);
        else if (strcmp(argv[i], "--bins") == 0)
            bench_nbins = (uint32_t)atoi(argv[++i]);
        else
            bench_usage();
    }
    if (o->min_size == 0 || o->max_size < o->min_size || o->reps < 0 || bench_nbins == 0 ||
        (o->shape && strcmp(o->shape, "gpu") != 0 && strcmp(o->shape, "cpu") != 0))
        bench_usage();
}

int main(int argc, char **argv)
{
    struct bench_opts o = {.hist_groups = -1};
    bench_parse(argc, argv, &o);
    struct dev **devs;
    size_t ndevs;
    char err[512];
    dev_set_build_options_for_bench(o.build_options);
    op_set_hist_copies_for_bench(o.hist_copies);
    if (dev_open_all_profiled(&devs, &ndevs, err, sizeof err) < 0) {
        fprintf(stderr, "bench_kernels: %s\n", err);
        return 2;
    }
    if (o.device >= ndevs) {
        fprintf(stderr, "bench_kernels: no device %u (%zu devices)\n", o.device, ndevs);
        return 2;
    }
    struct dev *d = devs[o.device];
    if (o.shape)
        dev_set_shape_for_test(d, strcmp(o.shape, "gpu") == 0 ? DEV_SHAPE_GPU : DEV_SHAPE_CPU);
    const struct dev_info *in = dev_info(d);
    /* Every buffer of a size must fit at once, and each in one allocation. */
    uint64_t cap = in->global_mem_size / (BENCH_DEV_BUFFERS + 1);
    const char *why = "global_mem_size shared by one size's buffers";
    if (cap > in->max_mem_alloc_size) {
        cap = in->max_mem_alloc_size;
        why = "max_mem_alloc_size";
    }
    bench_daemon_variants = d->variants;
    if (o.hist_groups >= 0)
        bench_daemon_variants.hist256_groups = bench_daemon_variants.histn_groups =
            (unsigned)o.hist_groups;
    char kernels[160];
    dev_tune_describe(d, kernels, sizeof kernels);
    printf("# device %u: %s (%s, %s), %u compute units; the daemon's kernels: %s\n", in->index,
           in->name, dev_type_name(in->type), in->platform, in->compute_units, kernels);
    printf("# median of device times; ratio = median over runs of GB/s over the GB/s of a\n"
           "# clEnqueueCopyBuffer of the same size run just before\n");
    printf("%-24s %9s %11s %9s %8s %s\n", "kernel", "size", "time_us", "GB/s", "ratio", "check");
    int failures = 0;
    for (uint64_t size = o.min_size; size <= o.max_size; size *= BENCH_SIZE_FACTOR) {
        if (size > cap) {
            printf("# skipping %llu bytes and up: over the device's %s (%llu bytes)\n",
                   (unsigned long long)size, why, (unsigned long long)cap);
            break;
        }
        bench_size(&o, d, (size_t)size, &failures);
    }
    dev_close_all(devs, ndevs);
    if (failures)
        fprintf(stderr, "bench_kernels: %d result(s) differ from the CPU reference\n", failures);
    return failures ? 1 : 0;
}
