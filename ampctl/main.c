/* SPDX-License-Identifier: MIT */
/* main.c: ampctl's entry point: common options, the command table, and the
 * mapping from library errors to exit codes. Each command lives in its own
 * cmd_*.c and parses its own options.
 */
#include <getopt.h>
#include <limits.h>
#include <locale.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "address.h"
#include "ampctl.h"
#include "call_class.h"
#include "choice.h"
#include "size_text.h"

#define AMPCTL_ENV_ADDRESS "AMP_ADDRESS"
#define AMPCTL_ENV_TOKEN_FILE "AMP_TOKEN_FILE"
#define AMPCTL_PROG "ampctl"
#define AMPCTL_ARGV0_MAX 64
/* Bounds of the option names a mistyped one is compared with (suggest.c). */
#define AMPCTL_OPTION_NAME_MAX 64
#define AMPCTL_OPTIONS_MAX 96
/* --max-queue-time's limit: amp_connect_opts.max_queue_us is an unsigned
 * count of microseconds. */
#define AMPCTL_US_PER_MS 1000u
#define AMPCTL_MAX_QUEUE_MS (UINT_MAX / AMPCTL_US_PER_MS)

/* getopt values of the options that have no short form */
enum { AMPCTL_OPT_THRESHOLD = 256, AMPCTL_OPT_NO_PROGRESS, AMPCTL_OPT_TRANSPORT, AMPCTL_OPT_TLS,
       AMPCTL_OPT_TLS_CA, AMPCTL_OPT_TLS_CERT, AMPCTL_OPT_TLS_KEY, AMPCTL_OPT_TLS_NAME,
       AMPCTL_OPT_TOKEN_FILE, AMPCTL_OPT_BUSY_POLL, AMPCTL_OPT_PRIORITY,
       AMPCTL_OPT_MAX_QUEUE, AMPCTL_OPT_SERVER_TIMING };

const struct ampctl_cmd *const ampctl_cmds[] = {
    &cmd_reverse, &cmd_transform, &cmd_hist,   &cmd_fill,       &cmd_pipeline,
    &cmd_devices, &cmd_status,    &cmd_health, &cmd_bench,      &cmd_completion,
    &cmd_top,
};
#define AMPCTL_NCMDS (sizeof ampctl_cmds / sizeof ampctl_cmds[0])
const size_t ampctl_ncmds = AMPCTL_NCMDS;

/* ampctl's own options, before or after the command (lift.c). */
const char ampctl_short_options[] = "a:d:t:jhV";
const struct option ampctl_options[] = {
    { "address", required_argument, NULL, 'a' }, { "device", required_argument, NULL, 'd' },
    { "timeout", required_argument, NULL, 't' }, { "json", no_argument, NULL, 'j' },
    { "help", no_argument, NULL, 'h' },          { "version", no_argument, NULL, 'V' },
    { "stream-threshold", required_argument, NULL, AMPCTL_OPT_THRESHOLD },
    { "no-progress", no_argument, NULL, AMPCTL_OPT_NO_PROGRESS },
    { "transport", required_argument, NULL, AMPCTL_OPT_TRANSPORT },
    { "tls", no_argument, NULL, AMPCTL_OPT_TLS },
    { "tls-ca", required_argument, NULL, AMPCTL_OPT_TLS_CA },
    { "tls-cert", required_argument, NULL, AMPCTL_OPT_TLS_CERT },
    { "tls-key", required_argument, NULL, AMPCTL_OPT_TLS_KEY },
    { "tls-server-name", required_argument, NULL, AMPCTL_OPT_TLS_NAME },
    { "token-file", required_argument, NULL, AMPCTL_OPT_TOKEN_FILE },
    { "busy-poll", required_argument, NULL, AMPCTL_OPT_BUSY_POLL },
    { "priority", required_argument, NULL, AMPCTL_OPT_PRIORITY },
    { "max-queue-time", required_argument, NULL, AMPCTL_OPT_MAX_QUEUE },
    { "server-timing", no_argument, NULL, AMPCTL_OPT_SERVER_TIMING },
    { NULL, 0, NULL, 0 },
};

