/* SPDX-License-Identifier: MIT */
/* test_dev_tune.c: kernel tuning (daemon/dev_tune.c) on the default
 * device with the GPU kernel shapes (a CPU host runs them too): with
 * nothing kept, the tuner measures every variant, picks one of each
 * family and keeps it in the program cache, and the device runs jobs
 * with it from the programs it measured while the chosen ones alone are
 * built into the cache for the next start; the next load takes the kept
 * choice (a hit, whatever the device ran before); a damaged entry is no
 * choice (tuned anew, never used); --retune ignores a good entry. */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "dev.h"
#include "dev_internal.h"
#include "prog_cache.h"

/* What the tuner runs on here: PoCL on two cores would spend its whole
 * time bound on one family at the GPU's size. */
#define TUNE_TEST_BYTES ((size_t)4 << 20)

struct tune_env {
    char dir[64];
    struct prog_cache *cache;
    struct dev **devs;
    size_t n;
};

static struct dev *tune_open(struct tune_env *e)
{
    strcpy(e->dir, "/tmp/amp-tune-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(e->dir));
    char err[512] = "";
    ck_assert_msg(prog_cache_open(e->dir, &e->cache, err, sizeof err) == 0, "%s", err);
    dev_use_prog_cache(e->cache);
    ck_assert_msg(dev_open_all(&e->devs, &e->n, err, sizeof err) == 0, "%s", err);
    struct dev *d = e->devs[0];
    dev_set_shape_for_test(d, DEV_SHAPE_GPU);
    dev_set_tune_bytes_for_test(TUNE_TEST_BYTES);
    return d;
}

static void tune_close(struct tune_env *e)
{
    dev_close_all(e->devs, e->n);
    dev_use_prog_cache(NULL);
    prog_cache_close(e->cache);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", e->dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void tune_expect_valid(const struct dev_variants *v)
{
    ck_assert_int_ge(v->reverse, DEV_VARIANT_V1);
    ck_assert_int_le(v->reverse, DEV_VARIANT_V2);
    ck_assert_int_ge(v->transform, DEV_VARIANT_V1);
    ck_assert_int_le(v->transform, DEV_VARIANT_V2);
    ck_assert_int_ge(v->hist256, DEV_VARIANT_V1);
    ck_assert_int_le(v->hist256, DEV_VARIANT_V3);
    ck_assert_int_ge(v->map, DEV_VARIANT_V1);
    ck_assert_int_le(v->map, DEV_VARIANT_V3);
    ck_assert_int_ge(v->histn, DEV_VARIANT_V1);
    ck_assert_int_le(v->histn, DEV_VARIANT_V2);
    ck_assert_uint_le(v->hist256_groups, 4);   /* one of 0 (as fit), 3, 4 */
    ck_assert_uint_le(v->histn_groups, 4);
}

/* Overwrites every file in dir with garbage of its own length. */
static void tune_damage_all(const char *dir)
{
    DIR *dh = opendir(dir);
    ck_assert_ptr_nonnull(dh);
    struct dirent *de;
    while ((de = readdir(dh))) {
        if (de->d_name[0] == '.')
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        int fd = open(path, O_WRONLY);
        if (fd < 0)
            continue;   /* a directory (NVIDIA's own cache) */
        off_t len = lseek(fd, 0, SEEK_END);
        lseek(fd, 0, SEEK_SET);
        for (off_t i = 0; i < len; i++)
            ck_assert_int_eq(write(fd, "\xa5", 1), 1);
        close(fd);
    }
    closedir(dh);
}

START_TEST(measures_keeps_and_reads_the_choice)
{
    struct tune_env e;
    struct dev *d = tune_open(&e);
    dev_use_retune(false);
    ck_assert(!dev_tune_load(d));               /* nothing kept yet */
    char err[512] = "";
    ck_assert_msg(dev_tune_run(d, err, sizeof err) == 0, "%s", err);
    struct dev_variants chosen = d->variants;
    tune_expect_valid(&chosen);
    /* It serves from every variant's programs, built to measure them; the
     * chosen ones alone went to the cache meanwhile, for the next start. */
    ck_assert(d->all_variants);
    ck_assert_uint_gt(d->nkernels, 0);
    dev_serving_build_wait(d);
    d->all_variants = false;
    ck_assert_msg(dev_build_programs(d, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_gt(d->nprograms, 0);
    ck_assert_uint_eq(d->cache_hits, d->nprograms);

    /* A later start: whatever it had, it reads the kept choice. */
    d->variants.reverse = chosen.reverse == DEV_VARIANT_V1 ? DEV_VARIANT_V2 : DEV_VARIANT_V1;
    d->variants.hist256 = chosen.hist256 == DEV_VARIANT_V3 ? DEV_VARIANT_V1 : DEV_VARIANT_V3;
    d->variants.hist256_groups = chosen.hist256_groups + 1;
    ck_assert(dev_tune_load(d));
    ck_assert_int_eq(d->variants.reverse, chosen.reverse);
    ck_assert_int_eq(d->variants.transform, chosen.transform);
    ck_assert_int_eq(d->variants.hist256, chosen.hist256);
    ck_assert_int_eq(d->variants.map, chosen.map);
    ck_assert_int_eq(d->variants.histn, chosen.histn);
    ck_assert_uint_eq(d->variants.hist256_groups, chosen.hist256_groups);
    ck_assert_uint_eq(d->variants.histn_groups, chosen.histn_groups);

    /* --retune: the kept choice is not read. */
    dev_use_retune(true);
    ck_assert(!dev_tune_load(d));
    dev_use_retune(false);
    ck_assert(dev_tune_load(d));

    /* A damaged entry is no choice at all. */
    tune_damage_all(e.dir);
    d->variants.reverse = chosen.reverse == DEV_VARIANT_V1 ? DEV_VARIANT_V2 : DEV_VARIANT_V1;
    ck_assert(!dev_tune_load(d));
    ck_assert_int_ne(d->variants.reverse, chosen.reverse);   /* left alone */
    tune_close(&e);
}
END_TEST

/* Every choice the tuner can make builds alone (the serving build, not
 * every variant: a kernel file's #if around one variant once swallowed
 * code of another) and holds the kernel its jobs run. */
START_TEST(every_choice_builds)
{
    struct tune_env e;
    struct dev *d = tune_open(&e);
    static const struct {
        size_t field;        /* offsetof the family in struct dev_variants */
        enum dev_variant v;
        const char *kernel;
    } choices[] = {
        {offsetof(struct dev_variants, reverse), DEV_VARIANT_V1, "reverse_bytes"},
        {offsetof(struct dev_variants, transform), DEV_VARIANT_V1, "transform_xor"},
        {offsetof(struct dev_variants, hist256), DEV_VARIANT_V1, "hist256_local"},
        {offsetof(struct dev_variants, hist256), DEV_VARIANT_V2, "hist256_bytes"},
        {offsetof(struct dev_variants, map), DEV_VARIANT_V3, "transform_map_v3"},
        {offsetof(struct dev_variants, histn), DEV_VARIANT_V2, "histn_inc_u32"},
    };
    for (size_t i = 0; i < sizeof choices / sizeof choices[0]; i++) {
        struct dev_variants v = DEV_VARIANTS_SERVING;
        *(enum dev_variant *)((char *)&v + choices[i].field) = choices[i].v;
        d->variants = v;
        d->all_variants = false;
        char err[512] = "";
        ck_assert_msg(dev_build_programs(d, err, sizeof err) == 0, "%s v%d: %s",
                      choices[i].kernel, (int)choices[i].v, err);
        ck_assert_msg(dev_kernel(d, choices[i].kernel), "%s not built", choices[i].kernel);
    }
    tune_close(&e);
}
END_TEST

/* The text "ampctl devices" shows fits amp_device.kernels (DEV_KERNELS_TEXT,
 * 48 bytes with its NUL) whatever the choice, the longest included. */
START_TEST(description_fits)
{
    struct tune_env e;
    struct dev *d = tune_open(&e);
    struct dev_variants keep = d->variants;
    d->variants.reverse = d->variants.transform = DEV_VARIANT_V2;
    d->variants.map = d->variants.hist256 = DEV_VARIANT_V3;
    d->variants.histn = DEV_VARIANT_V2;
    d->variants.hist256_groups = d->variants.histn_groups = 64;   /* the cache's bound */
    char text[256];
    dev_tune_describe(d, text, sizeof text);
    ck_assert_msg(strlen(text) < DEV_KERNELS_TEXT, "\"%s\": %zu characters", text, strlen(text));
    ck_assert_msg(strstr(text, "h256 v3/64") && strstr(text, "map v3"), "%s", text);
    d->variants = keep;
    tune_close(&e);
}
END_TEST

START_TEST(cache_off_still_tunes)
{
    struct tune_env e;
    struct dev *d = tune_open(&e);
    dev_use_prog_cache(NULL);
    ck_assert(!dev_tune_load(d));
    char err[512] = "";
    ck_assert_msg(dev_tune_run(d, err, sizeof err) == 0, "%s", err);
    tune_expect_valid(&d->variants);
    ck_assert(!dev_tune_load(d));               /* nowhere to keep it */
    tune_close(&e);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("dev_tune");
    const TTest *const tests[] = {measures_keeps_and_reads_the_choice, every_choice_builds,
                                  description_fits, cache_off_still_tunes, NULL};
    TCase *tc = check_run_case(s, "tune", tests);
    tcase_set_timeout(tc, 300);
    return check_run(s, CK_FORK_GETENV);
}
