/* SPDX-License-Identifier: MIT */
/* test_hostile_size_overflow.c: issue 10, reproducer 6. Sizes a client
 * chooses (a Stream header's total_length of 2^63, a fill step of 2^60
 * int32 elements) used to wrap the device-memory estimate; every size
 * formula now saturates, and a saturated estimate is refused. The calls
 * are answered INVALID_ARGUMENT or RESOURCE_EXHAUSTED with a message that
 * names the size asked for (or larger: never a wrapped, small one), and the
 * daemon serves on. */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "amp.pb-c.h"
#include "check_run.h"
#include "grpc_frame.h"
#include "h2_client.h"
#include "hostile.h"
#include "status.h"

#define HUGE_TOTAL (UINT64_C(1) << 63)
#define HUGE_COUNT (UINT64_C(1) << 60)
#define WRAP_COUNT64 (UINT64_C(1) << 61)

static struct daemon_proc ampd;

/* StreamRequest{header{steps: [fill int32 count], total_length}} with its
 * gRPC prefix into out; returns the length. */
static size_t pack_stream_fill_type(Amp__V1__ElementType type, uint64_t count, uint64_t total,
                                    uint8_t *out)
{
    Amp__V1__FillParams fp = AMP__V1__FILL_PARAMS__INIT;
    fp.type = type;
    fp.count = count;
    fp.step = 1;
    Amp__V1__Step step = AMP__V1__STEP__INIT;
    step.kind_case = AMP__V1__STEP__KIND_FILL;
    step.fill = &fp;
    Amp__V1__Step *steps[] = { &step };
    Amp__V1__JobHeader h = AMP__V1__JOB_HEADER__INIT;
    h.n_steps = 1;
    h.steps = steps;
    h.total_length = total;
    Amp__V1__StreamRequest req = AMP__V1__STREAM_REQUEST__INIT;
    req.msg_case = AMP__V1__STREAM_REQUEST__MSG_HEADER;
    req.header = &h;
    return protobuf_c_message_pack(&req.base, out);
}

static size_t pack_stream_fill(uint64_t count, uint64_t total, uint8_t *out)
{
    return pack_stream_fill_type(AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_INT32, count, total, out);
}

/* StreamRequest{header{steps: [reverse], total_length}}. */
static size_t pack_stream_reverse(uint64_t total, uint8_t *out)
{
    Amp__V1__ReverseParams rp = AMP__V1__REVERSE_PARAMS__INIT;
    Amp__V1__Step step = AMP__V1__STEP__INIT;
    step.kind_case = AMP__V1__STEP__KIND_REVERSE;
    step.reverse = &rp;
    Amp__V1__Step *steps[] = { &step };
    Amp__V1__JobHeader h = AMP__V1__JOB_HEADER__INIT;
    h.n_steps = 1;
    h.steps = steps;
    h.total_length = total;
    Amp__V1__StreamRequest req = AMP__V1__STREAM_REQUEST__INIT;
    req.msg_case = AMP__V1__STREAM_REQUEST__MSG_HEADER;
    req.header = &h;
    return protobuf_c_message_pack(&req.base, out);
}

static size_t pack_pipeline_fill(uint64_t count, uint8_t *out)
{
    Amp__V1__FillParams fp = AMP__V1__FILL_PARAMS__INIT;
    fp.type = AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_INT32;
    fp.count = count;
    Amp__V1__Step step = AMP__V1__STEP__INIT;
    step.kind_case = AMP__V1__STEP__KIND_FILL;
    step.fill = &fp;
    Amp__V1__Step *steps[] = { &step };
    Amp__V1__PipelineRequest req = AMP__V1__PIPELINE_REQUEST__INIT;
    req.n_steps = 1;
    req.steps = steps;
    return protobuf_c_message_pack(&req.base, out);
}

