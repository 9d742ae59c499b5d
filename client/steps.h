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

/* Number of histogram steps among n. */
size_t steps_count_hist(const amp_step *steps, size_t n);

#endif
