/* SPDX-License-Identifier: MIT */
/* server.c: wiring and the daemon's life on the main loop (see server.h).
 *
 * The main loop owns the listeners, the region sockets, the signals and
 * the drain timer, and is also I/O loop 0; --io-threads - 1 more I/O loops
 * run on threads of their own (io_loop.h). The listeners accept here and
 * hand each connection to the loop with the fewest.
 *
 * Start-up takes the sockets first: the loops serve with no scheduler
 * (health NOT_SERVING, jobs UNAVAILABLE, rpc_no_device) while the opener
 * thread opens the devices, which builds every kernel (seconds, cold).
 * Its end reaches the main loop through an async; there the scheduler is
 * made and each loop told to attach (io_loop_attach: its port is made on
 * its own thread); when every loop has, READY=1 goes out. The opener
 * cannot be interrupted (a driver's build), so a drain that begins
 * meanwhile finishes only once it has returned.
 *
 * Shutdown order matters: listeners close first (no new sockets), then
 * every loop gives its connections a GOAWAY and they close as their calls
 * finish (or the drain timer fires and they are closed by force); each
 * loop reports when it has none left. Once every loop has, the scheduler
 * stops its runners, which finish the tasks in flight and cancel queued
 * ones (streams still get their device side freed), each loop delivers
 * the last completions and closes its handles, and the threads end.
 */
#define _GNU_SOURCE   /* pthread_setname_np */
#include "server.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>
#include <uv.h>

#include "activate.h"
#include "auth.h"
#include "budget.h"
#include "client_share.h"
#include "conn_limit.h"
#include "dev.h"
#include "fd_reserve.h"
#include "heap_trim.h"
#include "io_loop.h"
#include "listen.h"
#include "log.h"
#include "metrics.h"
#include "region_sock.h"
#include "rpc.h"
#include "sched.h"
#include "secret_watch.h"
#include "stage_latency.h"
#include "tls.h"
#include "traffic.h"

/* After --drain-timeout, calls get their status; connections that cannot
 * take it (a client that does not read) are closed this much later. */
#define SERVER_DRAIN_FLUSH_MS 2000
/* The heap is trimmed after this long with nothing held and no call
 * answered (heap_trim.h): long enough to skip the gaps of a busy client,
 * short against the 30 s in which memory must come back. */
#define SERVER_HEAP_TRIM_MS 2000

struct server {
    uv_loop_t loop;            /* the main loop, and I/O loop 0's */
    uint64_t start_ms;         /* rpc_now_ms() at startup: uptime in Status and metrics */
    const struct config *cfg;  /* main()'s, as the daemon started: what the loops were given */
    struct config loaded;      /* as SIGHUP last loaded them (cfg at first): its live
                                * settings (server_live) are the ones in force */
    struct budget budget;      /* bytes held for clients, all connections (--max-job-memory) */
    pthread_mutex_t budget_lock; /* budget's: every I/O loop takes and gives */
    struct conn_limit conn_limit;
    struct status_counts status_counts; /* calls answered, by status */
    struct stage_latency stages;          /* unary job calls' stage latencies */
    struct traffic traffic;             /* calls by method and status, bytes (traffic.h) */
    struct sched *sched;
    struct io_loop **loops;    /* nloops, loops[0] on this loop */
    size_t nloops;
    atomic_uint *loop_conns;   /* connections on each loop (--io-threads of them) */
    atomic_size_t loops_empty; /* loops that reported empty() */
    uv_async_t wake;           /* an I/O loop -> here: one reported empty */
    struct listener *listeners[AMPD_MAX_LISTEN + 1];   /* + --health-listen */
    size_t nlisteners;
    server_open_devices_fn open_devices; /* main.c's, run on opener */
    uv_thread_t opener;        /* opens the devices while the loops serve */
    uv_async_t opened;         /* opener -> here: it returned */
    bool opening;              /* opener runs: nothing finishes until it returned */
    int open_rv;               /* opener's result, read after the join */
    char open_err[256];
    struct dev **devs;         /* owned, closed by server_free; set after the join */
    size_t ndevs;
    size_t default_index;
    atomic_size_t pin_ndevs;   /* devs that region pins may use: 0 until the scheduler
                                * runs (server_pin_work reads it on worker threads) */
    atomic_size_t loops_attached; /* loops that reported attached(ok) */
    atomic_size_t loops_failed;   /* loops that could not attach */
    bool ready;                /* every loop attached: READY=1 sent */
    int status;                /* the exit status: 1 once the start failed */
    struct region_set *regions;  /* NULL: --regions off */
    struct region_listener *region_listeners[AMPD_MAX_LISTEN]; /* one per Unix listener */
    size_t nregion_listeners;
    struct tls_server *tls;    /* NULL: no tls: listener; freed after the loops */
    struct metrics *metrics;   /* NULL: no --metrics-listen; stopped before the scheduler */
    struct auth *auth;         /* who may call; freed after the loops */
    struct client_share *shares; /* per-client limits; NULL: none set; freed after the loops */
    uv_signal_t sigterm, sigint, sighup;
    bool drain_delayed;        /* a signal came and --drain-delay runs (drain_timer) */
    struct secret_watch *secrets; /* the token and TLS files' directories, watched */
    uv_timer_t drain_timer;
    struct heap_trim heap_trim;  /* gives freed memory back once quiet */
    bool draining;
    bool drain_expired;        /* --drain-timeout passed: calls were failed, closing soon */
    bool stopped;              /* every loop told to close its connections */
    bool finished;             /* loops empty, scheduler stopped, handles closing */
};

