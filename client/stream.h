/* SPDX-License-Identifier: MIT */
/* stream.h: what a Stream call started without waiting (amp_start_stream,
 * stream.c) needs from async.c's driving: its next input, and its end. */
#ifndef AMP_CLIENT_STREAM_H
#define AMP_CLIENT_STREAM_H

struct stream;

/* Queues the stream's next input message when the last one has gone and
 * the daemon's window is open; else nothing. Returns 0, or the AMP_E*
 * code its input failed with (message set). */
int stream_feed(struct stream *st);

/* The call ended with rc (0: its reply ended well): returns the stream's
 * outcome (its histogram results counted) and frees st. */
int stream_end(struct stream *st, int rc);

/* Frees a stream whose call never started (its histograms zeroed). NULL
 * is a no-op. */
void stream_free(struct stream *st);

#endif
