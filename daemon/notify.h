/* notify.h: telling the service manager how the daemon is doing.
 *
 * systemd's notify protocol without libsystemd: when $NOTIFY_SOCKET names
 * a Unix datagram socket (a path, or an abstract name written with a
 * leading '@'), each state ("READY=1", "STOPPING=1") goes there as one
 * datagram. Without $NOTIFY_SOCKET nothing is sent. Failures are reported
 * on stderr and otherwise ignored: the service works either way.
 */
#ifndef AMPD_NOTIFY_H
#define AMPD_NOTIFY_H

void notify_state(const char *state);

#endif
