/* SPDX-License-Identifier: MIT */
/* bench_stream.c: a streamed job, each stage alone and the whole pipeline.
 *
 * The scheduler issue asks that a stream through ampd keep its stages busy
 * at once (socket, copy in, kernels, copy out), so that the whole job takes
 * about as long as its slowest stage, not the sum of them. This program
 * measures both sides of that claim in one run, on one device, for two jobs
 * over the same --size bytes: a byte transform (add), whose bytes cross the
 * socket both ways, and a 256-bin histogram, whose bytes only go in.
 *
 * Stages alone go through the daemon's own device code the way
 * dev_stream.c uses it: pinned host memory from dev_pinned.c, a ring of
 * four chunk-sized device buffers, dev_exec_write/read per chunk,
 * op_transform in place and op_hist_begin/add/end. The socket stage pushes
 * the same bytes through a Unix socket pair with a writer and a reader
 * thread per direction, 1 MiB per write (the client's AMP_STREAM_CHUNK).
 * The whole run is the same job through a real ampd with the Stream RPC
 * (libampclient's amp_stream), which this program starts itself (--ampd)
 * or finds running (--address). Every stage is timed on the wall clock from
 * its first command to its last completion; each figure is the median of
 * --reps runs after one untimed run. The untimed device run also checks the
 * bench's own chunked path; every streamed result is checked against the
 * CPU reference (tests/support/host_step.c). A mismatch exits 1; a failure
 * to run, or an ampd it started not exiting 0 after SIGTERM, exits 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amp.h"
#include "bench_daemon.h"
#include "bench_sock.h"
#include "bench_util.h"
#include "host_step.h"
#include "dev_internal.h"
#include "op.h"

#define BENCH_SIZE_DEFAULT (1ull << 30)
#define BENCH_CHUNK_DEFAULT (4ull << 20)   /* ampd's default --chunk-bytes */
#define BENCH_CHUNK_MIN (64ull << 10)      /* ampd's smallest --chunk-bytes */
#define BENCH_CHUNK_MAX (256ull << 20)     /* ampd's largest --chunk-bytes */
#define BENCH_CHUNK_ALIGN 4096             /* chunks start on page boundaries */
#define BENCH_REPS_DEFAULT 3
#define BENCH_REPS_MAX 64
#define BENCH_RING 4                       /* device buffers, as dev_stream.c */
#define BENCH_SOCK_WRITE AMP_STREAM_CHUNK  /* bytes per socket write */
#define BENCH_ADD_VALUE 0x5a
#define BENCH_SEED 4242
#define BENCH_HIST_BINS 256

/* BENCH_AMPD_DEFAULT, the ampd binary when neither --ampd nor $AMPD_BIN
 * names one, comes from CMake: the build's own ampd. */

enum bench_job { JOB_TRANSFORM, JOB_HIST, BENCH_NJOBS };
enum bench_stage { ST_COPY_IN, ST_KERNEL, ST_COPY_OUT, ST_SOCKET, BENCH_NSTAGES };

static const char *const bench_job_names[BENCH_NJOBS] = {"transform", "histogram"};
static const char *const bench_stage_names[BENCH_NSTAGES] = {"copy in", "kernels", "copy out",
                                                             "socket"};

struct bench_opts {
    uint64_t size, chunk;
    unsigned device;
    int reps;
    const char *ampd;        /* binary to start; unused with address */
    const char *address;     /* a running ampd, or NULL to start one */
};

/* Median seconds of each stage and of the whole run, per job. */
struct bench_times {
    double stage[BENCH_NJOBS][BENCH_NSTAGES];
    double whole[BENCH_NJOBS];
};

/* The stage-alone state on one device. */
struct bench_dev {
    struct dev *d;
    struct job job;                    /* where dev_exec reports failures */
    size_t size, chunk, nchunks;
    uint8_t *pin_in, *pin_out;         /* size bytes each, pinned, mapped */
    struct dev_pinned *pin_in_h, *pin_out_h;
    struct dev_buf ring[BENCH_RING];   /* chunk bytes each */
    struct transform_params xform;
    struct hist_params hist;
    struct op_hist_acc acc;            /* between the kernel and copy-out stages */
    uint64_t slots[BENCH_HIST_BINS];
};

