/* SPDX-License-Identifier: MIT */
/* done_efd.h: a bulk thread's done() callback for tests (sock_writer,
 * sock_reader): each call counts one into an eventfd the test waits on. */
#ifndef AMP_TEST_DONE_EFD_H
#define AMP_TEST_DONE_EFD_H

/* done(): ctx points at the eventfd. */
void done_efd_add(void *ctx);

/* Waits up to timeout_ms for counts: returns how many came (0: none). */
int done_efd_wait(int efd, int timeout_ms);

#endif
