/* server.c: wiring and the daemon's life on the loop (see server.h).
 *
 * Shutdown order matters: listeners close first (no new sockets), then
 * connections get GOAWAY and close as their calls finish (or the drain
 * timer fires and they are closed by force); once none is left, the
 * scheduler stops its runners, which finish the tasks in flight and cancel
 * queued ones (streams still get their device side freed), and the loop
 * runs until every handle's close callback has freed it.
 */
#include "server.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <uv.h>

#include "conn.h"
#include "dev.h"
#include "listen.h"
#include "notify.h"
#include "region_sock.h"
#include "rpc.h"
#include "scheduler.h"

/* The sweep runs a few times per timeout, at least every second, so a
 * timeout is enforced within a quarter of itself (or a second). */
#define SERVER_SWEEPS_PER_TIMEOUT 4
#define SERVER_SWEEP_MAX_MS 1000
/* After --drain-timeout, calls get their status; connections that cannot
 * take it (a client that does not read) are closed this much later. */
#define SERVER_DRAIN_FLUSH_MS 2000

struct server {
    uv_loop_t loop;
    const struct config *cfg;
    struct rpc_env env;
    struct conn_set conns;
    struct budget budget;      /* bytes held for clients, all connections (--max-job-memory) */
    uint64_t status_counts[STATUS_CODE_COUNT]; /* calls answered, by status */
    struct sched *sched;
    struct listener *listeners[AMPD_MAX_LISTEN];
    size_t nlisteners;
    struct region_set *regions;  /* NULL: --regions off */
    struct region_listener *region_listeners[AMPD_MAX_LISTEN]; /* one per Unix listener */
    size_t nregion_listeners;
    uv_signal_t sigterm, sigint;
    uv_timer_t drain_timer;
    uv_timer_t sweep_timer;    /* --request-timeout's and --idle-timeout's sweep */
    bool draining;
    bool drain_expired;        /* --drain-timeout passed: calls were failed, closing soon */
    bool stopped;           /* final teardown started: connections closing */
    bool finished;          /* connections gone, scheduler and handles closed */
};

static void server_on_accept(struct listen_sock *sock, void *ctx)
{
    struct server *srv = ctx;
    conn_accept(&srv->conns, sock);
}

/* The region socket beside a Unix listener (region_sock.h). */
static int server_listen_regions(struct server *srv, const struct address *addr,
                                 const struct listen_unix_access *access)
{
    char path[ADDRESS_PATH_MAX], err[256];
    struct region_sock_limits limits = {
        .max_connections = srv->cfg->max_connections,
        .max_peer_connections = srv->cfg->max_peer_connections,
    };
    if (address_region_path(addr, path, sizeof path) != 0) {
        fprintf(stderr, "ampd: --listen unix:%s: no room for its region socket's name (%s%s); "
                        "a shorter path, or --regions off\n",
                addr->path, addr->path, ADDRESS_REGION_SUFFIX);
        return -1;
    }
    if (region_listen(&srv->loop, path, access, srv->regions, &limits,
                      &srv->region_listeners[srv->nregion_listeners], err, sizeof err) != 0) {
        fprintf(stderr, "ampd: regions: %s\n", err);
        return -1;
    }
    srv->nregion_listeners++;
    fprintf(stderr, "ampd: regions on unix:%s\n", path);
    return 0;
}

static int server_listen(struct server *srv)
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
            fprintf(stderr, "ampd: --listen %s: %s\n", text, err);
            return -1;
        }
        srv->nlisteners++;
        fprintf(stderr, "ampd: listening on %s\n", text);
        if (srv->regions && addr.kind == ADDRESS_UNIX && server_listen_regions(srv, &addr, &access) != 0)
            return -1;
    }
    return 0;
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

/* Every connection is gone, so every call is: stop the runners (streams
 * still holding device state get their CLOSE then) and close the rest. */
static void server_finish(struct server *srv)
{
    if (srv->finished)
        return;
    srv->finished = true;
    if (srv->sched) {
        sched_close(srv->sched);
        srv->sched = NULL;
        srv->env.sched = NULL;
    }
    uv_close((uv_handle_t *)&srv->sigterm, NULL);
    uv_close((uv_handle_t *)&srv->sigint, NULL);
    uv_close((uv_handle_t *)&srv->drain_timer, NULL);
    uv_close((uv_handle_t *)&srv->sweep_timer, NULL);
}

/* Everything is drained or given up on: close the connections left, then
 * finish once their close callbacks have released their calls. */
static void server_stop(struct server *srv)
{
    if (srv->stopped)
        return;
    srv->stopped = true;
    uv_timer_stop(&srv->drain_timer);
    uv_timer_stop(&srv->sweep_timer);
    srv->conns.draining = true;   /* so that empty() reports the last close */
    if (srv->conns.head) {
        conn_close_all(&srv->conns);
        return;
    }
    server_finish(srv);
}

static void server_on_conns_empty(void *ctx)
{
    struct server *srv = ctx;
    if (srv->stopped)
        server_finish(srv);
    else
        server_stop(srv);
}

/* First the calls still open get a status (GOAWAY went out at the
 * drain's start), then, SERVER_DRAIN_FLUSH_MS later, whatever connection
 * is left is closed. */
static void server_on_drain_timeout(uv_timer_t *t)
{
    struct server *srv = t->data;
    if (srv->drain_expired) {
        fprintf(stderr, "ampd: drain: closing %u connections that did not take their status\n",
                srv->conns.count);
        server_stop(srv);
        return;
    }
    srv->drain_expired = true;
    fprintf(stderr, "ampd: drain timeout: ending the calls of %u connections\n", srv->conns.count);
    char msg[STATUS_MSG_MAX];
    snprintf(msg, sizeof(msg), "the daemon is shutting down: --drain-timeout (%u s) passed",
             srv->cfg->drain_timeout_ms / 1000);
    uv_timer_start(&srv->drain_timer, server_on_drain_timeout, SERVER_DRAIN_FLUSH_MS, 0);
    conn_fail_all(&srv->conns, STATUS_UNAVAILABLE, msg); /* may call server_on_conns_empty */
}

