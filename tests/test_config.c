/* SPDX-License-Identifier: MIT */
/* test_config.c: ampd's settings: defaults, options, the config file and
 * the command line overriding it, size suffixes, and errors that name the
 * option (and the file line). */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "amp.h"
#include "config.h"
#include "job.h"
#include "log.h"

static enum config_result load(struct config *cfg, char *err, size_t errlen, int argc, ...)
{
    char *argv[32];
    argv[0] = "ampd";
    va_list ap;
    va_start(ap, argc);
    for (int i = 1; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    argv[argc] = NULL;
    return config_load(cfg, argc, argv, err, errlen);
}

static char conf_path[64];

static void write_conf(const char *text)
{
    snprintf(conf_path, sizeof(conf_path), "/tmp/ampd-conf-XXXXXX");
    int fd = mkstemp(conf_path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

START_TEST(defaults)
{
    struct config cfg;
    char err[256];
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 1), CONFIG_RUN);
    ck_assert_uint_eq(cfg.nlisten, 1);
    ck_assert_str_eq(cfg.listen[0], AMPD_DEFAULT_LISTEN);
    ck_assert_str_eq(AMPD_DEFAULT_LISTEN, AMP_DEFAULT_ADDRESS);
    ck_assert_uint_eq(cfg.max_message_bytes, 64ull << 20);
    ck_assert_uint_eq(cfg.max_connections, 256);
    ck_assert_uint_eq(cfg.max_jobs, 1024);
    ck_assert_uint_eq(cfg.max_streams, 100);
    ck_assert_uint_eq(cfg.max_job_memory, 1ull << 30);
    ck_assert_str_eq(cfg.device, "");
    ck_assert_uint_eq(cfg.io_threads, AMPD_DEFAULT_IO_THREADS);   /* whatever the CPUs */
    ck_assert_uint_eq(cfg.loop_boost, AMPD_DEFAULT_LOOP_BOOST);
}
END_TEST

START_TEST(io_threads)
{
    struct config cfg;
    char err[256];
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--io-threads", "1"), CONFIG_RUN);
    ck_assert_uint_eq(cfg.io_threads, 1);
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--io-threads", "16"), CONFIG_RUN);
    ck_assert_uint_eq(cfg.io_threads, 16);
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--io-threads", "0"), CONFIG_RUN);
    ck_assert_uint_eq(cfg.io_threads, AMPD_DEFAULT_IO_THREADS);
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--io-threads", "65"), CONFIG_ERROR);
    ck_assert_str_eq(err, "--io-threads: \"65\" is out of range (0..64)");
}
END_TEST

START_TEST(loop_boost)
{
    struct config cfg;
    char err[256];
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--loop-boost", "0"), CONFIG_RUN);
    ck_assert_uint_eq(cfg.loop_boost, 0);
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--loop-boost", "19"), CONFIG_RUN);
    ck_assert_uint_eq(cfg.loop_boost, 19);
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--loop-boost", "20"), CONFIG_ERROR);
    ck_assert_str_eq(err, "--loop-boost: \"20\" is out of range (0..19)");
}
END_TEST

/* Who may call (auth.h): tokens required on TCP, no plaintext network,
 * until told otherwise; the lists are kept as text for auth.c to resolve. */
START_TEST(auth_options)
{
    struct config cfg;
    char err[256];
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 1), CONFIG_RUN);
    ck_assert_uint_eq(cfg.tcp_require_token, 1);
    ck_assert_uint_eq(cfg.allow_plaintext_network, 0);
    ck_assert_str_eq(cfg.token_file, "");
    ck_assert_str_eq(cfg.allow_uid, "");
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 10, "--token-file", "/etc/ampd/tokens",
                          "--tcp-require-token", "off", "--allow-plaintext-network=on",
                          "--allow-uid", "ampd,1000", "--allow-gid", "video"),
                     CONFIG_RUN);
    ck_assert_str_eq(cfg.token_file, "/etc/ampd/tokens");
    ck_assert_uint_eq(cfg.tcp_require_token, 0);
    ck_assert_uint_eq(cfg.allow_plaintext_network, 1);
    ck_assert_str_eq(cfg.allow_uid, "ampd,1000");
    ck_assert_str_eq(cfg.allow_gid, "video");
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--tcp-require-token", "no"), CONFIG_ERROR);
    ck_assert_str_eq(err, "--tcp-require-token: \"no\" is not on or off");
    char long_list[AMPD_PATH_MAX + 1];
    memset(long_list, '1', sizeof long_list - 1);
    long_list[sizeof long_list - 1] = '\0';
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--allow-uid", long_list), CONFIG_ERROR);
    ck_assert_str_eq(err, "--allow-uid: the list is too long");
}
END_TEST

