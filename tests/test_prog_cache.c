/* SPDX-License-Identifier: MIT */
/* test_prog_cache.c: prog_cache.c's files and keys, without a device: a
 * stored entry loads back as it was; every field of a program's identity
 * (a driver's version, the source...) makes another key, under which the
 * entry misses; changed bytes, a truncation, a garbage header or another
 * key's entry read as damaged, never as a hit, and a store replaces them;
 * a store leaves no temporary beside its entry; "none" turns the cache
 * off; a directory that cannot be made leaves a cache that stores nothing;
 * --cache-dir's default follows $CACHE_DIRECTORY, $XDG_CACHE_HOME, $HOME.
 * tests/test_prog_cache_daemon.py checks the same through a real ampd. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "prog_cache.h"

static char dir[64];
static struct prog_cache *cache;
static const unsigned char payload[] = "a program's bytes, as a driver gave them";

static const struct prog_cache_id base_id = {"Portable Computing Language", "OpenCL 3.0 PoCL 3.1",
                                             "pthread-cpu", "3.1", "kernel void k() {}",
                                             "-cl-std=CL1.2"};

static void key_of(const struct prog_cache_id *id, struct prog_cache_key *k)
{
    prog_cache_key(id, k);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/ampd-prog-cache-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char err[256];
    ck_assert_int_eq(prog_cache_open(dir, &cache, err, sizeof err), 0);
    ck_assert_ptr_nonnull(cache);
}

static void teardown(void)
{
    prog_cache_close(cache);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static enum prog_cache_result load(const struct prog_cache_key *k, char *why, size_t whylen)
{
    unsigned char *bytes = NULL;
    size_t len = 0;
    enum prog_cache_result r = prog_cache_load(cache, k, &bytes, &len, why, whylen);
    if (r == PROG_CACHE_HIT) {
        ck_assert_uint_eq(len, sizeof payload);
        ck_assert_mem_eq(bytes, payload, len);
    } else {
        ck_assert_ptr_null(bytes);
    }
    free(bytes);
    return r;
}

/* Stores the payload under base_id's key; its path into path. */
static void store_base(struct prog_cache_key *k, char *path, size_t len)
{
    key_of(&base_id, k);
    ck_assert_int_eq(prog_cache_store(cache, k, payload, sizeof payload), 0);
    prog_cache_path(cache, k, path, len);
}

START_TEST(stored_entry_loads_back)
{
    struct prog_cache_key k;
    char path[PROG_CACHE_PATH_MAX], why[128];
    key_of(&base_id, &k);
    ck_assert_int_eq(load(&k, why, sizeof why), PROG_CACHE_MISS);
    store_base(&k, path, sizeof path);
    ck_assert_int_eq(load(&k, why, sizeof why), PROG_CACHE_HIT);
}
END_TEST

/* Each field, changed alone, gives another key; the entry misses there. */
START_TEST(every_field_makes_another_key)
{
    struct prog_cache_key k, other;
    char path[PROG_CACHE_PATH_MAX], why[128];
    store_base(&k, path, sizeof path);
    for (int field = 0; field < 6; field++) {
        struct prog_cache_id id = base_id;
        const char **f[] = {&id.platform, &id.platform_version, &id.device, &id.driver,
                            &id.source, &id.options};
        *f[field] = "changed";
        key_of(&id, &other);
        ck_assert_mem_ne(k.b, other.b, PROG_CACHE_KEY_BYTES);
        ck_assert_int_eq(load(&other, why, sizeof why), PROG_CACHE_MISS);
    }
    /* Fields do not run together: "ab"+"c" is not "a"+"bc". */
    struct prog_cache_id a = base_id, b = base_id;
    a.device = "ab", a.driver = "c";
    b.device = "a", b.driver = "bc";
    key_of(&a, &k);
    key_of(&b, &other);
    ck_assert_mem_ne(k.b, other.b, PROG_CACHE_KEY_BYTES);
}
END_TEST

