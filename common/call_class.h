/* SPDX-License-Identifier: MIT */
/* call_class.h: the gRPC metadata a call sends to be scheduled (ampd(8)):
 * its priority and the longest it may wait in the daemon's queue. The
 * client writes them (amp_connect_opts), the daemon reads them (h2.c,
 * rpc.c); no I/O. Used by daemon and client alike.
 */
#ifndef AMP_CALL_CLASS_H
#define AMP_CALL_CLASS_H

#include <stddef.h>

#define CALL_CLASS_PRIORITY_HEADER "amp-priority"
#define CALL_CLASS_MAX_QUEUE_HEADER "amp-max-queue-time"   /* grpc_timeout.h's format */

/* The priorities, lowest first: their index is the daemon's enum
 * job_priority (job.h checks it). */
#define CALL_CLASS_PRIORITIES 3
#define CALL_CLASS_PRIORITY_NAMES { "low", "normal", "high" }

/* The static name of priority p (0..CALL_CLASS_PRIORITIES-1), "?" past. */
const char *call_class_priority_name(int p);

/* The priority named by the len bytes at v, or -1 for none of them. */
int call_class_priority_parse(const char *v, size_t len);

#endif
