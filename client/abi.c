/* SPDX-License-Identifier: MIT */
/* abi.c: checks and copies that let amp.h's structs grow before 1.0: a
 * program built against an older header passes smaller sized structs and
 * zeroed reserved tails, and the library reads or writes only what that
 * layout has. */
#include "abi.h"

#include <string.h>

#include "conn.h"

int abi_check_size(amp_conn *c, const char *what, size_t size, size_t min)
{
    if (size >= min)
        return 0;
    return conn_fail(c, AMP_EINVAL, "%s.size is %zu: set it to sizeof the struct (at least %zu)",
                     what, size, min);
}

int abi_check_reserved(amp_conn *c, const char *what, const void *reserved, size_t n)
{
    const unsigned char *p = reserved;
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return conn_fail(c, AMP_EINVAL, "%s.reserved must be zero (initialise the struct "
                             "with a designated initializer or = {0})", what);
    return 0;
}

const amp_step *abi_step(const amp_step *steps, size_t i)
{
    return (const amp_step *)((const char *)steps + i * steps[0].size);
}

void abi_write(void *dst, const void *src, size_t full)
{
    size_t have;
    memcpy(&have, dst, sizeof have);
    size_t n = have < full ? have : full;
    if (n > sizeof have)
        memcpy((char *)dst + sizeof have, (const char *)src + sizeof have, n - sizeof have);
}
