/* call.h: one unary gRPC call over an amp_conn (call.c).
 *
 * The call opens a new HTTP/2 stream, sends the protobuf request as one
 * length-prefixed message, and collects the reply message and the
 * grpc-status / grpc-message trailers.
 */
#ifndef AMP_CLIENT_CALL_H
#define AMP_CLIENT_CALL_H

#include <nghttp2/nghttp2.h>
#include <protobuf-c/protobuf-c.h>

#include "conn.h"

/* Largest reply message the client accepts: what gRPC's 32-bit length
 * prefix can describe, so any limit the daemon is configured with fits. */
#define CALL_MAX_REPLY ((size_t)UINT32_MAX)

/* Calls method path ("/amp.v1.Amp/Reverse") with req. timeout_ms > 0 sets
 * a deadline (sent as grpc-timeout and enforced locally). On success
 * *reply is the unpacked reply (free with protobuf_c_message_free_unpacked).
 * Returns 0 or an AMP_E* code with c->message set; a gRPC status from the
 * daemon maps to its AMP_E* code and keeps the daemon's message. */
int call_unary(amp_conn *c, const char *path, const ProtobufCMessage *req, int timeout_ms,
               const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **reply);

/* Installs the session callbacks call.c needs (headers, data, close). */
void call_session_callbacks(nghttp2_session_callbacks *cbs);

#endif
