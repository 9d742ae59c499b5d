/* fuzz_pinned.c: dev_pinned.c's one call that region.c makes, for the
 * harnesses, which link region.c but no OpenCL: no runner ever pins a
 * region here (region_pin is a runner's call), so every pin is NULL. */
#include <stdlib.h>

#include "dev.h"

void dev_pinned_free(struct dev_pinned *p)
{
    if (p)
        abort();   /* nothing here makes one */
}
