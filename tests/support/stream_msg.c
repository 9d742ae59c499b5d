/* SPDX-License-Identifier: MIT */
/* stream_msg.c: Stream call messages for raw HTTP/2 tests (stream_msg.h). */
#include "stream_msg.h"

#include <check.h>
#include <stdlib.h>

#include "amp.pb-c.h"
#include "grpc_frame.h"

uint8_t *stream_histogram_header(size_t *len)
{
    Amp__V1__HistogramParams hp = AMP__V1__HISTOGRAM_PARAMS__INIT;
    Amp__V1__Step step = AMP__V1__STEP__INIT;
    step.kind_case = AMP__V1__STEP__KIND_HISTOGRAM;
    step.histogram = &hp;
    Amp__V1__Step *steps[] = {&step};
    Amp__V1__JobHeader header = AMP__V1__JOB_HEADER__INIT;
    header.n_steps = 1;
    header.steps = steps;
    Amp__V1__StreamRequest req = AMP__V1__STREAM_REQUEST__INIT;
    req.msg_case = AMP__V1__STREAM_REQUEST__MSG_HEADER;
    req.header = &header;
    size_t n = protobuf_c_message_get_packed_size(&req.base);
    uint8_t *body = malloc(GRPC_FRAME_HEADER + n);
    ck_assert_ptr_nonnull(body);
    grpc_frame_header(body, n);
    protobuf_c_message_pack(&req.base, body + GRPC_FRAME_HEADER);
    *len = GRPC_FRAME_HEADER + n;
    return body;
}
