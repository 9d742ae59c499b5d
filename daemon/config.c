/* SPDX-License-Identifier: MIT */
/* config.c: parse ampd's options and config file (see config.h).
 *
 * One table describes every setting: its name (the long option and the
 * config-file key alike), its kind and where it goes in struct config, so
 * the file and the command line cannot drift apart. Numbers take an optional
 * size suffix (common/size_text.c), durations a unit (common/duration_text.c).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "address.h"
#include "call_class.h"
#include "dev_select.h"
#include "job.h"
#include "log.h"
#include "read_file.h"
#include "duration_text.h"
#include "size_text.h"
#include "time_units.h"

/* A setting's value as text, for the reload's log of what changed. */
#define CONFIG_VALUE_TEXT_MAX 1024
#define CONFIG_US_PER_MS 1000
#define CONFIG_US_PER_S 1000000
#define CONFIG_HELP_COLUMN 28
#define CONFIG_HELP_WIDTH 100   /* as wide as the widest help line */
/* A config.h constant that is a plain number, as text in a help string. */
#define CONFIG_STR(x) CONFIG_STR_(x)
#define CONFIG_STR_(x) #x

enum config_kind { CFG_LISTEN, CFG_DEVICE, CFG_DEVICES, CFG_GROUP, CFG_PATH, CFG_LIST, CFG_U64,
                   CFG_U32, CFG_SECONDS, CFG_MODE, CFG_SWITCH, CFG_LOG_LEVEL, CFG_HOST_PORT,
                   CFG_UID_WEIGHT, CFG_UID_PRIORITY, CFG_QUEUE_TIME };

struct config_opt {
    const char *name;
    const char *arg;     /* the value's name in --help */
    enum config_kind kind;
    size_t offset;       /* into struct config */
    uint64_t min, max;   /* numeric kinds */
    const char *help;
};

#define CFG_OFF(field) offsetof(struct config, field)

