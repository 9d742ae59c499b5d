/* SPDX-License-Identifier: MIT */
/* cmd_top.c: `ampctl top`: each client's jobs as they run, refreshed.
 *
 * Asks the daemon's Status every --interval and prints each client's
 * jobs at each priority (the client_times that `ampctl status` shows),
 * with what happened since the last frame: jobs a second, their mean
 * queue time, and the share of a second they held a device. The daemon
 * keeps totals only, so the live figures are the differences of two
 * snapshots; the percentiles are since the daemon started. On a terminal
 * each frame replaces the last; elsewhere frames follow one another.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ampctl.h"
#include "time_units.h"

#define TOP_INTERVAL_MS_DEFAULT 1000
#define TOP_INTERVAL_MS_MAX (3600u * 1000u)   /* an hour */
#define TOP_COUNT_MAX 1000000000u
#define TOP_NS_PER_MS 1000000L
#define TOP_US_PER_S 1e6
#define TOP_PERCENT 100.0
#define TOP_CLEAR "\033[H\033[2J"   /* cursor home, clear the screen */

struct top_args {
    uint32_t interval_ms;
    uint32_t count;   /* frames to print; 0: until interrupted */
};

static void top_usage(FILE *f)
{
    fprintf(f, "Usage: ampctl top [--interval DUR] [--count N]\n"
               "Shows each client's jobs at each priority as they run, a frame every\n"
               "interval until interrupted: jobs in all, jobs a second, their mean queue\n"
               "time and the share of a second they ran on a device since the last frame,\n"
               "and queue p50 and p99 since the daemon started. A client is the daemon's\n"
               "name for it (\"token alice\", \"uid 1000\"); past the daemon's cap on clients\n"
               "the rest are \"other\".\n"
               "\n"
               "  -i, --interval DUR  time between frames (default %d ms; 500ms, 2s)\n"
               "  -n, --count N       print N frames, then exit (default: until interrupted)\n"
               "  -h, --help          this help\n",
            TOP_INTERVAL_MS_DEFAULT);
}

