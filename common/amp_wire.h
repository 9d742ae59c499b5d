/* SPDX-License-Identifier: MIT */
/* amp_wire.h: facts of the amp.v1 protocol (proto/amp.proto) that the
 * daemon and the client library both use without protobuf-c: the tags of
 * the bulk bytes fields each end writes around its data or scans for
 * without copying it, and the most steps one job may have.
 * test_amp_wire checks the tags against the generated descriptors. */
#ifndef AMP_AMP_WIRE_H
#define AMP_AMP_WIRE_H

#include "pb_wire.h"

/* StreamRequest.data (field 2), StreamReply.data (1) and .device (3),
 * DataReply.data (1) and .device (2): length-delimited. */
#define AMP_WIRE_STREAM_REQUEST_DATA PB_TAG(2, PB_WIRE_LEN)
#define AMP_WIRE_STREAM_REPLY_DATA PB_TAG(1, PB_WIRE_LEN)
#define AMP_WIRE_STREAM_REPLY_DEVICE PB_TAG(3, PB_WIRE_LEN)
#define AMP_WIRE_DATA_REPLY_DATA PB_TAG(1, PB_WIRE_LEN)
#define AMP_WIRE_DATA_REPLY_DEVICE PB_TAG(2, PB_WIRE_LEN)

/* The metadata a client sends to say how large a reply message it takes
 * (decimal bytes). A unary reply larger than that, or than
 * AMP_WIRE_DEFAULT_MAX_REPLY from a client that says nothing (gRPC's
 * default receive limit in grpc-js, grpc-go, grpc++, grpcio and Ruby), is
 * refused before any device work with a status that says what to do:
 * otherwise the client would throw away a reply the daemon worked for. */
#define AMP_WIRE_MAX_REPLY_HEADER "amp-max-reply-bytes"
#define AMP_WIRE_DEFAULT_MAX_REPLY ((uint64_t)4 << 20)

/* The metadata a client sends ("1") to have a unary job call's reply end
 * with a server-timing trailer: where the call's time in the daemon went
 * (ampd(8) SCHEDULING). Asked for, not sent to all: it costs every tiny
 * call a few hundred bytes of HPACK work each way. */
#define AMP_WIRE_SERVER_TIMING_HEADER "amp-server-timing"
/* The trailer it asks for (W3C Server-Timing syntax), and its longest text,
 * NUL included: the daemon sends no longer one, the client keeps none. */
#define AMP_WIRE_SERVER_TIMING_TRAILER "server-timing"
#define AMP_WIRE_SERVER_TIMING_MAX 160

/* Status.stages' entry for the daemon's I/O loops' turns, which is not a
 * stage of a call (libampclient's amp_daemon_status.loop_turns). */
#define AMP_WIRE_LOOP_TURN_STAGE "loop_turn"

/* Steps of one Pipeline or Stream job, at most: each holds a result until
 * the reply. */
#define AMP_WIRE_MAX_STEPS 64

#endif
