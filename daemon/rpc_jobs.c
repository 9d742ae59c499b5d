/* SPDX-License-Identifier: MIT */
/* rpc_jobs.c: Reverse, Transform, Histogram, Fill and Pipeline.
 *
 * Each handler turns its request into a struct job (rpc_params.c validates
 * the steps), takes the request's data bytes where they lie in the request
 * message (rpc_take_bulk; or points the job into the client's regions,
 * region.h), and submits the job; its done hook answers when the runner is
 * finished, with data replies sent from the job's results where they lie
 * (rpc_reply_ref). All five are the same thing underneath: a list of steps.
 */
#include "rpc.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "amp.pb-c.h"
#include "region.h"
#include "rpc_params.h"
#include "rpc_reply_bound.h"
#include "sat.h"
#include "amp_wire.h"


/* Makes a job of nsteps that takes the request's bulk bytes as its input
 * (rpc_take_bulk: they stay in the request's buffer). */
static struct job *rpc_job_new(struct rpc_call *rc, size_t nsteps)
{
    struct job *job = job_new(nsteps);
    if (!job) {
        rpc_fail(rc, STATUS_RESOURCE_EXHAUSTED, "out of memory for a job");
        return NULL;
    }
    rpc_take_bulk(rc, job);
    return job;
}

/* Points the job at the regions the request names: its input instead of
 * data (which must then be empty), its outputs into out. */
static enum status_code rpc_job_regions(struct rpc_call *rc, struct job *job,
                                        const Amp__V1__RegionSlice *in,
                                        const Amp__V1__RegionSlice *out, char *err, size_t errlen)
{
    enum status_code code = STATUS_OK;
    if (in) {
        if (job->in_len) {
            snprintf(err, errlen, "input_region: the input is either in data or in a region, "
                                  "not both (data has %zu bytes)", job->in_len);
            return STATUS_INVALID_ARGUMENT;
        }
        job_drop_input(job);   /* the request's buffer: its bulk bytes were empty */
        code = region_use(rc->env->regions, rc->peer_uid, in->region, in->offset, in->length,
                          "input_region", &job->in_region, &job->in, err, errlen);
        if (code != STATUS_OK)
            return code;
        job->in_len = (size_t)in->length;
    }
    if (out) {
        code = region_use(rc->env->regions, rc->peer_uid, out->region, out->offset, out->length,
                          "output_region", &job->out_region, &job->out, err, errlen);
        job->out_cap = (size_t)out->length;
        rc->output_region = out;
    }
    return code;
}

/* Bytes the job's data steps write, one after another (saturating). */
static uint64_t rpc_job_output_bytes(const struct job *job)
{
    uint64_t len = job->in_len, total = 0;
    for (size_t i = 0; i < job->nsteps; i++) {
        len = job_step_output_len(&job->steps[i], len);
        if (job->steps[i].kind != STEP_HISTOGRAM)
            total = sat_add_u64(total, len);
    }
    return total;
}

/* A reply the job could make that --max-message-bytes would not let out,
 * or that the client would not take (amp-max-reply-bytes, gRPC's default
 * 4 MiB when it says nothing: amp_wire.h), is refused now, before the
 * device works for nothing (rpc_reply_bound.h): RESOURCE_EXHAUSTED, saying
 * where such output can go instead. */
