/* SPDX-License-Identifier: MIT */
/* grpc_status.h: gRPC's status codes (grpc/doc/statuscodes.md), one list
 * for both sides of the wire: the daemon's enum status_code (status.h)
 * and the client library's mapping to AMP_E* codes (client/error.c)
 * expand from it. XX(name, value), in order. */
#ifndef AMP_GRPC_STATUS_H
#define AMP_GRPC_STATUS_H

#define GRPC_STATUS_MAP(XX)          \
    XX(OK, 0)                        \
    XX(CANCELLED, 1)                 \
    XX(UNKNOWN, 2)                   \
    XX(INVALID_ARGUMENT, 3)          \
    XX(DEADLINE_EXCEEDED, 4)         \
    XX(NOT_FOUND, 5)                 \
    XX(ALREADY_EXISTS, 6)            \
    XX(PERMISSION_DENIED, 7)         \
    XX(RESOURCE_EXHAUSTED, 8)        \
    XX(FAILED_PRECONDITION, 9)       \
    XX(ABORTED, 10)                  \
    XX(OUT_OF_RANGE, 11)             \
    XX(UNIMPLEMENTED, 12)            \
    XX(INTERNAL, 13)                 \
    XX(UNAVAILABLE, 14)              \
    XX(DATA_LOSS, 15)                \
    XX(UNAUTHENTICATED, 16)

#endif
