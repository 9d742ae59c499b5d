/* SPDX-License-Identifier: MIT */
/* fuzz_requests.c: protobuf decoding and parameter validation of every
 * request type, without the HTTP/2 around them (fuzz_conn has that).
 *
 * Input: method (1 byte) | limits (1 byte) | the request message. The
 * method byte picks the message type and the validation the daemon runs
 * on it (rpc_jobs.c's and rpc_stream.c's calls into rpc_params.c); the
 * limits byte picks --max-message-bytes (low 3 bits) and, for a stream
 * whose header announced no length, how many bytes "arrived" before the
 * end-of-input check (high 5 bits). Beyond not crashing, leaking or
 * tripping UBSan, a request that validation accepts must describe a job
 * the runner can run: each step's parameters in range, the lengths it
 * will see consistent (checked below, aborting if not). And the daemon's
 * own reading of a unary request's bulk field (rpc_bulk.c) must agree
 * with protobuf-c's unpack on every message: the same verdict, the same
 * data bytes, the same other fields.
 */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amp.pb-c.h"
#include "grpc/health/v1/health.pb-c.h"
#include "job.h"
#include "rpc_bulk.h"
#include "rpc_params.h"
#include "sat.h"

enum fuzz_requests_method {
    FUZZ_REQ_REVERSE,
    FUZZ_REQ_TRANSFORM,
    FUZZ_REQ_HISTOGRAM,
    FUZZ_REQ_FILL,
    FUZZ_REQ_PIPELINE,
    FUZZ_REQ_STREAM,
    FUZZ_REQ_LIST_DEVICES,
    FUZZ_REQ_STATUS,
    FUZZ_REQ_HEALTH,
    FUZZ_REQ_COUNT
};

/* The most steps a pipeline or stream header may have (rpc_jobs.c and
 * rpc_stream.c refuse more before validating any). */
#define FUZZ_REQ_MAX_STEPS 64
/* A stream header with no total_length is checked against a length this
 * large, as rpc_stream.c does: every offset passes until the real length
 * is known at the end. */
#define FUZZ_REQ_UNKNOWN_LEN (UINT64_MAX / 4 / 16 * 16)
#define FUZZ_REQ_END_LEN_UNIT 333
#define FUZZ_REQ_MAP_TABLE 256
#define FUZZ_REQ_U8_BINS 256

static const size_t fuzz_requests_max_message[] = {
    1, 256, 64 * 1024, 64 * 1024 * 1024, 0xffffffffu, 5, 4096, 1024 * 1024,
};

static void fuzz_requests_fail(const char *what)
{
    fprintf(stderr, "fuzz_requests: accepted, but %s\n", what);
    abort();
}

/* --- what an accepted step must be ----------------------------------------------- */

static void fuzz_requests_check_transform(const struct transform_params *p, uint64_t len)
{
    if (p->op > XFORM_MAP)
        fuzz_requests_fail("the transform op is unknown");
    if (p->offset > len || p->length > len - p->offset)
        fuzz_requests_fail("the transform range is outside the data");
}

static void fuzz_requests_check_hist(const struct hist_params *p, uint64_t len, size_t max_result)
{
    if (p->type == ELEM_U8) {
        if (p->bins != FUZZ_REQ_U8_BINS)
            fuzz_requests_fail("a UINT8 histogram does not have 256 bins");
        return;
    }
    if (p->type != ELEM_U32 && p->type != ELEM_I32 && p->type != ELEM_F32)
        fuzz_requests_fail("the histogram type is not one the kernels count");
    if (p->bins < 1 || sat_mul_u64(p->bins, sizeof(uint64_t)) > max_result)
        fuzz_requests_fail("the histogram's bins do not fit one reply");
    if (!isfinite(p->lo) || !isfinite(p->hi) || !(p->lo < p->hi))
        fuzz_requests_fail("the histogram range is empty or not finite");
    if (len % elem_size(p->type) != 0)
        fuzz_requests_fail("the data is not whole histogram elements");
}

static void fuzz_requests_check_fill(const struct fill_params *p, size_t max_data)
{
    if (p->type != ELEM_I32 && p->type != ELEM_U32 && p->type != ELEM_I64 && p->type != ELEM_F32)
        fuzz_requests_fail("the fill type is unknown");
    if (sat_mul_u64(p->count, elem_size(p->type)) > max_data)
        fuzz_requests_fail("the fill's output exceeds its bound");
}

/* st saw len bytes and passed: its parameters and the next length. */
static void fuzz_requests_check_step(const struct step *st, uint64_t len, uint64_t next,
                                     size_t max_data, size_t max_result)
{
    switch (st->kind) {
    case STEP_REVERSE:
        break;
    case STEP_TRANSFORM:
        fuzz_requests_check_transform(&st->u.transform, len);
        break;
    case STEP_HISTOGRAM:
        fuzz_requests_check_hist(&st->u.hist, len, max_result);
        break;
    case STEP_FILL:
        fuzz_requests_check_fill(&st->u.fill, max_data);
        break;
    default:
        fuzz_requests_fail("the step kind is unknown");
    }
    uint64_t want = st->kind == STEP_FILL ? sat_mul_u64(st->u.fill.count, elem_size(st->u.fill.type))
                                          : len;
    if (next != want)
        fuzz_requests_fail("the length the next step sees is wrong");
}

