/* SPDX-License-Identifier: MIT */
/* prog_cache.c: the program cache's files (prog_cache.h).
 *
 * An entry is one file, <dir>/<key in hex>.bin: a fixed header (below),
 * then the program's bytes. dev_cache.c turns OpenCL programs into bytes
 * and back; this file only checks and moves bytes, through stdio (socket
 * I/O owns read()/write() in the daemon, tests/test_architecture.py).
 */
#define _GNU_SOURCE   /* mkostemp */
#include "prog_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "log.h"

/* The header: magic, format version, reserved (0), payload length (all
 * little-endian), the key, the payload's SHA-256. */
#define PROG_CACHE_MAGIC "AMPDPRG\n"
#define PROG_CACHE_MAGIC_LEN 8
/* Bumped when the header or the key's recipe changes: old entries then miss. */
#define PROG_CACHE_VERSION 1
#define PROG_CACHE_OFF_VERSION PROG_CACHE_MAGIC_LEN
#define PROG_CACHE_OFF_LENGTH (PROG_CACHE_OFF_VERSION + 8)
#define PROG_CACHE_OFF_KEY (PROG_CACHE_OFF_LENGTH + 8)
#define PROG_CACHE_OFF_DIGEST (PROG_CACHE_OFF_KEY + PROG_CACHE_KEY_BYTES)
#define PROG_CACHE_HEADER_BYTES (PROG_CACHE_OFF_DIGEST + PROG_CACHE_KEY_BYTES)
#define PROG_CACHE_DIR_MODE 0700
#define PROG_CACHE_SUFFIX ".bin"
/* Temporaries start with a dot and say what they are, so that one left by
 * a crash is recognisable (and never read: it does not end in .bin). */
#define PROG_CACHE_TMP_PREFIX ".tmp-"
/* NVIDIA's compiler cache (CUDA_CACHE_PATH) under the cache directory. */
#define PROG_CACHE_NVIDIA_SUBDIR "nvidia"

struct prog_cache {
    char dir[PROG_CACHE_DIR_MAX];   /* as resolved; an entry's path fits PROG_CACHE_PATH_MAX */
    atomic_bool warned;             /* a write failure was logged (once per cache) */
};

static void prog_cache_put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void prog_cache_put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t prog_cache_get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t prog_cache_get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void prog_cache_sha256(const unsigned char *bytes, size_t len, unsigned char *out)
{
    unsigned int n = 0;
    EVP_Digest(bytes, len, out, &n, EVP_sha256(), NULL);
}

/* One field of the key: its length, then its bytes. */
static void prog_cache_key_field(EVP_MD_CTX *ctx, const char *s)
{
    unsigned char len[8];
    size_t n = strlen(s);
    prog_cache_put_u64(len, n);
    EVP_DigestUpdate(ctx, len, sizeof len);
    EVP_DigestUpdate(ctx, s, n);
}

void prog_cache_key(const struct prog_cache_id *id, struct prog_cache_key *key)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char version[4];
    prog_cache_put_u32(version, PROG_CACHE_VERSION);
    memset(key->b, 0, sizeof key->b);
    if (!ctx)
        return;   /* all-zero: a key no entry is stored under by a working cache */
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    EVP_DigestUpdate(ctx, version, sizeof version);
    const char *fields[] = {id->platform, id->platform_version, id->device, id->driver,
                            id->source, id->options};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        prog_cache_key_field(ctx, fields[i]);
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx, key->b, &n);
    EVP_MD_CTX_free(ctx);
}

int prog_cache_resolve(const char *dir, char *out, size_t len, char *err, size_t errlen)
{
    int n;
    const char *env;
    if (dir[0]) {
        n = snprintf(out, len, "%s", dir);
    } else if ((env = getenv("CACHE_DIRECTORY")) && env[0]) {
        /* systemd lists one directory per CacheDirectory= entry, colon-separated. */
        n = snprintf(out, len, "%.*s", (int)strcspn(env, ":"), env);
    } else if ((env = getenv("XDG_CACHE_HOME")) && env[0]) {
        n = snprintf(out, len, "%s/ampd", env);
    } else if ((env = getenv("HOME")) && env[0]) {
        n = snprintf(out, len, "%s/.cache/ampd", env);
    } else {
        snprintf(err, errlen, "--cache-dir: no default (none of $CACHE_DIRECTORY, "
                 "$XDG_CACHE_HOME, $HOME is set): give a directory or \"" PROG_CACHE_OFF "\"");
        return -1;
    }
    if (n < 0 || (size_t)n >= len || (size_t)n >= PROG_CACHE_DIR_MAX) {
        snprintf(err, errlen, "--cache-dir: the directory name is too long");
        return -1;
    }
    return 0;
}

