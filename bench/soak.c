/* SPDX-License-Identifier: MIT */
/* soak.c: many clients, a mix of jobs, some of them killed, for a while.
 *
 * Issue 10 asks that no client can break ampd for the others. The unit
 * tests check each limit alone; this program checks them together over
 * time: --connections clients each loop over a mix of small and large
 * unary jobs, pipelines and now and then a stream (a quarter of the
 * streams abandoned halfway by their own sink), while every --kill-every
 * ms one client dies in the middle of whatever it was doing. At the end it
 * puts what the clients saw beside what the daemon says it did (its Status
 * RPC: calls by gRPC status, peak RSS, bytes held, connections).
 *
 * How clients die: a share of the connections (one in SOAK_CHILD_SHARE)
 * run in child processes, one client each, and the main thread has a
 * random one SIGKILLed and a new one forked in its place (by the spawner,
 * a single-threaded process: see soak_spawner_start). A killed process
 * is the most abrupt client there is (its socket closes with whatever was
 * half sent or unread), it needs no hook inside libampclient, and it
 * cannot leave the bench itself in a broken state. The other clients are
 * threads with blocking libampclient calls, one connection each. Counters
 * live in one shared anonymous mapping, updated with atomics, so that the
 * jobs a child finished before it was killed still count.
 *
 * With --ampd the program starts its own daemon on a Unix socket in a
 * temporary directory and stops it with SIGTERM at the end. The exit
 * status is 1 when a check fails (a wrong result, bytes still held once
 * every client is gone, no job done at all, or the daemon not exiting 0),
 * 2 when the soak could not run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "amp.h"
#include "bench_util.h"
#include "config.h"   /* ampd's defaults, for the ratios when none is given */

#define SOAK_CONNECTIONS_DEFAULT 256
#define SOAK_CONNECTIONS_MAX 4096
#define SOAK_SECONDS_DEFAULT 60
#define SOAK_KILL_EVERY_DEFAULT_MS 200
#define SOAK_CHILD_SHARE 8                    /* one connection in 8 runs in a child */
#define SOAK_CHILDREN_MAX (SOAK_CONNECTIONS_MAX / SOAK_CHILD_SHARE)
#define SOAK_INPUT_BYTES (4u << 20)           /* the largest input of any job */
#define SOAK_REVERSE_BYTES 16
#define SOAK_XFORM_MIN_SHIFT 12               /* transforms of 4 KiB ... */
#define SOAK_XFORM_MAX_SHIFT 20               /* ... to 1 MiB */
#define SOAK_HIST_BYTES (64u << 10)
#define SOAK_FILL_BYTES (1u << 20)
#define SOAK_PIPELINE_MIN_SHIFT 14            /* pipelines of 16 KiB to 256 KiB */
#define SOAK_PIPELINE_MAX_SHIFT 18
#define SOAK_STREAM_MIN_BYTES (2u << 20)      /* streams of 2..4 MiB */
#define SOAK_ABANDON_ONE_IN 4                 /* streams its sink abandons halfway */
#define SOAK_HIST_BINS 256
#define SOAK_CALL_TIMEOUT_MS 60000            /* no client waits forever on one call */
#define SOAK_RECONNECT_PAUSE_MS 50
#define SOAK_THREAD_STACK (512u << 10)
#define SOAK_SEED 0x50a4ull
#define SOAK_START_TIMEOUT_MS 120000          /* PoCL builds ampd's kernels at start */
#define SOAK_STOP_TIMEOUT_MS 60000
#define SOAK_LEAVE_MARGIN_S 10                /* past a call's timeout, for a client to leave */
#define SOAK_SETTLE_TIMEOUT_MS 15000          /* for held bytes to return once clients left */
#define SOAK_POLL_MS 100
#define SOAK_LOG_TAIL 3000
#define SOAK_MSG_MAX 200                      /* bytes of a failure's message kept */
/* Room for every client, the status connection, and killed clients' sockets
 * the daemon has not yet seen close, all from one uid. */
#define SOAK_DAEMON_CONNECTIONS(n) (2 * (n) + 16)
#define SOAK_ONE_CODE_(name, code, grpc, words) +1
/* AMP_OK and every AMP_E* code, which run 0, -1, -2, ... without gaps. */
#define SOAK_CODES (1 AMP_ERROR_MAP(SOAK_ONE_CODE_))

enum soak_kind {
    K_REVERSE, K_TRANSFORM, K_HIST, K_FILL, K_PIPELINE, K_STREAM, K_STREAM_ABANDONED,
    K_CONNECT, SOAK_NKINDS
};

static const char *const soak_kind_names[SOAK_NKINDS] = {
    "reverse 16B", "transform 4K..1M", "histogram 64K", "fill 1M", "pipeline xform+hist",
    "stream 2..4M", "stream abandoned", "connect"};

/* Relative weights of the job kinds in each client's mix (connect is not drawn). */
static const unsigned soak_kind_weights[K_CONNECT] = {25, 25, 15, 10, 17, 6, 2};

/* What every client adds to, threads and child processes alike: one
 * MAP_SHARED mapping, only ever updated with atomics, so a child killed at
 * any instant leaves it consistent. */
