/* SPDX-License-Identifier: MIT */
/* bench_data_path.c: how close ampd's data paths come to the limits under
 * them, measured in one run on the same bytes.
 *
 * Issue 11 asks what a client pays to get bytes to a device and back
 * through ampd, against what the hardware allows. For each --sizes size
 * this program measures:
 *
 *   the limits  the device's pinned copy host->device and device->host
 *               (a CL_MEM_ALLOC_HOST_PTR buffer mapped once, blocking
 *               clEnqueueWrite/ReadBuffer: the PCIe limit on a GPU), and
 *               the bytes through a bare Unix socket pair and a bare TCP
 *               loopback connection, one way and both ways at once (a
 *               writer and a reader thread per direction, memory to
 *               memory), and --streams Unix copies at once on their own
 *               pairs (what the host gives that many streams' bytes):
 *               best of --reps, after one warm-up;
 *   ampd        a transform (xor, bytes in and out) and a 256-bin uint8
 *               histogram (bytes in only) from client memory to client
 *               memory through libampclient: the Stream call over a Unix
 *               socket and over TCP loopback, the unary calls over a Unix
 *               socket, the unary call over shared-memory regions
 *               (amp_run_region: the input already in a region, the
 *               output read from one), --streams streams (default 4)
 *               on their own connections at once against one (on the
 *               named device, or with --spread where the daemon places
 *               them, each stream's device printed), and the Stream call
 *               over TLS on loopback (ampd's tls: listener, certificates
 *               made for the run by tests/support/tls_certs.sh with the
 *               openssl command); median of --reps, after one warm-up.
 *
 * Each ampd row's ratio is to the limit its bytes cannot beat: the raw
 * copy one way for a histogram, both ways at once for a streamed
 * transform (its bytes go in while results come out), one way twice over
 * for a unary transform (its reply starts when its request has arrived);
 * the pinned copy in for a region histogram, in then out for a region
 * transform (the device copies straight from and to the region's
 * mapping, pageable memory, where the pinned copy is the best case).
 * The several-stream rows compare with one stream (issue 11's target is
 * 2.5x for four), and their note with the raw copies at once; the TLS rows with the same stream over plain TCP in the same run
 * (issue 13's target is 0.7). GB/s is input bytes over seconds everywhere, bytes per direction
 * for the raw copies.
 *
 * The program starts its own ampd (--ampd PATH, else $AMPD_BIN, else the
 * build's) on a Unix socket, on 127.0.0.1 and on tls:127.0.0.1 (the
 * certificate script from $AMP_SOURCE_DIR, else this source tree's),
 * with the message and memory limits raised to fit the largest unary
 * call, and stops it with SIGTERM.
 * Every result ampd returns is compared with the CPU reference
 * (tests/support/host_step.c); so is every raw and pinned copy. A mismatch
 * exits 1; a failure to run, or an ampd not exiting 0, exits 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "amp.h"
#include "bench_certs.h"
#include "bench_daemon.h"
#include "bench_sock.h"
#include "bench_util.h"
#include "host_step.h"
#include "dev_internal.h"

#define DP_SIZES_DEFAULT "1M,64M,1G"
#define DP_MAX_SIZES 8
#define DP_REPS_DEFAULT 3
#define DP_REPS_MAX 64
#define DP_SEED 4242
#define DP_XOR_VALUE 0xa5
#define DP_HIST_BINS 256
#define DP_STREAMS_DEFAULT 4            /* the concurrent-stream rows */
#define DP_STREAMS_MAX 16
#define DP_STREAMS_TARGET "2.5"         /* issue 11: four streams vs one */
#define DP_TLS_TARGET "0.7"             /* issue 13: a stream over TLS vs plain TCP */
#define DP_WRITE_SIZE AMP_STREAM_CHUNK  /* bytes per raw write, as the client sends */
/* ampd's limits for the run: a unary call of the largest size must fit in
 * one message with its other fields, and the memory ampd holds for it
 * (request, job input and output, reply) in the connection's budget. */
#define DP_MESSAGE_SLACK (1ull << 20)
#define DP_MESSAGE_MIN (64ull << 20)     /* ampd's default, above --chunk-bytes */
#define DP_MESSAGE_MAX 0xffffffffull     /* gRPC's length prefix */
#define DP_MEMORY_PER_BYTE 8             /* held bytes per input byte allowed */
#define DP_MEMORY_MIN (1ull << 30)       /* ampd's default --max-job-memory */

enum dp_row {
    R_PIN_IN, R_PIN_OUT,
    R_UNIX_1, R_UNIX_2, R_UNIX_2_LOOP, R_TCP_1, R_TCP_2, R_UNIX_1_MULTI, R_UNIX_2_MULTI,
    R_STREAM_UNIX_X, R_STREAM_UNIX_H, R_STREAM_TCP_X, R_STREAM_TCP_H,
    R_STREAM_TLS_X, R_STREAM_TLS_H,
    R_UNARY_X, R_UNARY_H,
    R_REGION_X, R_REGION_H,
    R_MULTI_X, R_MULTI_H,
    DP_NROWS
};

enum dp_job { JOB_TRANSFORM, JOB_HIST };

/* What a row is and what it is held against. */
struct dp_row_def {
    const char *path, *job;
    int lim_a, lim_b;   /* limit rows: none (-1), a alone, or a then b in series */
    const char *limit;  /* the limit's name in the table */
    const char *note;
    bool several;       /* --streams of it at once: the count leads its path */
    int also;           /* a row the note also compares with; 0 (R_PIN_IN, never one): none */
};