const char ampctl_help_short_options[] = "h";
const struct option ampctl_help_options[] = {
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

static void ampctl_usage(FILE *f)
{
    char threshold[SIZE_TEXT_MAX];
    size_text_format(AMPCTL_STREAM_THRESHOLD, threshold, sizeof threshold);
    fprintf(f,
            "Usage: ampctl [OPTIONS] COMMAND [ARGS...] [OPTIONS]\n"
            "Runs jobs on ampd, the GPU job service.\n"
            "\n"
            "Options (before or after the command; a command's own option of the same\n"
            "name wins after it, e.g. bench -d; `--` ends the options):\n"
            "  -a, --address ADDR  daemon address: unix:PATH, HOST:PORT or [V6]:PORT, or\n"
            "                      tls:HOST:PORT for TLS (no URL scheme: not\n"
            "                      http://HOST:PORT) (default $%s, else %s);\n"
            "                      several, comma-separated: connections spread over\n"
            "                      them, and a call refused UNAVAILABLE goes to the next\n"
            "      --tls           TLS to a HOST:PORT address, as tls:HOST:PORT; the\n"
            "                      daemon's certificate must verify and name the host\n"
            "      --tls-ca FILE   PEM CAs to verify the daemon's certificate with\n"
            "                      (default: the system's); implies --tls\n"
            "      --tls-cert FILE PEM client certificate, for a daemon that asks for\n"
            "                      one (client certificates); implies --tls\n"
            "      --tls-key FILE  the client certificate's PEM private key\n"
            "      --tls-server-name NAME\n"
            "                      the name the daemon's certificate must carry\n"
            "                      (default: the address's host); implies --tls\n"
            "      --token-file FILE\n"
            "                      send the bearer token in FILE (TOKEN, or NAME TOKEN as\n"
            "                      in ampd's --token-file) with every call; ampd wants\n"
            "                      one on TCP (default $%s)\n"
            "  -d, --device SEL    device for jobs: gpu, cpu or an index from `devices`\n"
            "                      (default: the daemon's choice)\n"
            "  -t, --timeout DUR   deadline per call and for connecting: 500ms, 2s, 1m;\n"
            "                      a bare number is milliseconds (default: no deadline\n"
            "                      per call, %d ms to connect)\n"
            "      --priority low|normal|high\n"
            "                      the calls' priority (amp-priority); high needs a\n"
            "                      grant of the token or uid (default: normal)\n"
            "      --max-queue-time DUR\n"
            "                      fail a job that cannot start within DUR (500ms, 2s;\n"
            "                      amp-max-queue-time) instead of waiting (default: the\n"
            "                      daemon's for the priority, at most %u ms)\n"
            "      --server-timing after a job, print where its time in the daemon went\n"
            "                      (its reply's server-timing trailer, ms) to stderr\n"
            "  -j, --json          machine-readable output (devices, hist, status, health,\n"
            "                      pipeline, bench; other commands refuse it)\n"
            "      --stream-threshold SIZE\n"
            "                      stream inputs of SIZE bytes or more (and pipes that\n"
            "                      reach it) in chunks instead of one message; K, M, G,\n"
            "                      T suffixes (default %s; 0: always stream)\n"
            "      --no-progress   no progress bar for streamed inputs (it is only drawn\n"
            "                      when stderr is a terminal)\n"
            "      --transport auto|shm|socket\n"
            "                      how data reaches the daemon: shm puts it in shared\n"
            "                      memory regions (a local Unix socket only), socket in\n"
            "                      messages; auto (default): the faster for one job, which\n"
            "                      is the socket (a region's setup costs more)\n"
            "      --busy-poll US  microseconds a small call polls for the daemon's\n"
            "                      answer before it sleeps: fewer wake-ups for tiny\n"
            "                      calls, for CPU (default %d, at most %d; 0: never)\n"
            "  -h, --help          this help; `ampctl COMMAND --help` for a command's\n"
            "  -V, --version       print the version\n"
            "\n"
            "Data output (reverse, transform, fill, pipeline) is exact bytes, except\n"
            "to a terminal: text gets a closing newline, and binary is refused unless\n"
            "`-o -` asks for it.\n"
            "\n"
            "Commands:\n",
            AMPCTL_ENV_ADDRESS, AMP_DEFAULT_ADDRESS, AMPCTL_ENV_TOKEN_FILE, AMP_CONNECT_TIMEOUT_MS,
            AMPCTL_MAX_QUEUE_MS, threshold, AMP_BUSY_POLL_US, AMP_BUSY_POLL_MAX_US);
    for (size_t i = 0; i < AMPCTL_NCMDS; i++)
        fprintf(f, "  %-10s %s\n", ampctl_cmds[i]->name, ampctl_cmds[i]->summary);
    fprintf(f,
            "\n"
            "Exit status:\n"
            "  0  success\n"
            "  1  the daemon refused the job (its message is printed), or health: not serving\n"
            "  2  usage error (bad command line or option value)\n"
            "  3  cannot connect to the daemon, or the connection was lost\n"
            "  4  local I/O error (reading or writing a file) or out of memory\n");
}

/* "ampctl: MESSAGE" on stderr, the line of both kinds of error. Most
 * carry the daemon's words (its message, a device name): control
 * characters in them are escaped (term_escape), whoever wrote them. */
__attribute__((format(printf, 1, 0))) static void ampctl_verror(const char *fmt, va_list ap)
{
    char msg[AMPCTL_ERROR_MAX], safe[TERM_ESCAPED_MAX(AMPCTL_ERROR_MAX)];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(stderr, AMPCTL_PROG ": %s\n", term_escape(safe, sizeof safe, msg));
}

void ampctl_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ampctl_verror(fmt, ap);
    va_end(ap);
}

