/* SPDX-License-Identifier: MIT */
/* metrics_render.c: the daemon's counters as Prometheus text, exposition
 * format 0.0.4 (see metrics.h).
 *
 * Every family has its HELP and TYPE lines; counters end in _total, units
 * are in names (_seconds, _bytes). The stage histograms come from
 * stage_latency.h's power-of-two microsecond buckets: bucket i holds times under
 * 2^i us, so its cumulative count is the le="2^i us in seconds" line.
 */
#include "metrics.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "budget.h"
#include "call_class.h"
#include "conn_limit.h"
#include "grow.h"
#include "proc_stats.h"
#include "region.h"
#include "rpc.h"
#include "sched.h"
#include "stage_latency.h"
#include "tenant_stats.h"
#include "traffic.h"
#include "time_units.h"

#define METRICS_RENDER_START 16384   /* first buffer; it doubles as needed */
#define METRICS_US_PER_S 1e6
#define METRICS_LABEL_MAX 256        /* a label value, escaped */

struct metrics_buf {
    char *p;
    size_t len, cap;   /* p[len] is '\0'; len < cap */
    bool failed;       /* out of memory: the page is dropped */
};

static void metrics_printf(struct metrics_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void metrics_printf(struct metrics_buf *b, const char *fmt, ...)
{
    for (;;) {
        if (b->failed)
            return;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = true;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = grow_cap(b->cap, METRICS_RENDER_START, b->len + (size_t)n + 1);
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
}

static void metrics_family(struct metrics_buf *b, const char *name, const char *type,
                           const char *help)
{
    metrics_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value with \, " and newlines escaped, as the format wants. */
static void metrics_escape(const char *in, char *out, size_t outlen)
{
    size_t o = 0;
    for (; *in && o + 3 < outlen; in++) {
        if (*in == '\\' || *in == '"') {
            out[o++] = '\\';
            out[o++] = *in;
        } else if (*in == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else {
            out[o++] = *in;
        }
    }
    out[o] = '\0';
}

static void metrics_calls(struct metrics_buf *b, const struct traffic *t)
{
    metrics_family(b, "ampd_calls_total", "counter",
                   "gRPC calls answered, by method and status code (CANCELLED: the client left)");
    for (size_t m = 0; m < t->nmethods; m++) {
        for (int code = 0; code < STATUS_CODE_COUNT; code++) {
            uint64_t n = atomic_load_explicit(&t->calls[m][code], memory_order_relaxed);
            if (n)
                metrics_printf(b, "ampd_calls_total{method=\"%s\",code=\"%s\"} %llu\n",
                               traffic_method_name(t, m), status_name((enum status_code)code),
                               (unsigned long long)n);
        }
    }
    metrics_family(b, "ampd_received_bytes_total", "counter",
                   "bytes read from clients' sockets (TLS records included)");
    metrics_printf(b, "ampd_received_bytes_total %llu\n",
                   (unsigned long long)atomic_load(&t->bytes_in));
    metrics_family(b, "ampd_sent_bytes_total", "counter",
                   "bytes written to clients' sockets (TLS records included)");
    metrics_printf(b, "ampd_sent_bytes_total %llu\n",
                   (unsigned long long)atomic_load(&t->bytes_out));
}

/* Stage g's histogram as series of family name; label: `stage="run"`,
 * or "" (a family of one histogram). */
static void metrics_stage_hist(struct metrics_buf *b, const char *name, const char *label,
                               const struct stage_latency *s, enum stage g)
{
    const char *comma = label[0] ? "," : "";
    uint64_t cum = 0;
    for (int i = 0; i < STAGE_BUCKETS - 1; i++) {
        cum += atomic_load_explicit(&s->buckets[g][i], memory_order_relaxed);
        metrics_printf(b, "%s_bucket{%s%sle=\"%.7g\"} %llu\n", name, label, comma,
                       (double)(1ull << i) / METRICS_US_PER_S, (unsigned long long)cum);
    }
    uint64_t sum_us = atomic_load_explicit(&s->sum_us[g], memory_order_relaxed);
    /* The count is the +Inf bucket's, as the format wants; stage_latency.h's
     * calls counter is bumped apart from the buckets and may differ
     * for a moment. */
    cum += atomic_load_explicit(&s->buckets[g][STAGE_BUCKETS - 1], memory_order_relaxed);
    metrics_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, label, comma,
                   (unsigned long long)cum);
    const char *open = label[0] ? "{" : "", *close = label[0] ? "}" : "";
    metrics_printf(b, "%s_sum%s%s%s %.6f\n", name, open, label, close,
                   (double)sum_us / METRICS_US_PER_S);
    metrics_printf(b, "%s_count%s%s%s %llu\n", name, open, label, close, (unsigned long long)cum);
}

static void metrics_stages(struct metrics_buf *b, const struct stage_latency *s)
{
    const char *name = "ampd_call_stage_duration_seconds";
    metrics_family(b, name, "histogram",
                   "time unary job calls spent in each stage (request, queue, run, deliver, "
                   "reply) and in all (total)");
    for (int g = 0; g < STAGE_COUNT; g++) {
        if (g == STAGE_LOOP_TURN)
            continue;   /* not a call's: its own family, below */
        char label[64];
        snprintf(label, sizeof label, "stage=\"%s\"", stage_latency_name((enum stage)g));
        metrics_stage_hist(b, name, label, s, (enum stage)g);
    }
    name = "ampd_loop_turn_duration_seconds";
    metrics_family(b, name, "histogram",
                   "how long I/O loops ran from one wait for events to the next: a call "
                   "arriving on a loop meanwhile waits for its turn to end");
    metrics_stage_hist(b, name, "", s, STAGE_LOOP_TURN);
}

static void metrics_jobs(struct metrics_buf *b, struct sched *s)
{
    struct sched_stats st = { 0 };
    sched_totals(s, &st);
    metrics_family(b, "ampd_jobs_total", "counter", "jobs finished, by result");
    metrics_printf(b, "ampd_jobs_total{result=\"ok\"} %llu\n",
                   (unsigned long long)st.jobs_completed);
    metrics_printf(b, "ampd_jobs_total{result=\"failed\"} %llu\n",
                   (unsigned long long)st.jobs_failed);
    metrics_family(b, "ampd_jobs_in_flight", "gauge",
                   "jobs and streams queued or running, daemon-wide (--max-jobs)");
    metrics_printf(b, "ampd_jobs_in_flight %u\n", st.jobs_in_flight);
}

/* One client's histogram at one priority, in stage_latency.h's buckets. */
static void metrics_tenant_hist(struct metrics_buf *b, const char *name, const char *client,
                                enum job_priority prio, const struct tenant_hist *h)
{
    const char *pn = call_class_priority_name((int)prio);
    uint64_t cum = 0;
    for (int i = 0; i < STAGE_BUCKETS - 1; i++) {
        cum += h->buckets[i];
        metrics_printf(b, "%s_bucket{client=\"%s\",priority=\"%s\",le=\"%.7g\"} %llu\n", name,
                       client, pn, (double)(1ull << i) / METRICS_US_PER_S,
                       (unsigned long long)cum);
    }
    cum += h->buckets[STAGE_BUCKETS - 1];
    metrics_printf(b, "%s_bucket{client=\"%s\",priority=\"%s\",le=\"+Inf\"} %llu\n", name,
                   client, pn, (unsigned long long)cum);
    metrics_printf(b, "%s_sum{client=\"%s\",priority=\"%s\"} %.6f\n", name, client, pn,
                   (double)h->sum_us / METRICS_US_PER_S);
    metrics_printf(b, "%s_count{client=\"%s\",priority=\"%s\"} %llu\n", name, client, pn,
                   (unsigned long long)cum);
}

/* Queue and device time by client and priority (tenant_stats.h): a
 * series per client and priority that ran a job, at most
 * TENANT_STATS_ROWS clients. */
static void metrics_tenants(struct metrics_buf *b, struct sched *s)
{
    struct tenant_row *rows = malloc(TENANT_STATS_ROWS * sizeof(*rows));
    if (!rows) {
        b->failed = true;
        return;
    }
    size_t n = tenant_stats_snapshot(sched_tenants(s), rows);
    static const struct {
        const char *name, *help;
        bool device;   /* the device histogram, else the queue's */
    } families[] = {
        { "ampd_client_queue_seconds", "time jobs waited from submission to start (a stream: "
          "its OPEN), by client and priority; the first clients (a fixed number) have "
          "their own series, later ones count as client=\"other\"", false },
        { "ampd_client_device_seconds", "time jobs ran, start to done (a stream: the time any "
          "of its chunks was on the device), by client and priority", true },
    };
    for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
        metrics_family(b, families[f].name, "histogram", families[f].help);
        for (size_t i = 0; i < n; i++) {
            char client[METRICS_LABEL_MAX];
            metrics_escape(rows[i].client, client, sizeof client);
            for (int p = 0; p < JOB_PRIORITIES; p++) {
                const struct tenant_hist *h =
                    families[f].device ? &rows[i].device[p] : &rows[i].queue[p];
                if (h->count)
                    metrics_tenant_hist(b, families[f].name, client, (enum job_priority)p, h);
            }
        }
    }
    free(rows);
}

/* The per-device gauges: a family each, a line per device. */
static const struct {
    const char *name, *help;
    size_t offset;   /* of its uint64_t in struct sched_device_usage */
} metrics_device_gauges[] = {
    { "ampd_device_jobs_queued", "jobs waiting for the device's runner (or its memory)",
      offsetof(struct sched_device_usage, jobs_queued) },
    { "ampd_device_jobs_running", "jobs running on the device",
      offsetof(struct sched_device_usage, jobs_running) },
    { "ampd_device_memory_reserved_bytes", "device memory jobs hold reserved now",
      offsetof(struct sched_device_usage, memory_reserved) },
    { "ampd_device_memory_capacity_bytes",
      "device memory jobs may reserve at once (--max-device-memory)",
      offsetof(struct sched_device_usage, memory_capacity) },
    { "ampd_staging_in_use_bytes", "pinned staging memory streams hold now",
      offsetof(struct sched_device_usage, staging_in_use) },
    { "ampd_staging_bytes", "pinned staging memory (--staging-bytes)",
      offsetof(struct sched_device_usage, staging_bytes) },
};

static void metrics_devices(struct metrics_buf *b, struct sched *s)
{
    for (size_t g = 0; g < sizeof(metrics_device_gauges) / sizeof(metrics_device_gauges[0]); g++) {
        metrics_family(b, metrics_device_gauges[g].name, "gauge", metrics_device_gauges[g].help);
        struct sched_device_usage u;
        for (size_t i = 0; sched_device_usage(s, i, &u) == 0; i++) {
            char dev[METRICS_LABEL_MAX];
            metrics_escape(u.name, dev, sizeof dev);
            uint64_t v;
            memcpy(&v, (const char *)&u + metrics_device_gauges[g].offset, sizeof v);
            metrics_printf(b, "%s{device=\"%u\",name=\"%s\"} %llu\n",
                           metrics_device_gauges[g].name, u.index, dev, (unsigned long long)v);
        }
    }
}

static void metrics_token_line(void *ctx, const char *name, uint64_t calls)
{
    /* Token names are letters, digits and . _ @ - (auth_file.h): safe in a label. */
    metrics_printf(ctx, "ampd_token_calls_total{token=\"%s\"} %llu\n", name,
                   (unsigned long long)calls);
}

static void metrics_gauge(struct metrics_buf *b, const char *name, const char *help, double v)
{
    metrics_family(b, name, "gauge", help);
    metrics_printf(b, "%s %.17g\n", name, v);
}

/* The process_* series (proc_stats.h); none when /proc cannot be read. */
static void metrics_process(struct metrics_buf *b)
{
    struct proc_stats ps;
    if (proc_stats_read(&ps) != 0)
        return;
    metrics_family(b, "process_cpu_seconds_total", "counter", "user and system CPU time");
    metrics_printf(b, "process_cpu_seconds_total %.17g\n", ps.cpu_seconds);
    metrics_gauge(b, "process_start_time_seconds", "start time, seconds since the epoch",
                  ps.start_time_s);
    metrics_gauge(b, "process_resident_memory_bytes", "resident memory",
                  (double)ps.resident_bytes);
    metrics_gauge(b, "process_virtual_memory_bytes", "virtual memory", (double)ps.virtual_bytes);
    metrics_gauge(b, "process_threads", "threads", (double)ps.threads);
    metrics_gauge(b, "process_open_fds", "open file descriptors", (double)ps.open_fds);
    metrics_gauge(b, "process_max_fds", "the descriptor limit (RLIMIT_NOFILE)",
                  (double)ps.max_fds);
}

char *metrics_render(const struct metrics_sources *src, size_t *len)
{
    struct metrics_buf b = { .p = malloc(METRICS_RENDER_START), .cap = METRICS_RENDER_START };
    if (!b.p)
        return NULL;
    b.p[0] = '\0';
    metrics_family(&b, "ampd_build_info", "gauge", "the daemon's version, as a label");
    metrics_printf(&b, "ampd_build_info{version=\"%s\"} 1\n", AMP_VERSION);
    metrics_gauge(&b, "ampd_uptime_seconds", "seconds since the daemon started",
                  (double)(rpc_now_ms() - src->start_ms) / TIME_MS_PER_S);
    metrics_calls(&b, src->traffic);
    metrics_stages(&b, src->stages);
    if (src->sched) {
        metrics_jobs(&b, src->sched);
        metrics_tenants(&b, src->sched);
        metrics_devices(&b, src->sched);
    }
    metrics_gauge(&b, "ampd_connections", "client connections open now",
                  conn_limit_count(src->conn_limit));
    metrics_family(&b, "ampd_connections_refused_total", "counter",
                   "connections refused, or failed before HTTP/2 began, by reason");
    for (int i = 0; i < CONN_REFUSAL_COUNT; i++)
        metrics_printf(&b, "ampd_connections_refused_total{reason=\"%s\"} %" PRIu64 "\n",
                       conn_refusal_label((enum conn_refusal)i),
                       conn_refusal_count(&src->conn_limit->refusals, (enum conn_refusal)i));
    metrics_family(&b, "ampd_loop_connections", "gauge",
                   "connections each I/O loop serves now, by loop (--io-threads)");
    for (size_t i = 0; i < src->nloops; i++)
        metrics_printf(&b, "ampd_loop_connections{loop=\"%zu\"} %u\n", i,
                       atomic_load(&src->loop_conns[i]));
    metrics_gauge(&b, "ampd_held_bytes",
                  "bytes held for clients now: requests, jobs' data, replies (--max-job-memory)",
                  (double)budget_used(src->budget));
    if (src->regions) {
        metrics_gauge(&b, "ampd_regions", "shared-memory regions registered now",
                      (double)region_set_count(src->regions));
        metrics_gauge(&b, "ampd_region_bytes", "bytes of regions mapped now (--max-region-bytes)",
                      (double)region_set_bytes(src->regions));
    }
    if (src->auth) {
        metrics_family(&b, "ampd_token_calls_total", "counter",
                       "calls that carried each --token-file token, by its name");
        auth_token_calls(src->auth, metrics_token_line, &b);
        metrics_family(&b, "ampd_auth_failures_total", "counter",
                       "calls refused for who sent them, by reason");
        for (int i = 0; i < AUTH_FAILURE_COUNT; i++)
            metrics_printf(&b, "ampd_auth_failures_total{reason=\"%s\"} %" PRIu64 "\n",
                           auth_failure_label((enum auth_failure)i),
                           auth_failures(src->auth, (enum auth_failure)i));
    }
    metrics_process(&b);
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return b.p;
}
