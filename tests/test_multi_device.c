/* SPDX-License-Identifier: MIT */
/* test_multi_device.c: one daemon with two devices of one type (PoCL's
 * POCL_DEVICES="pthread pthread" where there is no GPU, as in CI): two
 * streams at once are placed one on each device (sched.c's least-loaded
 * placement), which Status, ListDevices and `ampctl devices` show as one
 * job running on each; streams pinned to a device (--device, amp_opts
 * device) all go there; and the load goes back to zero once they end.
 * Where the default device has no twin of its type, the test is skipped
 * (exit 77, which ctest reports as a skip). */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_run.h"
#include "client_fixture.h"
#include "dev_fixture.h"
#include "dev.h"

#define STREAM_BYTES 4096
#define WAIT_MS 60000

/* A stream whose input waits at the gate: it stays open (admitted on its
 * device, so running) until the test opens the gate. */
struct held_stream {
    const char *device;        /* amp_opts.device: NULL for the daemon's choice */
    pthread_t thread;
    int rc;
    char message[256];
    uint8_t out[STREAM_BYTES];
    size_t out_len;
    int sent;
};

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_open;

static long held_read(void *ctx, void *buf, size_t cap)
{
    struct held_stream *h = ctx;
    pthread_mutex_lock(&gate_lock);
    while (!gate_open)
        pthread_cond_wait(&gate_cond, &gate_lock);
    pthread_mutex_unlock(&gate_lock);
    if (h->sent || cap < STREAM_BYTES)
        return 0;
    for (size_t i = 0; i < STREAM_BYTES; i++)
        ((uint8_t *)buf)[i] = (uint8_t)i;
    h->sent = 1;
    return STREAM_BYTES;
}

static int held_write(void *ctx, const void *buf, size_t len)
{
    struct held_stream *h = ctx;
    if (h->out_len + len > sizeof h->out)
        return AMP_EINVAL;
    memcpy(h->out + h->out_len, buf, len);
    h->out_len += len;
    return 0;
}

static void *held_run(void *arg)
{
    struct held_stream *h = arg;
    amp_conn *c;
    h->rc = amp_connect(client_fixture_address(), &c);
    if (h->rc != 0)
        return NULL;
    amp_opts o = { .size = sizeof o, .device = h->device };
    amp_step step = { .size = sizeof step, .kind = AMP_STEP_REVERSE };
    h->rc = amp_stream(c, &o, &step, 1, STREAM_BYTES, held_read, h, held_write, h, NULL, 0);
    snprintf(h->message, sizeof h->message, "%s", amp_last_message(c));
    amp_close(c);
    return NULL;
}

static void held_start(struct held_stream *h, const char *device)
{
    memset(h, 0, sizeof *h);
    h->device = device;
    ck_assert_int_eq(pthread_create(&h->thread, NULL, held_run, h), 0);
}

