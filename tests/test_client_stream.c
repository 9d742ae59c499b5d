/* SPDX-License-Identifier: MIT */
/* test_client_stream.c: amp_stream and amp_stream_fd through a real ampd
 * whose staging pool is much smaller than the inputs (--staging-bytes 4M
 * --chunk-bytes 1M, 24 MiB streams), so every stream goes through many
 * refills of the daemon's buffers and HTTP/2 flow control on both sides.
 *
 * Results are checked against the CPU reference (tests/support/host_step.h):
 * transform+histogram chunk by chunk, reverse with total_length (resident
 * on the device), unknown total_length, a fill with no input, the fd form,
 * input read no faster than output comes back (bounded memory);
 * and the bad paths: a read or write callback that aborts, mid-stream or
 * before any data, input stalling past the deadline (the connection stays
 * usable), a reverse without total_length, a total_length that
 * does not match, nhists that does not match the steps. amp_stream_mem
 * (input sent from the caller's memory): the same jobs, an empty input,
 * and a NULL input with a length; amp_stream_mem_into (output into the
 * caller's buffer): the same, a buffer too small, and its arguments.
 */
#include <check.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "amp.h"
#include "host_step.h"
#include "client_fixture.h"

#define MIB (1024u * 1024u)
#define BIG_LEN (24u * MIB + 4093u) /* six times the staging pool, odd tail */
#define WORDS_LEN (24u * MIB + 4092u) /* the same for uint32 histograms: whole elements */
#define ABORT_AFTER (5u * MIB)      /* the aborting reader stops here */

/* --- callbacks over memory ------------------------------------------------------ */

/* Input from memory in uneven pieces (never a whole buffer), so the
 * library has to gather its chunks. */
struct src {
    const uint8_t *data;
    size_t len, pos;
    size_t abort_at;  /* > 0: return AMP_ECANCELLED once pos reaches it */
    unsigned calls;
};

static long src_read(void *ctx, void *buf, size_t cap)
{
    struct src *s = ctx;
    s->calls++;
    if (s->abort_at && s->pos >= s->abort_at)
        return AMP_ECANCELLED;
    size_t n = s->len - s->pos;
    size_t piece = 1000 + (s->calls * 7919u) % 300000; /* uneven */
    if (n > piece)
        n = piece;
    if (n > cap)
        n = cap;
    memcpy(buf, s->data + s->pos, n);
    s->pos += n;
    return (long)n;
}

/* Output checked against the expected bytes as it arrives. */
struct sink {
    const uint8_t *want; /* NULL: only count */
    size_t want_len, got;
    size_t abort_at;     /* > 0: return AMP_ECANCELLED once got reaches it */
    int mismatch;        /* first differing offset + 1, or 0 */
};

static int sink_write(void *ctx, const void *buf, size_t len)
{
    struct sink *s = ctx;
    if (s->abort_at && s->got >= s->abort_at)
        return AMP_ECANCELLED;
    ck_assert_msg(s->got + len <= s->want_len, "output of %zu bytes past the expected %zu",
                  s->got + len, s->want_len);
    if (s->want && !s->mismatch) {
        const uint8_t *b = buf;
        for (size_t i = 0; i < len; i++) {
            if (b[i] != s->want[s->got + i]) {
                s->mismatch = (int)(s->got + i) + 1;
                break;
            }
        }
    }
    s->got += len;
    return 0;
}

static void expect_sink(const struct sink *s)
{
    ck_assert_msg(!s->mismatch, "output byte %d differs", s->mismatch - 1);
    ck_assert_uint_eq(s->got, s->want_len);
}

/* A small stream that must work: the connection survived whatever came before. */
static void expect_conn_usable(void)
{
    amp_step st = { .size = sizeof(amp_step), .kind = AMP_STEP_TRANSFORM,
                    .transform = { .op = AMP_OP_XOR, .value = 0xff } };
    const uint8_t in[5] = { 0, 1, 2, 3, 0xf0 }, want[5] = { 0xff, 0xfe, 0xfd, 0xfc, 0x0f };
    struct src s = { .data = in, .len = sizeof in };
    struct sink k = { .want = want, .want_len = sizeof want };
    CLIENT_CHECK_OK(
        amp_stream(client_conn, NULL, &st, 1, sizeof in, src_read, &s, sink_write, &k, NULL, 0));
    expect_sink(&k);
}

