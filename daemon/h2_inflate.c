/* SPDX-License-Identifier: MIT */
/* h2_inflate.c: bounded inflate of one gRPC message with zlib (see
 * h2_inflate.h). */
#include "h2_inflate.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* zlib's windowBits for each format: +16 asks for the gzip wrapper. */
#define H2_INFLATE_WBITS_ZLIB 15
#define H2_INFLATE_WBITS_GZIP (16 + 15)
/* The first output buffer, before growth by doubling: compressed protobuf
 * usually inflates a few times over, so start at a small multiple. */
#define H2_INFLATE_FIRST_CAP (64 * 1024)
#define H2_INFLATE_FIRST_RATIO 4

static bool h2_inflate_is(const uint8_t *v, size_t len, const char *want)
{
    return len == strlen(want) && memcmp(v, want, len) == 0;
}

enum h2_encoding h2_inflate_encoding(const uint8_t *value, size_t len)
{
    if (h2_inflate_is(value, len, "identity"))
        return H2_ENCODING_IDENTITY;
    if (h2_inflate_is(value, len, "gzip"))
        return H2_ENCODING_GZIP;
    if (h2_inflate_is(value, len, "deflate"))
        return H2_ENCODING_DEFLATE;
    return H2_ENCODING_UNKNOWN;
}

/* Grows *buf from *cap to the next size, at most limit bytes. */
static int h2_inflate_grow(uint8_t **buf, size_t *cap, size_t want, size_t limit,
                           int (*reserve)(void *, size_t), void *ctx)
{
    if (want > limit)
        want = limit;
    if (want <= *cap)
        return H2_INFLATE_TOO_LARGE;
    if (reserve && reserve(ctx, want - *cap) != 0)
        return H2_INFLATE_REFUSED;
    uint8_t *p = realloc(*buf, want);
    if (!p)
        return H2_INFLATE_NOMEM;
    *buf = p;
    *cap = want;
    return H2_INFLATE_OK;
}

/* Runs inflate until the stream ends; the output never passes limit bytes. */
static int h2_inflate_run(z_stream *z, uint8_t **buf, size_t *cap, size_t limit,
                          int (*reserve)(void *, size_t), void *ctx)
{
    for (;;) {
        if (z->total_out == *cap) {
            size_t want = *cap > limit / 2 ? limit : 2 * *cap;
            int rv = h2_inflate_grow(buf, cap, want, limit, reserve, ctx);
            if (rv != H2_INFLATE_OK)
                return rv;
        }
        size_t room = *cap - z->total_out;
        z->next_out = *buf + z->total_out;
        z->avail_out = room > UINT_MAX ? UINT_MAX : (uInt)room;
        int zr = inflate(z, Z_NO_FLUSH);
        if (zr == Z_STREAM_END)
            return z->avail_in == 0 ? H2_INFLATE_OK : H2_INFLATE_CORRUPT;  /* trailing bytes */
        if (zr == Z_MEM_ERROR)
            return H2_INFLATE_NOMEM;
        if (zr != Z_OK && !(zr == Z_BUF_ERROR && z->avail_out == 0))
            return H2_INFLATE_CORRUPT;   /* bad data, or input ended mid-stream */
    }
}

int h2_inflate(enum h2_encoding enc, const uint8_t *in, size_t len, size_t max_len,
               int (*reserve)(void *ctx, size_t more), void *ctx, uint8_t **out,
               size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    if (len > UINT_MAX)
        return H2_INFLATE_TOO_LARGE;   /* zlib's avail_in; far above any message limit */
    z_stream z;
    memset(&z, 0, sizeof(z));
    int wbits = enc == H2_ENCODING_GZIP ? H2_INFLATE_WBITS_GZIP : H2_INFLATE_WBITS_ZLIB;
    if (inflateInit2(&z, wbits) != Z_OK)
        return H2_INFLATE_NOMEM;
    z.next_in = (Bytef *)in;   /* zlib's API is not const; it only reads */
    z.avail_in = (uInt)len;
    /* max_len + 1: a message of exactly max_len bytes is allowed, and the
     * extra byte is both the NUL slot callers expect and the tripwire. */
    size_t limit = max_len + 1;
    size_t first = len < H2_INFLATE_FIRST_CAP / H2_INFLATE_FIRST_RATIO
                       ? H2_INFLATE_FIRST_CAP
                       : len * H2_INFLATE_FIRST_RATIO;
    uint8_t *buf = NULL;
    size_t cap = 0;
    int rv = h2_inflate_grow(&buf, &cap, first, limit, reserve, ctx);
    if (rv == H2_INFLATE_OK)
        rv = h2_inflate_run(&z, &buf, &cap, limit, reserve, ctx);
    if (rv == H2_INFLATE_OK && z.total_out > max_len)
        rv = H2_INFLATE_TOO_LARGE;
    size_t n = z.total_out;
    inflateEnd(&z);
    if (rv != H2_INFLATE_OK) {
        free(buf);
        return rv;
    }
    *out = buf;
    *out_len = n;
    return H2_INFLATE_OK;
}