struct soak_shared {
    _Atomic uint64_t done[SOAK_NKINDS];      /* calls that succeeded */
    _Atomic uint64_t failed[SOAK_NKINDS];    /* calls that returned an AMP_E* code */
    _Atomic uint64_t wrong[SOAK_NKINDS];     /* calls that succeeded with a wrong result */
    _Atomic uint64_t errors[SOAK_CODES];     /* failures by -code */
    _Atomic int stop;                        /* set once --seconds have passed */
    _Atomic int msg_claimed[SOAK_CODES];     /* msg[c] is being or has been written */
    _Atomic int msg_ready[SOAK_CODES];       /* msg[c] is complete */
    char msg[SOAK_CODES][SOAK_MSG_MAX];      /* the first failure's message, by -code */
    _Atomic int in_call[SOAK_CHILDREN_MAX];  /* child i is inside a job call */
};

struct soak_opts {
    const char *address;   /* a running daemon, or NULL with ampd */
    const char *ampd;      /* the daemon to start, or NULL */
    int connections, seconds, kill_every_ms;
    char **extra;          /* the daemon's extra arguments (after --), NULL-terminated */
    int nextra;
};

struct soak_daemon {
    pid_t pid;             /* 0 when the soak did not start it */
    char dir[64];
    char address[128];
    char log[128];
    uint64_t vm_hwm;       /* VmHWM from /proc before it was stopped, bytes */
};

/* One client: one connection, driven by one thread or one child process. */
struct soak_client {
    int index;
    int child;             /* index into in_call for a child process, else -1 */
    uint64_t rng;
    amp_conn *conn;
    pthread_t thread;
    _Atomic pid_t tid;     /* a thread's kernel id, for its wait channel if it hangs */
};

static struct soak_shared *soak;
static const uint8_t *soak_input;   /* SOAK_INPUT_BYTES random bytes, shared read-only */
static const char *soak_address;

static void soak_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void soak_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "soak: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static double soak_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void soak_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* xorshift64*: each client its own sequence, no locks. */
static uint64_t soak_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dull;
}

static unsigned soak_rand_below(uint64_t *s, unsigned n)
{
    return (unsigned)(soak_rand(s) >> 32) % n;
}

static void soak_count(_Atomic uint64_t *c)
{
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static bool soak_stopping(void)
{
    return atomic_load_explicit(&soak->stop, memory_order_relaxed) != 0;
}

/* --- the jobs: each returns 0 or an AMP_E* code, and sets *wrong when a
 * successful call's result is not what the input says it must be --- */

static const amp_opts soak_call_opts = { .size = sizeof(amp_opts), .device = NULL,
                                         .timeout_ms = SOAK_CALL_TIMEOUT_MS};

static int soak_reverse(struct soak_client *cl, bool *wrong)
{
    size_t off = soak_rand_below(&cl->rng, SOAK_INPUT_BYTES - SOAK_REVERSE_BYTES);
    const uint8_t *in = soak_input + off;
    void *out;
    size_t len;
    int rc = amp_reverse(cl->conn, &soak_call_opts, in, SOAK_REVERSE_BYTES, &out, &len);
    if (rc != 0)
        return rc;
    *wrong = len != SOAK_REVERSE_BYTES;
    for (size_t i = 0; !*wrong && i < len; i++)
        *wrong = ((uint8_t *)out)[i] != in[len - 1 - i];
    amp_free(out);
    return 0;
}

/* True unless out differs from in plus value, byte by byte (mod 256). */
static bool soak_added(const uint8_t *in, const uint8_t *out, size_t len, uint8_t value)
{
    for (size_t i = 0; i < len; i++)
        if (out[i] != (uint8_t)(in[i] + value))
            return false;
    return true;
}

static int soak_transform(struct soak_client *cl, bool *wrong)
{
    unsigned shift = SOAK_XFORM_MIN_SHIFT +
                     soak_rand_below(&cl->rng, SOAK_XFORM_MAX_SHIFT - SOAK_XFORM_MIN_SHIFT + 1);
    size_t n = (size_t)1 << shift;
    uint8_t value = (uint8_t)soak_rand(&cl->rng);
    amp_transform_params p = {.op = AMP_OP_ADD, .value = value};
    void *out;
    size_t len;
    int rc = amp_transform(cl->conn, &soak_call_opts, &p, soak_input, n, &out, &len);
    if (rc != 0)
        return rc;
    *wrong = len != n || !soak_added(soak_input, out, n, value);
    amp_free(out);
    return 0;
}

/* True unless h is not a 256-bin histogram of len bytes. */
static bool soak_hist_sane(const amp_hist *h, size_t len)
{
    if (h->bins != SOAK_HIST_BINS || !h->counts)
        return false;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < h->bins; i++)
        sum += h->counts[i];
    return sum == len;
}

static amp_hist_params soak_hist_params(void)
{
    return (amp_hist_params){.type = AMP_TYPE_UINT8, .bins = SOAK_HIST_BINS};
}

static int soak_histogram(struct soak_client *cl, bool *wrong)
{
    amp_hist_params p = soak_hist_params();
    amp_hist h;
    memset(&h, 0, sizeof h);
    int rc = amp_histogram(cl->conn, &soak_call_opts, &p, soak_input, SOAK_HIST_BYTES, &h);
    if (rc != 0)
        return rc;
    *wrong = !soak_hist_sane(&h, SOAK_HIST_BYTES);
    amp_hist_free(&h);
    return 0;
}

