/* SPDX-License-Identifier: MIT */
/* data_frame.h: how much of a stream's data to put in one HTTP/2 DATA
 * frame, for the daemon's and the client's nghttp2 sessions alike.
 *
 * nghttp2 sends 16 KiB frames unless told otherwise; both ends allow
 * DATA_FRAME_MAX (SETTINGS_MAX_FRAME_SIZE) and ask for frames that large
 * through nghttp2's data_source_read_length callback, so a streamed GiB is
 * about a thousand frames (each a callback, a copy and a write), not sixty
 * thousand. 1 KiB over 1 MiB: a stream's data message (AMP_STREAM_CHUNK
 * bytes and a prefix of at most 16) fits one frame, instead of a 1 MiB
 * frame and a tiny one that the client's writer would carry alone.
 */
#ifndef AMP_DATA_FRAME_H
#define AMP_DATA_FRAME_H

#include <nghttp2/nghttp2.h>
#include <stdint.h>
#include <sys/types.h>

#define DATA_FRAME_MAX (1024 * 1024 + 1024)   /* HTTP/2 allows up to 16 MiB - 1 */

/* nghttp2's data_source_read_length callback, which both sessions set: the
 * payload length for the next DATA frame, DATA_FRAME_MAX lowered to the
 * connection's and the stream's flow-control windows and the peer's
 * SETTINGS_MAX_FRAME_SIZE; at least 1 (nghttp2 wants a positive length).
 * Reads nothing but those three. */
ssize_t data_frame_len(nghttp2_session *ng, uint8_t frame_type, int32_t stream_id,
                       int32_t session_window, int32_t stream_window, uint32_t remote_max_frame,
                       void *user_data);

#endif
