/* SPDX-License-Identifier: MIT */
/* steps.h: amp_step arrays to amp.v1 Step messages (steps.c), shared by
 * the unary Pipeline call (pipeline.c) and the Stream call (stream.c). */
#ifndef AMP_CLIENT_STEPS_H
#define AMP_CLIENT_STEPS_H

#include "amp.h"
#include "amp.pb-c.h"

/* The encoded steps. The messages borrow the caller's pointers (map
 * tables), so the amp_step array must outlive them. */
struct steps_pb {
    Amp__V1__Step **steps;      /* n pointers into slots, malloc'd */
    struct steps_slot *slots;   /* n entries, malloc'd */
    size_t n;
};

/* Checks steps (not NULL, n >= 1, every kind and enum, messages naming
 * "steps[i]...") and encodes them into *pb. Returns 0 or AMP_EINVAL /
 * AMP_ENOMEM with the connection's message set; *pb needs steps_free()
 * either way. */
int steps_encode(amp_conn *c, const amp_step *steps, size_t n, struct steps_pb *pb);

void steps_free(struct steps_pb *pb);

/* Runs steps as one Pipeline call over req (its input, data or
 * input_region, already set) and decodes the reply into *results: bytes
 * copied, or with an output_region in req, where each data step's output
 * went (pipeline.c, for amp_pipeline and amp_run_region). Returns 0 or an
 * AMP_E* code with the message set. */
int pipeline_call(amp_conn *c, const amp_opts *o, const amp_step *steps, size_t nsteps,
                  Amp__V1__PipelineRequest *req, amp_step_result **results);

/* pipeline_call() started without waiting (amp_start_pipeline,
 * amp_start_region): 0 with *call, or an AMP_E* code. */
int pipeline_start(amp_conn *c, const amp_opts *o, const amp_step *steps, size_t nsteps,
                   Amp__V1__PipelineRequest *req, amp_call **call);

/* Decodes a PipelineReply of len bytes at msg (the caller's) into
 * *results, by the kinds of its nsteps steps; in_region: the data went
 * into the output region. Returns 0 or AMP_EPROTO / AMP_ENOMEM. */
int pipeline_reply(amp_conn *c, const amp_step_kind *kinds, size_t nsteps, int in_region,
                   const uint8_t *msg, size_t len, amp_step_result **results);

/* The kind of step i of an array (steps[0].size apart). */
amp_step_kind steps_kind(const amp_step *steps, size_t i);

/* Number of histogram steps among n. */
size_t steps_count_hist(const amp_step *steps, size_t n);

#endif