static enum status_code rpc_job_reply_fits(struct rpc_call *rc, const struct job *job,
                                           enum rpc_reply_kind kind, char *err)
{
    uint64_t bound = rpc_reply_bound(job, kind);
    size_t max = rc->env->max_message_bytes;
    uint64_t client = h2_call_class(rc->h2)->max_reply;
    bool said = client != 0;
    client = said ? client : AMP_WIRE_DEFAULT_MAX_REPLY;
    if (bound <= max && bound <= client)
        return STATUS_OK;
    bool data = false;
    for (size_t i = 0; i < job->nsteps; i++)
        data |= job->steps[i].kind != STEP_HISTOGRAM;
    const char *instead = data ? "use a Stream call or an output_region"
                               : "ask for fewer histogram bins";
    if (bound > max)
        snprintf(err, STATUS_MSG_MAX,
                 "the reply could take %" PRIu64 " bytes, over --max-message-bytes (%zu): %s",
                 bound, max, data ? "send the job as a Stream call, or name an output_region for "
                                    "its data" : instead);
    else if (said)
        snprintf(err, STATUS_MSG_MAX,
                 "reply up to %" PRIu64 " bytes, over the %" PRIu64 " of %s: %s, or raise "
                 "the limit", bound, client, AMP_WIRE_MAX_REPLY_HEADER, instead);
    else
        snprintf(err, STATUS_MSG_MAX,
                 "reply up to %" PRIu64 " bytes, over gRPC's default receive limit (%" PRIu64
                 "): %s, or raise your client's limit and send it as %s", bound, client, instead,
                 AMP_WIRE_MAX_REPLY_HEADER);
    return STATUS_RESOURCE_EXHAUSTED;
}

/* Ends every job method the same way: code is the parameters' verdict (err
 * its message, STATUS_MSG_MAX bytes); if they passed, the output region,
 * the reply's size and the device selection are checked too. A job that
 * passed all is submitted with done as its completion; otherwise the call
 * fails and the job is freed. */
static void rpc_job_start(struct rpc_call *rc, struct job *job, enum status_code code,
                          const char *device, char *err, enum rpc_reply_kind reply,
                          void (*done)(struct job *job))
{
    uint64_t writes = code == STATUS_OK && job->out_region ? rpc_job_output_bytes(job) : 0;
    if (writes > job->out_cap) {
        snprintf(err, STATUS_MSG_MAX,
                 "output_region: the job writes %" PRIu64 " bytes, the slice holds %zu", writes,
                 job->out_cap);
        code = STATUS_OUT_OF_RANGE;
    }
    if (code == STATUS_OK)
        code = rpc_job_reply_fits(rc, job, reply, err);
    if (code == STATUS_OK)
        code = rpc_params_device(device, job, err, STATUS_MSG_MAX);
    if (code != STATUS_OK) {
        job_free(job);
        rpc_fail(rc, code, "%s", err);
        return;
    }
    job_output_in_place(job);
    rpc_submit(rc, job, done);
}

/* What a data step's output in the output region is called in the reply. */
static Amp__V1__RegionSlice rpc_output_slice(const struct rpc_call *rc, const struct job *job,
                                             const struct step_result *r)
{
    Amp__V1__RegionSlice slice = AMP__V1__REGION_SLICE__INIT;
    slice.region = rc->output_region->region;
    slice.offset = rc->output_region->offset + (uint64_t)(r->data - job->out);
    slice.length = r->len;
    return slice;
}

/* --- replies -------------------------------------------------------------- */

static void rpc_hist_to_proto(const struct hist_result *h, Amp__V1__Histogram *out)
{
    amp__v1__histogram__init(out);
    out->n_counts = h->bins;
    out->counts = h->counts;
    out->below = h->below;
    out->above = h->above;
    out->nan = h->nan;
}

/* A reply's release: the job whose results it borrowed. */
static void rpc_job_release(void *job)
{
    job_free(job);
}

static void rpc_data_done(struct job *job)
{
    struct rpc_call *rc = rpc_job_call(job);
    if (!rc)
        return;
    Amp__V1__DataReply reply = AMP__V1__DATA_REPLY__INIT;
    Amp__V1__RegionSlice slice;
    if (job->out_region) {
        slice = rpc_output_slice(rc, job, &job->results[0]);
        reply.output_region = &slice;
    } else {
        reply.data.data = job->results[0].data;
        reply.data.len = job->results[0].len;
    }
    reply.device = job->device;
    rpc_reply_ref(rc, &reply.base, rpc_job_release, job);
}

static void rpc_hist_done(struct job *job)
{
    struct rpc_call *rc = rpc_job_call(job);
    if (!rc)
        return;
    Amp__V1__Histogram hist;
    rpc_hist_to_proto(&job->results[0].hist, &hist);
    Amp__V1__HistogramReply reply = AMP__V1__HISTOGRAM_REPLY__INIT;
    reply.histogram = &hist;
    reply.device = job->device;
    rpc_reply(rc, &reply.base);
    job_free(job);
}

