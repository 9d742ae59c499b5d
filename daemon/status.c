/* status.c: the names of gRPC status codes (see status.h). */
#include "status.h"

const char *status_name(enum status_code code)
{
    switch (code) {
#define STATUS_CASE(name, value) case STATUS_##name: return #name;
        STATUS_MAP(STATUS_CASE)
#undef STATUS_CASE
    default: return "?";
    }
}
