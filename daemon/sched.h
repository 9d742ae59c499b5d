/* SPDX-License-Identifier: MIT */
/* sched.h: the loop side of running jobs: placement, limits, completions.
 * Implemented by sched.c. daemon/ is a quote-only include directory
 * (-iquote), so this file does not shadow the system <sched.h> that <uv.h>
 * includes.
 *
 * One runner (runner.h) per device does the work on its own thread. The
 * scheduler is shared by every I/O loop (io_loop.h): it picks a device for
 * each job and refuses jobs over the daemon-wide limits (counters under
 * one lock). Each loop reaches it through its own port, struct
 * sched_port: a task submitted through a port remembers it (task->home),
 * and its completion, which a runner thread reports, is delivered on that
 * port's loop through a mutex-protected list and a uv_async wake-up, so a
 * call's job or stream only ever runs its done() on the loop that owns
 * the call. Nothing here blocks or calls OpenCL.
 */
#ifndef AMPD_SCHEDULER_H
#define AMPD_SCHEDULER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "dev.h"
#include "job.h"
#include "status.h"

struct sched;        /* shared: devices, runners, staging pools, limits */
struct sched_port;   /* one I/O loop's way in, and where its completions arrive */

struct sched_limits {
    uint32_t max_jobs;        /* jobs (unary or streamed) queued or running, daemon-wide */
    uint64_t staging_bytes;   /* pinned staging memory per device (streams) */
    size_t chunk_bytes;       /* one staging buffer: staging_bytes / chunk_bytes >= 1 */
    uint64_t max_device_memory; /* per device, reserved by jobs at once; 0: 90% of it */
    uint64_t host_max_bytes;  /* jobs this small, device left to the daemon, run on the host
                               * path (host.h); 0: never */
    uint32_t host_threads;    /* its worker threads (>= 1 when host_max_bytes is set) */
    uint64_t busy_poll_ns;    /* how long they and the runners poll before sleeping */
};

struct sched_stats {
    uint32_t jobs_in_flight;
    uint64_t jobs_completed;  /* finished with STATUS_OK */
    uint64_t jobs_failed;     /* finished with any other status */
};

/* Resolves a --device selection ("", an index, "gpu" or "cpu") to the index
 * of the default device: "" picks the first device (GPUs come first).
 * Returns 0, or -1 with a reason in err. */
int sched_pick_default(struct dev **devs, size_t ndevs, const char *sel, size_t *index,
                       char *err, size_t errlen);

/* Starts one runner per device and its staging pool. devs must outlive the
 * scheduler. Returns 0, or -1 with a reason in err. */
int sched_new(struct dev **devs, size_t ndevs, size_t default_index,
              const struct sched_limits *limits, struct sched **out, char *err, size_t errlen);

/* A port for loop: call it on loop's thread, or before that loop runs.
 * NULL when out of memory. */
struct sched_port *sched_port_new(struct sched *s, uv_loop_t *loop);

/* On p's loop: a task went out through p, or came back, less than
 * window_ns before now_ns (io_loop.c's --busy-poll). */
bool sched_port_busy(const struct sched_port *p, uint64_t now_ns, uint64_t window_ns);

/* On p's loop, outside any call's handler (conn.c, after a read): where a
 * job ran on this thread meanwhile (runner.c, runner_batch_here), delivers
 * the tasks completed so far now, so its reply leaves with that read's
 * flush, not after the loop's turn; otherwise nothing (completions from
 * other threads keep going out together at the turn's end). */
void sched_port_deliver(struct sched_port *p);

/* Stops every runner (the tasks in flight finish, queued ones complete
 * with CANCELLED, a CLOSE still frees its stream); later stream tasks are
 * finished at once on their port's loop. Call it once no loop has a call
 * left; completions still owed are delivered through the ports. */
void sched_stop(struct sched *s);