int ampctl_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ampctl_verror(fmt, ap);
    va_end(ap);
    return ampctl_bad_option(cmd);
}

/* The long option of opts, or of the common ones, nearest to a mistyped
 * "--name[=value]" (suggest.c), or NULL: none is close, or it is one (a
 * known option that getopt refused for its value). */
static const char *ampctl_option_near(const char *arg, const struct option *opts)
{
    char name[AMPCTL_OPTION_NAME_MAX];
    size_t len = strcspn(arg, "=");
    if (len >= sizeof name)
        return NULL;
    memcpy(name, arg, len);
    name[len] = '\0';
    const char *names[AMPCTL_OPTIONS_MAX];
    size_t n = 0;
    const struct option *tables[] = { opts, ampctl_options };
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        for (const struct option *o = tables[t]; o && o->name && n < AMPCTL_OPTIONS_MAX; o++) {
            if (strcmp(o->name, name) == 0)
                return NULL;
            names[n++] = o->name;
        }
    return suggest_nearest(name, names, n);
}

int ampctl_bad_option_in(const char *cmd, char *const *argv, const struct option *opts)
{
    const char *arg = optind > 0 ? argv[optind - 1] : NULL;
    const char *near = arg && strncmp(arg, "--", 2) == 0 ? ampctl_option_near(arg + 2, opts) : NULL;
    if (near)
        fprintf(stderr, AMPCTL_PROG ": did you mean '--%s'?\n", near);
    return ampctl_bad_option(cmd);
}

int ampctl_bad_option(const char *cmd)
{
    if (cmd)
        fprintf(stderr, "Try '" AMPCTL_PROG " %s --help'.\n", cmd);
    else
        fprintf(stderr, "Try '" AMPCTL_PROG " --help'.\n");
    return AMPCTL_EUSAGE;
}

int ampctl_parse_help(const struct ampctl_cmd *cmd, int argc, char **argv)
{
    int ch = getopt_long(argc, argv, ampctl_help_short_options, ampctl_help_options, NULL);
    if (ch == 'h') {
        cmd->usage(stdout);
        return AMPCTL_OK;
    }
    return ch == -1 ? -1 : ampctl_bad_option_in(cmd->name, argv, ampctl_help_options);
}

