/* SPDX-License-Identifier: MIT */
/* auth_file.c: reads a --token-file (see auth_file.h).
 *
 * Parsing is strict and names the line that is wrong: a token file is a
 * secret an operator edits by hand, and a half-read one would lock clients
 * out (or let the wrong ones in) with no word why.
 */
#include "auth_file.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A line holds a name, a token and blanks; longer is not a token line. */
#define AUTH_FILE_LINE_MAX (AUTH_NAME_MAX + AUTH_TOKEN_MAX + 64)

bool auth_file_token_chars(const char *token, size_t len)
{
    size_t i = 0;
    while (i < len && (strchr("-._~+/", token[i]) || (token[i] >= '0' && token[i] <= '9') ||
                       (token[i] >= 'a' && token[i] <= 'z') || (token[i] >= 'A' && token[i] <= 'Z'))
           && token[i] != '\0')
        i++;
    if (i == 0)
        return false;
    while (i < len && token[i] == '=')
        i++;
    return i == len;
}

static bool auth_file_name_chars(const char *name)
{
    for (const char *p = name; *p; p++)
        if (!strchr("._@-", *p) && !(*p >= '0' && *p <= '9') && !(*p >= 'a' && *p <= 'z') &&
            !(*p >= 'A' && *p <= 'Z'))
            return false;
    return *name != '\0';
}

int auth_file_digest(const char *token, size_t len, uint8_t out[AUTH_DIGEST_LEN])
{
    unsigned outlen = 0;
    return EVP_Digest(token, len, out, &outlen, EVP_sha256(), NULL) == 1 &&
                   outlen == AUTH_DIGEST_LEN
               ? 0
               : -1;
}

void auth_file_free(struct auth_file *f)
{
    free(f->tokens);
    f->tokens = NULL;
    f->n = 0;
}

/* The secret's file must be the operator's and the daemon's alone. */
static int auth_file_check_mode(int fd, const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "--token-file %s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "--token-file %s: not a regular file", path);
        return -1;
    }
    if (st.st_mode & (S_IRWXO | S_IWGRP)) {
        snprintf(err, errlen,
                 "--token-file %s: others may read or change it (mode %04o); chmod o-rwx,g-w",
                 path, (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return 0;
}

/* One line into f (with room for one more token). Returns 0, or -1 with
 * the reason in why. */
static int auth_file_line(struct auth_file *f, char *line, char *why, size_t whylen)
{
    const char *blanks = " \t\r\n";
    char *save = NULL;
    char *name = strtok_r(line, blanks, &save);
    if (!name || name[0] == '#')
        return 0;
    char *token = strtok_r(NULL, blanks, &save);
    if (!token || strtok_r(NULL, blanks, &save)) {
        snprintf(why, whylen, "want \"NAME TOKEN\"");
        return -1;
    }
    size_t tlen = strlen(token);
    if (strlen(name) >= AUTH_NAME_MAX || !auth_file_name_chars(name)) {
        snprintf(why, whylen, "a name is 1 to %d letters, digits, '.', '_', '@' or '-'",
                 AUTH_NAME_MAX - 1);
        return -1;
    }
    if (tlen < AUTH_TOKEN_MIN || tlen > AUTH_TOKEN_MAX || !auth_file_token_chars(token, tlen)) {
        snprintf(why, whylen,
                 "token of %s: want %d to %d characters: letters, digits, - . _ ~ + / then any =",
                 name, AUTH_TOKEN_MIN, AUTH_TOKEN_MAX);
        return -1;
    }
    struct auth_token *t = &f->tokens[f->n];
    snprintf(t->name, sizeof t->name, "%s", name);
    if (auth_file_digest(token, tlen, t->digest) != 0) {
        snprintf(why, whylen, "cannot hash the token (OpenSSL)");
        return -1;
    }
    for (size_t i = 0; i < f->n; i++) {
        if (strcmp(f->tokens[i].name, name) == 0 ||
            memcmp(f->tokens[i].digest, t->digest, AUTH_DIGEST_LEN) == 0) {
            snprintf(why, whylen, "%s: its name or token is on an earlier line too", name);
            return -1;
        }
    }
    f->n++;
    return 0;
}

static int auth_file_parse(FILE *fp, const char *path, struct auth_file *f, char *err,
                           size_t errlen)
{
    char line[AUTH_FILE_LINE_MAX], why[160];
    int lineno = 0;
    while (fgets(line, sizeof line, fp)) {
        lineno++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') {
            snprintf(err, errlen, "--token-file %s:%d: line longer than %d bytes", path, lineno,
                     AUTH_FILE_LINE_MAX - 2);
            return -1;
        }
        if (f->n == AUTH_FILE_MAX_TOKENS) {
            snprintf(err, errlen, "--token-file %s:%d: more than %d tokens", path, lineno,
                     AUTH_FILE_MAX_TOKENS);
            return -1;
        }
        int rv = auth_file_line(f, line, why, sizeof why);
        OPENSSL_cleanse(line, sizeof line);   /* the token stays nowhere but in its file */
        if (rv != 0) {
            snprintf(err, errlen, "--token-file %s:%d: %s", path, lineno, why);
            return -1;
        }
    }
    if (ferror(fp)) {
        snprintf(err, errlen, "--token-file %s: read error", path);
        return -1;
    }
    return 0;
}

int auth_file_read(const char *path, struct auth_file *out, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "--token-file %s: %s", path, strerror(errno));
        return -1;
    }
    if (auth_file_check_mode(fd, path, err, errlen) != 0) {
        close(fd);
        return -1;
    }
    FILE *fp = fdopen(fd, "r");
    struct auth_file f = { .tokens = calloc(AUTH_FILE_MAX_TOKENS, sizeof(struct auth_token)) };
    if (!fp || !f.tokens) {
        snprintf(err, errlen, "--token-file %s: out of memory", path);
        if (fp)
            fclose(fp);
        else
            close(fd);
        free(f.tokens);
        return -1;
    }
    int rv = auth_file_parse(fp, path, &f, err, errlen);
    fclose(fp);
    if (rv != 0) {
        auth_file_free(&f);
        return -1;
    }
    *out = f;
    return 0;
}
