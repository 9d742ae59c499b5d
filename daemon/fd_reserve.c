/* SPDX-License-Identifier: MIT */
/* fd_reserve.c: descriptors kept back for the daemon's own work (fd_reserve.h). */
#include "fd_reserve.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "log.h"

static atomic_long fd_reserve_soft;        /* RLIMIT_NOFILE's soft limit; 0: unknown */
static atomic_long fd_reserve_first;       /* lowest reserved slot; 0: admit all */
static atomic_bool fd_reserve_refusing;    /* a run of refusals is under way (logged once) */

int fd_reserve_init(char *msg, size_t msglen)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        snprintf(msg, msglen, "cannot read RLIMIT_NOFILE: %s", strerror(errno));
        return -1;
    }
    rlim_t was = rl.rlim_cur;
    const char *note = "";
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            rl.rlim_cur = was;
            note = " (cannot raise it to the hard limit)";
        }
    }
    /* Descriptor numbers are ints, whatever the limit says. */
    long soft = rl.rlim_cur > (rlim_t)INT_MAX ? INT_MAX : (long)rl.rlim_cur;
    /* Under a limit too low for the whole reserve, half of it. */
    long first = soft > 2 * FD_RESERVE_COUNT ? soft - FD_RESERVE_COUNT : soft / 2;
    atomic_store(&fd_reserve_soft, soft);
    atomic_store(&fd_reserve_first, first);
    snprintf(msg, msglen,
             "descriptors: soft limit %ld (was %llu, hard %llu)%s; clients get at most %ld, "
             "%ld kept for device jobs",
             soft, (unsigned long long)was, (unsigned long long)rl.rlim_max, note, first,
             soft - first);
    return 0;
}

bool fd_reserve_admit(int fd)
{
    long first = atomic_load(&fd_reserve_first);
    if (!first || fd < first) {
        atomic_store(&fd_reserve_refusing, false);
        return true;
    }
    if (!atomic_exchange(&fd_reserve_refusing, true))
        log_msg(LOG_WARN,
                "descriptors: %ld of the soft limit %ld open, the rest kept for device jobs: "
                "refusing clients' connections and descriptors until some close",
                first, atomic_load(&fd_reserve_soft));
    return false;
}

long fd_reserve_limit(void)
{
    return atomic_load(&fd_reserve_soft);
}

long fd_reserve_threshold(void)
{
    return atomic_load(&fd_reserve_first);
}
