/* SPDX-License-Identifier: MIT */
/* token.c: the bearer token ampctl sends, read from --token-file or
 * $AMP_TOKEN_FILE.
 *
 * The file's first line that is not blank or a # comment holds the token,
 * alone or after a name ("NAME TOKEN", a line of the daemon's own
 * --token-file), so one file can serve both sides on a test host. A token
 * stays in a file, never on the command line, where ps would show it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ampctl.h"

/* The last blank-separated word of the first line with any, into token. */
static int token_line(char *line, char *token, size_t tokenlen)
{
    const char *blanks = " \t\r\n";
    char *save = NULL, *last = NULL;
    int words = 0;
    for (char *w = strtok_r(line, blanks, &save); w; w = strtok_r(NULL, blanks, &save)) {
        if (words == 0 && w[0] == '#')
            return 0;
        last = w;
        words++;
    }
    if (words == 0)
        return 0;
    if (words > 2 || strlen(last) >= tokenlen)
        return -1;
    snprintf(token, tokenlen, "%s", last);
    return 1;
}

int token_read(const char *path, char *token, size_t tokenlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        ampctl_error("--token-file %s: %s", path, strerror(errno));
        return AMPCTL_EIO;
    }
    char line[AMPCTL_TOKEN_MAX + AMPCTL_TOKEN_MAX / 4];
    int found = 0, lineno = 0;
    while (!found && fgets(line, sizeof line, f)) {
        lineno++;
        found = token_line(line, token, tokenlen);
    }
    memset(line, 0, sizeof line);
    fclose(f);
    if (found < 0)
        return ampctl_usage_error(NULL, "--token-file %s:%d: want TOKEN or NAME TOKEN, at most "
                                        "%d bytes", path, lineno, AMPCTL_TOKEN_MAX - 1);
    if (!found)
        return ampctl_usage_error(NULL, "--token-file %s: no token in it", path);
    return AMPCTL_OK;
}