/* --- good paths ------------------------------------------------------------------ */

/* add 3 to a sub-range, then two histograms of the result: bytes, and the
 * same bytes as uint32 values. total_length is given or not. */
static void transform_and_histograms(int give_length)
{
    size_t n = WORDS_LEN;
    uint64_t total_length = give_length ? n : 0;
    uint8_t *in = client_fixture_random(n, 11), *want = malloc(n);
    memcpy(want, in, n);
    struct transform_params tp = { .op = XFORM_ADD, .value = 3, .offset = 1234,
                                   .length = n - 1234 - 999 };
    host_step_transform(&tp, want, n);
    amp_step steps[3];
    memset(steps, 0, sizeof steps);
    steps[0].size = sizeof steps[0];
    steps[0].kind = AMP_STEP_HISTOGRAM;
    steps[0].hist = (amp_hist_params){ .type = AMP_TYPE_UINT8 };
    steps[1].size = sizeof steps[1];
    steps[1].kind = AMP_STEP_TRANSFORM;
    steps[1].transform = (amp_transform_params){ .op = AMP_OP_ADD, .value = 3, .offset = 1234,
                                                 .length = n - 1234 - 999, .has_length = 1 };
    steps[2].size = sizeof steps[2];
    steps[2].kind = AMP_STEP_HISTOGRAM;
    steps[2].hist = (amp_hist_params){ .type = AMP_TYPE_UINT32, .bins = 100, .lo = 1e8,
                                       .hi = 4e9 };
    struct src s = { .data = in, .len = n };
    struct sink k = { .want = want, .want_len = n };
    amp_hist h[2];
    CLIENT_CHECK_OK(
        amp_stream(client_conn, NULL, steps, 3, total_length, src_read, &s, sink_write, &k, h, 2));
    expect_sink(&k);
    ck_assert_uint_eq(s.pos, n);
    struct hist_params bytes = { .type = ELEM_U8, .bins = 256 };
    struct hist_params words = { .type = ELEM_U32, .bins = 100, .lo = 1e8, .hi = 4e9 };
    client_fixture_expect_hist(&h[0], &bytes, in, n);
    client_fixture_expect_hist(&h[1], &words, want, n);
    ck_assert_str_ne(amp_last_device(client_conn), "");
    amp_hist_free(&h[0]);
    amp_hist_free(&h[1]);
    free(want);
    free(in);
}

START_TEST(transform_histogram_with_total_length)
{
    transform_and_histograms(1);
}
END_TEST

START_TEST(transform_histogram_unknown_length)
{
    transform_and_histograms(0);
}
END_TEST

START_TEST(reverse_with_total_length)
{
    size_t n = BIG_LEN;
    uint8_t *in = client_fixture_random(n, 21), *want = malloc(n);
    amp_step steps[2];
    memset(steps, 0, sizeof steps);
    steps[0].size = sizeof steps[0];
    steps[0].kind = AMP_STEP_TRANSFORM;
    steps[0].transform = (amp_transform_params){ .op = AMP_OP_XOR, .value = 0x5a };
    steps[1].size = sizeof steps[1];
    steps[1].kind = AMP_STEP_REVERSE;
    struct transform_params tp = { .op = XFORM_XOR, .value = 0x5a, .length = n };
    uint8_t *x = malloc(n);
    memcpy(x, in, n);
    host_step_transform(&tp, x, n);
    host_step_reverse(x, want, n);
    struct src s = { .data = in, .len = n };
    struct sink k = { .want = want, .want_len = n };
    CLIENT_CHECK_OK(
        amp_stream(client_conn, NULL, steps, 2, n, src_read, &s, sink_write, &k, NULL, 0));
    expect_sink(&k);
    free(x);
    free(want);
    free(in);
}
END_TEST

