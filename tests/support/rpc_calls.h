/* SPDX-License-Identifier: MIT */
/* rpc_calls.h: calls the daemon tests make over h2c (h2_client.h) and
 * the checks of their replies, so that each test does not build them
 * anew: a Reverse, a DataReply, and the staging memory a Status reports
 * in use. */
#ifndef AMP_TEST_RPC_CALLS_H
#define AMP_TEST_RPC_CALLS_H

#include <stddef.h>
#include <stdint.h>

struct h2c;
struct h2c_result;

/* Starts a Reverse of data (len bytes, at most 64 KiB) on c; its id. */
int32_t rpc_calls_reverse(struct h2c *c, const uint8_t *data, size_t len);

/* Asserts that r is an OK reply whose message is a DataReply, and returns
 * it decoded (free with amp__v1__data_reply__free_unpacked). */
struct Amp__V1__DataReply *rpc_calls_data_reply(const struct h2c_result *r);

/* Asserts that r is an OK reply holding data (len bytes) reversed. */
void rpc_calls_expect_reversed(const struct h2c_result *r, const uint8_t *data, size_t len);

/* The daemon's staging memory in use, from a Status call on its Unix
 * socket at sock_path. */
uint64_t rpc_calls_staging_in_use(const char *sock_path);

#endif
