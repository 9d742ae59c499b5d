/* SPDX-License-Identifier: MIT */
/* test_rpc_validation.c: static validation of every job kind, as a client
 * sees it: INVALID_ARGUMENT with a message naming the field. In memory
 * through the h2 + rpc layers with no devices, so a request that passes
 * validation answers UNAVAILABLE (no device) instead. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "amp.pb-c.h"
#include "h2_pair.h"

#define MAX_MSG (64 * 1024)
#define PASSED STATUS_UNAVAILABLE

static struct h2_pair pair;
static char message[H2C_MESSAGE_MAX];

static void setup(void)
{
    h2_pair_init(&pair, MAX_MSG, 32);
}

static void teardown(void)
{
    h2_pair_free(&pair);
}

/* Calls path with m; returns the status, the decoded message in `message`. */
static int call(const char *path, const ProtobufCMessage *m)
{
    size_t len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(len + 1);
    protobuf_c_message_pack(m, buf);
    const struct h2c_result *r = h2_pair_call(&pair, path, buf, len);
    free(buf);
    ck_assert(r->closed);
    h2c_percent_decode(r->grpc_message, message, sizeof(message));
    return r->grpc_status;
}

static uint8_t data8[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };

static int transform(Amp__V1__TransformParams *p, size_t data_len)
{
    Amp__V1__TransformRequest req = AMP__V1__TRANSFORM_REQUEST__INIT;
    req.data.data = data8;
    req.data.len = data_len;
    req.params = p;
    return call("/amp.v1.Amp/Transform", &req.base);
}

static int histogram(Amp__V1__HistogramParams *p, size_t data_len)
{
    Amp__V1__HistogramRequest req = AMP__V1__HISTOGRAM_REQUEST__INIT;
    req.data.data = data8;
    req.data.len = data_len;
    req.params = p;
    return call("/amp.v1.Amp/Histogram", &req.base);
}

static int fill(Amp__V1__FillParams *p)
{
    Amp__V1__FillRequest req = AMP__V1__FILL_REQUEST__INIT;
    req.params = p;
    return call("/amp.v1.Amp/Fill", &req.base);
}

#define ck_invalid(expr, text)                                   \
    do {                                                         \
        ck_assert_int_eq((expr), STATUS_INVALID_ARGUMENT);       \
        ck_assert_str_eq(message, (text));                       \
    } while (0)

/* A reply that could not be sent, refused before the job runs. */
#define REPLY_TOO_BIG(n) "the reply could take " #n " bytes, over --max-message-bytes (65536): " \
                         "send the job as a Stream call, or name an output_region for its data"
#define ck_exhausted(expr, text)                                 \
    do {                                                         \
        ck_assert_int_eq((expr), STATUS_RESOURCE_EXHAUSTED);     \
        ck_assert_str_eq(message, (text));                       \
    } while (0)

START_TEST(transform_params)
{
    Amp__V1__TransformParams p = AMP__V1__TRANSFORM_PARAMS__INIT;
    ck_invalid(transform(NULL, 8), "params.op is required");
    ck_invalid(transform(&p, 8), "params.op is required");
    p.op = 99;
    ck_invalid(transform(&p, 8), "params.op: unknown transform op 99");
    p.op = AMP__V1__TRANSFORM_OP__TRANSFORM_OP_ADD;
    p.value = 256;
    ck_invalid(transform(&p, 8), "params.value must be 0..255, got 256");
    p.value = 255;
    ck_assert_int_eq(transform(&p, 8), PASSED);
    p.op = AMP__V1__TRANSFORM_OP__TRANSFORM_OP_MAP;
    ck_invalid(transform(&p, 8), "params.table must hold exactly 256 bytes, got 0");
    uint8_t table[256] = { 0 };
    p.table.data = table;
    p.table.len = 255;
    ck_invalid(transform(&p, 8), "params.table must hold exactly 256 bytes, got 255");
    p.table.len = 256;
    ck_assert_int_eq(transform(&p, 8), PASSED);
}
END_TEST