static int bench_failures;

static void bench_fail(const char *what)
{
    fprintf(stderr, "bench_stream: MISMATCH: %s differs from the CPU reference\n", what);
    bench_failures++;
}

/* --- stages alone on the device --------------------------------------------- */

static size_t bench_chunk_len(const struct bench_dev *b, size_t i)
{
    size_t off = i * b->chunk;
    return b->size - off < b->chunk ? b->size - off : b->chunk;
}

static struct dev_exec bench_exec_begin(struct bench_dev *b)
{
    struct dev_exec x;
    b->job.status = STATUS_OK;
    b->job.msg[0] = '\0';
    dev_exec_init(&x, b->d, &b->job);
    return x;
}

static void bench_exec_end(struct bench_dev *b, struct dev_exec *x, const char *what)
{
    if (dev_exec_finish(x) != STATUS_OK) {
        fprintf(stderr, "bench_stream: %s: %s\n", what, b->job.msg);
        exit(2);
    }
}

static void bench_dev_setup(struct bench_dev *b, struct dev *d, const struct bench_opts *o,
                            const uint8_t *input)
{
    memset(b, 0, sizeof(*b));
    b->d = d;
    b->size = (size_t)o->size;
    b->chunk = (size_t)o->chunk;
    b->nchunks = (b->size + b->chunk - 1) / b->chunk;
    b->pin_in = dev_pinned_alloc(d, b->size, &b->pin_in_h);
    b->pin_out = dev_pinned_alloc(d, b->size, &b->pin_out_h);
    if (!b->pin_in || !b->pin_out)
        bench_die("cannot allocate 2 x %zu bytes of pinned host memory", b->size);
    memcpy(b->pin_in, input, b->size);
    memset(b->pin_out, 0, b->size);
    struct dev_exec x = bench_exec_begin(b);
    for (int i = 0; i < BENCH_RING; i++)
        dev_buf_create(&x, &b->ring[i], b->chunk, "a ring buffer");
    bench_exec_end(b, &x, "creating the device ring");
    b->xform = (struct transform_params){.op = XFORM_ADD, .value = BENCH_ADD_VALUE};
    b->hist = (struct hist_params){.type = ELEM_U8, .bins = BENCH_HIST_BINS};
}

static void bench_dev_teardown(struct bench_dev *b)
{
    for (int i = 0; i < BENCH_RING; i++)
        dev_buf_release(&b->ring[i]);
    dev_pinned_free(b->pin_in_h);
    dev_pinned_free(b->pin_out_h);
}

/* The transform of chunk i on its ring slot, in place as dev_stream.c does. */
static void bench_transform_chunk(struct bench_dev *b, struct dev_exec *x, size_t i)
{
    struct transform_params p = b->xform;
    p.length = bench_chunk_len(b, i);
    op_transform(x, &p, &b->ring[i % BENCH_RING], &b->ring[i % BENCH_RING]);
}

static double bench_copy_in(struct bench_dev *b)
{
    struct dev_exec x = bench_exec_begin(b);
    double t0 = bench_now();
    for (size_t i = 0; i < b->nchunks; i++)
        dev_exec_write(&x, &b->ring[i % BENCH_RING], b->pin_in + i * b->chunk,
                       bench_chunk_len(b, i), DEV_HOST_PINNED);
    bench_exec_end(b, &x, "copy in");
    return bench_now() - t0;
}

static double bench_copy_out(struct bench_dev *b, enum bench_job job)
{
    struct dev_exec x = bench_exec_begin(b);
    double t0 = bench_now();
    if (job == JOB_HIST) {
        op_hist_end(&x, &b->acc, b->slots);
    } else {
        for (size_t i = 0; i < b->nchunks; i++)
            dev_exec_read(&x, &b->ring[i % BENCH_RING], b->pin_out + i * b->chunk, 0,
                          bench_chunk_len(b, i), DEV_HOST_PINNED);
    }
    bench_exec_end(b, &x, "copy out");
    double t = bench_now() - t0;
    if (job == JOB_HIST)
        op_hist_acc_release(&b->acc);
    return t;
}

/* The kernels over every chunk on device-resident data. The histogram's
 * counts stay on the device for the copy-out stage to fetch. */
