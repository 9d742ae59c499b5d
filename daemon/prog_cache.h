/* SPDX-License-Identifier: MIT */
/* prog_cache.h: ampd's cache of built kernel programs (issue 36).
 *
 * Building the kernels is most of a start: seconds on PoCL, more on
 * NVIDIA's compiler. The bytes a driver gives back for a built program
 * (clGetProgramInfo CL_PROGRAM_BINARIES, taken by dev_cache.c) are kept
 * here, one file per program, named by a SHA-256 of everything that
 * decides them (struct prog_cache_id). Each file carries the key and a
 * digest of its bytes, checked before anything is handed to a driver: a
 * damaged or mismatched entry reads as damaged, and the caller builds and
 * stores it anew. Files are written to a temporary in the same directory,
 * fsynced and renamed over the old, so a crash leaves either entry whole.
 *
 * This file knows bytes and files only; OpenCL stays in the device layer.
 */
#ifndef AMPD_PROG_CACHE_H
#define AMPD_PROG_CACHE_H

#include <stddef.h>

/* --cache-dir's value that turns the cache off. */
#define PROG_CACHE_OFF "none"
#define PROG_CACHE_KEY_BYTES 32   /* SHA-256 */
/* The directory's name, and an entry's path in it (the name, a slash, the
 * key in hex, a suffix or a temporary's affixes). */
#define PROG_CACHE_DIR_MAX 3072
#define PROG_CACHE_PATH_MAX 4096
/* Largest entry read: a program binary is KiBs to a few MiBs; a header
 * claiming more is garbage, not a reason to allocate it. */
#define PROG_CACHE_MAX_BYTES (256u * 1024 * 1024)

/* What decides a built program's bytes. Every field is a NUL-terminated
 * string the caller owns; none may be NULL. */
struct prog_cache_id {
    const char *platform;          /* CL_PLATFORM_NAME */
    const char *platform_version;  /* CL_PLATFORM_VERSION */
    const char *device;            /* CL_DEVICE_NAME */
    const char *driver;            /* CL_DRIVER_VERSION */
    const char *source;            /* the kernel file's text */
    const char *options;           /* the build options */
};

struct prog_cache_key {
    unsigned char b[PROG_CACHE_KEY_BYTES];
};

enum prog_cache_result {
    PROG_CACHE_HIT = 0,      /* *bytes holds the entry, checked */
    PROG_CACHE_MISS = 1,     /* no entry for the key */
    PROG_CACHE_DAMAGED = 2,  /* an entry that failed a check: why says which */
};

struct prog_cache;

/* The key of id: a SHA-256 over each field, length-prefixed (so that no
 * two different ids can run together into the same bytes) and over the
 * entry format's version. */
void prog_cache_key(const struct prog_cache_id *id, struct prog_cache_key *key);

/* The directory --cache-dir names: dir itself, or for "" the default:
 * $CACHE_DIRECTORY (systemd's CacheDirectory=; the first of a
 * colon-separated list), else $XDG_CACHE_HOME/ampd, else $HOME/.cache/ampd.
 * Into out (len bytes); -1 with err naming --cache-dir when it does not
 * fit or no default exists. */
int prog_cache_resolve(const char *dir, char *out, size_t len, char *err, size_t errlen);

/* Opens the cache at --cache-dir dir (see prog_cache_resolve). *out is
 * NULL for PROG_CACHE_OFF, else a cache the caller closes. The directory
 * is created (mode 0700) if missing; one that cannot be is logged once and
 * the cache stays open, storing nothing. With the cache on, the drivers'
 * own cache is set up in the environment (unless the operator set it):
 * NVIDIA's (CUDA_CACHE_PATH) under the directory. PoCL's kernel cache is
 * the unit's to turn off (POCL_KERNEL_CACHE=0 in systemd/ampd.service.in). Call it before any OpenCL call and before threads start
 * (setenv). Returns 0, or -1 with err naming --cache-dir when dir is
 * unusable (too long); with no default to be had (dir "", no variable
 * set) the cache is off, logged, and 0 returned. */
int prog_cache_open(const char *dir, struct prog_cache **out, char *err, size_t errlen);

void prog_cache_close(struct prog_cache *c);

/* The directory in use (valid until prog_cache_close). */
const char *prog_cache_dir(const struct prog_cache *c);

/* The entry of key, checked (magic, version, key, length, digest). On a
 * hit *bytes is malloc'd (the caller frees it) and *len its size. On
 * DAMAGED, why says what failed. Safe from any thread. */
enum prog_cache_result prog_cache_load(struct prog_cache *c, const struct prog_cache_key *key,
                                       unsigned char **bytes, size_t *len, char *why,
                                       size_t whylen);

/* Stores len bytes as key's entry, replacing any, atomically (temporary
 * file in the directory, fsync, rename, fsync of the directory). The
 * first failure is logged (the cache says it cannot write once), later
 * ones at debug level. Returns 0 or -1. Safe from any thread. */
int prog_cache_store(struct prog_cache *c, const struct prog_cache_key *key,
                     const unsigned char *bytes, size_t len);

/* The entry file of key under c's directory, into out (len bytes). */
void prog_cache_path(const struct prog_cache *c, const struct prog_cache_key *key, char *out,
                     size_t len);

#endif