static int soak_fill(struct soak_client *cl, bool *wrong)
{
    uint32_t start = (uint32_t)soak_rand(&cl->rng);
    amp_fill_params p = {.type = AMP_TYPE_UINT32, .count = SOAK_FILL_BYTES / 4, .start = start,
                         .step = 1};
    void *out;
    size_t len;
    int rc = amp_fill(cl->conn, &soak_call_opts, &p, &out, &len);
    if (rc != 0)
        return rc;
    *wrong = len != SOAK_FILL_BYTES;
    for (size_t i = 0; !*wrong && i < len / 4; i++) {
        uint32_t v;
        memcpy(&v, (uint8_t *)out + 4 * i, 4);   /* little-endian, as this host */
        *wrong = v != (uint32_t)(start + i);
    }
    amp_free(out);
    return 0;
}

static int soak_pipeline(struct soak_client *cl, bool *wrong)
{
    unsigned shift = SOAK_PIPELINE_MIN_SHIFT +
                     soak_rand_below(&cl->rng,
                                     SOAK_PIPELINE_MAX_SHIFT - SOAK_PIPELINE_MIN_SHIFT + 1);
    size_t n = (size_t)1 << shift;
    uint8_t value = (uint8_t)soak_rand(&cl->rng);
    amp_step steps[2];
    memset(steps, 0, sizeof steps);
    steps[0].size = sizeof steps[0];
    steps[0].kind = AMP_STEP_TRANSFORM;
    steps[0].transform = (amp_transform_params){.op = AMP_OP_ADD, .value = value};
    steps[1].size = sizeof steps[1];
    steps[1].kind = AMP_STEP_HISTOGRAM;
    steps[1].hist = soak_hist_params();
    amp_step_result *r;
    int rc = amp_pipeline(cl->conn, &soak_call_opts, steps, 2, soak_input, n, &r);
    if (rc != 0)
        return rc;
    *wrong = r[0].len != n || !soak_added(soak_input, r[0].data, n, value) ||
             !soak_hist_sane(&r[1].hist, n);
    amp_step_results_free(r, 2);
    return 0;
}

/* A stream's two ends: input from the shared buffer; output checked as it
 * arrives and, for an abandoned stream, refused halfway. */
struct soak_stream {
    size_t len, sent, got, abandon_at;   /* abandon_at 0: never */
    uint8_t value;
    bool wrong;
};

static long soak_stream_read(void *ctx, void *buf, size_t cap)
{
    struct soak_stream *s = ctx;
    size_t n = s->len - s->sent < cap ? s->len - s->sent : cap;
    memcpy(buf, soak_input + s->sent, n);
    s->sent += n;
    return (long)n;
}

static int soak_stream_write(void *ctx, const void *buf, size_t len)
{
    struct soak_stream *s = ctx;
    if (s->got + len > s->len || !soak_added(soak_input + s->got, buf, len, s->value))
        s->wrong = true;
    s->got += len;
    if (s->abandon_at && s->got >= s->abandon_at)
        return AMP_ECANCELLED;   /* resets the stream; the connection stays */
    return 0;
}

static int soak_stream(struct soak_client *cl, bool abandon, bool *wrong)
{
    struct soak_stream s = {
        .len = SOAK_STREAM_MIN_BYTES +
               soak_rand_below(&cl->rng, SOAK_INPUT_BYTES - SOAK_STREAM_MIN_BYTES + 1),
        .value = (uint8_t)soak_rand(&cl->rng)};
    if (abandon)
        s.abandon_at = s.len / 2;
    amp_step st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    st.kind = AMP_STEP_TRANSFORM;
    st.transform = (amp_transform_params){.op = AMP_OP_ADD, .value = s.value};
    int rc = amp_stream(cl->conn, &soak_call_opts, &st, 1, s.len, soak_stream_read, &s,
                        soak_stream_write, &s, NULL, 0);
    if (abandon && rc == AMP_ECANCELLED && s.got >= s.abandon_at)
        rc = 0;   /* the abort this job is for */
    else if (abandon && rc == 0)
        s.wrong = true;   /* the sink's refusal went unheard */
    *wrong = s.wrong || (!abandon && rc == 0 && s.got != s.len);
    return rc;
}

/* --- a client's life ----------------------------------------------------------- */

static enum soak_kind soak_pick(struct soak_client *cl)
{
    unsigned total = 0;
    for (int k = 0; k < K_CONNECT; k++)
        total += soak_kind_weights[k];
    unsigned r = soak_rand_below(&cl->rng, total);
    int k = 0;
    while (r >= soak_kind_weights[k])
        r -= soak_kind_weights[k++];
    return (enum soak_kind)k;
}

static int soak_run_job(struct soak_client *cl, enum soak_kind k, bool *wrong)
{
    switch (k) {
    case K_REVERSE: return soak_reverse(cl, wrong);
    case K_TRANSFORM: return soak_transform(cl, wrong);
    case K_HIST: return soak_histogram(cl, wrong);
    case K_FILL: return soak_fill(cl, wrong);
    case K_PIPELINE: return soak_pipeline(cl, wrong);
    case K_STREAM: return soak_stream(cl, false, wrong);
    case K_STREAM_ABANDONED: return soak_stream(cl, true, wrong);
    default: return AMP_EINVAL;
    }
}

/* Counts a failure; the first of each code keeps its message, which names
 * the limit that refused it (the table shows it beside the count). */
static void soak_failed(enum soak_kind k, int rc, const amp_conn *c)
{
    int code = rc < 0 && rc > -SOAK_CODES ? -rc : -AMP_EUNKNOWN;
    soak_count(&soak->failed[k]);
    soak_count(&soak->errors[code]);
    if (atomic_exchange(&soak->msg_claimed[code], 1) == 0) {
        snprintf(soak->msg[code], SOAK_MSG_MAX, "%s: %s", soak_kind_names[k],
                 amp_last_message(c));
        atomic_store(&soak->msg_ready[code], 1);
    }
}

