/* SPDX-License-Identifier: MIT */
/* error.c: the library's error vocabulary: amp_strerror(), amp_error_name()
 * and the mapping from gRPC and HTTP statuses to AMP_E* codes, all read
 * from amp.h's AMP_ERROR_MAP. */
#include "error.h"

#include "amp.h"
#include "grpc_status.h"

/* gRPC status codes, from the list the daemon uses too. */
enum {
#define ERROR_GRPC_ENUM_(name, value) GRPC_##name = value,
    GRPC_STATUS_MAP(ERROR_GRPC_ENUM_)
#undef ERROR_GRPC_ENUM_
    GRPC_STATUS_COUNT
};

static const char *const error_grpc_names[GRPC_STATUS_COUNT] = {
#define ERROR_GRPC_NAME_(name, value) [value] = #name,
    GRPC_STATUS_MAP(ERROR_GRPC_NAME_)
#undef ERROR_GRPC_NAME_
};

const char *error_grpc_name(int grpc_status)
{
    if (grpc_status < 0 || grpc_status >= GRPC_STATUS_COUNT)
        return "UNKNOWN";
    return error_grpc_names[grpc_status];
}

const char *amp_status_code_name(int code)
{
    return error_grpc_name(code);
}

int error_from_grpc(int grpc_status)
{
    if (grpc_status == GRPC_OK)
        return AMP_OK;
#define ERROR_FROM_GRPC_(name, code, grpc, words) \
    if (grpc >= 0 && grpc_status == grpc)         \
        return code;
    AMP_ERROR_MAP(ERROR_FROM_GRPC_)
#undef ERROR_FROM_GRPC_
    return AMP_EUNKNOWN;   /* gRPC: a status a client does not know counts as UNKNOWN */
}

int error_grpc_from_http(int http_status)
{
    switch (http_status) {
    case 400: return GRPC_INTERNAL;
    case 401: return GRPC_UNAUTHENTICATED;
    case 403: return GRPC_PERMISSION_DENIED;
    case 404: return GRPC_UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504: return GRPC_UNAVAILABLE;
    default: return GRPC_UNKNOWN;
    }
}

const char *amp_strerror(int code)
{
    switch (code) {
    case AMP_OK: return "success";
#define ERROR_WORDS_(name, code, grpc, words) \
    case code: return words;
    AMP_ERROR_MAP(ERROR_WORDS_)
#undef ERROR_WORDS_
    default: return "unrecognised error code";
    }
}

const char *amp_error_name(int code)
{
    switch (code) {
    case AMP_OK: return "AMP_OK";
#define ERROR_NAME_(name, code, grpc, words) \
    case code: return "AMP_" #name;
    AMP_ERROR_MAP(ERROR_NAME_)
#undef ERROR_NAME_
    default: return "AMP_E?";
    }
}