/* Tells the service manager how ampd is doing (sd_notify: a datagram to
 * $NOTIFY_SOCKET, nothing without it). The service works either way, so a
 * failure is only reported. */
static void server_notify(const char *state)
{
    int rv = sd_notify(0, state);
    if (rv < 0)
        log_msg(LOG_WARN, "cannot tell the service manager (%s): %s", state, strerror(-rv));
}

/* The acceptor: the loop with the fewest connections takes it. */
static void server_on_accept(int fd, struct listen_kind kind, void *ctx)
{
    struct server *srv = ctx;
    if (!fd_reserve_admit(fd)) {
        close(fd);   /* the client sees its connection close; fd_reserve logs it */
        return;
    }
    struct io_loop *best = srv->loops[0];
    unsigned best_load = io_loop_load(best);
    for (size_t i = 1; i < srv->nloops && best_load; i++) {
        unsigned load = io_loop_load(srv->loops[i]);
        if (load < best_load) {
            best = srv->loops[i];
            best_load = load;
        }
    }
    if (io_loop_accept(best, fd, kind))
        for (size_t i = 0; i < srv->nloops; i++)
            io_loop_evict(srv->loops[i]);
}

/* The region socket beside a Unix listener (region_sock.h). */
/* A region just registered has the pages its client wrote mapped in
 * (region_populate) and, when that is all of them, is pinned for every GPU
 * (dev_pin_region) on a worker thread, off the loop, so that its first job
 * finds it ready; the work holds a reference on it until done. */
struct server_pin {
    uv_work_t work;
    struct server *srv;
    struct region *r;
};

static void server_pin_work(uv_work_t *w)
{
    struct server_pin *p = w->data;
    /* A pin commits every page: only for a region the client filled; a
     * sparse one is pinned by its first job, its size charged already. */
    if (!region_populate(p->r))
        return;
    size_t n = atomic_load(&p->srv->pin_ndevs);   /* devs is set before it */
    for (size_t i = 0; i < n; i++)
        dev_pin_region(p->srv->devs[i], p->r);
}

static void server_pin_done(uv_work_t *w, int status)
{
    (void)status;
    struct server_pin *p = w->data;
    region_put(p->r);
    free(p);
}

static void server_on_region(void *ctx, struct region *r)
{
    struct server *srv = ctx;
    struct server_pin *p = malloc(sizeof(*p));
    if (!p)
        return;   /* its first job pins it instead */
    p->srv = srv;
    p->r = r;
    p->work.data = p;
    region_ref(r);
    if (uv_queue_work(&srv->loop, &p->work, server_pin_work, server_pin_done) != 0) {
        region_put(r);
        free(p);
    }
}

static int server_listen_regions(struct server *srv, const struct address *addr,
                                 const struct listen_unix_access *access)
{
    char path[ADDRESS_PATH_MAX], err[256];
    struct region_sock_limits limits = {
        .max_connections = srv->cfg->max_connections,
        .max_peer_connections = srv->cfg->max_peer_connections,
    };
    if (address_region_path(addr, path, sizeof path) != 0) {
        log_msg(LOG_ERROR, "--listen unix:%s: no room for its region socket's name (%s%s); "
                        "a shorter path, or --regions off",
                addr->path, addr->path, ADDRESS_REGION_SUFFIX);
        return -1;
    }
    if (region_listen(&srv->loop, path, access, srv->regions, &limits,
                      &srv->region_listeners[srv->nregion_listeners], err, sizeof err) != 0) {
        log_msg(LOG_ERROR, "regions: %s", err);
        return -1;
    }
    srv->nregion_listeners++;
    log_msg(LOG_INFO, "regions on unix:%s", path);
    return 0;
}

/* Every --listen address, bound here. */
static int server_listen_config(struct server *srv)
{
    for (size_t i = 0; i < srv->cfg->nlisten; i++) {
        const char *text = srv->cfg->listen[i];
        struct address addr;
        char err[256];
        struct listen_unix_access access = { .mode = srv->cfg->socket_mode };
        if (address_parse(text, &addr, err, sizeof(err)) != 0
            || listen_group(srv->cfg->socket_group, &access.gid, err, sizeof(err)) != 0
            || listen_open(&srv->loop, &addr, &access, server_on_accept, srv, &srv->listeners[i],
                           err, sizeof(err))
                   != 0) {
            log_msg(LOG_ERROR, "--listen %s: %s", text, err);
            return -1;
        }
        srv->nlisteners++;
        if (auth_listener(srv->auth, text, addr.kind == ADDRESS_TCP, addr.tls,
                          listen_loopback(srv->listeners[i]), err, sizeof err) != 0) {
            log_msg(LOG_ERROR, "--listen %s: %s", text, err);
            return -1;
        }
        log_msg(LOG_INFO, "listening on %s", text);
        if (srv->regions && addr.kind == ADDRESS_UNIX && server_listen_regions(srv, &addr, &access) != 0)
            return -1;
    }
    return 0;
}

