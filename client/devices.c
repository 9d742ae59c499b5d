/* SPDX-License-Identifier: MIT */
/* devices.c: the daemon's introspection calls: ListDevices and Status of
 * amp.v1.Amp, and the standard grpc.health.v1.Health/Check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "amp.pb-c.h"
#include "amp_wire.h"
#include "call.h"
#include "conn.h"
#include "error.h"
#include "grpc/health/v1/health.pb-c.h"
#include "jobs.h"

#define DEVICES_PATH_LIST "/amp.v1.Amp/ListDevices"
#define DEVICES_PATH_STATUS "/amp.v1.Amp/Status"
#define DEVICES_PATH_HEALTH "/grpc.health.v1.Health/Check"

#define DEVICES_COPY(dst, src) snprintf((dst), sizeof(dst), "%s", (src) ? (src) : "")

/* The three calls' common part: o checked, then path called with req
 * under o's timeout; *reply as call_unary() gives it. */
static int devices_call(amp_conn *c, const amp_opts *o, const char *path,
                        const ProtobufCMessage *req, const ProtobufCMessageDescriptor *desc,
                        ProtobufCMessage **reply)
{
    int rc = jobs_check_opts(c, o);
    return rc != 0 ? rc : call_unary(c, path, req, jobs_timeout(o), desc, reply);
}

static void devices_copy_load(amp_device_load *d, const Amp__V1__DeviceLoad *s)
{
    if (!s)
        return;
    d->jobs_running = s->jobs_running;
    d->jobs_queued = s->jobs_queued;
    d->memory_in_use = s->memory_in_use;
    d->memory_capacity = s->memory_capacity;
}

static void devices_copy_one(amp_device *d, const Amp__V1__Device *s)
{
    d->index = s->index;
    DEVICES_COPY(d->name, s->name);
    DEVICES_COPY(d->vendor, s->vendor);
    DEVICES_COPY(d->platform, s->platform);
    DEVICES_COPY(d->type, s->type);
    d->global_mem_size = s->global_mem_size;
    d->max_constant_buffer_size = s->max_constant_buffer_size;
    d->max_work_group_size = s->max_work_group_size;
    d->compute_units = s->compute_units;
    d->is_default = s->is_default ? 1 : 0;
    DEVICES_COPY(d->kernels, s->kernels);
    devices_copy_load(&d->load, s->load);
}

int amp_devices(amp_conn *c, const amp_opts *o, amp_device **list, size_t *n)
{
    if (!c)
        return AMP_EINVAL;
    conn_begin(c);
    if (!list || !n)
        return conn_fail(c, AMP_EINVAL, "list and n must not be NULL");
    *list = NULL;
    *n = 0;
    Amp__V1__ListDevicesRequest req = AMP__V1__LIST_DEVICES_REQUEST__INIT;
    ProtobufCMessage *msg;
    int rc = devices_call(c, o, DEVICES_PATH_LIST, &req.base,
                          &amp__v1__list_devices_reply__descriptor, &msg);
    if (rc != 0)
        return rc;
    Amp__V1__ListDevicesReply *r = (Amp__V1__ListDevicesReply *)msg;
    amp_device *out = calloc(r->n_devices ? r->n_devices : 1, sizeof *out);
    if (!out) {
        protobuf_c_message_free_unpacked(msg, NULL);
        return conn_fail(c, AMP_ENOMEM, "out of memory for %zu devices", r->n_devices);
    }
    for (size_t i = 0; i < r->n_devices; i++)
        devices_copy_one(&out[i], r->devices[i]);
    *list = out;
    *n = r->n_devices;
    protobuf_c_message_free_unpacked(msg, NULL);
    return 0;
}

/* The bucket's upper edge in us below which a share p of count calls
 * fell, from n power-of-two buckets (amp.proto's StageLatency buckets). */
static uint64_t devices_pct(const uint64_t *buckets, size_t n, uint64_t count, double p)
{
    uint64_t want = (uint64_t)(p * (double)count + 0.5), seen = 0;
    for (size_t i = 0; i < n && i < 63; i++) {
        seen += buckets[i];
        if (seen >= want && seen)
            return (uint64_t)1 << i;
    }
    return 0;
}

static void devices_stage(amp_stage_latency *out, const Amp__V1__StageLatency *l)
{
    DEVICES_COPY(out->stage, l->stage);
    out->calls = l->calls;
    out->sum_us = l->sum_us;
    out->p50_us = devices_pct(l->buckets, l->n_buckets, l->calls, 0.50);
    out->p90_us = devices_pct(l->buckets, l->n_buckets, l->calls, 0.90);
    out->p99_us = devices_pct(l->buckets, l->n_buckets, l->calls, 0.99);
}

