/* SPDX-License-Identifier: MIT */
/* start_gate.h: a test's hold on ampd's start, between the sockets and
 * the devices.
 *
 * The tests of sockets-first start-up (tests/test_start_ready.py) need a
 * daemon that is listening and still opening its devices for as long as
 * they like, without guessing how long a kernel build takes. The shipped
 * ampd links start_gate/none.c, which waits for nothing; ampd-gated, a
 * test-only build of the same main.c (tests/CMakeLists.txt, never
 * installed), links start_gate/fifo.c. Nothing else differs.
 */
#ifndef AMPD_START_GATE_H
#define AMPD_START_GATE_H

/* Called on the opener thread before the devices open. fifo.c: with
 * $AMPD_TEST_START_GATE naming a FIFO, waits until a writer has opened it
 * and closed it again; none.c: returns at once. */
void start_gate_wait(void);

#endif