/* The region socket of a passed Unix listener: the one passed beside it,
 * else one ampd makes beside its file as for --listen (an abstract socket
 * has none). Without regions a passed one is closed. */
static int server_listen_passed_regions(struct server *srv, struct activate_socket *p)
{
    char err[256];
    int fd = p->region_fd;
    p->region_fd = -1;
    if (!srv->regions || !p->is_unix || p->path[0] == '@') {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    if (fd < 0) {
        struct address addr = { .kind = ADDRESS_UNIX };
        struct listen_unix_access access = { .mode = srv->cfg->socket_mode };
        snprintf(addr.path, sizeof addr.path, "%s", p->path);
        if (listen_group(srv->cfg->socket_group, &access.gid, err, sizeof err) != 0) {
            log_msg(LOG_ERROR, "%s", err);
            return -1;
        }
        return server_listen_regions(srv, &addr, &access);
    }
    struct region_sock_limits limits = {
        .max_connections = srv->cfg->max_connections,
        .max_peer_connections = srv->cfg->max_peer_connections,
    };
    if (region_listen_adopt(&srv->loop, fd, srv->regions, &limits,
                            &srv->region_listeners[srv->nregion_listeners], err, sizeof err) != 0) {
        log_msg(LOG_ERROR, "regions: %s", err);
        return -1;
    }
    srv->nregion_listeners++;
    log_msg(LOG_INFO, "regions on %s" ADDRESS_REGION_SUFFIX " (passed)", p->name);
    return 0;
}

/* The sockets systemd passed, instead of --listen (activate.h). Each
 * descriptor is closed or served, even when one fails. */
static int server_listen_passed(struct server *srv, struct activate_socket *passed, size_t n)
{
    int rv = 0;
    for (size_t i = 0; i < n; i++) {
        struct activate_socket *p = &passed[i];
        char err[256];
        if (rv != 0) {
            close(p->fd);
        } else if (listen_adopt(&srv->loop, p->fd, p->is_unix, server_on_accept, srv,
                                &srv->listeners[srv->nlisteners], err, sizeof err) != 0) {
            log_msg(LOG_ERROR, "passed socket %s: %s", p->name, err);
            rv = -1;
        } else if (srv->nlisteners++,
                   auth_listener(srv->auth, p->name, !p->is_unix, false,
                                 listen_loopback(srv->listeners[srv->nlisteners - 1]), err,
                                 sizeof err) != 0) {
            log_msg(LOG_ERROR, "passed socket %s: %s", p->name, err);   /* a TCP one is plain */
            rv = -1;
        } else {
            log_msg(LOG_INFO, "listening on %s (passed)", p->name);
        }
        if (rv != 0) {
            if (p->region_fd >= 0)
                close(p->region_fd);
        } else {
            rv = server_listen_passed_regions(srv, p);
        }
    }
    return rv;
}

/* --health-listen, beside --listen or the passed sockets. Plaintext and
 * on any address without --allow-plaintext-network: its connections reach
 * Health alone (auth_call), which carries no token and no data. */
static int server_listen_health(struct server *srv)
{
    const char *text = srv->cfg->health_listen;
    struct address addr;
    char err[256];
    if (!text[0])
        return 0;
    if (address_parse(text, &addr, err, sizeof err) != 0
        || listen_open(&srv->loop, &addr, NULL, server_on_accept, srv,
                       &srv->listeners[srv->nlisteners], err, sizeof err) != 0) {
        log_msg(LOG_ERROR, "--health-listen %s: %s", text, err);
        return -1;
    }
    listen_serve_health_only(srv->listeners[srv->nlisteners++]);
    log_msg(LOG_INFO, "health on %s (grpc.health.v1 only)", text);
    return 0;
}

static int server_listen(struct server *srv)
{
    struct activate_socket passed[AMPD_MAX_LISTEN];
    size_t n;
    char err[256];
    if (activate_sockets(passed, AMPD_MAX_LISTEN, &n, err, sizeof err) != 0) {
        log_msg(LOG_ERROR, "socket activation: %s", err);
        return -1;
    }
    int rv;
    if (n == 0) {
        rv = server_listen_config(srv);
    } else {
        log_msg(LOG_INFO, "socket-activated: serving the %zu sockets passed, not --listen", n);
        rv = server_listen_passed(srv, passed, n);
    }
    return rv == 0 ? server_listen_health(srv) : rv;
}

static void server_close_listeners(struct server *srv)
{
    for (size_t i = 0; i < srv->nlisteners; i++)
        listen_close(srv->listeners[i]);
    srv->nlisteners = 0;
    /* Registrations end; jobs still using a region keep it mapped. */
    for (size_t i = 0; i < srv->nregion_listeners; i++)
        region_listen_close(srv->region_listeners[i]);
    srv->nregion_listeners = 0;
}

/* Every loop is empty, so every call is gone: stop the runners (streams
 * still holding device state get their CLOSE then), let each loop deliver
 * what is owed and close, and close the rest. */
static void server_signals_mask(int how);

static void server_finish(struct server *srv)
{
    if (srv->finished || srv->opening)
        return;   /* opening: server_on_opened finishes */
    srv->finished = true;
    metrics_stop(srv->metrics);   /* its scrapes read the scheduler */
    srv->metrics = NULL;
    if (srv->sched)
        sched_stop(srv->sched);
    for (size_t i = 0; i < srv->nloops; i++)
        io_loop_finish(srv->loops[i]);
    /* Closing the handles gives the signals back their default action
     * (to end the process): one that comes during the rest of the exit
     * would cut it short, exit 143 instead of 0. Held, it never lands. */
    server_signals_mask(SIG_BLOCK);
    uv_close((uv_handle_t *)&srv->sigterm, NULL);
    uv_close((uv_handle_t *)&srv->sigint, NULL);
    uv_close((uv_handle_t *)&srv->sighup, NULL);
    secret_watch_stop(srv->secrets);
    srv->secrets = NULL;
    uv_close((uv_handle_t *)&srv->drain_timer, NULL);
    heap_trim_close(&srv->heap_trim);
    uv_close((uv_handle_t *)&srv->wake, NULL);
    uv_close((uv_handle_t *)&srv->opened, NULL);
}

/* Everything is drained or given up on: every loop closes the connections
 * it has left, and reports empty once they are gone. */
static void server_stop(struct server *srv)
{
    if (srv->stopped)
        return;
    srv->stopped = true;
    uv_timer_stop(&srv->drain_timer);
    for (size_t i = 0; i < srv->nloops; i++)
        io_loop_stop(srv->loops[i]);
    if (srv->nloops == 0)
        server_finish(srv);
}

/* An I/O loop's thread: it has no connection left. */
static void server_on_loop_empty(void *ctx)
{
    struct server *srv = ctx;
    atomic_fetch_add(&srv->loops_empty, 1);
    uv_async_send(&srv->wake);
}

/* An I/O loop's thread: it made its port, or could not. */
static void server_on_loop_attached(void *ctx, bool ok)
{
    struct server *srv = ctx;
    atomic_fetch_add(ok ? &srv->loops_attached : &srv->loops_failed, 1);
    uv_async_send(&srv->wake);
}

/* A start that cannot go on: the listeners close and every connection
 * closes now; the daemon ends with status 1 once the loops are empty. */
static void server_fail_start(struct server *srv)
{
    srv->status = 1;
    server_close_listeners(srv);
    server_stop(srv);
}

/* Every loop has its port: the daemon serves jobs now. */
static void server_ready(struct server *srv)
{
    srv->ready = true;
    for (size_t i = 0; i < srv->nloops; i++)
        io_loop_ready(srv->loops[i]);
    char state[128];
    snprintf(state, sizeof state, "READY=1\nSTATUS=serving %zu sockets on %zu I/O loops",
             srv->nlisteners, srv->nloops);
    server_notify(state);
    metrics_set_ready(srv->metrics, true);
    log_msg(LOG_INFO, "serving on %zu I/O loops: devices ready", srv->nloops);
}

static void server_on_wake(uv_async_t *h)
{
    struct server *srv = h->data;
    if (atomic_load(&srv->loops_failed) && !srv->stopped) {
        log_msg(LOG_ERROR, "out of memory: an I/O loop cannot reach the scheduler");
        server_fail_start(srv);
    } else if (!srv->ready && !srv->draining && !srv->stopped &&
               atomic_load(&srv->loops_attached) == srv->nloops && srv->nloops) {
        server_ready(srv);
    }
    if (atomic_load(&srv->loops_empty) == srv->nloops)
        server_finish(srv);
}

/* First the calls still open get a status (GOAWAY went out at the
 * drain's start), then, SERVER_DRAIN_FLUSH_MS later, whatever connection
 * is left is closed. */
static void server_on_drain_timeout(uv_timer_t *t)
{
    struct server *srv = t->data;
    uint32_t open = conn_limit_count(&srv->conn_limit);
    if (srv->drain_expired) {
        log_msg(LOG_WARN, "drain: closing %u connections that did not take their status",
                open);
        server_stop(srv);
        return;
    }
    srv->drain_expired = true;
    log_msg(LOG_WARN, "drain timeout: ending the calls of %u connections", open);
    char msg[STATUS_MSG_MAX];
    snprintf(msg, sizeof(msg), "the daemon is shutting down: --drain-timeout (%u s) passed",
             srv->loaded.drain_timeout_ms / 1000);
    uv_timer_start(&srv->drain_timer, server_on_drain_timeout, SERVER_DRAIN_FLUSH_MS, 0);
    for (size_t i = 0; i < srv->nloops; i++)
        io_loop_fail(srv->loops[i], msg);
}

static void server_drain(struct server *srv);

/* --drain-delay passed: drain now. */
static void server_on_drain_delay(uv_timer_t *t)
{
    struct server *srv = t->data;
    if (!srv->draining)
        server_drain(srv);
}

static void server_on_signal(uv_signal_t *h, int signum)
{
    struct server *srv = h->data;
    if (srv->draining) {
        log_msg(LOG_INFO, "signal %d again: stopping now", signum);
        server_stop(srv);
        return;
    }
    metrics_set_ready(srv->metrics, false);
    if (srv->ready && !srv->drain_delayed && srv->loaded.drain_delay_ms) {
        srv->drain_delayed = true;
        log_msg(LOG_INFO, "signal %d: /ready says 503; serving %u ms more, then draining",
                signum, srv->loaded.drain_delay_ms);
        server_notify("STATUS=leaving: /ready says 503, calls still served (--drain-delay)");
        uv_timer_start(&srv->drain_timer, server_on_drain_delay, srv->loaded.drain_delay_ms, 0);
        return;
    }
    log_msg(LOG_INFO, "signal %d: draining", signum);
    server_drain(srv);
}

/* Closes the listeners and ends the loops' calls: no new calls, those
 * running finish within --drain-timeout. */
static void server_drain(struct server *srv)
{
    server_notify("STOPPING=1\nSTATUS=draining: no new calls, those running finish");
    srv->draining = true;
    server_close_listeners(srv);   /* before any loop sends its GOAWAY */
    uv_timer_start(&srv->drain_timer, server_on_drain_timeout, srv->loaded.drain_timeout_ms, 0);
    for (size_t i = 0; i < srv->nloops; i++)
        io_loop_drain(srv->loops[i]);
}

/* Settings SIGHUP puts in force (server_apply). The others are taken
 * once, at startup: sockets, devices and buffers are made from them, and
 * each I/O loop copied its timeouts and sizes (changing them would mean
 * telling every loop's thread); a changed one is logged as waiting for a
 * restart. Region sockets keep the connection limits they started with. */
static const char *const server_live[] = {
    "log-level", "max-jobs", "max-connections", "max-peer-connections",
    "max-unauthenticated-connections", "drain-timeout", "drain-delay", "uid-weight",
    "uid-max-priority",
};

static void server_apply(struct server *srv, const struct config *now)
{
    log_set_level((enum log_level)now->log_level);
    if (srv->sched)
        sched_set_max_jobs(srv->sched, now->max_jobs);
    conn_limit_set(&srv->conn_limit, now->max_connections, now->max_peer_connections,
                   config_max_unauth(now));
    srv->loaded.drain_timeout_ms = now->drain_timeout_ms;   /* read from loaded when draining */
    srv->loaded.drain_delay_ms = now->drain_delay_ms;
    auth_set_uid_rules(srv->auth, &now->uid_weight, &now->uid_max_priority);
}

static void server_on_changed(const char *name, const char *was, const char *is, void *ctx)
{
    size_t *changed = ctx;
    (*changed)++;
    for (size_t i = 0; i < sizeof(server_live) / sizeof(server_live[0]); i++) {
        if (strcmp(name, server_live[i]) == 0) {
            log_msg(LOG_INFO, "SIGHUP: --%s %s (was %s)", name, is, was);
            return;
        }
    }
    log_msg(LOG_WARN, "SIGHUP: --%s %s (was %s) takes effect only at restart", name, is, was);
}

/* SIGTERM and SIGINT, which stop the daemon (server_on_signal), blocked
 * (how) or let through. */
static void server_signals_mask(int how)
{
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(how, &stop, NULL);
}

void server_signals_hold(void)
{
    server_signals_mask(SIG_BLOCK);
}

/* Re-reads the TLS files and the token file (why: what asked, for the
 * log); a file that does not load keeps what was loaded before. */
static void server_reload_secrets(struct server *srv, const char *why)
{
    char err[512];
    if (!srv->tls)
        log_msg(LOG_INFO, "%s: no TLS files to reload", why);
    else if (tls_server_reload(srv->tls, err, sizeof err) != 0)
        log_msg(LOG_ERROR, "%s: keeping the TLS files loaded before: %s", why, err);
    else
        log_msg(LOG_INFO, "%s: TLS files reloaded for new connections", why);
    int rv = auth_reload(srv->auth, err, sizeof err);
    if (rv < 0)
        log_msg(LOG_ERROR, "%s: keeping the tokens loaded before: %s", why, err);
    else if (rv == 0)
        log_msg(LOG_INFO, "%s: %s, for calls from now on", why, err);
}

/* A secret's file changed (secret_watch.h): read them again, as SIGHUP
 * does, with no signal. */
static void server_on_secrets_changed(void *ctx)
{
    server_reload_secrets(ctx, "secret files changed");
}

/* Watches the token and TLS files given at start; one that cannot be
 * watched is logged, and SIGHUP still reloads. */
static void server_watch_secrets(struct server *srv)
{
    const struct config *c = srv->cfg;
    const char *paths[] = {c->token_file, c->tls_cert, c->tls_key, c->tls_client_ca};
    char err[512];
    if (secret_watch_start(&srv->loop, paths, sizeof paths / sizeof paths[0],
                           server_on_secrets_changed, srv, &srv->secrets, err, sizeof err) != 0)
        log_msg(LOG_WARN, "%s: SIGHUP still reloads them", err);
}

/* SIGHUP reloads the settings (the config file and the same command
 * line) and puts the live ones in force, then re-reads the TLS files and
 * the token file. A
 * file that does not load keeps every setting as it was; a failed TLS
 * reload keeps the files loaded before. */
static void server_on_sighup(uv_signal_t *h, int signum)
{
    (void)signum;
    struct server *srv = h->data;
    char err[512];
    struct config now;
    if (config_load(&now, srv->cfg->argc, srv->cfg->argv, err, sizeof err) != CONFIG_RUN) {
        log_msg(LOG_ERROR, "SIGHUP: keeping the settings in force: %s", err);
    } else {
        size_t changed = 0;
        config_changes(&srv->loaded, &now, server_on_changed, &changed);
        server_apply(srv, &now);
        srv->loaded = now;
        log_msg(LOG_INFO, "SIGHUP: settings reloaded, %zu changed", changed);
    }
    server_reload_secrets(srv, "SIGHUP");
}

/* The metrics listener (--metrics-listen), once the counters it reads
 * exist. */
static int server_metrics(struct server *srv)
{
    if (!srv->cfg->metrics_listen[0])
        return 0;
    char err[512];
    struct metrics_sources src = {
        .traffic = &srv->traffic,
        .stages = &srv->stages,
        .sched = srv->sched,
        .conn_limit = &srv->conn_limit,
        .loop_conns = srv->loop_conns,
        .nloops = srv->cfg->io_threads,
        .budget = &srv->budget,
        .regions = srv->regions,
        .auth = srv->cfg->token_file[0] ? srv->auth : NULL,
        .start_ms = srv->start_ms,
    };
    if (metrics_start(srv->cfg->metrics_listen, srv->cfg->metrics_allow_remote, &src,
                      &srv->metrics, err, sizeof err) != 0) {
        log_msg(LOG_ERROR, "%s", err);
        return -1;
    }
    log_msg(LOG_INFO, "metrics on http://%s/metrics", metrics_address(srv->metrics));
    return 0;
}

/* Who may call: the token file and the allow-lists, before any listener. */
/* The admission rules cfg sets (auth.h). */
static struct auth_rules server_auth_rules(const struct config *cfg)
{
    return (struct auth_rules){
        .token_file = cfg->token_file,
        .tcp_require_token = cfg->tcp_require_token,
        .allow_plaintext_network = cfg->allow_plaintext_network,
        .allow_uid = cfg->allow_uid,
        .allow_gid = cfg->allow_gid,
        .uid_weight = &cfg->uid_weight,
        .uid_max_priority = &cfg->uid_max_priority,
    };
}

/* The TLS files cfg names (tls.h). */
static struct tls_server_files server_tls_files(const struct config *cfg)
{
    return (struct tls_server_files){ .cert = cfg->tls_cert, .key = cfg->tls_key,
                                      .client_ca = cfg->tls_client_ca };
}

static int server_auth(struct server *srv)
{
    char err[512];
    const struct config *cfg = srv->cfg;
    struct auth_rules rules = server_auth_rules(cfg);
    if (auth_new(&rules, &srv->auth, err, sizeof err) != 0) {
        log_msg(LOG_ERROR, "%s", err);
        return -1;
    }
    /* A client share as large as the daemon's budget limits nothing. */
    uint64_t client_memory = cfg->max_client_memory < cfg->max_job_memory
                                 ? cfg->max_client_memory : 0;
    /* Always: besides its limits, it numbers the clients (the fair queue's flows). */
    if (!(srv->shares = client_share_new(cfg->max_client_streams, cfg->max_client_jobs,
                                         client_memory))) {
        log_msg(LOG_ERROR, "out of memory");
        return -1;
    }
    return 0;
}

/* The TLS files of tls: listeners, before any connection. */
static int server_tls(struct server *srv)
{
    char err[512];
    if (!srv->cfg->tls_cert[0])
        return 0;
    struct tls_server_files files = server_tls_files(srv->cfg);
    if (tls_server_new(&files, &srv->tls, err, sizeof err) != 0) {
        log_msg(LOG_ERROR, "%s", err);
        return -1;
    }
    return 0;
}

static void server_on_opened(uv_async_t *h);

static void server_init(struct server *srv, const struct config *cfg)
{
    srv->start_ms = rpc_now_ms();
    srv->cfg = cfg;
    srv->loaded = *cfg;
    pthread_mutex_init(&srv->budget_lock, NULL);
    srv->budget = (struct budget){ .max = cfg->max_job_memory, .name = "--max-job-memory",
                                   .lock = &srv->budget_lock };
    conn_limit_init(&srv->conn_limit, cfg->max_connections, cfg->max_peer_connections,
                    config_max_unauth(cfg));
    if (cfg->regions) {
        struct region_limits rl = { .max_per_client = cfg->max_regions,
                                    .max_bytes = cfg->max_region_bytes,
                                    .max_client_bytes = cfg->max_client_region_bytes };
        /* No devices yet: region_set_devices() once they are open. */
        srv->regions = region_set_new(&rl, 0, dev_pinned_free);   /* NULL (no memory): regions off */
    }
    uv_signal_init(&srv->loop, &srv->sigterm);
    uv_signal_init(&srv->loop, &srv->sigint);
    uv_signal_init(&srv->loop, &srv->sighup);
    uv_timer_init(&srv->loop, &srv->drain_timer);
    uv_async_init(&srv->loop, &srv->wake, server_on_wake);
    uv_async_init(&srv->loop, &srv->opened, server_on_opened);
    srv->sigterm.data = srv->sigint.data = srv->sighup.data = srv;
    srv->drain_timer.data = srv->wake.data = srv->opened.data = srv;
    heap_trim_start(&srv->heap_trim, &srv->loop, SERVER_HEAP_TRIM_MS, &srv->budget,
                    &srv->status_counts);
}

/* --io-threads loops: loop 0 on the main loop, the others started on their
 * threads. Returns 0, or -1 (with the reason on stderr) with the loops made
 * so far in srv->loops, to be stopped as usual. */
static int server_start_loops(struct server *srv)
{
    char err[256];
    struct io_loop_shared sh = {
        .cfg = srv->cfg,
        .sched = srv->sched,
        .budget = &srv->budget,
        .conn_limit = &srv->conn_limit,
        .status_counts = &srv->status_counts,
        .stages = &srv->stages,
        .traffic = &srv->traffic,
        .regions = srv->regions,
        .tls = srv->tls,
        .auth = srv->auth,
        .shares = srv->shares,
        .start_ms = srv->start_ms,
        .starting = true,
        .empty = server_on_loop_empty,
        .attached = server_on_loop_attached,
        .ctx = srv,
    };
    srv->loops = calloc(srv->cfg->io_threads, sizeof(*srv->loops));
    srv->loop_conns = calloc(srv->cfg->io_threads, sizeof(*srv->loop_conns));
    sh.loop_conns = srv->loop_conns;
    sh.nloops = srv->cfg->io_threads;
    if (!srv->loops || !srv->loop_conns || traffic_init(&srv->traffic) != 0) {
        log_msg(LOG_ERROR, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < srv->cfg->io_threads; i++) {
        struct io_loop *l;
        if (io_loop_new(&sh, (unsigned)i, i == 0 ? &srv->loop : NULL, &l, err, sizeof err) != 0) {
            log_msg(LOG_ERROR, "%s", err);
            return -1;
        }
        if (io_loop_start(l, err, sizeof err) != 0) {
            log_msg(LOG_ERROR, "%s", err);
            io_loop_free(l);   /* never ran: it could not report empty */
            return -1;
        }
        srv->loops[srv->nloops++] = l;
    }
    return 0;
}

static void server_free(struct server *srv)
{
    for (size_t i = 0; i < srv->nloops; i++)
        io_loop_free(srv->loops[i]);   /* joins the threads */
    free(srv->loops);
    free(srv->loop_conns);
    if (srv->sched)
        sched_free(srv->sched);
    region_set_free(srv->regions);   /* every job that used one is done: their pins go */
    dev_close_all(srv->devs, srv->ndevs);
    tls_server_free(srv->tls);       /* every connection is gone */
    traffic_destroy(&srv->traffic);
    auth_free(srv->auth);
    client_share_free(srv->shares);
    conn_limit_destroy(&srv->conn_limit);
    pthread_mutex_destroy(&srv->budget_lock);
    free(srv);
}

/* The opener thread: main.c's open_devices(), then word to the main loop.
 * SIGTERM and SIGINT stay blocked here (held since main), so they reach
 * the main loop's handler. */
static void server_opener(void *arg)
{
    struct server *srv = arg;
    pthread_setname_np(pthread_self(), "ampd-opener");
    /* PoCL's LLVM gives the thread that builds kernels an alternate signal
     * stack of its own (malloc'd, kept in LLVM's globals). This thread
     * ends, and a thread's end may free the one it was given at its start
     * (AddressSanitizer unmaps it, and aborts on LLVM's), so the stack it
     * started with is put back first. */
    stack_t altstack;
    bool restore = sigaltstack(NULL, &altstack) == 0;
    srv->open_rv = srv->open_devices(srv->cfg, &srv->devs, &srv->ndevs, &srv->default_index,
                                     srv->open_err, sizeof srv->open_err);
    if (restore) {
        altstack.ss_flags &= SS_DISABLE;   /* not SS_ONSTACK: we are not on it */
        sigaltstack(&altstack, NULL);
    }
    uv_async_send(&srv->opened);
}

/* The scheduler over the open devices (the settings in force now: a
 * SIGHUP during the start counts), regions may pin on them, the metrics
 * read it, then every loop attaches. */
static int server_start_sched(struct server *srv)
{
    char err[256];
    const struct config *cfg = &srv->loaded;
    struct sched_limits limits = {
        .max_jobs = cfg->max_jobs,
        .staging_bytes = cfg->staging_bytes,
        .chunk_bytes = (size_t)cfg->chunk_bytes,
        .max_device_memory = cfg->max_device_memory,
        .host_max_bytes = cfg->host_max_bytes,
        .host_threads = cfg->host_threads,
        .busy_poll_ns = (uint64_t)cfg->busy_poll_us * 1000,
    };
    if (sched_new(srv->devs, srv->ndevs, srv->default_index, &limits, &srv->sched, err,
                  sizeof(err)) != 0) {
        log_msg(LOG_ERROR, "%s", err);
        srv->sched = NULL;
        return -1;
    }
    if (srv->regions)
        region_set_devices(srv->regions, srv->ndevs);
    atomic_store(&srv->pin_ndevs, srv->ndevs);
    metrics_set_sched(srv->metrics, srv->sched);
    for (size_t i = 0; i < srv->nloops; i++)
        io_loop_attach(srv->loops[i], srv->sched);
    return 0;
}

/* The opener returned: start serving jobs, or end the start. */
static void server_on_opened(uv_async_t *h)
{
    struct server *srv = h->data;
    if (!srv->opening)
        return;
    uv_thread_join(&srv->opener);
    srv->opening = false;
    if (srv->open_rv != 0) {
        srv->devs = NULL;   /* open_devices() closed what it had opened */
        srv->ndevs = 0;
        log_msg(LOG_ERROR, "%s", srv->open_err);
        if (!srv->stopped)
            server_fail_start(srv);
    } else if (srv->draining || srv->stopped) {
        log_msg(LOG_INFO, "devices opened during the drain: closing them unused");
    } else if (server_start_sched(srv) != 0) {
        server_fail_start(srv);
    }
    if (atomic_load(&srv->loops_empty) == srv->nloops && (srv->stopped || srv->draining))
        server_finish(srv);
}

/* Sockets first: TLS, who may call, the loops, metrics (bound before the
 * listeners, so a busy port stops the start before clients connect) and
 * the listeners. */
static int server_start_sockets(struct server *srv)
{
    return server_tls(srv) != 0 || server_auth(srv) != 0 || server_start_loops(srv) != 0 ||
                   server_metrics(srv) != 0 || server_listen(srv) != 0
               ? -1
               : 0;
}

int server_check(const struct config *cfg)
{
    char err[512];
    struct tls_server *tls = NULL;
    struct auth *auth = NULL;
    struct tls_server_files files = server_tls_files(cfg);
    struct auth_rules rules = server_auth_rules(cfg);
    int rc = 0;
    if (cfg->tls_cert[0] && tls_server_new(&files, &tls, err, sizeof err) != 0)
        rc = -1;
    else if (auth_new(&rules, &auth, err, sizeof err) != 0)
        rc = -1;
    if (rc != 0)
        log_msg(LOG_ERROR, "%s", err);
    tls_server_free(tls);
    auth_free(auth);
    return rc;
}

int server_run(const struct config *cfg, server_open_devices_fn open_devices)
{
    struct server *srv = calloc(1, sizeof(*srv));
    if (!srv || uv_loop_init(&srv->loop) != 0) {
        log_msg(LOG_ERROR, "cannot start the event loop");
        free(srv);
        return 1;
    }
    server_init(srv, cfg);
    srv->open_devices = open_devices;
    if (srv->regions)
        region_set_on_register(srv->regions, server_on_region, srv);
    if (server_start_sockets(srv) != 0) {
        srv->status = 1;
    } else if (uv_thread_create(&srv->opener, server_opener, srv) != 0) {
        log_msg(LOG_ERROR, "cannot start the thread that opens the devices");
        srv->status = 1;
    } else {
        srv->opening = true;
    }
    if (srv->status == 0) {
        uv_signal_start(&srv->sigterm, server_on_signal, SIGTERM);
        uv_signal_start(&srv->sigint, server_on_signal, SIGINT);
        uv_signal_start(&srv->sighup, server_on_sighup, SIGHUP);
        server_watch_secrets(srv);
        server_signals_mask(SIG_UNBLOCK);   /* held since main(): one sent already comes now */
        server_notify("STATUS=listening; opening the devices and building the kernels");
        log_msg(LOG_INFO, "listening on %zu sockets; opening the devices", srv->nlisteners);
    } else {
        server_close_listeners(srv);
        server_stop(srv);
    }
    /* Until every loop has finished; then the close callbacks still pending. */
    if (srv->nloops)
        io_loop_run(srv->loops[0]);
    else
        uv_run(&srv->loop, UV_RUN_DEFAULT);
    uv_run(&srv->loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&srv->loop) != 0)
        log_msg(LOG_WARN, "handles left open at exit");
    int status = srv->status;
    server_free(srv);
    return status;
}