static const struct dp_row_def dp_rows[DP_NROWS] = {
    [R_PIN_IN] = {"pinned", "h->d copy", -1, -1, "-", "the PCIe limit"},
    [R_PIN_OUT] = {"pinned", "d->h copy", -1, -1, "-", "the PCIe limit"},
    [R_UNIX_1] = {"raw unix", "copy 1-way", -1, -1, "-", ""},
    [R_UNIX_2] = {"raw unix", "copy 2-way", -1, -1, "-", "each way, both at once"},
    [R_UNIX_2_LOOP] = {"raw unix", "2-way loop", -1, -1, "-",
                       "the same, one thread a side polling (as an event loop)"},
    [R_TCP_1] = {"raw tcp", "copy 1-way", -1, -1, "-", ""},
    [R_TCP_2] = {"raw tcp", "copy 2-way", -1, -1, "-", "each way, both at once"},
    [R_UNIX_1_MULTI] = {"raw unix", "copy 1-way", -1, -1, "-", "pairs at once, in all", true,
                        R_UNIX_1},
    [R_UNIX_2_MULTI] = {"raw unix", "copy 2-way", -1, -1, "-", "pairs at once, in all", true,
                        R_UNIX_2},
    [R_STREAM_UNIX_X] = {"stream unix", "transform", R_UNIX_2, -1, "raw unix 2-way", ""},
    [R_STREAM_UNIX_H] = {"stream unix", "histogram", R_UNIX_1, -1, "raw unix 1-way", ""},
    [R_STREAM_TCP_X] = {"stream tcp", "transform", R_TCP_2, -1, "raw tcp 2-way", ""},
    [R_STREAM_TCP_H] = {"stream tcp", "histogram", R_TCP_1, -1, "raw tcp 1-way", ""},
    [R_STREAM_TLS_X] = {"stream tls", "transform", R_STREAM_TCP_X, -1, "stream tcp",
                        "target >= " DP_TLS_TARGET},
    [R_STREAM_TLS_H] = {"stream tls", "histogram", R_STREAM_TCP_H, -1, "stream tcp",
                        "target >= " DP_TLS_TARGET},
    [R_UNARY_X] = {"unary unix", "transform", R_UNIX_1, R_UNIX_1, "raw unix 1-way, twice", ""},
    [R_UNARY_H] = {"unary unix", "histogram", R_UNIX_1, -1, "raw unix 1-way", ""},
    [R_REGION_X] = {"region unix", "transform", R_PIN_IN, R_PIN_OUT, "pinned h->d, d->h", ""},
    [R_REGION_H] = {"region unix", "histogram", R_PIN_IN, -1, "pinned h->d", ""},
    [R_MULTI_X] = {"streams unix", "transform", R_STREAM_UNIX_X, -1, "1 stream unix",
                   "4: target >= " DP_STREAMS_TARGET, true, R_UNIX_2_MULTI},
    [R_MULTI_H] = {"streams unix", "histogram", R_STREAM_UNIX_H, -1, "1 stream unix",
                   "4: target >= " DP_STREAMS_TARGET, true, R_UNIX_1_MULTI},
};

/* Row groups --only picks from. */
enum dp_group { G_PINNED = 1, G_RAW = 2, G_STREAM = 4, G_UNARY = 8, G_REGION = 16, G_MULTI = 32 };
#define DP_GROUPS_ALL 63u

struct dp_opts {
    unsigned groups;                 /* enum dp_group bits: the rows to run */
    uint64_t sizes[DP_MAX_SIZES];
    int nsizes;
    uint64_t largest;
    int reps;
    unsigned device;
    int streams;                     /* the several-at-once rows */
    bool spread;                     /* those streams name no device */
    const char *ampd;
};

/* The bytes every row works on: prefixes of one random input. */
struct dp_data {
    uint8_t *input;                       /* largest bytes */
    uint8_t *want;                        /* input xor DP_XOR_VALUE */
    struct hist_result hist[DP_MAX_SIZES];/* of each size's prefix */
    uint8_t *got[DP_STREAMS_MAX];         /* largest bytes each (--streams): what came back */
};

/* Seconds and GB/s of each row at each size; 0 for a row not measured. */
struct dp_results {
    double secs[DP_MAX_SIZES][DP_NROWS];
    double gbps[DP_MAX_SIZES][DP_NROWS];
};

static int dp_failures;

static void dp_fail(const char *what, uint64_t size)
{
    fprintf(stderr, "bench_data_path: MISMATCH: %s of %" PRIu64 " bytes differs from the "
            "CPU reference\n", what, size);
    dp_failures++;
}

static void dp_call_failed(amp_conn *c, const char *call, int rc) __attribute__((noreturn));

static void dp_call_failed(amp_conn *c, const char *call, int rc)
{
    bench_die("%s: %s: %s", call, amp_strerror(rc), amp_last_message(c));
}

static double dp_best(const double *t, int n)
{
    double best = t[0];
    for (int i = 1; i < n; i++)
        best = t[i] < best ? t[i] : best;
    return best;
}

static void dp_record(struct dp_results *res, int k, enum dp_row r, double secs, double bytes)
{
    res->secs[k][r] = secs;
    res->gbps[k][r] = bytes / secs / 1e9;
}

/* --- the pinned copies ------------------------------------------------------------ */

struct dp_pinned {
    struct dev *d;
    cl_mem buf;                      /* size bytes on the device */
    uint8_t *src, *dst;              /* pinned, mapped once */
    struct dev_pinned *src_h, *dst_h;
};

static void dp_cl(cl_int rc, const char *what)
{
    if (rc != CL_SUCCESS)
        bench_die("%s: %s", what, dev_cl_error_name(rc));
}

static double dp_pinned_in(struct dp_pinned *p, size_t size)
{
    double t0 = bench_now();
    dp_cl(clEnqueueWriteBuffer(p->d->q[DEV_Q_IN], p->buf, CL_TRUE, 0, size, p->src, 0, NULL,
                               NULL), "pinned copy host->device");
    return bench_now() - t0;
}

