/* SPDX-License-Identifier: MIT */
/* rpc_reflection.c: gRPC server reflection, so that grpcurl, grpcui or
 * Postman can call ampd with no .proto files at hand.
 *
 * grpc.reflection.v1.ServerReflection/ServerReflectionInfo and its older
 * name in grpc.reflection.v1alpha: one bidirectional stream, one response
 * per request, in order. The two packages' messages are the same field for
 * field, so both are served by this one handler with v1's protobuf-c code.
 * Files come from descriptor_set.h (protoc's output for the very .proto
 * files the daemon was built from); the services listed are the method
 * table's (rpc.c), so reflection shows exactly what the daemon answers.
 * A question with no answer (an unknown file or symbol, an extension:
 * ampd defines none) gets an error_response and the stream goes on; a
 * request that does not decode, or asks nothing, ends the call.
 */
#include "rpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "descriptor_set.h"
#include "grpc/reflection/v1/reflection.pb-c.h"
#include "grpc_frame.h"

typedef Grpc__Reflection__V1__ServerReflectionRequest rpc_reflection_request;
typedef Grpc__Reflection__V1__ServerReflectionResponse rpc_reflection_response;

/* Reply bytes a stream may leave queued before it stops reading requests:
 * a client that asks without reading holds about this much, no more. */
#define RPC_REFLECTION_UNSENT_MAX (256u * 1024)

/* --- answers ---------------------------------------------------------------- */

static void rpc_reflection_error(rpc_reflection_response *res,
                                 Grpc__Reflection__V1__ErrorResponse *err, enum status_code code,
                                 char *msg)
{
    err->error_code = (int32_t)code;
    err->error_message = msg;
    res->message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ERROR_RESPONSE;
    res->error_response = err;
}

/* Whether files[0..n) holds f. */
static int rpc_reflection_has(const ProtobufCBinaryData *files, size_t n,
                              const struct descriptor_file *f)
{
    for (size_t i = 0; i < n; i++)
        if (files[i].data == f->data)
            return 1;
    return 0;
}

/* f and every file it imports, directly or not (a client needs them all to
 * build f's types), f first, into files (room for every file in the set);
 * returns how many. The bytes are the set's own, not copies. */
static size_t rpc_reflection_closure(const struct descriptor_set *set,
                                     const struct descriptor_file *f, ProtobufCBinaryData *files)
{
    size_t n = 0;
    files[n++] = (ProtobufCBinaryData){ f->len, (uint8_t *)(uintptr_t)f->data };
    for (size_t at = 0; at < n; at++) {
        struct descriptor_file cur = { files[at].data, files[at].len }, dep;
        const char *name;
        size_t len;
        for (size_t i = 0; descriptor_file_dependency(&cur, i, &name, &len) == 0; i++) {
            if (descriptor_set_find_file(set, name, len, &dep) == 0 &&
                !rpc_reflection_has(files, n, &dep))
                files[n++] = (ProtobufCBinaryData){ dep.len, (uint8_t *)(uintptr_t)dep.data };
        }
    }
    return n;
}

/* The service names of the method table's paths ("/pkg.Service/Method"),
 * each once, into services (room for one per method), their strings in
 * buf (buf_len bytes); returns how many. */
static size_t rpc_reflection_services(Grpc__Reflection__V1__ServiceResponse *services,
                                      char *buf, size_t buf_len)
{
    size_t n = 0, used = 0;
    const struct rpc_method *m;
    for (size_t i = 0; (m = rpc_method_at(i)) != NULL; i++) {
        const char *end = strrchr(m->path, '/');
        size_t len = (size_t)(end - m->path) - 1;
        int seen = 0;
        for (size_t j = 0; j < n && !seen; j++)
            seen = strlen(services[j].name) == len && memcmp(services[j].name, m->path + 1, len) == 0;
        if (seen || used + len + 1 > buf_len)
            continue;
        char *name = buf + used;
        memcpy(name, m->path + 1, len);
        name[len] = '\0';
        used += len + 1;
        services[n] = (Grpc__Reflection__V1__ServiceResponse)GRPC__REFLECTION__V1__SERVICE_RESPONSE__INIT;
        services[n].name = name;
        n++;
    }
    return n;
}

/* Packs res and queues it on the call. Returns 0, or -1 when the call
 * failed (out of memory, or over --max-message-bytes: h2_call_send says so). */
