/* SPDX-License-Identifier: MIT */
/* field_rx.c: a long bytes field taken in pieces (field_rx.h). */
#include "field_rx.h"

#include <string.h>

void field_rx_piece(struct field_rx *rx, const uint8_t *data, size_t n)
{
    size_t k = rx->len - rx->have < n ? rx->len - rx->have : n;
    if (data != rx->field + rx->have)   /* else read there from the socket */
        memcpy(rx->field + rx->have, data, k);
    rx->have += k;
    memcpy(rx->rest + rx->rest_have, data + k, n - k);
    rx->rest_have += n - k;
}

uint8_t *field_rx_dest(struct field_rx *rx, size_t *room)
{
    if (rx->have == rx->len)
        return NULL;
    *room = rx->len - rx->have;
    return rx->field + rx->have;
}

bool field_rx_whole(const struct field_rx *rx)
{
    return rx->have == rx->len && rx->rest_have == rx->rest_len;
}
