/* scheduler.h: the loop side of running jobs: placement, limits, completions.
 * Implemented by sched.c; not named sched.h because that would shadow the
 * system <sched.h>, which <uv.h> includes, for every file of the daemon.
 *
 * One runner (runner.h) per device does the work on its own thread. The
 * scheduler lives on the loop thread: it picks a device for each job,
 * refuses jobs over the daemon-wide limits, and turns runner completions
 * (which arrive on runner threads) into job->done(job) calls on the loop,
 * through a mutex-protected list and a uv_async wake-up. Nothing here
 * blocks or calls OpenCL.
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

struct sched;

struct sched_limits {
    uint32_t max_jobs;        /* jobs (unary or streamed) queued or running, daemon-wide */
    uint64_t staging_bytes;   /* pinned staging memory per device (streams) */
    size_t chunk_bytes;       /* one staging buffer: staging_bytes / chunk_bytes >= 1 */
    uint64_t max_device_memory; /* per device, reserved by jobs at once; 0: 90% of it */
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

/* Starts one runner per device. devs must outlive the scheduler. Returns 0,
 * or -1 with a reason in err. */
int sched_new(uv_loop_t *loop, struct dev **devs, size_t ndevs, size_t default_index,
              const struct sched_limits *limits, struct sched **out, char *err, size_t errlen);

/* Places job (by job->device_req) and queues it on that device's runner.
 * job->done and job->owner must be set. Returns STATUS_OK (the scheduler
 * owns the job until it calls done), or a status with a message in msg, the
 * job still the caller's. */
enum status_code sched_submit(struct sched *s, struct job *job, char *msg, size_t msglen);
/* The call of a submitted unary job ended before the job was delivered:
 * it stops counting against --max-jobs, so calls reset in a flood cannot
 * hold every slot until the runner gets to them (it skips them when it
 * does; their memory stays counted in the daemon's budget until then). */
void sched_abandon(struct sched *s, struct job *job);

/* Streams (rpc_stream.c). A stream counts as one job in flight from
 * sched_stream_begin() to sched_stream_end(). begin places it (by
 * job->device_req) into *index, sets job->chunk_bytes, and refuses it as
 * sched_submit would; the stream then runs as tasks (task.h) submitted
 * with sched_stream_task(), each handed back through its done() on the
 * loop, in order. Its data lives in sched_staging(s, *index). */
struct staging_pool;
enum status_code sched_stream_begin(struct sched *s, struct job *job, size_t *index, char *msg,
                                    size_t msglen);
void sched_stream_task(struct sched *s, size_t index, struct task *t);
void sched_stream_end(struct sched *s, bool ok);
struct staging_pool *sched_staging(struct sched *s, size_t index);


size_t sched_ndevs(const struct sched *s);
const struct dev_info *sched_dev_info(const struct sched *s, size_t i);
size_t sched_default(const struct sched *s);
void sched_stats(const struct sched *s, struct sched_stats *out);

/* Stops every runner (the job in hand finishes, queued ones complete with
 * CANCELLED), delivers the last completions, and closes the uv_async; the
 * scheduler is freed once the loop runs its close callback. */
void sched_close(struct sched *s);

#endif