static const struct config_opt config_opts[] = {
    { "listen", "ADDR", CFG_LISTEN, CFG_OFF(listen), 0, 0,
      "listen on ADDR: unix:/path, HOST:PORT (\":PORT\" is loopback), or\n"
      "                            tls:HOST:PORT for TLS; repeatable (default " AMPD_DEFAULT_LISTEN ")" },
    { "health-listen", "HOST:PORT", CFG_HOST_PORT, CFG_OFF(health_listen), 0, 0,
      "serve grpc.health.v1.Health only, in plaintext and without a\n"
      "                            token, on HOST:PORT (any address): for probes that\n"
      "                            cannot speak TLS, such as Kubernetes' (default: off)" },
    { "tls-cert", "FILE", CFG_PATH, CFG_OFF(tls_cert), 0, 0,
      "PEM certificate (then its chain) of tls: listeners; re-read on SIGHUP" },
    { "tls-key", "FILE", CFG_PATH, CFG_OFF(tls_key), 0, 0,
      "PEM private key of --tls-cert; re-read on SIGHUP" },
    { "tls-client-ca", "FILE", CFG_PATH, CFG_OFF(tls_client_ca), 0, 0,
      "PEM CAs: tls: clients must show a certificate one of them\n"
      "                            signed (default: none asked); re-read on SIGHUP" },
    { "token-file", "FILE", CFG_PATH, CFG_OFF(token_file), 0, 0,
      "bearer tokens, one \"NAME TOKEN\" a line, that calls send as\n"
      "                            \"authorization: Bearer TOKEN\"; re-read on SIGHUP" },
    { "tcp-require-token", "on|off", CFG_SWITCH, CFG_OFF(tcp_require_token), 0, 1,
      "calls on TCP listeners, loopback too, need a token from\n"
      "                            --token-file; health checks never do" },
    { "allow-plaintext-network", "on|off", CFG_SWITCH, CFG_OFF(allow_plaintext_network), 0, 1,
      "allow TCP listeners without TLS beyond loopback: the network\n"
      "                            is trusted" },
    { "allow-uid", "LIST", CFG_LIST, CFG_OFF(allow_uid), 0, 0,
      "Unix-socket clients allowed: users or uids, comma-separated\n"
      "                            (default: anyone the socket file lets in)" },
    { "allow-gid", "LIST", CFG_LIST, CFG_OFF(allow_gid), 0, 0,
      "Unix-socket clients allowed by a group (primary or\n"
      "                            supplementary): groups or gids, comma-separated" },
    { "device", "SEL", CFG_DEVICE, CFG_OFF(device), 0, 0,
      "default device: an index, \"gpu\" or \"cpu\" (default: the first GPU)" },
    { "devices", "LIST", CFG_DEVICES, CFG_OFF(devices), 0, 0,
      "devices to open: auto (GPUs and accelerators; the CPU only\n"
      "                            where there is none), all, or a comma list of gpu, cpu,\n"
      "                            accelerator and indices as --devices all numbers them" },
    { "cache-dir", "DIR", CFG_PATH, CFG_OFF(cache_dir), 0, 0,
      "keep built kernels in DIR; \"none\": off (default\n"
      "                            $CACHE_DIRECTORY, else $XDG_CACHE_HOME/ampd, else\n"
      "                            $HOME/.cache/ampd)" },
    { "retune", "on|off", CFG_SWITCH, CFG_OFF(retune), 0, 1,
      "measure each GPU's kernel variants anew at start instead of\n"
      "                            taking the choice kept in --cache-dir (default off)" },
    { "max-message-bytes", "N", CFG_U64, CFG_OFF(max_message_bytes), 1,
      AMPD_MAX_MESSAGE_BYTES_LIMIT, "largest request or reply message" },
    { "max-connections", "N", CFG_U32, CFG_OFF(max_connections), 1, UINT32_MAX,
      "connections served at once" },
    { "max-jobs", "N", CFG_U32, CFG_OFF(max_jobs), 1, UINT32_MAX,
      "jobs queued or running, daemon-wide" },
    { "max-streams", "N", CFG_U32, CFG_OFF(max_streams), 1, INT32_MAX,
      "concurrent calls per connection" },
    { "max-job-memory", "N", CFG_U64, CFG_OFF(max_job_memory), 1, UINT64_MAX,
      "bytes held for all clients at once: requests arriving, jobs'\n"
      "                            input and output, replies not yet read" },
    { "max-connection-memory", "N", CFG_U64, CFG_OFF(max_connection_memory), 1, UINT64_MAX,
      "the same bytes, for one connection; 0: --max-job-memory / "
      CONFIG_STR(AMPD_DEFAULT_CONNECTION_MEMORY_SHARE) },
    { "max-client-memory", "N", CFG_U64, CFG_OFF(max_client_memory), 1, UINT64_MAX,
      "the same bytes, for one client over all its connections (as\n"
      "                            --max-client-streams names it); 0: --max-job-memory / "
      CONFIG_STR(AMPD_DEFAULT_CLIENT_MEMORY_SHARE) ",\n"
      "                            at least --max-connection-memory; --max-job-memory:\n"
      "                            no per-client limit" },
    { "max-client-streams", "N", CFG_U32, CFG_OFF(max_client_streams), 0, UINT32_MAX,
      "calls open at once per client: its token's name, else its\n"
      "                            uid or address, over all its connections; 0: no limit" },
    { "max-client-jobs", "N", CFG_U32, CFG_OFF(max_client_jobs), 0, UINT32_MAX,
      "jobs queued or running per client, as above; 0: no limit,\n"
      "                            though --max-jobs still bounds them all" },
    { "uid-weight", "UID:N", CFG_UID_WEIGHT, CFG_OFF(uid_weight), 1, JOB_WEIGHT_MAX,
      "the share of device time of a uid's calls beside other\n"
      "                            clients' (1.." CONFIG_STR(JOB_WEIGHT_MAX)
      ", default " CONFIG_STR(JOB_WEIGHT_DEFAULT) "); a token's weight= wins;\n"
      "                            repeatable; changed by SIGHUP" },
    { "uid-max-priority", "UID:LEVEL", CFG_UID_PRIORITY, CFG_OFF(uid_max_priority), 0, 0,
      "the highest amp-priority a uid's calls may ask for: low,\n"
      "                            normal or high (default normal); a token's\n"
      "                            max-priority= wins; repeatable; changed by SIGHUP" },
    { "max-queue-time", "LEVEL:TIME", CFG_QUEUE_TIME, CFG_OFF(max_queue_us), 0,
      AMPD_MAX_QUEUE_TIME_US,
      "a job of priority LEVEL that has not started within TIME\n"
      "                            (us, ms or s) ends UNAVAILABLE, unless its call sends\n"
      "                            amp-max-queue-time; 0: it waits (default); repeatable" },
    { "max-peer-connections", "N", CFG_U32, CFG_OFF(max_peer_connections), 1, UINT32_MAX,
      "connections from one uid (Unix socket) or address (TCP)" },
    { "request-timeout", "S", CFG_SECONDS, CFG_OFF(request_timeout_ms), 0,
      UINT32_MAX / TIME_MS_PER_S,
      "a request must arrive within S seconds plus its bytes at\n"
      "                            --min-request-rate; 0: never time out" },
    { "min-request-rate", "N", CFG_U64, CFG_OFF(min_request_rate), 1, UINT64_MAX,
      "bytes per second a request arrives at, at least" },
    { "send-timeout", "S", CFG_SECONDS, CFG_OFF(send_timeout_ms), 0,
      UINT32_MAX / TIME_MS_PER_S,
      "close a connection whose replies wait and make no write\n"
      "                            progress for S seconds (its client reads nothing),\n"
      "                            giving their bytes back; 0: never" },
    { "socket-mode", "MODE", CFG_MODE, CFG_OFF(socket_mode), 0, 0777,
      "permissions of Unix socket files, octal" },
    { "socket-group", "GROUP", CFG_GROUP, CFG_OFF(socket_group), 0, 0,
      "group of Unix socket files, a name or gid (default: ampd's own)" },
    { "regions", "on|off", CFG_SWITCH, CFG_OFF(regions), 0, 1,
      "shared-memory regions for Unix-socket clients, registered on\n"
      "                            PATH" ADDRESS_REGION_SUFFIX " beside each unix:PATH listener" },
    { "max-regions", "N", CFG_U32, CFG_OFF(max_regions), 1, UINT32_MAX,
      "regions one client may register at once" },
    { "max-region-bytes", "N", CFG_U64, CFG_OFF(max_region_bytes), 0, UINT64_MAX,
      "bytes of regions mapped at once, all clients together; 0:\n"
      "                            physical RAM / " CONFIG_STR(AMPD_REGION_RAM_SHARE) },
    { "max-client-region-bytes", "N", CFG_U64, CFG_OFF(max_client_region_bytes), 0, UINT64_MAX,
      "the same, for one uid's regions; 0: --max-region-bytes / "
      CONFIG_STR(AMPD_DEFAULT_CLIENT_REGION_SHARE) },
    { "staging-bytes", "N", CFG_U64, CFG_OFF(staging_bytes), AMPD_MIN_CHUNK_BYTES, UINT64_MAX,
      "pinned staging memory per device for streams" },
    { "chunk-bytes", "N", CFG_U64, CFG_OFF(chunk_bytes), AMPD_MIN_CHUNK_BYTES,
      AMPD_MAX_CHUNK_BYTES, "one staging buffer: a stream's unit of work, and\n"
      "                            the most device work a larger unary job's piece does" },
    { "max-device-memory", "N", CFG_U64, CFG_OFF(max_device_memory), 0, UINT64_MAX,
      "device bytes jobs may reserve at once, per device; 0: 90%" },
    { "max-unknown-length", "N", CFG_U64, CFG_OFF(max_unknown_length), 0, UINT64_MAX,
      "input a Stream may send with no header.total_length when its\n"
      "                            job needs all of it at once (a reverse step); its\n"
      "                            device reserves that much; 0: such streams are refused" },
    { "io-threads", "N", CFG_U32, CFG_OFF(io_threads), 0, AMPD_MAX_IO_THREADS,
      "I/O loops (threads) that serve connections, each owning its\n"
      "                            share end to end; 0: "
      CONFIG_STR(AMPD_DEFAULT_IO_THREADS) },
    { "host-max-bytes", "N", CFG_U64, CFG_OFF(host_max_bytes), 0, UINT64_MAX,
      "jobs this small run on the daemon's CPU threads when the\n"
      "                            client names no device; 0: never" },
    { "host-threads", "N", CFG_U32, CFG_OFF(host_threads), 0, AMPD_MAX_HOST_THREADS,
      "worker threads of that host path; 0: one per CPU, at most "
      CONFIG_STR(AMPD_DEFAULT_HOST_THREADS_MAX) },
    { "busy-poll", "US", CFG_U32, CFG_OFF(busy_poll_us), 0, AMPD_MAX_BUSY_POLL_US,
      "I/O loops, host workers and runners poll for work for US\n"
      "                            microseconds after their last, instead of\n"
      "                            sleeping: fewer wake-ups, more CPU; 0: off" },
    { "loop-boost", "N", CFG_U32, CFG_OFF(loop_boost), 0, AMPD_MAX_LOOP_BOOST,
      "I/O loops run N nice levels ahead of the daemon's other\n"
      "                            threads, where it may (CAP_SYS_NICE, LimitNICE=);\n"
      "                            0: off (default " CONFIG_STR(AMPD_DEFAULT_LOOP_BOOST) ")" },
    { "drain-delay", "S", CFG_SECONDS, CFG_OFF(drain_delay_ms), 0,
      UINT32_MAX / TIME_MS_PER_S,
      "on SIGTERM, first say not ready at /ready for S seconds while\n"
      "                            still serving, so a balancer's checks take\n"
      "                            ampd out of rotation before the drain (default 0)" },
    { "drain-timeout", "S", CFG_SECONDS, CFG_OFF(drain_timeout_ms), 0,
      UINT32_MAX / TIME_MS_PER_S, "on SIGTERM, wait at most S seconds for calls" },
    { "log-level", "LEVEL", CFG_LOG_LEVEL, CFG_OFF(log_level), 0, 0,
      "error, warn, info or debug: the least severe lines printed;\n"
      "                            changed by SIGHUP" },
    { "metrics-listen", "HOST:PORT", CFG_HOST_PORT, CFG_OFF(metrics_listen), 0, 0,
      "serve Prometheus metrics over HTTP at /metrics on HOST:PORT,\n"
      "                            a loopback address (default: off)" },
    { "metrics-allow-remote", "on|off", CFG_SWITCH, CFG_OFF(metrics_allow_remote), 0, 1,
      "let --metrics-listen be an address other than loopback" },
    { "idle-timeout", "S", CFG_SECONDS, CFG_OFF(idle_timeout_ms), 0,
      UINT32_MAX / TIME_MS_PER_S,
      "close a connection with no call open for S seconds; 0: never" },
    { "max-unauthenticated-connections", "N", CFG_U32, CFG_OFF(max_unauth_connections), 0,
      UINT32_MAX,
      "of --max-connections, those not yet authenticated (TCP before\n"
      "                            a call with a token; Health calls only); 0:\n"
      "                            --max-connections / " CONFIG_STR(AMPD_DEFAULT_UNAUTH_CONNECTION_SHARE) },
    { "handshake-timeout", "S", CFG_SECONDS, CFG_OFF(handshake_timeout_ms), 0,
      UINT32_MAX / TIME_MS_PER_S, "a TLS handshake must finish within S seconds; 0: never" },
};

