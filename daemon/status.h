/* status.h: gRPC status codes, the one error vocabulary of the daemon.
 *
 * Every layer that can refuse a request (decoding, validation, the device
 * runner) reports one of these plus a human message; the gRPC layer turns
 * them into grpc-status / grpc-message trailers.
 */
#ifndef AMPD_STATUS_H
#define AMPD_STATUS_H

enum status_code {
    STATUS_OK = 0,
    STATUS_CANCELLED = 1,
    STATUS_UNKNOWN = 2,
    STATUS_INVALID_ARGUMENT = 3,
    STATUS_DEADLINE_EXCEEDED = 4,
    STATUS_NOT_FOUND = 5,
    STATUS_RESOURCE_EXHAUSTED = 8,
    STATUS_FAILED_PRECONDITION = 9,
    STATUS_UNIMPLEMENTED = 12,
    STATUS_INTERNAL = 13,
    STATUS_UNAVAILABLE = 14,
};

/* Longest message kept with a status; longer ones are truncated. */
#define STATUS_MSG_MAX 256

#endif
