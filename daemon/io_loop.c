/* SPDX-License-Identifier: MIT */
/* io_loop.c: one I/O loop and its connections (see io_loop.h).
 *
 * Accepted connections reach a loop as bare fds from the one acceptor on
 * the main loop (server.c), which picks the loop with the fewest
 * connections: libuv gives no safe way for several loops to accept from
 * one listening socket (each would poll it, and the first to wake would
 * take the whole backlog), while an fd handed over is a single integer
 * that becomes a handle on its loop's own thread (listen_sock_open). The
 * hand-over is a queue under the loop's lock and a uv_async wake-up, the
 * same path the server's commands take; fds queued before a command are
 * taken before it, so a connection accepted before the drain began is
 * served and then drained like the rest.
 */
#define _GNU_SOURCE   /* pthread_setname_np */
#include "io_loop.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "grow.h"
#include "listen.h"
#include "log.h"
#include "monotonic.h"
#include "rpc.h"
#include "sched.h"
#include "spin.h"
#include "stage_latency.h"
#include "thread_nice.h"

/* The sweep runs a few times per timeout, at least every second, so a
 * timeout is enforced within a quarter of itself (or a second). */
#define IO_LOOP_SWEEPS_PER_TIMEOUT 4
#define IO_LOOP_SWEEP_MAX_MS 1000

enum io_loop_cmd {
    IO_LOOP_DRAIN = 1 << 0,
    IO_LOOP_FAIL = 1 << 1,
    IO_LOOP_STOP = 1 << 2,
    IO_LOOP_FINISH = 1 << 3,
    IO_LOOP_EVICT = 1 << 4,
    IO_LOOP_ATTACH = 1 << 5,
    IO_LOOP_READY = 1 << 6,
};

struct io_loop_fd {
    int fd;
    struct listen_kind kind;           /* of the listener that took it */
    struct conn_admission admission;   /* made by the acceptor, in accept order */
};

/* A loop adds its turns to the daemon's histogram every this many turns,
 * and at least every IO_LOOP_TURNS_FLUSH_NS: one set of atomic adds per
 * batch, not per turn, on a histogram every loop shares. */
#define IO_LOOP_TURNS_FLUSH 1024
#define IO_LOOP_TURNS_FLUSH_NS 100000000ull

/* The loop's turns (STAGE_LOOP_TURN): how long it ran from one wait for
 * events ending to the next wait (its callbacks, timers, and with
 * --busy-poll its polling), the time a call arriving meanwhile waits
 * before the loop reads it. Measured before each wait (a prepare handle)
 * as the time since the last one less libuv's idle time in between. */
struct io_loop_turns {
    uv_prepare_t prepare;
    uint64_t last_ns, last_idle_ns, flushed_ns;
    uint32_t n;
    uint64_t sum_us;
    uint32_t buckets[STAGE_BUCKETS];
    struct stage_latency *to;
};

/* "ampd-io3": what top -H and gdb show for a loop's thread. */
#define IO_LOOP_NAME_MAX 16

struct io_loop {
    unsigned index;               /* 0: the main thread's */
    uv_loop_t own;                /* the loop, when it has a thread of its own */
    uv_loop_t *loop;              /* &own, or the main thread's (loop 0) */
    bool threaded;                /* runs on its own thread */
    bool started;                 /* its thread was started: io_loop_free() joins it */
    uv_thread_t thread;
    uv_async_t ctl;               /* any thread -> the loop: fds and commands */

    uv_mutex_t lock;              /* guards fds, nfds, cap, cmds, fail_msg and attach */
    struct io_loop_fd *fds;       /* handed over, not yet taken: nfds <= cap */
    size_t nfds, cap;
    unsigned cmds;                /* io_loop_cmd bits pending */
    char fail_msg[STATUS_MSG_MAX];
    struct sched *attach;         /* io_loop_attach()'s, until the loop takes it */

    /* The loop's thread only. */
    struct conn_set conns;
    struct rpc_env env;
    struct sched_port *port;      /* NULL: no devices */
    uv_timer_t sweep;             /* --request-timeout's and --idle-timeout's sweep */
    struct io_loop_turns turns;
    const struct config *cfg;
    void (*empty)(void *ctx);
    void (*attached)(void *ctx, bool ok);
    void *ctx;
    bool reported;                /* empty() was called */
};