static int rpc_reflection_send(struct rpc_call *rc, const rpc_reflection_response *res)
{
    size_t len = protobuf_c_message_get_packed_size(&res->base);
    uint8_t *buf = malloc(GRPC_FRAME_HEADER + len);
    if (!buf) {
        h2_call_fail(rc->h2, STATUS_RESOURCE_EXHAUSTED, "out of memory for a reflection reply");
        return -1;
    }
    protobuf_c_message_pack(&res->base, buf + GRPC_FRAME_HEADER);
    return h2_call_send(rc->h2, buf, len);
}

static int rpc_reflection_list(struct rpc_call *rc, rpc_reflection_response *res)
{
    size_t methods = 0, buf_len = 0;
    for (const struct rpc_method *m; (m = rpc_method_at(methods)) != NULL; methods++)
        buf_len += strlen(m->path) + 1;   /* a service's name is shorter than its paths */
    Grpc__Reflection__V1__ServiceResponse *services = calloc(methods, sizeof *services);
    Grpc__Reflection__V1__ServiceResponse **ptrs = calloc(methods, sizeof *ptrs);
    char *buf = malloc(buf_len);
    int rv = -1;
    if (!services || !ptrs || !buf) {
        h2_call_fail(rc->h2, STATUS_RESOURCE_EXHAUSTED, "out of memory for a reflection reply");
        goto out;
    }
    Grpc__Reflection__V1__ListServiceResponse list = GRPC__REFLECTION__V1__LIST_SERVICE_RESPONSE__INIT;
    list.n_service = rpc_reflection_services(services, buf, buf_len);
    for (size_t i = 0; i < list.n_service; i++)
        ptrs[i] = &services[i];
    list.service = ptrs;
    res->message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_LIST_SERVICES_RESPONSE;
    res->list_services_response = &list;
    rv = rpc_reflection_send(rc, res);
out:
    free(services);
    free(ptrs);
    free(buf);
    return rv;
}

/* A file and its imports; or NOT_FOUND, what being named in msg. */
static int rpc_reflection_file(struct rpc_call *rc, rpc_reflection_response *res,
                               const struct descriptor_file *f, const char *what)
{
    const struct descriptor_set *set = &descriptor_set_builtin;
    if (!f) {
        char msg[STATUS_MSG_MAX];
        Grpc__Reflection__V1__ErrorResponse err = GRPC__REFLECTION__V1__ERROR_RESPONSE__INIT;
        snprintf(msg, sizeof msg, "%s not found", what);
        rpc_reflection_error(res, &err, STATUS_NOT_FOUND, msg);
        return rpc_reflection_send(rc, res);
    }
    ProtobufCBinaryData *files = calloc(descriptor_set_files(set), sizeof *files);
    if (!files) {
        h2_call_fail(rc->h2, STATUS_RESOURCE_EXHAUSTED, "out of memory for a reflection reply");
        return -1;
    }
    Grpc__Reflection__V1__FileDescriptorResponse fd =
        GRPC__REFLECTION__V1__FILE_DESCRIPTOR_RESPONSE__INIT;
    fd.n_file_descriptor_proto = rpc_reflection_closure(set, f, files);
    fd.file_descriptor_proto = files;
    res->message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_FILE_DESCRIPTOR_RESPONSE;
    res->file_descriptor_response = &fd;
    int rv = rpc_reflection_send(rc, res);
    free(files);
    return rv;
}

/* all_extension_numbers_of_type: none, for a message that exists. */
static int rpc_reflection_extension_numbers(struct rpc_call *rc, rpc_reflection_response *res,
                                            char *type)
{
    struct descriptor_file f;
    if (descriptor_set_find_symbol(&descriptor_set_builtin, type, &f) != DESCRIPTOR_MESSAGE) {
        char msg[STATUS_MSG_MAX];
        Grpc__Reflection__V1__ErrorResponse err = GRPC__REFLECTION__V1__ERROR_RESPONSE__INIT;
        snprintf(msg, sizeof msg, "message type %s not found", type);
        rpc_reflection_error(res, &err, STATUS_NOT_FOUND, msg);
        return rpc_reflection_send(rc, res);
    }
    Grpc__Reflection__V1__ExtensionNumberResponse nums =
        GRPC__REFLECTION__V1__EXTENSION_NUMBER_RESPONSE__INIT;
    nums.base_type_name = type;
    res->message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ALL_EXTENSION_NUMBERS_RESPONSE;
    res->all_extension_numbers_response = &nums;
    return rpc_reflection_send(rc, res);
}