/* After these the connection is gone; after a daemon's status it is not. */
static bool soak_conn_broken(int rc)
{
    return rc == AMP_EIO || rc == AMP_EPROTO || rc == AMP_ENOMEM;
}

static void soak_set_in_call(struct soak_client *cl, int v)
{
    if (cl->child >= 0)
        atomic_store_explicit(&soak->in_call[cl->child], v, memory_order_relaxed);
}

static bool soak_connect(struct soak_client *cl)
{
    int rc = amp_connect(soak_address, &cl->conn);
    if (rc == 0) {
        soak_count(&soak->done[K_CONNECT]);
        return true;
    }
    cl->conn = NULL;
    soak_failed(K_CONNECT, rc, NULL);
    soak_sleep_ms(SOAK_RECONNECT_PAUSE_MS);
    return false;
}

static void soak_client_loop(struct soak_client *cl)
{
    while (!soak_stopping()) {
        if (!cl->conn && !soak_connect(cl))
            continue;
        enum soak_kind k = soak_pick(cl);
        bool wrong = false;
        soak_set_in_call(cl, 1);
        int rc = soak_run_job(cl, k, &wrong);
        soak_set_in_call(cl, 0);
        if (rc != 0) {
            soak_failed(k, rc, cl->conn);
        } else {
            soak_count(&soak->done[k]);
            if (wrong)
                soak_count(&soak->wrong[k]);
        }
        if (soak_conn_broken(rc)) {
            amp_close(cl->conn);
            cl->conn = NULL;
        }
    }
    amp_close(cl->conn);
    cl->conn = NULL;
}

static void *soak_thread(void *arg)
{
    struct soak_client *cl = arg;
    atomic_store(&cl->tid, gettid());
    soak_client_loop(cl);
    return NULL;
}

/* A child client: it owns nothing of the parent's but the shared mapping
 * and the input, so the parent's sockets (other clients' connections) are
 * closed first: a copy held open here would hide their closing from the
 * daemon. It dies with its parent, the spawner. */
static pid_t soak_fork_child(struct soak_client *cl, uint64_t generation)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1)
        _exit(0);
    close_range(3, ~0u, 0);
    cl->conn = NULL;
    cl->rng ^= generation * 0x9e3779b97f4a7c15ull;
    soak_client_loop(cl);
    _exit(0);
}

/* waitpid(pid) until it returns or the monotonic second end passes: pid
 * (st set), -1 (not waitable), or 0 (still running at the end). */
static pid_t soak_wait_until(pid_t pid, double end, int *st)
{
    pid_t got;
    while ((got = waitpid(pid, st, WNOHANG)) == 0 && soak_now() < end)
        soak_sleep_ms(SOAK_POLL_MS);
    return got;
}

/* The kernel's word for where a process or thread sleeps ("futex_wait_queue":
 * a lock; "do_sys_poll": a socket), for a client that did not leave. */
static void soak_wchan(const char *path, char *out, size_t cap)
{
    snprintf(out, cap, "?");
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (!fgets(out, (int)cap, f))
        snprintf(out, cap, "?");
    fclose(f);
}

/* --- the spawner: child clients forked by a single-threaded process ---------------- */

/* fork() in a process whose other threads may hold locks (malloc's, the
 * sanitizers') can leave the child waiting forever on a lock that no thread
 * of its own will release. So child clients are forked by the spawner, a
 * process forked before any client thread exists, which stays
 * single-threaded; the main thread asks it over a socket pair. */
enum soak_spawn_op { SOAK_SPAWN, SOAK_KILL, SOAK_END };

struct soak_spawn_req {
    int op, child;          /* enum soak_spawn_op; the child's index */
    uint64_t generation;    /* SOAK_SPAWN: varies the new child's job mix */
};

struct soak_spawn_reply {
    int ok;                 /* SOAK_END: every child left and exited 0 */
    char what[160];         /* SOAK_END: the first that did not, and why */
};

/* At the end every child is told to stop through the shared mapping and has
 * its last call's timeout to leave; one still there after that is reported
 * with where it sleeps, and killed. */
static bool soak_spawner_reap(const pid_t *pids, int n, char *what, size_t cap)
{
    double end = soak_now() + SOAK_CALL_TIMEOUT_MS / 1000.0 + SOAK_LEAVE_MARGIN_S;
    bool ok = true;
    for (int i = 0; i < n; i++) {
        int st = 0;
        pid_t got = soak_wait_until(pids[i], end, &st);
        if (got == 0) {
            char path[64], wchan[64];
            snprintf(path, sizeof path, "/proc/%d/wchan", (int)pids[i]);
            soak_wchan(path, wchan, sizeof wchan);
            kill(pids[i], SIGKILL);
            waitpid(pids[i], NULL, 0);
            if (ok)
                snprintf(what, cap, "child client %d had not left %d s after the stop (asleep in %s)",
                         i, SOAK_CALL_TIMEOUT_MS / 1000 + SOAK_LEAVE_MARGIN_S, wchan);
            ok = false;
        } else if (got < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            if (ok)
                snprintf(what, cap, "child client %d ended with wait status %d", i, st);
            ok = false;
        }
    }
    return ok;
}

