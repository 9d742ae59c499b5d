/* ampctl.h: what the ampctl files share.
 *
 * main.c parses the common options and dispatches to one cmd_*.c per
 * command; io.c reads and writes files, parse.c turns option text into
 * numbers, json.c writes JSON, chart.c draws histograms on a terminal.
 * Every function that can fail returns an exit code (AMPCTL_*), having
 * already printed why on stderr.
 */
#ifndef AMPCTL_H
#define AMPCTL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "amp.h"

/* Exit codes, documented in `ampctl --help`; scripts rely on them. */
enum {
    AMPCTL_OK = 0,
    AMPCTL_EREFUSED = 1, /* the daemon refused the job (or health: not serving) */
    AMPCTL_EUSAGE = 2,   /* bad command line */
    AMPCTL_ECONNECT = 3, /* cannot connect, or the connection broke */
    AMPCTL_EIO = 4,      /* local I/O error (file, stdout) or out of memory */
};

struct ampctl {
    const char *address; /* --address, $AMP_ADDRESS or AMP_DEFAULT_ADDRESS */
    amp_opts opts;       /* --device, --timeout */
    int json;            /* --json */
    amp_conn *conn;      /* opened by ampctl_connect(), closed by main */
};

struct ampctl_cmd {
    const char *name;
    const char *summary;
    int (*run)(struct ampctl *ctx, int argc, char **argv); /* argv[0] is "ampctl NAME" */
    void (*usage)(FILE *out);
};

extern const struct ampctl_cmd cmd_reverse, cmd_transform, cmd_hist, cmd_fill, cmd_devices,
    cmd_status, cmd_health;

/* --- main.c ------------------------------------------------------------- */

/* Connects ctx->conn if not yet connected. Returns AMPCTL_OK or an exit code. */
int ampctl_connect(struct ampctl *ctx);

/* Reports a failed library call rc ("ampctl: <message>") and returns the
 * exit code it maps to. */
int ampctl_fail(struct ampctl *ctx, int rc);

/* Prints "ampctl: <msg>" and a pointer to --help; returns AMPCTL_EUSAGE. */
int ampctl_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* After getopt printed its own complaint: the pointer to --help only. */
int ampctl_bad_option(const char *cmd);

/* Parses the options of a command that takes none but --help. Returns -1
 * to go on, or an exit code (0 after printing the help). */
int ampctl_parse_none(const struct ampctl_cmd *cmd, int argc, char **argv);

/* Prints "ampctl: <msg>" on stderr. */
void ampctl_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* --- io.c ----------------------------------------------------------------- */

/* Reads all of path (NULL or "-": stdin) into a malloc'd *buf. */
int io_read_all(const char *path, uint8_t **buf, size_t *len);

/* Writes len bytes to path (NULL or "-": stdout), creating or truncating it. */
int io_write_all(const char *path, const void *buf, size_t len);

/* Opens path (NULL or "-": stdout) for text output; io_close_output checks
 * the writes went through. */
int io_open_output(const char *path, FILE **out);
int io_close_output(const char *path, FILE *f);

/* True when output to path (NULL or "-": stdout) goes to a terminal. */
int io_is_terminal(const char *path);

/* --- parse.c ---------------------------------------------------------------- */

/* Each returns 0, or -1 when text is not a whole number of the kind in range. */
int parse_u64(const char *text, uint64_t *out);
int parse_i64(const char *text, int64_t *out);
int parse_u32(const char *text, uint32_t max, uint32_t *out);
int parse_double(const char *text, double *out);
int parse_float(const char *text, float *out);
/* "LO:HI" with doubles on both sides. */
int parse_range(const char *text, double *lo, double *hi);
/* "uint8", "uint32", "int32", "float32", "int64". */
int parse_type(const char *text, amp_type *out);
const char *parse_type_name(amp_type t);

/* --- json.c ----------------------------------------------------------------- */

/* Writes s as a JSON string literal, quotes included. */
void json_string(FILE *f, const char *s);

/* --- chart.c ----------------------------------------------------------------- */

/* Draws a histogram on a terminal: one line per bin, or per group of bins
 * when there are more than fit; bars scaled to the terminal width. lo/hi
 * give the bin edges of typed histograms; byte_bins for 256 byte bins. */
void chart_draw(FILE *f, const amp_hist *h, int byte_bins, double lo, double hi);

#endif
