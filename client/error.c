/* error.c: the library's error vocabulary: amp_strerror() and the mapping
 * from gRPC and HTTP statuses to AMP_E* codes. */
#include "error.h"

#include "amp.h"

/* gRPC status codes (grpc/doc/statuscodes.md). */
enum {
    GRPC_OK = 0,
    GRPC_CANCELLED = 1,
    GRPC_UNKNOWN = 2,
    GRPC_INVALID_ARGUMENT = 3,
    GRPC_DEADLINE_EXCEEDED = 4,
    GRPC_NOT_FOUND = 5,
    GRPC_ALREADY_EXISTS = 6,
    GRPC_PERMISSION_DENIED = 7,
    GRPC_RESOURCE_EXHAUSTED = 8,
    GRPC_FAILED_PRECONDITION = 9,
    GRPC_ABORTED = 10,
    GRPC_OUT_OF_RANGE = 11,
    GRPC_UNIMPLEMENTED = 12,
    GRPC_INTERNAL = 13,
    GRPC_UNAVAILABLE = 14,
    GRPC_DATA_LOSS = 15,
    GRPC_UNAUTHENTICATED = 16,
    GRPC_STATUS_COUNT
};

static const char *const error_grpc_names[GRPC_STATUS_COUNT] = {
    [GRPC_OK] = "OK",
    [GRPC_CANCELLED] = "CANCELLED",
    [GRPC_UNKNOWN] = "UNKNOWN",
    [GRPC_INVALID_ARGUMENT] = "INVALID_ARGUMENT",
    [GRPC_DEADLINE_EXCEEDED] = "DEADLINE_EXCEEDED",
    [GRPC_NOT_FOUND] = "NOT_FOUND",
    [GRPC_ALREADY_EXISTS] = "ALREADY_EXISTS",
    [GRPC_PERMISSION_DENIED] = "PERMISSION_DENIED",
    [GRPC_RESOURCE_EXHAUSTED] = "RESOURCE_EXHAUSTED",
    [GRPC_FAILED_PRECONDITION] = "FAILED_PRECONDITION",
    [GRPC_ABORTED] = "ABORTED",
    [GRPC_OUT_OF_RANGE] = "OUT_OF_RANGE",
    [GRPC_UNIMPLEMENTED] = "UNIMPLEMENTED",
    [GRPC_INTERNAL] = "INTERNAL",
    [GRPC_UNAVAILABLE] = "UNAVAILABLE",
    [GRPC_DATA_LOSS] = "DATA_LOSS",
    [GRPC_UNAUTHENTICATED] = "UNAUTHENTICATED",
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
    switch (grpc_status) {
    case GRPC_OK: return AMP_OK;
    case GRPC_CANCELLED: return AMP_ECANCELLED;
    case GRPC_INVALID_ARGUMENT:
    case GRPC_OUT_OF_RANGE:          /* a region slice past its end */
    case GRPC_FAILED_PRECONDITION: return AMP_EINVAL;
    case GRPC_DEADLINE_EXCEEDED: return AMP_EDEADLINE;
    case GRPC_NOT_FOUND: return AMP_ENOTFOUND;
    case GRPC_RESOURCE_EXHAUSTED: return AMP_EEXHAUSTED;
    case GRPC_UNIMPLEMENTED: return AMP_EUNIMPL;
    case GRPC_INTERNAL: return AMP_EINTERNAL;
    case GRPC_UNAVAILABLE: return AMP_EUNAVAIL;
    default: return AMP_EUNKNOWN;
    }
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
    case AMP_EINVAL: return "invalid argument";
    case AMP_ENOMEM: return "out of memory";
    case AMP_EADDR: return "bad or unresolvable address";
    case AMP_ECONNECT: return "cannot connect to the daemon";
    case AMP_EIO: return "connection to the daemon broke";
    case AMP_EPROTO: return "protocol error (HTTP/2 or gRPC)";
    case AMP_ECANCELLED: return "cancelled";
    case AMP_EDEADLINE: return "deadline exceeded";
    case AMP_EEXHAUSTED: return "resource exhausted";
    case AMP_EUNIMPL: return "not implemented by the daemon";
    case AMP_EUNAVAIL: return "no device available";
    case AMP_EINTERNAL: return "internal error in the daemon";
    case AMP_EUNKNOWN: return "unknown error from the daemon";
    case AMP_ENOTFOUND: return "not found";
    case AMP_ETLS: return "TLS handshake with the daemon failed";
    default: return "unrecognised error code";
    }
}
