/* kernels.c: lookup in the table of embedded kernel sources (kernels.h).
 * The table itself is generated from kernels/NAME.cl by
 * cmake/embed_kernels.cmake; dev_discover.c builds every entry per device. */
#include "kernels.h"

#include <string.h>

const char *kernel_source_find(const char *name)
{
    if (!name)
        return NULL;
    for (const struct kernel_source *k = kernel_sources; k->name; k++)
        if (strcmp(k->name, name) == 0)
            return k->source;
    return NULL;
}