/* mkdir -p: every missing directory of path, mode PROG_CACHE_DIR_MODE. */
static int prog_cache_mkdirs(const char *path)
{
    char p[PROG_CACHE_DIR_MAX];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, PROG_CACHE_DIR_MODE) != 0 && errno != EEXIST)
            return -1;
        *s = '/';
    }
    if (mkdir(p, PROG_CACHE_DIR_MODE) != 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (stat(p, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* NVIDIA's own cache, unless the operator configured it: it keeps the
 * machine code the driver makes from the PTX ampd's cache holds, and goes
 * where ampd can write (under systemd, $HOME is "/", read-only). PoCL's is
 * left as configured: off, it recompiles each kernel at its first launch
 * in every process (0.2-0.5 s a job kind here, which slowed the test suite
 * into timeouts on 2 cores); the shipped unit turns it off
 * (POCL_KERNEL_CACHE=0), since a damaged one aborted every start inside
 * PoCL (issue 36). */
static void prog_cache_drivers_env(const char *dir)
{
    if (!getenv("CUDA_CACHE_PATH")) {
        char path[PROG_CACHE_PATH_MAX];
        snprintf(path, sizeof path, "%s/" PROG_CACHE_NVIDIA_SUBDIR, dir);
        setenv("CUDA_CACHE_PATH", path, 0);
    }
}

/* The first failure to write says so at WARN; later ones are noise. */
static void prog_cache_write_failed(struct prog_cache *c, const char *what)
{
    int e = errno;
    bool was = atomic_exchange(&c->warned, true);
    log_msg(was ? LOG_DEBUG : LOG_WARN,
            "kernel cache %s: cannot %s (%s): kernels are built at every start until it can",
            c->dir, what, strerror(e));
}

int prog_cache_open(const char *dir, struct prog_cache **out, char *err, size_t errlen)
{
    *out = NULL;
    if (strcmp(dir, PROG_CACHE_OFF) == 0)
        return 0;
    struct prog_cache *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "--cache-dir: out of memory");
        return -1;
    }
    if (prog_cache_resolve(dir, c->dir, sizeof c->dir, err, errlen) != 0) {
        free(c);
        if (dir[0])
            return -1;
        /* No default to be had (no $HOME...): a start without the cache,
         * as before it existed, beats no start. */
        log_msg(LOG_WARN, "%s; kernels are built at every start", err);
        return 0;
    }
    atomic_init(&c->warned, false);
    if (prog_cache_mkdirs(c->dir) != 0)
        prog_cache_write_failed(c, "create the directory");
    prog_cache_drivers_env(c->dir);
    *out = c;
    return 0;
}

void prog_cache_close(struct prog_cache *c)
{
    free(c);
}

const char *prog_cache_dir(const struct prog_cache *c)
{
    return c->dir;
}

static void prog_cache_hex(const struct prog_cache_key *key, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < PROG_CACHE_KEY_BYTES; i++) {
        out[2 * i] = digits[key->b[i] >> 4];
        out[2 * i + 1] = digits[key->b[i] & 15];
    }
    out[2 * PROG_CACHE_KEY_BYTES] = '\0';
}

void prog_cache_path(const struct prog_cache *c, const struct prog_cache_key *key, char *out,
                     size_t len)
{
    char hex[2 * PROG_CACHE_KEY_BYTES + 1];
    prog_cache_hex(key, hex);
    snprintf(out, len, "%s/%s" PROG_CACHE_SUFFIX, c->dir, hex);
}

/* Checks a header against key and the file's size; on success the
 * payload's length is in *len. */
static int prog_cache_check_header(const unsigned char *h, const struct prog_cache_key *key,
                                   off_t size, size_t *len, char *why, size_t whylen)
{
    if (memcmp(h, PROG_CACHE_MAGIC, PROG_CACHE_MAGIC_LEN) != 0) {
        snprintf(why, whylen, "not an ampd cache entry");
        return -1;
    }
    if (prog_cache_get_u32(h + PROG_CACHE_OFF_VERSION) != PROG_CACHE_VERSION) {
        snprintf(why, whylen, "entry format %u, not %d",
                 (unsigned)prog_cache_get_u32(h + PROG_CACHE_OFF_VERSION), PROG_CACHE_VERSION);
        return -1;
    }
    if (memcmp(h + PROG_CACHE_OFF_KEY, key->b, PROG_CACHE_KEY_BYTES) != 0) {
        snprintf(why, whylen, "the entry is another program's");
        return -1;
    }
    uint64_t n = prog_cache_get_u64(h + PROG_CACHE_OFF_LENGTH);
    if (n == 0 || n > PROG_CACHE_MAX_BYTES || n != (uint64_t)size - PROG_CACHE_HEADER_BYTES) {
        snprintf(why, whylen, "length %llu in a file of %lld bytes", (unsigned long long)n,
                 (long long)size);
        return -1;
    }
    *len = (size_t)n;
    return 0;
}