START_TEST(transform_range)
{
    Amp__V1__TransformParams p = AMP__V1__TRANSFORM_PARAMS__INIT;
    p.op = AMP__V1__TRANSFORM_OP__TRANSFORM_OP_XOR;
    p.offset = 9;
    ck_invalid(transform(&p, 8), "params.offset (9) exceeds the data length (8)");
    p.offset = 8; /* empty range at the end: fine */
    ck_assert_int_eq(transform(&p, 8), PASSED);
    p.offset = 4;
    p.has_length_case = AMP__V1__TRANSFORM_PARAMS__HAS_LENGTH_LENGTH;
    p.length = 5;
    ck_invalid(transform(&p, 8), "params.offset + params.length exceeds the data length (8)");
    p.length = UINT64_MAX; /* no overflow into a small sum */
    ck_invalid(transform(&p, 8), "params.offset + params.length exceeds the data length (8)");
    p.length = 4;
    ck_assert_int_eq(transform(&p, 8), PASSED);
}
END_TEST

START_TEST(histogram_params)
{
    ck_assert_int_eq(histogram(NULL, 8), PASSED); /* bytes, 256 bins */
    Amp__V1__HistogramParams p = AMP__V1__HISTOGRAM_PARAMS__INIT;
    p.type = AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_UINT8;
    p.bins = 16;
    ck_invalid(histogram(&p, 8), "params.type: UINT8 histograms have 256 bins");
    p.bins = 256;
    ck_assert_int_eq(histogram(&p, 8), PASSED);
    p.type = 77;
    ck_invalid(histogram(&p, 8), "params.type: unknown element type 77");
    p.type = AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_INT64;
    ck_invalid(histogram(&p, 8), "params.type: INT64 histograms are not supported");
    p.type = AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_FLOAT32;
    p.bins = 0;
    ck_invalid(histogram(&p, 8), "params.bins must be >= 1");
    p.bins = 10;
    p.lo = 1;
    p.hi = 1;
    ck_invalid(histogram(&p, 8), "params.lo must be < params.hi");
    p.hi = NAN;
    ck_invalid(histogram(&p, 8), "params.lo and params.hi must be finite");
    p.hi = 2;
    ck_invalid(histogram(&p, 7), "data: length 7 is not a multiple of 4, the FLOAT32 element size");
    p.out_of_range = 5;
    ck_invalid(histogram(&p, 8), "params.out_of_range: unknown value 5");
    p.out_of_range = AMP__V1__OUT_OF_RANGE__OUT_OF_RANGE_CLAMP;
    ck_assert_int_eq(histogram(&p, 8), PASSED);
    p.bins = MAX_MSG;
    ck_invalid(histogram(&p, 8), "params.bins (65536) * 8 bytes exceeds --max-message-bytes (65536)");
}
END_TEST

START_TEST(fill_params)
{
    ck_invalid(fill(NULL), "params.type must be INT32, UINT32, INT64 or FLOAT32");
    Amp__V1__FillParams p = AMP__V1__FILL_PARAMS__INIT;
    p.type = AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_UINT8;
    ck_invalid(fill(&p), "params.type must be INT32, UINT32, INT64 or FLOAT32");
    p.type = AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_INT64;
    p.count = MAX_MSG / 8 + 1;
    ck_invalid(fill(&p), "params.count * element size exceeds --max-message-bytes (65536)");
    p.count = UINT64_MAX; /* no overflow */
    ck_invalid(fill(&p), "params.count * element size exceeds --max-message-bytes (65536)");
    /* Data that fits the limit, but not with the reply's fields and a
     * device name of up to 127 bytes: 1 + 3 + 65408 + 1 + 1 + 127. */
    p.count = MAX_MSG / 8 - 16;
    ck_exhausted(fill(&p), REPLY_TOO_BIG(65541));
    p.count = MAX_MSG / 8 - 17;
    p.tile = 7;
    ck_assert_int_eq(fill(&p), PASSED);
}
END_TEST

static int pipeline(Amp__V1__Step **steps, size_t n, size_t data_len)
{
    Amp__V1__PipelineRequest req = AMP__V1__PIPELINE_REQUEST__INIT;
    req.data.data = data8;
    req.data.len = data_len;
    req.steps = steps;
    req.n_steps = n;
    return call("/amp.v1.Amp/Pipeline", &req.base);
}