static void soak_spawner_loop(int fd, struct soak_client *children, int n)
{
    pid_t *pids = calloc((size_t)n, sizeof *pids);
    struct soak_spawn_req q;
    while (pids && read(fd, &q, sizeof q) == (ssize_t)sizeof q) {
        struct soak_spawn_reply a = { .ok = 1 };
        if (q.op == SOAK_SPAWN) {
            pids[q.child] = soak_fork_child(&children[q.child], q.generation);
            a.ok = pids[q.child] > 0;
        } else if (q.op == SOAK_KILL) {
            kill(pids[q.child], SIGKILL);
            waitpid(pids[q.child], NULL, 0);
        } else {
            a.ok = soak_spawner_reap(pids, n, a.what, sizeof a.what);
        }
        if (write(fd, &a, sizeof a) != (ssize_t)sizeof a)
            break;
    }
    _exit(0);
}

/* Returns the main thread's end of the socket pair. */
static int soak_spawner_start(struct soak_client *children, int n)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        soak_die("socketpair: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        soak_die("fork: %s", strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1)
            _exit(0);
        close(sv[0]);
        soak_spawner_loop(sv[1], children, n);
    }
    close(sv[1]);
    return sv[0];
}

static struct soak_spawn_reply soak_spawner_ask(int fd, int op, int child, uint64_t generation)
{
    struct soak_spawn_req q = { .op = op, .child = child, .generation = generation };
    struct soak_spawn_reply a;
    if (write(fd, &q, sizeof q) != (ssize_t)sizeof q ||
        read(fd, &a, sizeof a) != (ssize_t)sizeof a)
        soak_die("the spawner of child clients is gone");
    a.what[sizeof a.what - 1] = '\0';
    return a;
}

/* --- the daemon ------------------------------------------------------------------ */

static void soak_daemon_log(const struct soak_daemon *dm)
{
    FILE *f = fopen(dm->log, "r");
    if (!f)
        return;
    char buf[SOAK_LOG_TAIL + 1];
    fseek(f, 0, SEEK_END);
    long end = ftell(f);
    fseek(f, end > SOAK_LOG_TAIL ? end - SOAK_LOG_TAIL : 0, SEEK_SET);
    size_t n = fread(buf, 1, SOAK_LOG_TAIL, f);
    buf[n] = '\0';
    fclose(f);
    fprintf(stderr, "--- the end of ampd's log (%s) ---\n%s\n", dm->log, buf);
}

/* The connection limits are raised to fit every client from this one uid;
 * the extra arguments come last, so that they override them. */
static void soak_daemon_exec(const struct soak_daemon *dm, const struct soak_opts *o)
{
    char listen_arg[160], conns[16];
    snprintf(listen_arg, sizeof listen_arg, "unix:%s/s.sock", dm->dir);
    snprintf(conns, sizeof conns, "%d", SOAK_DAEMON_CONNECTIONS(o->connections));
    char **argv = calloc((size_t)o->nextra + 8, sizeof(char *));
    if (!argv)
        _exit(127);
    int n = 0;
    argv[n++] = (char *)o->ampd;
    argv[n++] = "--listen";
    argv[n++] = listen_arg;
    argv[n++] = "--max-connections";
    argv[n++] = conns;
    argv[n++] = "--max-peer-connections";
    argv[n++] = conns;
    for (int i = 0; i < o->nextra; i++)
        argv[n++] = o->extra[i];
    int fd = open(dm->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
    }
    execv(o->ampd, argv);
    fprintf(stderr, "exec %s: %s\n", o->ampd, strerror(errno));
    _exit(127);
}

static int soak_health(const char *address)
{
    amp_conn *c;
    int serving = AMP_HEALTH_UNKNOWN;
    if (amp_connect(address, &c) != 0)
        return AMP_HEALTH_UNKNOWN;
    int rc = amp_health(c, NULL, NULL, &serving);
    amp_close(c);
    return rc == 0 ? serving : AMP_HEALTH_UNKNOWN;
}

static void soak_daemon_start(struct soak_daemon *dm, const struct soak_opts *o)
{
    snprintf(dm->dir, sizeof dm->dir, "/tmp/soak.XXXXXX");
    if (!mkdtemp(dm->dir))
        soak_die("mkdtemp: %s", strerror(errno));
    snprintf(dm->address, sizeof dm->address, "unix:%s/s.sock", dm->dir);
    snprintf(dm->log, sizeof dm->log, "%s/ampd.log", dm->dir);
    fflush(NULL);
    dm->pid = fork();
    if (dm->pid < 0)
        soak_die("fork: %s", strerror(errno));
    if (dm->pid == 0)
        soak_daemon_exec(dm, o);
    for (int waited = 0; waited < SOAK_START_TIMEOUT_MS; waited += SOAK_POLL_MS) {
        if (waitpid(dm->pid, NULL, WNOHANG) == dm->pid) {
            soak_daemon_log(dm);
            soak_die("%s exited before serving (its log above)", o->ampd);
        }
        if (soak_health(dm->address) == AMP_HEALTH_SERVING)
            return;
        soak_sleep_ms(SOAK_POLL_MS);
    }
    kill(dm->pid, SIGKILL);
    waitpid(dm->pid, NULL, 0);
    soak_daemon_log(dm);
    soak_die("%s was not serving after %d s (its log above)", o->ampd,
             SOAK_START_TIMEOUT_MS / 1000);
}