/* --- connections ------------------------------------------------------------ */

static void io_loop_take(struct io_loop *l, const struct io_loop_fd *f)
{
    struct listen_sock *sock;
    if (listen_sock_open(l->loop, f->fd, f->kind.is_unix, &sock) == 0) {
        conn_accept(&l->conns, sock, &f->admission, f->kind.tls);
    } else {
        conn_unadmit(l->conns.limit, &f->admission);
        atomic_fetch_sub(l->conns.live, 1);
    }
}

static void io_loop_on_empty(void *ctx)
{
    struct io_loop *l = ctx;
    if (l->reported)
        return;
    l->reported = true;
    l->empty(l->ctx);
}

static void io_loop_on_sweep(uv_timer_t *t)
{
    struct io_loop *l = t->data;
    conn_sweep(&l->conns, rpc_now_ms(), l->cfg->idle_timeout_ms, l->cfg->handshake_timeout_ms);
}

/* The shorter of two timeouts, 0 meaning none. */
static uint64_t io_loop_shorter(uint64_t a, uint64_t b)
{
    return a && (!b || a < b) ? a : b;
}

/* Sweeps a few times per the shortest timeout, at least every second: the
 * sweep also closes the unauthenticated connections that give their place
 * to a newcomer (conn_limit.h), so it runs with no timeout set too. */
static void io_loop_start_sweep(struct io_loop *l)
{
    uint64_t shortest = io_loop_shorter(l->cfg->request_timeout_ms, l->cfg->idle_timeout_ms);
    shortest = io_loop_shorter(shortest, l->cfg->handshake_timeout_ms);
    shortest = io_loop_shorter(shortest, l->cfg->send_timeout_ms);
    if (!shortest)
        shortest = (uint64_t)IO_LOOP_SWEEP_MAX_MS * IO_LOOP_SWEEPS_PER_TIMEOUT;
    uint64_t every = shortest / IO_LOOP_SWEEPS_PER_TIMEOUT;
    if (every > IO_LOOP_SWEEP_MAX_MS)
        every = IO_LOOP_SWEEP_MAX_MS;
    if (every == 0)
        every = 1;
    uv_timer_start(&l->sweep, io_loop_on_sweep, every, every);
}

/* --- turns ------------------------------------------------------------------ */

static void io_loop_turns_flush(struct io_loop_turns *t, uint64_t now)
{
    stage_latency_add(t->to, STAGE_LOOP_TURN, t->n, t->sum_us, t->buckets);
    t->n = 0;
    t->sum_us = 0;
    memset(t->buckets, 0, sizeof t->buckets);
    t->flushed_ns = now;
}

static void io_loop_on_prepare(uv_prepare_t *h)
{
    struct io_loop_turns *t = h->data;
    uint64_t now = monotonic_ns(), idle = uv_metrics_idle_time(h->loop);
    uint64_t span = now - t->last_ns, slept = idle - t->last_idle_ns;
    uint64_t us = (span > slept ? span - slept : 0) / 1000;
    bool first = !t->last_ns;   /* since the loop was made, not a turn */
    t->last_ns = now;
    t->last_idle_ns = idle;
    if (first)
        return;
    t->n++;
    t->sum_us += us;
    t->buckets[stage_latency_bucket(us)]++;
    if (t->n >= IO_LOOP_TURNS_FLUSH || now - t->flushed_ns >= IO_LOOP_TURNS_FLUSH_NS)
        io_loop_turns_flush(t, now);
}

/* Counts the loop's turns into to (NULL: not counted). The prepare
 * handle does not keep the loop running. */
static void io_loop_turns_start(struct io_loop *l, struct stage_latency *to)
{
    struct io_loop_turns *t = &l->turns;
    uv_prepare_init(l->loop, &t->prepare);
    t->prepare.data = t;
    t->to = to;
    if (!to || uv_loop_configure(l->loop, UV_METRICS_IDLE_TIME) != 0)
        return;
    t->flushed_ns = monotonic_ns();
    uv_prepare_start(&t->prepare, io_loop_on_prepare);
    uv_unref((uv_handle_t *)&t->prepare);
}