START_TEST(histogram_only_has_no_data)
{
    size_t n = 9 * MIB + 3;
    uint8_t *in = client_fixture_random(n, 31);
    amp_step st = { .size = sizeof(amp_step), .kind = AMP_STEP_HISTOGRAM,
                    .hist = { .type = AMP_TYPE_UINT8 } };
    struct src s = { .data = in, .len = n };
    struct sink k = { .want_len = 0 }; /* any data at all fails */
    amp_hist h;
    CLIENT_CHECK_OK(amp_stream(client_conn, NULL, &st, 1, 0, src_read, &s, sink_write, &k, &h, 1));
    ck_assert_uint_eq(k.got, 0);
    struct hist_params bytes = { .type = ELEM_U8, .bins = 256 };
    client_fixture_expect_hist(&h, &bytes, in, n);
    amp_hist_free(&h);
    free(in);
}
END_TEST

START_TEST(fill_without_input)
{
    uint64_t count = 3 * MIB + 5; /* 12 MiB of int32 */
    amp_step st = { .size = sizeof(amp_step), .kind = AMP_STEP_FILL,
                    .fill = { .type = AMP_TYPE_INT32, .count = count, .start = 7, .step = -3 } };
    struct fill_params fp = { .type = ELEM_I32, .count = count, .start = 7, .step = -3 };
    uint8_t *want = malloc(count * 4);
    host_step_fill(&fp, want);
    struct sink k = { .want = want, .want_len = count * 4 };
    CLIENT_CHECK_OK(amp_stream(client_conn, NULL, &st, 1, 0, NULL, NULL, sink_write, &k, NULL, 0));
    expect_sink(&k);
    free(want);
}
END_TEST

static int temp_file(const char *name, const void *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", client_fixture_dir(), name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ck_assert_int_ge(fd, 0);
    unlink(path);
    if (len)
        ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
    ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
    return fd;
}

START_TEST(fd_form)
{
    size_t n = BIG_LEN;
    uint8_t *in = client_fixture_random(n, 41), *want = malloc(n), *got = malloc(n);
    host_step_reverse(in, want, n);
    int in_fd = temp_file("in", in, n), out_fd = temp_file("out", NULL, 0);
    amp_step st[2] = { { .size = sizeof(amp_step), .kind = AMP_STEP_REVERSE },
                       { .size = sizeof(amp_step), .kind = AMP_STEP_HISTOGRAM,
                         .hist = { .type = AMP_TYPE_UINT8 } } };
    amp_hist h;
    CLIENT_CHECK_OK(amp_stream_fd(client_conn, NULL, st, 2, n, in_fd, out_fd, &h, 1));
    ck_assert_int_eq(lseek(out_fd, 0, SEEK_CUR), (off_t)n);
    ck_assert_int_eq(pread(out_fd, got, n, 0), (ssize_t)n);
    ck_assert_msg(memcmp(got, want, n) == 0, "reversed file differs");
    struct hist_params bytes = { .type = ELEM_U8, .bins = 256 };
    client_fixture_expect_hist(&h, &bytes, in, n);
    amp_hist_free(&h);
    /* A descriptor that cannot be read is a local I/O error. */
    int wronly = open("/dev/null", O_WRONLY | O_CLOEXEC);
    int rc = amp_stream_fd(client_conn, NULL, &st[1], 1, 0, wronly, -1, &h, 1);
    ck_assert_msg(rc == AMP_EIO, "got %s", amp_strerror(rc));
    ck_assert_msg(strstr(amp_last_message(client_conn), "read"), "message '%s'",
                  amp_last_message(client_conn));
    ck_assert_ptr_null(h.counts);
    close(wronly);
    close(in_fd);
    close(out_fd);
    expect_conn_usable();
    free(got);
    free(want);
    free(in);
}
END_TEST

/* A long stream generated and checked on the fly: the input the client
 * has read never runs more than LEAD_BOUND ahead of the output it has
 * delivered. What may lie between: the client's gathered chunk and the
 * message nghttp2 holds (2 MiB), the daemon's stream window (8 MiB), its
 * staging pool (4 MiB), and output on its way back inside the client's
 * 16 MiB receive window; the whole stream (LONG_LEN) is far more. */
#define LONG_LEN (96u * MIB)
#define LEAD_BOUND (32u * MIB)

static uint8_t gen_byte(size_t i)
{
    return (uint8_t)(i * 131u + (i >> 12));
}

struct gen {
    size_t len, pos, got, max_lead;
    int mismatch;
};

