/* SPDX-License-Identifier: MIT */
/* test_daemon_jobs.c: the daemon's side of jobs, over a real socket with
 * raw gRPC: pipelines (one StepResult per step; a histogram step passes its
 * input on; a fill ignores its input), placement by device string, errors
 * that only the device can find relayed to the client, ListDevices and the
 * Status counters. Kernel correctness is the kernel tests' business. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "amp.pb-c.h"
#include "daemon_proc.h"
#include "h2_client.h"
#include "status.h"

#define IO_TIMEOUT_MS 120000

static struct daemon_proc ampd;
static char message[H2C_MESSAGE_MAX];

static void setup(void)
{
    ck_assert_int_eq(daemon_start(&ampd, NULL), 0);
}

static void teardown(void)
{
    ck_assert_int_eq(daemon_stop(&ampd), 0);
}

/* One call on a new connection. Returns the status; the reply message (if
 * any) is unpacked with desc into *reply. */
static int call(const char *path, const ProtobufCMessage *req,
                const ProtobufCMessageDescriptor *desc, ProtobufCMessage **reply)
{
    size_t len = protobuf_c_message_get_packed_size(req);
    uint8_t *buf = malloc(len + 1);
    protobuf_c_message_pack(req, buf);
    int fd = h2c_connect_unix(ampd.sock_path);
    ck_assert_int_ge(fd, 0);
    struct h2c *c = h2c_new();
    int32_t id = h2c_call(c, path, buf, len);
    ck_assert_int_eq(h2c_run_fd(c, fd, IO_TIMEOUT_MS), 0);
    const struct h2c_result *r = h2c_result(c, id);
    h2c_percent_decode(r->grpc_message, message, sizeof(message));
    int status = r->grpc_status;
    if (reply) {
        *reply = NULL;
        const uint8_t *m;
        if (status == 0 && h2c_message(r, &m, &len) == 0)
            *reply = protobuf_c_message_unpack(desc, NULL, len, m);
    }
    h2c_free(c);
    close(fd);
    free(buf);
    return status;
}

static Amp__V1__ListDevicesReply *list_devices(void)
{
    Amp__V1__ListDevicesRequest req = AMP__V1__LIST_DEVICES_REQUEST__INIT;
    ProtobufCMessage *reply;
    ck_assert_int_eq(call("/amp.v1.Amp/ListDevices", &req.base,
                          &amp__v1__list_devices_reply__descriptor, &reply), 0);
    return (Amp__V1__ListDevicesReply *)reply;
}

static int reverse_on(const char *device, char *ran_on, size_t ran_len)
{
    Amp__V1__ReverseRequest req = AMP__V1__REVERSE_REQUEST__INIT;
    req.data.data = (uint8_t *)"xyz";
    req.data.len = 3;
    req.device = (char *)device;
    ProtobufCMessage *m;
    int st = call("/amp.v1.Amp/Reverse", &req.base, &amp__v1__data_reply__descriptor, &m);
    if (st == 0) {
        Amp__V1__DataReply *r = (Amp__V1__DataReply *)m;
        ck_assert_uint_eq(r->data.len, 3);
        ck_assert(memcmp(r->data.data, "zyx", 3) == 0);
        snprintf(ran_on, ran_len, "%s", r->device);
        protobuf_c_message_free_unpacked(m, NULL);
    }
    return st;
}

