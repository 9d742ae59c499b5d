/* SPDX-License-Identifier: MIT */
/* read_file.c: opening the files ampd reads without blocking, regular
 * files only (see read_file.h). config.c, auth_file.c and tls.c read
 * through it. */
#include "read_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* The kind of a file that is not regular, for the refusal. */
static const char *read_file_kind(mode_t mode)
{
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a plain file";
}

int read_file_open(const char *what, const char *path, struct stat *st, char *err,
                   size_t errlen)
{
    /* O_NONBLOCK: open() of a FIFO with no writer returns at once instead
     * of waiting for one; the fstat below then refuses it. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
        return -1;
    }
    struct stat own;
    struct stat *s = st ? st : &own;
    if (fstat(fd, s) != 0) {
        snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(s->st_mode)) {
        snprintf(err, errlen, "%s %s: %s, not a regular file; refused, as reading it could "
                              "block the daemon",
                 what, path, read_file_kind(s->st_mode));
        close(fd);
        return -1;
    }
    return fd;
}

FILE *read_file_stream(const char *what, const char *path, struct stat *st, char *err,
                       size_t errlen)
{
    int fd = read_file_open(what, path, st, err, errlen);
    if (fd < 0)
        return NULL;
    FILE *fp = fdopen(fd, "r");
    if (!fp) {
        snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
        close(fd);
    }
    return fp;
}

size_t read_file_bom(const char *line, size_t len)
{
    return len >= READ_FILE_BOM_LEN && memcmp(line, READ_FILE_BOM, READ_FILE_BOM_LEN) == 0
               ? READ_FILE_BOM_LEN
               : 0;
}
