/* SPDX-License-Identifier: MIT */
/* io.c: ampctl's local input and output: whole files or stdin in, exact
 * bytes out to a file or stdout, and inputs read only as far as needed to
 * choose between one message and a stream (struct io_input). Failures
 * print the path and the reason and return AMPCTL_EIO (exit status 4).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ampctl.h"
#include "grow.h"

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
        if (grow_bytes(&p, &cap, IO_CHUNK, n + IO_CHUNK) != 0) {
            free(p);
            ampctl_error("%s: out of memory after %zu bytes", name, n);
            return AMPCTL_EIO;
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

int io_write_fd(int fd, const char *name, const void *buf, size_t len)
{
    const uint8_t *p = buf;
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
    if (io_is_std(path)) {
        struct term_out t;
        term_out_init(&t, path);
        int rc = term_out_check(&t, buf, len);
        if (rc == AMPCTL_OK)
            rc = io_write_fd(STDOUT_FILENO, "stdout", buf, len);
        return rc == AMPCTL_OK ? term_out_end(&t) : rc;
    }
    int fd;
    int rc = out_file_open(path, &fd);
    if (rc != AMPCTL_OK)
        return rc;
    rc = io_write_fd(fd, path, buf, len);
    int crc = out_file_close(path, fd, rc == AMPCTL_OK);
    return rc != AMPCTL_OK ? rc : crc;
}

int io_open_output(const char *path, FILE **out)
{
    if (io_is_std(path)) {
        *out = stdout;
        return AMPCTL_OK;
    }
    int fd;
    int rc = out_file_open(path, &fd);
    if (rc != AMPCTL_OK)
        return rc;
    *out = fdopen(fd, "w");
    if (!*out) {
        ampctl_error("%s: %s", path, strerror(errno));
        out_file_close(path, fd, 0);
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
    if (bad)
        ampctl_error("%s: write failed: %s", io_name(path, "stdout"), strerror(errno));
    int rc = f == stdout ? AMPCTL_OK : out_file_close(path, -1, !bad);
    return bad ? AMPCTL_EIO : rc;
}

int io_is_terminal(const char *path)
{
    return io_is_std(path) && isatty(STDOUT_FILENO);
}

/* --- inputs that may be streamed ------------------------------------------------ */

/* Reads into in->head until it holds limit bytes or the input ends. */
static int io_input_fill(struct io_input *in, uint64_t limit)
{
    for (;;) {
        if (in->head_len >= limit)
            return AMPCTL_OK;
        if (grow_bytes(&in->head, &in->head_cap, IO_CHUNK, in->head_len + IO_CHUNK) != 0) {
            ampctl_error("%s: out of memory after %zu bytes", in->name, in->head_len);
            return AMPCTL_EIO;
        }
        uint8_t *p = in->head;
        size_t want = IO_CHUNK;
        if (limit - in->head_len < want)
            want = (size_t)(limit - in->head_len);
        ssize_t r = read(in->fd, p + in->head_len, want);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            ampctl_error("%s: %s", in->name, strerror(errno));
            return AMPCTL_EIO;
        }
        if (r == 0) {
            in->eof = 1;
            return AMPCTL_OK;
        }
        in->head_len += (size_t)r;
    }
}

int io_input_open(const char *path, uint64_t threshold, struct io_input *in)
{
    memset(in, 0, sizeof *in);
    in->name = io_name(path, "stdin");
    in->fd = io_is_std(path) ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (in->fd < 0) {
        ampctl_error("%s: %s", path, strerror(errno));
        return AMPCTL_EIO;
    }
    struct stat st;
    if (fstat(in->fd, &st) == 0 && S_ISREG(st.st_mode)) {
        in->size_known = 1;
        in->size = (uint64_t)st.st_size;
        if (in->size >= threshold)
            return AMPCTL_OK; /* streamed straight from the file */
        return io_input_fill(in, UINT64_MAX);
    }
    /* Unknown size: read up to the threshold; what ends before it goes
     * in one message, the rest is streamed after what was read. */
    return io_input_fill(in, threshold);
}

int io_input_slurp(struct io_input *in)
{
    return in->eof ? AMPCTL_OK : io_input_fill(in, UINT64_MAX);
}

int io_input_streams(const struct io_input *in, uint64_t threshold)
{
    return !in->eof || in->head_len >= threshold;
}

long io_input_read(void *ctx, void *buf, size_t cap)
{
    struct io_input *in = ctx;
    if (in->head_pos < in->head_len) {
        size_t n = in->head_len - in->head_pos;
        if (n > cap)
            n = cap;
        memcpy(buf, in->head + in->head_pos, n);
        in->head_pos += n;
        in->taken += n;
        return (long)n;
    }
    if (in->eof)
        return 0;
    for (;;) {
        ssize_t r = read(in->fd, buf, cap);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            ampctl_error("%s: %s", in->name, strerror(errno));
            in->failed = 1;
            return AMP_EIO;
        }
        in->taken += (uint64_t)r;
        in->eof = r == 0;
        return (long)r;
    }
}

void io_input_close(struct io_input *in)
{
    if (in->fd >= 0 && in->fd != STDIN_FILENO)
        close(in->fd);
    free(in->head);
    memset(in, 0, sizeof *in);
    in->fd = -1;
}

int io_open_fd(const char *path, int *fd)
{
    if (io_is_std(path)) {
        *fd = STDOUT_FILENO;
        return AMPCTL_OK;
    }
    return out_file_open(path, fd);
}

int io_close_fd(const char *path, int fd, int ok)
{
    if (fd < 0 || fd == STDOUT_FILENO)
        return AMPCTL_OK;
    return out_file_close(path, fd, ok);
}