/* The largest decimal number in text (saturating at UINT64_MAX), 0 if none. */
static uint64_t largest_number(const char *text)
{
    uint64_t best = 0;
    for (const char *p = text; *p;) {
        if (*p < '0' || *p > '9') {
            p++;
            continue;
        }
        uint64_t v = 0;
        for (; *p >= '0' && *p <= '9'; p++)
            v = v > (UINT64_MAX - 9) / 10 ? UINT64_MAX : v * 10 + (uint64_t)(*p - '0');
        if (v > best)
            best = v;
    }
    return best;
}

/* Sends msg as the only message of a call to path (request half-closed)
 * and fails unless it is refused INVALID_ARGUMENT or RESOURCE_EXHAUSTED
 * with a message naming a size of at least at_least bytes or elements (a
 * wrapped estimate names a small one, or none). */
static void expect_refused(const char *path, const uint8_t *msg, size_t len, uint64_t at_least)
{
    int fd = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    struct h2c *c = h2c_new();
    int32_t id = h2c_call(c, path, msg, len);
    ck_assert_int_eq(h2c_run_fd(c, fd, HOSTILE_IO_MS), 0);
    const struct h2c_result *r = h2c_result(c, id);
    char m[H2C_MESSAGE_MAX];
    h2c_percent_decode(r->grpc_message, m, sizeof m);
    ck_assert_msg(r->grpc_status == STATUS_INVALID_ARGUMENT
                      || r->grpc_status == STATUS_RESOURCE_EXHAUSTED,
                  "%s: status %d: %s", path, r->grpc_status, m);
    ck_assert_msg(largest_number(m) >= at_least, "%s: the message names no size >= %llu: %s", path,
                  (unsigned long long)at_least, m);
    close(fd);
    h2c_free(c);
}

START_TEST(stream_header_sizes_that_wrap)
{
    static const char *const args[] = { "--max-job-memory", "67108864", NULL };
    long base = hostile_start(&ampd, args);
    uint8_t msg[128];
    /* The header: both sizes at once. */
    expect_refused("/amp.v1.Amp/Stream", msg, pack_stream_fill(HUGE_COUNT, HUGE_TOTAL, msg),
                   HUGE_COUNT);
    /* Each alone. */
    expect_refused("/amp.v1.Amp/Stream", msg, pack_stream_fill(HUGE_COUNT, 0, msg), HUGE_COUNT);
    expect_refused("/amp.v1.Amp/Stream", msg, pack_stream_fill(16, HUGE_TOTAL, msg), HUGE_TOTAL);
    /* 2^61 int64 elements are 2^64 bytes: 0 once wrapped. */
    expect_refused("/amp.v1.Amp/Stream", msg,
                   pack_stream_fill_type(AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_INT64, WRAP_COUNT64, 0,
                                         msg),
                   WRAP_COUNT64);
    expect_refused("/amp.v1.Amp/Stream", msg,
                   pack_stream_fill_type(AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_INT64, WRAP_COUNT64 * 4,
                                         UINT64_MAX, msg),
                   WRAP_COUNT64);
    expect_refused("/amp.v1.Amp/Stream", msg, pack_stream_fill(UINT64_MAX, 0, msg), HUGE_COUNT);
    /* A reverse step keeps the whole input on the device. */
    expect_refused("/amp.v1.Amp/Stream", msg, pack_stream_reverse(UINT64_MAX, msg), HUGE_TOTAL);
    expect_refused("/amp.v1.Amp/Stream", msg, pack_stream_reverse(HUGE_TOTAL, msg), HUGE_TOTAL);
    /* The unary Pipeline with the step: refused (its message may
     * name the limit instead of the size). */
    expect_refused("/amp.v1.Amp/Pipeline", msg, pack_pipeline_fill(HUGE_COUNT, msg), 0);
    ck_assert(daemon_alive(&ampd));
    hostile_assert_served(ampd.address);
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hostile_size_overflow");
    const TTest *const tests[] = {
        stream_header_sizes_that_wrap,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 60);
    return check_run(s, CK_FORK_GETENV);
}
