/* SPDX-License-Identifier: MIT */
/* grpc_frame.h: gRPC's length-prefixed message framing, with no I/O.
 *
 * A gRPC message on the wire is 1 byte compressed-flag, 4 bytes big-endian
 * length, then the message. The reader is fed arbitrary slices of a
 * stream's DATA and yields whole messages; used by daemon and client alike.
 */
#ifndef AMP_GRPC_FRAME_H
#define AMP_GRPC_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GRPC_FRAME_HEADER 5

enum grpc_frame_err {
    GRPC_FRAME_OK = 0,
    GRPC_FRAME_TOO_LARGE = -1,   /* declared length over the reader's limit */
    GRPC_FRAME_COMPRESSED = -2,  /* compressed flag set and compressed_ok false */
    GRPC_FRAME_BAD_FLAG = -3,    /* flag byte other than 0 or 1 */
    GRPC_FRAME_NOMEM = -4,
    GRPC_FRAME_REFUSED = -5,     /* the reserve hook refused a larger buffer */
};

struct grpc_frame_reader {
    size_t max_len;       /* largest message accepted */
    uint8_t hdr[GRPC_FRAME_HEADER];
    size_t hdr_have;      /* < GRPC_FRAME_HEADER while reading the header */
    uint8_t *msg;         /* malloc'd body of the message being read */
    size_t msg_cap;       /* bytes allocated at msg: > msg_have, and <= msg_len + 1 unless
                           * it was the spare */
    size_t msg_charged;   /* of them offered to reserve() so far: msg_cap, or less for a
                           * whole buffer (whole_min) whose bytes are still arriving */
    size_t msg_len;       /* declared length of that message */
    size_t msg_have;      /* msg_have <= msg_len */
    /* A delivered message's buffer kept for the next one (streams carry
     * many messages of one size: a fresh malloc of MiBs each time costs a
     * page fault per page), if it is at most keep_max bytes; 0 (the
     * default) keeps nothing, as the daemon wants: memory it holds between
     * messages would be outside its budget. */
    size_t keep_max;
    uint8_t *spare;
    size_t spare_cap;
    /* The body buffer grows as bytes arrive (a prefix alone buys at most
     * GRPC_FRAME_FIRST_CAP), and each growth by `more` bytes is first
     * offered to reserve(reserve_ctx, more): nonzero refuses it
     * (GRPC_FRAME_REFUSED). NULL: no owner to ask. The reader never gives
     * back: whoever reserves releases once the buffer is gone. */
    int (*reserve)(void *ctx, size_t more);
    void *reserve_ctx;
    /* A message declared at most prealloc_max bytes long gets its whole
     * buffer at once: growing by doubling would copy a large body about
     * once more on its way in. 0 (the default) grows as bytes arrive, as
     * the daemon wants (its budget holds what a client actually sent). */
    size_t prealloc_max;
    /* A message declared at least whole_min bytes long (0: none) also
     * gets its whole buffer at once, but is offered to reserve() as bytes
     * arrive, as if it grew: growth by realloc copies the body so far, the
     * last doubling half of it in one go (16 MiB of a 32 MiB request: a
     * stall of milliseconds for everything else on the reader's thread).
     * The untouched rest is address space, not memory, until bytes come. */
    size_t whole_min;
    /* Where such a whole buffer comes from: take(take_ctx, n, &cap) returns
     * malloc'd memory of cap >= n bytes (a buffer used before, whose pages
     * are already mapped), or NULL for a fresh malloc. May be NULL. */
    void *(*take)(void *ctx, size_t n, size_t *cap);
    void *take_ctx;
    uint8_t *delivering;  /* the message being handed to the callback, NULL once taken */
    /* Messages with the compressed flag are delivered as they are (the
     * owner inflates them; grpc_frame_compressed() tells which) rather
     * than refused with GRPC_FRAME_COMPRESSED. */
    bool compressed_ok;
};

/* What a message body buffer starts at before its bytes arrive. */
#define GRPC_FRAME_FIRST_CAP (64 * 1024)

typedef int (*grpc_frame_msg_cb)(const uint8_t *msg, size_t len, void *ctx);

void grpc_frame_reader_init(struct grpc_frame_reader *r, size_t max_len);
void grpc_frame_reader_free(struct grpc_frame_reader *r);

/* Consumes len bytes, calling cb for each complete message (the buffer is
 * valid only during the call). Returns GRPC_FRAME_OK, a negative
 * grpc_frame_err, or the first nonzero value cb returned. */
int grpc_frame_feed(struct grpc_frame_reader *r, const uint8_t *data, size_t len,
                    grpc_frame_msg_cb cb, void *ctx);

/* Inside the message callback: takes the message's buffer (malloc'd, at
 * least len + 1 bytes; the caller frees it) instead of leaving it to the
 * reader, which would free or reuse it. NULL outside a callback. */
uint8_t *grpc_frame_take(struct grpc_frame_reader *r);

/* True when a message is partly read: a stream ending now was truncated. */
int grpc_frame_pending(const struct grpc_frame_reader *r);

/* Drops the body buffer of the message whose prefix was just read (none of
 * its body fed yet) and gets ready for the next prefix: the owner takes
 * that body another way (pieces: h2_stream.c, client/call.c). The buffer
 * is kept as the spare if keep_max allows. What it reserved is the owner's
 * to give back, as always. */
void grpc_frame_skip_body(struct grpc_frame_reader *r);

/* True when the message whose prefix was read last (the one being read,
 * or inside the callback the one delivered) has the compressed flag. */
bool grpc_frame_compressed(const struct grpc_frame_reader *r);

/* Writes the 5-byte prefix for a len-byte uncompressed message. */
void grpc_frame_header(uint8_t out[GRPC_FRAME_HEADER], size_t len);

/* Sets the compressed flag of a prefix grpc_frame_header() wrote. */
void grpc_frame_mark_compressed(uint8_t out[GRPC_FRAME_HEADER]);

#endif
