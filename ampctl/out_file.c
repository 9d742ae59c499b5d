/* SPDX-License-Identifier: MIT */
/* out_file.c: a job's -o FILE appears whole or not at all (ampctl.h).
 *
 * The bytes go to a temporary file beside FILE (FILE.ampctl-XXXXXX, so the
 * rename stays on one file system), renamed over FILE once the job
 * succeeded. When the job fails, or SIGINT, SIGTERM or SIGHUP ends ampctl
 * midway, the temporary goes and FILE is as it was: a half-written result
 * never passes for a whole one. stdout, and a path that exists and is not a
 * regular file (/dev/null, a FIFO, a terminal), are written in place.
 */
#define _GNU_SOURCE   /* mkostemp */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ampctl.h"

#define OUT_FILE_SUFFIX ".ampctl-XXXXXX"
#define OUT_FILE_MODE 0666   /* a new file's, less the umask, as open(2) would give */

static const int out_file_signals[] = { SIGINT, SIGTERM, SIGHUP };

/* The temporary being written, for the signal handler: one at a time. */
static char out_file_temp[PATH_MAX];
static volatile sig_atomic_t out_file_armed;
static struct sigaction out_file_old[sizeof out_file_signals / sizeof out_file_signals[0]];

static void out_file_on_signal(int sig)
{
    if (out_file_armed)
        unlink(out_file_temp);   /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

static void out_file_arm(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = out_file_on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof out_file_signals / sizeof out_file_signals[0]; i++)
        sigaction(out_file_signals[i], &sa, &out_file_old[i]);
    out_file_armed = 1;
}

static void out_file_disarm(void)
{
    out_file_armed = 0;
    for (size_t i = 0; i < sizeof out_file_signals / sizeof out_file_signals[0]; i++)
        sigaction(out_file_signals[i], &out_file_old[i], NULL);
}

/* The mode FILE will have: its own if it exists, else a new file's. */
static mode_t out_file_mode(const struct stat *st, int exists)
{
    if (exists)
        return st->st_mode & 07777;
    mode_t mask = umask(0);
    umask(mask);
    return OUT_FILE_MODE & ~mask;
}

int out_file_open(const char *path, int *fd)
{
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) {
        *fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    } else if (out_file_armed || strlen(path) + sizeof OUT_FILE_SUFFIX > sizeof out_file_temp) {
        errno = out_file_armed ? EBUSY : ENAMETOOLONG;
        *fd = -1;
    } else {
        snprintf(out_file_temp, sizeof out_file_temp, "%s" OUT_FILE_SUFFIX, path);
        *fd = mkostemp(out_file_temp, O_CLOEXEC);
        if (*fd >= 0 && fchmod(*fd, out_file_mode(&st, exists)) != 0) {
            int e = errno;
            close(*fd);
            unlink(out_file_temp);
            errno = e;
            *fd = -1;
        }
        if (*fd >= 0)
            out_file_arm();
    }
    if (*fd < 0) {
        ampctl_error("%s: %s", path, strerror(errno));
        return AMPCTL_EIO;
    }
    return AMPCTL_OK;
}

int out_file_close(const char *path, int fd, int ok)
{
    int rc = AMPCTL_OK;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ampctl_error("%s: %s", path, strerror(errno));
        rc = AMPCTL_EIO;
    }
    if (!out_file_armed)
        return rc;
    if (ok && rc == AMPCTL_OK && rename(out_file_temp, path) != 0) {
        ampctl_error("%s: %s", path, strerror(errno));
        rc = AMPCTL_EIO;
    }
    if (!ok || rc != AMPCTL_OK)
        unlink(out_file_temp);
    out_file_disarm();
    return rc;
}