START_TEST(options)
{
    struct config cfg;
    char err[256];
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 9, "--listen", "unix:/tmp/a.sock",
                          "--listen=:50051", "--max-message-bytes", "2M", "--device=gpu",
                          "--max-job-memory", "3k"),
                     CONFIG_RUN);
    ck_assert_uint_eq(cfg.nlisten, 2);
    ck_assert_str_eq(cfg.listen[1], ":50051");
    ck_assert_uint_eq(cfg.max_message_bytes, 2u << 20);
    ck_assert_uint_eq(cfg.max_job_memory, 3072);
    ck_assert_str_eq(cfg.device, "gpu");
}
END_TEST

/* Inline comments end a value at a # after a blank; a # inside a value
 * stays. */
START_TEST(file_inline_comments)
{
    write_conf("max-jobs = 7   # for the bench host\nmax-streams=9\t# tab\n"
               "listen = unix:/tmp/a#b.sock # a path with a # in it\n#max-connections = 3\n");
    struct config cfg;
    char err[256];
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--config", conf_path), CONFIG_RUN);
    ck_assert_uint_eq(cfg.max_jobs, 7);
    ck_assert_uint_eq(cfg.max_streams, 9);
    ck_assert_str_eq(cfg.listen[0], "unix:/tmp/a#b.sock");
    ck_assert_uint_eq(cfg.max_connections, 256);
    /* A comment where the value should be leaves no value. */
    write_conf("max-jobs = # none\n");
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--config", conf_path), CONFIG_ERROR);
    ck_assert_ptr_nonnull(strstr(err, "max-jobs"));
}
END_TEST

START_TEST(file_then_command_line)
{
    write_conf("# comment\n\nlisten = unix:/tmp/file.sock\nmax-jobs = 7\n  max-streams=9  \n");
    struct config cfg;
    char err[256];
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 5, "--config", conf_path, "--max-jobs", "8"),
                     CONFIG_RUN);
    ck_assert_uint_eq(cfg.max_jobs, 8);  /* command line wins */
    ck_assert_uint_eq(cfg.max_streams, 9);
    ck_assert_uint_eq(cfg.nlisten, 1);
    ck_assert_str_eq(cfg.listen[0], "unix:/tmp/file.sock");
    /* A --listen on the command line replaces the file's addresses. */
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 5, "--config", conf_path, "--listen", ":1"),
                     CONFIG_RUN);
    ck_assert_uint_eq(cfg.nlisten, 1);
    ck_assert_str_eq(cfg.listen[0], ":1");
    unlink(conf_path);
}
END_TEST

START_TEST(file_errors)
{
    struct config cfg;
    char err[256], want[128];
    write_conf("max-jobs = 1\nmax-jbos = 2\n");
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--config", conf_path), CONFIG_ERROR);
    snprintf(want, sizeof(want), "%s:2: unknown key \"max-jbos\"", conf_path);
    ck_assert_str_eq(err, want);
    unlink(conf_path);
    write_conf("max-jobs\n");
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--config", conf_path), CONFIG_ERROR);
    ck_assert_ptr_nonnull(strstr(err, ":1: expected \"key = value\""));
    unlink(conf_path);
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--config", "/nonexistent/ampd.conf"),
                     CONFIG_ERROR);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/ampd.conf"));
}
END_TEST