static void server_on_sweep(uv_timer_t *t)
{
    struct server *srv = t->data;
    conn_sweep(&srv->conns, rpc_now_ms(), srv->cfg->idle_timeout_ms);
}

/* Sweeps a few times per the shorter timeout (at least every second). */
static void server_start_sweep(struct server *srv)
{
    uint64_t shortest = srv->cfg->request_timeout_ms;
    if (srv->cfg->idle_timeout_ms && (!shortest || srv->cfg->idle_timeout_ms < shortest))
        shortest = srv->cfg->idle_timeout_ms;
    if (!shortest)
        return;
    uint64_t every = shortest / SERVER_SWEEPS_PER_TIMEOUT;
    if (every > SERVER_SWEEP_MAX_MS)
        every = SERVER_SWEEP_MAX_MS;
    if (every == 0)
        every = 1;
    uv_timer_start(&srv->sweep_timer, server_on_sweep, every, every);
}

static void server_on_signal(uv_signal_t *h, int signum)
{
    struct server *srv = h->data;
    if (srv->draining) {
        fprintf(stderr, "ampd: signal %d again: stopping now\n", signum);
        server_stop(srv);
        return;
    }
    fprintf(stderr, "ampd: signal %d: draining\n", signum);
    notify_state("STOPPING=1");
    srv->draining = true;
    srv->env.draining = true;
    uv_timer_stop(&srv->sweep_timer);   /* the drain closes connections now */
    server_close_listeners(srv);
    uv_timer_start(&srv->drain_timer, server_on_drain_timeout, srv->cfg->drain_timeout_ms, 0);
    conn_drain_all(&srv->conns); /* may call server_on_conns_empty at once */
}

static void server_init(struct server *srv, const struct config *cfg, size_t ndevs)
{
    srv->cfg = cfg;
    srv->env.max_message_bytes = (size_t)cfg->max_message_bytes;
    srv->env.start_ms = rpc_now_ms();
    srv->env.loop = &srv->loop;
    srv->conns.max = cfg->max_connections;
    srv->conns.max_per_peer = cfg->max_peer_connections;
    srv->budget = (struct budget){ .max = cfg->max_job_memory, .name = "--max-job-memory" };
    srv->conns.budget = &srv->budget;
    srv->conns.conn_memory = cfg->max_connection_memory;
    srv->env.budget = &srv->budget;
    srv->env.status_counts = srv->status_counts;
    if (cfg->regions) {
        struct region_limits rl = { .max_per_client = cfg->max_regions,
                                    .max_bytes = cfg->max_region_bytes };
        srv->regions = region_set_new(&rl, ndevs, dev_pinned_free);   /* NULL (no memory): regions off */
        srv->env.regions = srv->regions;
    }
    srv->conns.h2cfg = (struct h2_config){
        .max_message_bytes = (size_t)cfg->max_message_bytes,
        .max_streams = cfg->max_streams,
        .now_ms = rpc_now_ms,
        .request_timeout_ms = cfg->request_timeout_ms,
        .min_request_rate = cfg->min_request_rate,
        .status_counts = srv->status_counts,
    };
    srv->conns.env = &srv->env;
    srv->conns.empty = server_on_conns_empty;
    srv->conns.ctx = srv;
    uv_signal_init(&srv->loop, &srv->sigterm);
    uv_signal_init(&srv->loop, &srv->sigint);
    uv_timer_init(&srv->loop, &srv->drain_timer);
    uv_timer_init(&srv->loop, &srv->sweep_timer);
    srv->sigterm.data = srv->sigint.data = srv->drain_timer.data = srv->sweep_timer.data = srv;
}

int server_run(const struct config *cfg, struct dev **devs, size_t ndevs, size_t default_index)
{
    struct server *srv = calloc(1, sizeof(*srv));
    if (!srv || uv_loop_init(&srv->loop) != 0) {
        fprintf(stderr, "ampd: cannot start the event loop\n");
        free(srv);
        return 1;
    }
    server_init(srv, cfg, ndevs);
    int status = 0;
    char err[256];
    struct sched_limits limits = {
        .max_jobs = cfg->max_jobs,
        .staging_bytes = cfg->staging_bytes,
        .chunk_bytes = (size_t)cfg->chunk_bytes,
        .max_device_memory = cfg->max_device_memory,
    };
    if (sched_new(&srv->loop, devs, ndevs, default_index, &limits, &srv->sched, err, sizeof(err))
        != 0) {
        fprintf(stderr, "ampd: %s\n", err);
        status = 1;
    } else {
        srv->env.sched = srv->sched;
        if (server_listen(srv) != 0)
            status = 1;
    }
    if (status == 0) {
        uv_signal_start(&srv->sigterm, server_on_signal, SIGTERM);
        uv_signal_start(&srv->sigint, server_on_signal, SIGINT);
        server_start_sweep(srv);
        notify_state("READY=1"); /* devices found, kernels built, sockets listening */
        uv_run(&srv->loop, UV_RUN_DEFAULT);
    } else {
        server_close_listeners(srv);
        server_stop(srv);
    }
    /* Close callbacks still pending run here. */
    uv_run(&srv->loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&srv->loop) != 0)
        fprintf(stderr, "ampd: warning: handles left open at exit\n");
    region_set_free(srv->regions);   /* every job that used one is done */
    free(srv);
    return status;
}
