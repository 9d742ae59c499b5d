/* SPDX-License-Identifier: MIT */
/* pipeline.c: amp_pipeline, the unary Pipeline call: several steps over
 * one input as one job, every step's result in one reply.
 *
 * steps.c encodes the steps; this file sends them with the input and
 * hands the per-step results over as caller-owned memory. The whole input
 * and every result travel in single messages, so this suits inputs within
 * the daemon's message limit; amp_stream (stream.c) is for the rest.
 */
#include <stdlib.h>
#include <string.h>

#include "amp.pb-c.h"
#include "async.h"
#include "call.h"
#include "conn.h"
#include "jobs.h"
#include "steps.h"

#define PIPELINE_PATH "/amp.v1.Amp/Pipeline"

void amp_step_results_free(amp_step_result *r, size_t n)
{
    if (!r)
        return;
    for (size_t i = 0; i < n; i++) {
        free(r[i].data);
        amp_hist_free(&r[i].hist);
    }
    free(r);
}

/* Step i's result: a histogram for histogram steps; for the others the
 * bytes, taken from the decoded reply (protobuf-c's unpack malloc'd them:
 * copying them once more would write every result into fresh memory
 * again), or with in_region where they went in the output region (which
 * a region job's reply must say). */
static int pipeline_take_one(amp_conn *c, size_t i, amp_step_kind kind, int in_region,
                             Amp__V1__StepResult *src, amp_step_result *dst)
{
    if (!src)
        return conn_fail(c, AMP_EPROTO, "pipeline reply: result %zu is empty", i);
    if (kind == AMP_STEP_HISTOGRAM)
        return jobs_copy_hist(c, src->histogram, &dst->hist);
    if (in_region) {
        if (!src->output_region)
            return conn_fail(c, AMP_EPROTO, "pipeline reply: step %zu's output is not in the "
                             "region", i);
        dst->len = (size_t)src->output_region->length;
        dst->region_offset = src->output_region->offset;
        return 0;
    }
    dst->data = src->data.len ? src->data.data : malloc(1);   /* never NULL */
    if (!dst->data)
        return conn_fail(c, AMP_ENOMEM, "out of memory for step %zu's result", i);
    dst->len = src->data.len;
    src->data.data = NULL;   /* the reply's free leaves them to the caller */
    src->data.len = 0;
    return 0;
}

static int pipeline_take(amp_conn *c, const amp_step_kind *kinds, size_t nsteps, int in_region,
                         Amp__V1__PipelineReply *r, amp_step_result **results)
{
    if (r->n_results != nsteps)
        return conn_fail(c, AMP_EPROTO, "pipeline reply has %zu results for %zu steps",
                         r->n_results, nsteps);
    amp_step_result *res = calloc(nsteps, sizeof *res);
    if (!res)
        return conn_fail(c, AMP_ENOMEM, "out of memory for %zu step results", nsteps);
    for (size_t i = 0; i < nsteps; i++) {
        int rc = pipeline_take_one(c, i, kinds[i], in_region, r->results[i], &res[i]);
        if (rc != 0) {
            amp_step_results_free(res, nsteps);
            return rc;
        }
    }
    jobs_set_device(c, r->device);
    *results = res;
    return 0;
}

int pipeline_reply(amp_conn *c, const amp_step_kind *kinds, size_t nsteps, int in_region,
                   const uint8_t *msg, size_t len, amp_step_result **results)
{
    Amp__V1__PipelineReply *r = amp__v1__pipeline_reply__unpack(NULL, len, msg);
    if (!r)
        return conn_fail(c, AMP_EPROTO, "cannot decode the %s reply",
                         amp__v1__pipeline_reply__descriptor.name);
    int rc = pipeline_take(c, kinds, nsteps, in_region, r, results);
    amp__v1__pipeline_reply__free_unpacked(r, NULL);
    return rc;
}

/* Runs req: blocking (call NULL), or started on *call. */
static int pipeline_run(amp_conn *c, const amp_opts *o, const amp_step *steps, size_t nsteps,
                        Amp__V1__PipelineRequest *req, amp_step_result **results, amp_call **call)
{
    struct steps_pb pb;
    amp_step_kind *kinds = NULL;
    amp_call *a = NULL;
    int in_region = req->output_region != NULL;
    int rc = steps_encode(c, steps, nsteps, &pb);
    if (rc == 0 && call)
        rc = async_new(c, ASYNC_STEPS, &a);
    if (rc == 0 && call && (rc = async_set_steps(c, a, steps, nsteps, in_region)) != 0)
        async_drop(a);
    if (rc == 0 && !call && !(kinds = malloc(nsteps * sizeof *kinds)))
        rc = conn_fail(c, AMP_ENOMEM, "out of memory for %zu steps", nsteps);
    if (rc == 0) {
        req->n_steps = pb.n;
        req->steps = pb.steps;
        req->device = jobs_device(o);
    }
    if (rc == 0 && call) {
        rc = async_submit(c, a, PIPELINE_PATH, &req->base, jobs_timeout(o), call);
    } else if (rc == 0) {
        for (size_t i = 0; i < nsteps; i++)
            kinds[i] = steps_kind(steps, i);
        uint8_t *msg;
        size_t len;
        rc = call_unary_raw(c, PIPELINE_PATH, &req->base, jobs_timeout(o), &msg, &len);
        if (rc == 0) {
            rc = pipeline_reply(c, kinds, nsteps, in_region, msg, len, results);
            free(msg);
        }
    }
    free(kinds);
    steps_free(&pb);
    return rc;
}

int pipeline_call(amp_conn *c, const amp_opts *o, const amp_step *steps, size_t nsteps,
                  Amp__V1__PipelineRequest *req, amp_step_result **results)
{
    return pipeline_run(c, o, steps, nsteps, req, results, NULL);
}

int pipeline_start(amp_conn *c, const amp_opts *o, const amp_step *steps, size_t nsteps,
                   Amp__V1__PipelineRequest *req, amp_call **call)
{
    return pipeline_run(c, o, steps, nsteps, req, NULL, call);
}

/* amp_pipeline's checks, and its request over in. */
static int pipeline_begin(amp_conn *c, const amp_opts *o, const void *in, size_t len,
                          Amp__V1__PipelineRequest *req)
{
    if (!in && len > 0)
        return conn_fail(c, AMP_EINVAL, "in is NULL but len is %zu", len);
    int rc = jobs_check_opts(c, o);
    if (rc != 0)
        return rc;
    amp__v1__pipeline_request__init(req);
    req->data = jobs_bytes(in, len);
    return 0;
}

int amp_pipeline(amp_conn *c, const amp_opts *o, const amp_step *steps, size_t nsteps,
                 const void *in, size_t len, amp_step_result **results)
{
    if (!c)
        return AMP_EINVAL;
    conn_begin(c);
    if (!results)
        return conn_fail(c, AMP_EINVAL, "results must not be NULL");
    *results = NULL;
    Amp__V1__PipelineRequest req;
    int rc = pipeline_begin(c, o, in, len, &req);
    return rc != 0 ? rc : pipeline_call(c, o, steps, nsteps, &req, results);
}

int amp_start_pipeline(amp_conn *c, const amp_opts *o, const amp_step *steps, size_t nsteps,
                       const void *in, size_t len, amp_call **call)
{
    if (!c || !call)
        return AMP_EINVAL;
    conn_begin(c);
    *call = NULL;
    Amp__V1__PipelineRequest req;
    int rc = pipeline_begin(c, o, in, len, &req);
    return rc != 0 ? rc : pipeline_start(c, o, steps, nsteps, &req, call);
}