static double dp_pinned_out(struct dp_pinned *p, size_t size)
{
    double t0 = bench_now();
    dp_cl(clEnqueueReadBuffer(p->d->q[DEV_Q_OUT], p->buf, CL_TRUE, 0, size, p->dst, 0, NULL,
                              NULL), "pinned copy device->host");
    return bench_now() - t0;
}

/* Both copies of size bytes, best of reps after a warm-up; each round
 * trip must bring the input back. */
static void dp_pinned_size(struct dev *d, const struct dp_opts *o, const struct dp_data *data,
                           int k, struct dp_results *res)
{
    size_t size = (size_t)o->sizes[k];
    struct dp_pinned p = {.d = d};
    cl_int rc;
    p.buf = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, size, NULL, &rc);
    dp_cl(rc, "a device buffer");
    p.src = dev_pinned_alloc(d, size, &p.src_h);
    p.dst = dev_pinned_alloc(d, size, &p.dst_h);
    if (!p.src || !p.dst)
        bench_die("cannot allocate 2 x %zu bytes of pinned host memory", size);
    memcpy(p.src, data->input, size);
    double tin[DP_REPS_MAX] = { 0 }, tout[DP_REPS_MAX] = { 0 };
    for (int r = -1; r < o->reps; r++) {
        memset(p.dst, 0, size);
        double a = dp_pinned_in(&p, size), b = dp_pinned_out(&p, size);
        if (memcmp(p.dst, data->input, size) != 0)
            dp_fail("the pinned copy there and back", size);
        if (r >= 0) {
            tin[r] = a;
            tout[r] = b;
        }
    }
    dp_record(res, k, R_PIN_IN, dp_best(tin, o->reps), (double)size);
    dp_record(res, k, R_PIN_OUT, dp_best(tout, o->reps), (double)size);
    dev_pinned_free(p.src_h);
    dev_pinned_free(p.dst_h);
    clReleaseMemObject(p.buf);
}

/* Opens the devices only for these copies: ampd has the device to itself
 * afterwards. */
static void dp_pinned_all(const struct dp_opts *o, const struct dp_data *data,
                          struct dp_results *res)
{
    struct dev **devs;
    size_t ndevs;
    char err[512];
    if (dev_open_all(&devs, &ndevs, err, sizeof err) < 0)
        bench_die("%s", err);
    if (o->device >= ndevs)
        bench_die("no device %u (%zu devices)", o->device, ndevs);
    const struct dev_info *in = dev_info(devs[o->device]);
    if (o->largest > in->max_mem_alloc_size)
        bench_die("a size is over the device's max_mem_alloc_size (%" PRIu64 ")",
               in->max_mem_alloc_size);
    printf("# device %u: %s (%s, %s), %u compute units\n", in->index, in->name,
           dev_type_name(in->type), in->platform, in->compute_units);
    for (int k = 0; k < o->nsizes; k++)
        dp_pinned_size(devs[o->device], o, data, k, res);
    dev_close_all(devs, ndevs);
}

/* --- several at once ------------------------------------------------------------------- */

/* One of several jobs run together (dp_at_once). */
struct dp_at_once_thread {
    void (*run)(void *job);
    void *job;
    pthread_barrier_t *start;
    double t0, t1;
    pthread_t th;
};

static void *dp_at_once_main(void *arg)
{
    struct dp_at_once_thread *t = arg;
    pthread_barrier_wait(t->start);
    t->t0 = bench_now();
    t->run(t->job);
    t->t1 = bench_now();
    return NULL;
}

/* Runs run(jobs[i]) on n threads started at a barrier: seconds from the
 * first start to the last end. */
static double dp_at_once(void (*run)(void *job), void *const jobs[], int n)
{
    struct dp_at_once_thread t[DP_STREAMS_MAX];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        t[i] = (struct dp_at_once_thread){.run = run, .job = jobs[i], .start = &start};
        int e = pthread_create(&t[i].th, NULL, dp_at_once_main, &t[i]);
        if (e != 0)
            bench_die("cannot start a thread (%s)", strerror(e));
    }
    double t0 = 0, t1 = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i].th, NULL);
        t0 = i == 0 || t[i].t0 < t0 ? t[i].t0 : t0;
        t1 = t[i].t1 > t1 ? t[i].t1 : t1;
    }
    pthread_barrier_destroy(&start);
    return t1 - t0;
}

/* --- the raw socket copies ---------------------------------------------------------- */

/* One copy of size bytes (both ways when two_way): seconds, checked. */
static double dp_raw_once(enum bench_sock_kind kind, bool two_way, bool loop,
                          const struct dp_data *data, size_t size)
{
    int fd[2];
    if (bench_sock_pair(kind, fd) < 0)
        bench_die("a %s socket pair: %s", kind == BENCH_SOCK_TCP ? "TCP" : "Unix", strerror(errno));
    memset(data->got[0], 0, size);
    if (two_way)
        memset(data->got[1], 0, size);
    double t = loop ? bench_sock_copy_loop(fd, data->input, data->got[0], data->want,
                                           data->got[1], size, DP_WRITE_SIZE)
                    : bench_sock_copy(fd, data->input, data->got[0], two_way ? data->want : NULL,
                                      data->got[1], size, DP_WRITE_SIZE);
    if (t < 0)
        bench_die("raw socket copy: %s", strerror(errno));
    close(fd[0]);
    close(fd[1]);
    if (memcmp(data->got[0], data->input, size) != 0 ||
        (two_way && memcmp(data->got[1], data->want, size) != 0))
        dp_fail("a raw socket copy", size);
    return t;
}