/* Opens the gate and checks the stream's output: its input reversed. */
static void held_finish(struct held_stream *h)
{
    pthread_mutex_lock(&gate_lock);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
    pthread_join(h->thread, NULL);
    ck_assert_msg(h->rc == 0, "stream on device '%s': %s: %s", h->device ? h->device : "",
                  amp_strerror(h->rc), h->message);
    ck_assert_uint_eq(h->out_len, STREAM_BYTES);
    for (size_t i = 0; i < STREAM_BYTES; i++)
        ck_assert_uint_eq(h->out[i], (uint8_t)(STREAM_BYTES - 1 - i));
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Polls Status until devices 0 and 1 run want0 and want1 jobs (none
 * queued); fails the test after WAIT_MS. */
static void wait_running(uint32_t want0, uint32_t want1)
{
    amp_daemon_status st = { .size = sizeof st };
    long long end = now_ms() + WAIT_MS;
    for (;;) {
        CLIENT_CHECK_OK(amp_status(client_conn, NULL, &st));
        ck_assert_uint_ge(st.ndevices, 2);
        if (st.devices[0].jobs_running == want0 && st.devices[1].jobs_running == want1 &&
            st.devices[0].jobs_queued == 0 && st.devices[1].jobs_queued == 0)
            break;
        ck_assert_msg(now_ms() < end,
                      "want %u and %u jobs running on devices 0 and 1; Status says %u (%u "
                      "queued) and %u (%u queued)",
                      want0, want1, st.devices[0].jobs_running, st.devices[0].jobs_queued,
                      st.devices[1].jobs_running, st.devices[1].jobs_queued);
        struct timespec pause = { 0, 20 * 1000 * 1000 };
        nanosleep(&pause, NULL);
    }
    /* A running job holds device memory. */
    ck_assert_int_eq(st.devices[0].memory_in_use > 0, want0 > 0);
    ck_assert_int_eq(st.devices[1].memory_in_use > 0, want1 > 0);
    ck_assert_uint_gt(st.devices[0].memory_capacity, 0);
}

/* ListDevices says the same. */
static void expect_listed(uint32_t want0, uint32_t want1)
{
    amp_device *list;
    size_t n;
    CLIENT_CHECK_OK(amp_devices(client_conn, NULL, &list, &n));
    ck_assert_uint_ge(n, 2);
    ck_assert_uint_eq(list[0].load.jobs_running, want0);
    ck_assert_uint_eq(list[1].load.jobs_running, want1);
    ck_assert_uint_eq(list[0].load.memory_in_use > 0, want0 > 0);
    amp_free(list);
}

/* `ampctl --json devices` prints each device's load. */
static void expect_ampctl_running(uint32_t want0, uint32_t want1)
{
    const char *bin = getenv("AMPCTL_BIN");
    ck_assert_ptr_nonnull(bin);
    char cmd[512], out[8192] = "", w0[64], w1[64];
    snprintf(cmd, sizeof cmd, "%s --address %s --json devices", bin, client_fixture_address());
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    ck_assert_int_eq(pclose(p), 0);
    snprintf(w0, sizeof w0, "\"index\":0,");
    snprintf(w1, sizeof w1, "\"load\":{\"jobs_running\":%u,", want1);
    const char *dev1 = strstr(out, "\"index\":1,");
    ck_assert_msg(strstr(out, w0) && dev1 && strstr(dev1, w1), "ampctl devices: %s", out);
    snprintf(w0, sizeof w0, "\"load\":{\"jobs_running\":%u,", want0);
    const char *load0 = strstr(out, w0);
    ck_assert_msg(load0 && load0 < dev1, "ampctl devices: %s", out);
}

START_TEST(two_streams_run_on_both_devices)
{
    struct held_stream a, b;
    held_start(&a, NULL);
    wait_running(1, 0);   /* the first goes to the default device: both are idle */
    held_start(&b, NULL);
    wait_running(1, 1);   /* the second to the other, less loaded one */
    expect_listed(1, 1);
    expect_ampctl_running(1, 1);
    held_finish(&a);
    held_finish(&b);
    wait_running(0, 0);
    expect_listed(0, 0);
}
END_TEST

START_TEST(pinned_streams_go_where_pinned)
{
    struct held_stream a, b;
    held_start(&a, "1");
    held_start(&b, "1");
    wait_running(0, 2);
    expect_ampctl_running(0, 2);
    held_finish(&a);
    held_finish(&b);
    wait_running(0, 0);
}
END_TEST

START_TEST(pinned_unary_jobs_run)
{
    /* --host-max-bytes 0 (main): unary jobs go to devices too. */
    for (int d = 0; d < 2; d++) {
        amp_opts o = { .size = sizeof o, .device = d ? "1" : "0" };
        static const char in[] = "abc";
        void *out;
        size_t len;
        CLIENT_CHECK_OK(amp_reverse(client_conn, &o, in, 3, &out, &len));
        ck_assert_uint_eq(len, 3);
        ck_assert_int_eq(memcmp(out, "cba", 3), 0);
        amp_free(out);
    }
    /* A device that does not exist is refused, naming the field. */
    amp_opts o = { .size = sizeof o, .device = "7" };
    void *out;
    size_t len;
    ck_assert_int_eq(amp_reverse(client_conn, &o, "abc", 3, &out, &len), AMP_EINVAL);
    ck_assert_msg(strstr(amp_last_message(client_conn), "device"), "%s",
                  amp_last_message(client_conn));
}
END_TEST

int main(void)
{
    setenv("POCL_DEVICES", "pthread pthread", 0);
    fixture_need_twins();
    Suite *s = suite_create("multi_device");
    const TTest *const tests[] = {
        two_streams_run_on_both_devices,
        pinned_streams_go_where_pinned,
        pinned_unary_jobs_run,
        NULL,
    };
    TCase *tc = check_run_case(s, "placement", tests);
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, client_fixture_open, client_fixture_close);
    static const char *const args[] = { "--host-max-bytes", "0", NULL };
    return client_fixture_run(s, args);
}
