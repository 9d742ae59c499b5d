/* SPDX-License-Identifier: MIT */
/* async.h: calls started without waiting (async.c), for the files that
 * start them (jobs.c, pipeline.c, region.c, stream.c) and for the event
 * loop interface (loop.c: amp_fd, amp_process). */
#ifndef AMP_CLIENT_ASYNC_H
#define AMP_CLIENT_ASYNC_H

#include <protobuf-c/protobuf-c.h>

#include "amp.h"

struct call;
struct stream;

/* What a started call's reply is decoded into. */
enum async_reply {
    ASYNC_DATA,     /* a DataReply's bytes: amp_call_data */
    ASYNC_HIST,     /* a HistogramReply: amp_call_hist */
    ASYNC_STEPS,    /* a PipelineReply: amp_call_results */
    ASYNC_STREAM,   /* a Stream call: its output went to the caller as it came */
};

/* A call of kind reply that c may start now (it reopens the connection
 * only with no call in flight). Returns 0 with *out, or an AMP_E* code
 * with c's message set (nothing made). */
int async_new(amp_conn *c, enum async_reply reply, amp_call **out);

/* The HTTP/2 call inside a (stream.c sets its body and handlers). */
struct call *async_call(amp_call *a);

/* An ASYNC_STEPS call's steps (their kinds, copied) and whether the job
 * writes into a region, for decoding its reply. Returns 0, AMP_ENOMEM. */
int async_set_steps(amp_conn *c, amp_call *a, const amp_step *steps, size_t n, int in_region);

/* An ASYNC_STREAM call's state, owned by the call from now on (freed by
 * stream_end when the call finishes, stream_free if it never starts). */
void async_set_stream(amp_call *a, struct stream *st);

/* Frees a call that async_new made and that never started. */
void async_drop(amp_call *a);

/* Starts a: encodes msg (its large bytes fields borrowed) as the request,
 * unless msg is NULL (the body is set already), and opens its stream.
 * Returns 0 with *out = a, or an AMP_E* code after freeing a. */
int async_submit(amp_conn *c, amp_call *a, const char *path, const ProtobufCMessage *msg,
                 int timeout_ms, amp_call **out);

/* Gives each started stream on c its next input while the daemon takes
 * it; a stream whose input failed finishes with the code. */
void async_feed(amp_conn *c);

/* Moves every call whose stream ended to its queue: amp_wait's, or the
 * callbacks' (amp_call_on_done). */
void async_collect(amp_conn *c);

/* The connection failed with rc: every call in flight ends with it. */
void async_fail_all(amp_conn *c, int rc);

/* Runs the callbacks that are due, oldest first (amp_process, amp_close). */
void async_fire(amp_conn *c);

#endif
