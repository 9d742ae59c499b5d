/* SPDX-License-Identifier: MIT */
/* config.h: ampd's settings, from the command line and a config file.
 *
 * Every setting is a long option; a config file (--config FILE) holds lines
 * "key = value" with the same names, and the command line overrides it.
 * The defaults below are the daemon's documented limits.
 */
#ifndef AMPD_CONFIG_H
#define AMPD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Must equal AMP_DEFAULT_ADDRESS in client/include/amp.h. */
#define AMPD_DEFAULT_LISTEN "unix:/run/ampd/ampd.sock"

#define AMPD_DEFAULT_MAX_MESSAGE_BYTES (64ull * 1024 * 1024)
#define AMPD_DEFAULT_MAX_CONNECTIONS 256
#define AMPD_DEFAULT_MAX_JOBS 1024
#define AMPD_DEFAULT_MAX_STREAMS 100   /* gRPC's usual MAX_CONCURRENT_STREAMS */
#define AMPD_DEFAULT_MAX_JOB_MEMORY (1024ull * 1024 * 1024)
#define AMPD_DEFAULT_DRAIN_TIMEOUT_MS 30000
/* A connection may hold this share of --max-job-memory unless told otherwise. */
#define AMPD_DEFAULT_CONNECTION_MEMORY_SHARE 4
/* And a client (all its connections) this share, so that no one client can
 * hold it all (issues 13 and 33), unless told otherwise; never less than a
 * connection. A half: any other client finds at least the other half. */
#define AMPD_DEFAULT_CLIENT_MEMORY_SHARE 2
#define AMPD_DEFAULT_MAX_PEER_CONNECTIONS 64
/* Connections not yet authenticated (TCP before a token, Health-only) may
 * hold this share of --max-connections unless told otherwise: the rest is
 * kept for Unix-socket peers and connections that proved a token. */
#define AMPD_DEFAULT_UNAUTH_CONNECTION_SHARE 4
/* A TLS handshake must finish this soon (nginx's ssl_handshake_timeout,
 * HAProxy's timeout client-hs): a real one takes milliseconds. */
#define AMPD_DEFAULT_HANDSHAKE_TIMEOUT_MS 5000
/* A connection with no call open closes after this long (nginx's
 * keepalive_timeout is 75 s; clients reconnect on their next call). */
#define AMPD_DEFAULT_IDLE_TIMEOUT_MS 300000
#define AMPD_DEFAULT_REQUEST_TIMEOUT_MS 10000
/* A connection whose replies wait and make no write progress this long
 * (its client reads nothing) is closed, so that its bytes come back. */
#define AMPD_DEFAULT_SEND_TIMEOUT_MS 10000
#define AMPD_DEFAULT_MIN_REQUEST_RATE (64ull * 1024)
#define AMPD_DEFAULT_SOCKET_MODE 0660
#define AMPD_GROUP_MAX 64
#define AMPD_DEFAULT_MAX_REGIONS 64
/* --max-region-bytes 0 (the default): physical RAM / this. A GPU's driver
 * pins every page of a region it copies from (page-locked: neither
 * reclaimed nor swapped), so regions may lock at most this share of the
 * host and leave the rest to the kernel, ampd's own staging and job memory
 * and every other program; a fixed 64G exceeded many hosts' RAM. */
#define AMPD_REGION_RAM_SHARE 2
/* --max-client-region-bytes 0 (the default): --max-region-bytes / this, so
 * that one uid cannot take all of it and at least this many can have
 * regions at once. */
#define AMPD_DEFAULT_CLIENT_REGION_SHARE 4
#define AMPD_DEFAULT_STAGING_BYTES (64ull * 1024 * 1024)
#define AMPD_DEFAULT_CHUNK_BYTES (4ull * 1024 * 1024)
#define AMPD_MIN_CHUNK_BYTES (64ull * 1024)
#define AMPD_MAX_CHUNK_BYTES (256ull * 1024 * 1024)
/* Chunks hold whole 16-byte words (kernels' vector width) and so whole
 * elements of every type. */
#define AMPD_CHUNK_ALIGN 16
/* A Stream whose job needs all of its input at once (a reverse step) and
 * whose header gives no total_length may send this much; its device
 * reserves it (rpc_stream.c). */
#define AMPD_DEFAULT_MAX_UNKNOWN_LENGTH (256ull * 1024 * 1024)
/* Room in a reply message besides a chunk's bytes (protobuf framing). */
#define AMPD_REPLY_OVERHEAD 256

/* --io-threads 0 (the default): this many I/O loops, whatever the CPUs. A
 * loop moves one busy stream at about the socket's speed, and a
 * connection is placed when it is accepted, before anyone knows whether it
 * will be busy: loops are many so that busy connections seldom share one,
 * and a light client's connection seldom shares one with a busy client's.
 * More loops than CPUs cost sleeping threads (malloc's arenas go by the
 * CPUs: main.c). On 2 cores beside a neighbour's bulk work, a small
 * call's loop that also served the neighbour's connections waited for a
 * CPU at each of its wake-ups, and with a loop of its own (and
 * --loop-boost) it got one at once (bench/RESULTS.md, "Sharing a GPU
 * between clients", session 22). */