/* --- commands, on the loop -------------------------------------------------- */

/* The devices are open: this loop's port is made here, on its own thread,
 * and only then do its calls see it (env.sched). */
static void io_loop_do_attach(struct io_loop *l, struct sched *sched)
{
    bool ok = l->port || (l->port = sched_port_new(sched, l->loop)) != NULL;
    if (ok)
        l->env.sched = l->port;
    l->attached(l->ctx, ok);
}

/* Every loop has attached: health turns SERVING here too. */
static void io_loop_do_ready(struct io_loop *l)
{
    l->env.starting = false;
    if (!l->env.draining)
        rpc_health_ready(&l->env);
}

static void io_loop_do_drain(struct io_loop *l)
{
    l->env.draining = true;
    rpc_health_drain(&l->env);
    uv_timer_stop(&l->sweep);   /* the drain closes connections now */
    conn_drain_all(&l->conns);  /* may report empty at once */
}

static void io_loop_do_stop(struct io_loop *l)
{
    uv_timer_stop(&l->sweep);
    l->conns.draining = true;   /* so that the last close reports empty */
    if (l->conns.head)
        conn_close_all(&l->conns);
    else
        io_loop_on_empty(l);
}

/* Every loop is empty and the runners are stopped: deliver what is owed
 * and close the handles, which lets the loop's uv_run() return. */
static void io_loop_do_finish(struct io_loop *l)
{
    if (l->port) {
        sched_port_close(l->port);
        l->port = NULL;
        l->env.sched = NULL;
    }
    io_loop_turns_flush(&l->turns, monotonic_ns());
    uv_close((uv_handle_t *)&l->turns.prepare, NULL);
    uv_close((uv_handle_t *)&l->sweep, NULL);   /* all live in l, freed by io_loop_free */
    uv_close((uv_handle_t *)&l->ctl, NULL);
}

static void io_loop_on_ctl(uv_async_t *h)
{
    struct io_loop *l = h->data;
    uv_mutex_lock(&l->lock);
    struct io_loop_fd *fds = l->fds;
    size_t nfds = l->nfds;
    l->fds = NULL;
    l->nfds = l->cap = 0;
    unsigned cmds = l->cmds;
    l->cmds = 0;
    struct sched *attach = l->attach;
    char msg[STATUS_MSG_MAX];
    memcpy(msg, l->fail_msg, sizeof msg);
    uv_mutex_unlock(&l->lock);

    for (size_t i = 0; i < nfds; i++)
        io_loop_take(l, &fds[i]);
    free(fds);
    if (cmds & IO_LOOP_EVICT)
        conn_evict(&l->conns);
    if (cmds & IO_LOOP_ATTACH)
        io_loop_do_attach(l, attach);
    if (cmds & IO_LOOP_READY)
        io_loop_do_ready(l);
    if (cmds & IO_LOOP_DRAIN)
        io_loop_do_drain(l);
    if (cmds & IO_LOOP_FAIL)
        conn_fail_all(&l->conns, STATUS_UNAVAILABLE, msg);
    if (cmds & IO_LOOP_STOP)
        io_loop_do_stop(l);
    if (cmds & IO_LOOP_FINISH)
        io_loop_do_finish(l);
}

/* --- commands, from any thread ---------------------------------------------- */

static void io_loop_post(struct io_loop *l, unsigned cmd, const char *msg)
{
    uv_mutex_lock(&l->lock);
    l->cmds |= cmd;
    if (msg)
        snprintf(l->fail_msg, sizeof l->fail_msg, "%s", msg);
    uv_mutex_unlock(&l->lock);
    uv_async_send(&l->ctl);
}

void io_loop_attach(struct io_loop *l, struct sched *sched)
{
    uv_mutex_lock(&l->lock);
    l->attach = sched;
    uv_mutex_unlock(&l->lock);
    io_loop_post(l, IO_LOOP_ATTACH, NULL);
}

void io_loop_ready(struct io_loop *l)
{
    io_loop_post(l, IO_LOOP_READY, NULL);
}

void io_loop_drain(struct io_loop *l)
{
    io_loop_post(l, IO_LOOP_DRAIN, NULL);
}

