/* SPDX-License-Identifier: MIT */
/* status.c: the names of gRPC status codes (see status.h). */
#include "status.h"

const char *status_name(enum status_code code)
{
    switch (code) {
#define STATUS_CASE(name, value) case STATUS_##name: return #name;
        GRPC_STATUS_MAP(STATUS_CASE)
#undef STATUS_CASE
    default: return "?";
    }
}

void status_count(struct status_counts *c, enum status_code code)
{
    if (c && (unsigned)code < STATUS_CODE_COUNT)
        atomic_fetch_add_explicit(&c->by_code[code], 1, memory_order_relaxed);
}

uint64_t status_counted(const struct status_counts *c, enum status_code code)
{
    if ((unsigned)code >= STATUS_CODE_COUNT)
        return 0;
    return atomic_load_explicit(&c->by_code[code], memory_order_relaxed);
}