static void dp_raw_row(enum bench_sock_kind kind, bool two_way, bool loop, const struct dp_opts *o,
                       const struct dp_data *data, int k, enum dp_row row,
                       struct dp_results *res)
{
    size_t size = (size_t)o->sizes[k];
    double t[DP_REPS_MAX] = { 0 };
    dp_raw_once(kind, two_way, loop, data, size);   /* warm-up */
    for (int r = 0; r < o->reps; r++)
        t[r] = dp_raw_once(kind, two_way, loop, data, size);
    dp_record(res, k, row, dp_best(t, o->reps), (double)size);
}

/* n raw Unix copies at once, each on its own socket pair with its own
 * threads (what n streams can at best move together):
 * one thread per pair (dp_at_once) runs bench_sock_copy. */
struct dp_raw_pair {
    int fd[2];
    const uint8_t *in, *out;
    uint8_t *in_dst, *out_dst;   /* out_dst: NULL one way */
    size_t size;
};

static void dp_raw_pair_run(void *job)
{
    struct dp_raw_pair *p = job;
    if (bench_sock_copy(p->fd, p->in, p->in_dst, p->out_dst ? p->out : NULL, p->out_dst,
                        p->size, DP_WRITE_SIZE) < 0)
        bench_die("raw socket copy: %s", strerror(errno));
}

/* Seconds from the first pair's start to the last one's end, checked. */
static double dp_raw_multi_once(const struct dp_data *data, uint8_t *const back[], size_t size,
                                int n)
{
    struct dp_raw_pair p[DP_STREAMS_MAX];
    void *jobs[DP_STREAMS_MAX] = {0};
    for (int i = 0; i < n; i++) {
        p[i] = (struct dp_raw_pair){.in = data->input, .out = data->want, .in_dst = data->got[i],
                                    .out_dst = back ? back[i] : NULL, .size = size};
        if (bench_sock_pair(BENCH_SOCK_UNIX, p[i].fd) < 0)
            bench_die("a Unix socket pair: %s", strerror(errno));
        memset(p[i].in_dst, 0, size);
        if (back)
            memset(back[i], 0, size);
        jobs[i] = &p[i];
    }
    double t = dp_at_once(dp_raw_pair_run, jobs, n);
    for (int i = 0; i < n; i++) {
        close(p[i].fd[0]);
        close(p[i].fd[1]);
        if (memcmp(p[i].in_dst, data->input, size) != 0 ||
            (back && memcmp(back[i], data->want, size) != 0))
            dp_fail("a raw socket copy of several at once", size);
    }
    return t;
}

/* The row of --streams copies at once; both ways takes that many more
 * buffers of size bytes for the row. GB/s counts every pair's bytes. */
static void dp_raw_multi_row(bool two_way, const struct dp_opts *o, const struct dp_data *data,
                             int k, enum dp_row row, struct dp_results *res)
{
    size_t size = (size_t)o->sizes[k];
    uint8_t *back[DP_STREAMS_MAX];
    for (int i = 0; i < o->streams; i++)
        back[i] = two_way ? bench_alloc_touched(size) : NULL;
    double t[DP_REPS_MAX] = { 0 };
    dp_raw_multi_once(data, two_way ? back : NULL, size, o->streams);   /* warm-up */
    for (int r = 0; r < o->reps; r++)
        t[r] = dp_raw_multi_once(data, two_way ? back : NULL, size, o->streams);
    dp_record(res, k, row, dp_best(t, o->reps), (double)size * o->streams);
    for (int i = 0; i < o->streams; i++)
        free(back[i]);
}

static void dp_raw_all(const struct dp_opts *o, const struct dp_data *data,
                       struct dp_results *res)
{
    for (int k = 0; k < o->nsizes && (o->groups & G_RAW); k++) {
        dp_raw_row(BENCH_SOCK_UNIX, false, false, o, data, k, R_UNIX_1, res);
        dp_raw_row(BENCH_SOCK_UNIX, true, false, o, data, k, R_UNIX_2, res);
        dp_raw_row(BENCH_SOCK_UNIX, true, true, o, data, k, R_UNIX_2_LOOP, res);
        dp_raw_row(BENCH_SOCK_TCP, false, false, o, data, k, R_TCP_1, res);
        dp_raw_row(BENCH_SOCK_TCP, true, false, o, data, k, R_TCP_2, res);
        dp_raw_multi_row(false, o, data, k, R_UNIX_1_MULTI, res);
        dp_raw_multi_row(true, o, data, k, R_UNIX_2_MULTI, res);
    }
}

/* --- ampd ------------------------------------------------------------------------------ */

struct dp_ampd {
    struct bench_daemon dm;
    char tcp[64];                 /* "127.0.0.1:PORT" */
    char tls[64];                 /* "tls:127.0.0.1:PORT" */
    struct bench_certs certs;     /* the tls: listener's, made for the run */
    char args[2][32];             /* the limits it was started with */
    const char *argv[24];         /* its options after --listen, NULL-terminated */
    amp_conn *unix_c, *tcp_c, *tls_c;
    amp_region *in, *out;         /* largest bytes each, on unix_c */
    amp_opts ao;
    amp_opts multi_ao;            /* the multi rows': ao, or no device (--spread) */
    char device[16];
};

static void dp_ampd_args(struct dp_ampd *am, const struct dp_opts *o)
{
    uint64_t msg = o->largest + DP_MESSAGE_SLACK, mem = o->largest * DP_MEMORY_PER_BYTE;
    msg = msg < DP_MESSAGE_MIN ? DP_MESSAGE_MIN : msg > DP_MESSAGE_MAX ? DP_MESSAGE_MAX : msg;
    mem = mem < DP_MEMORY_MIN ? DP_MEMORY_MIN : mem;
    snprintf(am->tcp, sizeof am->tcp, "127.0.0.1:%d", bench_daemon_free_port());
    snprintf(am->tls, sizeof am->tls, "tls:127.0.0.1:%d", bench_daemon_free_port());
    snprintf(am->args[0], sizeof am->args[0], "%" PRIu64, msg);
    snprintf(am->args[1], sizeof am->args[1], "%" PRIu64, mem);
    const char *argv[] = {"--listen", am->tcp, "--listen", am->tls, "--tls-cert", am->certs.cert,
                          "--tls-key", am->certs.key, "--tcp-require-token", "off",
                          "--max-message-bytes", am->args[0],
                          "--max-job-memory", am->args[1], "--max-connection-memory",
                          am->args[1], NULL};
    memcpy(am->argv, argv, sizeof argv);
}

