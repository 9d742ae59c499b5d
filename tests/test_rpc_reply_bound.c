/* SPDX-License-Identifier: MIT */
/* test_rpc_reply_bound.c: rpc_reply_bound() against protobuf-c's own
 * packing of the replies it bounds. Each reply is built at its worst (a
 * device name of JOB_DEVICE_MAX - 1 bytes, every count and total as large
 * as the elements counted, nonzero region fields at their widest), where
 * the bound must be exact; smaller replies must stay under it. A drift
 * between amp.proto and the bound fails here, not on a client. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "amp.pb-c.h"
#include "check_run.h"
#include "rpc_reply_bound.h"

static char device[JOB_DEVICE_MAX];

static void setup(void)
{
    memset(device, 'd', sizeof device - 1);
    device[sizeof device - 1] = '\0';
}

/* A histogram whose counts and totals are all elems, packed. */
static void worst_hist(Amp__V1__Histogram *h, uint64_t *counts, uint32_t bins, uint64_t elems)
{
    amp__v1__histogram__init(h);
    for (uint32_t i = 0; i < bins; i++)
        counts[i] = elems;
    h->n_counts = bins;
    h->counts = counts;
    h->below = h->above = h->nan = elems;
}

static void hist_step(struct step *st, enum elem_type type, uint32_t bins)
{
    st->kind = STEP_HISTOGRAM;
    st->u.hist.type = type;
    st->u.hist.bins = bins;
}

START_TEST(data_reply_exact)
{
    static const uint64_t lens[] = { 0, 1, 127, 128, 16383, 16384, 1 << 20 };
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        struct job *job = job_new(1);
        job->steps[0].kind = STEP_REVERSE;
        job->in_len = lens[k];
        Amp__V1__DataReply r = AMP__V1__DATA_REPLY__INIT;
        r.data.len = lens[k];   /* protobuf-c sizes bytes by their length alone */
        r.device = device;
        size_t packed = protobuf_c_message_get_packed_size(&r.base);
        ck_assert_uint_eq(rpc_reply_bound(job, RPC_REPLY_DATA), packed + (lens[k] ? 0 : 2));
        r.device = "0: cpu";
        ck_assert_uint_le(protobuf_c_message_get_packed_size(&r.base),
                          rpc_reply_bound(job, RPC_REPLY_DATA));
        job_free(job);
    }
}
END_TEST

START_TEST(fill_and_region_replies)
{
    struct job *job = job_new(1);
    job->steps[0].kind = STEP_FILL;
    job->steps[0].u.fill.type = ELEM_I64;
    job->steps[0].u.fill.count = 1000;
    Amp__V1__DataReply r = AMP__V1__DATA_REPLY__INIT;
    r.data.len = 8000;
    r.device = device;
    ck_assert_uint_eq(rpc_reply_bound(job, RPC_REPLY_DATA),
                      protobuf_c_message_get_packed_size(&r.base));
    /* Into a region: the reply says where, whatever the size. */
    job->out_region = (struct region *)1;   /* only looked at, never used */
    Amp__V1__RegionSlice slice = AMP__V1__REGION_SLICE__INIT;
    slice.region = slice.offset = slice.length = UINT64_MAX;
    r.data.len = 0;
    r.output_region = &slice;
    ck_assert_uint_eq(rpc_reply_bound(job, RPC_REPLY_DATA),
                      protobuf_c_message_get_packed_size(&r.base));
    job->out_region = NULL;
    job_free(job);
}
END_TEST

START_TEST(histogram_reply_exact)
{
    static const uint64_t lens[] = { 4, 400, 1 << 20, 1ull << 40 };
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        struct job *job = job_new(1);
        hist_step(&job->steps[0], ELEM_F32, 1000);
        job->in_len = lens[k];
        uint64_t counts[1000];
        Amp__V1__Histogram h;
        worst_hist(&h, counts, 1000, lens[k] / 4);
        Amp__V1__HistogramReply r = AMP__V1__HISTOGRAM_REPLY__INIT;
        r.histogram = &h;
        r.device = device;
        ck_assert_uint_eq(rpc_reply_bound(job, RPC_REPLY_HISTOGRAM),
                          protobuf_c_message_get_packed_size(&r.base));
        job_free(job);
    }
}
END_TEST

/* reverse, byte histogram, fill, float histogram of the fill's output. */
START_TEST(pipeline_reply_exact)
{
    struct job *job = job_new(4);
    job->in_len = 300;
    job->steps[0].kind = STEP_REVERSE;
    hist_step(&job->steps[1], ELEM_U8, JOB_HIST_BYTE_BINS);
    job->steps[2].kind = STEP_FILL;
    job->steps[2].u.fill.type = ELEM_F32;
    job->steps[2].u.fill.count = 50000;
    hist_step(&job->steps[3], ELEM_F32, 10);
    uint64_t c1[JOB_HIST_BYTE_BINS], c3[10];
    Amp__V1__Histogram h1, h3;
    worst_hist(&h1, c1, JOB_HIST_BYTE_BINS, 300);
    worst_hist(&h3, c3, 10, 50000);
    Amp__V1__StepResult res[4], *ptrs[4];
    for (int i = 0; i < 4; i++) {
        amp__v1__step_result__init(&res[i]);
        ptrs[i] = &res[i];
    }
    res[0].data.len = 300;
    res[1].histogram = &h1;
    res[2].data.len = 200000;
    res[3].histogram = &h3;
    Amp__V1__PipelineReply r = AMP__V1__PIPELINE_REPLY__INIT;
    r.n_results = 4;
    r.results = ptrs;
    r.device = device;
    ck_assert_uint_eq(rpc_reply_bound(job, RPC_REPLY_PIPELINE),
                      protobuf_c_message_get_packed_size(&r.base));
    job_free(job);
}
END_TEST

START_TEST(stream_result_exact)
{
    struct job *job = job_new(2);
    job->steps[0].kind = STEP_TRANSFORM;
    hist_step(&job->steps[1], ELEM_U32, 77);
    uint64_t counts[77];
    Amp__V1__Histogram h;
    worst_hist(&h, counts, 77, (1ull << 33) / 4);
    Amp__V1__StepResult res = AMP__V1__STEP_RESULT__INIT;
    res.histogram = &h;
    Amp__V1__StreamReply r;   /* a oneof's INIT trips -Wmissing-braces */
    amp__v1__stream_reply__init(&r);
    r.msg_case = AMP__V1__STREAM_REPLY__MSG_RESULT;
    r.result = &res;
    r.device = device;
    ck_assert_uint_eq(rpc_reply_bound_stream_result(job, 1, 1ull << 33),
                      protobuf_c_message_get_packed_size(&r.base));
    job_free(job);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rpc_reply_bound");
    const TTest *const tests[] = {
        data_reply_exact,
        fill_and_region_replies,
        histogram_reply_exact,
        pipeline_reply_exact,
        stream_result_exact,
        NULL,
    };
    TCase *tc = check_run_case(s, "core", tests);
    tcase_add_checked_fixture(tc, setup, NULL);
    return check_run(s, CK_FORK_GETENV);
}