#define CONFIG_NOPTS (sizeof(config_opts) / sizeof(config_opts[0]))

static void config_defaults(struct config *cfg);
static void config_value(const struct config *cfg, const struct config_opt *o, char *out,
                         size_t outlen);

/* o's value in config_defaults() as --help shows it: sizes with their
 * suffix, other numbers and words as config_value() writes them; "" for the
 * string kinds, whose help says their default in words. */
static void config_default_text(const struct config_opt *o, const struct config *d, char *buf,
                                size_t len)
{
    switch (o->kind) {
    case CFG_U64: {
        uint64_t v;
        memcpy(&v, (const char *)d + o->offset, sizeof v);
        size_text_format(v, buf, len);
        return;
    }
    case CFG_U32: case CFG_SECONDS: case CFG_MODE: case CFG_SWITCH: case CFG_LOG_LEVEL:
    case CFG_DEVICES:
        config_value(d, o, buf, len);
        return;
    default:
        buf[0] = '\0';
        return;
    }
}

/* One option's help, its default (from config_defaults(), so that each
 * default is written once, in config.h) appended, wrapped at the width. */
static void config_usage_opt(const struct config_opt *o, const struct config *d)
{
    char flag[2 * CONFIG_HELP_COLUMN];
    snprintf(flag, sizeof(flag), "--%s %s", o->name, o->arg);
    if (strlen(flag) >= CONFIG_HELP_COLUMN - 2)   /* too wide: its help on the next line */
        printf("  %s\n%*s%s", flag, CONFIG_HELP_COLUMN, "", o->help);
    else
        printf("  %-*s%s", CONFIG_HELP_COLUMN - 2, flag, o->help);
    char value[SIZE_TEXT_MAX];
    config_default_text(o, d, value, sizeof value);
    if (value[0]) {
        const char *last = strrchr(o->help, '\n');   /* a last line holds its indent */
        size_t col = last ? strlen(last + 1) : CONFIG_HELP_COLUMN + strlen(o->help);
        if (col + strlen(" (default )") + strlen(value) > CONFIG_HELP_WIDTH)
            printf("\n%*s(default %s)", CONFIG_HELP_COLUMN, "", value);
        else
            printf(" (default %s)", value);
    }
    printf("\n");
}