int ampctl_parse_none(const struct ampctl_cmd *cmd, int argc, char **argv)
{
    int rc = ampctl_parse_help(cmd, argc, argv);
    if (rc >= 0)
        return rc;
    if (optind < argc)
        return ampctl_usage_error(cmd->name, "unexpected argument '%s'", argv[optind]);
    return -1;
}

/* The exit code for a library error. Statuses the daemon answered are 1;
 * failures to reach or talk to it are 3. */
static int ampctl_exit_code(int rc)
{
    switch (rc) {
    case AMP_OK: return AMPCTL_OK;
    case AMP_EADDR:
    case AMP_ECONNECT:
    case AMP_EIO:
    case AMP_EPROTO:
    case AMP_ETLS: return AMPCTL_ECONNECT;
    case AMP_ENOMEM: return AMPCTL_EIO;
    default: return AMPCTL_EREFUSED;
    }
}

int ampctl_fail(struct ampctl *ctx, int rc)
{
    const char *msg = ctx->conn ? amp_last_message(ctx->conn) : "";
    if (msg[0])
        ampctl_error("%s", msg);
    else
        ampctl_error("%s", amp_strerror(rc));
    return ampctl_exit_code(rc);
}

static int ampctl_check_address(const char *text)
{
    struct address a[ADDRESS_LIST_MAX];
    size_t n;
    char err[2 * ADDRESS_ERROR_MAX];
    if (address_parse_list(text, a, ADDRESS_LIST_MAX, &n, err, sizeof err) != 0)
        return ampctl_usage_error(NULL, "address '%s': %s", text, err);
    return AMPCTL_OK;
}

int ampctl_connect_prepare(struct ampctl *ctx)
{
    /* A malformed address is a usage error (2), not a connection failure (3). */
    int rc = ampctl_check_address(ctx->address);
    if (rc != AMPCTL_OK)
        return rc;
    /* Read only by commands that connect, so that a bad file does not
     * stop `ampctl completion`. */
    if (ctx->token_file && ctx->token_file[0] && !ctx->connect.token) {
        rc = token_read(ctx->token_file, ctx->token, sizeof ctx->token);
        if (rc != AMPCTL_OK)
            return rc;
        ctx->connect.token = ctx->token;
    }
    return AMPCTL_OK;
}

int ampctl_connect(struct ampctl *ctx)
{
    if (ctx->conn)
        return AMPCTL_OK;
    int rc = ampctl_connect_prepare(ctx);
    if (rc != AMPCTL_OK)
        return rc;
    rc = amp_connect_with(ctx->address, &ctx->connect, &ctx->conn);
    return rc != 0 ? ampctl_connect_failed(rc) : AMPCTL_OK;
}

int ampctl_connect_failed(int rc)
{
    ampctl_error("%s (%s)", amp_last_message(NULL), amp_strerror(rc));
    return ampctl_exit_code(rc);
}

static const struct ampctl_cmd *ampctl_find(const char *name)
{
    for (size_t i = 0; i < AMPCTL_NCMDS; i++)
        if (strcmp(ampctl_cmds[i]->name, name) == 0)
            return ampctl_cmds[i];
    return NULL;
}

/* A name that is no command: a usage error, with the nearest command
 * when one is close enough to be a typo. */
static int ampctl_unknown_command(const char *name)
{
    const char *names[AMPCTL_NCMDS];
    for (size_t i = 0; i < AMPCTL_NCMDS; i++)
        names[i] = ampctl_cmds[i]->name;
    const char *near = suggest_nearest(name, names, AMPCTL_NCMDS);
    if (near)
        return ampctl_usage_error(NULL, "unknown command '%s'; did you mean '%s'?", name, near);
    return ampctl_usage_error(NULL, "unknown command '%s'", name);
}

