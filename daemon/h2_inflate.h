/* SPDX-License-Identifier: MIT */
/* h2_inflate.h: gRPC message compression on the request side (gRPC's
 * compression spec): the grpc-encoding names ampd takes, and a bounded
 * inflate of one message.
 *
 * A compressed message is inflated under the same --max-message-bytes as an
 * uncompressed one: the output buffer grows only as bytes come out, each
 * growth is first offered to the caller's reserve hook (the call's budget),
 * and inflating stops at max_len + 1 bytes, so a decompression bomb costs
 * at most the message limit, never more memory.
 */
#ifndef AMP_H2_INFLATE_H
#define AMP_H2_INFLATE_H

#include <stddef.h>
#include <stdint.h>

enum h2_encoding {
    H2_ENCODING_IDENTITY = 0,  /* no grpc-encoding, or "identity" */
    H2_ENCODING_GZIP,          /* RFC 1952 */
    H2_ENCODING_DEFLATE,       /* gRPC's "deflate" is the zlib format, RFC 1950 */
    H2_ENCODING_UNKNOWN,
};

/* What ampd's replies list in grpc-accept-encoding: one definition. */
#define H2_ACCEPT_ENCODING "identity,deflate,gzip"

/* The grpc-encoding header's value as one of the above. */
enum h2_encoding h2_inflate_encoding(const uint8_t *value, size_t len);

enum h2_inflate_err {
    H2_INFLATE_OK = 0,
    H2_INFLATE_TOO_LARGE = -1,  /* the inflated message is over max_len */
    H2_INFLATE_CORRUPT = -2,    /* not a whole, valid stream of the encoding */
    H2_INFLATE_NOMEM = -3,
    H2_INFLATE_REFUSED = -4,    /* the reserve hook refused a larger buffer */
};

/* Inflates in[0, len) of encoding enc (gzip or deflate). On success *out is
 * malloc'd (at least *out_len + 1 bytes; the caller frees it). Each growth
 * of the output by `more` bytes is first offered to reserve(ctx, more)
 * (nonzero refuses); what was reserved stays the caller's to give back,
 * on failure too. */
int h2_inflate(enum h2_encoding enc, const uint8_t *in, size_t len, size_t max_len,
               int (*reserve)(void *ctx, size_t more), void *ctx, uint8_t **out,
               size_t *out_len);

#endif