static double bench_kernels(struct bench_dev *b, enum bench_job job)
{
    struct dev_exec x = bench_exec_begin(b);
    double t0 = bench_now();
    if (job == JOB_HIST)
        op_hist_begin(&x, &b->hist, &b->acc);
    for (size_t i = 0; i < b->nchunks; i++) {
        if (job == JOB_HIST)
            op_hist_add(&x, &b->hist, &b->ring[i % BENCH_RING], bench_chunk_len(b, i), &b->acc);
        else
            bench_transform_chunk(b, &x, i);
    }
    bench_exec_end(b, &x, "kernels");
    return bench_now() - t0;
}

static bool bench_hist_equal(const uint64_t *counts, const struct hist_result *want)
{
    return memcmp(counts, want->counts, BENCH_HIST_BINS * sizeof(uint64_t)) == 0;
}

/* One untimed pass of the device stages chunk by chunk, in one dev_exec
 * as dev_stream.c chains them: warms every path up and checks the bench's
 * own chunking against the reference before anything is timed. */
static void bench_dev_check(struct bench_dev *b, const uint8_t *want,
                            const struct hist_result *want_hist)
{
    struct dev_exec x = bench_exec_begin(b);
    struct op_hist_acc acc;
    op_hist_begin(&x, &b->hist, &acc);
    for (size_t i = 0; i < b->nchunks; i++) {
        struct dev_buf *slot = &b->ring[i % BENCH_RING];
        size_t off = i * b->chunk, len = bench_chunk_len(b, i);
        dev_exec_write(&x, slot, b->pin_in + off, len, DEV_HOST_PINNED);
        op_hist_add(&x, &b->hist, slot, len, &acc);
        bench_transform_chunk(b, &x, i);
        dev_exec_read(&x, slot, b->pin_out + off, 0, len, DEV_HOST_PINNED);
    }
    op_hist_end(&x, &acc, b->slots);
    bench_exec_end(b, &x, "the checking pass");
    op_hist_acc_release(&acc);
    if (memcmp(b->pin_out, want, b->size) != 0)
        bench_fail("the stage-by-stage transform (device path)");
    if (!bench_hist_equal(b->slots, want_hist))
        bench_fail("the stage-by-stage histogram (device path)");
}

/* --- the socket stage ----------------------------------------------------------- */

/* Seconds to move in (len bytes) one way through a Unix socket, and out
 * the other way at the same time when out is not NULL; what arrives must
 * be what was sent. */
static double bench_socket(const uint8_t *in, uint8_t *in_dst, const uint8_t *out,
                           uint8_t *out_dst, size_t len)
{
    int fd[2];
    if (bench_sock_pair(BENCH_SOCK_UNIX, fd) < 0)
        bench_die("socketpair: %s", strerror(errno));
    double t = bench_sock_copy(fd, in, in_dst, out, out_dst, len, BENCH_SOCK_WRITE);
    if (t < 0)
        bench_die("socket stage: %s", strerror(errno));
    close(fd[0]);
    close(fd[1]);
    if (memcmp(in_dst, in, len) != 0 || (out && memcmp(out_dst, out, len) != 0))
        bench_die("socket stage: the bytes arrived changed");
    return t;
}

/* --- all stages alone ------------------------------------------------------------ */

/* One run of every stage of job, each alone, into t. */
static void bench_stages_once(struct bench_dev *b, enum bench_job job, const uint8_t *input,
                              const uint8_t *want, uint8_t *scratch[2], double t[BENCH_NSTAGES])
{
    t[ST_COPY_IN] = bench_copy_in(b);
    t[ST_KERNEL] = bench_kernels(b, job);
    t[ST_COPY_OUT] = bench_copy_out(b, job);
    t[ST_SOCKET] = bench_socket(input, scratch[0], job == JOB_TRANSFORM ? want : NULL,
                                scratch[1], b->size);
}