/* SIGTERM, then waits for the exit. Returns true when it exited 0. */
static bool soak_daemon_stop(struct soak_daemon *dm)
{
    int st = 0;
    kill(dm->pid, SIGTERM);
    if (soak_wait_until(dm->pid, soak_now() + SOAK_STOP_TIMEOUT_MS / 1000.0, &st) == 0) {
        kill(dm->pid, SIGKILL);
        waitpid(dm->pid, &st, 0);
        fprintf(stderr, "soak: ampd had not exited %d s after SIGTERM\n",
                SOAK_STOP_TIMEOUT_MS / 1000);
    }
    bool clean = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!clean) {
        soak_daemon_log(dm);
        if (WIFSIGNALED(st))
            fprintf(stderr, "soak: ampd died of signal %d\n", WTERMSIG(st));
        else
            fprintf(stderr, "soak: ampd exited with status %d\n", WEXITSTATUS(st));
    }
    unlink(dm->log);
    char sock[160];
    snprintf(sock, sizeof sock, "%s/s.sock", dm->dir);
    unlink(sock);
    rmdir(dm->dir);
    return clean;
}

static int soak_status(const char *address, amp_daemon_status *st)
{
    amp_conn *c;
    int rc = amp_connect(address, &c);
    if (rc != 0)
        return rc;
    amp_opts o = { .size = sizeof(amp_opts), .timeout_ms = SOAK_CALL_TIMEOUT_MS};
    rc = amp_status(c, &o, st);
    amp_close(c);
    return rc;
}

/* Once every client is gone the daemon must let go of every byte it held
 * for them; jobs still on the device when their client died finish first,
 * so this waits a while for held_bytes to reach 0 and only the status
 * connection to remain. Returns the seconds it waited. */
static double soak_settle(struct soak_daemon *dm, amp_daemon_status *st)
{
    double t0 = soak_now();
    for (;;) {
        int rc = soak_status(dm->address, st);
        if (rc != 0) {
            if (dm->pid > 0)
                soak_daemon_stop(dm);   /* says how it died, with its log */
            fprintf(stderr, "soak: FAIL: Status at the end: %s: %s\n", amp_strerror(rc),
                    amp_last_message(NULL));
            exit(1);
        }
        if ((st->held_bytes == 0 && st->connections <= 1) ||
            soak_now() - t0 > SOAK_SETTLE_TIMEOUT_MS / 1000.0)
            return soak_now() - t0;
        soak_sleep_ms(SOAK_POLL_MS);
    }
}

/* --- the run --------------------------------------------------------------------- */

struct soak_run {
    struct soak_client *clients;
    int nthreads, nchildren;
    int spawner;           /* the socket to the spawner of child clients, or -1 */
    uint64_t kills, kills_in_call, generation;
    double seconds;
};

static void soak_start_clients(struct soak_run *r, const struct soak_opts *o)
{
    r->clients = calloc((size_t)o->connections, sizeof *r->clients);
    if (!r->clients)
        soak_die("out of memory");
    r->nchildren = o->kill_every_ms > 0 ? (o->connections + SOAK_CHILD_SHARE - 1) / SOAK_CHILD_SHARE
                                        : 0;
    r->nthreads = o->connections - r->nchildren;
    for (int i = 0; i < o->connections; i++) {
        struct soak_client *cl = &r->clients[i];
        cl->index = i;
        cl->child = i < r->nthreads ? -1 : i - r->nthreads;
        cl->rng = SOAK_SEED + 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
    }
    r->spawner = r->nchildren ? soak_spawner_start(r->clients + r->nthreads, r->nchildren) : -1;
    for (int i = 0; i < r->nchildren; i++)
        if (!soak_spawner_ask(r->spawner, SOAK_SPAWN, i, r->generation++).ok)
            soak_die("fork: cannot start child client %d", i);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, SOAK_THREAD_STACK);
    for (int i = 0; i < r->nthreads; i++) {
        int e = pthread_create(&r->clients[i].thread, &attr, soak_thread, &r->clients[i]);
        if (e != 0)
            soak_die("cannot start client thread %d (%s)", i, strerror(e));
    }
    pthread_attr_destroy(&attr);
}

/* One kill: a random child process, SIGKILLed wherever it is, and a new
 * one forked in its place. */
static void soak_kill_one(struct soak_run *r)
{
    uint64_t s = SOAK_SEED ^ (r->generation * 0x2545f4914f6cdd1dull);
    int i = (int)soak_rand_below(&s, (unsigned)r->nchildren);
    if (atomic_load_explicit(&soak->in_call[i], memory_order_relaxed))
        r->kills_in_call++;
    soak_spawner_ask(r->spawner, SOAK_KILL, i, 0);
    atomic_store_explicit(&soak->in_call[i], 0, memory_order_relaxed);
    r->kills++;
    if (!soak_spawner_ask(r->spawner, SOAK_SPAWN, i, r->generation++).ok)
        soak_die("fork: cannot start child client %d", i);
}

/* Every client thread has its last call's timeout to leave after the stop;
 * one still there is named with where it sleeps, and the soak fails. */
static void soak_join_threads(struct soak_run *r)
{
    struct timespec end;
    clock_gettime(CLOCK_REALTIME, &end);
    end.tv_sec += SOAK_CALL_TIMEOUT_MS / 1000 + SOAK_LEAVE_MARGIN_S;
    for (int i = 0; i < r->nthreads; i++) {
        if (pthread_timedjoin_np(r->clients[i].thread, NULL, &end) == 0)
            continue;
        char path[64], wchan[64];
        snprintf(path, sizeof path, "/proc/self/task/%d/wchan", (int)atomic_load(&r->clients[i].tid));
        soak_wchan(path, wchan, sizeof wchan);
        fprintf(stderr, "soak: FAIL: client thread %d had not left %d s after the stop (asleep in %s)\n",
                i, SOAK_CALL_TIMEOUT_MS / 1000 + SOAK_LEAVE_MARGIN_S, wchan);
        exit(1);
    }
}