static void rpc_pipeline_done(struct job *job)
{
    struct rpc_call *rc = rpc_job_call(job);
    if (!rc)
        return;
    size_t n = job->nsteps;
    Amp__V1__StepResult *res = calloc(n, sizeof(*res));
    Amp__V1__StepResult **ptrs = calloc(n, sizeof(*ptrs));
    Amp__V1__Histogram *hists = calloc(n, sizeof(*hists));
    Amp__V1__RegionSlice *slices = calloc(n, sizeof(*slices));
    if (!res || !ptrs || !hists || !slices) {
        rpc_fail(rc, STATUS_RESOURCE_EXHAUSTED, "out of memory encoding the pipeline reply");
    } else {
        for (size_t i = 0; i < n; i++) {
            amp__v1__step_result__init(&res[i]);
            if (job->steps[i].kind == STEP_HISTOGRAM) {
                rpc_hist_to_proto(&job->results[i].hist, &hists[i]);
                res[i].histogram = &hists[i];
            } else if (job->out_region) {
                slices[i] = rpc_output_slice(rc, job, &job->results[i]);
                res[i].output_region = &slices[i];
            } else {
                res[i].data.data = job->results[i].data;
                res[i].data.len = job->results[i].len;
            }
            ptrs[i] = &res[i];
        }
        Amp__V1__PipelineReply reply = AMP__V1__PIPELINE_REPLY__INIT;
        reply.n_results = n;
        reply.results = ptrs;
        reply.device = job->device;
        rpc_reply_ref(rc, &reply.base, rpc_job_release, job);
        job = NULL;   /* the reply frees it once its results are written */
    }
    free(slices);
    free(hists);
    free(ptrs);
    free(res);
    job_free(job);
}

/* --- the methods ----------------------------------------------------------- */

/* A method's own checks: its request's parameters into the job's steps (the
 * job holds its input by now: data or region). */
typedef enum status_code (*rpc_job_params_fn)(struct rpc_call *rc, const ProtobufCMessage *req,
                                              struct job *job, char *err, size_t errlen);

/* What tells the job methods apart: their parameters, the message that
 * answers them, and the done hook that writes it. */
struct rpc_job_method {
    rpc_job_params_fn params;
    enum rpc_reply_kind reply;
    void (*done)(struct job *job);
};

/* Every job method's path: a job of nsteps with the request's data or its
 * regions (in, out; NULL where the method has none) as its input and
 * output, its steps checked by m's params, then started (rpc_job_start). */
static void rpc_job_run(struct rpc_call *rc, const ProtobufCMessage *req, size_t nsteps,
                        const Amp__V1__RegionSlice *in, const Amp__V1__RegionSlice *out,
                        const char *device, const struct rpc_job_method *m)
{
    struct job *job = rpc_job_new(rc, nsteps);
    if (!job)
        return;
    char err[STATUS_MSG_MAX];
    enum status_code code = rpc_job_regions(rc, job, in, out, err, sizeof(err));
    if (code == STATUS_OK)
        code = m->params(rc, req, job, err, sizeof(err));
    rpc_job_start(rc, job, code, device, err, m->reply, m->done);
}

static enum status_code rpc_reverse_params(struct rpc_call *rc, const ProtobufCMessage *req,
                                           struct job *job, char *err, size_t errlen)
{
    (void)rc, (void)req, (void)err, (void)errlen;
    job->steps[0].kind = STEP_REVERSE;
    return STATUS_OK;
}

void rpc_reverse(struct rpc_call *rc, ProtobufCMessage *req)
{
    static const struct rpc_job_method m = { rpc_reverse_params, RPC_REPLY_DATA, rpc_data_done };
    Amp__V1__ReverseRequest *r = (Amp__V1__ReverseRequest *)req;
    rpc_job_run(rc, req, 1, r->input_region, r->output_region, r->device, &m);
}

static enum status_code rpc_transform_params(struct rpc_call *rc, const ProtobufCMessage *req,
                                             struct job *job, char *err, size_t errlen)
{
    (void)rc;
    const Amp__V1__TransformRequest *r = (const Amp__V1__TransformRequest *)req;
    return rpc_params_transform(r->params, "params", job->in_len, &job->steps[0], err, errlen);
}

