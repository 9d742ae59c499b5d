/* SPDX-License-Identifier: MIT */
/* cmd_devices.c: `ampctl devices`: the daemon's OpenCL devices, as a table
 * or (--json) an array of objects. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ampctl.h"

#define DEVICES_LOAD_TEXT 96

static void devices_usage(FILE *f)
{
    fprintf(f, "Usage: ampctl [--json] devices\n"
               "Lists the daemon's devices: index (for --device), type, name, global memory,\n"
               "compute units, '*' on the default device, and its load now: jobs running\n"
               "and queued, device memory in use of what it admits.\n"
               "\n"
               "  -h, --help  this help\n");
}

void devices_load_text(char *buf, size_t cap, const amp_device_load *l)
{
    char used[HUMAN_TEXT_MAX], capacity[HUMAN_TEXT_MAX];
    human_bytes(used, sizeof used, l->memory_in_use);
    human_bytes(capacity, sizeof capacity, l->memory_capacity);
    snprintf(buf, cap, "%" PRIu32 " running, %" PRIu32 " queued, %s of %s", l->jobs_running,
             l->jobs_queued, used, capacity);
}

/* Columns as wide as their widest entry, so that a long device name
 * (PoCL's run to 45 characters) does not shift the rest of its row. */
static void devices_table(const amp_device *d, size_t n)
{
    int wtype = (int)strlen("TYPE"), wname = (int)strlen("NAME");
    for (size_t i = 0; i < n; i++) {
        char type[TERM_ESCAPED_MAX(sizeof d[i].type)], name[TERM_ESCAPED_MAX(sizeof d[i].name)];
        int t = (int)strlen(term_escape(type, sizeof type, d[i].type));
        int m = (int)strlen(term_escape(name, sizeof name, d[i].name));
        wtype = t > wtype ? t : wtype;
        wname = m > wname ? m : wname;
    }
    printf("%-5s %-*s %-*s %10s %4s %-7s %s\n", "INDEX", wtype, "TYPE", wname, "NAME", "MEMORY",
           "CU", "DEFAULT", "LOAD; KERNELS");
    for (size_t i = 0; i < n; i++) {
        char mem[HUMAN_TEXT_MAX], load[DEVICES_LOAD_TEXT];
        char type[TERM_ESCAPED_MAX(sizeof d[i].type)], name[TERM_ESCAPED_MAX(sizeof d[i].name)];
        human_bytes(mem, sizeof mem, d[i].global_mem_size);
        devices_load_text(load, sizeof load, &d[i].load);
        char kernels[TERM_ESCAPED_MAX(sizeof d[i].kernels)];
        printf("%-5" PRIu32 " %-*s %-*s %10s %4" PRIu32 " %-7s %s; %s\n", d[i].index, wtype,
               term_escape(type, sizeof type, d[i].type), wname,
               term_escape(name, sizeof name, d[i].name), mem, d[i].compute_units,
               d[i].is_default ? "*" : "", load, term_escape(kernels, sizeof kernels, d[i].kernels));
    }
}

static void devices_json_one(const amp_device *d)
{
    printf("{\"index\":%" PRIu32 ",\"name\":", d->index);
    json_string(stdout, d->name);
    fputs(",\"vendor\":", stdout);
    json_string(stdout, d->vendor);
    fputs(",\"platform\":", stdout);
    json_string(stdout, d->platform);
    fputs(",\"type\":", stdout);
    json_string(stdout, d->type);
    printf(",\"global_mem_size\":%" PRIu64 ",\"max_constant_buffer_size\":%" PRIu64
           ",\"max_work_group_size\":%" PRIu64 ",\"compute_units\":%" PRIu32
           ",\"default\":%s,\"load\":",
           d->global_mem_size, d->max_constant_buffer_size, d->max_work_group_size,
           d->compute_units, d->is_default ? "true" : "false");
    json_device_load(stdout, &d->load);
    fputs(",\"kernels\":", stdout);
    json_string(stdout, d->kernels);
    putchar('}');
}

static void devices_json(const amp_device *d, size_t n)
{
    putchar('[');
    for (size_t i = 0; i < n; i++) {
        if (i)
            putchar(',');
        devices_json_one(&d[i]);
    }
    puts("]");
}

static int devices_run(struct ampctl *ctx, int argc, char **argv)
{
    int rc = ampctl_parse_none(&cmd_devices, argc, argv);
    if (rc >= 0)
        return rc;
    rc = ampctl_connect(ctx);
    if (rc != AMPCTL_OK)
        return rc;
    amp_device *list;
    size_t n;
    int r = amp_devices(ctx->conn, &ctx->opts, &list, &n);
    if (r != 0)
        return ampctl_fail(ctx, r);
    if (ctx->json)
        devices_json(list, n);
    else
        devices_table(list, n);
    amp_free(list);
    return io_close_output(NULL, stdout);
}

const struct ampctl_cmd cmd_devices = {
    .name = "devices",
    .summary = "list the daemon's devices",
    .run = devices_run,
    .usage = devices_usage,
    .options = ampctl_help_options,
    .short_options = ampctl_help_short_options,
    .json = 1,
};