#define AMPD_DEFAULT_IO_THREADS 16
#define AMPD_MAX_IO_THREADS 64

/* The host path (host.h): jobs of at most this many bytes, when the daemon
 * picks the device; a GPU launch and round trip cost tens of microseconds,
 * host_step.c's loops about a nanosecond a byte. */
#define AMPD_DEFAULT_HOST_MAX_BYTES (64ull * 1024)
/* --host-threads 0 (the default): one worker per online CPU, at most this many. */
#define AMPD_DEFAULT_HOST_THREADS_MAX 4
#define AMPD_MAX_HOST_THREADS 64
/* --busy-poll: I/O loops, host workers and runners poll this long after
 * their last job instead of sleeping. A sleeping thread takes about 9 us
 * to wake on the H100 host, and a tiny call crosses four threads; 50 us
 * covers a tiny job's round trip and a closed-loop client's next call
 * (bench/RESULTS.md: p50 47 -> 26 us; 20 us gave 36). */
#define AMPD_DEFAULT_BUSY_POLL_US 50
#define AMPD_MAX_BUSY_POLL_US 10000
/* --loop-boost: the I/O loops run this many nice levels ahead of the rest
 * of the daemon. On 2 cores beside a neighbour's bulk work, a small call's
 * loop otherwise waits its turn for a CPU behind every thread at the
 * daemon's level, the neighbour's client threads among them, twice a call.
 * 5 levels (weight 3.1x) put a loop that serves light connections first in
 * that queue; a loop busy with bulk connections too stays behind all the
 * same, so it pays where loops outnumber the busy connections
 * (bench/RESULTS.md, "Sharing a GPU between clients", session 22). The
 * bulk threads stay 10 behind the daemon (listen.c). */
#define AMPD_DEFAULT_LOOP_BOOST 5
#define AMPD_MAX_LOOP_BOOST 19

/* gRPC's length prefix is 32 bits: no message can be larger. */
#define AMPD_MAX_MESSAGE_BYTES_LIMIT 0xffffffffull
#define AMPD_MAX_LISTEN 16
#define AMPD_ADDRESS_MAX 300
#define AMPD_DEVICE_SEL_MAX 32
/* --devices: "auto", "all", or a list of types and indices (dev_select.h). */
#define AMPD_DEVICES_MAX 256
#define AMPD_DEFAULT_DEVICES "auto"
/* --tls-cert, --tls-key, --tls-client-ca: a file name (a config line is
 * at most 1024 bytes too). */
#define AMPD_PATH_MAX 1024
/* Entries of --uid-weight, and of --uid-max-priority. */
#define AMPD_MAX_UID_RULES 64
/* Priorities (common/call_class.h's CALL_CLASS_PRIORITIES, which
 * config.c checks this against: bench/soak.c reads this header alone). */
#define AMPD_PRIORITIES 3
/* --max-queue-time's largest default: a day. */
#define AMPD_MAX_QUEUE_TIME_US (24ull * 3600 * 1000000)

/* --uid-weight UID:N or --uid-max-priority UID:LEVEL, repeatable: a
 * later entry for a uid replaces an earlier one (so the command line's
 * win over the config file's), other uids' entries stay. */
struct config_uid_rules {
    struct {
        uint32_t uid;
        uint32_t value;   /* a weight (1..JOB_WEIGHT_MAX), or an enum job_priority */
    } r[AMPD_MAX_UID_RULES];
    uint32_t n;
};