static void overwrite(const char *path, long at, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, at, at < 0 ? SEEK_END : SEEK_SET), 0);
    ck_assert_uint_eq(fwrite(bytes, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* Damaged in the way _i says, the entry reads as damaged; a store then
 * replaces it and it hits again. */
START_TEST(damaged_entry_is_never_a_hit)
{
    struct prog_cache_key k;
    char path[PROG_CACHE_PATH_MAX], why[128];
    store_base(&k, path, sizeof path);
    switch (_i) {
    case 0:   /* one byte of the program changed */
        overwrite(path, -3, "X", 1);
        break;
    case 1:   /* cut short, as a full disk mid-write leaves it */
        ck_assert_int_eq(truncate(path, 100), 0);
        break;
    case 2:   /* garbage over the header */
        overwrite(path, 0, "garbage garbage garbage", 23);
        break;
    case 3:   /* shorter than a header */
        ck_assert_int_eq(truncate(path, 10), 0);
        break;
    case 4: { /* another program's entry under this name */
        struct prog_cache_id id = base_id;
        id.driver = "3.2";
        struct prog_cache_key other;
        char other_path[PROG_CACHE_PATH_MAX];
        key_of(&id, &other);
        ck_assert_int_eq(prog_cache_store(cache, &other, payload, sizeof payload), 0);
        prog_cache_path(cache, &other, other_path, sizeof other_path);
        ck_assert_int_eq(rename(other_path, path), 0);
        break;
    }
    }
    ck_assert_int_eq(load(&k, why, sizeof why), PROG_CACHE_DAMAGED);
    ck_assert_str_ne(why, "");
    ck_assert_int_eq(prog_cache_store(cache, &k, payload, sizeof payload), 0);
    ck_assert_int_eq(load(&k, why, sizeof why), PROG_CACHE_HIT);
}
END_TEST

/* A store leaves its entry and nothing else: no temporary file. */
START_TEST(store_leaves_no_temporary)
{
    struct prog_cache_key k;
    char path[PROG_CACHE_PATH_MAX];
    store_base(&k, path, sizeof path);
    ck_assert_int_eq(prog_cache_store(cache, &k, payload, sizeof payload), 0);
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            files++;
            ck_assert_str_eq(e->d_name, strrchr(path, '/') + 1);
        }
    closedir(d);
    ck_assert_int_eq(files, 1);
}
END_TEST

START_TEST(none_turns_it_off)
{
    struct prog_cache *off = (struct prog_cache *)&off;
    char err[256];
    ck_assert_int_eq(prog_cache_open(PROG_CACHE_OFF, &off, err, sizeof err), 0);
    ck_assert_ptr_null(off);
}
END_TEST

/* A directory that cannot be made (its parent is a file): the cache is
 * open, a store fails, nothing is loaded. */
START_TEST(unwritable_directory_stores_nothing)
{
    char file[128], sub[256], err[256], why[128];
    snprintf(file, sizeof file, "%s/a-file", dir);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    snprintf(sub, sizeof sub, "%s/cache", file);
    struct prog_cache *c;
    ck_assert_int_eq(prog_cache_open(sub, &c, err, sizeof err), 0);
    ck_assert_ptr_nonnull(c);
    struct prog_cache_key k;
    key_of(&base_id, &k);
    ck_assert_int_eq(prog_cache_store(c, &k, payload, sizeof payload), -1);
    unsigned char *bytes;
    size_t len;
    ck_assert_int_ne(prog_cache_load(c, &k, &bytes, &len, why, sizeof why), PROG_CACHE_HIT);
    prog_cache_close(c);
}
END_TEST

/* No variable to make a default from: off (logged), not a failed start. */
START_TEST(no_default_is_off)
{
    unsetenv("CACHE_DIRECTORY");
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    struct prog_cache *c = (struct prog_cache *)&c;
    char err[256];
    ck_assert_int_eq(prog_cache_open("", &c, err, sizeof err), 0);
    ck_assert_ptr_null(c);
}
END_TEST

START_TEST(default_directory)
{
    char out[PROG_CACHE_DIR_MAX], err[256];
    setenv("CACHE_DIRECTORY", "/var/cache/ampd:/var/cache/other", 1);
    ck_assert_int_eq(prog_cache_resolve("", out, sizeof out, err, sizeof err), 0);
    ck_assert_str_eq(out, "/var/cache/ampd");
    unsetenv("CACHE_DIRECTORY");
    setenv("XDG_CACHE_HOME", "/x", 1);
    ck_assert_int_eq(prog_cache_resolve("", out, sizeof out, err, sizeof err), 0);
    ck_assert_str_eq(out, "/x/ampd");
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/home/u", 1);
    ck_assert_int_eq(prog_cache_resolve("", out, sizeof out, err, sizeof err), 0);
    ck_assert_str_eq(out, "/home/u/.cache/ampd");
    ck_assert_int_eq(prog_cache_resolve("/given", out, sizeof out, err, sizeof err), 0);
    ck_assert_str_eq(out, "/given");
    unsetenv("HOME");
    ck_assert_int_eq(prog_cache_resolve("", out, sizeof out, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "--cache-dir"));
    char longdir[PROG_CACHE_DIR_MAX + 2];
    memset(longdir, 'a', sizeof longdir - 1);
    longdir[sizeof longdir - 1] = '\0';
    ck_assert_int_eq(prog_cache_resolve(longdir, out, sizeof out, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "--cache-dir"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("prog_cache");
    const TTest *const tests[] = {stored_entry_loads_back, every_field_makes_another_key,
                                  store_leaves_no_temporary, none_turns_it_off,
                                  unwritable_directory_stores_nothing, default_directory,
                                  no_default_is_off,
                                  NULL};
    TCase *tc = check_run_case(s, "files", tests);
    tcase_add_checked_fixture(tc, setup, teardown);
    check_run_loop(tc, damaged_entry_is_never_a_hit, 0, 5);
    return check_run(s, CK_FORK_GETENV);
}
