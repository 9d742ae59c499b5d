/* SPDX-License-Identifier: MIT */
/* test_hostile_lying_stream_header.c: a Stream call whose header's
 * total_length does not match the bytes that follow: fewer (the client
 * half-closes early) or more (for a reverse step, which holds the whole
 * input on the device, and for a transform, which does not). Each is
 * answered INVALID_ARGUMENT naming header.total_length; the daemon serves
 * on and gives the staging and device memory back. And a data message cut
 * short once the stream takes input (its bytes go to staging in pieces as
 * they arrive, h2.h): INTERNAL, naming how much of it is missing. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amp.pb-c.h"
#include "check_run.h"
#include "grpc_frame.h"
#include "h2_client.h"
#include "hostile.h"
#include "status.h"

#define CHUNK 4096

static struct daemon_proc ampd;

/* Appends one StreamRequest (framed) to buf at *len. */
static void put(uint8_t *buf, size_t *len, const Amp__V1__StreamRequest *req)
{
    size_t n = protobuf_c_message_get_packed_size(&req->base);
    grpc_frame_header(buf + *len, n);
    protobuf_c_message_pack(&req->base, buf + *len + GRPC_FRAME_HEADER);
    *len += GRPC_FRAME_HEADER + n;
}

/* A Stream call body: a header with one step (reverse, or transform xor)
 * and total_length, then sent_bytes of data in CHUNK messages. Malloc'd. */
static uint8_t *stream_body(bool reverse, uint64_t total, size_t sent_bytes, size_t *len)
{
    uint8_t *buf = malloc(256 + sent_bytes + (sent_bytes / CHUNK + 1) * 16);
    ck_assert_ptr_nonnull(buf);
    *len = 0;
    Amp__V1__ReverseParams rp = AMP__V1__REVERSE_PARAMS__INIT;
    Amp__V1__TransformParams tp = AMP__V1__TRANSFORM_PARAMS__INIT;
    tp.op = AMP__V1__TRANSFORM_OP__TRANSFORM_OP_XOR;
    tp.value = 0x5a;
    Amp__V1__Step step = AMP__V1__STEP__INIT;
    if (reverse) {
        step.kind_case = AMP__V1__STEP__KIND_REVERSE;
        step.reverse = &rp;
    } else {
        step.kind_case = AMP__V1__STEP__KIND_TRANSFORM;
        step.transform = &tp;
    }
    Amp__V1__Step *steps[] = { &step };
    Amp__V1__JobHeader h = AMP__V1__JOB_HEADER__INIT;
    h.n_steps = 1;
    h.steps = steps;
    h.total_length = total;
    Amp__V1__StreamRequest req = AMP__V1__STREAM_REQUEST__INIT;
    req.msg_case = AMP__V1__STREAM_REQUEST__MSG_HEADER;
    req.header = &h;
    put(buf, len, &req);
    static uint8_t chunk[CHUNK];
    memset(chunk, 's', sizeof chunk);
    for (size_t off = 0; off < sent_bytes; off += CHUNK) {
        Amp__V1__StreamRequest d = AMP__V1__STREAM_REQUEST__INIT;
        d.msg_case = AMP__V1__STREAM_REQUEST__MSG_DATA;
        d.data.data = chunk;
        d.data.len = sent_bytes - off < CHUNK ? sent_bytes - off : CHUNK;
        put(buf, len, &d);
    }
    return buf;
}

struct mismatch {
    bool reverse;
    uint64_t total;
    size_t sent;
};

static const struct mismatch mismatches[] = {
    { true, 4 * CHUNK, 2 * CHUNK },        /* fewer than declared */
    { false, 4 * CHUNK, 2 * CHUNK },
    { true, 2 * CHUNK, 6 * CHUNK },        /* more than declared */
    { false, 2 * CHUNK, 6 * CHUNK },
    { true, 1, 64 * CHUNK },
};