/* file_containing_extension: ampd's files declare no extensions. */
static int rpc_reflection_extension(struct rpc_call *rc, rpc_reflection_response *res,
                                    const Grpc__Reflection__V1__ExtensionRequest *ext)
{
    char msg[STATUS_MSG_MAX];
    Grpc__Reflection__V1__ErrorResponse err = GRPC__REFLECTION__V1__ERROR_RESPONSE__INIT;
    snprintf(msg, sizeof msg, "extension %d of %s not found", (int)ext->extension_number,
             ext->containing_type);
    rpc_reflection_error(res, &err, STATUS_NOT_FOUND, msg);
    return rpc_reflection_send(rc, res);
}

/* Answers req. Returns STATUS_OK (answered, or the call already failed),
 * or a status with err that fails the call. */
static enum status_code rpc_reflection_answer(struct rpc_call *rc, rpc_reflection_request *req,
                                              char *err, size_t errlen)
{
    const struct descriptor_set *set = &descriptor_set_builtin;
    rpc_reflection_response res = GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__INIT;
    res.valid_host = req->host;
    res.original_request = req;
    struct descriptor_file f;
    char what[STATUS_MSG_MAX];
    switch (req->message_request_case) {
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_LIST_SERVICES:
        rpc_reflection_list(rc, &res);
        break;
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_BY_FILENAME: {
        const char *name = req->file_by_filename;
        int found = descriptor_set_find_file(set, name, strlen(name), &f) == 0;
        snprintf(what, sizeof what, "file %s", name);
        rpc_reflection_file(rc, &res, found ? &f : NULL, what);
        break;
    }
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_SYMBOL: {
        const char *sym = req->file_containing_symbol;
        int found = descriptor_set_find_symbol(set, sym, &f) != DESCRIPTOR_NONE;
        snprintf(what, sizeof what, "symbol %s", sym);
        rpc_reflection_file(rc, &res, found ? &f : NULL, what);
        break;
    }
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_EXTENSION:
        rpc_reflection_extension(rc, &res, req->file_containing_extension);
        break;
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_ALL_EXTENSION_NUMBERS_OF_TYPE:
        rpc_reflection_extension_numbers(rc, &res, req->all_extension_numbers_of_type);
        break;
    default:
        snprintf(err, errlen, "the reflection request asks nothing (no message_request set)");
        return STATUS_INVALID_ARGUMENT;
    }
    return STATUS_OK;
}

/* --- the stream --------------------------------------------------------------- */

static enum status_code rpc_reflection_message(struct rpc_call *rc, const uint8_t *msg,
                                               size_t len, char *err, size_t errlen)
{
    if (h2_call_unsent(rc->h2) > RPC_REFLECTION_UNSENT_MAX) {
        h2_stream_pause(rc->h2);   /* redelivered once the client read (sent) */
        return STATUS_OK;
    }
    rpc_reflection_request *req = (rpc_reflection_request *)protobuf_c_message_unpack(
        &grpc__reflection__v1__server_reflection_request__descriptor, NULL, len, msg);
    if (!req) {
        /* As for any request: a server that cannot parse one says INTERNAL. */
        snprintf(err, errlen, "request is not a valid %s message",
                 grpc__reflection__v1__server_reflection_request__descriptor.name);
        return STATUS_INTERNAL;
    }
    enum status_code code = rpc_reflection_answer(rc, req, err, errlen);
    protobuf_c_message_free_unpacked(&req->base, NULL);
    return code;
}

static void rpc_reflection_end(struct rpc_call *rc)
{
    h2_call_finish(rc->h2);   /* once every answer is out */
}

static void rpc_reflection_sent(struct rpc_call *rc)
{
    if (h2_call_unsent(rc->h2) <= RPC_REFLECTION_UNSENT_MAX)
        h2_stream_resume(rc->h2);   /* a no-op unless paused */
}

static void rpc_reflection_closed(struct rpc_call *rc)
{
    (void)rc;   /* nothing outlives a request */
}

static void rpc_reflection_fail(struct rpc_call *rc, enum status_code code, const char *msg)
{
    h2_call_fail(rc->h2, code, msg);
}

const struct rpc_streaming rpc_reflection_method = {
    .message = rpc_reflection_message,
    .end = rpc_reflection_end,
    .sent = rpc_reflection_sent,
    .closed = rpc_reflection_closed,
    .fail = rpc_reflection_fail,
};
