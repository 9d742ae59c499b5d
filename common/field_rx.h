/* SPDX-License-Identifier: MIT */
/* field_rx.h: one long bytes field of a message taken in pieces as they
 * arrive, for both ends: its bytes go into a buffer of the taker's (the
 * socket writes them there directly where it can: field_rx_dest), and the
 * few bytes after it into rest, decoded once the message is whole. The
 * daemon takes a request's bulk bytes into staging memory this way
 * (daemon/rpc_bulk_rx.c), the client a long reply's data into the
 * caller's buffer (client/jobs.c). The bytes before the field (its tag and
 * length) are the taker's to read; neither buffer is owned here.
 */
#ifndef AMP_FIELD_RX_H
#define AMP_FIELD_RX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct field_rx {
    uint8_t *field;     /* len bytes, the field's */
    size_t len, have;   /* have <= len: how many arrived */
    uint8_t *rest;      /* rest_len bytes, what follows the field in the message */
    size_t rest_len, rest_have;   /* rest_have <= rest_len */
};

/* The next n bytes of the message after the field's length: first the
 * field's, then rest's. n must not run past the message's end (have +
 * rest_have + n <= len + rest_len); data may be field_rx_dest()'s room,
 * read there already. */
void field_rx_piece(struct field_rx *rx, const uint8_t *data, size_t n);

/* Where the field's next bytes go (room: how many), so that the socket
 * can read them there; NULL once the field is whole. */
uint8_t *field_rx_dest(struct field_rx *rx, size_t *room);

/* Whether every byte of the message arrived. */
bool field_rx_whole(const struct field_rx *rx);

#endif
