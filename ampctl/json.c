/* SPDX-License-Identifier: MIT */
/* json.c: the little JSON ampctl writes (--json): string literals escaped
 * per RFC 8259, and histograms (hist, pipeline); other structure is
 * printed by the commands. */
#include <inttypes.h>

#include "ampctl.h"

/* Control characters (term_is_control: C0, DEL, C1) as \u00XX, and a
 * byte that is not UTF-8 as \u00XX of its value, so that the daemon's
 * text these strings carry never drives a terminal the JSON is shown on
 * and the JSON stays UTF-8. */
void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    while (*s) {
        long code;
        size_t n = term_char(s, &code);
        switch (code) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (term_is_control(code))
                fprintf(f, "\\u%04lx", code < 0 ? (unsigned long)(unsigned char)*s
                                                  : (unsigned long)code);
            else
                fwrite(s, 1, n, f);
        }
        s += n;
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