#define NMISMATCH ((int)(sizeof mismatches / sizeof mismatches[0]))

START_TEST(total_length_mismatch_refused)
{
    static const char *const args[] = { "--max-job-memory", "67108864", NULL };
    long base = hostile_start(&ampd, args);
    int fd = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    struct h2c *c = h2c_new();
    int32_t ids[NMISMATCH];
    for (int i = 0; i < NMISMATCH; i++) {
        size_t len;
        uint8_t *body = stream_body(mismatches[i].reverse, mismatches[i].total,
                                    mismatches[i].sent, &len);
        ids[i] = h2c_request(c, "/amp.v1.Amp/Stream", NULL, body, len, true);
        free(body);
    }
    ck_assert_int_eq(h2c_run_fd(c, fd, HOSTILE_IO_MS), 0);
    for (int i = 0; i < NMISMATCH; i++) {
        const struct h2c_result *r = h2c_result(c, ids[i]);
        char m[H2C_MESSAGE_MAX];
        h2c_percent_decode(r->grpc_message, m, sizeof m);
        ck_assert_msg(r->grpc_status == STATUS_INVALID_ARGUMENT, "case %d: status %d: %s", i,
                      r->grpc_status, m);
        ck_assert_msg(strstr(m, "header.total_length") != NULL, "case %d: %s", i, m);
    }
    close(fd);
    h2c_free(c);
    ck_assert(hostile_wait_quiet(ampd.address, 1, HOSTILE_IO_MS));
    hostile_assert_served(ampd.address);
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

/* The daemon answered with at least one data reply: it takes input. */
static bool got_reply_data(struct h2c *c, void *arg)
{
    return h2c_result(c, *(const int32_t *)arg)->body_len > 0;
}

START_TEST(data_message_cut_short)
{
    static const char *const args[] = { "--chunk-bytes", "65536", NULL };
    long base = hostile_start(&ampd, args);
    int fd = hostile_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    struct h2c *c = h2c_new();
    /* A header (transform, length unknown) and one full 64 KiB chunk. */
    size_t len;
    uint8_t *body = stream_body(false, 0, 65536, &len);
    int32_t id = h2c_request_open(c, "/amp.v1.Amp/Stream", body, len);
    free(body);
    ck_assert_int_eq(h2c_run_until(c, fd, HOSTILE_IO_MS, got_reply_data, &id), 0);
    /* StreamRequest{data: 99996 bytes} declared (100000 with its tag and
     * length), 5000 of it sent, then the end. */
    uint8_t cut[GRPC_FRAME_HEADER + 5000];
    memset(cut, 'c', sizeof cut);
    grpc_frame_header(cut, 100000);
    uint8_t head[] = { 0x12, 0x9c, 0x8d, 0x06 };   /* field 2, varint 99996 */
    memcpy(cut + GRPC_FRAME_HEADER, head, sizeof head);
    ck_assert_int_eq(h2c_append(c, id, cut, sizeof cut, true), 0);
    ck_assert_int_eq(h2c_run_fd(c, fd, HOSTILE_IO_MS), 0);
    const struct h2c_result *r = h2c_result(c, id);
    char m[H2C_MESSAGE_MAX];
    h2c_percent_decode(r->grpc_message, m, sizeof m);
    ck_assert_msg(r->grpc_status == STATUS_INTERNAL, "status %d: %s", r->grpc_status, m);
    ck_assert_str_eq(m, "request stream ended inside a message (95000 bytes of it missing)");
    close(fd);
    h2c_free(c);
    ck_assert(hostile_wait_quiet(ampd.address, 1, HOSTILE_IO_MS));
    hostile_assert_served(ampd.address);
    hostile_assert_rss_back(&ampd, base);
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hostile_lying_stream_header");
    const TTest *const tests[] = {
        total_length_mismatch_refused,
        data_message_cut_short,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 60);
    return check_run(s, CK_FORK_GETENV);
}
