/* SPDX-License-Identifier: MIT */
/* done_efd.c: counting a bulk thread's done() calls (done_efd.h). */
#include "done_efd.h"

#include <check.h>
#include <poll.h>
#include <stdint.h>
#include <unistd.h>

void done_efd_add(void *ctx)
{
    uint64_t one = 1;
    ck_assert_int_eq(write(*(int *)ctx, &one, sizeof one), sizeof one);
}

int done_efd_wait(int efd, int timeout_ms)
{
    struct pollfd p = { efd, POLLIN, 0 };
    if (poll(&p, 1, timeout_ms) != 1)
        return 0;
    uint64_t n = 0;
    ck_assert_int_eq(read(efd, &n, sizeof n), sizeof n);
    return (int)n;
}