static void bench_stages(struct dev *d, const struct bench_opts *o, const uint8_t *input,
                         const uint8_t *want, const struct hist_result *want_hist,
                         struct bench_times *tm)
{
    struct bench_dev b;
    bench_dev_setup(&b, d, o, input);
    bench_dev_check(&b, want, want_hist);
    uint8_t *scratch[2] = {bench_alloc_touched(b.size), bench_alloc_touched(b.size)};
    for (int job = 0; job < BENCH_NJOBS; job++) {
        double t[BENCH_NSTAGES][BENCH_REPS_MAX];
        double once[BENCH_NSTAGES];
        bench_stages_once(&b, job, input, want, scratch, once);   /* warm-up */
        for (int r = 0; r < o->reps; r++) {
            bench_stages_once(&b, job, input, want, scratch, once);
            for (int s = 0; s < BENCH_NSTAGES; s++)
                t[s][r] = once[s];
        }
        for (int s = 0; s < BENCH_NSTAGES; s++)
            tm->stage[job][s] = bench_median(t[s], o->reps);
    }
    free(scratch[0]);
    free(scratch[1]);
    bench_dev_teardown(&b);
}

/* --- the whole job through ampd ------------------------------------------------------ */

/* Starts ampd with --chunk-bytes set to the bench's chunk. */
static void bench_stream_daemon_start(struct bench_daemon *dm, const char *ampd, uint64_t chunk)
{
    char chunk_arg[32], err[256];
    snprintf(chunk_arg, sizeof chunk_arg, "%llu", (unsigned long long)chunk);
    const char *args[] = {"--chunk-bytes", chunk_arg, NULL};
    if (bench_daemon_start(dm, ampd, "bench_stream", args, err, sizeof err) < 0)
        bench_die("%s", err);
}

/* The client's input: the bench's input buffer, read front to back. */
struct bench_source {
    const uint8_t *p;
    size_t len, pos;
};

static long bench_source_read(void *ctx, void *buf, size_t cap)
{
    struct bench_source *s = ctx;
    size_t n = s->len - s->pos < cap ? s->len - s->pos : cap;
    memcpy(buf, s->p + s->pos, n);
    s->pos += n;
    return (long)n;
}

/* The client's output: a buffer of the input's size; more is an error. */
struct bench_sink {
    uint8_t *p;
    size_t cap, pos;
};

static int bench_sink_write(void *ctx, const void *buf, size_t len)
{
    struct bench_sink *s = ctx;
    if (len > s->cap - s->pos)
        return AMP_EPROTO;
    memcpy(s->p + s->pos, buf, len);
    s->pos += len;
    return 0;
}

static amp_step bench_step(enum bench_job job)
{
    amp_step st;
    memset(&st, 0, sizeof st);
    if (job == JOB_TRANSFORM) {
        st.size = sizeof st;
        st.kind = AMP_STEP_TRANSFORM;
        st.transform.op = AMP_OP_ADD;
        st.transform.value = BENCH_ADD_VALUE;
    } else {
        st.size = sizeof st;
        st.kind = AMP_STEP_HISTOGRAM;
        st.hist.type = AMP_TYPE_UINT8;
        st.hist.bins = BENCH_HIST_BINS;
    }
    return st;
}

/* One streamed run of job; returns its seconds and checks its results. */
static double bench_whole_once(amp_conn *c, const amp_opts *ao, enum bench_job job,
                               const uint8_t *input, size_t size, const uint8_t *want,
                               const struct hist_result *want_hist, uint8_t *got)
{
    amp_step st = bench_step(job);
    struct bench_source src = {input, size, 0};
    struct bench_sink sink = {got, size, 0};
    amp_hist h;
    memset(&h, 0, sizeof h);
    size_t nhists = job == JOB_HIST ? 1 : 0;
    double t0 = bench_now();
    int rc = amp_stream(c, ao, &st, 1, size, bench_source_read, &src, bench_sink_write, &sink,
                        nhists ? &h : NULL, nhists);
    double t = bench_now() - t0;
    if (rc != 0) {
        fprintf(stderr, "bench_stream: amp_stream (%s): %s: %s\n", bench_job_names[job],
                amp_strerror(rc), amp_last_message(c));
        exit(2);
    }
    if (job == JOB_TRANSFORM && (sink.pos != size || memcmp(got, want, size) != 0))
        bench_fail("the streamed transform");
    if (job == JOB_HIST && (sink.pos != 0 || h.bins != BENCH_HIST_BINS ||
                            !bench_hist_equal(h.counts, want_hist)))
        bench_fail("the streamed histogram");
    amp_hist_free(&h);
    return t;
}