static long gen_read(void *ctx, void *buf, size_t cap)
{
    struct gen *g = ctx;
    size_t n = g->len - g->pos < cap ? g->len - g->pos : cap;
    uint8_t *b = buf;
    for (size_t i = 0; i < n; i++)
        b[i] = gen_byte(g->pos + i);
    g->pos += n;
    if (g->pos - g->got > g->max_lead)
        g->max_lead = g->pos - g->got;
    return (long)n;
}

static int gen_write(void *ctx, const void *buf, size_t len)
{
    struct gen *g = ctx;
    const uint8_t *b = buf;
    for (size_t i = 0; i < len && !g->mismatch; i++)
        if (b[i] != (uint8_t)(gen_byte(g->got + i) + 5))
            g->mismatch = 1;
    g->got += len;
    return 0;
}

START_TEST(input_read_as_the_daemon_takes_it)
{
    amp_step st = { .size = sizeof(amp_step), .kind = AMP_STEP_TRANSFORM,
                    .transform = { .op = AMP_OP_ADD, .value = 5 } };
    struct gen g = { .len = LONG_LEN };
    CLIENT_CHECK_OK(amp_stream(client_conn, NULL, &st, 1, 0, gen_read, &g, gen_write, &g, NULL, 0));
    ck_assert_uint_eq(g.got, LONG_LEN);
    ck_assert_msg(!g.mismatch, "output differs");
    ck_assert_msg(g.max_lead <= LEAD_BOUND, "input ran %zu bytes ahead of the output",
                  g.max_lead);
}
END_TEST

/* --- bad paths --------------------------------------------------------------- */

START_TEST(read_callback_aborts)
{
    size_t n = BIG_LEN;
    uint8_t *in = client_fixture_random(n, 51);
    amp_step st[2] = { { .size = sizeof(amp_step), .kind = AMP_STEP_TRANSFORM,
                         .transform = { .op = AMP_OP_ADD, .value = 1 } },
                       { .size = sizeof(amp_step), .kind = AMP_STEP_HISTOGRAM,
                         .hist = { .type = AMP_TYPE_UINT8 } } };
    struct src s = { .data = in, .len = n, .abort_at = ABORT_AFTER };
    struct sink k = { .want_len = n };
    amp_hist h;
    int rc = amp_stream(client_conn, NULL, st, 2, n, src_read, &s, sink_write, &k, &h, 1);
    ck_assert_msg(rc == AMP_ECANCELLED, "got %s: %s", amp_strerror(rc),
                  amp_last_message(client_conn));
    ck_assert_msg(strstr(amp_last_message(client_conn), "input callback"), "message '%s'",
                  amp_last_message(client_conn));
    ck_assert_ptr_null(h.counts);
    ck_assert_uint_ge(s.pos, ABORT_AFTER); /* it was asked for more after the abort point */
    ck_assert_uint_lt(s.pos, n);
    ck_assert_str_eq(amp_last_device(client_conn), "");
    expect_conn_usable();
    free(in);
}
END_TEST

static long fail_at_once(void *ctx, void *buf, size_t cap)
{
    (void)buf;
    (void)cap;
    ++*(unsigned *)ctx;
    return AMP_ECANCELLED;
}

/* The daemon sees the header and then a reset, before any data; the next
 * stream on the same connection must still work. */
START_TEST(read_callback_aborts_at_once)
{
    amp_step st = { .size = sizeof(amp_step), .kind = AMP_STEP_HISTOGRAM,
                    .hist = { .type = AMP_TYPE_UINT8 } };
    amp_hist h;
    for (int i = 0; i < 3; i++) {
        unsigned calls = 0;
        int rc = amp_stream(client_conn, NULL, &st, 1, 0, fail_at_once, &calls, NULL, NULL, &h, 1);
        ck_assert_msg(rc == AMP_ECANCELLED, "got %s: %s", amp_strerror(rc),
                      amp_last_message(client_conn));
        ck_assert_uint_eq(calls, 1);
        expect_conn_usable();
    }
}
END_TEST

/* Input that stalls past the deadline: whichever side notices first, the
 * call ends with AMP_EDEADLINE and the connection stays usable. */
#define STALL_US 300000
#define DEADLINE_MS 50

static long stall_read(void *ctx, void *buf, size_t cap)
{
    struct src *s = ctx;
    if (s->calls == 1)
        usleep(STALL_US); /* six deadlines: no scheduling hiccup makes this pass */
    return src_read(ctx, buf, cap);
}