void io_loop_fail(struct io_loop *l, const char *msg)
{
    io_loop_post(l, IO_LOOP_FAIL, msg);
}

void io_loop_stop(struct io_loop *l)
{
    io_loop_post(l, IO_LOOP_STOP, NULL);
}

void io_loop_finish(struct io_loop *l)
{
    io_loop_post(l, IO_LOOP_FINISH, NULL);
}

void io_loop_evict(struct io_loop *l)
{
    io_loop_post(l, IO_LOOP_EVICT, NULL);
}

bool io_loop_accept(struct io_loop *l, int fd, struct listen_kind kind)
{
    /* Counted from here to its close, in one count: the acceptor's next
     * pick sees it whether or not the loop has taken it yet. */
    atomic_fetch_add(l->conns.live, 1);
    struct io_loop_fd f = { .fd = fd, .kind = kind };
    conn_admit(l->conns.limit, l->conns.auth, fd, kind, &f.admission);
    bool marked = f.admission.marked;
    if (!l->threaded) {
        io_loop_take(l, &f);   /* the acceptor's own loop */
        return marked;
    }
    uv_mutex_lock(&l->lock);
    if (l->nfds == l->cap) {
        size_t cap = grow_cap(l->cap, 16, l->nfds + 1);
        struct io_loop_fd *fds = realloc(l->fds, cap * sizeof(*fds));
        if (!fds) {
            uv_mutex_unlock(&l->lock);
            conn_unadmit(l->conns.limit, &f.admission);
            atomic_fetch_sub(l->conns.live, 1);
            close(fd);   /* out of memory: the client sees its connection close */
            return marked;
        }
        l->fds = fds;
        l->cap = cap;
    }
    l->fds[l->nfds++] = f;
    uv_mutex_unlock(&l->lock);
    uv_async_send(&l->ctl);
    return marked;
}

unsigned io_loop_load(struct io_loop *l)
{
    return atomic_load(l->conns.live);
}

/* --- life ------------------------------------------------------------------- */

static void io_loop_init_conns(struct io_loop *l, const struct io_loop_shared *sh,
                               unsigned index)
{
    const struct config *cfg = sh->cfg;
    l->env = (struct rpc_env){
        .max_message_bytes = (size_t)cfg->max_message_bytes,
        .max_unknown_length = cfg->max_unknown_length,
        .start_ms = sh->start_ms,
        .conn_limit = sh->conn_limit,
        .loop_conns = sh->loop_conns,
        .nloops = sh->nloops,
        .loop = l->loop,
        .budget = sh->budget,
        .status_counts = sh->status_counts,
        .stages = sh->stages,
        .regions = sh->regions,
        .auth = sh->auth,
        .shares = sh->shares,
        .sched = l->port,
        .starting = sh->starting,
    };
    memcpy(l->env.max_queue_us, cfg->max_queue_us, sizeof l->env.max_queue_us);
    l->conns.live = &sh->loop_conns[index];
    l->conns.limit = sh->conn_limit;
    l->conns.budget = sh->budget;
    l->conns.tls = sh->tls;
    l->conns.traffic = sh->traffic;
    l->conns.auth = sh->auth;
    l->conns.conn_memory = cfg->max_connection_memory;
    l->conns.send_timeout_ms = cfg->send_timeout_ms;
    l->conns.h2cfg = (struct h2_config){
        .max_message_bytes = (size_t)cfg->max_message_bytes,
        .max_streams = cfg->max_streams,
        .now_ms = rpc_now_ms,
        .request_timeout_ms = cfg->request_timeout_ms,
        .min_request_rate = cfg->min_request_rate,
        .status_counts = sh->status_counts,
    };
    l->conns.env = &l->env;
    l->conns.empty = io_loop_on_empty;
    l->conns.ctx = l;
}