/* Returns bench_daemon_stop's result. */
static int bench_whole(const struct bench_opts *o, const uint8_t *input, const uint8_t *want,
                        const struct hist_result *want_hist, struct bench_times *tm)
{
    struct bench_daemon dm;
    memset(&dm, 0, sizeof dm);
    if (o->address)
        snprintf(dm.address, sizeof dm.address, "%s", o->address);
    else
        bench_stream_daemon_start(&dm, o->ampd, o->chunk);
    amp_conn *c;
    if (amp_connect(dm.address, &c) != 0)
        bench_die("%s", amp_last_message(NULL));
    char device[16];
    snprintf(device, sizeof device, "%u", o->device);
    amp_opts ao = { .size = sizeof(amp_opts), .device = device, .timeout_ms = 0};
    uint8_t *got = bench_alloc_touched((size_t)o->size);
    for (int job = 0; job < BENCH_NJOBS; job++) {
        double t[BENCH_REPS_MAX];
        bench_whole_once(c, &ao, job, input, (size_t)o->size, want, want_hist, got); /* warm */
        for (int r = 0; r < o->reps; r++)
            t[r] = bench_whole_once(c, &ao, job, input, (size_t)o->size, want, want_hist, got);
        tm->whole[job] = bench_median(t, o->reps);
        printf("# whole %s: device %s\n", bench_job_names[job], amp_last_device(c));
    }
    free(got);
    amp_close(c);
    return bench_daemon_stop(&dm);
}

/* --- report -------------------------------------------------------------------------- */

static void bench_row(const char *job, const char *size, const char *what, double s,
                      double bytes, const char *note)
{
    printf("%-10s %6s  %-18s %10.4f %8.2f  %s\n", job, size, what, s, bytes / s / 1e9, note);
}

static void bench_report(const struct bench_opts *o, const struct bench_times *tm)
{
    char size[32];
    bench_size_label(o->size, size, sizeof size, true);
    double bytes = (double)o->size;
    printf("%-10s %6s  %-18s %10s %8s  %s\n", "job", "size", "stage", "seconds", "GB/s",
           "note");
    for (int j = 0; j < BENCH_NJOBS; j++) {
        const char *job = bench_job_names[j];
        double sum = 0, slowest = 0;
        int slow = 0;
        for (int s = 0; s < BENCH_NSTAGES; s++) {
            double t = tm->stage[j][s];
            sum += t;
            if (t > slowest) {
                slowest = t;
                slow = s;
            }
            bench_row(job, size, bench_stage_names[s], t, bytes,
                      s == ST_COPY_OUT && j == JOB_HIST ? "256 counts only"
                      : s == ST_SOCKET && j == JOB_TRANSFORM ? "in and out at once" : "");
        }
        char note[96];
        bench_row(job, size, "sum of stages", sum, bytes, "");
        snprintf(note, sizeof note, "%s", bench_stage_names[slow]);
        bench_row(job, size, "slowest stage", slowest, bytes, note);
        double whole = tm->whole[j];
        snprintf(note, sizeof note, "whole/slowest %.2f  whole/sum %.2f", whole / slowest,
                 whole / sum);
        bench_row(job, size, "whole (ampd)", whole, bytes, note);
    }
}

/* --- options and main ---------------------------------------------------------------- */

static void bench_usage(void)
{
    fprintf(stderr,
            "usage: bench_stream [--size N] [--chunk N] [--device I] [--reps N]\n"
            "                    [--ampd PATH | --address ADDR]\n"
            "  --size    bytes of each job's input (default 1G; K, M, G suffixes)\n"
            "  --chunk   bytes per chunk: the stages' unit and ampd's --chunk-bytes\n"
            "            (default 4M, 64K..256M, a multiple of 4K)\n"
            "  --device  device index, for the stages and for the streamed jobs (default 0)\n"
            "  --reps    median of N runs after one warm-up (default 3, at most 64)\n"
            "  --ampd    the ampd binary to start (default $AMPD_BIN, else the build's)\n"
            "  --address a running ampd to use instead (its own --chunk-bytes applies)\n");
    exit(2);
}