START_TEST(deadline_while_input_stalls)
{
    uint8_t *in = client_fixture_random(3 * MIB, 91);
    amp_step st = { .size = sizeof(amp_step), .kind = AMP_STEP_HISTOGRAM,
                    .hist = { .type = AMP_TYPE_UINT8 } };
    struct src s = { .data = in, .len = 3 * MIB };
    amp_opts o = { .size = sizeof(amp_opts), .device = NULL, .timeout_ms = DEADLINE_MS };
    amp_hist h;
    int rc = amp_stream(client_conn, &o, &st, 1, 0, stall_read, &s, NULL, NULL, &h, 1);
    ck_assert_msg(rc == AMP_EDEADLINE, "got %s: %s", amp_strerror(rc),
                  amp_last_message(client_conn));
    ck_assert_ptr_null(h.counts);
    expect_conn_usable();
    free(in);
}
END_TEST

START_TEST(write_callback_aborts)
{
    size_t n = BIG_LEN;
    uint8_t *in = client_fixture_random(n, 61);
    amp_step st = { .size = sizeof(amp_step), .kind = AMP_STEP_TRANSFORM,
                    .transform = { .op = AMP_OP_SET, .value = 9 } };
    struct src s = { .data = in, .len = n };
    struct sink k = { .want_len = n, .abort_at = 2 * MIB };
    int rc = amp_stream(client_conn, NULL, &st, 1, n, src_read, &s, sink_write, &k, NULL, 0);
    ck_assert_msg(rc == AMP_ECANCELLED, "got %s: %s", amp_strerror(rc),
                  amp_last_message(client_conn));
    ck_assert_msg(strstr(amp_last_message(client_conn), "output callback"), "message '%s'",
                  amp_last_message(client_conn));
    ck_assert_uint_lt(k.got, n);
    expect_conn_usable();
    free(in);
}
END_TEST

/* total_length 0 is "unknown" (amp.proto), also for a job that needs its
 * whole input at once: the daemon holds up to --max-unknown-length of it,
 * and the steps' ranges are taken from the length that came. */
START_TEST(reverse_unknown_length)
{
    size_t n = 3 * MIB + 5;
    uint8_t *in = client_fixture_random(n, 71), *x = malloc(n), *want = malloc(n);
    amp_step steps[3];
    memset(steps, 0, sizeof steps);
    steps[0].size = sizeof steps[0];
    steps[0].kind = AMP_STEP_TRANSFORM;
    steps[0].transform = (amp_transform_params){ .op = AMP_OP_ADD, .value = 3, .offset = 1000,
                                                 .length = n - 2000, .has_length = 1 };
    steps[1].size = sizeof steps[1];
    steps[1].kind = AMP_STEP_REVERSE;
    steps[2].size = sizeof steps[2];
    steps[2].kind = AMP_STEP_HISTOGRAM;
    steps[2].hist = (amp_hist_params){ .type = AMP_TYPE_UINT8 };
    struct transform_params tp = { .op = XFORM_ADD, .value = 3, .offset = 1000,
                                   .length = n - 2000 };
    memcpy(x, in, n);
    host_step_transform(&tp, x, n);
    host_step_reverse(x, want, n);
    struct src s = { .data = in, .len = n };
    struct sink k = { .want = want, .want_len = n };
    amp_hist h;
    CLIENT_CHECK_OK(
        amp_stream(client_conn, NULL, steps, 3, 0, src_read, &s, sink_write, &k, &h, 1));
    expect_sink(&k);
    struct hist_params bytes = { .type = ELEM_U8, .bins = 256 };
    client_fixture_expect_hist(&h, &bytes, want, n);
    amp_hist_free(&h);
    /* A range the input turned out too short for is refused at its end. */
    steps[0].transform.offset = n;
    s = (struct src){ .data = in, .len = n };
    k = (struct sink){ .want_len = n };
    int rc = amp_stream(client_conn, NULL, steps, 2, 0, src_read, &s, sink_write, &k, NULL, 0);
    ck_assert_msg(rc == AMP_EINVAL, "got %s: %s", amp_strerror(rc), amp_last_message(client_conn));
    ck_assert_msg(strstr(amp_last_message(client_conn), "steps[0].transform.offset"),
                  "message '%s'", amp_last_message(client_conn));
    ck_assert_uint_eq(k.got, 0);
    expect_conn_usable();
    free(want);
    free(x);
    free(in);
}
END_TEST

