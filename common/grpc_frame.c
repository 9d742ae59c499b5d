/* SPDX-License-Identifier: MIT */
/* grpc_frame.c: gRPC length-prefixed message reader (see grpc_frame.h).
 *
 * A small state machine: collect the 5-byte prefix, check it, then collect
 * the body into one malloc'd buffer and hand it to the callback. The declared
 * length is checked against the limit as soon as the prefix is whole, so an
 * oversized message is refused before a byte of its body is buffered.
 * Used by daemon/h2.c and by the client library; it does no I/O.
 */
#include "grpc_frame.h"

#include <stdlib.h>
#include <string.h>

#define GRPC_FLAG_UNCOMPRESSED 0
#define GRPC_FLAG_COMPRESSED 1

void grpc_frame_reader_init(struct grpc_frame_reader *r, size_t max_len)
{
    memset(r, 0, sizeof(*r));
    r->max_len = max_len;
}

void grpc_frame_reader_free(struct grpc_frame_reader *r)
{
    free(r->msg);
    free(r->spare);
    r->msg = NULL;
    r->spare = NULL;
    r->spare_cap = 0;
    r->hdr_have = 0;
    r->msg_len = 0;
    r->msg_have = 0;
}

uint8_t *grpc_frame_take(struct grpc_frame_reader *r)
{
    uint8_t *msg = r->delivering;
    r->delivering = NULL;
    return msg;
}

int grpc_frame_pending(const struct grpc_frame_reader *r)
{
    return r->hdr_have > 0;
}

void grpc_frame_header(uint8_t out[GRPC_FRAME_HEADER], size_t len)
{
    out[0] = GRPC_FLAG_UNCOMPRESSED;
    out[1] = (uint8_t)(len >> 24);
    out[2] = (uint8_t)(len >> 16);
    out[3] = (uint8_t)(len >> 8);
    out[4] = (uint8_t)len;
}

/* Makes room at msg for at least need bytes (need <= msg_len + 1): doubles,
 * so a body that arrives in many pieces is copied O(1) times per byte;
 * a body of whole_min or more is allocated whole the first time, and only
 * its charge doubles. */
static int grpc_frame_grow(struct grpc_frame_reader *r, size_t need)
{
    if (need <= r->msg_charged)
        return GRPC_FRAME_OK;
    size_t cap = r->msg_charged ? 2 * r->msg_charged : GRPC_FRAME_FIRST_CAP;
    if (cap < need)
        cap = need;
    if (cap > r->msg_len + 1)
        cap = r->msg_len + 1;
    if (r->reserve && r->reserve(r->reserve_ctx, cap - r->msg_charged) != 0)
        return GRPC_FRAME_REFUSED;
    r->msg_charged = cap;
    size_t alloc = r->whole_min && r->msg_len >= r->whole_min ? r->msg_len + 1 : cap;
    if (alloc > r->msg_cap) {
        uint8_t *p = realloc(r->msg, alloc);
        if (!p)
            return GRPC_FRAME_NOMEM;
        r->msg = p;
        r->msg_cap = alloc;
    }
    return GRPC_FRAME_OK;
}

/* The prefix is whole: check it and get ready for the body. msg_len keeps
 * the declared length even on error, so callers can report it. */
