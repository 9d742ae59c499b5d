/* body.h: a request body as a list of pieces, internal to libampclient.
 *
 * A call's request is one gRPC message: the 5-byte prefix, then the
 * protobuf encoding. Encoding it into one buffer would copy the caller's
 * bulk bytes (a 32 MiB input) into fresh memory once more before the
 * socket copies them again. A body instead keeps the small pieces (the
 * prefix, tags, lengths, small fields) in a buffer of its own and borrows
 * every large `bytes` field from the request where it lies, so conn.c
 * can hand the pieces to writev() as they are.
 */
#ifndef AMP_CLIENT_BODY_H
#define AMP_CLIENT_BODY_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* One piece: len bytes at ptr, owned by the body (in own) or borrowed. */
struct body_piece {
    const uint8_t *ptr;
    size_t len;
};

struct body {
    struct body_piece *pieces; /* in order: an owned array of cap, or &one */
    size_t npieces, cap;
    uint8_t *own;              /* the small pieces' bytes, owned; own_len <= own_cap */
    size_t own_len, own_cap;
    size_t len;                /* sum of the pieces' lengths */
    struct body_piece one;     /* body_borrow()'s piece: borrowing never allocates */
};

/* An empty body (no allocation). */
void body_init(struct body *b);

/* Frees what the body owns; borrowed bytes are the caller's. */
void body_free(struct body *b);

/* Makes b one borrowed piece: len bytes at p (kept by the caller as long
 * as b is used), dropping what b held. */
void body_borrow(struct body *b, const uint8_t *p, size_t len);

/* Encodes req behind a gRPC message prefix into b, borrowing req's large
 * bytes fields (they must outlive b). Returns 0, -1 out of memory, or -2
 * when the message exceeds gRPC's 4 GiB limit. */
int body_encode(struct body *b, const ProtobufCMessage *req);

/* Copies n bytes of b from offset pos (pos + n <= b->len) to dst. */
void body_copy(const struct body *b, size_t pos, uint8_t *dst, size_t n);

/* Points up to max iovecs at the n bytes of b from offset pos (pos + n <=
 * b->len). Returns the count used, or -1 when max is too few. */
int body_iov(const struct body *b, size_t pos, size_t n, struct iovec *iov, int max);

#endif