START_TEST(total_length_mismatch)
{
    size_t n = 3 * MIB + 1;
    uint8_t *in = client_fixture_random(n, 81);
    amp_step st = { .size = sizeof(amp_step), .kind = AMP_STEP_HISTOGRAM,
                    .hist = { .type = AMP_TYPE_UINT8 } };
    amp_hist h;
    /* more input than announced, then less */
    struct src s = { .data = in, .len = n };
    int rc = amp_stream(client_conn, NULL, &st, 1, n - 1, src_read, &s, NULL, NULL, &h, 1);
    ck_assert_msg(rc == AMP_EINVAL, "got %s: %s", amp_strerror(rc), amp_last_message(client_conn));
    ck_assert_msg(strstr(amp_last_message(client_conn), "total_length"), "message '%s'",
                  amp_last_message(client_conn));
    s = (struct src){ .data = in, .len = n };
    rc = amp_stream(client_conn, NULL, &st, 1, n + 1, src_read, &s, NULL, NULL, &h, 1);
    ck_assert_msg(rc == AMP_EINVAL, "got %s: %s", amp_strerror(rc), amp_last_message(client_conn));
    ck_assert_msg(strstr(amp_last_message(client_conn), "total_length"), "message '%s'",
                  amp_last_message(client_conn));
    ck_assert_ptr_null(h.counts);
    expect_conn_usable();
    free(in);
}
END_TEST

/* The memory forms' jobs over n bytes of in: steps 0..2 are a byte
 * histogram, xor value and a reverse (resident: it needs the length, which
 * is len); want is what the xor gives, rev that reversed (both owned). */
struct mem_jobs {
    amp_step steps[3];
    uint8_t *want, *rev;
};

static void mem_jobs_init(struct mem_jobs *m, const uint8_t *in, size_t n, uint8_t value)
{
    m->want = malloc(n);
    m->rev = malloc(n);
    ck_assert_ptr_nonnull(m->want);
    ck_assert_ptr_nonnull(m->rev);
    memcpy(m->want, in, n);
    struct transform_params tp = { .op = XFORM_XOR, .value = value, .length = n };
    host_step_transform(&tp, m->want, n);
    host_step_reverse(m->want, m->rev, n);
    memset(m->steps, 0, sizeof m->steps);
    for (int i = 0; i < 3; i++)
        m->steps[i].size = sizeof m->steps[i];
    m->steps[0].kind = AMP_STEP_HISTOGRAM;
    m->steps[0].hist = (amp_hist_params){ .type = AMP_TYPE_UINT8 };
    m->steps[1].kind = AMP_STEP_TRANSFORM;
    m->steps[1].transform = (amp_transform_params){ .op = AMP_OP_XOR, .value = value };
    m->steps[2].kind = AMP_STEP_REVERSE;
}

static void mem_jobs_free(struct mem_jobs *m)
{
    free(m->want);
    free(m->rev);
}

/* amp_stream_mem: input sent from the caller's memory, many chunks of the
 * library's (AMP_STREAM_CHUNK) and of the daemon's (1 MiB). */
START_TEST(from_memory)
{
    size_t n = WORDS_LEN;
    uint8_t *in = client_fixture_random(n, 31);
    struct mem_jobs m;
    mem_jobs_init(&m, in, n, 0x3c);
    amp_step *steps = m.steps;
    uint8_t *want = m.want, *rev = m.rev;
    struct sink k = { .want = want, .want_len = n };
    amp_hist h;
    CLIENT_CHECK_OK(amp_stream_mem(client_conn, NULL, steps, 2, in, n, sink_write, &k, &h, 1));
    expect_sink(&k);
    struct hist_params bytes = { .type = ELEM_U8, .bins = 256 };
    client_fixture_expect_hist(&h, &bytes, in, n);
    amp_hist_free(&h);
    struct sink r = { .want = rev, .want_len = n };
    CLIENT_CHECK_OK(amp_stream_mem(client_conn, NULL, steps + 1, 2, in, n, sink_write, &r, NULL,
                                   0));
    expect_sink(&r);
    /* Nothing in, nothing out; NULL with a length is refused before sending. */
    struct sink e = { .want_len = 0 };
    CLIENT_CHECK_OK(amp_stream_mem(client_conn, NULL, steps + 1, 1, in, 0, sink_write, &e, NULL,
                                   0));
    expect_sink(&e);
    ck_assert_int_eq(amp_stream_mem(client_conn, NULL, steps + 1, 1, NULL, 5, NULL, NULL, NULL, 0),
                     AMP_EINVAL);
    expect_conn_usable();
    mem_jobs_free(&m);
    free(in);
}
END_TEST

