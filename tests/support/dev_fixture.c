/* SPDX-License-Identifier: MIT */
/* dev_fixture.c: see dev_fixture.h. */
#include "dev_fixture.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dev_internal.h"

static struct dev **fixture_devs;
static size_t fixture_ndevs;

/* As ampd's main does where it chose PoCL's drivers, when the test's
 * environment says so (tests/CMakeLists.txt: POCL_DEVICES="pthread
 * basic" with AMP_TEST_POCL_BASIC=batches). */
static void fixture_pocl_batches(void)
{
    const char *basic = getenv("AMP_TEST_POCL_BASIC");
    dev_set_pocl_batches(basic && strcmp(basic, "batches") == 0);
}

struct dev *fixture_dev(void)
{
    if (!fixture_devs) {
        char err[512] = "";
        fixture_pocl_batches();
        int rc = dev_open_all(&fixture_devs, &fixture_ndevs, err, sizeof err);
        ck_assert_msg(rc == 0, "dev_open_all: %s", err);
        ck_assert_uint_ge(fixture_ndevs, 1);
    }
    return fixture_devs[0];
}

struct dev_variants fixture_variants(struct dev_variants v)
{
    struct dev *d = fixture_dev();
    struct dev_variants was = d->variants;
    char err[512] = "";
    ck_assert_msg(dev_set_variants_for_test(d, &v, err, sizeof err) == 0, "variants: %s", err);
    return was;
}

/* In a child process: OpenCL set up in a process that later forks (check's
 * CK_FORK) leaves the children with a runtime whose threads stayed behind
 * (PoCL's hang), so the test's own process never opens a device here. */
/* How many devices share the first (the default) device's type: what a
 * split job runs over. Asked in a child, so that this process's OpenCL
 * is left untouched (a test may set POCL_DEVICES after). */
static size_t fixture_split_count(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        struct dev **devs;
        size_t n, same = 0;
        char err[512];
        fixture_pocl_batches();
        if (dev_open_all(&devs, &n, err, sizeof err) != 0) {
            fprintf(stderr, "fixture_split_count: %s\n", err);
            _exit(0);
        }
        for (size_t i = 0; i < n; i++)
            same += dev_info(devs[i])->type == dev_info(devs[0])->type;
        dev_close_all(devs, n);
        _exit(same < 255 ? (int)same : 255);
    }
    int st = 0;
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? (size_t)WEXITSTATUS(st) : 0;
}

size_t fixture_need_twins(void)
{
    size_t n = fixture_split_count();
    if (n >= 2)
        return n;
    printf("SKIP: fewer than two devices of the default device's type\n");
    exit(FIXTURE_SKIPPED);
}

void fixture_split_name(size_t n, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%zu", i ? "+" : "", i);
    if (at < len)
        snprintf(buf + at, len - at, ": ");
}

void fixture_close(void)
{
    dev_close_all(fixture_devs, fixture_ndevs);
    fixture_devs = NULL;
    fixture_ndevs = 0;
}

struct job *fixture_job(size_t nsteps, const void *in, size_t len)
{
    struct job *job = job_new(nsteps);
    ck_assert_ptr_nonnull(job);
    if (len) {
        job->in = job->in_mem = malloc(len);
        ck_assert_ptr_nonnull(job->in);
        memcpy(job->in, in, len);
        job->in_mem_len = len;
    }
    job->in_len = len;
    return job;
}

void fixture_run(struct job *job)
{
    dev_run(fixture_dev(), job);
}

uint64_t fixture_rand64(uint64_t *state)
{
    /* splitmix64: good enough bits, trivially reproducible. */
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void fixture_random(void *buf, size_t len, uint64_t seed)
{
    uint8_t *p = buf;
    uint64_t s = seed;
    while (len >= 8) {
        uint64_t v = fixture_rand64(&s);
        memcpy(p, &v, 8);
        p += 8;
        len -= 8;
    }
    if (len) {
        uint64_t v = fixture_rand64(&s);
        memcpy(p, &v, len);
    }
}

void fixture_expect_bytes(const uint8_t *got, const uint8_t *want, size_t n, const char *what)
{
    if (n == 0 || memcmp(got, want, n) == 0)
        return;
    size_t i = 0;
    while (got[i] == want[i])
        i++;
    ck_abort_msg("%s, %zu bytes: byte %zu is %u, want %u", what, n, i, got[i], want[i]);
}