/* Parses the options before the command; returns -1 to go on, or an exit code. */
static int ampctl_parse_common(struct ampctl *ctx, int argc, char **argv)
{
    char shorts[sizeof ampctl_short_options + 1] = "+";
    strcat(shorts, ampctl_short_options);
    uint32_t ms, us;
    int ch;
    /* '+': stop at the command name; options after it are lifted (lift.c). */
    while ((ch = getopt_long(argc, argv, shorts, ampctl_options, NULL)) != -1) {
        switch (ch) {
        case 'a': ctx->address = optarg; break;
        case 'd': ctx->opts.device = optarg; break;
        case 't':
            if (parse_duration_ms(optarg, INT32_MAX, &ms) != 0)
                return ampctl_usage_error(NULL, "--timeout: '%s' is not a duration (500ms, 2s, "
                                          "1m; a bare number is ms)", optarg);
            ctx->opts.timeout_ms = (int)ms;
            break;
        case 'j': ctx->json = 1; break;
        case AMPCTL_OPT_THRESHOLD:
            if (size_text_parse(optarg, &ctx->stream_threshold) != 0)
                return ampctl_usage_error(NULL, "--stream-threshold: '%s' is not a size "
                                          "(e.g. 16M)", optarg);
            break;
        case AMPCTL_OPT_NO_PROGRESS: ctx->no_progress = 1; break;
        case AMPCTL_OPT_TRANSPORT: {
            int t = choice_find(&choice_transport, optarg);
            if (t < 0) {
                char words[CHOICE_TEXT_MAX];
                choice_text(&choice_transport, words, sizeof words);
                return ampctl_usage_error(NULL, "--transport: '%s' is not %s", optarg, words);
            }
            ctx->transport = (enum ampctl_transport)t;
            break;
        }
        case AMPCTL_OPT_TLS: ctx->connect.tls = 1; break;
        case AMPCTL_OPT_TLS_CA: ctx->connect.tls_ca = optarg; break;
        case AMPCTL_OPT_TLS_CERT: ctx->connect.tls_cert = optarg; break;
        case AMPCTL_OPT_TLS_KEY: ctx->connect.tls_key = optarg; break;
        case AMPCTL_OPT_TLS_NAME: ctx->connect.tls_server_name = optarg; break;
        case AMPCTL_OPT_TOKEN_FILE: ctx->token_file = optarg; break;
        case AMPCTL_OPT_BUSY_POLL:
            if (parse_u32(optarg, AMP_BUSY_POLL_MAX_US, &us) != 0)
                return ampctl_usage_error(NULL, "--busy-poll: '%s' is not a number of "
                                          "microseconds from 0 to %d", optarg,
                                          AMP_BUSY_POLL_MAX_US);
            ctx->connect.busy_poll_us = us ? (int)us : -1;   /* the library's 0 is its default */
            break;
        case AMPCTL_OPT_PRIORITY:
            if (call_class_priority_parse(optarg, strlen(optarg)) < 0)
                return ampctl_usage_error(NULL, "--priority: '%s' is not low, normal or high",
                                          optarg);
            ctx->connect.priority = optarg;
            break;
        case AMPCTL_OPT_MAX_QUEUE:
            if (parse_duration_ms(optarg, AMPCTL_MAX_QUEUE_MS, &ms) != 0 || ms == 0)
                return ampctl_usage_error(NULL, "--max-queue-time: '%s' is not a duration from "
                                          "1 ms to %u ms (500ms, 2s; a bare number is ms)",
                                          optarg, AMPCTL_MAX_QUEUE_MS);
            ctx->connect.max_queue_us = ms * AMPCTL_US_PER_MS;
            break;
        case AMPCTL_OPT_SERVER_TIMING: ctx->connect.server_timing = 1; break;
        case 'h': ampctl_usage(stdout); return AMPCTL_OK;
        case 'V': printf(AMPCTL_PROG " %s\n", AMP_VERSION); return AMPCTL_OK;
        default: return ampctl_bad_option_in(NULL, argv, NULL);
        }
    }
    return -1;
}

/* Once every option is in (before and after the command): --tls-cert and
 * --tls-key go together, and --timeout bounds connecting too (a daemon
 * that never accepts must not hang us). Returns -1 to go on, or an exit
 * code. */
