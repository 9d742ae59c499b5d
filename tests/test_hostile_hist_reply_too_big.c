/* SPDX-License-Identifier: MIT */
/* test_hostile_hist_reply_too_big.c: issue 10, reproducer 1. A Stream
 * histogram whose result message is larger than --max-message-bytes (the
 * stock repro: `ampctl --stream-threshold 0 hist --type float32 --bins
 * 100000000 --range 0:1` with 8 bytes of input) used to crash the daemon
 * after the refusal went out. The call must end RESOURCE_EXHAUSTED naming
 * the limit, and the daemon must keep serving, give the memory back and
 * exit 0 on SIGTERM. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_run.h"
#include "hostile.h"

#define SMALL_REPLY_LIMIT "65536"
#define STOCK_REPLY_LIMIT "1048576"

static struct daemon_proc ampd;

static long read_eight(void *ctx, void *buf, size_t cap)
{
    int *left = ctx;
    size_t n = (size_t)*left < cap ? (size_t)*left : cap;
    memset(buf, 0, n);
    *left -= (int)n;
    return (long)n;
}

START_TEST(stream_hist_over_message_limit_is_refused)
{
    static const char *const args[] = { "--max-message-bytes", SMALL_REPLY_LIMIT, NULL };
    long base = hostile_start(&ampd, args);
    amp_conn *c;
    ck_assert_int_eq(amp_connect(ampd.address, &c), 0);
    amp_step step = { .size = sizeof(amp_step), .kind = AMP_STEP_HISTOGRAM,
                      .hist = { .type = AMP_TYPE_FLOAT32, .bins = 1000000, .lo = 0, .hi = 1 } };
    amp_hist h;
    int left = 8;
    amp_opts o = { .size = sizeof(amp_opts), .timeout_ms = HOSTILE_IO_MS };
    int rc = amp_stream(c, &o, &step, 1, 8, read_eight, &left, NULL, NULL, &h, 1);
    /* Refused at the header: a histogram's result is one message. */
    ck_assert_msg(rc == AMP_EINVAL, "%s: %s", amp_strerror(rc), amp_last_message(c));
    ck_assert_ptr_nonnull(strstr(amp_last_message(c), "--max-message-bytes (" SMALL_REPLY_LIMIT ")"));
    /* The same connection is still usable after the refusal. */
    amp_daemon_status st = { .size = sizeof st };
    ck_assert_int_eq(amp_status(c, &o, &st), 0);
    amp_close(c);
    ck_assert(daemon_alive(&ampd));
    hostile_assert_served(ampd.address);
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

/* Runs ampctl with args, stdin from 8 zero bytes; returns its exit status
 * and what it printed on stderr (in err). */
static int run_ampctl(const char *const *args, char *err, size_t errlen)
{
    const char *bin = getenv("AMPCTL_BIN");
    ck_assert_ptr_nonnull(bin);
    int in[2], errp[2];
    ck_assert_int_eq(pipe(in), 0);
    ck_assert_int_eq(pipe(errp), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(errp[1], 2);
        close(in[1]);
        close(errp[0]);
        const char *argv[32] = { bin };
        for (int i = 0; args[i] && i < 30; i++)
            argv[i + 1] = args[i];
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(in[0]);
    close(errp[1]);
    static const uint8_t zeros[8];
    ck_assert_int_eq(write(in[1], zeros, sizeof zeros), (ssize_t)sizeof zeros);
    close(in[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < errlen && (r = read(errp[0], err + n, errlen - 1 - n)) > 0)
        n += (size_t)r;
    err[n] = '\0';
    close(errp[0]);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

START_TEST(stock_repro_through_ampctl)
{
    static const char *const args[] = { "--max-message-bytes", STOCK_REPLY_LIMIT, NULL };
    long base = hostile_start(&ampd, args);
    const char *cmd[] = { "--address", ampd.address, "--stream-threshold", "0", "hist", "--type",
                          "float32", "--bins", "100000000", "--range", "0:1", NULL };
    char err[1024];
    int rc = run_ampctl(cmd, err, sizeof err);
    /* 1: the daemon refused the job (not 3: the connection was lost). */
    ck_assert_msg(rc == 1, "ampctl exit %d: %s", rc, err);
    ck_assert_msg(strstr(err, "--max-message-bytes (" STOCK_REPLY_LIMIT ")"), "ampctl: %s", err);
    ck_assert(daemon_alive(&ampd));
    hostile_assert_served(ampd.address);
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hostile_hist_reply_too_big");
    const TTest *const tests[] = {
        stream_hist_over_message_limit_is_refused,
        stock_repro_through_ampctl,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 90);
    return check_run(s, CK_FORK_GETENV);
}
