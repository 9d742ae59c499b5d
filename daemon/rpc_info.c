/* SPDX-License-Identifier: MIT */
/* rpc_info.c: ListDevices and Status, the daemon describing itself.
 *
 * Both answer at once from the call's loop thread: device facts were
 * gathered by dev_open_all() at startup; the counters are daemon-wide
 * (every loop's), kept under locks or as atomics in the scheduler, the
 * connection limit, the budget and the status counts.
 */
#include "rpc.h"

#include <stdlib.h>
#include <sys/resource.h>

#include "amp.pb-c.h"
#include "budget.h"
#include "call_class.h"
#include "conn_limit.h"
#include "sched.h"
#include "stage_latency.h"
#include "staging.h"
#include "tenant_stats.h"

#define RPC_INFO_KIB 1024
/* Status's client_times entries at most: every row at every priority. */
#define RPC_INFO_CLIENT_TIMES (TENANT_STATS_ROWS * JOB_PRIORITIES)

/* Device i's load as the proto says it, in *l. */
static void rpc_info_device_load(struct sched_port *s, size_t i, Amp__V1__DeviceLoad *l)
{
    struct dev_load load;
    sched_dev_load(s, i, &load);
    amp__v1__device_load__init(l);
    l->jobs_running = load.jobs_running;
    l->jobs_queued = load.jobs_queued;
    l->memory_in_use = load.memory_in_use;
    l->memory_capacity = load.memory_capacity;
}

void rpc_list_devices(struct rpc_call *rc, ProtobufCMessage *req)
{
    (void)req;
    struct sched_port *s = rc->env->sched;
    size_t n = s ? sched_ndevs(s) : 0;
    Amp__V1__Device *devs = calloc(n ? n : 1, sizeof(*devs));
    Amp__V1__Device **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
    Amp__V1__DeviceLoad *loads = calloc(n ? n : 1, sizeof(*loads));
    if (!devs || !ptrs || !loads) {
        free(devs);
        free(ptrs);
        free(loads);
        rpc_fail(rc, STATUS_RESOURCE_EXHAUSTED, "out of memory listing devices");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct dev_info *di = sched_dev_info(s, i);
        Amp__V1__Device *d = &devs[i];
        amp__v1__device__init(d);
        d->index = di->index;
        d->name = (char *)di->name;
        d->vendor = (char *)di->vendor;
        d->platform = (char *)di->platform;
        d->type = (char *)dev_type_name(di->type);
        d->global_mem_size = di->global_mem_size;
        d->max_constant_buffer_size = di->max_constant_buffer_size;
        d->max_work_group_size = di->max_work_group_size;
        d->compute_units = di->compute_units;
        d->is_default = i == sched_default(s);
        d->kernels = (char *)di->kernels;
        rpc_info_device_load(s, i, &loads[i]);
        d->load = &loads[i];
        ptrs[i] = d;
    }
    Amp__V1__ListDevicesReply reply = AMP__V1__LIST_DEVICES_REPLY__INIT;
    reply.n_devices = n;
    reply.devices = ptrs;
    rpc_reply(rc, &reply.base);
    free(loads);
    free(ptrs);
    free(devs);
}

/* Status's client_times: an entry per client and priority that ran a
 * job, pointing into rows (which must outlive the reply); times and
 * ptrs have room for RPC_INFO_CLIENT_TIMES. Returns how many. */
static size_t rpc_info_client_times(struct rpc_call *rc, struct tenant_row *rows,
                                    Amp__V1__ClientTimes *times, Amp__V1__ClientTimes **ptrs)
{
    size_t nrows = rc->env->sched ? tenant_stats_snapshot(sched_port_tenants(rc->env->sched),
                                                          rows) : 0;
    size_t n = 0;
    for (size_t i = 0; i < nrows; i++) {
        for (int p = 0; p < JOB_PRIORITIES; p++) {
            struct tenant_hist *q = &rows[i].queue[p], *d = &rows[i].device[p];
            if (!q->count)
                continue;
            Amp__V1__ClientTimes *t = &times[n];
            amp__v1__client_times__init(t);
            t->client = rows[i].client;
            t->priority = (char *)call_class_priority_name((int)p);
            t->jobs = q->count;
            t->queue_sum_us = q->sum_us;
            t->n_queue_buckets = STAGE_BUCKETS;
            t->queue_buckets = q->buckets;
            t->device_sum_us = d->sum_us;
            t->n_device_buckets = STAGE_BUCKETS;
            t->device_buckets = d->buckets;
            ptrs[n++] = t;
        }
    }
    return n;
}