static void config_usage(void)
{
    struct config d;
    config_defaults(&d);
    printf("usage: ampd [options]\n"
           "Runs data-parallel byte jobs on OpenCL devices for gRPC clients.\n\n"
           "  --config FILE             read \"key = value\" lines; keys are the long\n"
           "                            option names; the command line overrides them\n");
    for (size_t i = 0; i < CONFIG_NOPTS; i++)
        config_usage_opt(&config_opts[i], &d);
    printf("  --check-config            check the options, the config file and the files\n"
           "                            they name (tokens, TLS), open no device, bind\n"
           "                            nothing; exit 0 if they would start, else 2\n"
           "  --help                    show this help\n"
           "  --version                 show the version\n"
           "Sizes (N) take a K, M, G or T suffix, or KiB, MiB, GiB, TiB (powers of 1024),\n"
           "or KB, MB, GB, TB (powers of 1000). Durations (S) are seconds, or take a\n"
           "unit: us, ms, s, m or h (500ms, 1.5m).\n"
           "\n"
           "Exit status:\n"
           "  0  a clean drain; --help, --version; --check-config on a good configuration\n"
           "  1  cannot start: no OpenCL device, --devices matching none, an address it\n"
           "     cannot listen on, a token or TLS file it cannot load\n"
           "  2  a bad option or configuration file (--check-config: any error)\n");
}

static const struct config_opt *config_find(const char *name, size_t namelen)
{
    for (size_t i = 0; i < CONFIG_NOPTS; i++)
        if (strlen(config_opts[i].name) == namelen && strncmp(config_opts[i].name, name, namelen) == 0)
            return &config_opts[i];
    return NULL;
}

