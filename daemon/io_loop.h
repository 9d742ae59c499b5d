/* SPDX-License-Identifier: MIT */
/* io_loop.h: one I/O loop: a libuv loop and the connections it owns.
 *
 * ampd serves connections on --io-threads loops. Loop 0 runs on the main
 * thread's loop (server.c's, which also has the listeners, signals and
 * region sockets); every other loop has a thread of its own. A loop owns
 * its connections end to end: their sockets, HTTP/2 sessions and calls,
 * the calls' deadline timers and streams, its --request-timeout and
 * --idle-timeout sweep, and its port into the scheduler, where its jobs'
 * completions arrive (sched.h). What loops share (limits, budget,
 * counters, scheduler, regions) is thread-safe on its own.
 *
 * The server reaches a loop only through io_loop_accept(), io_loop_load()
 * and the commands below, callable from any thread: they queue under the
 * loop's lock and wake it with a uv_async. The loop answers through the
 * empty() callback, on its own thread.
 */
#ifndef AMPD_IO_LOOP_H
#define AMPD_IO_LOOP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "listen.h"
#include "status.h"

struct budget;
struct conn_limit;
struct region_set;
struct sched;
struct tls_server;
struct auth;
struct client_share;
struct traffic;
struct io_loop;

/* What every loop is given; all of it outlives the loops. */
struct io_loop_shared {
    const struct config *cfg;
    struct sched *sched;                 /* NULL: no devices, or none yet (starting) */
    bool starting;                       /* the devices open meanwhile: io_loop_attach() */
    struct budget *budget;               /* the daemon's (--max-job-memory), locked */
    struct conn_limit *conn_limit;       /* --max-connections, --max-peer-connections */
    struct status_counts *status_counts; /* calls answered, by status */
    struct stage_latency *stages;          /* unary job calls' stage latencies (stage_latency.h) */
    struct traffic *traffic;             /* calls by method, bytes (traffic.h); NULL: none */
    struct region_set *regions;          /* NULL: regions off */
    struct tls_server *tls;              /* NULL: no tls: listener */
    struct auth *auth;                   /* who may call (auth.h); NULL: anyone */
    struct client_share *shares;         /* per-client calls and jobs; NULL: not counted */
    uint64_t start_ms;                   /* for Status.uptime_ms */
    atomic_uint *loop_conns;             /* connections on each loop, by index (io_loop_load, */
    size_t nloops;                       /* Status.loop_connections) */
    /* On the loop's thread, once per loop: it was told to drain or stop
     * and its last connection is gone. */
    void (*empty)(void *ctx);
    /* On the loop's thread, once, after io_loop_attach(): ok is whether
     * the loop made its port (false: out of memory). */
    void (*attached)(void *ctx, bool ok);
    void *ctx;
};

/* Loop index: on main_loop (loop 0: no thread of its own), or on a new
 * libuv loop whose thread, named "ampd-ioINDEX", io_loop_start() starts
 * (main_loop NULL). Everything the loop needs is made here, before it
 * runs. Returns 0, or -1 with a reason in err. */
int io_loop_new(const struct io_loop_shared *sh, unsigned index, uv_loop_t *main_loop,
                struct io_loop **out, char *err, size_t errlen);

/* Starts the loop's thread (a no-op for loop 0). Returns 0, or -1 with a
 * reason in err; the loop is then still only io_loop_free()'s. */
int io_loop_start(struct io_loop *l, char *err, size_t errlen);

/* Runs the loop on the calling thread until its handles close: loop 0's
 * on the main thread (server.c), the others' on their own. With
 * --busy-poll it polls instead of sleeping for that long after one of the
 * loop's jobs went out or came back. */
void io_loop_run(struct io_loop *l);

/* Hands the loop an accepted connection fd (listen.h), which it serves or
 * refuses. The acceptor's thread: the fd is admitted against the
 * connection limits here, in accept order (conn_admit); on loop 0 it is
 * taken at once, on the others once the loop wakes. kind: the listener's
 * (a tls: one's speak TLS: conn_accept). Returns whether admitting it marked an
 * unauthenticated connection, on any loop, to give its place
 * (conn_limit.h): the caller then calls io_loop_evict() on every loop. */
bool io_loop_accept(struct io_loop *l, int fd, struct listen_kind kind);

/* The loop closes its connections marked to give their place (conn_evict)
 * when it next wakes. Any thread. */
void io_loop_evict(struct io_loop *l);

/* Connections the loop holds or has been handed: the acceptor gives the
 * next one to the loop with the fewest, and Status reports it. Any thread. */
unsigned io_loop_load(struct io_loop *l);

/* Commands, from any thread, carried out on the loop in this order when
 * several are pending:
 *   attach: the devices are open: the loop makes its own port into sched
 *           (sched_port_new on its own thread, so the port's loop_wake and
 *           staging ports belong to it), and its jobs run; it then calls
 *           attached();
 *   ready:  every loop has attached: health turns SERVING (Health/Watch
 *           streams are told), so that SERVING on one connection means
 *           jobs run on any;
 *   drain:  health says NOT_SERVING, every connection gets a GOAWAY and
 *           closes once its calls are answered;
 *   fail:   every call still open ends with UNAVAILABLE and msg;
 *   stop:   every connection closes now;
 *   finish: after every loop reported empty and sched_stop(): the last
 *           completions are delivered and the loop's handles close, which
 *           ends its thread. */
void io_loop_attach(struct io_loop *l, struct sched *sched);
void io_loop_ready(struct io_loop *l);
void io_loop_drain(struct io_loop *l);
void io_loop_fail(struct io_loop *l, const char *msg);
void io_loop_stop(struct io_loop *l);
void io_loop_finish(struct io_loop *l);

/* Waits for the loop's thread to end (after finish), closes its libuv
 * loop, and frees it. For loop 0, once the main loop has run the close
 * callbacks. */
void io_loop_free(struct io_loop *l);

#endif
