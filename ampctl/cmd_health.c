/* SPDX-License-Identifier: MIT */
/* cmd_health.c: `ampctl health`: the standard gRPC health check
 * (grpc.health.v1.Health/Check), for scripts and probes: exit 0 only when
 * the daemon answers SERVING. With --wait it asks again until the daemon
 * is SERVING, so a script that has just started ampd never races its
 * start-up (ampd listens at once and says NOT_SERVING until its devices
 * are open). */
#include <getopt.h>
#include <stdbool.h>
#include <time.h>

#include "ampctl.h"
#include "monotonic.h"

/* Between two tries of --wait: short beside a daemon's start-up, long
 * enough that a waiting script costs nothing. */
#define HEALTH_RETRY_MS 100
/* The longest --wait (a day), so the deadline cannot overflow. */
#define HEALTH_WAIT_MAX_MS (24u * 3600u * 1000u)

struct health_args {
    const char *service;
    uint32_t wait_ms;   /* 0: one try */
};

static void health_usage(FILE *f)
{
    fprintf(f, "Usage: ampctl [--json] health [--wait DUR] [SERVICE]\n"
               "Asks grpc.health.v1.Health/Check about SERVICE (default: the whole daemon)\n"
               "and prints its state. Exit status 0 when SERVING, 1 when the daemon answers\n"
               "anything else, 3 when it cannot be reached.\n"
               "\n"
               "  -w, --wait DUR  ask again every %d ms, connecting again when the daemon\n"
               "                  cannot be reached, until it is SERVING or DUR (500ms,\n"
               "                  10s, 1m) has passed: for scripts that have just started\n"
               "                  ampd\n"
               "  -h, --help      this help\n",
            HEALTH_RETRY_MS);
}

static const char *health_name(int serving)
{
    switch (serving) {
    case AMP_HEALTH_SERVING: return "SERVING";
    case AMP_HEALTH_NOT_SERVING: return "NOT_SERVING";
    case AMP_HEALTH_SERVICE_UNKNOWN: return "SERVICE_UNKNOWN";
    default: return "UNKNOWN";
    }
}

static const char health_short_options[] = "w:h";
static const struct option health_options[] = {
    { "wait", required_argument, NULL, 'w' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

/* Returns -1 to go on, else the exit code. */
static int health_parse(int argc, char **argv, struct health_args *a)
{
    int ch;
    while ((ch = getopt_long(argc, argv, health_short_options, health_options, NULL)) != -1) {
        switch (ch) {
        case 'w':
            if (parse_duration_ms(optarg, HEALTH_WAIT_MAX_MS, &a->wait_ms) != 0)
                return ampctl_usage_error("health", "--wait '%s': a duration such as 500ms, 10s "
                                                    "or 1m, at most a day", optarg);
            break;
        case 'h': health_usage(stdout); return AMPCTL_OK;
        default: return ampctl_bad_option_in("health", argv, health_options);
        }
    }
    if (argc - optind > 1)
        return ampctl_usage_error("health", "one SERVICE at most");
    a->service = optind < argc ? argv[optind] : "";
    return -1;
}

static void health_sleep_ms(uint32_t ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* One Check, connecting first when there is no connection. A connection
 * that failed is dropped, so the next try opens a new one. */
static int health_try(struct ampctl *ctx, const char *service, int *serving)
{
    int r = ctx->conn ? AMP_OK : amp_connect_with(ctx->address, &ctx->connect, &ctx->conn);
    if (r == AMP_OK)
        r = amp_health(ctx->conn, &ctx->opts, service, serving);
    return r;
}

/* Tries until SERVING or the deadline; returns the last try's result.
 * *connected says whether that try reached the daemon at all. */
static int health_wait(struct ampctl *ctx, const struct health_args *a, int *serving,
                       bool *connected)
{
    uint64_t deadline = monotonic_ms() + a->wait_ms;
    for (;;) {
        int r = health_try(ctx, a->service, serving);
        *connected = ctx->conn != NULL;
        if ((r == AMP_OK && *serving == AMP_HEALTH_SERVING) || monotonic_ms() >= deadline)
            return r;
        if (r != AMP_OK && ctx->conn) {
            amp_close(ctx->conn);
            ctx->conn = NULL;
        }
        uint64_t left = deadline - monotonic_ms();
        health_sleep_ms(left < HEALTH_RETRY_MS ? (uint32_t)left : HEALTH_RETRY_MS);
    }
}

static int health_run(struct ampctl *ctx, int argc, char **argv)
{
    struct health_args a = { 0 };
    int rc = health_parse(argc, argv, &a);
    if (rc >= 0)
        return rc;
    rc = ampctl_connect_prepare(ctx);
    if (rc != AMPCTL_OK)
        return rc;
    int serving;
    bool connected;
    int r = health_wait(ctx, &a, &serving, &connected);
    if (r != 0)
        return connected ? ampctl_fail(ctx, r) : ampctl_connect_failed(r);
    if (ctx->json)
        printf("{\"status\":\"%s\"}\n", health_name(serving));
    else
        printf("%s\n", health_name(serving));
    rc = io_close_output(NULL, stdout);
    return rc != AMPCTL_OK ? rc : serving == AMP_HEALTH_SERVING ? AMPCTL_OK : AMPCTL_EREFUSED;
}

const struct ampctl_cmd cmd_health = {
    .name = "health",
    .summary = "standard gRPC health check; exit 0 when SERVING (--wait: until it is)",
    .run = health_run,
    .usage = health_usage,
    .options = health_options,
    .short_options = health_short_options,
    .json = 1,
};