int io_loop_new(const struct io_loop_shared *sh, unsigned index, uv_loop_t *main_loop,
                struct io_loop **out, char *err, size_t errlen)
{
    struct io_loop *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    l->index = index;
    l->threaded = !main_loop;
    l->loop = main_loop ? main_loop : &l->own;
    if (l->threaded && uv_loop_init(&l->own) != 0) {
        free(l);
        snprintf(err, errlen, "cannot start an I/O loop");
        return -1;
    }
    if (sh->sched && !(l->port = sched_port_new(sh->sched, l->loop))) {
        if (l->threaded)
            uv_loop_close(&l->own);
        free(l);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    l->cfg = sh->cfg;
    l->empty = sh->empty;
    l->attached = sh->attached;
    l->ctx = sh->ctx;
    uv_mutex_init(&l->lock);
    uv_async_init(l->loop, &l->ctl, io_loop_on_ctl);
    uv_timer_init(l->loop, &l->sweep);
    l->ctl.data = l->sweep.data = l;
    io_loop_init_conns(l, sh, index);
    io_loop_start_sweep(l);
    io_loop_turns_start(l, sh->stages);
    *out = l;
    return 0;
}

/* Sets the loop's thread --loop-boost levels ahead of the daemon's nice
 * (config.h says why). Loop 0's, the main thread's, is set before it
 * starts the runners, batch lanes and host workers, which start with it;
 * the opener and PoCL's workers were started before, and the bulk-byte
 * threads set their own (listen.c). */
static void io_loop_boost(const struct io_loop *l)
{
    if (!l->cfg->loop_boost || thread_nice_set(-(int)l->cfg->loop_boost) == 0)
        return;
    if (l->index == 0)   /* every loop fails alike: said once */
        log_msg(LOG_INFO, "I/O loops at the daemon's own priority: --loop-boost %u needs "
                "CAP_SYS_NICE or LimitNICE=-%u (%s)", l->cfg->loop_boost, l->cfg->loop_boost,
                strerror(errno));
}

void io_loop_run(struct io_loop *l)
{
    io_loop_boost(l);
    uint64_t window_ns = (uint64_t)l->cfg->busy_poll_us * 1000;
    if (!window_ns || (!l->port && !l->env.starting)) {
        uv_run(l->loop, UV_RUN_DEFAULT);
        return;
    }
    /* Polling without sleeping for a while after a job went out saves the
     * wake-up its completion would cost (a tiny job is back within it; a
     * long one is waited for asleep), and after one came back the wake-up
     * of the client's next call. It waits in the ordinary way instead as
     * soon as another thread wanted its CPU (spin.h); otherwise the port's
     * window says when polling ends. */
    uv_run_mode mode = UV_RUN_ONCE;
    struct spin s = {0};
    while (uv_run(l->loop, mode)) {
        bool busy = l->port && sched_port_busy(l->port, monotonic_ns(), window_ns);
        if (busy && mode == UV_RUN_ONCE)   /* no port until attached, nor once finishing */
            spin_start(&s, UINT64_MAX);
        mode = busy && spin_on(&s) ? UV_RUN_NOWAIT : UV_RUN_ONCE;
    }
}

static void io_loop_main(void *arg)
{
    struct io_loop *l = arg;
    char name[IO_LOOP_NAME_MAX];
    snprintf(name, sizeof name, "ampd-io%u", l->index);
    pthread_setname_np(pthread_self(), name);
    io_loop_run(l);
}

int io_loop_start(struct io_loop *l, char *err, size_t errlen)
{
    if (!l->threaded)
        return 0;
    if (uv_thread_create(&l->thread, io_loop_main, l) != 0) {
        snprintf(err, errlen, "cannot start an I/O thread");
        return -1;
    }
    l->started = true;
    return 0;
}

void io_loop_free(struct io_loop *l)
{
    if (!l)
        return;
    if (l->started)
        uv_thread_join(&l->thread);
    if (l->threaded) {
        if (!l->started) {
            /* Never ran: close its handles here, on the only thread. */
            io_loop_do_finish(l);
            uv_run(l->loop, UV_RUN_DEFAULT);
        }
        if (uv_loop_close(&l->own) != 0)
            log_msg(LOG_WARN, "an I/O loop's handles were left open at exit");
    }
    for (size_t i = 0; i < l->nfds; i++) {
        conn_unadmit(l->conns.limit, &l->fds[i].admission);
        close(l->fds[i].fd);
    }
    free(l->fds);
    uv_mutex_destroy(&l->lock);
    free(l);
}
