/* SPDX-License-Identifier: MIT */
/* h2_request.h: the HTTP/2 request rules ampd keeps (RFC 9113 section 8),
 * checked field by field as a request's HEADERS block arrives.
 *
 * nghttp2 enforces these itself, and one more: a request must carry
 * :authority or host. gRPC makes :authority optional and HAProxy's gRPC
 * health checks send none, and nghttp2 has no option for that rule alone,
 * so h2.c turns nghttp2's HTTP messaging off and keeps the rest here.
 * content-length, when a request carries one, must equal the DATA payload
 * received (section 8.1.1), as nghttp2 would check it; trailers are only
 * checked for pseudo-header fields. A request that breaks a rule is
 * malformed: h2.c resets its stream with PROTOCOL_ERROR, as nghttp2 would.
 */
#ifndef AMP_H2_REQUEST_H
#define AMP_H2_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct h2_request {
    unsigned pseudo_seen;  /* H2_REQUEST_* bits: each pseudo-header field at most once */
    bool regular_seen;     /* a regular field came: no pseudo-header field may follow */
    bool length_seen;      /* content-length came (at most once): content_length holds it */
    uint64_t content_length;
    uint64_t data_received; /* DATA payload so far, padding excluded */
};

/* One field of a request's header block. False: the request is malformed. */
bool h2_request_field(struct h2_request *r, const uint8_t *name, size_t namelen,
                      const uint8_t *value, size_t valuelen);

/* One field of a request's trailers. False: malformed. */
bool h2_request_trailer_field(const uint8_t *name, size_t namelen, const uint8_t *value,
                              size_t valuelen);

/* len more bytes of DATA payload arrived. False: more than content-length. */
bool h2_request_data(struct h2_request *r, size_t len);

/* The client ended the request. False: less DATA than content-length. */
bool h2_request_end(const struct h2_request *r);

/* The block is whole: false when a required pseudo-header field is missing
 * (:method, :scheme and :path; :authority is optional). */
bool h2_request_complete(const struct h2_request *r);

#endif