/* Parses an octal permission mode ("660" or "0660"). */
static int config_octal(const char *text, uint64_t *out)
{
    if (*text < '0' || *text > '7')
        return -1;
    errno = 0;
    char *end;
    unsigned long v = strtoul(text, &end, 8);
    if (errno != 0 || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

/* A number of o's kind from value: a size, an octal mode, or a duration
 * (seconds bare, in milliseconds here). */
static int config_number(const struct config_opt *o, const char *value, uint64_t *v)
{
    if (o->kind == CFG_MODE)
        return config_octal(value, v);
    if (o->kind != CFG_SECONDS)
        return size_text_parse(value, v);
    uint64_t us;
    if (duration_text_parse(value, CONFIG_US_PER_S, UINT64_MAX, &us) != 0)
        return -1;
    *v = (us + CONFIG_US_PER_MS - 1) / CONFIG_US_PER_MS;
    return 0;
}

static int config_set_number(struct config *cfg, const struct config_opt *o, const char *value,
                             char *err, size_t errlen)
{
    uint64_t v;
    bool ms = o->kind == CFG_SECONDS;   /* its min and max are seconds */
    if (config_number(o, value, &v) != 0) {
        snprintf(err, errlen, "--%s: \"%s\" is not %s", o->name, value,
                 o->kind == CFG_MODE ? "an octal mode (0..0777)"
                 : ms ? "a duration (seconds, or with a unit: us, ms, s, m, h)"
                      : "a number (with a K, M, G, T, KiB, MiB, GiB, TiB, KB, MB, GB or TB suffix "
                        "for sizes)");
        return -1;
    }
    uint64_t lo = ms ? o->min * TIME_MS_PER_S : o->min, hi = ms ? o->max * TIME_MS_PER_S : o->max;
    if (v < lo || v > hi) {
        snprintf(err, errlen, "--%s: \"%s\" is out of range (%" PRIu64 "..%" PRIu64 "%s)", o->name,
                 value, o->min, o->max, ms ? " s" : "");
        return -1;
    }
    char *field = (char *)cfg + o->offset;
    if (o->kind == CFG_U64)
        *(uint64_t *)field = v;
    else
        *(uint32_t *)field = (uint32_t)v;
    return 0;
}

_Static_assert(AMPD_PRIORITIES == CALL_CLASS_PRIORITIES, "one priority list");

/* --max-queue-time's durations: a number and a unit (none bare) of us, ms
 * or s. Not m or h: in grpc-timeout, the amp-max-queue-time header's
 * format, "5m" is 5 ms, so a copied header value is refused rather than
 * read as minutes. */
static int config_time_us(const char *text, uint64_t *us)
{
    size_t n = strlen(text);
    if (n && (text[n - 1] == 'h' || text[n - 1] == 'm'))
        return -1;
    return duration_text_parse(text, 0, UINT64_MAX, us);
}

/* --uid-weight UID:N and --uid-max-priority UID:LEVEL: the entry for UID
 * is added, or replaces an earlier one. */
static int config_set_uid_rule(struct config *cfg, const struct config_opt *o,
                               const char *value, char *err, size_t errlen)
{
    struct config_uid_rules *rules = (struct config_uid_rules *)((char *)cfg + o->offset);
    const char *colon = strchr(value, ':');
    char *end;
    errno = 0;
    unsigned long uid = strtoul(value, &end, 10);
    /* (uid_t)-1 means "no id" to the kernel: never a caller's. */
    bool uid_ok = value[0] >= '0' && value[0] <= '9' && end == colon && !errno && uid < UINT32_MAX;
    uint64_t v = 0;
    int p = colon ? call_class_priority_parse(colon + 1, strlen(colon + 1)) : -1;
    bool value_ok = colon && (o->kind == CFG_UID_PRIORITY
                                  ? p >= 0
                                  : size_text_parse(colon + 1, &v) == 0 && v >= o->min &&
                                        v <= o->max);
    if (!uid_ok || !value_ok) {
        if (o->kind == CFG_UID_PRIORITY)
            snprintf(err, errlen, "--%s: \"%s\" is not UID:LEVEL (a uid, and low, normal or "
                     "high)", o->name, value);
        else
            snprintf(err, errlen, "--%s: \"%s\" is not UID:N (a uid, and a weight in "
                     "%" PRIu64 "..%" PRIu64 ")", o->name, value, o->min, o->max);
        return -1;
    }
    uint32_t i = 0;
    while (i < rules->n && rules->r[i].uid != uid)
        i++;
    if (i == AMPD_MAX_UID_RULES) {
        snprintf(err, errlen, "--%s: at most %d uids", o->name, AMPD_MAX_UID_RULES);
        return -1;
    }
    rules->r[i].uid = (uint32_t)uid;
    rules->r[i].value = o->kind == CFG_UID_PRIORITY ? (uint32_t)p : (uint32_t)v;
    if (i == rules->n)
        rules->n++;
    return 0;
}

/* --max-queue-time LEVEL:TIME: the default of that priority. */
static int config_set_queue_time(struct config *cfg, const struct config_opt *o,
                                 const char *value, char *err, size_t errlen)
{
    const char *colon = strchr(value, ':');
    int p = colon ? call_class_priority_parse(value, (size_t)(colon - value)) : -1;
    uint64_t us;
    if (p < 0 || config_time_us(colon + 1, &us) != 0 || us > o->max) {
        snprintf(err, errlen, "--%s: \"%s\" is not LEVEL:TIME (low, normal or high, and a "
                 "time with a unit, us, ms or s, up to %" PRIu64 " s)", o->name, value,
                 o->max / CONFIG_US_PER_S);
        return -1;
    }
    cfg->max_queue_us[p] = us;
    return 0;
}

static int config_set(struct config *cfg, const struct config_opt *o, const char *value,
                      char *err, size_t errlen)
{
    struct address addr;
    char why[128];
    switch (o->kind) {
    case CFG_LISTEN:
        if (cfg->nlisten == AMPD_MAX_LISTEN) {
            snprintf(err, errlen, "--listen: at most %d addresses", AMPD_MAX_LISTEN);
            return -1;
        }
        if (strlen(value) >= AMPD_ADDRESS_MAX || address_parse(value, &addr, why, sizeof(why)) != 0) {
            snprintf(err, errlen, "--listen %s: %s", value,
                     strlen(value) >= AMPD_ADDRESS_MAX ? "too long" : why);
            return -1;
        }
        snprintf(cfg->listen[cfg->nlisten++], AMPD_ADDRESS_MAX, "%s", value);
        return 0;
    case CFG_DEVICE:
        if (strlen(value) >= sizeof(cfg->device)) {
            snprintf(err, errlen, "--device: \"%s\" is too long", value);
            return -1;
        }
        snprintf(cfg->device, sizeof(cfg->device), "%s", value);
        return 0;
    case CFG_DEVICES: {
        struct dev_select sel;
        if (strlen(value) >= sizeof(cfg->devices)) {
            snprintf(err, errlen, "--devices: the list is too long");
            return -1;
        }
        if (dev_select_parse(value, &sel, err, errlen) < 0)
            return -1;
        snprintf(cfg->devices, sizeof(cfg->devices), "%s", value);
        return 0;
    }
    case CFG_GROUP:
        if (strlen(value) >= sizeof(cfg->socket_group)) {
            snprintf(err, errlen, "--socket-group: \"%s\" is too long", value);
            return -1;
        }
        snprintf(cfg->socket_group, sizeof(cfg->socket_group), "%s", value);
        return 0;
    case CFG_PATH:
    case CFG_LIST:
        if (strlen(value) >= AMPD_PATH_MAX) {
            snprintf(err, errlen, "--%s: the %s is too long", o->name,
                     o->kind == CFG_PATH ? "file name" : "list");
            return -1;
        }
        snprintf((char *)cfg + o->offset, AMPD_PATH_MAX, "%s", value);
        return 0;
    case CFG_LOG_LEVEL: {
        enum log_level level;
        if (log_level_parse(value, &level) != 0) {
            snprintf(err, errlen, "--%s: \"%s\" is not error, warn, info or debug", o->name, value);
            return -1;
        }
        *(uint32_t *)((char *)cfg + o->offset) = (uint32_t)level;
        return 0;
    }
    case CFG_HOST_PORT:
        if (strlen(value) >= AMPD_ADDRESS_MAX) {
            snprintf(err, errlen, "--%s %s: too long", o->name, value);
            return -1;
        }
        if (address_parse(value, &addr, why, sizeof(why)) != 0) {
            snprintf(err, errlen, "--%s %s: %s", o->name, value, why);
            return -1;
        }
        if (addr.kind != ADDRESS_TCP || addr.tls) {   /* metrics and health: plaintext */
            snprintf(err, errlen, "--%s %s: want HOST:PORT (plain TCP)", o->name, value);
            return -1;
        }
        snprintf((char *)cfg + o->offset, AMPD_ADDRESS_MAX, "%s", value);
        return 0;
    case CFG_UID_WEIGHT:
    case CFG_UID_PRIORITY:
        return config_set_uid_rule(cfg, o, value, err, errlen);
    case CFG_QUEUE_TIME:
        return config_set_queue_time(cfg, o, value, err, errlen);
    case CFG_SWITCH:
        if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0) {
            snprintf(err, errlen, "--%s: \"%s\" is not on or off", o->name, value);
            return -1;
        }
        *(uint32_t *)((char *)cfg + o->offset) = value[1] == 'n';
        return 0;
    default:
        return config_set_number(cfg, o, value, err, errlen);
    }
}

uint32_t config_max_unauth(const struct config *cfg)
{
    uint32_t n = cfg->max_unauth_connections;
    if (!n)
        n = cfg->max_connections / AMPD_DEFAULT_UNAUTH_CONNECTION_SHARE;
    if (!n)
        n = 1;
    return n < cfg->max_connections ? n : cfg->max_connections;
}

static void config_defaults(struct config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->max_message_bytes = AMPD_DEFAULT_MAX_MESSAGE_BYTES;
    cfg->max_connections = AMPD_DEFAULT_MAX_CONNECTIONS;
    cfg->max_jobs = AMPD_DEFAULT_MAX_JOBS;
    cfg->max_streams = AMPD_DEFAULT_MAX_STREAMS;
    cfg->max_job_memory = AMPD_DEFAULT_MAX_JOB_MEMORY;
    cfg->max_peer_connections = AMPD_DEFAULT_MAX_PEER_CONNECTIONS;
    cfg->request_timeout_ms = AMPD_DEFAULT_REQUEST_TIMEOUT_MS;
    cfg->send_timeout_ms = AMPD_DEFAULT_SEND_TIMEOUT_MS;
    cfg->handshake_timeout_ms = AMPD_DEFAULT_HANDSHAKE_TIMEOUT_MS;
    cfg->idle_timeout_ms = AMPD_DEFAULT_IDLE_TIMEOUT_MS;
    cfg->min_request_rate = AMPD_DEFAULT_MIN_REQUEST_RATE;
    cfg->socket_mode = AMPD_DEFAULT_SOCKET_MODE;
    cfg->drain_timeout_ms = AMPD_DEFAULT_DRAIN_TIMEOUT_MS;
    cfg->staging_bytes = AMPD_DEFAULT_STAGING_BYTES;
    cfg->max_unknown_length = AMPD_DEFAULT_MAX_UNKNOWN_LENGTH;
    cfg->chunk_bytes = AMPD_DEFAULT_CHUNK_BYTES;
    cfg->regions = 1;
    cfg->tcp_require_token = 1;
    cfg->max_regions = AMPD_DEFAULT_MAX_REGIONS;
    cfg->host_max_bytes = AMPD_DEFAULT_HOST_MAX_BYTES;
    cfg->busy_poll_us = AMPD_DEFAULT_BUSY_POLL_US;
    cfg->loop_boost = AMPD_DEFAULT_LOOP_BOOST;
    cfg->log_level = LOG_INFO;
    snprintf(cfg->devices, sizeof(cfg->devices), "%s", AMPD_DEFAULT_DEVICES);
}

/* --host-threads 0: a thread per online CPU, up to max. */
static uint32_t config_threads_auto(uint32_t max)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1)
        return 1;
    return cpus < max ? (uint32_t)cpus : max;
}

