/* SPDX-License-Identifier: MIT */
/* progress.c: the progress bar of streamed jobs, on stderr.
 *
 * Drawn only when stderr is a terminal (a script that captures stderr
 * gets error messages and nothing else) and not turned off with
 * --no-progress. One line, rewritten in place with '\r', at most every
 * PROGRESS_REDRAW_MS so a fast stream does not spend its time drawing,
 * and never as wide as the terminal (a line that wraps is a new line at
 * each redraw): the figures first, the bar in what room is left, the
 * figures cut from the end when even they do not fit. Sizes and rates
 * in MiB and MiB/s, both in powers of 1024.
 */
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "ampctl.h"
#include "monotonic.h"

#define PROGRESS_REDRAW_MS 100
#define PROGRESS_BAR_MAX 40       /* widest bar, on a wide terminal */
#define PROGRESS_BAR_MIN 10       /* narrower than this: no bar */
#define PROGRESS_COLS_DEFAULT 80  /* when the terminal does not say */
#define PROGRESS_LINE_MAX 512
#define PROGRESS_MIB (1024.0 * 1024.0)
#define PROGRESS_S_PER_MIN 60
#define PROGRESS_S_PER_H 3600

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

/* Columns a line may use: one less than the terminal's, so the cursor
 * never reaches the last column (where some terminals wrap). */
static int progress_cols(void)
{
    struct winsize ws;
    int cols = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col
                                                                          : PROGRESS_COLS_DEFAULT;
    return cols > 1 ? cols - 1 : 1;
}

/* "ETA m:ss" or "ETA h:mm:ss" for secs seconds. */
static void progress_eta(double secs, char *buf, size_t len)
{
    long s = (long)(secs + 0.5);
    if (s >= PROGRESS_S_PER_H)
        snprintf(buf, len, "  ETA %ld:%02ld:%02ld", s / PROGRESS_S_PER_H,
                 s % PROGRESS_S_PER_H / PROGRESS_S_PER_MIN, s % PROGRESS_S_PER_MIN);
    else
        snprintf(buf, len, "  ETA %ld:%02ld", s / PROGRESS_S_PER_MIN, s % PROGRESS_S_PER_MIN);
}

static void progress_draw(const struct progress *p, uint64_t done, long long now, int last)
{
    double secs = (double)(now - p->start_ms) / 1000.0;
    double rate = secs > 0 ? (double)done / PROGRESS_MIB / secs : 0;
    char text[PROGRESS_LINE_MAX], eta[32] = "";
    int fill = -1;   /* of the bar, per mille; -1: no total, no bar */
    if (p->total) {
        uint64_t shown = done < p->total ? done : p->total;
        fill = (int)((double)shown * 1000 / (double)p->total);
        if (!last && rate > 0)
            progress_eta(((double)(p->total - shown) / PROGRESS_MIB) / rate, eta, sizeof eta);
        snprintf(text, sizeof text, " %.1f/%.1f MiB %3d%%  %.1f MiB/s%s",
                 (double)shown / PROGRESS_MIB, (double)p->total / PROGRESS_MIB, fill / 10, rate,
                 eta);
    } else {
        snprintf(text, sizeof text, "%.1f MiB sent  %.1f MiB/s", (double)done / PROGRESS_MIB,
                 rate);
    }
    int cols = progress_cols(), n = (int)strlen(text);
    int bar = fill < 0 ? 0 : cols - n - 2;   /* "[" bar "]" text */
    bar = bar > PROGRESS_BAR_MAX ? PROGRESS_BAR_MAX : bar;
    char line[PROGRESS_LINE_MAX + PROGRESS_BAR_MAX + 4];
    int at = 0;
    if (bar >= PROGRESS_BAR_MIN) {
        line[at++] = '[';
        for (int i = 0; i < bar; i++)
            line[at++] = i < fill * bar / 1000 ? '#' : '.';
        line[at++] = ']';
    }
    int room = cols - at;
    at += snprintf(line + at, sizeof line - (size_t)at, "%.*s", room > 0 ? room : 0,
                   text + (at == 0 && text[0] == ' '));
    fprintf(stderr, "\r%.*s\033[K", at, line);
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
    progress_draw(p, done, now, 0);
}

void progress_end(struct progress *p, uint64_t done, int ok)
{
    if (!p->on)
        return;
    if (ok) {
        progress_draw(p, done, progress_now_ms(), 1);
        fputc('\n', stderr);
    } else {
        fputs("\r\033[K", stderr); /* the error message starts on a clean line */
    }
    fflush(stderr);
    p->on = 0;
}
