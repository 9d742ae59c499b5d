/* SPDX-License-Identifier: MIT */
/* auth_file.h: a --token-file, read into token names and digests.
 *
 * The file holds one token a line, "NAME TOKEN [weight=N]
 * [max-priority=LEVEL]": NAME says whose it is in logs (letters, digits,
 * . _ @ -), TOKEN is what the client sends as "authorization: Bearer
 * TOKEN" (RFC 6750's b64token characters, at least AUTH_TOKEN_MIN of
 * them); the optional fields, in any order, are its client's share of the
 * devices beside others (1..JOB_WEIGHT_MAX) and the highest priority its
 * calls may ask for (low, normal or high; call_class.h). Blank lines and lines starting with # are
 * skipped, and so is a UTF-8 byte order mark at the file's start; a NUL
 * byte anywhere is refused, naming its line. Only a SHA-256 digest of each token is kept, so that checking a
 * token compares fixed-size digests (auth.c) and the tokens themselves do
 * not stay in the daemon's memory. auth.c owns when the file is read.
 */
#ifndef AMPD_AUTH_FILE_H
#define AMPD_AUTH_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AUTH_NAME_MAX 64        /* a name's bytes, with its NUL */
#define AUTH_TOKEN_MIN 16       /* a guessable token is no lock */
#define AUTH_TOKEN_MAX 256
#define AUTH_DIGEST_LEN 32      /* SHA-256 */
#define AUTH_FILE_MAX_TOKENS 1024

struct auth_token {
    char name[AUTH_NAME_MAX];
    uint8_t digest[AUTH_DIGEST_LEN];   /* SHA-256 of the token */
    uint64_t calls;                    /* calls that carried it: 0 when read; auth.c counts
                                        * them under its lock, for metrics */
    uint32_t weight;                   /* weight=: 1..JOB_WEIGHT_MAX; 0: not given */
    int max_priority;                  /* max-priority=: enum job_priority; -1: not given */
};

struct auth_file {
    struct auth_token *tokens;   /* malloc'd, n of them; NULL when n is 0 */
    size_t n;
};

/* Reads path into *out (which the caller frees with auth_file_free). A file
 * that is not regular (read_file.h), that others may read or write, a malformed line, a short or long token,
 * a name or token given twice: -1 with the reason (file and line) in err,
 * *out untouched. Returns 0 otherwise; a file with no token is valid (every
 * token revoked). */
int auth_file_read(const char *path, struct auth_file *out, char *err, size_t errlen);

void auth_file_free(struct auth_file *f);

/* True when the len bytes at token are b64token characters (RFC 6750:
 * letters, digits, - . _ ~ + /, then any number of =). */
bool auth_file_token_chars(const char *token, size_t len);

/* SHA-256 of len bytes into out. Returns 0, or -1 if OpenSSL fails. */
int auth_file_digest(const char *token, size_t len, uint8_t out[AUTH_DIGEST_LEN]);

#endif
