/* SPDX-License-Identifier: MIT */
/* kernels.h: the OpenCL C sources of kernels/NAME.cl, embedded at build time
 * by cmake/embed_kernels.cmake (one entry per file, named after it). */
#ifndef AMPD_KERNELS_H
#define AMPD_KERNELS_H

struct kernel_source {
    const char *name;   /* file name without .cl, e.g. "reverse" */
    const char *source; /* NUL-terminated OpenCL C */
};

/* Terminated by an entry whose name is NULL. */
extern const struct kernel_source kernel_sources[];

#endif
