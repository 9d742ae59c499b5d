/* io.c: ampctl's local input and output: whole files or stdin in, exact
 * bytes out to a file or stdout. Failures print the path and the reason
 * and return AMPCTL_EIO (exit status 4).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ampctl.h"

#define IO_CHUNK (1024 * 1024)
#define IO_STDIO "-"

static int io_is_std(const char *path)
{
    return !path || strcmp(path, IO_STDIO) == 0;
}

static const char *io_name(const char *path, const char *std_name)
{
    return io_is_std(path) ? std_name : path;
}

/* Reads fd to its end into a growing buffer. */
static int io_read_fd(int fd, const char *name, uint8_t **buf, size_t *len)
{
    size_t cap = 0, n = 0;
    uint8_t *p = NULL;
    for (;;) {
        if (cap - n < IO_CHUNK) {
            size_t ncap = cap ? cap * 2 : IO_CHUNK;
            uint8_t *q = realloc(p, ncap);
            if (!q) {
                free(p);
                ampctl_error("%s: out of memory after %zu bytes", name, n);
                return AMPCTL_EIO;
            }
            p = q;
            cap = ncap;
        }
        ssize_t r = read(fd, p + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            ampctl_error("%s: %s", name, strerror(errno));
            free(p);
            return AMPCTL_EIO;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    *buf = p;
    *len = n;
    return AMPCTL_OK;
}

int io_read_all(const char *path, uint8_t **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    if (io_is_std(path))
        return io_read_fd(STDIN_FILENO, "stdin", buf, len);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        ampctl_error("%s: %s", path, strerror(errno));
        return AMPCTL_EIO;
    }
    int rc = io_read_fd(fd, path, buf, len);
    close(fd);
    return rc;
}

static int io_write_fd(int fd, const char *name, const uint8_t *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            ampctl_error("%s: %s", name, strerror(errno));
            return AMPCTL_EIO;
        }
        p += w;
        len -= (size_t)w;
    }
    return AMPCTL_OK;
}

int io_write_all(const char *path, const void *buf, size_t len)
{
    if (io_is_std(path))
        return io_write_fd(STDOUT_FILENO, "stdout", buf, len);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        ampctl_error("%s: %s", path, strerror(errno));
        return AMPCTL_EIO;
    }
    int rc = io_write_fd(fd, path, buf, len);
    if (close(fd) != 0 && rc == AMPCTL_OK) {
        ampctl_error("%s: %s", path, strerror(errno));
        rc = AMPCTL_EIO;
    }
    return rc;
}

int io_open_output(const char *path, FILE **out)
{
    if (io_is_std(path)) {
        *out = stdout;
        return AMPCTL_OK;
    }
    *out = fopen(path, "w");
    if (!*out) {
        ampctl_error("%s: %s", path, strerror(errno));
        return AMPCTL_EIO;
    }
    return AMPCTL_OK;
}

int io_close_output(const char *path, FILE *f)
{
    int bad = ferror(f) != 0;
    if (f == stdout)
        bad |= fflush(f) != 0;
    else
        bad |= fclose(f) != 0;
    if (bad) {
        ampctl_error("%s: write failed: %s", io_name(path, "stdout"), strerror(errno));
        return AMPCTL_EIO;
    }
    return AMPCTL_OK;
}

int io_is_terminal(const char *path)
{
    return io_is_std(path) && isatty(STDOUT_FILENO);
}
