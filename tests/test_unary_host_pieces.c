/* SPDX-License-Identifier: MIT */
/* test_unary_host_pieces.c: a unary request whose bulk field finds no
 * free pinned run is still taken in pieces, into host memory
 * (daemon/rpc_bulk_rx.c), so that the socket's reader thread fills it
 * while the I/O loop serves the other connections (daemon/listen.c). One
 * I/O loop, two connections on it, a staging pool too small for any run
 * of the 1 MiB field; the request goes in one DATA frame:
 *   - sent in two parts: between them the daemon has a reader thread
 *     (read whole, as before, it made none) and no staging memory in use;
 *     the reply is the CPU's add, byte for byte;
 *   - its deadline passes between the parts: DEADLINE_EXCEEDED, and a
 *     Reverse call behind it on the same connection is answered right
 *     (the bytes the reader took stayed in order).
 * The daemon serves on and exits clean (under ASan: nothing leaked or
 * touched after it was freed). */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amp.pb-c.h"
#include "check_run.h"
#include "grpc_frame.h"
#include "h2_client.h"
#include "hostile.h"
#include "proc_thread.h"
#include "rpc_calls.h"
#include "status.h"

#define DATA_LEN ((size_t)1 << 20)   /* the data field */
#define FIRST_PART (300 * 1024)      /* sent before the pause */
#define ADD_VALUE 7
#define REVERSE_LEN 3000

static struct daemon_proc ampd;

/* Staging buffers of 64 KiB, four of them: a run is at most three, so the
 * 1 MiB field never gets one. */
static const char *const args[] = { "--io-threads", "1", "--chunk-bytes", "65536",
                                    "--staging-bytes", "262144", NULL };

static bool closed(struct h2c *c, void *arg)
{
    const int32_t *ids = arg;
    for (; *ids; ids++)
        if (!h2c_result(c, *ids)->closed)
            return false;
    return true;
}

/* A Transform (add ADD_VALUE) of data as one DATA frame of stream id:
 * frame header, gRPC prefix, message; *len its bytes. The client's
 * session ends the stream after it (h2c_append), so that it sees the
 * stream close. */
static uint8_t *transform_frame(const uint8_t *data, int32_t id, size_t *len)
{
    Amp__V1__TransformParams p = AMP__V1__TRANSFORM_PARAMS__INIT;
    p.op = AMP__V1__TRANSFORM_OP__TRANSFORM_OP_ADD;
    p.value = ADD_VALUE;
    Amp__V1__TransformRequest req = AMP__V1__TRANSFORM_REQUEST__INIT;
    req.data.data = (uint8_t *)(uintptr_t)data;
    req.data.len = DATA_LEN;
    req.params = &p;
    size_t msg_len = protobuf_c_message_get_packed_size(&req.base);
    size_t payload = GRPC_FRAME_HEADER + msg_len;
    uint8_t *frame = malloc(9 + payload);
    ck_assert_ptr_nonnull(frame);
    size_t hd = hostile_frame(frame, (uint32_t)payload, HOSTILE_DATA, 0, (uint32_t)id);
    grpc_frame_header(frame + hd, msg_len);
    protobuf_c_message_pack(&req.base, frame + hd + GRPC_FRAME_HEADER);
    *len = hd + payload;
    return frame;
}

/* Opens a Transform call on c (its timeout: timeout, or none) and sends
 * its frame's first FIRST_PART bytes; returns the call's id, the frame in
 * *frame (*len bytes). */
static int32_t transform_begin(struct h2c *c, int fd, const uint8_t *data, const char *timeout,
                               uint8_t **frame, size_t *len)
{
    h2c_set_timeout(c, timeout);
    int32_t id = h2c_request_open(c, "/amp.v1.Amp/Transform", NULL, 0);
    h2c_set_timeout(c, NULL);
    ck_assert_int_gt(id, 0);
    *frame = transform_frame(data, id, len);
    size_t want = *len - 9;
    ck_assert_int_eq(h2c_run_until(c, fd, HOSTILE_IO_MS, h2c_frame_allowed, &want), 0);
    ck_assert_int_eq(hostile_send(fd, *frame, FIRST_PART), 0);
    return id;
}

