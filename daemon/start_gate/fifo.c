/* SPDX-License-Identifier: MIT */
/* start_gate/fifo.c: ampd-gated's start gate (start_gate.h): the devices
 * open once the test has opened and closed $AMPD_TEST_START_GATE, a FIFO.
 * open() of a FIFO for reading waits for a writer, and read() returns 0
 * once every writer has closed it: the test decides when, no clock does. */
#include "start_gate.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#define START_GATE_ENV "AMPD_TEST_START_GATE"

void start_gate_wait(void)
{
    const char *path = getenv(START_GATE_ENV);
    if (!path || !*path)
        return;
    log_msg(LOG_INFO, "start gate: waiting for a writer to open and close %s", path);
    int fd;
    while ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 && errno == EINTR) {
    }
    if (fd < 0) {
        log_msg(LOG_WARN, "start gate: %s=%s: %s; not waiting", START_GATE_ENV, path,
                strerror(errno));
        return;
    }
    char buf[64];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    }
    close(fd);
    log_msg(LOG_INFO, "start gate: open");
}