static amp_conn *dp_connect(const char *address)
{
    amp_conn *c;
    if (amp_connect(address, &c) != 0)
        bench_die("connect to %s: %s", address, amp_last_message(NULL));
    return c;
}

/* A TLS connection trusting the run's CA. */
static amp_conn *dp_connect_tls(const struct dp_ampd *am)
{
    amp_conn *c;
    amp_connect_opts co = {.size = sizeof co, .tls_ca = am->certs.ca};
    if (amp_connect_with(am->tls, &co, &c) != 0)
        bench_die("connect to %s: %s", am->tls, amp_last_message(NULL));
    return c;
}

static void dp_ampd_start(struct dp_ampd *am, const struct dp_opts *o)
{
    memset(am, 0, sizeof *am);
    bench_certs_make(&am->certs, "bench_data_path", BENCH_SOURCE_DIR);
    dp_ampd_args(am, o);
    char err[256];
    if (bench_daemon_start(&am->dm, o->ampd, "bench_data_path", am->argv, err, sizeof err) < 0)
        bench_die("%s", err);
    printf("# ampd %s --listen %s", o->ampd, am->dm.address);
    for (int i = 0; am->argv[i]; i++)
        printf(" %s", am->argv[i]);
    printf("\n");
    am->unix_c = dp_connect(am->dm.address);
    am->tcp_c = dp_connect(am->tcp);
    am->tls_c = dp_connect_tls(am);
    int rc = amp_region_create(am->unix_c, (size_t)o->largest, &am->in);
    if (rc == 0)
        rc = amp_region_create(am->unix_c, (size_t)o->largest, &am->out);
    if (rc != 0)
        dp_call_failed(am->unix_c, "amp_region_create", rc);
    snprintf(am->device, sizeof am->device, "%u", o->device);
    am->ao = (amp_opts){.size = sizeof(amp_opts), .device = am->device, .timeout_ms = 0};
    am->multi_ao = am->ao;
    am->multi_ao.device = o->spread ? NULL : am->device;
}

static int dp_ampd_stop(struct dp_ampd *am)
{
    uint64_t peak = bench_vm_hwm(am->dm.pid);
    amp_region_release(am->in);
    amp_region_release(am->out);
    amp_close(am->unix_c);
    amp_close(am->tcp_c);
    amp_close(am->tls_c);
    printf("# ampd peak resident memory (VmHWM): %.1f MiB\n", (double)peak / (1 << 20));
    int rc = bench_daemon_stop(&am->dm);
    bench_certs_remove(&am->certs);
    return rc;
}

/* --- results against the reference ------------------------------------------------------ */

static void dp_check_data(const uint8_t *got, size_t got_len, const struct dp_data *data,
                          size_t size, const char *what)
{
    if (got_len != size || memcmp(got, data->want, size) != 0)
        dp_fail(what, size);
}

static void dp_check_hist(const amp_hist *h, const struct hist_result *want, uint64_t size,
                          const char *what)
{
    if (h->bins != DP_HIST_BINS || h->below || h->above || h->nan ||
        memcmp(h->counts, want->counts, DP_HIST_BINS * sizeof(uint64_t)) != 0)
        dp_fail(what, size);
}

/* --- the Stream call ------------------------------------------------------------------- */

static amp_step dp_step(enum dp_job job)
{
    amp_step st;
    memset(&st, 0, sizeof st);
    if (job == JOB_TRANSFORM) {
        st.size = sizeof st;
        st.kind = AMP_STEP_TRANSFORM;
        st.transform.op = AMP_OP_XOR;
        st.transform.value = DP_XOR_VALUE;
    } else {
        st.size = sizeof st;
        st.kind = AMP_STEP_HISTOGRAM;
        st.hist.type = AMP_TYPE_UINT8;
        st.hist.bins = DP_HIST_BINS;
    }
    return st;
}

/* One streamed job of size bytes on c, its output into got; the result is
 * checked apart (dp_stream_check), so that threads only run calls. */
struct dp_stream_run {
    amp_conn *c;
    const amp_opts *ao;
    enum dp_job job;
    const uint8_t *input;
    uint8_t *got;
    size_t size;
    size_t got_len;          /* output bytes that came back */
    amp_hist hist;           /* a histogram's result */
    double t0, t1;           /* the call's start and end */
    int rc;                  /* amp_stream_mem_into's */
};

static void dp_stream_run(struct dp_stream_run *s)
{
    amp_step st = dp_step(s->job);
    size_t nhists = s->job == JOB_HIST ? 1 : 0;
    memset(&s->hist, 0, sizeof s->hist);
    s->t0 = bench_now();
    s->rc = amp_stream_mem_into(s->c, s->ao, &st, 1, s->input, s->size, s->got, s->size,
                                &s->got_len, nhists ? &s->hist : NULL, nhists);
    s->t1 = bench_now();
}

static void dp_stream_check(struct dp_stream_run *s, const struct dp_data *data, int k,
                            const char *what)
{
    if (s->rc != 0)
        dp_call_failed(s->c, what, s->rc);
    if (s->job == JOB_TRANSFORM)
        dp_check_data(s->got, s->got_len, data, s->size, what);
    else if (s->got_len != 0)
        dp_fail(what, s->size);
    else
        dp_check_hist(&s->hist, &data->hist[k], s->size, what);
    amp_hist_free(&s->hist);
}

