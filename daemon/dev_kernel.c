/* SPDX-License-Identifier: MIT */
/* dev_kernel.c: a device's kernels by name, and the work-group sizes
 * each allows (dev_internal.h). */
#include "dev_internal.h"

#include <string.h>

cl_kernel dev_kernel(const struct dev *d, const char *name)
{
    for (size_t i = 0; i < d->nkernels; i++)
        if (strcmp(d->kernels[i].name, name) == 0)
            return d->kernels[i].k;
    return NULL;
}

size_t dev_kernel_wg_max(const struct dev *d, cl_kernel k)
{
    size_t max = 0;
    if (clGetKernelWorkGroupInfo(k, d->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof max, &max, NULL) !=
            CL_SUCCESS ||
        max == 0)
        max = (size_t)d->info.max_work_group_size;
    if (max > d->info.max_work_group_size)
        max = (size_t)d->info.max_work_group_size;
    return max ? max : 1;
}

size_t dev_kernel_wg(const struct dev *d, cl_kernel k, size_t want)
{
    size_t max = dev_kernel_wg_max(d, k);
    return want < max ? (want ? want : 1) : max;
}
