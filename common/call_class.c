/* SPDX-License-Identifier: MIT */
/* call_class.c: see call_class.h. */
#include "call_class.h"

#include <string.h>

static const char *const call_class_names[CALL_CLASS_PRIORITIES] = CALL_CLASS_PRIORITY_NAMES;

const char *call_class_priority_name(int p)
{
    return p >= 0 && p < CALL_CLASS_PRIORITIES ? call_class_names[p] : "?";
}

int call_class_priority_parse(const char *v, size_t len)
{
    for (int p = 0; p < CALL_CLASS_PRIORITIES; p++)
        if (strlen(call_class_names[p]) == len && memcmp(call_class_names[p], v, len) == 0)
            return p;
    return -1;
}