/* Runs until --seconds have passed, killing as it goes, then lets every
 * client finish its call and leave. */
static void soak_drive(struct soak_run *r, const struct soak_opts *o)
{
    double t0 = soak_now(), end = t0 + o->seconds;
    while (soak_now() < end) {
        int ms = o->kill_every_ms > 0 ? o->kill_every_ms : SOAK_POLL_MS;
        double left_ms = (end - soak_now()) * 1000;
        soak_sleep_ms(left_ms < ms ? (int)left_ms + 1 : ms);
        if (o->kill_every_ms > 0 && r->nchildren > 0 && soak_now() < end)
            soak_kill_one(r);
    }
    r->seconds = soak_now() - t0;
    atomic_store(&soak->stop, 1);
    soak_join_threads(r);
    if (r->nchildren) {
        struct soak_spawn_reply a = soak_spawner_ask(r->spawner, SOAK_END, 0, 0);
        if (!a.ok) {
            fprintf(stderr, "soak: FAIL: %s\n", a.what);
            exit(1);
        }
        close(r->spawner);
    }
}

/* --- report ---------------------------------------------------------------------- */

static void soak_mib_row(const char *what, uint64_t bytes, const char *note)
{
    printf("  %-26s %12.1f MiB  %s\n", what, (double)bytes / (1 << 20), note);
}

static uint64_t soak_report_clients(const struct soak_run *r)
{
    uint64_t jobs = 0;
    printf("%-22s %10s %9s %8s %7s\n", "client: job", "done", "per s", "failed", "wrong");
    for (int k = 0; k < SOAK_NKINDS; k++) {
        uint64_t d = soak->done[k], f = soak->failed[k], w = soak->wrong[k];
        if (k != K_CONNECT)
            jobs += d;
        printf("%-22s %10" PRIu64 " %9.1f %8" PRIu64 " %7" PRIu64 "\n", soak_kind_names[k], d,
               (double)d / r->seconds, f, w);
    }
    printf("%-22s %10" PRIu64 " %9.1f\n\n", "jobs (no connects)", jobs, (double)jobs / r->seconds);
    printf("%-22s %10s  %s\n", "client: error", "calls", "the first one's message");
    for (int c = 1; c < SOAK_CODES; c++)
        if (soak->errors[c])
            printf("%-3d %-18s %10" PRIu64 "  %s\n", -c, amp_strerror(-c),
                   (uint64_t)soak->errors[c], soak->msg_ready[c] ? soak->msg[c] : "");
    printf("\n");
    return jobs;
}

static void soak_report_calls(const amp_daemon_status *a, const amp_daemon_status *b,
                              uint64_t jobs)
{
    uint64_t total = 0;
    for (int c = 0; c < AMP_STATUS_CODES; c++)
        total += b->calls[c] - a->calls[c];
    printf("%-22s %10s %8s\n", "daemon: gRPC status", "calls", "share");
    for (int c = 0; c < AMP_STATUS_CODES; c++) {
        uint64_t n = b->calls[c] - a->calls[c];
        if (n)
            printf("%-22s %10" PRIu64 " %7.2f%%\n", amp_status_code_name(c), n,
                   total ? 100.0 * (double)n / (double)total : 0.0);
    }
    printf("%-22s %10" PRIu64 "\n", "all calls", total);
    printf("%-22s %10.3f  (OK calls, Status and Health included, / client jobs done)\n\n",
           "daemon OK / client", jobs ? (double)(b->calls[0] - a->calls[0]) / (double)jobs : 0.0);
}

static uint64_t soak_max_job_memory(const struct soak_opts *o)
{
    uint64_t v = AMPD_DEFAULT_MAX_JOB_MEMORY;
    for (int i = 0; i < o->nextra; i++) {
        const char *a = o->extra[i];
        if (strcmp(a, "--max-job-memory") == 0 && i + 1 < o->nextra)
            v = bench_parse_size(o->extra[i + 1]);
        else if (strncmp(a, "--max-job-memory=", 17) == 0)
            v = bench_parse_size(a + 17);
    }
    return v ? v : AMPD_DEFAULT_MAX_JOB_MEMORY;
}

static void soak_report_daemon(const struct soak_opts *o, const struct soak_daemon *dm,
                               const amp_daemon_status *end, double settle)
{
    uint64_t budget = soak_max_job_memory(o);
    char note[128];
    printf("daemon: memory and connections at the end\n");
    snprintf(note, sizeof note, "peak / --max-job-memory (%.0f MiB%s) = %.3f",
             (double)budget / (1 << 20), o->address ? ", ampd's default assumed" : "",
             (double)end->peak_rss_bytes / (double)budget);
    soak_mib_row("peak RSS (Status)", end->peak_rss_bytes, note);
    if (dm->pid > 0) {
        snprintf(note, sizeof note, "VmHWM / Status peak = %.3f",
                 end->peak_rss_bytes ? (double)dm->vm_hwm / (double)end->peak_rss_bytes : 0.0);
        soak_mib_row("VmHWM (/proc)", dm->vm_hwm, note);
    }
    snprintf(note, sizeof note, "%" PRIu64 " bytes, %.1f s after the clients left",
             end->held_bytes, settle);
    soak_mib_row("held at the end", end->held_bytes, note);
    printf("  %-26s %12u      (the Status call's own)\n", "connections at the end",
           end->connections);
    printf("  %-26s %12u\n", "jobs in flight at the end", end->jobs_in_flight);
}