struct config {
    char listen[AMPD_MAX_LISTEN][AMPD_ADDRESS_MAX]; /* nlisten >= 1 after config_load */
    size_t nlisten;
    char device[AMPD_DEVICE_SEL_MAX];  /* --device: "", an index, "gpu" or "cpu" */
    char devices[AMPD_DEVICES_MAX];    /* --devices: which devices open; parses (dev_select.h) */
    char cache_dir[AMPD_PATH_MAX];     /* built kernels (prog_cache.h); "": the default,
                                        * "none": off */
    uint32_t retune;                   /* measure the kernel variants anew (dev_tune.c) */
    uint64_t max_message_bytes;
    uint32_t max_connections;
    uint32_t max_jobs;
    uint32_t max_streams;
    uint64_t max_job_memory;           /* daemon-wide bytes held for clients (budget.h) */
    uint64_t max_connection_memory;    /* the same, per connection; <= max_job_memory */
    uint64_t max_client_memory;        /* the same, per client (client_share.h);
                                        * max_connection_memory <= it <= max_job_memory */
    uint32_t max_peer_connections;     /* per uid (Unix sockets) or address (TCP) */
    uint32_t max_unauth_connections;   /* not yet authenticated; 0: a share of
                                        * max_connections (config_max_unauth) */
    uint32_t handshake_timeout_ms;     /* a TLS handshake's; 0: only --request-timeout's */
    uint32_t request_timeout_ms;       /* 0: requests may stall forever */
    uint64_t min_request_rate;         /* bytes/s a request must keep up after the timeout */
    uint32_t send_timeout_ms;          /* replies waiting with no write progress this long
                                        * close their connection; 0: never */
    uint32_t socket_mode;              /* Unix socket files' permission bits */
    char socket_group[AMPD_GROUP_MAX]; /* Unix socket files' group; "": the daemon's */
    uint32_t drain_timeout_ms;
    uint32_t drain_delay_ms;           /* SIGTERM: /ready 503 this long before the drain */
    uint32_t idle_timeout_ms;          /* 0: idle connections stay open */
    uint32_t regions;                  /* 1: region sockets beside Unix listeners */
    uint32_t max_regions;              /* per region client */
    uint64_t max_region_bytes;         /* mapped for every client together */
    uint64_t max_client_region_bytes;  /* the same, per uid; <= max_region_bytes */
    uint64_t staging_bytes;            /* per device; >= chunk_bytes */
    uint64_t chunk_bytes;              /* multiple of AMPD_CHUNK_ALIGN */
    uint64_t max_device_memory;        /* 0: 90% of each device's memory */
    uint64_t max_unknown_length;       /* a whole-input stream's input without total_length;
                                        * 0: such streams are refused */
    uint32_t io_threads;               /* I/O loops serving connections: >= 1 after config_load */
    uint64_t host_max_bytes;           /* the host path's job size limit (host.h); 0: off */
    uint32_t host_threads;             /* its workers: >= 1 after config_load */
    uint32_t busy_poll_us;             /* loops, host workers, runners poll this long, then sleep */
    uint32_t loop_boost;               /* I/O loops' nice levels ahead of the daemon's */
    char tls_cert[AMPD_PATH_MAX];      /* PEM certificate chain for tls: listeners; "": none */
    char tls_key[AMPD_PATH_MAX];       /* its PEM private key; set exactly when tls_cert is */
    char tls_client_ca[AMPD_PATH_MAX]; /* PEM CAs for client certificates; "": none asked */
    /* Who may call (auth.h). */
    char token_file[AMPD_PATH_MAX];    /* "NAME TOKEN" lines; "": no tokens */
    uint32_t tcp_require_token;        /* 1: TCP calls need a token (default) */
    uint32_t allow_plaintext_network;  /* 1: plaintext TCP listeners beyond loopback allowed */
    char allow_uid[AMPD_PATH_MAX];     /* Unix peers: users or uids, comma-separated; "": any */
    char allow_gid[AMPD_PATH_MAX];     /* Unix peers: groups or gids, comma-separated; "": any */
    uint32_t max_client_streams;       /* calls open per client (client_share.h); 0: no limit */
    uint32_t max_client_jobs;          /* jobs queued or running per client; 0: no limit */
    struct config_uid_rules uid_weight;       /* --uid-weight (auth.h) */
    struct config_uid_rules uid_max_priority; /* --uid-max-priority (auth.h) */
    uint64_t max_queue_us[AMPD_PRIORITIES];   /* --max-queue-time, by priority; 0: none */
    uint32_t log_level;                /* enum log_level (log.h) */
    char health_listen[AMPD_ADDRESS_MAX];  /* HOST:PORT serving Health only; "": none */
    char metrics_listen[AMPD_ADDRESS_MAX]; /* HOST:PORT of the metrics listener; "": none */
    uint32_t metrics_allow_remote;     /* 1: metrics_listen may be other than loopback */
    bool check_only;                   /* --check-config: validate, report, exit */
    int argc;                          /* config_load()'s arguments, for SIGHUP to load */
    char **argv;                       /* them again; main()'s, so they live as long */
};

enum config_result {
    CONFIG_RUN = 0,    /* settings ready: start the daemon */
    CONFIG_EXIT = 1,   /* --help or --version printed: exit 0 */
    CONFIG_ERROR = -1, /* message in err: exit with a usage error */
};

/* Fills cfg from defaults, then --config FILE if given, then argv. SIGHUP
 * runs it again with the same argv (server.c): the file may have changed. */
enum config_result config_load(struct config *cfg, int argc, char **argv, char *err, size_t errlen);

/* Calls changed() for each setting whose value differs between old and
 * now (SIGHUP's report), with its option name ("max-jobs") and both
 * values as text. */
void config_changes(const struct config *old, const struct config *now,
                    void (*changed)(const char *name, const char *was, const char *is, void *ctx),
                    void *ctx);

/* --max-unauthenticated-connections in force: the option, or 0's share of
 * --max-connections; at least 1, at most --max-connections. */
uint32_t config_max_unauth(const struct config *cfg);

#endif
