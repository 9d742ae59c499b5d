/* SPDX-License-Identifier: MIT */
/* auth_file.c: reads a --token-file (see auth_file.h).
 *
 * Parsing is strict and names the line that is wrong: a token file is a
 * secret an operator edits by hand, and a half-read one would lock clients
 * out (or let the wrong ones in) with no word why.
 */
#include "auth_file.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "call_class.h"
#include "job.h"
#include "read_file.h"

/* A line holds a name, a token, its optional fields and blanks; longer
 * is not a token line.
 * Lines are read with getline(), so that a longer one is refused by its
 * number rather than split into two. */
#define AUTH_FILE_LINE_MAX (AUTH_NAME_MAX + AUTH_TOKEN_MAX + 128)
#define AUTH_FILE_FORMAT "NAME TOKEN [weight=N] [max-priority=low|normal|high]"
#define AUTH_FILE_WEIGHT "weight="
#define AUTH_FILE_MAX_PRIORITY "max-priority="

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
static int auth_file_check_mode(const struct stat *st, const char *path, char *err,
                                size_t errlen)
{
    if (st->st_mode & (S_IRWXO | S_IWGRP)) {
        snprintf(err, errlen,
                 "--token-file %s: others may read or change it (mode %04o); chmod o-rwx,g-w",
                 path, (unsigned)(st->st_mode & 07777));
        return -1;
    }
    return 0;
}

/* An optional field of t's line, "weight=N" or "max-priority=LEVEL",
 * each at most once. Returns 0, or -1 with the reason in why. */
static int auth_file_field(struct auth_token *t, const char *field, char *why, size_t whylen)
{
    size_t wn = strlen(AUTH_FILE_WEIGHT), pn = strlen(AUTH_FILE_MAX_PRIORITY);
    if (strncmp(field, AUTH_FILE_WEIGHT, wn) == 0 && !t->weight) {
        const char *v = field + wn;
        char *end;
        errno = 0;
        unsigned long w = strtoul(v, &end, 10);
        if (v[0] < '0' || v[0] > '9' || *end || errno || w < 1 || w > JOB_WEIGHT_MAX) {
            snprintf(why, whylen, "%s: weight= wants a whole number from 1 to %d", t->name,
                     JOB_WEIGHT_MAX);
            return -1;
        }
        t->weight = (uint32_t)w;
        return 0;
    }
    if (strncmp(field, AUTH_FILE_MAX_PRIORITY, pn) == 0 && t->max_priority < 0) {
        const char *v = field + pn;
        t->max_priority = call_class_priority_parse(v, strlen(v));
        if (t->max_priority < 0) {
            snprintf(why, whylen, "%s: max-priority= wants low, normal or high", t->name);
            return -1;
        }
        return 0;
    }
    snprintf(why, whylen, "%s: want \"%s\", each field at most once", t->name,
             AUTH_FILE_FORMAT);
    return -1;
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
    char *field = token ? strtok_r(NULL, blanks, &save) : NULL;
    if (!token || (field && !strchr(field, '='))) {
        snprintf(why, whylen, "want \"%s\"", AUTH_FILE_FORMAT);
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
    *t = (struct auth_token){ .max_priority = -1 };
    snprintf(t->name, sizeof t->name, "%s", name);
    for (; field; field = strtok_r(NULL, blanks, &save))
        if (auth_file_field(t, field, why, whylen) != 0)
            return -1;
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

/* The line's bytes after a first line's byte order mark; -1 with the
 * reason in err for a line too long or one with a NUL byte, which a text
 * editor would hide and strtok would silently cut the line at. */
static int auth_file_text(char **line, ssize_t len, const char *path, int lineno, char *err,
                          size_t errlen)
{
    size_t text = (size_t)len - ((*line)[len - 1] == '\n');   /* getline's len is >= 1 */
    if (text > AUTH_FILE_LINE_MAX - 2) {
        snprintf(err, errlen, "--token-file %s:%d: line longer than %d bytes", path, lineno,
                 AUTH_FILE_LINE_MAX - 2);
        return -1;
    }
    if (memchr(*line, '\0', (size_t)len)) {
        snprintf(err, errlen, "--token-file %s:%d: a NUL byte; a token file is text", path,
                 lineno);
        return -1;
    }
    if (lineno == 1)
        *line += read_file_bom(*line, (size_t)len);
    return 0;
}

static int auth_file_parse(FILE *fp, const char *path, struct auth_file *f, char *err,
                           size_t errlen)
{
    /* Sized for a valid line, so that getline() does not move a token
     * around the heap; the buffer is wiped after every line. */
    size_t cap = AUTH_FILE_LINE_MAX;
    char *buf = malloc(cap), why[160];
    if (!buf) {
        snprintf(err, errlen, "--token-file %s: out of memory", path);
        return -1;
    }
    int lineno = 0, rv = 0;
    ssize_t len;
    while (rv == 0 && (len = getline(&buf, &cap, fp)) >= 0) {
        lineno++;
        char *line = buf;
        if (f->n == AUTH_FILE_MAX_TOKENS) {
            snprintf(err, errlen, "--token-file %s:%d: more than %d tokens", path, lineno,
                     AUTH_FILE_MAX_TOKENS);
            rv = -1;
        } else if (auth_file_text(&line, len, path, lineno, err, errlen) != 0) {
            rv = -1;
        } else if (auth_file_line(f, line, why, sizeof why) != 0) {
            snprintf(err, errlen, "--token-file %s:%d: %s", path, lineno, why);
            rv = -1;
        }
        OPENSSL_cleanse(buf, cap);   /* the token stays nowhere but in its file */
    }
    if (rv == 0 && ferror(fp)) {
        snprintf(err, errlen, "--token-file %s: read error", path);
        rv = -1;
    }
    OPENSSL_cleanse(buf, cap);
    free(buf);
    return rv;
}

int auth_file_read(const char *path, struct auth_file *out, char *err, size_t errlen)
{
    struct stat st;
    FILE *fp = read_file_stream("--token-file", path, &st, err, errlen);
    if (!fp)
        return -1;
    if (auth_file_check_mode(&st, path, err, errlen) != 0) {
        fclose(fp);
        return -1;
    }
    struct auth_file f = { .tokens = calloc(AUTH_FILE_MAX_TOKENS, sizeof(struct auth_token)) };
    if (!f.tokens) {
        snprintf(err, errlen, "--token-file %s: out of memory", path);
        fclose(fp);
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