void rpc_status(struct rpc_call *rc, ProtobufCMessage *req)
{
    (void)req;
    struct sched_stats st = { 0 };
    if (rc->env->sched)
        sched_stats(rc->env->sched, &st);
    Amp__V1__StatusReply reply = AMP__V1__STATUS_REPLY__INIT;
    reply.version = (char *)AMP_VERSION;
    reply.uptime_ms = rpc_now_ms() - rc->env->start_ms;
    reply.connections = conn_limit_count(rc->env->conn_limit);
    reply.jobs_in_flight = st.jobs_in_flight;
    reply.jobs_completed = st.jobs_completed;
    reply.jobs_failed = st.jobs_failed;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        reply.peak_rss_bytes = (uint64_t)ru.ru_maxrss * RPC_INFO_KIB;   /* Linux: KiB */
    if (rc->env->budget)
        reply.held_bytes = budget_used(rc->env->budget);
    for (size_t i = 0; rc->env->sched && i < sched_ndevs(rc->env->sched); i++) {
        struct staging_port *p = sched_staging(rc->env->sched, i);
        reply.staging_bytes_in_use +=
            (uint64_t)(staging_count(p) - staging_free_count(p)) * staging_buf_size(p);
    }
    Amp__V1__StageLatency stages[STAGE_COUNT], *stage_ptrs[STAGE_COUNT];
    uint64_t buckets[STAGE_COUNT][STAGE_BUCKETS];
    for (int g = 0; rc->env->stages && g < STAGE_COUNT; g++) {
        const struct stage_latency *s = rc->env->stages;
        Amp__V1__StageLatency *l = &stages[g];
        amp__v1__stage_latency__init(l);
        l->stage = (char *)stage_latency_name((enum stage)g);
        l->calls = atomic_load_explicit(&s->calls[g], memory_order_relaxed);
        l->sum_us = atomic_load_explicit(&s->sum_us[g], memory_order_relaxed);
        for (int b = 0; b < STAGE_BUCKETS; b++)
            buckets[g][b] = atomic_load_explicit(&s->buckets[g][b], memory_order_relaxed);
        l->n_buckets = STAGE_BUCKETS;
        l->buckets = buckets[g];
        stage_ptrs[reply.n_stages++] = l;
    }
    reply.stages = stage_ptrs;
    Amp__V1__StatusCount counts[STATUS_CODE_COUNT], *ptrs[STATUS_CODE_COUNT];
    const struct status_counts *by = rc->env->status_counts;
    for (int code = 0; by && code < STATUS_CODE_COUNT; code++) {
        uint64_t calls = status_counted(by, (enum status_code)code);
        if (!calls)
            continue;
        Amp__V1__StatusCount *c = &counts[reply.n_calls_by_status];
        amp__v1__status_count__init(c);
        c->code = (char *)status_name((enum status_code)code);
        c->calls = calls;
        ptrs[reply.n_calls_by_status++] = c;
    }
    reply.calls_by_status = ptrs;
    size_t ndevs = rc->env->sched ? sched_ndevs(rc->env->sched) : 0;
    Amp__V1__DeviceLoad *loads = calloc(ndevs ? ndevs : 1, sizeof(*loads));
    Amp__V1__DeviceLoad **load_ptrs = calloc(ndevs ? ndevs : 1, sizeof(*load_ptrs));
    uint32_t *per_loop = calloc(rc->env->nloops ? rc->env->nloops : 1, sizeof(*per_loop));
    struct tenant_row *rows = malloc(TENANT_STATS_ROWS * sizeof(*rows));
    Amp__V1__ClientTimes *times = malloc(RPC_INFO_CLIENT_TIMES * sizeof(*times));
    Amp__V1__ClientTimes **time_ptrs = malloc(RPC_INFO_CLIENT_TIMES * sizeof(*time_ptrs));
    if (!loads || !load_ptrs || !per_loop || !rows || !times || !time_ptrs) {
        free(loads);
        free(load_ptrs);
        free(per_loop);
        free(rows);
        free(times);
        free(time_ptrs);
        rpc_fail(rc, STATUS_RESOURCE_EXHAUSTED, "out of memory reporting loads");
        return;
    }
    for (size_t i = 0; i < rc->env->nloops; i++)
        per_loop[i] = atomic_load(&rc->env->loop_conns[i]);
    reply.n_loop_connections = rc->env->nloops;
    reply.loop_connections = per_loop;
    for (size_t i = 0; i < ndevs; i++) {
        rpc_info_device_load(rc->env->sched, i, &loads[i]);
        load_ptrs[i] = &loads[i];
    }
    reply.n_device_loads = ndevs;
    reply.device_loads = load_ptrs;
    reply.n_client_times = rpc_info_client_times(rc, rows, times, time_ptrs);
    reply.client_times = time_ptrs;
    rpc_reply(rc, &reply.base);
    free(rows);
    free(times);
    free(time_ptrs);
    free(per_loop);
    free(load_ptrs);
    free(loads);
}