/* --max-region-bytes and --max-client-region-bytes 0: shares of the host's
 * RAM (config.h says why). */
static void config_region_bytes(struct config *cfg)
{
    if (!cfg->max_region_bytes) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        cfg->max_region_bytes = pages > 0 && page > 0
                                    ? (uint64_t)pages * (uint64_t)page / AMPD_REGION_RAM_SHARE
                                    : 1;
    }
    if (!cfg->max_client_region_bytes) {
        cfg->max_client_region_bytes = cfg->max_region_bytes / AMPD_DEFAULT_CLIENT_REGION_SHARE;
        if (!cfg->max_client_region_bytes)
            cfg->max_client_region_bytes = cfg->max_region_bytes;
    }
    if (cfg->max_client_region_bytes > cfg->max_region_bytes)
        cfg->max_client_region_bytes = cfg->max_region_bytes;
}

/* TLS files go with tls: listeners, and the key with the certificate. */
static int config_check_tls(const struct config *cfg, char *err, size_t errlen)
{
    bool tls_listen = false;
    for (size_t i = 0; i < cfg->nlisten; i++) {
        struct address a;
        tls_listen |= address_parse(cfg->listen[i], &a, NULL, 0) == 0 && a.tls;
    }
    if (!cfg->tls_cert[0] != !cfg->tls_key[0]) {
        snprintf(err, errlen, "--tls-cert and --tls-key go together");
        return -1;
    }
    if (tls_listen && !cfg->tls_cert[0]) {
        snprintf(err, errlen, "a tls: listener needs --tls-cert and --tls-key");
        return -1;
    }
    if (!tls_listen && (cfg->tls_cert[0] || cfg->tls_client_ca[0])) {
        snprintf(err, errlen, "--tls-cert or --tls-client-ca without a --listen tls:HOST:PORT "
                              "address to use them");
        return -1;
    }
    return 0;
}