static void fuzz_requests_check_device(const char *device, const struct job *job)
{
    if (strlen(job->device_req) >= sizeof(job->device_req) || strcmp(device, job->device_req) != 0)
        fuzz_requests_fail("the device selection was not copied whole");
}

/* --- the methods ---------------------------------------------------------------- */

static enum status_code fuzz_requests_device(const char *device, struct job *job)
{
    char err[STATUS_MSG_MAX];
    enum status_code code = rpc_params_device(device, job, err, sizeof err);
    if (code == STATUS_OK)
        fuzz_requests_check_device(device, job);
    return code;
}

static void fuzz_requests_unary(enum fuzz_requests_method m, const ProtobufCMessage *msg,
                                size_t max_message)
{
    struct job *job = job_new(1);
    if (!job)
        return;
    char err[STATUS_MSG_MAX];
    enum status_code code = STATUS_OK;
    const char *device = "";
    uint64_t len = 0;
    switch (m) {
    case FUZZ_REQ_REVERSE: {
        const Amp__V1__ReverseRequest *r = (const void *)msg;
        device = r->device;
        break;
    }
    case FUZZ_REQ_TRANSFORM: {
        const Amp__V1__TransformRequest *r = (const void *)msg;
        len = r->data.len;
        device = r->device;
        code = rpc_params_transform(r->params, "params", len, &job->steps[0], err, sizeof err);
        if (code == STATUS_OK)
            fuzz_requests_check_transform(&job->steps[0].u.transform, len);
        if (code == STATUS_OK && job->steps[0].u.transform.op == XFORM_MAP &&
            memcmp(job->steps[0].u.transform.table, r->params->table.data, FUZZ_REQ_MAP_TABLE) != 0)
            fuzz_requests_fail("the map table was not copied");
        break;
    }
    case FUZZ_REQ_HISTOGRAM: {
        const Amp__V1__HistogramRequest *r = (const void *)msg;
        len = r->data.len;
        device = r->device;
        code = rpc_params_histogram(r->params, "params", len, max_message, &job->steps[0], err,
                                    sizeof err);
        if (code == STATUS_OK)
            fuzz_requests_check_hist(&job->steps[0].u.hist, len, max_message);
        break;
    }
    case FUZZ_REQ_FILL: {
        const Amp__V1__FillRequest *r = (const void *)msg;
        device = r->device;
        code = rpc_params_fill(r->params, "params", max_message, &job->steps[0], err, sizeof err);
        if (code == STATUS_OK)
            fuzz_requests_check_fill(&job->steps[0].u.fill, max_message);
        break;
    }
    default:
        break;
    }
    if (code == STATUS_OK)
        fuzz_requests_device(device, job);
    job_free(job);
}

/* Steps over data of len bytes, as a pipeline (max_data = max_result =
 * --max-message-bytes) or a stream header (max_data unbounded) validates
 * them. Returns the status of the first step refused. */
static enum status_code fuzz_requests_steps(Amp__V1__Step *const *steps, size_t n, uint64_t len,
                                            size_t max_data, size_t max_result, struct job *job)
{
    char err[STATUS_MSG_MAX];
    for (size_t i = 0; i < n; i++) {
        uint64_t before = len;
        enum status_code code =
            rpc_params_step(steps[i], i, max_data, max_result, &job->steps[i], &len, err, sizeof err);
        if (code != STATUS_OK)
            return code;
        fuzz_requests_check_step(&job->steps[i], before, len, max_data, max_result);
    }
    return STATUS_OK;
}

static void fuzz_requests_pipeline(const Amp__V1__PipelineRequest *r, size_t max_message)
{
    if (r->n_steps == 0 || r->n_steps > FUZZ_REQ_MAX_STEPS)
        return;   /* refused before any step is looked at */
    struct job *job = job_new(r->n_steps);
    if (!job)
        return;
    if (fuzz_requests_steps(r->steps, r->n_steps, r->data.len, max_message, max_message, job) ==
        STATUS_OK)
        fuzz_requests_device(r->device, job);
    job_free(job);
}

/* A stream's header is checked twice: when it arrives, against its
 * total_length (or any length), and when the input ends, against the
 * bytes that came. */
static void fuzz_requests_stream(const Amp__V1__StreamRequest *r, size_t max_message,
                                 uint64_t received)
{
    if (r->msg_case != AMP__V1__STREAM_REQUEST__MSG_HEADER)
        return;   /* data: only its bytes matter, and they are any bytes */
    const Amp__V1__JobHeader *h = r->header;
    if (h->n_steps == 0 || h->n_steps > FUZZ_REQ_MAX_STEPS)
        return;
    struct job *job = job_new(h->n_steps);
    if (!job)
        return;
    uint64_t len = h->total_length ? h->total_length : FUZZ_REQ_UNKNOWN_LEN;
    if (fuzz_requests_steps(h->steps, h->n_steps, len, SIZE_MAX, max_message, job) == STATUS_OK &&
        fuzz_requests_device(h->device, job) == STATUS_OK) {
        uint64_t end = h->total_length ? h->total_length : received;
        fuzz_requests_steps(h->steps, h->n_steps, end, SIZE_MAX, max_message, job);
    }
    job_free(job);
}