START_TEST(pipeline_results_per_step)
{
    Amp__V1__TransformParams add = AMP__V1__TRANSFORM_PARAMS__INIT;
    add.op = AMP__V1__TRANSFORM_OP__TRANSFORM_OP_ADD;
    add.value = 1;
    Amp__V1__HistogramParams hist = AMP__V1__HISTOGRAM_PARAMS__INIT;
    Amp__V1__ReverseParams rev = AMP__V1__REVERSE_PARAMS__INIT;
    Amp__V1__Step s0 = AMP__V1__STEP__INIT, s1 = AMP__V1__STEP__INIT, s2 = AMP__V1__STEP__INIT;
    s0.kind_case = AMP__V1__STEP__KIND_TRANSFORM;
    s0.transform = &add;
    s1.kind_case = AMP__V1__STEP__KIND_HISTOGRAM;
    s1.histogram = &hist;
    s2.kind_case = AMP__V1__STEP__KIND_REVERSE;
    s2.reverse = &rev;
    Amp__V1__Step *steps[] = { &s0, &s1, &s2 };
    Amp__V1__PipelineRequest req = AMP__V1__PIPELINE_REQUEST__INIT;
    req.data.data = (uint8_t *)"abcdeff";
    req.data.len = 7;
    req.steps = steps;
    req.n_steps = 3;
    ProtobufCMessage *m;
    ck_assert_int_eq(call("/amp.v1.Amp/Pipeline", &req.base, &amp__v1__pipeline_reply__descriptor, &m), 0);
    Amp__V1__PipelineReply *r = (Amp__V1__PipelineReply *)m;
    ck_assert_uint_eq(r->n_results, 3);
    ck_assert_uint_eq(r->results[0]->data.len, 7);
    ck_assert(memcmp(r->results[0]->data.data, "bcdefgg", 7) == 0);
    Amp__V1__Histogram *h = r->results[1]->histogram;
    ck_assert_ptr_nonnull(h);
    ck_assert_uint_eq(h->n_counts, 256);
    ck_assert_uint_eq(h->counts['b'], 1);
    ck_assert_uint_eq(h->counts['g'], 2);
    ck_assert_uint_eq(h->counts['a'], 0);
    ck_assert_uint_eq(r->results[1]->data.len, 0);
    /* The reverse after the histogram sees the histogram's input. */
    ck_assert_uint_eq(r->results[2]->data.len, 7);
    ck_assert(memcmp(r->results[2]->data.data, "ggfedcb", 7) == 0);
    ck_assert_str_ne(r->device, "");
    protobuf_c_message_free_unpacked(m, NULL);
}
END_TEST

START_TEST(pipeline_fill_ignores_input)
{
    Amp__V1__FillParams fp = AMP__V1__FILL_PARAMS__INIT;
    fp.type = AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_UINT32;
    fp.count = 3;
    fp.start = 1;
    fp.step = 1;
    Amp__V1__ReverseParams rev = AMP__V1__REVERSE_PARAMS__INIT;
    Amp__V1__Step s0 = AMP__V1__STEP__INIT, s1 = AMP__V1__STEP__INIT;
    s0.kind_case = AMP__V1__STEP__KIND_FILL;
    s0.fill = &fp;
    s1.kind_case = AMP__V1__STEP__KIND_REVERSE;
    s1.reverse = &rev;
    Amp__V1__Step *steps[] = { &s0, &s1 };
    Amp__V1__PipelineRequest req = AMP__V1__PIPELINE_REQUEST__INIT;
    req.data.data = (uint8_t *)"ignored";
    req.data.len = 7;
    req.steps = steps;
    req.n_steps = 2;
    ProtobufCMessage *m;
    ck_assert_int_eq(call("/amp.v1.Amp/Pipeline", &req.base, &amp__v1__pipeline_reply__descriptor, &m), 0);
    Amp__V1__PipelineReply *r = (Amp__V1__PipelineReply *)m;
    static const uint8_t filled[12] = { 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0 };
    ck_assert_uint_eq(r->results[0]->data.len, 12);
    ck_assert(memcmp(r->results[0]->data.data, filled, 12) == 0);
    ck_assert_uint_eq(r->results[1]->data.len, 12);
    for (int i = 0; i < 12; i++)
        ck_assert_uint_eq(r->results[1]->data.data[i], filled[11 - i]);
    protobuf_c_message_free_unpacked(m, NULL);
}
END_TEST

START_TEST(list_devices_one_default)
{
    Amp__V1__ListDevicesReply *r = list_devices();
    ck_assert_uint_ge(r->n_devices, 1);
    int defaults = 0;
    for (size_t i = 0; i < r->n_devices; i++) {
        ck_assert_uint_eq(r->devices[i]->index, i);
        ck_assert_str_ne(r->devices[i]->name, "");
        defaults += r->devices[i]->is_default;
    }
    ck_assert_int_eq(defaults, 1);
    protobuf_c_message_free_unpacked(&r->base, NULL);
}
END_TEST