START_TEST(bad_values)
{
    struct config cfg;
    char err[256];
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--max-jobs", "0"), CONFIG_ERROR);
    ck_assert_str_eq(err, "--max-jobs: \"0\" is out of range (1..4294967295)");
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--max-jobs", "x"), CONFIG_ERROR);
    ck_assert_ptr_nonnull(strstr(err, "\"x\" is not a number"));
    /* Sizes as people write them; durations with units, bare ones seconds. */
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--max-job-memory", "2GB"), CONFIG_RUN);
    ck_assert_uint_eq(cfg.max_job_memory, 2000000000ull);
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--max-job-memory", "2GiB"), CONFIG_RUN);
    ck_assert_uint_eq(cfg.max_job_memory, 2ull << 30);
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--drain-timeout", "10"), CONFIG_RUN);
    ck_assert_uint_eq(cfg.drain_timeout_ms, 10000);
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--drain-timeout", "10s"), CONFIG_RUN);
    ck_assert_uint_eq(cfg.drain_timeout_ms, 10000);
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--drain-timeout", "1.5m"), CONFIG_RUN);
    ck_assert_uint_eq(cfg.drain_timeout_ms, 90000);
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--request-timeout", "250ms"), CONFIG_RUN);
    ck_assert_uint_eq(cfg.request_timeout_ms, 250);
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--drain-timeout", "10x"), CONFIG_ERROR);
    ck_assert_ptr_nonnull(strstr(err, "is not a duration"));
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--drain-timeout", "100000000h"),
                     CONFIG_ERROR);
    ck_assert_ptr_nonnull(strstr(err, "is out of range"));
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--max-message-bytes", "5G"), CONFIG_ERROR);
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--max-streams", "-1"), CONFIG_ERROR);
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--max-streams", "12x"), CONFIG_ERROR);
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--listen", "nonsense"), CONFIG_ERROR);
    ck_assert(strncmp(err, "--listen nonsense: ", 19) == 0);
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 2, "--frobnicate"), CONFIG_ERROR);
    ck_assert_str_eq(err, "unknown option --frobnicate (see --help)");
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 2, "--max-jobs"), CONFIG_ERROR);
    ck_assert_str_eq(err, "--max-jobs needs a value");
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 2, "stray"), CONFIG_ERROR);
}
END_TEST

START_TEST(log_and_metrics)
{
    struct config cfg;
    char err[256];
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 1), CONFIG_RUN);
    ck_assert_uint_eq(cfg.log_level, LOG_INFO);
    ck_assert_str_eq(cfg.metrics_listen, "");
    ck_assert_uint_eq(cfg.metrics_allow_remote, 0);
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 5, "--log-level", "debug", "--metrics-listen",
                          ":9464"), CONFIG_RUN);
    ck_assert_uint_eq(cfg.log_level, LOG_DEBUG);
    ck_assert_str_eq(cfg.metrics_listen, ":9464");
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--log-level", "verbose"), CONFIG_ERROR);
    ck_assert_str_eq(err, "--log-level: \"verbose\" is not error, warn, info or debug");
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--metrics-listen", "unix:/m"), CONFIG_ERROR);
    ck_assert_str_eq(err, "--metrics-listen unix:/m: want HOST:PORT (plain TCP)");
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--metrics-listen", "tls::9464"), CONFIG_ERROR);
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--metrics-listen", "h:x"), CONFIG_ERROR);
    ck_assert(strncmp(err, "--metrics-listen h:x: ", 22) == 0);
}
END_TEST

/* SIGHUP's report: each setting that differs, by name, with both values. */
static char changes[512];

static void on_changed(const char *name, const char *was, const char *is, void *ctx)
{
    (void)ctx;
    size_t n = strlen(changes);
    snprintf(changes + n, sizeof(changes) - n, "%s:%s>%s;", name, was, is);
}

START_TEST(changes_reported)
{
    struct config a, b;
    char err[256];
    ck_assert_int_eq(load(&a, err, sizeof(err), 3, "--listen", "unix:/a"), CONFIG_RUN);
    ck_assert_int_eq(load(&b, err, sizeof(err), 11, "--listen", "unix:/a", "--max-jobs", "8",
                          "--log-level", "warn", "--drain-timeout", "5", "--socket-mode", "600"),
                     CONFIG_RUN);
    changes[0] = '\0';
    config_changes(&a, &a, on_changed, NULL);
    ck_assert_str_eq(changes, "");
    config_changes(&a, &b, on_changed, NULL);
    ck_assert_str_eq(changes, "max-jobs:1024>8;socket-mode:0660>0600;drain-timeout:30>5;"
                              "log-level:info>warn;");
}
END_TEST

/* --devices: auto by default; a valid list from the file or the command
 * line (which wins) is kept as written; a bad one is refused naming
 * --devices, with the file line; SIGHUP's report names a change. */