static const ProtobufCMessageDescriptor *fuzz_requests_type(enum fuzz_requests_method m)
{
    static const ProtobufCMessageDescriptor *const types[FUZZ_REQ_COUNT] = {
        [FUZZ_REQ_REVERSE] = &amp__v1__reverse_request__descriptor,
        [FUZZ_REQ_TRANSFORM] = &amp__v1__transform_request__descriptor,
        [FUZZ_REQ_HISTOGRAM] = &amp__v1__histogram_request__descriptor,
        [FUZZ_REQ_FILL] = &amp__v1__fill_request__descriptor,
        [FUZZ_REQ_PIPELINE] = &amp__v1__pipeline_request__descriptor,
        [FUZZ_REQ_STREAM] = &amp__v1__stream_request__descriptor,
        [FUZZ_REQ_LIST_DEVICES] = &amp__v1__list_devices_request__descriptor,
        [FUZZ_REQ_STATUS] = &amp__v1__status_request__descriptor,
        [FUZZ_REQ_HEALTH] = &grpc__health__v1__health_check_request__descriptor,
    };
    return types[m];
}

/* rpc_bulk on msg against want, protobuf-c's unpack of it (NULL: invalid). */
static void fuzz_requests_bulk(const ProtobufCMessageDescriptor *desc, const uint8_t *msg,
                               size_t len, const ProtobufCMessage *want)
{
    const ProtobufCFieldDescriptor *field = rpc_bulk_field(desc);
    if (!field)
        return;
    struct rpc_bulk b;
    ProtobufCMessage *got = NULL;
    if (rpc_bulk_scan(field, msg, len, &b) == 0)
        got = rpc_bulk_unpack(desc, field, msg, len, &b);
    if ((got == NULL) != (want == NULL)) {
        fprintf(stderr, "fuzz_requests: protobuf-c says %s, rpc_bulk %s\n",
                want ? "valid" : "invalid", got ? "valid" : "invalid");
        abort();
    }
    if (!got)
        return;
    const ProtobufCBinaryData *wd = (const void *)((const uint8_t *)want + field->offset);
    ProtobufCBinaryData *gd = (void *)((uint8_t *)got + field->offset);
    if (gd->len != 0 || b.len != wd->len || (b.len && memcmp(b.data, wd->data, b.len) != 0)) {
        fprintf(stderr, "fuzz_requests: rpc_bulk's data differs from protobuf-c's\n");
        abort();
    }
    gd->data = (uint8_t *)(uintptr_t)b.data;
    gd->len = b.len;
    size_t n = protobuf_c_message_get_packed_size(want);
    uint8_t *wp = malloc(n + 1), *gp = malloc(n + 1);
    if (wp && gp && protobuf_c_message_get_packed_size(got) == n) {
        protobuf_c_message_pack(want, wp);
        protobuf_c_message_pack(got, gp);
    }
    if (wp && gp && (protobuf_c_message_get_packed_size(got) != n || memcmp(wp, gp, n) != 0)) {
        fprintf(stderr, "fuzz_requests: rpc_bulk's other fields differ from protobuf-c's\n");
        abort();
    }
    free(wp);
    free(gp);
    gd->data = NULL;
    gd->len = 0;
    protobuf_c_message_free_unpacked(got, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    enum fuzz_requests_method m = (enum fuzz_requests_method)(data[0] % FUZZ_REQ_COUNT);
    size_t max_message = fuzz_requests_max_message[data[1] & 7];
    uint64_t received = (uint64_t)(data[1] >> 3) * FUZZ_REQ_END_LEN_UNIT;
    ProtobufCMessage *msg = protobuf_c_message_unpack(fuzz_requests_type(m), NULL, size - 2, data + 2);
    fuzz_requests_bulk(fuzz_requests_type(m), data + 2, size - 2, msg);
    if (!msg)
        return 0;
    switch (m) {
    case FUZZ_REQ_PIPELINE:
        fuzz_requests_pipeline((const void *)msg, max_message);
        break;
    case FUZZ_REQ_STREAM:
        fuzz_requests_stream((const void *)msg, max_message, received);
        break;
    case FUZZ_REQ_REVERSE:
    case FUZZ_REQ_TRANSFORM:
    case FUZZ_REQ_HISTOGRAM:
    case FUZZ_REQ_FILL:
        fuzz_requests_unary(m, msg, max_message);
        break;
    default:
        break;   /* ListDevices, Status and Health have nothing to validate but decoding */
    }
    protobuf_c_message_free_unpacked(msg, NULL);
    return 0;
}
