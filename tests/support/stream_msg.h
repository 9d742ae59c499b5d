/* SPDX-License-Identifier: MIT */
/* stream_msg.h: Stream call messages for tests that speak raw HTTP/2
 * (h2_client.h), which sends gRPC bodies byte for byte. */
#ifndef AMP_TEST_STREAM_MSG_H
#define AMP_TEST_STREAM_MSG_H

#include <stddef.h>
#include <stdint.h>

/* The first message of a Stream call, a header asking for a 256-bin
 * histogram of the bytes to follow, with its gRPC length prefix: malloc'd
 * (the caller frees), *len bytes. */
uint8_t *stream_histogram_header(size_t *len);

#endif