static double dp_stream_once(amp_conn *c, const amp_opts *ao, enum dp_job job,
                             const struct dp_data *data, int k, size_t size)
{
    struct dp_stream_run s = {.c = c, .ao = ao, .job = job, .input = data->input,
                              .got = data->got[0], .size = size};
    memset(s.got, 0, size);
    dp_stream_run(&s);
    dp_stream_check(&s, data, k, job == JOB_TRANSFORM ? "a streamed transform"
                                                      : "a streamed histogram");
    return s.t1 - s.t0;
}

/* --- several streams at once ------------------------------------------------------------ */

static void dp_multi_run(void *job)
{
    dp_stream_run(job);
}

/* Whether the streams shared the host fairly: the slowest and fastest
 * stream, and how far apart their ends were, beside the whole span; and
 * the device each ran on. */
static void dp_multi_spread(const struct dp_stream_run m[], int n, size_t size, double whole)
{
    double lo = 0, hi = 0, first = 0, last = 0;
    char ran[DP_STREAMS_MAX * 8] = "";
    for (int i = 0; i < n; i++) {
        size_t at = strlen(ran);
        const char *dev = amp_last_device(m[i].c);   /* "INDEX: NAME" */
        snprintf(ran + at, sizeof ran - at, "%s%.*s", i ? "," : "", (int)strcspn(dev, ":"), dev);
        double gbs = (double)size / (m[i].t1 - m[i].t0) / 1e9;
        lo = i == 0 || gbs < lo ? gbs : lo;
        hi = gbs > hi ? gbs : hi;
        first = i == 0 || m[i].t1 < first ? m[i].t1 : first;
        last = m[i].t1 > last ? m[i].t1 : last;
    }
    printf("# %d streams of %zu MiB (%s): each %.2f-%.2f GB/s, ends %.1f ms apart in %.1f ms; "
           "devices %s\n", n, size >> 20, m[0].job == JOB_TRANSFORM ? "transform" : "histogram",
           lo, hi, (last - first) * 1e3, whole * 1e3, ran);
}

/* n streams of size bytes on their own connections, started at once
 * (dp_at_once): seconds from the first start to the last end. */
static double dp_multi_once(amp_conn *const conns[], int n, const amp_opts *ao, enum dp_job job,
                            const struct dp_data *data, int k, size_t size)
{
    struct dp_stream_run m[DP_STREAMS_MAX];
    void *jobs[DP_STREAMS_MAX] = {0};
    for (int i = 0; i < n; i++) {
        memset(data->got[i], 0, size);
        m[i] = (struct dp_stream_run){.c = conns[i], .ao = ao, .job = job,
                                      .input = data->input, .got = data->got[i], .size = size};
        jobs[i] = &m[i];
    }
    double t = dp_at_once(dp_multi_run, jobs, n);
    for (int i = 0; i < n; i++)
        dp_stream_check(&m[i], data, k, job == JOB_TRANSFORM ? "a concurrent transform"
                                                             : "a concurrent histogram");
    dp_multi_spread(m, n, size, t);
    return t;
}

/* --- the unary calls ------------------------------------------------------------------- */

static double dp_unary_once(amp_conn *c, const amp_opts *ao, enum dp_job job,
                            const struct dp_data *data, int k, size_t size)
{
    double t;
    if (job == JOB_TRANSFORM) {
        amp_transform_params p = {.op = AMP_OP_XOR, .value = DP_XOR_VALUE};
        void *out = NULL;
        size_t out_len = 0;
        double t0 = bench_now();
        int rc = amp_transform(c, ao, &p, data->input, size, &out, &out_len);
        t = bench_now() - t0;
        if (rc != 0)
            dp_call_failed(c, "amp_transform", rc);
        dp_check_data(out, out_len, data, size, "a unary transform");
        amp_free(out);
    } else {
        amp_hist_params p = {.type = AMP_TYPE_UINT8, .bins = DP_HIST_BINS};
        amp_hist h;
        memset(&h, 0, sizeof h);
        double t0 = bench_now();
        int rc = amp_histogram(c, ao, &p, data->input, size, &h);
        t = bench_now() - t0;
        if (rc != 0)
            dp_call_failed(c, "amp_histogram", rc);
        dp_check_hist(&h, &data->hist[k], size, "a unary histogram");
        amp_hist_free(&h);
    }
    return t;
}

/* --- the unary call over regions ----------------------------------------------------------- */

/* The input is put in the input region untimed (a region's user has it
 * there already); the output region is cleared, so that a result left
 * from an earlier call cannot pass the check, which reads the region. */
static double dp_region_once(struct dp_ampd *am, enum dp_job job, const struct dp_data *data,
                             int k, size_t size)
{
    uint8_t *in = amp_region_data(am->in), *out = amp_region_data(am->out);
    memcpy(in, data->input, size);
    amp_step st = dp_step(job);
    amp_slice in_s = {.size = sizeof in_s, .region = am->in, .length = size};
    amp_slice out_s = {.size = sizeof out_s, .region = am->out, .length = size};
    amp_step_result *r = NULL;
    if (job == JOB_TRANSFORM)
        memset(out, 0, size);
    double t0 = bench_now();
    int rc = amp_run_region(am->unix_c, &am->ao, &st, 1, &in_s,
                            job == JOB_TRANSFORM ? &out_s : NULL, &r);
    double t = bench_now() - t0;
    if (rc != 0)
        dp_call_failed(am->unix_c, "amp_run_region", rc);
    if (job == JOB_TRANSFORM) {
        if (r[0].data || r[0].region_offset != 0)
            dp_fail("a region transform's placement", size);
        dp_check_data(out, r[0].len, data, size, "a region transform");
    } else {
        dp_check_hist(&r[0].hist, &data->hist[k], size, "a region histogram");
    }
    amp_step_results_free(r, 1);
    return t;
}

