/* SPDX-License-Identifier: MIT */
/* rpc_calls.c: calls the daemon tests make over h2c (rpc_calls.h). */
#include "rpc_calls.h"

#include <check.h>
#include <stdlib.h>
#include <unistd.h>

#include "amp.pb-c.h"
#include "grpc_frame.h"
#include "h2_client.h"
#include "status.h"

#define RPC_CALLS_IO_MS 15000
#define RPC_CALLS_REVERSE_MAX (64u << 10)
#define RPC_CALLS_PB_SLACK 16   /* the data field's tag and length */

int32_t rpc_calls_reverse(struct h2c *c, const uint8_t *data, size_t len)
{
    ck_assert_uint_le(len, RPC_CALLS_REVERSE_MAX);
    Amp__V1__ReverseRequest req = AMP__V1__REVERSE_REQUEST__INIT;
    req.data.data = (uint8_t *)(uintptr_t)data;
    req.data.len = len;
    uint8_t *msg = malloc(len + RPC_CALLS_PB_SLACK);
    ck_assert_ptr_nonnull(msg);
    size_t msg_len = protobuf_c_message_pack(&req.base, msg);
    int32_t id = h2c_call(c, "/amp.v1.Amp/Reverse", msg, msg_len);
    free(msg);
    ck_assert_int_gt(id, 0);
    return id;
}

Amp__V1__DataReply *rpc_calls_data_reply(const struct h2c_result *r)
{
    ck_assert_int_eq(r->grpc_status, STATUS_OK);
    const uint8_t *out;
    size_t out_len;
    ck_assert_int_eq(h2c_message(r, &out, &out_len), 0);
    Amp__V1__DataReply *d = amp__v1__data_reply__unpack(NULL, out_len, out);
    ck_assert_ptr_nonnull(d);
    return d;
}

void rpc_calls_expect_reversed(const struct h2c_result *r, const uint8_t *data, size_t len)
{
    Amp__V1__DataReply *d = rpc_calls_data_reply(r);
    ck_assert_uint_eq(d->data.len, len);
    for (size_t i = 0; i < len; i++)
        ck_assert_uint_eq(d->data.data[i], data[len - 1 - i]);
    amp__v1__data_reply__free_unpacked(d, NULL);
}

uint64_t rpc_calls_staging_in_use(const char *sock_path)
{
    uint8_t req[GRPC_FRAME_HEADER];
    grpc_frame_header(req, 0);
    int fd = h2c_connect_unix(sock_path);
    ck_assert_int_ge(fd, 0);
    struct h2c *c = h2c_new();
    int32_t id = h2c_request(c, "/amp.v1.Amp/Status", NULL, req, sizeof req, true);
    ck_assert_int_eq(h2c_run_fd(c, fd, RPC_CALLS_IO_MS), 0);
    close(fd);
    const uint8_t *msg;
    size_t len;
    ck_assert_int_eq(h2c_message(h2c_result(c, id), &msg, &len), 0);
    Amp__V1__StatusReply *st = amp__v1__status_reply__unpack(NULL, len, msg);
    ck_assert_ptr_nonnull(st);
    uint64_t in_use = st->staging_bytes_in_use;
    amp__v1__status_reply__free_unpacked(st, NULL);
    h2c_free(c);
    return in_use;
}