/* Settings that only make sense together. */
static int config_check(struct config *cfg, char *err, size_t errlen)
{
    if (config_check_tls(cfg, err, errlen) != 0)
        return -1;
    if (!cfg->io_threads)
        cfg->io_threads = AMPD_DEFAULT_IO_THREADS;
    if (!cfg->host_threads)
        cfg->host_threads = config_threads_auto(AMPD_DEFAULT_HOST_THREADS_MAX);
    if (!cfg->max_connection_memory) {
        cfg->max_connection_memory = cfg->max_job_memory / AMPD_DEFAULT_CONNECTION_MEMORY_SHARE;
        if (!cfg->max_connection_memory)
            cfg->max_connection_memory = cfg->max_job_memory;
    }
    if (cfg->max_connection_memory > cfg->max_job_memory)
        cfg->max_connection_memory = cfg->max_job_memory;
    /* On by default, unlike the call and job shares (issue 33): without it
     * one client's unread replies on a few connections held every byte and
     * locked the others out. It costs a second lock per take (bench/RESULTS.md:
     * up to a third of a busy client's tiny calls/s); --max-job-memory turns it off. */
    if (!cfg->max_client_memory) {
        cfg->max_client_memory = cfg->max_job_memory / AMPD_DEFAULT_CLIENT_MEMORY_SHARE;
        if (cfg->max_client_memory < cfg->max_connection_memory)
            cfg->max_client_memory = cfg->max_connection_memory;
    }
    if (cfg->max_client_memory > cfg->max_job_memory)
        cfg->max_client_memory = cfg->max_job_memory;
    config_region_bytes(cfg);
    if (cfg->chunk_bytes % AMPD_CHUNK_ALIGN) {
        snprintf(err, errlen, "--chunk-bytes must be a multiple of %d", AMPD_CHUNK_ALIGN);
        return -1;
    }
    if (cfg->staging_bytes < cfg->chunk_bytes) {
        snprintf(err, errlen, "--staging-bytes must hold at least one --chunk-bytes buffer");
        return -1;
    }
    /* A chunk travels back in reply messages under the limit (and under
     * gRPC's default 4 MiB, rpc_stream.c): a chunk within it keeps them few. */
    if (cfg->chunk_bytes + AMPD_REPLY_OVERHEAD > cfg->max_message_bytes) {
        uint64_t room = cfg->max_message_bytes > AMPD_REPLY_OVERHEAD
                            ? cfg->max_message_bytes - AMPD_REPLY_OVERHEAD : 0;
        cfg->chunk_bytes = room / AMPD_CHUNK_ALIGN * AMPD_CHUNK_ALIGN;
        if (cfg->chunk_bytes == 0)
            cfg->chunk_bytes = AMPD_CHUNK_ALIGN;
    }
    return 0;
}

static char *config_trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    char *end = s + strlen(s);
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
        *--end = '\0';
    return s;
}

/* Cuts an inline comment: a # at the line's start or after a blank, so
 * that "max-jobs = 8   # for the bench host" is 8, while a # inside a
 * value ("/srv/a#b") stays. */
static void config_cut_comment(char *s)
{
    for (char *p = s; *p; p++) {
        if (*p == '#' && (p == s || p[-1] == ' ' || p[-1] == '\t')) {
            *p = '\0';
            return;
        }
    }
}

