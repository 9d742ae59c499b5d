/* SPDX-License-Identifier: MIT */
/* metrics_deadline.h: a whole-request deadline for the metrics listener.
 *
 * libmicrohttpd's connection timeout is an idle timeout: every byte a
 * client trickles resets it, so a few slow connections could hold every
 * slot for as long as they liked and no scrape got in. Here each
 * connection gets a deadline when it opens and a fresh one each time a
 * request arrives whole: one exchange must be done within the deadline,
 * however its bytes are spaced. A thread of its own sleeps until the
 * earliest deadline and shuts down the sockets past theirs; libmicrohttpd
 * then sees the end of the stream and frees the slot. metrics.c wires it
 * in through MHD_OPTION_NOTIFY_CONNECTION.
 */
#ifndef AMPD_METRICS_DEADLINE_H
#define AMPD_METRICS_DEADLINE_H

#include <microhttpd.h>
#include <stdint.h>

struct metrics_deadline;

/* Starts the deadline thread; deadline_ms is one exchange's time. Returns
 * 0 with *out (freed by metrics_deadline_stop), or -1 (out of memory or
 * threads). */
int metrics_deadline_start(uint32_t deadline_ms, struct metrics_deadline **out);

/* Ends the thread and frees d. Call after MHD_stop_daemon(), which has
 * closed every connection d was told of. NULL is ignored. */
void metrics_deadline_stop(struct metrics_deadline *d);

/* MHD_OPTION_NOTIFY_CONNECTION's callback, cls being d: starts a
 * connection's clock, and forgets the connection when it closes. */
void metrics_deadline_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                             enum MHD_ConnectionNotificationCode code);

/* A request on conn arrived whole: its next one gets a fresh deadline. */
void metrics_deadline_renew(struct metrics_deadline *d, struct MHD_Connection *conn);

#endif
