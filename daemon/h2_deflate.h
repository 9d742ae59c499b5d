/* SPDX-License-Identifier: MIT */
/* h2_deflate.h: gRPC message compression on the reply side.
 *
 * The rule: a call whose grpc-accept-encoding lists gzip (else deflate)
 * gets that grpc-encoding in its response headers, and then each reply
 * message the daemon owns whole (h2_call_reply, h2_call_send: status,
 * device lists, histograms, health, reflection) of at least
 * H2_DEFLATE_MIN_BYTES is compressed when that makes it smaller. Replies
 * that borrow a job's results or a staging buffer where they lie (the
 * zero-copy paths: h2_call_reply_body, h2_call_send_ref) never are: copying
 * them through zlib would cost more than the link saves at device rates.
 */
#ifndef AMP_H2_DEFLATE_H
#define AMP_H2_DEFLATE_H

#include <stddef.h>
#include <stdint.h>

#include "h2_inflate.h"

/* Smaller messages are not worth a compressor's time or its header. */
#define H2_DEFLATE_MIN_BYTES 1024

/* The encoding replies use for a client's grpc-accept-encoding value (a
 * comma-separated list): gzip if listed, else deflate, else identity. */
enum h2_encoding h2_deflate_choose(const uint8_t *value, size_t len);

/* The name of enc for grpc-encoding (gzip or deflate). */
const char *h2_deflate_name(enum h2_encoding enc);

/* Compresses in[0, len) into out (cap bytes). 0 with *out_len set, or -1
 * when it does not fit in cap (not worth it) or zlib fails. */
int h2_deflate(enum h2_encoding enc, const uint8_t *in, size_t len, uint8_t *out, size_t cap,
               size_t *out_len);

#endif