static int grpc_frame_start_body(struct grpc_frame_reader *r)
{
    const uint8_t *h = r->hdr;
    r->msg_len = ((size_t)h[1] << 24) | ((size_t)h[2] << 16) | ((size_t)h[3] << 8) | h[4];
    r->msg_have = 0;
    if (h[0] == GRPC_FLAG_COMPRESSED && !r->compressed_ok)
        return GRPC_FRAME_COMPRESSED;
    if (h[0] != GRPC_FLAG_UNCOMPRESSED && h[0] != GRPC_FLAG_COMPRESSED)
        return GRPC_FRAME_BAD_FLAG;
    if (r->msg_len > r->max_len)
        return GRPC_FRAME_TOO_LARGE;
    if (r->spare && r->spare_cap > r->msg_len) {
        if (r->reserve && r->reserve(r->reserve_ctx, r->spare_cap) != 0)
            return GRPC_FRAME_REFUSED;
        r->msg = r->spare;
        r->msg_cap = r->msg_charged = r->spare_cap;
        r->spare = NULL;
        r->spare_cap = 0;
        return GRPC_FRAME_OK;
    }
    /* A buffer for the first bytes only (+1 so that a zero-length message
     * still gets a non-NULL buffer): a prefix that declares 64 MiB and
     * sends nothing more holds 64 KiB, unless the owner trusts its peer
     * with prealloc_max. */
    r->msg_cap = r->msg_charged = 0;
    if (r->msg_len < GRPC_FRAME_FIRST_CAP || r->msg_len <= r->prealloc_max) {
        size_t cap = 0;
        uint8_t *p = r->take ? r->take(r->take_ctx, r->msg_len + 1, &cap) : NULL;
        if (p && r->reserve && r->reserve(r->reserve_ctx, cap) != 0) {
            free(p);
            return GRPC_FRAME_REFUSED;
        }
        if (p) {
            r->msg = p;
            r->msg_cap = r->msg_charged = cap;
            return GRPC_FRAME_OK;
        }
        return grpc_frame_grow(r, r->msg_len + 1);
    }
    return grpc_frame_grow(r, GRPC_FRAME_FIRST_CAP);
}

/* The body is whole: deliver it and reset for the next prefix. */
static int grpc_frame_deliver(struct grpc_frame_reader *r, grpc_frame_msg_cb cb, void *ctx)
{
    uint8_t *msg = r->msg;
    size_t len = r->msg_len, cap = r->msg_cap;
    r->msg = NULL;
    r->hdr_have = 0;
    r->msg_len = 0;
    r->msg_have = 0;
    r->delivering = msg;
    int rv = cb(msg, len, ctx);
    if (!r->delivering)
        return rv;   /* the callback took it */
    r->delivering = NULL;
    if (cap <= r->keep_max && cap > r->spare_cap) {
        free(r->spare);
        r->spare = msg;
        r->spare_cap = cap;
    } else {
        free(msg);
    }
    return rv;
}

int grpc_frame_feed(struct grpc_frame_reader *r, const uint8_t *data, size_t len,
                    grpc_frame_msg_cb cb, void *ctx)
{
    while (len > 0) {
        if (r->hdr_have < GRPC_FRAME_HEADER) {
            size_t n = GRPC_FRAME_HEADER - r->hdr_have;
            if (n > len)
                n = len;
            memcpy(r->hdr + r->hdr_have, data, n);
            r->hdr_have += n;
            data += n;
            len -= n;
            if (r->hdr_have < GRPC_FRAME_HEADER)
                break;
            int rv = grpc_frame_start_body(r);
            if (rv != GRPC_FRAME_OK)
                return rv;
        } else {
            size_t n = r->msg_len - r->msg_have;
            if (n > len)
                n = len;
            int rv = grpc_frame_grow(r, r->msg_have + n + 1);
            if (rv != GRPC_FRAME_OK)
                return rv;
            memcpy(r->msg + r->msg_have, data, n);
            r->msg_have += n;
            data += n;
            len -= n;
        }
        if (r->hdr_have == GRPC_FRAME_HEADER && r->msg_have == r->msg_len) {
            int rv = grpc_frame_deliver(r, cb, ctx);
            if (rv != 0)
                return rv;
        }
    }
    return GRPC_FRAME_OK;
}

void grpc_frame_skip_body(struct grpc_frame_reader *r)
{
    if (r->msg && r->msg_cap <= r->keep_max && r->msg_cap > r->spare_cap) {
        free(r->spare);
        r->spare = r->msg;
        r->spare_cap = r->msg_cap;
        r->msg = NULL;
    }
    free(r->msg);
    r->msg = NULL;
    r->msg_cap = r->msg_charged = 0;
    r->hdr_have = 0;
    r->msg_len = 0;
    r->msg_have = 0;
}

bool grpc_frame_compressed(const struct grpc_frame_reader *r)
{
    return r->hdr[0] == GRPC_FLAG_COMPRESSED;
}

void grpc_frame_mark_compressed(uint8_t out[GRPC_FRAME_HEADER])
{
    out[0] = GRPC_FLAG_COMPRESSED;
}
