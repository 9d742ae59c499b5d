/* SPDX-License-Identifier: MIT */
/* error.h: status mapping between gRPC, HTTP and AMP_E* codes (error.c). */
#ifndef AMP_CLIENT_ERROR_H
#define AMP_CLIENT_ERROR_H

/* The AMP_E* code for a nonzero gRPC status code. */
int error_from_grpc(int grpc_status);

/* The gRPC status a non-200 HTTP status stands for (gRPC's HTTP mapping). */
int error_grpc_from_http(int http_status);

/* Name of a gRPC status code ("INVALID_ARGUMENT"), for messages. */
const char *error_grpc_name(int grpc_status);

#endif