void rpc_transform(struct rpc_call *rc, ProtobufCMessage *req)
{
    static const struct rpc_job_method m = { rpc_transform_params, RPC_REPLY_DATA,
                                             rpc_data_done };
    Amp__V1__TransformRequest *r = (Amp__V1__TransformRequest *)req;
    rpc_job_run(rc, req, 1, r->input_region, r->output_region, r->device, &m);
}

static enum status_code rpc_histogram_params(struct rpc_call *rc, const ProtobufCMessage *req,
                                             struct job *job, char *err, size_t errlen)
{
    const Amp__V1__HistogramRequest *r = (const Amp__V1__HistogramRequest *)req;
    return rpc_params_histogram(r->params, "params", job->in_len, rc->env->max_message_bytes,
                                &job->steps[0], err, errlen);
}

void rpc_histogram(struct rpc_call *rc, ProtobufCMessage *req)
{
    static const struct rpc_job_method m = { rpc_histogram_params, RPC_REPLY_HISTOGRAM,
                                             rpc_hist_done };
    Amp__V1__HistogramRequest *r = (Amp__V1__HistogramRequest *)req;
    rpc_job_run(rc, req, 1, r->input_region, NULL, r->device, &m);
}

/* Into a region, the output is bounded by the slice (rpc_job_start), not by
 * a reply message. */
static enum status_code rpc_fill_params(struct rpc_call *rc, const ProtobufCMessage *req,
                                        struct job *job, char *err, size_t errlen)
{
    const Amp__V1__FillRequest *r = (const Amp__V1__FillRequest *)req;
    return rpc_params_fill(r->params, "params",
                           job->out_region ? SIZE_MAX : rc->env->max_message_bytes,
                           &job->steps[0], err, errlen);
}

void rpc_fill(struct rpc_call *rc, ProtobufCMessage *req)
{
    static const struct rpc_job_method m = { rpc_fill_params, RPC_REPLY_DATA, rpc_data_done };
    Amp__V1__FillRequest *r = (Amp__V1__FillRequest *)req;
    rpc_job_run(rc, req, 1, NULL, r->output_region, r->device, &m);
}

/* --- pipelines ------------------------------------------------------------ */

/* Validates every step; data into an output region counts against the
 * slice (rpc_job_start), not against a reply message, and the reply's
 * size is checked as every method's is. */
static enum status_code rpc_pipeline_params(struct rpc_call *rc, const ProtobufCMessage *req,
                                            struct job *job, char *err, size_t errlen)
{
    const Amp__V1__PipelineRequest *r = (const Amp__V1__PipelineRequest *)req;
    size_t max_message = rc->env->max_message_bytes;
    uint64_t len = job->in_len;
    size_t max_data = job->out_region ? SIZE_MAX : max_message;
    for (size_t i = 0; i < r->n_steps; i++) {
        enum status_code code =
            rpc_params_step(r->steps[i], i, max_data, max_message, &job->steps[i], &len, err,
                            errlen);
        if (code != STATUS_OK)
            return code;
    }
    return STATUS_OK;
}

void rpc_pipeline(struct rpc_call *rc, ProtobufCMessage *req)
{
    Amp__V1__PipelineRequest *r = (Amp__V1__PipelineRequest *)req;
    if (r->n_steps == 0) {
        rpc_fail(rc, STATUS_INVALID_ARGUMENT, "steps: a pipeline needs at least one step");
        return;
    }
    if (r->n_steps > AMP_WIRE_MAX_STEPS) {
        rpc_fail(rc, STATUS_INVALID_ARGUMENT, "steps: at most %d steps, got %zu",
                 AMP_WIRE_MAX_STEPS, r->n_steps);
        return;
    }
    static const struct rpc_job_method m = { rpc_pipeline_params, RPC_REPLY_PIPELINE,
                                             rpc_pipeline_done };
    rpc_job_run(rc, req, r->n_steps, r->input_region, r->output_region, r->device, &m);
}