/* Reads and checks an open entry; the payload into *bytes. */
static enum prog_cache_result prog_cache_read(FILE *f, off_t size,
                                              const struct prog_cache_key *key,
                                              unsigned char **bytes, size_t *len, char *why,
                                              size_t whylen)
{
    unsigned char h[PROG_CACHE_HEADER_BYTES];
    if (size < PROG_CACHE_HEADER_BYTES || fread(h, 1, sizeof h, f) != sizeof h) {
        snprintf(why, whylen, "%lld bytes, shorter than a header", (long long)size);
        return PROG_CACHE_DAMAGED;
    }
    size_t n;
    if (prog_cache_check_header(h, key, size, &n, why, whylen) != 0)
        return PROG_CACHE_DAMAGED;
    unsigned char *b = malloc(n);
    if (!b) {
        snprintf(why, whylen, "out of memory for %zu bytes", n);
        return PROG_CACHE_DAMAGED;
    }
    unsigned char digest[PROG_CACHE_KEY_BYTES];
    if (fread(b, 1, n, f) != n) {
        snprintf(why, whylen, "read error");
        free(b);
        return PROG_CACHE_DAMAGED;
    }
    prog_cache_sha256(b, n, digest);
    if (memcmp(digest, h + PROG_CACHE_OFF_DIGEST, sizeof digest) != 0) {
        snprintf(why, whylen, "its bytes do not match their digest");
        free(b);
        return PROG_CACHE_DAMAGED;
    }
    *bytes = b;
    *len = n;
    return PROG_CACHE_HIT;
}

enum prog_cache_result prog_cache_load(struct prog_cache *c, const struct prog_cache_key *key,
                                       unsigned char **bytes, size_t *len, char *why,
                                       size_t whylen)
{
    char path[PROG_CACHE_PATH_MAX];
    prog_cache_path(c, key, path, sizeof path);
    *bytes = NULL;
    *len = 0;
    why[0] = '\0';
    /* Not blocking, not a terminal: a FIFO put there must not stall the start. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        if (errno == ENOENT)
            return PROG_CACHE_MISS;
        snprintf(why, whylen, "%s", strerror(errno));
        return PROG_CACHE_DAMAGED;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "not a regular file");
        close(fd);
        return PROG_CACHE_DAMAGED;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        snprintf(why, whylen, "%s", strerror(errno));
        close(fd);
        return PROG_CACHE_DAMAGED;
    }
    enum prog_cache_result r = prog_cache_read(f, st.st_size, key, bytes, len, why, whylen);
    fclose(f);
    return r;
}

/* Writes header and bytes to f and makes them durable. */
static int prog_cache_write(FILE *f, const struct prog_cache_key *key,
                            const unsigned char *bytes, size_t len)
{
    unsigned char h[PROG_CACHE_HEADER_BYTES];
    memcpy(h, PROG_CACHE_MAGIC, PROG_CACHE_MAGIC_LEN);
    prog_cache_put_u32(h + PROG_CACHE_OFF_VERSION, PROG_CACHE_VERSION);
    prog_cache_put_u32(h + PROG_CACHE_OFF_VERSION + 4, 0);
    prog_cache_put_u64(h + PROG_CACHE_OFF_LENGTH, len);
    memcpy(h + PROG_CACHE_OFF_KEY, key->b, PROG_CACHE_KEY_BYTES);
    prog_cache_sha256(bytes, len, h + PROG_CACHE_OFF_DIGEST);
    if (fwrite(h, 1, sizeof h, f) != sizeof h || fwrite(bytes, 1, len, f) != len ||
        fflush(f) != 0 || fsync(fileno(f)) != 0)
        return -1;
    return 0;
}

/* The rename is durable once the directory is. */
static void prog_cache_sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

int prog_cache_store(struct prog_cache *c, const struct prog_cache_key *key,
                     const unsigned char *bytes, size_t len)
{
    char path[PROG_CACHE_PATH_MAX], tmp[PROG_CACHE_PATH_MAX], hex[2 * PROG_CACHE_KEY_BYTES + 1];
    if (len == 0 || len > PROG_CACHE_MAX_BYTES)
        return -1;
    prog_cache_path(c, key, path, sizeof path);
    prog_cache_hex(key, hex);
    snprintf(tmp, sizeof tmp, "%s/" PROG_CACHE_TMP_PREFIX "%s-XXXXXX", c->dir, hex);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        prog_cache_write_failed(c, "create a file");
        return -1;
    }
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        close(fd);
        unlink(tmp);
        prog_cache_write_failed(c, "write");
        return -1;
    }
    int rc = prog_cache_write(f, key, bytes, len);
    if (fclose(f) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -1;
    if (rc != 0) {
        prog_cache_write_failed(c, "write an entry");
        unlink(tmp);
        return -1;
    }
    prog_cache_sync_dir(c->dir);
    return 0;
}
