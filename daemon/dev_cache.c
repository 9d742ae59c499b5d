/* SPDX-License-Identifier: MIT */
/* dev_cache.c: the device side of the program cache (prog_cache.h).
 *
 * dev_build_program() (dev_discover.c) asks here first: the key comes from
 * what the device and its platform say of themselves (names, versions, the
 * driver's version), the kernel's source and the build options; a hit
 * becomes a program through clCreateProgramWithBinary and a build (which a
 * driver needs even for its own binary). A miss, a damaged entry or a
 * binary the driver refuses is built from source by the caller, which then
 * stores the result here, replacing what was there.
 */
#include "dev_internal.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "prog_cache.h"

/* Set before devices open (main.c), read by whichever thread opens them. */
static struct prog_cache *dev_cache;

/* Lengths of the strings the key reads (the drivers' names and versions
 * are tens of bytes; longer ones are cut alike at every start). */
#define DEV_CACHE_NAME_MAX 256

void dev_use_prog_cache(struct prog_cache *c)
{
    dev_cache = c;
}

struct prog_cache *dev_cache_get(void)
{
    return dev_cache;
}

static void dev_cache_platform(cl_platform_id p, cl_platform_info what, char *buf, size_t len)
{
    buf[0] = '\0';
    if (clGetPlatformInfo(p, what, len, buf, NULL) != CL_SUCCESS)
        buf[0] = '\0';
    buf[len - 1] = '\0';
}

static void dev_cache_device(cl_device_id id, cl_device_info what, char *buf, size_t len)
{
    buf[0] = '\0';
    if (clGetDeviceInfo(id, what, len, buf, NULL) != CL_SUCCESS)
        buf[0] = '\0';
    buf[len - 1] = '\0';
}

void dev_cache_key(const struct dev *d, const char *source, const char *options,
                   struct prog_cache_key *key)
{
    char plat[DEV_CACHE_NAME_MAX], plat_ver[DEV_CACHE_NAME_MAX], name[DEV_CACHE_NAME_MAX],
        driver[DEV_CACHE_NAME_MAX];
    dev_cache_platform(d->platform, CL_PLATFORM_NAME, plat, sizeof plat);
    dev_cache_platform(d->platform, CL_PLATFORM_VERSION, plat_ver, sizeof plat_ver);
    dev_cache_device(d->id, CL_DEVICE_NAME, name, sizeof name);
    dev_cache_device(d->id, CL_DRIVER_VERSION, driver, sizeof driver);
    struct prog_cache_id id = {plat, plat_ver, name, driver, source, options};
    prog_cache_key(&id, key);
}

/* A program from bytes the cache checked; NULL (logged) when the driver
 * refuses them. */
static cl_program dev_cache_program(struct dev *d, const char *name, const unsigned char *bytes,
                                    size_t len, const char *options)
{
    cl_int rc, status = CL_SUCCESS;
    cl_program p = clCreateProgramWithBinary(d->ctx, 1, &d->id, &len, &bytes, &status, &rc);
    if (rc == CL_SUCCESS && status == CL_SUCCESS)
        rc = clBuildProgram(p, 1, &d->id, options, NULL, NULL);
    if (rc == CL_SUCCESS && status == CL_SUCCESS)
        return p;
    log_msg(LOG_WARN, "kernel cache: the driver refused kernels/%s.cl's entry (%s): building it",
            name, dev_cl_error_name(rc != CL_SUCCESS ? rc : status));
    if (p)
        clReleaseProgram(p);
    return NULL;
}

cl_program dev_cache_load(struct dev *d, const char *name, const struct prog_cache_key *key,
                          const char *options)
{
    if (!dev_cache)
        return NULL;
    unsigned char *bytes;
    size_t len;
    char why[256], path[PROG_CACHE_PATH_MAX];
    switch (prog_cache_load(dev_cache, key, &bytes, &len, why, sizeof why)) {
    case PROG_CACHE_MISS:
        return NULL;
    case PROG_CACHE_DAMAGED:
        prog_cache_path(dev_cache, key, path, sizeof path);
        log_msg(LOG_WARN, "kernel cache: %s (kernels/%s.cl): %s: building it anew", path, name,
                why);
        return NULL;
    case PROG_CACHE_HIT:
        break;
    }
    cl_program p = dev_cache_program(d, name, bytes, len, options);
    free(bytes);
    return p;
}

void dev_cache_store(const struct prog_cache_key *key, cl_program p)
{
    if (!dev_cache)
        return;
    size_t len = 0;
    if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL) != CL_SUCCESS ||
        len == 0 || len > PROG_CACHE_MAX_BYTES)
        return;   /* a driver without binaries: nothing to keep */
    unsigned char *bytes = malloc(len);
    if (!bytes)
        return;
    if (clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bytes, &bytes, NULL) == CL_SUCCESS)
        prog_cache_store(dev_cache, key, bytes, len);
    free(bytes);
}

void dev_cache_report(const struct dev *d, size_t hits, size_t programs)
{
    if (!dev_cache)
        return;
    log_msg(LOG_INFO, "%s: %zu of %zu kernel programs from the cache %s%s", d->info.name, hits,
            programs, prog_cache_dir(dev_cache), hits == programs ? "" : " (the rest built)");
}