static void bench_parse(int argc, char **argv, struct bench_opts *o)
{
    o->size = BENCH_SIZE_DEFAULT;
    o->chunk = BENCH_CHUNK_DEFAULT;
    o->reps = BENCH_REPS_DEFAULT;
    o->ampd = getenv("AMPD_BIN") ? getenv("AMPD_BIN") : BENCH_AMPD_DEFAULT;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            bench_usage();
        const char *v = argv[++i];
        if (strcmp(argv[i - 1], "--size") == 0)
            o->size = bench_parse_size(v);
        else if (strcmp(argv[i - 1], "--chunk") == 0)
            o->chunk = bench_parse_size(v);
        else if (strcmp(argv[i - 1], "--device") == 0)
            o->device = (unsigned)atoi(v);
        else if (strcmp(argv[i - 1], "--reps") == 0)
            o->reps = atoi(v);
        else if (strcmp(argv[i - 1], "--ampd") == 0)
            o->ampd = v;
        else if (strcmp(argv[i - 1], "--address") == 0)
            o->address = v;
        else
            bench_usage();
    }
    if (o->size == 0 || o->chunk < BENCH_CHUNK_MIN || o->chunk > BENCH_CHUNK_MAX ||
        o->chunk % BENCH_CHUNK_ALIGN || o->reps < 1 ||
        o->reps > BENCH_REPS_MAX)
        bench_usage();
}

/* The CPU reference of both jobs over input. */
static uint8_t *bench_reference(const uint8_t *input, size_t size, struct hist_result *hist)
{
    uint8_t *want = bench_alloc_touched(size);
    memcpy(want, input, size);
    struct transform_params p = {.op = XFORM_ADD, .value = BENCH_ADD_VALUE, .length = size};
    host_step_transform(&p, want, size);
    struct hist_params hp = {.type = ELEM_U8, .bins = BENCH_HIST_BINS};
    if (host_step_hist(&hp, input, size, hist) != 0)
        bench_die("out of host memory for the histogram reference");
    return want;
}

int main(int argc, char **argv)
{
    struct bench_opts o = {0};
    bench_parse(argc, argv, &o);
    signal(SIGPIPE, SIG_IGN);
    struct dev **devs;
    size_t ndevs;
    char err[512];
    if (dev_open_all_profiled(&devs, &ndevs, err, sizeof err) < 0)
        bench_die("%s", err);
    if (o.device >= ndevs)
        bench_die("no device %u (%zu devices)", o.device, ndevs);
    const struct dev_info *in = dev_info(devs[o.device]);
    if (o.chunk > in->max_mem_alloc_size)
        bench_die("--chunk is over the device's max_mem_alloc_size (%llu)",
                  (unsigned long long)in->max_mem_alloc_size);
    char size[32], chunk[32];
    bench_size_label(o.size, size, sizeof size, true);
    bench_size_label(o.chunk, chunk, sizeof chunk, true);
    printf("# device %u: %s (%s, %s), %u compute units\n", in->index, in->name,
           dev_type_name(in->type), in->platform, in->compute_units);
    printf("# size %s, chunk %s, median of %d after 1 warm-up; GB/s = job input bytes / s\n",
           size, chunk, o.reps);
    fflush(stdout);

    uint8_t *input = bench_alloc_touched((size_t)o.size);
    bench_random(input, (size_t)o.size, BENCH_SEED);
    struct hist_result want_hist = {0};
    uint8_t *want = bench_reference(input, (size_t)o.size, &want_hist);
    struct bench_times tm;
    memset(&tm, 0, sizeof tm);
    bench_stages(devs[o.device], &o, input, want, &want_hist, &tm);
    /* The bench's own context lets go of the device before ampd's jobs. */
    dev_close_all(devs, ndevs);
    int daemon_rc = bench_whole(&o, input, want, &want_hist, &tm);
    bench_report(&o, &tm);
    free(input);
    free(want);
    free(want_hist.counts);
    if (bench_failures)
        fprintf(stderr, "bench_stream: %d result(s) differ from the CPU reference\n",
                bench_failures);
    return bench_failures ? 1 : daemon_rc < 0 ? 2 : 0;
}
