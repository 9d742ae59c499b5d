/* SPDX-License-Identifier: MIT */
/* cmd_health.c: `ampctl health`: the standard gRPC health check
 * (grpc.health.v1.Health/Check), for scripts and probes: exit 0 only when
 * the daemon answers SERVING. */
#include <getopt.h>

#include "ampctl.h"

static void health_usage(FILE *f)
{
    fprintf(f, "Usage: ampctl [--json] health [SERVICE]\n"
               "Asks grpc.health.v1.Health/Check about SERVICE (default: the whole daemon)\n"
               "and prints its state. Exit status 0 when SERVING, 1 when the daemon answers\n"
               "anything else, 3 when it cannot be reached.\n"
               "\n"
               "  -h, --help  this help\n");
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

static int health_run(struct ampctl *ctx, int argc, char **argv)
{
    int rc = ampctl_parse_help(&cmd_health, argc, argv);
    if (rc >= 0)
        return rc;
    if (argc - optind > 1)
        return ampctl_usage_error("health", "one SERVICE at most");
    const char *service = optind < argc ? argv[optind] : "";
    rc = ampctl_connect(ctx);
    if (rc != AMPCTL_OK)
        return rc;
    int serving;
    int r = amp_health(ctx->conn, &ctx->opts, service, &serving);
    if (r != 0)
        return ampctl_fail(ctx, r);
    if (ctx->json)
        printf("{\"status\":\"%s\"}\n", health_name(serving));
    else
        printf("%s\n", health_name(serving));
    rc = io_close_output(NULL, stdout);
    return rc != AMPCTL_OK ? rc : serving == AMP_HEALTH_SERVING ? AMPCTL_OK : AMPCTL_EREFUSED;
}

const struct ampctl_cmd cmd_health = {
    .name = "health",
    .summary = "standard gRPC health check; exit 0 when SERVING",
    .run = health_run,
    .usage = health_usage,
    .options = ampctl_help_options,
    .short_options = ampctl_help_short_options,
};
