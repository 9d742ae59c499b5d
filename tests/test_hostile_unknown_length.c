/* SPDX-License-Identifier: MIT */
/* test_hostile_unknown_length.c: issue 33, the smaller item "a Reverse
 * stream with total_length 0 (documented 'unknown') is refused". amp.proto
 * says 0 is unknown; a job that needs its whole input at once (a reverse
 * step) now takes up to --max-unknown-length bytes of it, and a client
 * that sends more is refused RESOURCE_EXHAUSTED naming the limit as soon
 * as it passes it, not after the daemon took all it sent: meanwhile a
 * client of another uid is served, and the device memory, staging and
 * host memory the stream held come back. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "hostile.h"

#define MIB (1024u * 1024)
#define CAP_TEXT "4194304"           /* --max-unknown-length: 4 MiB */
#define CAP (4u * MIB)
#define FLOOD (256u * MIB)           /* what the attacker would send */
/* What the daemon may take past the limit before it refuses: what is in
 * flight in HTTP/2 windows and socket buffers, well short of FLOOD. */
#define SENT_PAST_CAP (32u * MIB)
#define OTHER_PROBES 20

static struct daemon_proc ampd;
static const char *const args[] = { "--max-unknown-length", CAP_TEXT, "--socket-mode", "0666",
                                    NULL };

struct src {
    const uint8_t *data;   /* NULL: a pattern, endless up to len */
    size_t len, pos;
};

static long src_read(void *ctx, void *buf, size_t cap)
{
    struct src *s = ctx;
    size_t n = s->len - s->pos < cap ? s->len - s->pos : cap;
    if (s->data)
        memcpy(buf, s->data + s->pos, n);
    else
        memset(buf, (int)(s->pos & 0xff), n);
    s->pos += n;
    return (long)n;
}

struct sink {
    uint8_t *buf;
    size_t len, cap;
};

static int sink_write(void *ctx, const void *buf, size_t len)
{
    struct sink *k = ctx;
    ck_assert_uint_le(len, k->cap - k->len);
    memcpy(k->buf + k->len, buf, len);
    k->len += len;
    return 0;
}

static const amp_step reverse = { .size = sizeof(amp_step), .kind = AMP_STEP_REVERSE };

/* Every device's reserved memory is back to 0. */
static void expect_device_memory_free(void)
{
    amp_daemon_status st = { .size = sizeof st };
    ck_assert_int_eq(hostile_status(ampd.address, &st), 0);
    for (size_t i = 0; i < st.ndevices; i++)
        ck_assert_msg(st.devices[i].memory_in_use == 0, "device %zu holds %llu bytes", i,
                      (unsigned long long)st.devices[i].memory_in_use);
    ck_assert_uint_eq(st.staging_bytes_in_use, 0);
}

START_TEST(unknown_length_up_to_the_limit)
{
    long base = hostile_start(&ampd, args);
    amp_conn *c;
    ck_assert_int_eq(amp_connect(ampd.address, &c), 0);
    amp_opts o = { .size = sizeof(amp_opts), .timeout_ms = HOSTILE_IO_MS };
    /* As amp.proto promises: up to the limit, reversed whole. */
    size_t n = CAP - 3;
    uint8_t *in = malloc(n), *out = malloc(n);
    for (size_t i = 0; i < n; i++)
        in[i] = (uint8_t)(i * 131 + (i >> 9));
    struct src s = { .data = in, .len = n };
    struct sink k = { .buf = out, .cap = n };
    int rc = amp_stream(c, &o, &reverse, 1, 0, src_read, &s, sink_write, &k, NULL, 0);
    ck_assert_msg(rc == 0, "%s: %s", amp_strerror(rc), amp_last_message(c));
    ck_assert_uint_eq(k.len, n);
    size_t bad = 0;   /* one check, not one per byte: each costs libcheck a write */
    while (bad < n && out[bad] == in[n - 1 - bad])
        bad++;
    ck_assert_msg(bad == n, "reversed output differs at byte %zu", bad);
    /* Past it: refused as the input passes the limit, while another uid
     * is served (what the first stream left PoCL holding for reuse is
     * there before this baseline). */
    long fds = hostile_fd_count(ampd.pid);
    pid_t other = hostile_other_start(&ampd, OTHER_PROBES);
    s = (struct src){ .len = FLOOD };
    k = (struct sink){ .buf = out, .cap = n };
    rc = amp_stream(c, &o, &reverse, 1, 0, src_read, &s, sink_write, &k, NULL, 0);
    ck_assert_msg(rc == AMP_EEXHAUSTED, "%s: %s", amp_strerror(rc), amp_last_message(c));
    ck_assert_msg(strstr(amp_last_message(c), "--max-unknown-length (" CAP_TEXT " bytes)"), "%s",
                  amp_last_message(c));
    ck_assert_msg(s.pos < CAP + SENT_PAST_CAP, "the daemon took %zu bytes before refusing", s.pos);
    ck_assert_uint_eq(k.len, 0);
    hostile_other_assert_served(other);
    amp_close(c);
    free(out);
    free(in);
    hostile_assert_served(ampd.address);
    ck_assert(hostile_wait_quiet(ampd.address, 1, HOSTILE_SETTLE_MS));
    expect_device_memory_free();
    hostile_assert_rss_back(&ampd, base);
    hostile_assert_fds_back(&ampd, fds);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

/* --max-unknown-length 0: such a stream is refused with its header, and
 * the message says what to send. */
START_TEST(unknown_length_off_refused_at_the_header)
{
    static const char *const off[] = { "--max-unknown-length", "0", NULL };
    hostile_start(&ampd, off);
    amp_conn *c;
    ck_assert_int_eq(amp_connect(ampd.address, &c), 0);
    amp_opts o = { .size = sizeof(amp_opts), .timeout_ms = HOSTILE_IO_MS };
    struct src s = { .len = MIB };
    int rc = amp_stream(c, &o, &reverse, 1, 0, src_read, &s, NULL, NULL, NULL, 0);
    ck_assert_msg(rc == AMP_EINVAL, "%s: %s", amp_strerror(rc), amp_last_message(c));
    ck_assert_msg(strstr(amp_last_message(c), "header.total_length is required"), "%s",
                  amp_last_message(c));
    /* With the length it runs. */
    s = (struct src){ .len = MIB };
    ck_assert_int_eq(amp_stream(c, &o, &reverse, 1, MIB, src_read, &s, NULL, NULL, NULL, 0), 0);
    amp_close(c);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hostile_unknown_length");
    const TTest *const tests[] = {
        unknown_length_up_to_the_limit,
        unknown_length_off_refused_at_the_header,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 90);
    return check_run(s, CK_FORK_GETENV);
}