static uint8_t *pattern(void)
{
    uint8_t *data = malloc(DATA_LEN);
    ck_assert_ptr_nonnull(data);
    for (size_t i = 0; i < DATA_LEN; i++)
        data[i] = (uint8_t)(i * 31 + i / 4099);
    return data;
}

/* Closes the two connections and frees the rest; the daemon serves on
 * and exits clean. */
static void finish(struct h2c *c, const int fds[2], uint8_t *frame, uint8_t *data)
{
    free(frame);
    free(data);
    close(fds[0]);
    close(fds[1]);
    h2c_free(c);
    hostile_assert_served(ampd.address);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}

START_TEST(field_filled_by_the_reader)
{
    hostile_start(&ampd, args);
    int other = hostile_connect_unix(ampd.sock_path);   /* shares the one loop */
    int fd = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(other, 0);
    ck_assert_int_ge(fd, 0);
    ck_assert(!proc_thread_find(ampd.pid, "ampd-reader") != 0);
    uint8_t *data = pattern(), *frame;
    size_t len;
    struct h2c *c = h2c_new();
    int32_t id = transform_begin(c, fd, data, NULL, &frame, &len);
    bool reader = false;
    for (int i = 0; i < 100 && !reader; i++) {
        hostile_sleep_ms(20);
        reader = proc_thread_find(ampd.pid, "ampd-reader") != 0;
    }
    ck_assert_msg(reader, "no reader thread took the request's field");
    ck_assert_uint_eq(rpc_calls_staging_in_use(ampd.sock_path), 0);
    ck_assert_int_eq(hostile_send(fd, frame + FIRST_PART, len - FIRST_PART), 0);
    ck_assert_int_eq(h2c_append(c, id, NULL, 0, true), 0);
    int32_t ids[] = { id, 0 };
    ck_assert_int_eq(h2c_run_until(c, fd, HOSTILE_IO_MS, closed, ids), 0);

    Amp__V1__DataReply *resp = rpc_calls_data_reply(h2c_result(c, id));
    ck_assert_uint_eq(resp->data.len, DATA_LEN);
    for (size_t i = 0; i < DATA_LEN; i++)
        ck_assert_uint_eq(resp->data.data[i], (uint8_t)(data[i] + ADD_VALUE));
    amp__v1__data_reply__free_unpacked(resp, NULL);

    finish(c, (int[]){fd, other}, frame, data);
}
END_TEST

START_TEST(deadline_while_the_reader_fills_it)
{
    hostile_start(&ampd, args);
    int other = hostile_connect_unix(ampd.sock_path);
    int fd = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(other, 0);
    ck_assert_int_ge(fd, 0);
    uint8_t *data = pattern(), *frame;
    size_t len;
    struct h2c *c = h2c_new();
    int32_t id = transform_begin(c, fd, data, "500m", &frame, &len);
    hostile_sleep_ms(1500);   /* the deadline passes: the call ends mid-field */
    ck_assert_int_eq(hostile_send(fd, frame + FIRST_PART, len - FIRST_PART), 0);

    uint8_t rev[REVERSE_LEN];
    for (size_t i = 0; i < sizeof rev; i++)
        rev[i] = (uint8_t)(i * 7);
    int32_t ids[] = { id, rpc_calls_reverse(c, rev, sizeof rev), 0 };
    ck_assert_int_eq(h2c_run_until(c, fd, HOSTILE_IO_MS, closed, ids), 0);
    ck_assert_int_eq(h2c_result(c, ids[0])->grpc_status, STATUS_DEADLINE_EXCEEDED);
    rpc_calls_expect_reversed(h2c_result(c, ids[1]), rev, sizeof rev);

    finish(c, (int[]){fd, other}, frame, data);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("unary_host_pieces");
    const TTest *const tests[] = { field_filled_by_the_reader, deadline_while_the_reader_fills_it,
                                   NULL };
    check_run_case(s, "host_pieces", tests);
    return check_run(s, CK_FORK_GETENV);
}