/* One "key = value" line; blank lines and # comments are skipped. */
static int config_file_line(struct config *cfg, char *line, const char *path, int lineno,
                            char *err, size_t errlen)
{
    config_cut_comment(line);
    char *s = config_trim(line);
    if (!*s)
        return 0;
    char *eq = strchr(s, '=');
    if (!eq) {
        snprintf(err, errlen, "%s:%d: expected \"key = value\"", path, lineno);
        return -1;
    }
    *eq = '\0';
    char *key = config_trim(s), *value = config_trim(eq + 1);
    const struct config_opt *o = config_find(key, strlen(key));
    if (!o) {
        snprintf(err, errlen, "%s:%d: unknown key \"%s\"", path, lineno, key);
        return -1;
    }
    char why[256];
    if (config_set(cfg, o, value, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
        return -1;
    }
    return 0;
}

/* Lines of any length: a long comment must stay a comment, never be cut
 * into a tail that parses as a setting. A NUL byte (not text, and it would
 * end the line's string early) is refused, and a byte order mark before
 * the first key is skipped. */
static int config_file(struct config *cfg, const char *path, char *err, size_t errlen)
{
    FILE *f = read_file_stream("--config", path, NULL, err, errlen);
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, rv = 0;
    while (rv == 0 && (len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        size_t skip = lineno == 1 ? read_file_bom(line, (size_t)len) : 0;
        if (memchr(line, '\0', (size_t)len)) {
            snprintf(err, errlen, "%s:%d: a NUL byte; a config file is text", path, lineno);
            rv = -1;
        } else {
            rv = config_file_line(cfg, line + skip, path, lineno, err, errlen);
        }
    }
    if (rv == 0 && ferror(f)) {
        snprintf(err, errlen, "--config %s: read error", path);
        rv = -1;
    }
    free(line);
    fclose(f);
    return rv;
}

/* Splits argv[*i] into an option name ("--k v" or "--k=v"). */
static int config_arg_name(const char *a, const char **name, size_t *namelen, char *err,
                           size_t errlen)
{
    if (strncmp(a, "--", 2) != 0) {
        snprintf(err, errlen, "unexpected argument \"%s\"", a);
        return -1;
    }
    *name = a + 2;
    const char *eq = strchr(*name, '=');
    *namelen = eq ? (size_t)(eq - *name) : strlen(*name);
    return 0;
}

/* The value of the option at argv[*i], which may be the next argument. */
static int config_arg_value(int argc, char **argv, int *i, const char **value, char *err,
                            size_t errlen)
{
    const char *eq = strchr(argv[*i], '=');
    if (eq) {
        *value = eq + 1;
    } else if (*i + 1 < argc) {
        *value = argv[++*i];
    } else {
        snprintf(err, errlen, "%s needs a value", argv[*i]);
        return -1;
    }
    return 0;
}

/* The one option that takes no value and is no setting. */
#define CONFIG_CHECK_FLAG "--check-config"

static bool config_flag(const char *arg, const char *name)
{
    return strcmp(arg, name) == 0;
}

/* Handles --help/--version and finds --config and --check-config before
 * anything else. */
static enum config_result config_prescan(int argc, char **argv, const char **file,
                                         bool *check_only)
{
    for (int i = 1; i < argc; i++) {
        if (config_flag(argv[i], CONFIG_CHECK_FLAG)) {
            *check_only = true;
            continue;
        }
        if (config_flag(argv[i], "--help") || config_flag(argv[i], "-h")) {
            config_usage();
            return CONFIG_EXIT;
        }
        if (config_flag(argv[i], "--version")) {
            printf("ampd %s\n", AMP_VERSION);
            return CONFIG_EXIT;
        }
        if (config_flag(argv[i], "--config") && i + 1 < argc)
            *file = argv[i + 1];
        else if (strncmp(argv[i], "--config=", 9) == 0)
            *file = argv[i] + 9;
    }
    return CONFIG_RUN;
}

static int config_argv(struct config *cfg, int argc, char **argv, char *err, size_t errlen)
{
    bool cli_listen = false;
    for (int i = 1; i < argc; i++) {
        const char *name, *value;
        size_t namelen;
        if (config_flag(argv[i], CONFIG_CHECK_FLAG))
            continue;   /* config_prescan's */
        if (config_arg_name(argv[i], &name, &namelen, err, errlen) != 0)
            return -1;
        bool is_config = namelen == strlen("config") && strncmp(name, "config", namelen) == 0;
        const struct config_opt *o = is_config ? NULL : config_find(name, namelen);
        if (!is_config && !o) {
            snprintf(err, errlen, "unknown option --%.*s (see --help)", (int)namelen, name);
            return -1;
        }
        if (config_arg_value(argc, argv, &i, &value, err, errlen) != 0)
            return -1;
        if (is_config)
            continue;
        if (o->kind == CFG_LISTEN && !cli_listen) {
            cfg->nlisten = 0; /* the command line's addresses replace the file's */
            cli_listen = true;
        }
        if (config_set(cfg, o, value, err, errlen) != 0)
            return -1;
    }
    return 0;
}

/* A list kind's entries as text, space-separated, as they would be
 * written on the command line. */
static void config_value_list(const struct config *cfg, const struct config_opt *o, char *out,
                              size_t outlen)
{
    size_t n = 0;
    out[0] = '\0';
    if (o->kind == CFG_QUEUE_TIME) {
        for (int p = 0; p < CALL_CLASS_PRIORITIES && n < outlen; p++)
            if (cfg->max_queue_us[p])
                n += (size_t)snprintf(out + n, outlen - n, "%s%s:%" PRIu64 "us", n ? " " : "",
                                      call_class_priority_name(p), cfg->max_queue_us[p]);
        return;
    }
    const struct config_uid_rules *rules =
        (const struct config_uid_rules *)((const char *)cfg + o->offset);
    for (uint32_t i = 0; i < rules->n && n < outlen; i++) {
        uint32_t v = rules->r[i].value;
        if (o->kind == CFG_UID_PRIORITY)
            n += (size_t)snprintf(out + n, outlen - n, "%s%" PRIu32 ":%s", n ? " " : "",
                                  rules->r[i].uid, call_class_priority_name((int)v));
        else
            n += (size_t)snprintf(out + n, outlen - n, "%s%" PRIu32 ":%" PRIu32, n ? " " : "",
                                  rules->r[i].uid, v);
    }
}

/* o's value in cfg as text, as it would be written in the file. */
static void config_value(const struct config *cfg, const struct config_opt *o, char *out,
                         size_t outlen)
{
    const char *field = (const char *)cfg + o->offset;
    uint32_t u32 = 0;
    if (o->kind == CFG_U32 || o->kind == CFG_SECONDS || o->kind == CFG_MODE
        || o->kind == CFG_SWITCH || o->kind == CFG_LOG_LEVEL)
        memcpy(&u32, field, sizeof u32);
    switch (o->kind) {
    case CFG_LISTEN: {
        size_t n = 0;
        out[0] = '\0';
        for (size_t i = 0; i < cfg->nlisten && n < outlen; i++)
            n += (size_t)snprintf(out + n, outlen - n, "%s%s", i ? " " : "", cfg->listen[i]);
        return;
    }
    case CFG_U64: {
        uint64_t v;
        memcpy(&v, field, sizeof v);
        snprintf(out, outlen, "%" PRIu64, v);
        return;
    }
    case CFG_U32: snprintf(out, outlen, "%" PRIu32, u32); return;
    case CFG_SECONDS: snprintf(out, outlen, "%" PRIu32, u32 / TIME_MS_PER_S); return;
    case CFG_MODE: snprintf(out, outlen, "0%" PRIo32, u32); return;
    case CFG_SWITCH: snprintf(out, outlen, "%s", u32 ? "on" : "off"); return;
    case CFG_LOG_LEVEL: snprintf(out, outlen, "%s", log_level_name((enum log_level)u32)); return;
    case CFG_UID_WEIGHT: case CFG_UID_PRIORITY: case CFG_QUEUE_TIME:
        config_value_list(cfg, o, out, outlen);
        return;
    default: snprintf(out, outlen, "%s", field); return;   /* the string kinds */
    }
}

void config_changes(const struct config *old, const struct config *now,
                    void (*changed)(const char *name, const char *was, const char *is, void *ctx),
                    void *ctx)
{
    char was[CONFIG_VALUE_TEXT_MAX], is[CONFIG_VALUE_TEXT_MAX];
    for (size_t i = 0; i < CONFIG_NOPTS; i++) {
        config_value(old, &config_opts[i], was, sizeof was);
        config_value(now, &config_opts[i], is, sizeof is);
        if (strcmp(was, is) != 0)
            changed(config_opts[i].name, was, is, ctx);
    }
}

enum config_result config_load(struct config *cfg, int argc, char **argv, char *err, size_t errlen)
{
    config_defaults(cfg);
    cfg->argc = argc;
    cfg->argv = argv;
    const char *file = NULL;
    if (config_prescan(argc, argv, &file, &cfg->check_only) == CONFIG_EXIT)
        return CONFIG_EXIT;
    if (file && config_file(cfg, file, err, errlen) != 0)
        return CONFIG_ERROR;
    if (config_argv(cfg, argc, argv, err, errlen) != 0 || config_check(cfg, err, errlen) != 0)
        return CONFIG_ERROR;
    if (cfg->nlisten == 0)
        snprintf(cfg->listen[cfg->nlisten++], AMPD_ADDRESS_MAX, "%s", AMPD_DEFAULT_LISTEN);
    return CONFIG_RUN;
}
