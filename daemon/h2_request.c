/* SPDX-License-Identifier: MIT */
/* h2_request.c: RFC 9113's request rules, less the :authority requirement
 * (see h2_request.h). nghttp2's own checkers judge names, values, paths and
 * authorities, so the character rules are the library's, not ours. */
#include "h2_request.h"

#include <nghttp2/nghttp2.h>
#include <string.h>

enum {
    H2_REQUEST_METHOD = 1u << 0,
    H2_REQUEST_SCHEME = 1u << 1,
    H2_REQUEST_PATH = 1u << 2,
    H2_REQUEST_AUTHORITY = 1u << 3,
    H2_REQUEST_REQUIRED = H2_REQUEST_METHOD | H2_REQUEST_SCHEME | H2_REQUEST_PATH,
};

static bool h2_request_is(const uint8_t *name, size_t namelen, const char *want)
{
    return namelen == strlen(want) && memcmp(name, want, namelen) == 0;
}

/* The pseudo-header fields a request may carry (not :protocol: ampd does
 * not enable extended CONNECT), as their bit; 0 for any other. */
static unsigned h2_request_pseudo_bit(const uint8_t *name, size_t namelen)
{
    if (h2_request_is(name, namelen, ":method"))
        return H2_REQUEST_METHOD;
    if (h2_request_is(name, namelen, ":scheme"))
        return H2_REQUEST_SCHEME;
    if (h2_request_is(name, namelen, ":path"))
        return H2_REQUEST_PATH;
    if (h2_request_is(name, namelen, ":authority"))
        return H2_REQUEST_AUTHORITY;
    return 0;
}

/* An origin-form path (section 8.3.1: never empty for http), or "*". */
static bool h2_request_path_ok(const uint8_t *value, size_t len)
{
    bool form = len > 0 && (value[0] == '/' || (len == 1 && value[0] == '*'));
    return form && nghttp2_check_path(value, len);
}

static bool h2_request_pseudo_value_ok(unsigned bit, const uint8_t *value, size_t len)
{
    switch (bit) {
    case H2_REQUEST_METHOD: return nghttp2_check_method(value, len);
    case H2_REQUEST_PATH: return h2_request_path_ok(value, len);
    case H2_REQUEST_AUTHORITY: return nghttp2_check_authority(value, len);
    default: return len > 0;
    }
}

/* Connection-specific fields have no meaning in HTTP/2 (section 8.2.2);
 * te may only say "trailers". */
static bool h2_request_regular_ok(const uint8_t *name, size_t namelen, const uint8_t *value,
                                  size_t valuelen)
{
    static const char *const connection_specific[] = {
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade",
    };
    for (size_t i = 0; i < sizeof(connection_specific) / sizeof(connection_specific[0]); i++)
        if (h2_request_is(name, namelen, connection_specific[i]))
            return false;
    if (h2_request_is(name, namelen, "te"))
        return valuelen == 8 && memcmp(value, "trailers", 8) == 0;
    return true;
}

/* content-length: digits only, once, and within 64 bits (a list of equal
 * values, which RFC 9110 tolerates, is refused as nghttp2 refuses it). */
static bool h2_request_length(struct h2_request *r, const uint8_t *value, size_t len)
{
    if (r->length_seen || len == 0)
        return false;
    uint64_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (value[i] < '0' || value[i] > '9' || n > (UINT64_MAX - 9) / 10)
            return false;
        n = n * 10 + (uint64_t)(value[i] - '0');
    }
    r->length_seen = true;
    r->content_length = n;
    return true;
}

static bool h2_request_chars_ok(const uint8_t *name, size_t namelen, const uint8_t *value,
                                size_t valuelen)
{
    return nghttp2_check_header_name(name, namelen)
           && nghttp2_check_header_value_rfc9113(value, valuelen);
}

bool h2_request_field(struct h2_request *r, const uint8_t *name, size_t namelen,
                      const uint8_t *value, size_t valuelen)
{
    if (!h2_request_chars_ok(name, namelen, value, valuelen))
        return false;
    if (name[0] != ':') {
        r->regular_seen = true;
        if (h2_request_is(name, namelen, "content-length"))
            return h2_request_length(r, value, valuelen);
        return h2_request_regular_ok(name, namelen, value, valuelen);
    }
    unsigned bit = h2_request_pseudo_bit(name, namelen);
    if (!bit || r->regular_seen || (r->pseudo_seen & bit))
        return false;
    r->pseudo_seen |= bit;
    return h2_request_pseudo_value_ok(bit, value, valuelen);
}

bool h2_request_trailer_field(const uint8_t *name, size_t namelen, const uint8_t *value,
                              size_t valuelen)
{
    return h2_request_chars_ok(name, namelen, value, valuelen) && name[0] != ':';
}

bool h2_request_data(struct h2_request *r, size_t len)
{
    r->data_received += len;
    return !r->length_seen || r->data_received <= r->content_length;
}

bool h2_request_end(const struct h2_request *r)
{
    return !r->length_seen || r->data_received == r->content_length;
}

bool h2_request_complete(const struct h2_request *r)
{
    return (r->pseudo_seen & H2_REQUEST_REQUIRED) == H2_REQUEST_REQUIRED;
}