START_TEST(pipeline_steps)
{
    ck_invalid(pipeline(NULL, 0, 8), "steps: a pipeline needs at least one step");
    Amp__V1__Step s0 = AMP__V1__STEP__INIT, s1 = AMP__V1__STEP__INIT, s2 = AMP__V1__STEP__INIT;
    Amp__V1__Step *steps[] = { &s0, &s1, &s2 };
    ck_invalid(pipeline(steps, 1, 8), "steps[0]: no step kind set");
    Amp__V1__ReverseParams rp = AMP__V1__REVERSE_PARAMS__INIT;
    Amp__V1__TransformParams tp = AMP__V1__TRANSFORM_PARAMS__INIT;
    Amp__V1__HistogramParams hp = AMP__V1__HISTOGRAM_PARAMS__INIT;
    Amp__V1__FillParams fp = AMP__V1__FILL_PARAMS__INIT;
    s0.kind_case = AMP__V1__STEP__KIND_REVERSE;
    s0.reverse = &rp;
    s1.kind_case = AMP__V1__STEP__KIND_TRANSFORM;
    s1.transform = &tp;
    ck_invalid(pipeline(steps, 2, 8), "steps[1].transform.op is required");
    tp.op = AMP__V1__TRANSFORM_OP__TRANSFORM_OP_SET;
    s2.kind_case = AMP__V1__STEP__KIND_HISTOGRAM;
    s2.histogram = &hp;
    ck_assert_int_eq(pipeline(steps, 3, 8), PASSED);
    /* A fill changes the data length the next step sees: 3 int32 = 12. */
    s0.kind_case = AMP__V1__STEP__KIND_FILL;
    s0.fill = &fp;
    fp.type = AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_INT32;
    fp.count = 3;
    tp.offset = 10;
    tp.has_length_case = AMP__V1__TRANSFORM_PARAMS__HAS_LENGTH_LENGTH;
    tp.length = 3;
    ck_invalid(pipeline(steps, 2, 8), "steps[1].transform.offset + steps[1].transform.length exceeds the data length (12)");
    tp.length = 2;
    ck_assert_int_eq(pipeline(steps, 2, 8), PASSED);
    /* A histogram passes its input on: a float histogram after it sees the
     * same 12 bytes. */
    hp.type = AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_FLOAT32;
    hp.bins = 4;
    hp.hi = 1;
    s1.kind_case = AMP__V1__STEP__KIND_HISTOGRAM;
    s1.histogram = &hp;
    ck_assert_int_eq(pipeline(steps, 3, 8), PASSED);
}
END_TEST

START_TEST(pipeline_limits)
{
    Amp__V1__Step st = AMP__V1__STEP__INIT;
    Amp__V1__ReverseParams rp = AMP__V1__REVERSE_PARAMS__INIT;
    st.kind_case = AMP__V1__STEP__KIND_REVERSE;
    st.reverse = &rp;
    Amp__V1__Step *steps[65];
    for (int i = 0; i < 65; i++)
        steps[i] = &st;
    ck_invalid(pipeline(steps, 65, 8), "steps: at most 64 steps, got 65");
    ck_assert_int_eq(pipeline(steps, 64, 8), PASSED);
    /* Two fills of 40000 bytes each: 80000 bytes of data, each in a
     * StepResult (4 + 4 bytes around it), and the device's name. */
    Amp__V1__FillParams fp = AMP__V1__FILL_PARAMS__INIT;
    fp.type = AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_INT32;
    fp.count = 10000;
    Amp__V1__Step fs = AMP__V1__STEP__INIT;
    fs.kind_case = AMP__V1__STEP__KIND_FILL;
    fs.fill = &fp;
    Amp__V1__Step *fills[] = { &fs, &fs };
    ck_exhausted(pipeline(fills, 2, 0), REPLY_TOO_BIG(80145));
}
END_TEST

START_TEST(device_string)
{
    Amp__V1__ReverseRequest req = AMP__V1__REVERSE_REQUEST__INIT;
    req.device = "0123456789012345678901234567890123456789";
    ck_assert_int_eq(call("/amp.v1.Amp/Reverse", &req.base), STATUS_INVALID_ARGUMENT);
    ck_assert(strncmp(message, "device: no device matches \"0123", 30) == 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rpc_validation");
    const TTest *const tests[] = {
        transform_params,
        transform_range,
        histogram_params,
        fill_params,
        pipeline_steps,
        pipeline_limits,
        device_string,
        NULL,
    };
    TCase *tc = check_run_case(s, "core", tests);
    tcase_add_checked_fixture(tc, setup, teardown);
    return check_run(s, CK_FORK_GETENV);
}