START_TEST(placement)
{
    Amp__V1__ListDevicesReply *devs = list_devices();
    bool has_gpu = false, has_cpu = false;
    for (size_t i = 0; i < devs->n_devices; i++) {
        has_gpu |= strcmp(devs->devices[i]->type, "gpu") == 0;
        has_cpu |= strcmp(devs->devices[i]->type, "cpu") == 0;
    }
    char ran[256];
    /* An index names that device; the reply says which ran the job. */
    ck_assert_int_eq(reverse_on("0", ran, sizeof(ran)), 0);
    ck_assert(strncmp(ran, "0", 1) == 0);
    ck_assert_int_eq(reverse_on("", ran, sizeof(ran)), 0);
    char idx[16];
    snprintf(idx, sizeof(idx), "%zu", devs->n_devices);
    ck_assert_int_eq(reverse_on(idx, ran, sizeof(ran)), STATUS_INVALID_ARGUMENT);
    char text[64];
    snprintf(text, sizeof(text), "device: no device matches \"%zu\"", devs->n_devices);
    ck_assert_str_eq(message, text);
    ck_assert_int_eq(reverse_on("tpu", ran, sizeof(ran)), STATUS_INVALID_ARGUMENT);
    ck_assert_str_eq(message, "device: no device matches \"tpu\"");
    ck_assert_int_eq(reverse_on("gpu", ran, sizeof(ran)), has_gpu ? 0 : STATUS_UNAVAILABLE);
    if (!has_gpu)
        ck_assert_str_eq(message, "no gpu device");
    ck_assert_int_eq(reverse_on("cpu", ran, sizeof(ran)), has_cpu ? 0 : STATUS_UNAVAILABLE);
    protobuf_c_message_free_unpacked(&devs->base, NULL);
}
END_TEST

START_TEST(device_errors_relayed_and_counted)
{
    Amp__V1__ListDevicesReply *devs = list_devices();
    uint64_t max_wg = devs->devices[0]->max_work_group_size;
    protobuf_c_message_free_unpacked(&devs->base, NULL);
    /* A tile over the device's work-group size: only dev_run knows. */
    Amp__V1__FillParams fp = AMP__V1__FILL_PARAMS__INIT;
    fp.type = AMP__V1__ELEMENT_TYPE__ELEMENT_TYPE_INT32;
    fp.count = 100;
    fp.tile = (uint32_t)max_wg + 1;
    Amp__V1__FillRequest req = AMP__V1__FILL_REQUEST__INIT;
    req.params = &fp;
    req.device = "0";
    ck_assert_int_eq(call("/amp.v1.Amp/Fill", &req.base, NULL, NULL), STATUS_INVALID_ARGUMENT);
    ck_assert_str_ne(message, "");
    char ran[256];
    ck_assert_int_eq(reverse_on("0", ran, sizeof(ran)), 0);

    /* Each call() above had a connection of its own: with several I/O
     * loops, the one that served the last may not have seen it close yet
     * when another loop answers Status, so ask until only this one is left. */
    Amp__V1__StatusRequest sreq = AMP__V1__STATUS_REQUEST__INIT;
    ProtobufCMessage *m = NULL;
    Amp__V1__StatusReply *st = NULL;
    for (int tries = 0; tries < 100; tries++) {
        if (m)
            protobuf_c_message_free_unpacked(m, NULL);
        ck_assert_int_eq(
            call("/amp.v1.Amp/Status", &sreq.base, &amp__v1__status_reply__descriptor, &m), 0);
        st = (Amp__V1__StatusReply *)m;
        if (st->connections == 1)
            break;
        usleep(20 * 1000);
    }
    ck_assert_uint_eq(st->jobs_in_flight, 0);
    ck_assert_uint_ge(st->jobs_completed, 1);
    ck_assert_uint_ge(st->jobs_failed, 1);
    ck_assert_uint_eq(st->connections, 1);
    ck_assert_str_eq(st->version, AMP_VERSION);
    protobuf_c_message_free_unpacked(m, NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("daemon_jobs");
    const TTest *const tests[] = {
        pipeline_results_per_step,
        pipeline_fill_ignores_input,
        list_devices_one_default,
        placement,
        device_errors_relayed_and_counted,
        NULL,
    };
    TCase *tc = check_run_case(s, "daemon", tests);
    tcase_set_timeout(tc, 600);
    tcase_add_checked_fixture(tc, setup, teardown);
    return check_run(s, CK_FORK_GETENV);
}
