/* SPDX-License-Identifier: MIT */
/* cmd_status.c: `ampctl status`: the daemon's version and counters. */
#include <inttypes.h>
#include <string.h>

#include "ampctl.h"
#include "time_units.h"

#define STATUS_LOAD_TEXT 96
#define STATUS_US_PER_MS 1e3

static void status_usage(FILE *f)
{
    fprintf(f, "Usage: ampctl [--json] status\n"
               "Prints the daemon's version, uptime, connections (and how many each I/O\n"
               "loop serves), job counters, staging memory in use, each device's load\n"
               "(jobs running and queued, device memory in use), where unary job\n"
               "calls' time went, stage by stage, and each client's jobs at each\n"
               "priority: how many, their queue time (p50, p99) and device time.\n"
               "\n"
               "  -h, --help  this help\n");
}

static void status_clients_json(const amp_daemon_status *st)
{
    fputs(",\"clients\":[", stdout);
    for (size_t i = 0; i < st->nclient_times; i++) {
        const amp_client_times *t = &st->client_times[i];
        fputs(i ? ",{\"client\":" : "{\"client\":", stdout);
        json_string(stdout, t->client);
        fputs(",\"priority\":", stdout);
        json_string(stdout, t->priority);
        printf(",\"jobs\":%" PRIu64 ",\"queue_sum_us\":%" PRIu64 ",\"queue_p50_us\":%" PRIu64
               ",\"queue_p99_us\":%" PRIu64 ",\"device_sum_us\":%" PRIu64
               ",\"device_p50_us\":%" PRIu64 ",\"device_p99_us\":%" PRIu64 "}",
               t->jobs, t->queue_sum_us, t->queue_p50_us, t->queue_p99_us, t->device_sum_us,
               t->device_p50_us, t->device_p99_us);
    }
    fputs("]", stdout);
}

/* Each client's jobs at each priority, one aligned row each; the client
 * column is as wide as its longest name. */
static void status_clients(const amp_daemon_status *st)
{
    if (!st->nclient_times)
        return;
    const char *head = "client";
    int width = (int)strlen(head);
    char name[TERM_ESCAPED_MAX(sizeof st->client_times[0].client)];
    for (size_t i = 0; i < st->nclient_times; i++) {
        int n = (int)strlen(term_escape(name, sizeof name, st->client_times[i].client));
        width = n > width ? n : width;
    }
    printf("%-*s %-8s %10s %13s %13s %13s\n", width, head, "priority", "jobs", "queue p50 <us",
           "queue p99 <us", "device ms");
    for (size_t i = 0; i < st->nclient_times; i++) {
        const amp_client_times *t = &st->client_times[i];
        char prio[TERM_ESCAPED_MAX(sizeof t->priority)];
        printf("%-*s %-8s %10" PRIu64 " %13" PRIu64 " %13" PRIu64 " %13.3f\n", width,
               term_escape(name, sizeof name, t->client),
               term_escape(prio, sizeof prio, t->priority),
               t->jobs, t->queue_p50_us, t->queue_p99_us,
               (double)t->device_sum_us / STATUS_US_PER_MS);
    }
}

static void status_stage_json(const amp_stage_latency *l)
{
    printf("{\"calls\":%" PRIu64 ",\"sum_us\":%" PRIu64 ",\"p50_us\":%" PRIu64
           ",\"p90_us\":%" PRIu64 ",\"p99_us\":%" PRIu64 "}",
           l->calls, l->sum_us, l->p50_us, l->p90_us, l->p99_us);
}

static void status_stage_row(const amp_stage_latency *l)
{
    char stage[TERM_ESCAPED_MAX(sizeof l->stage)];
    printf("%-10s %10" PRIu64 " %10.1f %10" PRIu64 " %10" PRIu64 " %10" PRIu64 "\n",
           term_escape(stage, sizeof stage, l->stage), l->calls,
           l->calls ? (double)l->sum_us / (double)l->calls : 0.0, l->p50_us, l->p90_us,
           l->p99_us);
}