static void devices_client_times(amp_client_times *out, const Amp__V1__ClientTimes *t)
{
    DEVICES_COPY(out->client, t->client);
    DEVICES_COPY(out->priority, t->priority);
    out->jobs = t->jobs;
    out->queue_sum_us = t->queue_sum_us;
    out->queue_p50_us = devices_pct(t->queue_buckets, t->n_queue_buckets, t->jobs, 0.50);
    out->queue_p99_us = devices_pct(t->queue_buckets, t->n_queue_buckets, t->jobs, 0.99);
    out->device_sum_us = t->device_sum_us;
    out->device_p50_us = devices_pct(t->device_buckets, t->n_device_buckets, t->jobs, 0.50);
    out->device_p99_us = devices_pct(t->device_buckets, t->n_device_buckets, t->jobs, 0.99);
}

int amp_status(amp_conn *c, const amp_opts *o, amp_daemon_status *st)
{
    if (!c)
        return AMP_EINVAL;
    conn_begin(c);
    if (!st)
        return conn_fail(c, AMP_EINVAL, "st must not be NULL");
    if (abi_check_size(c, "st", st->size, ABI_STATUS_MIN) != 0)
        return AMP_EINVAL;
    amp_daemon_status full = { .size = sizeof full };
    abi_write(st, &full, sizeof full);   /* zeroed, as far as the caller's layout goes */
    Amp__V1__StatusRequest req = AMP__V1__STATUS_REQUEST__INIT;
    ProtobufCMessage *msg;
    int rc = devices_call(c, o, DEVICES_PATH_STATUS, &req.base,
                          &amp__v1__status_reply__descriptor, &msg);
    if (rc != 0)
        return rc;
    Amp__V1__StatusReply *r = (Amp__V1__StatusReply *)msg;
    DEVICES_COPY(full.version, r->version);
    full.uptime_ms = r->uptime_ms;
    full.connections = r->connections;
    full.jobs_in_flight = r->jobs_in_flight;
    full.jobs_completed = r->jobs_completed;
    full.jobs_failed = r->jobs_failed;
    full.peak_rss_bytes = r->peak_rss_bytes;
    full.held_bytes = r->held_bytes;
    for (size_t i = 0; i < r->n_calls_by_status; i++)
        for (int code = 0; code < AMP_STATUS_CODES; code++)
            if (strcmp(r->calls_by_status[i]->code, error_grpc_name(code)) == 0)
                full.calls[code] = r->calls_by_status[i]->calls;
    full.staging_bytes_in_use = r->staging_bytes_in_use;
    for (size_t i = 0; i < r->n_stages; i++) {
        const Amp__V1__StageLatency *l = r->stages[i];
        if (strcmp(l->stage, AMP_WIRE_LOOP_TURN_STAGE) == 0) {
            devices_stage(&full.loop_turns, l);
            for (size_t b = 0; b < l->n_buckets; b++)
                full.loop_turn_buckets[b < AMP_LATENCY_BUCKETS ? b : AMP_LATENCY_BUCKETS - 1] +=
                    l->buckets[b];
        } else if (full.nstages < AMP_STAGES) {
            devices_stage(&full.stages[full.nstages++], l);
        }
    }
    for (size_t i = 0; i < r->n_device_loads && full.ndevices < AMP_STATUS_DEVICES; i++)
        devices_copy_load(&full.devices[full.ndevices++], r->device_loads[i]);
    for (size_t i = 0; i < r->n_loop_connections && full.nloops < AMP_STATUS_LOOPS; i++)
        full.loop_connections[full.nloops++] = r->loop_connections[i];
    for (size_t i = 0; i < r->n_client_times && full.nclient_times < AMP_STATUS_CLIENT_TIMES; i++)
        devices_client_times(&full.client_times[full.nclient_times++], r->client_times[i]);
    protobuf_c_message_free_unpacked(msg, NULL);
    abi_write(st, &full, sizeof full);
    return 0;
}

int amp_health(amp_conn *c, const amp_opts *o, const char *service, int *serving)
{
    if (!c)
        return AMP_EINVAL;
    conn_begin(c);
    if (!serving)
        return conn_fail(c, AMP_EINVAL, "serving must not be NULL");
    *serving = AMP_HEALTH_UNKNOWN;
    Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    req.service = (char *)(service ? service : "");
    ProtobufCMessage *msg;
    int rc = devices_call(c, o, DEVICES_PATH_HEALTH, &req.base,
                          &grpc__health__v1__health_check_response__descriptor, &msg);
    if (rc != 0)
        return rc;
    *serving = (int)((Grpc__Health__V1__HealthCheckResponse *)msg)->status;
    protobuf_c_message_free_unpacked(msg, NULL);
    return 0;
}
