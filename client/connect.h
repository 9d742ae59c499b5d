/* SPDX-License-Identifier: MIT */
/* connect.h: a connection's socket, opened within a time limit (connect.c). */
#ifndef AMP_CLIENT_CONNECT_H
#define AMP_CLIENT_CONNECT_H

#include "address.h"
#include "amp.h"

/* Connects to a within timeout_ms (> 0) and sets c->fd, non-blocking.
 * Returns 0, AMP_EADDR (the host does not resolve) or AMP_ECONNECT, with
 * c->message saying why (a timeout names the limit). */
int connect_open(amp_conn *c, const struct address *a, int timeout_ms);

/* Where the next of n choices starts: 0, 1, ..., n-1, 0, ... across every
 * caller in the process. Thread-safe. */
size_t connect_rotation(size_t n);

#endif