/* On p's loop, after sched_stop(): delivers the last completions (and
 * those they cause) and closes the port; its memory goes once the loop
 * runs the close callbacks. */
void sched_port_close(struct sched_port *p);

/* Frees the scheduler once every port is closed. */
void sched_free(struct sched *s);

/* The rest is for the rpc layer, on the port's loop. */

/* Places job (by job->device_req) and queues it on that device's runner.
 * job->done and job->owner must be set. Returns STATUS_OK (the scheduler
 * owns the job until it calls done), or a status with a message in msg, the
 * job still the caller's. */
enum status_code sched_submit(struct sched_port *p, struct job *job, char *msg, size_t msglen);
/* The call of a submitted unary job ended before the job was delivered:
 * it stops counting against --max-jobs, so calls reset in a flood cannot
 * hold every slot until the runner gets to them (it skips them when it
 * does; their memory stays counted in the daemon's budget until then). */
void sched_abandon(struct sched_port *p, struct job *job);

/* Streams (rpc_stream.c). A stream counts as one job in flight from
 * sched_stream_begin() to sched_stream_end(). begin places it (by
 * job->device_req) into *index, sets job->chunk_bytes, and refuses it as
 * sched_submit would; the stream then runs as tasks (task.h) submitted
 * with sched_stream_task(), each handed back through its done() on the
 * port's loop, in order. Its data lives in sched_staging(p, *index): the
 * device's staging pool as this loop sees it. */
struct staging_port;
enum status_code sched_stream_begin(struct sched_port *p, struct job *job, size_t *index,
                                    char *msg, size_t msglen);
void sched_stream_task(struct sched_port *p, size_t index, struct task *t);
/* job: the stream's, its t_start set once its OPEN started (0: never);
 * index: where begin placed it; opened: its OPEN went to
 * sched_stream_task (else the placement is let go here); device_ns: the
 * time any of its tasks was on the device (tenant_stats.h). */
void sched_stream_end(struct sched_port *p, const struct job *job, size_t index, bool opened,
                      uint64_t device_ns, bool ok);
struct staging_port *sched_staging(struct sched_port *p, size_t index);


size_t sched_ndevs(const struct sched_port *p);
const struct dev_info *sched_dev_info(const struct sched_port *p, size_t i);
size_t sched_default(const struct sched_port *p);
/* Device i's jobs and memory now (all zero once stopped). */
void sched_dev_load(const struct sched_port *p, size_t i, struct dev_load *out);
/* Daemon-wide: every loop's jobs. */
void sched_stats(const struct sched_port *p, struct sched_stats *out);

/* The same from any thread, without a port (metrics.c). */
void sched_totals(struct sched *s, struct sched_stats *out);

/* Queue and device time by client and priority, of every job delivered
 * and every stream ended (tenant_stats.h): from any thread, or a loop. */
struct tenant_stats *sched_tenants(struct sched *s);
struct tenant_stats *sched_port_tenants(const struct sched_port *p);

/* One device's load and memory, as metrics.c shows them. */
struct sched_device_usage {
    unsigned index;            /* dev_info's: ListDevices' index */
    const char *name;          /* the device's, as long as the scheduler */
    uint64_t jobs_queued;      /* dev_load's (sched_dev_load): waiting for the runner */
    uint64_t jobs_running;     /* and running on the device */
    uint64_t memory_reserved;  /* device bytes jobs hold now */
    uint64_t memory_capacity;  /* at most (--max-device-memory) */
    uint64_t staging_in_use;   /* pinned staging bytes streams hold */
    uint64_t staging_bytes;    /* the device's staging pool (--staging-bytes) */
};

/* Device i's usage from any thread. Returns 0, or -1 past the last device. */
int sched_device_usage(struct sched *s, size_t i, struct sched_device_usage *out);

/* --max-jobs from now on (SIGHUP); jobs already in flight stay. Any thread. */
void sched_set_max_jobs(struct sched *s, uint32_t max_jobs);

#endif
