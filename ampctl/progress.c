/* SPDX-License-Identifier: MIT */
/* progress.c: the progress bar of streamed jobs, on stderr.
 *
 * Drawn only when stderr is a terminal (a script that captures stderr
 * gets error messages and nothing else) and not turned off with
 * --no-progress. One line, rewritten in place with '\r', at most every
 * PROGRESS_REDRAW_MS so a fast stream does not spend its time drawing.
 */
#include <unistd.h>

#include "ampctl.h"
#include "monotonic.h"

#define PROGRESS_REDRAW_MS 100
#define PROGRESS_BAR_WIDTH 30
#define PROGRESS_MB 1e6          /* MB/s, as disks and networks count */
#define PROGRESS_MIB (1024.0 * 1024.0)

static long long progress_now_ms(void)
{
    return (long long)monotonic_ms();
}

void progress_start(struct progress *p, int enabled, uint64_t total)
{
    p->on = enabled && isatty(STDERR_FILENO);
    p->total = total;
    p->start_ms = p->last_ms = progress_now_ms();
}

static void progress_draw(const struct progress *p, uint64_t done, long long now)
{
    double secs = (double)(now - p->start_ms) / 1000.0;
    double rate = secs > 0 ? (double)done / PROGRESS_MB / secs : 0;
    if (p->total) {
        uint64_t shown = done < p->total ? done : p->total;
        int fill = (int)((double)shown / (double)p->total * PROGRESS_BAR_WIDTH);
        char bar[PROGRESS_BAR_WIDTH + 1];
        for (int i = 0; i < PROGRESS_BAR_WIDTH; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[PROGRESS_BAR_WIDTH] = '\0';
        fprintf(stderr, "\r[%s] %.1f / %.1f MiB %3d%%  %.1f MB/s\033[K", bar,
                (double)shown / PROGRESS_MIB, (double)p->total / PROGRESS_MIB,
                (int)((double)shown * 100 / (double)p->total), rate);
    } else {
        fprintf(stderr, "\r%.1f MiB sent  %.1f MB/s\033[K", (double)done / PROGRESS_MIB, rate);
    }
    fflush(stderr);
}

void progress_update(struct progress *p, uint64_t done)
{
    if (!p->on)
        return;
    long long now = progress_now_ms();
    if (now - p->last_ms < PROGRESS_REDRAW_MS)
        return;
    p->last_ms = now;
    progress_draw(p, done, now);
}

void progress_end(struct progress *p, uint64_t done, int ok)
{
    if (!p->on)
        return;
    if (ok) {
        progress_draw(p, done, progress_now_ms());
        fputc('\n', stderr);
    } else {
        fputs("\r\033[K", stderr); /* the error message starts on a clean line */
    }
    fflush(stderr);
    p->on = 0;
}
