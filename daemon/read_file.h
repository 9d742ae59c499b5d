/* SPDX-License-Identifier: MIT */
/* read_file.h: opening the files ampd reads (config, --token-file, TLS
 * certificates, keys and CAs) so that no file can stall the daemon.
 *
 * A FIFO, a terminal or a device named as one of them would block open()
 * or read() forever, at start-up before ampd listens, or on SIGHUP in the
 * loop that serves every client. Each file is therefore opened without
 * blocking (O_NONBLOCK, which a regular file ignores for reads), never as
 * a controlling terminal, close-on-exec, and refused unless fstat() says
 * it is a regular file. Every reader goes through here.
 */
#ifndef AMPD_READ_FILE_H
#define AMPD_READ_FILE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

/* The UTF-8 byte order mark some editors put at a text file's start. */
#define READ_FILE_BOM "\xEF\xBB\xBF"
#define READ_FILE_BOM_LEN 3

/* Opens path for reading as above. what names the setting in messages
 * ("--token-file"). Returns the descriptor (the caller closes it), with
 * its stat in *st if st is not NULL; or -1 with "WHAT PATH: why" in err
 * (a missing file, a FIFO, a directory...), nothing left open. */
int read_file_open(const char *what, const char *path, struct stat *st, char *err,
                   size_t errlen);

/* The same, as a stdio stream the caller fcloses; NULL with err set. */
FILE *read_file_stream(const char *what, const char *path, struct stat *st, char *err,
                       size_t errlen);

/* The length of a leading byte order mark in the len bytes at line: 0 or
 * READ_FILE_BOM_LEN. A reader skips it on a file's first line, where an
 * editor wrote it, so that it never reads as part of a name or key. */
size_t read_file_bom(const char *line, size_t len);

#endif