/* --- every ampd row ---------------------------------------------------------------------- */

enum dp_call { CALL_STREAM, CALL_UNARY, CALL_REGION, CALL_MULTI };

/* One row: median of reps after a warm-up. */
static void dp_ampd_row(struct dp_ampd *am, amp_conn *const multi[],
                        enum dp_call call, amp_conn *c, enum dp_job job, const struct dp_opts *o,
                        const struct dp_data *data, int k, enum dp_row row,
                        struct dp_results *res)
{
    size_t size = (size_t)o->sizes[k];
    double t[DP_REPS_MAX] = { 0 };
    for (int r = -1; r < o->reps; r++) {
        double s = call == CALL_STREAM  ? dp_stream_once(c, &am->ao, job, data, k, size)
                   : call == CALL_UNARY ? dp_unary_once(c, &am->ao, job, data, k, size)
                   : call == CALL_REGION ? dp_region_once(am, job, data, k, size)
                                        : dp_multi_once(multi, o->streams, &am->multi_ao, job,
                                                        data, k, size);
        if (r >= 0)
            t[r] = s;
    }
    double bytes = (double)size * (call == CALL_MULTI ? o->streams : 1);
    dp_record(res, k, row, bench_median(t, o->reps), bytes);
}

static int dp_ampd_all(const struct dp_opts *o, const struct dp_data *data,
                       struct dp_results *res)
{
    struct dp_ampd am;
    dp_ampd_start(&am, o);
    amp_conn *multi[DP_STREAMS_MAX];
    for (int i = 0; i < o->streams; i++)
        multi[i] = dp_connect(am.dm.address);
    /* Each group's rows, in the order they run: a transform row, then its
     * histogram row. */
    const struct {
        enum dp_group group;
        enum dp_call call;
        amp_conn *c;
        enum dp_row transform, hist;
    } pairs[] = {
        {G_STREAM, CALL_STREAM, am.unix_c, R_STREAM_UNIX_X, R_STREAM_UNIX_H},
        {G_STREAM, CALL_STREAM, am.tcp_c, R_STREAM_TCP_X, R_STREAM_TCP_H},
        {G_STREAM, CALL_STREAM, am.tls_c, R_STREAM_TLS_X, R_STREAM_TLS_H},
        {G_UNARY, CALL_UNARY, am.unix_c, R_UNARY_X, R_UNARY_H},
        {G_REGION, CALL_REGION, NULL, R_REGION_X, R_REGION_H},
        {G_MULTI, CALL_MULTI, NULL, R_MULTI_X, R_MULTI_H},
    };
    for (int k = 0; k < o->nsizes; k++)
        for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
            if (!(o->groups & pairs[i].group))
                continue;
            dp_ampd_row(&am, multi, pairs[i].call, pairs[i].c, JOB_TRANSFORM, o, data, k,
                        pairs[i].transform, res);
            dp_ampd_row(&am, multi, pairs[i].call, pairs[i].c, JOB_HIST, o, data, k,
                        pairs[i].hist, res);
        }
    printf("# ampd ran on %s\n", amp_last_device(am.unix_c));
    for (int i = 0; i < o->streams; i++)
        amp_close(multi[i]);
    return dp_ampd_stop(&am);
}

/* --- the table --------------------------------------------------------------------------- */

/* The GB/s a row cannot beat, 0 when it has none (or it was not measured). */
static double dp_limit(const struct dp_results *res, int k, enum dp_row r)
{
    const struct dp_row_def *d = &dp_rows[r];
    if (d->lim_a < 0 || res->gbps[k][d->lim_a] <= 0)
        return 0;
    double a = res->gbps[k][d->lim_a];
    if (d->lim_b < 0)
        return a;
    double b = res->gbps[k][d->lim_b];
    return b > 0 ? 1.0 / (1.0 / a + 1.0 / b) : 0;
}

/* A row's path as printed: the count of a several-at-once row before it. */
static const char *dp_row_path(const struct dp_opts *o, enum dp_row r, char *buf, size_t len)
{
    if (dp_rows[r].several)
        snprintf(buf, len, "%d %s", o->streams, dp_rows[r].path);
    else
        snprintf(buf, len, "%s", dp_rows[r].path);
    return buf;
}

static void dp_report(const struct dp_opts *o, const struct dp_results *res)
{
    printf("%-15s %-10s %5s %9s %8s  %-22s %8s %6s  %s\n", "path", "job", "size", "seconds",
           "GB/s", "limit", "GB/s", "ratio", "note");
    for (int k = 0; k < o->nsizes; k++) {
        char size[16];
        bench_size_label(o->sizes[k], size, sizeof size, true);
        for (int r = 0; r < DP_NROWS; r++) {
            const struct dp_row_def *d = &dp_rows[r];
            if (res->gbps[k][r] <= 0)
                continue;
            double lim = dp_limit(res, k, r);
            char lim_s[16] = "-", ratio_s[16] = "-";
            if (lim > 0) {
                snprintf(lim_s, sizeof lim_s, "%.2f", lim);
                snprintf(ratio_s, sizeof ratio_s, "%.2f", res->gbps[k][r] / lim);
            }
            char note[128], path[32];
            double also = d->also ? res->gbps[k][d->also] : 0;
            if (also > 0)
                snprintf(note, sizeof note, "%s; %.2fx %s %s", d->note, res->gbps[k][r] / also,
                         dp_row_path(o, d->also, path, sizeof path), dp_rows[d->also].job);
            else
                snprintf(note, sizeof note, "%s", d->note);
            printf("%-15s %-10s %5s %9.4f %8.2f  %-22s %8s %6s  %s\n",
                   dp_row_path(o, (enum dp_row)r, path, sizeof path), d->job, size,
                   res->secs[k][r], res->gbps[k][r], d->limit, lim_s, ratio_s, note);
        }
    }
}

