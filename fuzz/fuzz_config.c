/* SPDX-License-Identifier: MIT */
/* fuzz_config.c: ampd's config file parser and command line (config.c).
 *
 * config_load() reads the file itself (config.c exposes no parser of a
 * buffer), so the input goes into a memfd and ampd gets
 * `--config /proc/self/fd/N`, as a service unit would pass a path. Input:
 *
 *     [ARG\nARG\n...\0] FILE
 *
 * bytes before the first NUL, if there is one, are extra command-line
 * arguments, one per line, after the --config pair; the rest is the file.
 * A plain config file (no NUL) is thus a valid input. A configuration that
 * config_load() accepts must be one the daemon can start with (checked
 * below, aborting if not).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "address.h"
#include "config.h"

/* Arguments beyond "ampd --config PATH": enough for every option twice. */
#define FUZZ_CONFIG_ARGS_MAX 64
#define FUZZ_CONFIG_PATH_MAX 64

static void fuzz_config_fail(const char *what)
{
    fprintf(stderr, "fuzz_config: accepted, but %s\n", what);
    abort();
}

static void fuzz_config_check_string(const char *s, size_t size, const char *what)
{
    if (!memchr(s, '\0', size))
        fuzz_config_fail(what);
}

/* What server.c and the rest rely on once config_load() said CONFIG_RUN. */
static void fuzz_config_check(const struct config *cfg)
{
    if (cfg->nlisten < 1 || cfg->nlisten > AMPD_MAX_LISTEN)
        fuzz_config_fail("the number of listen addresses is out of range");
    for (size_t i = 0; i < cfg->nlisten; i++) {
        struct address a;
        char why[128];
        fuzz_config_check_string(cfg->listen[i], AMPD_ADDRESS_MAX, "a listen address is unterminated");
        if (address_parse(cfg->listen[i], &a, why, sizeof why) != 0)
            fuzz_config_fail("a listen address does not parse");
    }
    fuzz_config_check_string(cfg->device, sizeof cfg->device, "--device is unterminated");
    fuzz_config_check_string(cfg->socket_group, sizeof cfg->socket_group,
                             "--socket-group is unterminated");
    if (cfg->max_message_bytes < 1 || cfg->max_message_bytes > AMPD_MAX_MESSAGE_BYTES_LIMIT)
        fuzz_config_fail("--max-message-bytes is out of range");
    if (cfg->chunk_bytes == 0 || cfg->chunk_bytes % AMPD_CHUNK_ALIGN != 0)
        fuzz_config_fail("--chunk-bytes is not a positive multiple of the alignment");
    if (cfg->staging_bytes < cfg->chunk_bytes)
        fuzz_config_fail("--staging-bytes holds no chunk");
    if (cfg->chunk_bytes + AMPD_REPLY_OVERHEAD > cfg->max_message_bytes &&
        cfg->chunk_bytes != AMPD_CHUNK_ALIGN)
        fuzz_config_fail("a chunk's reply does not fit --max-message-bytes");
    if (cfg->max_connection_memory < 1 || cfg->max_connection_memory > cfg->max_job_memory)
        fuzz_config_fail("--max-connection-memory is not within --max-job-memory");
    if (cfg->max_jobs < 1 || cfg->max_streams < 1 || cfg->max_connections < 1 ||
        cfg->max_peer_connections < 1)
        fuzz_config_fail("a count limit is 0");
    if (cfg->request_timeout_ms && cfg->min_request_rate < 1)
        fuzz_config_fail("--request-timeout without a --min-request-rate");
    if (cfg->socket_mode > 0777)
        fuzz_config_fail("--socket-mode has bits beyond 0777");
}

/* Splits the argument part (NUL-terminated copy in buf) into argv after
 * the fixed ones; returns argc. A --config of the input's own would have
 * config.c open any path (/dev/stdin blocks, /dev/zero never ends): those
 * are left out, the memfd stays the only file. */
static int fuzz_config_args(char *buf, char **argv, int argc)
{
    int max = argc + FUZZ_CONFIG_ARGS_MAX;
    for (char *line = buf; *line && argc < max;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strncmp(line, "--config", strlen("--config")) != 0)
            argv[argc++] = line;
        if (!nl)
            break;
        line = nl + 1;
    }
    return argc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, '\0', size);
    size_t args_len = nul ? (size_t)(nul - data) : 0;
    const uint8_t *file = nul ? nul + 1 : data;
    size_t file_len = size - (size_t)(file - data);

    int fd = memfd_create("fuzz_config", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    if (file_len && write(fd, file, file_len) != (ssize_t)file_len) {
        close(fd);
        return 0;
    }
    char path[FUZZ_CONFIG_PATH_MAX];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    char *args = malloc(args_len + 1);
    if (!args) {
        close(fd);
        return 0;
    }
    memcpy(args, data, args_len);
    args[args_len] = '\0';
    char *argv[3 + FUZZ_CONFIG_ARGS_MAX + 1] = { "ampd", "--config", path };
    int argc = fuzz_config_args(args, argv, 3);
    argv[argc] = NULL;

    struct config cfg;
    char err[512];
    if (config_load(&cfg, argc, argv, err, sizeof err) == CONFIG_RUN)
        fuzz_config_check(&cfg);
    free(args);
    close(fd);
    return 0;
}