/* amp_stream_mem_into: the output lands in the caller's buffer (most of it
 * read from the socket straight there), for a transform with a histogram,
 * a resident reverse, a histogram alone with no buffer; a buffer one byte
 * short resets the stream and names out_cap; arguments refused locally. */
START_TEST(into_memory)
{
    size_t n = WORDS_LEN, got = 1;
    uint8_t *in = client_fixture_random(n, 37), *out = malloc(n + 1);
    struct mem_jobs m;
    mem_jobs_init(&m, in, n, 0x5a);
    amp_step *steps = m.steps;
    const uint8_t *want = m.want, *rev = m.rev;
    amp_hist h;
    memset(out, 0xee, n + 1);
    CLIENT_CHECK_OK(amp_stream_mem_into(client_conn, NULL, steps, 2, in, n, out, n + 1, &got, &h, 1));
    ck_assert_uint_eq(got, n);
    ck_assert_msg(memcmp(out, want, n) == 0, "transformed output differs");
    ck_assert_uint_eq(out[n], 0xee);   /* nothing past the output */
    struct hist_params bytes = { .type = ELEM_U8, .bins = 256 };
    client_fixture_expect_hist(&h, &bytes, in, n);
    amp_hist_free(&h);
    CLIENT_CHECK_OK(amp_stream_mem_into(client_conn, NULL, steps + 1, 2, in, n, out, n, &got,
                                        NULL, 0));
    ck_assert_uint_eq(got, n);
    ck_assert_msg(memcmp(out, rev, n) == 0, "reversed output differs");
    CLIENT_CHECK_OK(amp_stream_mem_into(client_conn, NULL, steps, 1, in, n, NULL, 0, &got, &h, 1));
    ck_assert_uint_eq(got, 0);
    client_fixture_expect_hist(&h, &bytes, in, n);
    amp_hist_free(&h);
    /* One byte short: refused once the output passes it, the stream reset. */
    int rc = amp_stream_mem_into(client_conn, NULL, steps + 1, 1, in, n, out, n - 1, &got, NULL, 0);
    ck_assert_msg(rc == AMP_EINVAL, "got %s: %s", amp_strerror(rc), amp_last_message(client_conn));
    ck_assert_msg(strstr(amp_last_message(client_conn), "out_cap"), "message '%s'",
                  amp_last_message(client_conn));
    ck_assert_uint_le(got, n - 1);
    expect_conn_usable();
    ck_assert_int_eq(amp_stream_mem_into(client_conn, NULL, steps + 1, 1, in, n, NULL, 5, &got,
                                         NULL, 0), AMP_EINVAL);
    ck_assert_msg(strstr(amp_last_message(client_conn), "out_cap"), "message '%s'",
                  amp_last_message(client_conn));
    ck_assert_int_eq(amp_stream_mem_into(client_conn, NULL, steps + 1, 1, in, n, out, n, NULL,
                                         NULL, 0), AMP_EINVAL);
    ck_assert_msg(strstr(amp_last_message(client_conn), "out_len"), "message '%s'",
                  amp_last_message(client_conn));
    ck_assert_int_eq(amp_stream_mem_into(client_conn, NULL, steps + 1, 1, NULL, 5, out, n, &got,
                                         NULL, 0), AMP_EINVAL);
    ck_assert_int_eq(amp_stream_mem_into(NULL, NULL, steps + 1, 1, in, n, out, n, &got, NULL, 0),
                     AMP_EINVAL);
    expect_conn_usable();
    free(out);
    mem_jobs_free(&m);
    free(in);
}
END_TEST

