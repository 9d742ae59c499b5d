/* SPDX-License-Identifier: MIT */
/* rpc_params.h: job parameters from protobuf to struct step, validated.
 *
 * f is the field path the client knows the params by ("params",
 * "steps[1].transform"); messages name fields under it. len is the length of
 * the data the step will see. Each returns STATUS_OK or
 * STATUS_INVALID_ARGUMENT with a message in err. A NULL params message means
 * all defaults (proto3).
 */
#ifndef AMPD_RPC_PARAMS_H
#define AMPD_RPC_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "amp.pb-c.h"
#include "job.h"
#include "status.h"

enum status_code rpc_params_transform(const Amp__V1__TransformParams *p, const char *f,
                                      uint64_t len, struct step *st, char *err, size_t errlen);

/* max_message bounds the number of bins (each is 8 bytes of reply). */
enum status_code rpc_params_histogram(const Amp__V1__HistogramParams *p, const char *f,
                                      uint64_t len, size_t max_message, struct step *st,
                                      char *err, size_t errlen);

/* max_message bounds count * element size (the reply); SIZE_MAX where the
 * output is bounded elsewhere (a stream, an output region). */
enum status_code rpc_params_fill(const Amp__V1__FillParams *p, const char *f, size_t max_message,
                                 struct step *st, char *err, size_t errlen);

/* One step of steps[i] (field "steps[i]"); *len is the data length it
 * sees, updated to what the next step sees. max_data bounds a fill's
 * output (one message in a unary reply, unbounded when streamed);
 * max_result a histogram's, which is always one message. */
enum status_code rpc_params_step(const Amp__V1__Step *ps, size_t i, size_t max_data,
                                 size_t max_result, struct step *st, uint64_t *len, char *err,
                                 size_t errlen);

/* Copies the placement request into job->device_req; too long a string
 * cannot name a device and is refused here. */
enum status_code rpc_params_device(const char *device, struct job *job, char *err, size_t errlen);

#endif
