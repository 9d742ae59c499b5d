/* SPDX-License-Identifier: MIT */
/* json.c: the little JSON ampctl writes (--json): string literals escaped
 * per RFC 8259, and histograms (hist, pipeline); other structure is
 * printed by the commands. */
#include <inttypes.h>

#include "ampctl.h"

void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

void json_device_load(FILE *f, const amp_device_load *l)
{
    fprintf(f, "{\"jobs_running\":%" PRIu32 ",\"jobs_queued\":%" PRIu32
               ",\"memory_in_use\":%" PRIu64 ",\"memory_capacity\":%" PRIu64 "}",
            l->jobs_running, l->jobs_queued, l->memory_in_use, l->memory_capacity);
}

void json_hist(FILE *f, const amp_hist *h, long step, const char *device)
{
    fputc('{', f);
    if (step >= 0)
        fprintf(f, "\"step\":%ld,", step);
    fputs("\"counts\":[", f);
    for (uint32_t i = 0; i < h->bins; i++)
        fprintf(f, "%s%" PRIu64, i ? "," : "", h->counts[i]);
    fprintf(f, "],\"below\":%" PRIu64 ",\"above\":%" PRIu64 ",\"nan\":%" PRIu64 ",\"device\":",
            h->below, h->above, h->nan);
    json_string(f, device);
    fputs("}\n", f);
}