static int ampctl_connect_options(struct ampctl *ctx)
{
    if (!ctx->connect.tls_cert != !ctx->connect.tls_key)
        return ampctl_usage_error(NULL, "--tls-cert and --tls-key go together");
    ctx->connect.timeout_ms = ctx->opts.timeout_ms;
    return -1;
}

/* `ampctl help [COMMAND]` */
static int ampctl_help(int argc, char **argv)
{
    if (argc < 2) {
        ampctl_usage(stdout);
        return AMPCTL_OK;
    }
    const struct ampctl_cmd *cmd = ampctl_find(argv[1]);
    if (!cmd)
        return ampctl_unknown_command(argv[1]);
    cmd->usage(stdout);
    return AMPCTL_OK;
}

/* Takes ampctl's own options out of a command's arguments and applies
 * them; returns -1 to go on, or an exit code. */
static int ampctl_parse_lifted(struct ampctl *ctx, const struct ampctl_cmd *cmd, int *argc,
                               char **argv)
{
    char **lifted = calloc((size_t)*argc + 1, sizeof *lifted);
    if (!lifted) {
        ampctl_error("out of memory");
        return AMPCTL_EIO;
    }
    lifted[0] = AMPCTL_PROG;
    struct lift_set own = { cmd->options, cmd->short_options };
    struct lift_set common = { ampctl_options, ampctl_short_options };
    int n = lift_options(&own, &common, argc, argv, lifted + 1);
    int rc = -1;
    if (n > 0) {
        optind = 0;
        rc = ampctl_parse_common(ctx, n + 1, lifted);
    }
    free(lifted);
    return rc;
}

static int ampctl_run(struct ampctl *ctx, int argc, char **argv)
{
    if (strcmp(argv[0], "help") == 0)
        return ampctl_help(argc, argv);
    const struct ampctl_cmd *cmd = ampctl_find(argv[0]);
    if (!cmd)
        return ampctl_unknown_command(argv[0]);
    int rc = ampctl_parse_lifted(ctx, cmd, &argc, argv);
    if (rc < 0 && ctx->json && !cmd->json)
        rc = ampctl_usage_error(cmd->name, "--json: %s has no JSON output (it writes the job's "
                                "result; devices, status, health, hist, pipeline and bench "
                                "have one)", cmd->name);
    if (rc < 0)
        rc = ampctl_connect_options(ctx);
    if (rc >= 0)
        return rc;
    /* getopt messages then read "ampctl NAME: ..." */
    char argv0[AMPCTL_ARGV0_MAX];
    snprintf(argv0, sizeof argv0, AMPCTL_PROG " %s", cmd->name);
    argv[0] = argv0;
    optind = 0; /* re-initialise getopt for the command's own options */
    return cmd->run(ctx, argc, argv);
}

int main(int argc, char **argv)
{
    setlocale(LC_CTYPE, ""); /* chart.c draws with Unicode blocks in UTF-8 locales */
    struct ampctl ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.opts.size = sizeof ctx.opts;
    ctx.stream_threshold = AMPCTL_STREAM_THRESHOLD;
    ctx.connect.size = sizeof ctx.connect;
    ctx.address = getenv(AMPCTL_ENV_ADDRESS);
    if (!ctx.address || !*ctx.address)
        ctx.address = AMP_DEFAULT_ADDRESS;
    ctx.token_file = getenv(AMPCTL_ENV_TOKEN_FILE);
    argv[0] = AMPCTL_PROG;
    int rc = ampctl_parse_common(&ctx, argc, argv);
    if (rc >= 0)
        return rc;
    if (optind >= argc)
        return ampctl_usage_error(NULL, "no command given");
    rc = ampctl_run(&ctx, argc - optind, argv + optind);
    /* The last call's: a unary job's (a stream, or a failed call, has none). */
    if (ctx.connect.server_timing && ctx.conn && *amp_last_server_timing(ctx.conn))
        fprintf(stderr, AMPCTL_PROG ": server-timing: %s\n", amp_last_server_timing(ctx.conn));
    amp_close(ctx.conn);
    return rc;
}