START_TEST(bad_arguments_refused_locally)
{
    amp_step st[2] = { { .size = sizeof(amp_step), .kind = AMP_STEP_HISTOGRAM,
                         .hist = { .type = AMP_TYPE_UINT8 } },
                       { .size = sizeof(amp_step), .kind = AMP_STEP_REVERSE } };
    amp_hist h[2];
    struct src s = { .data = (const uint8_t *)"abc", .len = 3 };
    int rc = amp_stream(client_conn, NULL, st, 2, 3, src_read, &s, NULL, NULL, h, 2);
    ck_assert_int_eq(rc, AMP_EINVAL);
    ck_assert_msg(strstr(amp_last_message(client_conn), "nhists"), "'%s'",
                  amp_last_message(client_conn));
    rc = amp_stream(client_conn, NULL, st, 2, 3, src_read, &s, NULL, NULL, NULL, 1);
    ck_assert_int_eq(rc, AMP_EINVAL);
    st[1].kind = (amp_step_kind)0;
    rc = amp_stream(client_conn, NULL, st, 2, 3, src_read, &s, NULL, NULL, h, 1);
    ck_assert_int_eq(rc, AMP_EINVAL);
    ck_assert_msg(strstr(amp_last_message(client_conn), "steps[1].kind"), "'%s'",
                  amp_last_message(client_conn));
    amp_opts bad = { .size = sizeof(amp_opts), .device = NULL, .timeout_ms = -5 };
    st[1].size = sizeof st[1];
    st[1].kind = AMP_STEP_REVERSE;
    rc = amp_stream(client_conn, &bad, st, 2, 3, src_read, &s, NULL, NULL, h, 1);
    ck_assert_int_eq(rc, AMP_EINVAL);
    ck_assert_uint_eq(s.calls, 0); /* nothing was read */
    expect_conn_usable();
}
END_TEST

/* The options-struct form runs the same job; a struct it cannot read is
 * refused before anything is sent. */
START_TEST(args_struct_form)
{
    amp_step st = { .size = sizeof(amp_step), .kind = AMP_STEP_TRANSFORM,
                    .transform = { .op = AMP_OP_XOR, .value = 0xff } };
    const uint8_t in[5] = { 0, 1, 2, 3, 0xf0 }, want[5] = { 0xff, 0xfe, 0xfd, 0xfc, 0x0f };
    struct src s = { .data = in, .len = sizeof in };
    struct sink k = { .want = want, .want_len = sizeof want };
    amp_stream_args a = { .size = sizeof a, .steps = &st, .nsteps = 1, .total_length = sizeof in,
                          .in = src_read, .in_ctx = &s, .out = sink_write, .out_ctx = &k };
    CLIENT_CHECK_OK(amp_stream_run(client_conn, NULL, &a));
    expect_sink(&k);
    a.size = offsetof(amp_stream_args, hists);
    ck_assert_int_eq(amp_stream_run(client_conn, NULL, &a), AMP_EINVAL);
    ck_assert_msg(strstr(amp_last_message(client_conn), "amp_stream_args.size"), "'%s'",
                  amp_last_message(client_conn));
    ck_assert_int_eq(amp_stream_run(client_conn, NULL, NULL), AMP_EINVAL);
    ck_assert_int_eq(amp_stream_run(NULL, NULL, &a), AMP_EINVAL);
    expect_conn_usable();
}
END_TEST

int main(void)
{
    static const char *const args[] = { "--staging-bytes", "4M", "--chunk-bytes", "1M", NULL };
    Suite *s = suite_create("client_stream");
    const TTest *const tests[] = {
        transform_histogram_with_total_length,
        transform_histogram_unknown_length,
        reverse_with_total_length,
        histogram_only_has_no_data,
        fill_without_input,
        fd_form,
        input_read_as_the_daemon_takes_it,
        read_callback_aborts,
        read_callback_aborts_at_once,
        deadline_while_input_stalls,
        write_callback_aborts,
        reverse_unknown_length,
        total_length_mismatch,
        bad_arguments_refused_locally,
        args_struct_form,
        from_memory,
        into_memory,
        NULL,
    };
    TCase *tc = check_run_case(s, "stream", tests);
    tcase_add_checked_fixture(tc, client_fixture_open, client_fixture_close);
    return client_fixture_run(s, args);
}