/* --- options and main --------------------------------------------------------------------- */

static void dp_usage(void)
{
    fprintf(stderr,
            "usage: bench_data_path [--sizes LIST] [--reps N] [--only GROUPS] [--device I]\n"
            "                       [--streams N] [--spread] [--ampd PATH]\n"
            "  --sizes   comma-separated input sizes (default " DP_SIZES_DEFAULT
            "; K, M, G suffixes)\n"
            "  --reps    limits: best of N; ampd: median of N; each after one warm-up\n"
            "            (default 3, at most 64)\n"
            "  --only    comma-separated row groups to run: pinned, raw, stream, unary,\n"
            "            region, multi (default all; a row whose limit was not run has no ratio)\n"
            "  --device  device index, for the pinned copies and ampd's jobs (default 0)\n"
            "  --streams streams (and raw copies) at once in the multi rows (default 4,\n"
            "            at most 16)\n"
            "  --spread  the multi rows' streams name no device: the daemon places them\n"
            "  --ampd    the ampd binary to start (default $AMPD_BIN, else the build's)\n");
    exit(2);
}

static void dp_parse_sizes(const char *list, struct dp_opts *o)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    o->nsizes = 0;
    o->largest = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        uint64_t s = bench_parse_size(tok);
        if (s == 0 || o->nsizes == DP_MAX_SIZES || s > SIZE_MAX / 2)
            dp_usage();
        o->sizes[o->nsizes++] = s;
        o->largest = s > o->largest ? s : o->largest;
    }
    if (o->nsizes == 0)
        dp_usage();
}

static void dp_parse_groups(const char *list, struct dp_opts *o)
{
    static const char *const names[] = {"pinned", "raw", "stream", "unary", "region",
                                        "multi"};   /* enum dp_group's bits, in order */
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    o->groups = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        unsigned g = 0;
        for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
            g = strcmp(tok, names[i]) == 0 ? 1u << i : g;
        if (!g)
            dp_usage();
        o->groups |= g;
    }
}

static void dp_parse(int argc, char **argv, struct dp_opts *o)
{
    dp_parse_sizes(DP_SIZES_DEFAULT, o);
    o->reps = DP_REPS_DEFAULT;
    o->groups = DP_GROUPS_ALL;
    o->streams = DP_STREAMS_DEFAULT;
    o->ampd = getenv("AMPD_BIN") ? getenv("AMPD_BIN") : BENCH_AMPD_DEFAULT;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--spread") == 0) {
            o->spread = true;
            continue;
        }
        if (i + 1 >= argc)
            dp_usage();
        const char *v = argv[++i];
        if (strcmp(argv[i - 1], "--sizes") == 0)
            dp_parse_sizes(v, o);
        else if (strcmp(argv[i - 1], "--reps") == 0)
            o->reps = atoi(v);
        else if (strcmp(argv[i - 1], "--only") == 0)
            dp_parse_groups(v, o);
        else if (strcmp(argv[i - 1], "--device") == 0)
            o->device = (unsigned)atoi(v);
        else if (strcmp(argv[i - 1], "--streams") == 0)
            o->streams = atoi(v);
        else if (strcmp(argv[i - 1], "--ampd") == 0)
            o->ampd = v;
        else
            dp_usage();
    }
    if (o->reps < 1 || o->reps > DP_REPS_MAX || o->streams < 1 || o->streams > DP_STREAMS_MAX)
        dp_usage();
}

static void dp_data_init(struct dp_data *data, const struct dp_opts *o)
{
    size_t n = (size_t)o->largest;
    data->input = bench_alloc_touched(n);
    bench_random(data->input, n, DP_SEED);
    data->want = bench_alloc_touched(n);
    memcpy(data->want, data->input, n);
    struct transform_params p = {.op = XFORM_XOR, .value = DP_XOR_VALUE, .length = n};
    host_step_transform(&p, data->want, n);
    struct hist_params hp = {.type = ELEM_U8, .bins = DP_HIST_BINS};
    for (int k = 0; k < o->nsizes; k++)
        if (host_step_hist(&hp, data->input, (size_t)o->sizes[k], &data->hist[k]) != 0)
            bench_die("out of host memory for the histogram reference");
    for (int i = 0; i < o->streams; i++)
        data->got[i] = bench_alloc_touched(n);
}

static void dp_data_free(struct dp_data *data, const struct dp_opts *o)
{
    free(data->input);
    free(data->want);
    for (int k = 0; k < o->nsizes; k++)
        free(data->hist[k].counts);
    for (int i = 0; i < o->streams; i++)
        free(data->got[i]);
}

int main(int argc, char **argv)
{
    struct dp_opts o = {0};
    dp_parse(argc, argv, &o);
    signal(SIGPIPE, SIG_IGN);
    struct dp_data data;
    memset(&data, 0, sizeof data);
    dp_data_init(&data, &o);
    struct dp_results *res = bench_alloc_touched(sizeof *res);
    if (o.groups & G_PINNED)
        dp_pinned_all(&o, &data, res);
    printf("# limits: best of %d; ampd: median of %d; each after 1 warm-up; "
           "GB/s = input bytes / s (raw: each way)\n", o.reps, o.reps);
    fflush(stdout);
    dp_raw_all(&o, &data, res);
    int daemon_rc = dp_ampd_all(&o, &data, res);
    dp_report(&o, res);
    free(res);
    dp_data_free(&data, &o);
    if (dp_failures)
        fprintf(stderr, "bench_data_path: %d result(s) differ from the CPU reference\n",
                dp_failures);
    return dp_failures ? 1 : daemon_rc < 0 ? 2 : 0;
}