START_TEST(devices_option)
{
    struct config cfg, was;
    char err[256], want[160];
    ck_assert_int_eq(load(&was, err, sizeof(err), 1), CONFIG_RUN);
    ck_assert_str_eq(was.devices, "auto");
    write_conf("devices = gpu,2\n");
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--config", conf_path), CONFIG_RUN);
    ck_assert_str_eq(cfg.devices, "gpu,2");
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 5, "--config", conf_path, "--devices", "all"),
                     CONFIG_RUN);
    ck_assert_str_eq(cfg.devices, "all");
    changes[0] = '\0';
    config_changes(&was, &cfg, on_changed, NULL);
    ck_assert_str_eq(changes, "devices:auto>all;");
    unlink(conf_path);
    write_conf("devices = gpu,\n");
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--config", conf_path), CONFIG_ERROR);
    snprintf(want, sizeof(want), "%s:1: --devices: \"gpu,\" is not auto, all", conf_path);
    ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s", err);
    unlink(conf_path);
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 3, "--devices", "cpu,tpu"), CONFIG_ERROR);
    ck_assert_str_eq(err, "--devices: \"tpu\" is not gpu, cpu, accelerator or a device index");
}
END_TEST

/* --uid-weight, --uid-max-priority, --max-queue-time: repeatable, a later
 * entry for a uid or level replacing an earlier one, the command line's
 * over the file's; SIGHUP's report lists them as written. */
START_TEST(class_options)
{
    write_conf("uid-weight = 1000:2\nuid-weight = 7:5\nmax-queue-time = normal:3s\n");
    struct config cfg;
    char err[256];
    ck_assert_int_eq(load(&cfg, err, sizeof(err), 12, "--config", conf_path, "--uid-weight",
                          "1000:3", "--uid-max-priority=7:high", "--uid-max-priority", "8:low",
                          "--max-queue-time", "high:50ms", "--max-queue-time", "low:250us"),
                     CONFIG_RUN);
    ck_assert_uint_eq(cfg.uid_weight.n, 2);
    ck_assert_uint_eq(cfg.uid_weight.r[0].uid, 1000);
    ck_assert_uint_eq(cfg.uid_weight.r[0].value, 3);   /* the command line's */
    ck_assert_uint_eq(cfg.uid_weight.r[1].uid, 7);
    ck_assert_uint_eq(cfg.uid_weight.r[1].value, 5);   /* the file's stays */
    ck_assert_uint_eq(cfg.uid_max_priority.n, 2);
    ck_assert_uint_eq(cfg.uid_max_priority.r[0].value, JOB_PRIORITY_HIGH);
    ck_assert_uint_eq(cfg.uid_max_priority.r[1].value, JOB_PRIORITY_LOW);
    ck_assert_uint_eq(cfg.max_queue_us[JOB_PRIORITY_LOW], 250);
    ck_assert_uint_eq(cfg.max_queue_us[JOB_PRIORITY_NORMAL], 3000000);
    ck_assert_uint_eq(cfg.max_queue_us[JOB_PRIORITY_HIGH], 50000);
    struct config none;
    ck_assert_int_eq(load(&none, err, sizeof(err), 1), CONFIG_RUN);
    ck_assert_uint_eq(none.uid_weight.n + none.uid_max_priority.n, 0);
    ck_assert_uint_eq(none.max_queue_us[JOB_PRIORITY_NORMAL], 0);
    changes[0] = '\0';
    config_changes(&none, &cfg, on_changed, NULL);
    ck_assert_str_eq(changes, "uid-weight:>1000:3 7:5;uid-max-priority:>7:high 8:low;"
                              "max-queue-time:>low:250us normal:3000000us high:50000us;");
    unlink(conf_path);
}
END_TEST

START_TEST(help_and_version)
{
    struct config cfg;
    char err[256];
    FILE *saved = stdout;
    stdout = fopen("/dev/null", "w");
    enum config_result h = load(&cfg, err, sizeof(err), 4, "--max-jobs", "0", "--help");
    enum config_result v = load(&cfg, err, sizeof(err), 2, "--version");
    fclose(stdout);
    stdout = saved;
    ck_assert_int_eq(h, CONFIG_EXIT);
    ck_assert_int_eq(v, CONFIG_EXIT);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("config");
    const TTest *const tests[] = {
        defaults,
        options,
        auth_options,
        io_threads,
        loop_boost,
        file_inline_comments,
        file_then_command_line,
        file_errors,
        bad_values,
        devices_option,
        log_and_metrics,
        changes_reported,
        class_options,
        help_and_version,
        NULL,
    };
    check_run_case(s, "core", tests);
    return check_run(s, CK_FORK_GETENV);
}