static void status_print(const amp_daemon_status *st, int json)
{
    if (json) {
        fputs("{\"version\":", stdout);
        json_string(stdout, st->version);
        printf(",\"uptime_ms\":%" PRIu64 ",\"connections\":%" PRIu32, st->uptime_ms,
               st->connections);
        fputs(",\"loop_connections\":[", stdout);
        for (size_t i = 0; i < st->nloops; i++)
            printf("%s%" PRIu32, i ? "," : "", st->loop_connections[i]);
        printf("],\"jobs_in_flight\":%" PRIu32 ",\"jobs_completed\":%" PRIu64
               ",\"jobs_failed\":%" PRIu64 ",\"peak_rss_bytes\":%" PRIu64
               ",\"held_bytes\":%" PRIu64 ",\"calls\":{",
               st->jobs_in_flight, st->jobs_completed,
               st->jobs_failed, st->peak_rss_bytes, st->held_bytes);
        const char *sep = "";
        for (int code = 0; code < AMP_STATUS_CODES; code++) {
            if (!st->calls[code])
                continue;
            printf("%s\"%s\":%" PRIu64, sep, amp_status_code_name(code), st->calls[code]);
            sep = ",";
        }
        printf("},\"staging_bytes_in_use\":%" PRIu64 ",\"stages\":{", st->staging_bytes_in_use);
        for (size_t i = 0; i < st->nstages; i++) {
            printf("%s", i ? "," : "");
            json_string(stdout, st->stages[i].stage);
            putchar(':');
            status_stage_json(&st->stages[i]);
        }
        fputs("},\"loop_turns\":", stdout);
        status_stage_json(&st->loop_turns);
        fputs(",\"devices\":[", stdout);
        for (size_t i = 0; i < st->ndevices; i++) {
            printf("%s", i ? "," : "");
            json_device_load(stdout, &st->devices[i]);
        }
        fputs("]", stdout);
        status_clients_json(st);
        puts("}");
        return;
    }
    char version[TERM_ESCAPED_MAX(sizeof st->version)];
    printf("version         %s\n"
           "uptime          %" PRIu64 ".%03" PRIu64 " s\n"
           "connections     %" PRIu32,
           term_escape(version, sizeof version, st->version), st->uptime_ms / TIME_MS_PER_S,
           st->uptime_ms % TIME_MS_PER_S,
           st->connections);
    for (size_t i = 0; i < st->nloops; i++)
        printf("%s%" PRIu32, i ? " " : " (by I/O loop: ", st->loop_connections[i]);
    printf("%s\n"
           "jobs in flight  %" PRIu32 "\n"
           "jobs completed  %" PRIu64 "\n"
           "jobs failed     %" PRIu64 "\n",
           st->nloops ? ")" : "", st->jobs_in_flight, st->jobs_completed, st->jobs_failed);
    char peak[HUMAN_TEXT_MAX], held[HUMAN_TEXT_MAX], staging[HUMAN_TEXT_MAX];
    human_bytes(peak, sizeof peak, st->peak_rss_bytes);
    human_bytes(held, sizeof held, st->held_bytes);
    human_bytes(staging, sizeof staging, st->staging_bytes_in_use);
    printf("peak memory     %s\n"
           "held for calls  %s\n",
           peak, held);
    for (int code = 0; code < AMP_STATUS_CODES; code++)
        if (st->calls[code])
            printf("calls %-20s %" PRIu64 "\n", amp_status_code_name(code), st->calls[code]);
    printf("staging in use  %s\n", staging);
    for (size_t i = 0; i < st->ndevices; i++) {
        char load[STATUS_LOAD_TEXT];
        devices_load_text(load, sizeof load, &st->devices[i]);
        printf("device %-8zu %s\n", i, load);
    }
    status_clients(st);
    if (!st->nstages || !st->stages[0].calls)
        return;
    printf("%-10s %10s %10s %10s %10s %10s\n", "stage", "calls", "mean us", "p50 <us",
           "p90 <us", "p99 <us");
    for (size_t i = 0; i < st->nstages; i++)
        status_stage_row(&st->stages[i]);
    if (st->loop_turns.calls)
        status_stage_row(&st->loop_turns);   /* "calls" are the loops' turns */
}

static int status_run(struct ampctl *ctx, int argc, char **argv)
{
    int rc = ampctl_parse_none(&cmd_status, argc, argv);
    if (rc >= 0)
        return rc;
    rc = ampctl_connect(ctx);
    if (rc != AMPCTL_OK)
        return rc;
    amp_daemon_status st = { .size = sizeof st };
    int r = amp_status(ctx->conn, &ctx->opts, &st);
    if (r != 0)
        return ampctl_fail(ctx, r);
    status_print(&st, ctx->json);
    return io_close_output(NULL, stdout);
}

const struct ampctl_cmd cmd_status = {
    .name = "status",
    .summary = "daemon version, uptime and job counters",
    .run = status_run,
    .usage = status_usage,
    .options = ampctl_help_options,
    .short_options = ampctl_help_short_options,
    .json = 1,
};