static const char top_short_options[] = "i:n:h";
static const struct option top_options[] = {
    { "interval", required_argument, NULL, 'i' },
    { "count", required_argument, NULL, 'n' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

/* Returns -1 to go on, else the exit code. */
static int top_parse(int argc, char **argv, struct top_args *a)
{
    int ch;
    while ((ch = getopt_long(argc, argv, top_short_options, top_options, NULL)) != -1) {
        switch (ch) {
        case 'i':
            if (parse_duration_ms(optarg, TOP_INTERVAL_MS_MAX, &a->interval_ms) != 0 ||
                !a->interval_ms)
                return ampctl_usage_error("top", "--interval '%s': a duration such as 500ms "
                                                 "or 2s, above 0 and at most an hour", optarg);
            break;
        case 'n':
            if (parse_u32(optarg, TOP_COUNT_MAX, &a->count) != 0 || !a->count)
                return ampctl_usage_error("top", "--count '%s': a number of frames, 1 to %u",
                                          optarg, TOP_COUNT_MAX);
            break;
        case 'h': top_usage(stdout); return AMPCTL_OK;
        default: return ampctl_bad_option_in("top", argv, top_options);
        }
    }
    if (optind < argc)
        return ampctl_usage_error("top", "no arguments expected");
    return -1;
}

static void top_sleep_ms(uint32_t ms)
{
    struct timespec ts = { .tv_sec = ms / TIME_MS_PER_S,
                           .tv_nsec = (long)(ms % TIME_MS_PER_S) * TOP_NS_PER_MS };
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* The entry of prev for the same client and priority, or NULL. */
static const amp_client_times *top_find(const amp_daemon_status *prev, const amp_client_times *t)
{
    for (size_t i = 0; prev && i < prev->nclient_times; i++) {
        const amp_client_times *p = &prev->client_times[i];
        if (strcmp(p->client, t->client) == 0 && strcmp(p->priority, t->priority) == 0)
            return p;
    }
    return NULL;
}

/* One frame: cur's entries, their change since prev (NULL: the first
 * frame, against nothing) over seconds. */
static void top_frame(const amp_daemon_status *cur, const amp_daemon_status *prev,
                      double seconds)
{
    const char *head = "client";
    int width = (int)strlen(head);
    char name[TERM_ESCAPED_MAX(sizeof cur->client_times[0].client)];
    for (size_t i = 0; i < cur->nclient_times; i++) {
        int n = (int)strlen(term_escape(name, sizeof name, cur->client_times[i].client));
        width = n > width ? n : width;
    }
    printf("%-*s %-8s %10s %10s %13s %9s %13s %13s\n", width, head, "priority", "jobs",
           "jobs/s", "queue mean us", "device %", "queue p50 <us", "queue p99 <us");
    for (size_t i = 0; i < cur->nclient_times; i++) {
        const amp_client_times *t = &cur->client_times[i], *p = top_find(prev, t);
        uint64_t jobs = t->jobs - (p ? p->jobs : 0);
        uint64_t queue_us = t->queue_sum_us - (p ? p->queue_sum_us : 0);
        uint64_t device_us = t->device_sum_us - (p ? p->device_sum_us : 0);
        char prio[TERM_ESCAPED_MAX(sizeof t->priority)];
        printf("%-*s %-8s %10" PRIu64 " %10.1f %13.1f %9.1f %13" PRIu64 " %13" PRIu64 "\n",
               width, term_escape(name, sizeof name, t->client),
               term_escape(prio, sizeof prio, t->priority), t->jobs,
               seconds > 0 ? (double)jobs / seconds : 0.0,
               jobs ? (double)queue_us / (double)jobs : 0.0,
               seconds > 0 ? (double)device_us / (seconds * TOP_US_PER_S) * TOP_PERCENT : 0.0,
               t->queue_p50_us, t->queue_p99_us);
    }
}

static int top_run(struct ampctl *ctx, int argc, char **argv)
{
    struct top_args a = { .interval_ms = TOP_INTERVAL_MS_DEFAULT };
    int rc = top_parse(argc, argv, &a);
    if (rc >= 0)
        return rc;
    rc = ampctl_connect(ctx);
    if (rc != AMPCTL_OK)
        return rc;
    /* Two snapshots, the last frame's and this one's, each large: on the
     * heap, swapped each frame. */
    amp_daemon_status *snap[2] = { calloc(1, sizeof(amp_daemon_status)),
                                   calloc(1, sizeof(amp_daemon_status)) };
    if (!snap[0] || !snap[1]) {
        free(snap[0]);
        free(snap[1]);
        ampctl_error("out of memory");
        return AMPCTL_EIO;
    }
    bool tty = isatty(STDOUT_FILENO);
    uint64_t prev_ms = 0;
    for (uint32_t frame = 0; !a.count || frame < a.count; frame++) {
        if (frame)
            top_sleep_ms(a.interval_ms);
        amp_daemon_status *cur = snap[frame % 2], *prev = frame ? snap[(frame + 1) % 2] : NULL;
        cur->size = sizeof *cur;
        int r = amp_status(ctx->conn, &ctx->opts, cur);
        if (r != 0) {
            free(snap[0]);
            free(snap[1]);
            return ampctl_fail(ctx, r);
        }
        /* The daemon's uptime times the frames, so a slow answer does not
         * skew the rates. */
        double seconds = prev ? (double)(cur->uptime_ms - prev_ms) / TIME_MS_PER_S : 0;
        prev_ms = cur->uptime_ms;
        fputs(tty ? TOP_CLEAR : frame ? "\n" : "", stdout);
        top_frame(cur, prev, seconds);
        fflush(stdout);
    }
    free(snap[0]);
    free(snap[1]);
    return io_close_output(NULL, stdout);
}

const struct ampctl_cmd cmd_top = {
    .name = "top",
    .summary = "each client's jobs as they run, refreshed",
    .run = top_run,
    .usage = top_usage,
    .options = top_options,
    .short_options = top_short_options,
};
