/* SPDX-License-Identifier: MIT */
/* body.h: a gRPC message as a list of pieces, owned and borrowed.
 *
 * A message on the wire is the 5-byte prefix, then the protobuf encoding.
 * Encoding it into one buffer would copy its bulk bytes (a 32 MiB input or
 * result) into fresh memory once more before the socket copies them
 * again. A body instead keeps the small pieces (the prefix, tags, lengths,
 * small fields) in a buffer of its own and borrows every large `bytes`
 * field from the message where it lies, so the writer can hand the pieces
 * to writev() as they are: libampclient's requests (client/call.c, whose
 * conn.c writes them) and the daemon's replies (daemon/h2_reply.c).
 */
#ifndef AMP_BODY_H
#define AMP_BODY_H

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

/* Moves what src holds into dst (which must hold nothing) and leaves src
 * empty: a body must not be copied with `=`, since a borrowed one points
 * into itself. */
void body_move(struct body *dst, struct body *src);

/* Makes b one owned piece: len bytes at buf, which must be malloc'd and
 * which body_free() frees, dropping what b held. */
void body_adopt(struct body *b, uint8_t *buf, size_t len);

/* Appends len bytes at p as a borrowed piece (kept by the caller as long
 * as b is used). Returns 0, or -1 out of memory (b unchanged). */
int body_lend(struct body *b, const uint8_t *p, size_t len);

/* Encodes msg behind a gRPC message prefix into b, borrowing msg's large
 * bytes fields (they must outlive b); the result is byte for byte the
 * prefix and protobuf_c_message_pack()'s output. Returns 0, -1 out of
 * memory, or -2 when the message exceeds gRPC's 4 GiB limit. */
int body_encode(struct body *b, const ProtobufCMessage *msg);

/* Copies n bytes of b from offset pos (pos + n <= b->len) to dst. */
void body_copy(const struct body *b, size_t pos, uint8_t *dst, size_t n);

/* Points up to max iovecs at the n bytes of b from offset pos (pos + n <=
 * b->len). Returns the count used, or -1 when max is too few. */
int body_iov(const struct body *b, size_t pos, size_t n, struct iovec *iov, int max);

/* As body_iov, but when max iovecs are too few for n bytes, points them at
 * as many as they take: *taken says how many. Returns the count used. */
int body_iov_some(const struct body *b, size_t pos, size_t n, struct iovec *iov, int max,
                  size_t *taken);

#endif
