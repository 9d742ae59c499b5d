/* SPDX-License-Identifier: MIT */
/* body.c: a gRPC message of owned and borrowed pieces (body.h).
 *
 * protobuf-c packs into a ProtobufCBuffer by appending pieces in wire
 * order, and appends a bytes field's data straight from the message: the
 * buffer below copies small appends into the body's own bytes and keeps
 * large ones as pointers, so the caller's bulk data is never copied here.
 */
#include "body.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "grpc_frame.h"

/* Appends at least this long are borrowed, shorter ones copied: a piece
 * costs an iovec, and copying a few KiB costs less than that write. */
#define BODY_BORROW_MIN (16 * 1024)
#define BODY_PIECES_FIRST 8
#define BODY_OWN_FIRST 256

/* While encoding, an owned piece's ptr is NULL and its bytes lie at own +
 * off (own may move as it grows); body_encode() resolves them at the end. */
struct body_builder {
    ProtobufCBuffer base;
    struct body *b;
    size_t *offs;          /* off of each piece; cap entries */
    int failed;            /* out of memory: the body is unusable */
};

void body_init(struct body *b)
{
    memset(b, 0, sizeof *b);
}

void body_free(struct body *b)
{
    if (b->pieces != &b->one)
        free(b->pieces);
    free(b->own);
    body_init(b);
}

/* Room for one more piece (and its offset): only while encoding, when
 * pieces is never &one. */
static int body_grow_pieces(struct body *b, size_t **offs)
{
    if (b->npieces < b->cap)
        return 0;
    size_t cap = b->cap ? 2 * b->cap : BODY_PIECES_FIRST;
    struct body_piece *p = realloc(b->pieces, cap * sizeof *p);
    if (!p)
        return -1;
    b->pieces = p;
    size_t *o = realloc(*offs, cap * sizeof *o);
    if (!o)
        return -1;
    *offs = o;
    b->cap = cap;
    return 0;
}

void body_borrow(struct body *b, const uint8_t *p, size_t len)
{
    body_free(b);
    b->one = (struct body_piece){ p, len };
    b->pieces = &b->one;
    b->npieces = len ? 1 : 0;
    b->cap = 1;
    b->len = len;
}

void body_move(struct body *dst, struct body *src)
{
    *dst = *src;
    if (src->pieces == &src->one)
        dst->pieces = &dst->one;
    body_init(src);
}

void body_adopt(struct body *b, uint8_t *buf, size_t len)
{
    body_free(b);
    b->own = buf;
    b->own_len = b->own_cap = len;
    b->one = (struct body_piece){ buf, len };
    b->pieces = &b->one;
    b->npieces = len ? 1 : 0;
    b->cap = 1;
    b->len = len;
}

int body_lend(struct body *b, const uint8_t *p, size_t len)
{
    if (len == 0)
        return 0;
    if (b->npieces == b->cap || b->pieces == &b->one) {
        size_t cap = b->npieces < BODY_PIECES_FIRST ? BODY_PIECES_FIRST : 2 * b->npieces;
        struct body_piece *np = malloc(cap * sizeof *np);
        if (!np)
            return -1;
        if (b->npieces)
            memcpy(np, b->pieces, b->npieces * sizeof *np);
        if (b->pieces != &b->one)
            free(b->pieces);
        b->pieces = np;
        b->cap = cap;
    }
    b->pieces[b->npieces++] = (struct body_piece){ p, len };
    b->len += len;
    return 0;
}

/* Copies len bytes to the end of own, extending the last piece when it is
 * owned too. */
static int body_add_own(struct body_builder *bb, const uint8_t *data, size_t len)
{
    struct body *b = bb->b;
    if (grow_bytes(&b->own, &b->own_cap, BODY_OWN_FIRST, b->own_len + len) != 0)
        return -1;
    memcpy(b->own + b->own_len, data, len);
    struct body_piece *last = b->npieces ? &b->pieces[b->npieces - 1] : NULL;
    if (last && !last->ptr) {
        last->len += len;
    } else {
        if (body_grow_pieces(b, &bb->offs) != 0)
            return -1;
        bb->offs[b->npieces] = b->own_len;
        b->pieces[b->npieces++] = (struct body_piece){ NULL, len };
    }
    b->own_len += len;
    return 0;
}

static void body_append(ProtobufCBuffer *buf, size_t len, const uint8_t *data)
{
    struct body_builder *bb = (struct body_builder *)buf;
    struct body *b = bb->b;
    if (bb->failed || len == 0)
        return;
    b->len += len;
    if (len < BODY_BORROW_MIN) {
        bb->failed = body_add_own(bb, data, len) != 0;
        return;
    }
    if (body_grow_pieces(b, &bb->offs) != 0) {
        bb->failed = 1;
        return;
    }
    bb->offs[b->npieces] = 0;
    b->pieces[b->npieces++] = (struct body_piece){ data, len };
}

int body_encode(struct body *b, const ProtobufCMessage *msg)
{
    body_free(b);
    size_t n = protobuf_c_message_get_packed_size(msg);
    if (n > UINT32_MAX)
        return -2;
    struct body_builder bb = { .base = { .append = body_append }, .b = b };
    uint8_t prefix[GRPC_FRAME_HEADER];
    grpc_frame_header(prefix, n);
    body_append(&bb.base, sizeof prefix, prefix);
    protobuf_c_message_pack_to_buffer(msg, &bb.base);
    if (!bb.failed) {
        for (size_t i = 0; i < b->npieces; i++)
            if (!b->pieces[i].ptr)
                b->pieces[i].ptr = b->own + bb.offs[i];
    }
    free(bb.offs);
    if (bb.failed) {
        body_free(b);
        return -1;
    }
    return 0;
}

/* The piece holding offset pos, and pos within it. */
static size_t body_find(const struct body *b, size_t *pos)
{
    size_t i = 0;
    while (i < b->npieces && *pos >= b->pieces[i].len) {
        *pos -= b->pieces[i].len;
        i++;
    }
    return i;
}

void body_copy(const struct body *b, size_t pos, uint8_t *dst, size_t n)
{
    for (size_t i = body_find(b, &pos); n > 0; i++, pos = 0) {
        size_t k = b->pieces[i].len - pos < n ? b->pieces[i].len - pos : n;
        memcpy(dst, b->pieces[i].ptr + pos, k);
        dst += k;
        n -= k;
    }
}

int body_iov_some(const struct body *b, size_t pos, size_t n, struct iovec *iov, int max,
                  size_t *taken)
{
    int used = 0;
    *taken = 0;
    for (size_t i = body_find(b, &pos); n > 0 && used < max; i++, pos = 0) {
        size_t k = b->pieces[i].len - pos < n ? b->pieces[i].len - pos : n;
        iov[used].iov_base = (void *)(uintptr_t)(b->pieces[i].ptr + pos);
        iov[used].iov_len = k;
        used++;
        n -= k;
        *taken += k;
    }
    return used;
}

int body_iov(const struct body *b, size_t pos, size_t n, struct iovec *iov, int max)
{
    size_t taken;
    int used = body_iov_some(b, pos, n, iov, max, &taken);
    return taken == n ? used : -1;
}
