/* SPDX-License-Identifier: MIT */
/* h2_deflate.c: reply-side message compression with zlib (see
 * h2_deflate.h). */
#include "h2_deflate.h"

#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <zlib.h>

/* zlib's windowBits and memLevel: +16 writes the gzip wrapper. */
#define H2_DEFLATE_WBITS_ZLIB 15
#define H2_DEFLATE_WBITS_GZIP (16 + 15)
#define H2_DEFLATE_MEM_LEVEL 8
/* Replies go out on the I/O loop: the fastest level keeps it moving. */
#define H2_DEFLATE_LEVEL Z_BEST_SPEED

enum h2_encoding h2_deflate_choose(const uint8_t *value, size_t len)
{
    bool gzip = false, deflate = false;
    size_t i = 0;
    while (i < len) {
        while (i < len && (value[i] == ' ' || value[i] == '\t' || value[i] == ','))
            i++;
        size_t start = i;
        while (i < len && value[i] != ',' && value[i] != ' ' && value[i] != '\t')
            i++;
        enum h2_encoding e = h2_inflate_encoding(value + start, i - start);
        gzip |= e == H2_ENCODING_GZIP;
        deflate |= e == H2_ENCODING_DEFLATE;
    }
    return gzip ? H2_ENCODING_GZIP : deflate ? H2_ENCODING_DEFLATE : H2_ENCODING_IDENTITY;
}

const char *h2_deflate_name(enum h2_encoding enc)
{
    return enc == H2_ENCODING_GZIP ? "gzip" : "deflate";
}

int h2_deflate(enum h2_encoding enc, const uint8_t *in, size_t len, uint8_t *out, size_t cap,
               size_t *out_len)
{
    if (len > UINT_MAX || cap > UINT_MAX)
        return -1;
    z_stream z;
    memset(&z, 0, sizeof(z));
    int wbits = enc == H2_ENCODING_GZIP ? H2_DEFLATE_WBITS_GZIP : H2_DEFLATE_WBITS_ZLIB;
    if (deflateInit2(&z, H2_DEFLATE_LEVEL, Z_DEFLATED, wbits, H2_DEFLATE_MEM_LEVEL,
                     Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    z.next_in = (Bytef *)in;   /* zlib's API is not const; it only reads */
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int zr = deflate(&z, Z_FINISH);
    *out_len = z.total_out;
    deflateEnd(&z);
    return zr == Z_STREAM_END ? 0 : -1;
}
