/* SPDX-License-Identifier: MIT */
/* chart.c: a histogram as a horizontal bar chart for a terminal.
 *
 * One line per bin; past CHART_MAX_ROWS bins, neighbouring bins are summed
 * into groups so the chart fits a screen. Bars are scaled to the widest
 * row and drawn with Unicode eighth blocks in a UTF-8 locale (smooth ends),
 * '#' otherwise.
 */
#include <langinfo.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "ampctl.h"

#define CHART_MAX_ROWS 32
#define CHART_DEFAULT_COLS 80
#define CHART_MIN_BAR 10
#define CHART_LABEL_MAX 48
#define CHART_EIGHTHS 8

/* U+258F..U+2588: 1/8 .. 8/8 blocks. */
static const char *const chart_blocks[CHART_EIGHTHS] = {
    "\u258f", "\u258e", "\u258d", "\u258c", "\u258b", "\u258a", "\u2589", "\u2588",
};

static int chart_columns(void)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *env = getenv("COLUMNS");
    int n = env ? atoi(env) : 0;
    return n > 0 ? n : CHART_DEFAULT_COLS;
}

static int chart_utf8(void)
{
    const char *cs = nl_langinfo(CODESET);
    return cs && strcmp(cs, "UTF-8") == 0;
}

static void chart_label(char *buf, size_t cap, uint32_t first, uint32_t last, int byte_bins,
                        double lo, double w)
{
    if (byte_bins && first == last)
        snprintf(buf, cap, "%3" PRIu32, first);
    else if (byte_bins)
        snprintf(buf, cap, "%3" PRIu32 "-%3" PRIu32, first, last);
    else
        snprintf(buf, cap, "[%.4g, %.4g)", lo + w * first, lo + w * (last + 1));
}

static void chart_bar(FILE *f, uint64_t count, uint64_t max, int width, int utf8)
{
    if (max == 0)
        return;
    /* In eighths of a cell; long double keeps 64-bit counts exact enough. */
    uint64_t eighths = (uint64_t)((long double)count * width * CHART_EIGHTHS / max);
    if (count > 0 && eighths == 0)
        eighths = 1; /* a nonzero bin always shows */
    if (!utf8) {
        for (uint64_t i = 0; i < (eighths + CHART_EIGHTHS - 1) / CHART_EIGHTHS; i++)
            fputc('#', f);
        return;
    }
    for (uint64_t i = 0; i < eighths / CHART_EIGHTHS; i++)
        fputs(chart_blocks[CHART_EIGHTHS - 1], f);
    if (eighths % CHART_EIGHTHS)
        fputs(chart_blocks[eighths % CHART_EIGHTHS - 1], f);
}

/* Last bin of row r (64-bit: bins may be near UINT32_MAX). */
static uint32_t chart_last(uint32_t r, uint32_t group, uint32_t bins)
{
    uint64_t last = (uint64_t)(r + 1) * group - 1;
    return last < bins ? (uint32_t)last : bins - 1;
}

void chart_draw(FILE *f, const amp_hist *h, int byte_bins, double lo, double hi)
{
    if (h->bins == 0)
        return;
    uint32_t group = (uint32_t)(((uint64_t)h->bins + CHART_MAX_ROWS - 1) / CHART_MAX_ROWS);
    uint32_t rows = (uint32_t)(((uint64_t)h->bins + group - 1) / group);
    double w = (hi - lo) / h->bins;
    uint64_t *sum = calloc(rows, sizeof *sum);
    if (!sum)
        return;
    uint64_t max = 0;
    int count_w = 1, label_w = 1;
    char label[CHART_LABEL_MAX];
    for (uint32_t r = 0; r < rows; r++) {
        uint32_t last = chart_last(r, group, h->bins);
        for (uint64_t i = (uint64_t)r * group; i <= last; i++)
            sum[r] += h->counts[i];
        max = sum[r] > max ? sum[r] : max;
        chart_label(label, sizeof label, r * group, last, byte_bins, lo, w);
        int lw = (int)strlen(label);
        int cw = snprintf(NULL, 0, "%" PRIu64, sum[r]);
        label_w = lw > label_w ? lw : label_w;
        count_w = cw > count_w ? cw : count_w;
    }
    int width = chart_columns() - label_w - count_w - 3;
    if (width < CHART_MIN_BAR)
        width = CHART_MIN_BAR;
    int utf8 = chart_utf8();
    for (uint32_t r = 0; r < rows; r++) {
        uint32_t last = chart_last(r, group, h->bins);
        chart_label(label, sizeof label, r * group, last, byte_bins, lo, w);
        fprintf(f, "%*s %*" PRIu64 " ", label_w, label, count_w, sum[r]);
        chart_bar(f, sum[r], max, width, utf8);
        fputc('\n', f);
    }
    free(sum);
}
