/* SPDX-License-Identifier: MIT */
/* test_stream_mid_frame_end.c: a stream that ends while the socket's
 * reader thread is filling its staging buffer (daemon/listen.c,
 * listen_sock_read_settle). One I/O loop, two connections on it, so a
 * large DATA frame's payload goes to the reader; the client sends 300 KiB
 * of a 1 MiB frame, its deadline passes, the daemon answers
 * DEADLINE_EXCEEDED and gives the buffer back. The bytes the reader had
 * taken are kept for the connection, the rest of the frame follows, and a
 * Reverse call on the same connection behind it is answered, right: the
 * connection's bytes stayed in order. The daemon serves on and exits
 * clean (under ASan: nothing touched after it was freed). */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amp.pb-c.h"
#include "check_run.h"
#include "grpc_frame.h"
#include "h2_client.h"
#include "hostile.h"
#include "rpc_calls.h"
#include "status.h"
#include "stream_msg.h"

#define DATA_LEN ((size_t)1 << 20)        /* the data field of the one data message */
#define FIRST_PART (300 * 1024)          /* sent before the deadline */
#define REVERSE_LEN 3000

static struct daemon_proc ampd;

struct two_ids {
    int32_t a, b;
};

static bool both_closed(struct h2c *c, void *arg)
{
    const struct two_ids *ids = arg;
    return h2c_result(c, ids->a)->closed && h2c_result(c, ids->b)->closed;
}

START_TEST(deadline_in_the_middle_of_a_frame)
{
    static const char *const args[] = { "--io-threads", "1", NULL };
    hostile_start(&ampd, args);
    int other = hostile_connect_unix(ampd.sock_path);   /* shares the one loop */
    int fd = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(other, 0);
    ck_assert_int_ge(fd, 0);
    struct h2c *c = h2c_new();

    size_t head_len;
    uint8_t *head = stream_histogram_header(&head_len);
    h2c_set_timeout(c, "500m");
    int32_t stream = h2c_request_open(c, "/amp.v1.Amp/Stream", head, head_len);
    h2c_set_timeout(c, NULL);
    free(head);
    ck_assert_int_gt(stream, 0);

    /* One DATA frame: StreamRequest{data: DATA_LEN bytes}, framed. */
    uint8_t field[] = { 0x12, 0x80, 0x80, 0x40 };   /* field 2, varint 1 MiB */
    size_t msg_len = sizeof field + DATA_LEN, payload = GRPC_FRAME_HEADER + msg_len;
    ck_assert_int_eq(h2c_run_until(c, fd, HOSTILE_IO_MS, h2c_frame_allowed, &payload), 0);
    uint8_t *frame = malloc(9 + payload);
    ck_assert_ptr_nonnull(frame);
    size_t hd = hostile_frame(frame, (uint32_t)payload, HOSTILE_DATA, 0, (uint32_t)stream);
    grpc_frame_header(frame + hd, msg_len);
    memcpy(frame + hd + GRPC_FRAME_HEADER, field, sizeof field);
    memset(frame + hd + GRPC_FRAME_HEADER + sizeof field, 'd', DATA_LEN);
    ck_assert_int_eq(hostile_send(fd, frame, hd + FIRST_PART), 0);
    hostile_sleep_ms(1500);   /* the deadline passes: the stream ends mid-frame */
    ck_assert_int_eq(hostile_send(fd, frame + hd + FIRST_PART, payload - FIRST_PART), 0);
    free(frame);

    uint8_t data[REVERSE_LEN];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 7);
    struct two_ids ids = { stream, rpc_calls_reverse(c, data, sizeof data) };
    ck_assert_int_eq(h2c_run_until(c, fd, HOSTILE_IO_MS, both_closed, &ids), 0);
    ck_assert_int_eq(h2c_result(c, ids.a)->grpc_status, STATUS_DEADLINE_EXCEEDED);
    rpc_calls_expect_reversed(h2c_result(c, ids.b), data, sizeof data);

    close(fd);
    close(other);
    h2c_free(c);
    hostile_assert_served(ampd.address);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream_mid_frame_end");
    const TTest *const tests[] = { deadline_in_the_middle_of_a_frame, NULL };
    check_run_case(s, "settle", tests);
    return check_run(s, CK_FORK_GETENV);
}