/* --- options and main ------------------------------------------------------------ */

static void soak_usage(void)
{
    fprintf(stderr,
            "usage: soak [--address ADDR] [--connections N] [--seconds S] [--kill-every MS]\n"
            "            [--ampd PATH] [-- AMPD_ARGS...]\n"
            "  --address      a running ampd (default " AMP_DEFAULT_ADDRESS ")\n"
            "  --ampd         start this ampd on a Unix socket instead, with AMPD_ARGS\n"
            "  --connections  clients at once, one connection each (default %d, at most %d)\n"
            "  --seconds      how long the clients run (default %d)\n"
            "  --kill-every   SIGKILL a client every MS ms and start a new one (default %d,\n"
            "                 0: none); one client in %d runs in a process for this\n",
            SOAK_CONNECTIONS_DEFAULT, SOAK_CONNECTIONS_MAX, SOAK_SECONDS_DEFAULT,
            SOAK_KILL_EVERY_DEFAULT_MS, SOAK_CHILD_SHARE);
    exit(2);
}

static void soak_parse(int argc, char **argv, struct soak_opts *o)
{
    o->connections = SOAK_CONNECTIONS_DEFAULT;
    o->seconds = SOAK_SECONDS_DEFAULT;
    o->kill_every_ms = SOAK_KILL_EVERY_DEFAULT_MS;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            o->extra = argv + i + 1;
            o->nextra = argc - i - 1;
            break;
        }
        if (i + 1 >= argc)
            soak_usage();
        const char *name = argv[i], *v = argv[++i];
        if (strcmp(name, "--address") == 0)
            o->address = v;
        else if (strcmp(name, "--ampd") == 0)
            o->ampd = v;
        else if (strcmp(name, "--connections") == 0)
            o->connections = atoi(v);
        else if (strcmp(name, "--seconds") == 0)
            o->seconds = atoi(v);
        else if (strcmp(name, "--kill-every") == 0)
            o->kill_every_ms = atoi(v);
        else
            soak_usage();
    }
    if (o->connections < 1 || o->connections > SOAK_CONNECTIONS_MAX || o->seconds < 1 ||
        o->kill_every_ms < 0 || (o->address && o->ampd) || (o->nextra && !o->ampd))
        soak_usage();
    if (!o->ampd && !o->address)
        o->address = AMP_DEFAULT_ADDRESS;
}

static void soak_setup_shared(void)
{
    soak = mmap(NULL, sizeof *soak, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (soak == MAP_FAILED)
        soak_die("mmap: %s", strerror(errno));
    uint8_t *in = malloc(SOAK_INPUT_BYTES);
    if (!in)
        soak_die("out of memory");
    bench_random(in, SOAK_INPUT_BYTES, SOAK_SEED);
    soak_input = in;
}

int main(int argc, char **argv)
{
    struct soak_opts o = {0};
    soak_parse(argc, argv, &o);
    signal(SIGPIPE, SIG_IGN);
    soak_setup_shared();
    struct soak_daemon dm;
    memset(&dm, 0, sizeof dm);
    if (o.ampd)
        soak_daemon_start(&dm, &o);
    else
        snprintf(dm.address, sizeof dm.address, "%s", o.address);
    soak_address = dm.address;

    amp_daemon_status before = { .size = sizeof before }, after = { .size = sizeof after };
    int rc = soak_status(dm.address, &before);
    if (rc != 0)
        soak_die("Status at %s: %s: %s", dm.address, amp_strerror(rc), amp_last_message(NULL));
    struct soak_run run;
    memset(&run, 0, sizeof run);
    soak_start_clients(&run, &o);
    soak_drive(&run, &o);
    double settle = soak_settle(&dm, &after);
    bool daemon_clean = true;
    if (dm.pid > 0) {
        dm.vm_hwm = bench_vm_hwm(dm.pid);
        daemon_clean = soak_daemon_stop(&dm);
    }

    printf("# soak: %d connections (%d threads, %d child processes), %.1f s, %s\n",
           o.connections, run.nthreads, run.nchildren, run.seconds, dm.address);
    printf("# kills: %" PRIu64 " child clients SIGKILLed (%" PRIu64 " inside a call), one every "
           "%d ms\n\n", run.kills, run.kills_in_call, o.kill_every_ms);
    uint64_t jobs = soak_report_clients(&run);
    soak_report_calls(&before, &after, jobs);
    soak_report_daemon(&o, &dm, &after, settle);

    uint64_t wrong = 0;
    for (int k = 0; k < SOAK_NKINDS; k++)
        wrong += soak->wrong[k];
    int failures = 0;
    if (wrong)
        failures += fprintf(stderr, "soak: FAIL: %" PRIu64 " wrong results\n", wrong) > 0;
    if (after.held_bytes)
        failures += fprintf(stderr, "soak: FAIL: ampd still holds %" PRIu64 " bytes\n",
                            after.held_bytes) > 0;
    if (!jobs)
        failures += fprintf(stderr, "soak: FAIL: no job was done\n") > 0;
    if (!daemon_clean)
        failures += fprintf(stderr, "soak: FAIL: ampd did not exit 0 after SIGTERM\n") > 0;
    free(run.clients);
    free((void *)soak_input);
    return failures ? 1 : 0;
}
