/* SPDX-License-Identifier: MIT */
/* dev_fixture.h: what the kernel tests share: the default OpenCL device,
 * opened once per test program through dev_open_all(), jobs built and run
 * on it with dev_run(), and reproducible random data. */
#ifndef AMP_TEST_DEV_FIXTURE_H
#define AMP_TEST_DEV_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dev.h"
#include "job.h"

/* The default device (index 0); aborts the test if none opens. Where
 * $AMP_TEST_POCL_BASIC is "batches", PoCL's basic device runs its batches
 * (dev_set_pocl_batches), as in ampd. */
struct dev *fixture_dev(void);
/* Makes the default device run the GPU kernels v names (building them if
 * it has only the serving ones) and returns what it ran before. */
struct dev_variants;
struct dev_variants fixture_variants(struct dev_variants v);

/* What a test that needs two devices returns where there are not two:
 * ctest reports it as skipped (SKIP_RETURN_CODE). */
#define FIXTURE_SKIPPED 77

/* Ends the test program as skipped (FIXTURE_SKIPPED, with a line saying
 * why) unless the default device (the first listed) has a twin of its type,
 * so that jobs can be placed on or split over two devices. A child process
 * looks, and prints why when no device opens. Returns how many devices
 * share that type (two with PoCL's twins, four on a four-GPU host). */
size_t fixture_need_twins(void);

/* The device name a job split over n devices of the default type
 * reports begins with: "0+1+...+(n-1): " (devices of a type are listed
 * together, the default's first). */
void fixture_split_name(size_t n, char *buf, size_t len);

/* Closes what fixture_dev() opened (call from an unchecked teardown). */
void fixture_close(void);

/* A job of nsteps steps whose input is a copy of in[0, len). */
struct job *fixture_job(size_t nsteps, const void *in, size_t len);

/* Runs job on the default device. */
void fixture_run(struct job *job);

/* Fails the test at the first byte where got differs from want (one
 * assertion, not one per byte: libcheck records every assertion). */
void fixture_expect_bytes(const uint8_t *got, const uint8_t *want, size_t n, const char *what);

/* Deterministic pseudo-random bytes. */
void fixture_random(void *buf, size_t len, uint64_t seed);
uint64_t fixture_rand64(uint64_t *state);

#endif
