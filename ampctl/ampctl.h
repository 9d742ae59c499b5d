/* SPDX-License-Identifier: MIT */
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

#include <getopt.h>
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

/* Inputs at least this large (and inputs of unknown size, e.g. a pipe,
 * that reach it) are streamed in chunks instead of sent in one message. */
#define AMPCTL_STREAM_THRESHOLD (16u * 1024 * 1024)
/* The longest bearer token ampctl reads, with its NUL. */
#define AMPCTL_TOKEN_MAX 1024
/* Longest error line ampctl prints (its text, before term_escape): the
 * daemon's messages are shorter (libampclient keeps 511 bytes). */
#define AMPCTL_ERROR_MAX 2048

/* --transport: how data reaches the daemon. */
enum ampctl_transport {
    AMPCTL_TRANSPORT_AUTO,   /* the faster path for one job: today the socket (region.c says why) */
    AMPCTL_TRANSPORT_SHM,    /* regions, or an error */
    AMPCTL_TRANSPORT_SOCKET, /* messages: one unary call, or a stream */
};

struct ampctl {
    const char *address; /* --address, $AMP_ADDRESS or AMP_DEFAULT_ADDRESS */
    amp_opts opts;       /* --device, --timeout */
    int json;            /* --json */
    uint64_t stream_threshold; /* --stream-threshold, default AMPCTL_STREAM_THRESHOLD */
    int no_progress;     /* --no-progress */
    enum ampctl_transport transport; /* --transport */
    amp_connect_opts connect; /* --tls* options, --timeout as its timeout_ms, token */
    const char *token_file;   /* --token-file, else $AMP_TOKEN_FILE; NULL: none */
    char token[AMPCTL_TOKEN_MAX]; /* read from it: connect.token points here */
    amp_conn *conn;      /* opened by ampctl_connect(), closed by main */
};

struct ampctl_cmd {
    const char *name;
    const char *summary;
    int (*run)(struct ampctl *ctx, int argc, char **argv); /* argv[0] is "ampctl NAME" */
    void (*usage)(FILE *out);
    /* The command's own options, as its getopt_long takes them: main.c
     * lifts ampctl's options out of its arguments around these, and the
     * shell completion lists them. */
    const struct option *options;
    const char *short_options;
    int json;   /* --json changes its output; elsewhere --json is refused, not ignored */
};

extern const struct ampctl_cmd cmd_reverse, cmd_transform, cmd_hist, cmd_fill, cmd_pipeline,
    cmd_devices, cmd_status, cmd_health, cmd_bench, cmd_completion, cmd_top;

/* main.c's tables: the commands, ampctl's own options (getopt_long's
 * short string without the leading '+'), and those of a command that
 * takes only --help. */
extern const struct ampctl_cmd *const ampctl_cmds[];
extern const size_t ampctl_ncmds;
extern const struct option ampctl_options[];
extern const char ampctl_short_options[];
extern const struct option ampctl_help_options[];
extern const char ampctl_help_short_options[];

/* --- main.c ------------------------------------------------------------- */

/* Connects ctx->conn if not yet connected. Returns AMPCTL_OK or an exit code. */
int ampctl_connect(struct ampctl *ctx);

/* Reports a failed amp_connect_with() rc and returns its exit code. */
int ampctl_connect_failed(int rc);

/* Completes ctx->connect for connections a command opens itself (bench):
 * the address checked and the token file read, once. Returns AMPCTL_OK or
 * an exit code. */
int ampctl_connect_prepare(struct ampctl *ctx);

/* Reports a failed library call rc ("ampctl: <message>") and returns the
 * exit code it maps to. */
int ampctl_fail(struct ampctl *ctx, int rc);

/* Prints "ampctl: <msg>" and a pointer to --help; returns AMPCTL_EUSAGE. */
int ampctl_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* After getopt printed its own complaint: the pointer to --help only. */
int ampctl_bad_option(const char *cmd);
/* The same after getopt_long over argv with the long options opts (NULL:
 * the common ones only) returned '?': first, for a mistyped "--name", the
 * nearest option of opts or the common ones ("did you mean '--output'?"). */
struct option;
int ampctl_bad_option_in(const char *cmd, char *const *argv, const struct option *opts);

/* Parses the options of a command that takes none but --help; its
 * arguments are left at argv[optind..argc). Returns -1 to go on, or an
 * exit code (0 after printing the help). */
int ampctl_parse_help(const struct ampctl_cmd *cmd, int argc, char **argv);
/* ampctl_parse_help() for a command that takes no arguments either. */
int ampctl_parse_none(const struct ampctl_cmd *cmd, int argc, char **argv);

/* Prints "ampctl: <msg>" on stderr. */
void ampctl_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* --- lift.c --------------------------------------------------------------- */

/* One getopt_long option set: long options ({NULL}-terminated) and the
 * short option string. */
struct lift_set {
    const struct option *longs;
    const char *shorts;
};

/* Moves the options of common (with their values) out of a command's
 * argv[1..*argc) into lifted, in order, leaving the rest compacted in argv
 * and *argc reduced. An option that own also names (a unique prefix
 * included) stays: the command's wins. Stops at "--", which stays for the
 * command's getopt. Returns how many entries went into lifted, which has
 * room for *argc. */
int lift_options(const struct lift_set *own, const struct lift_set *common, int *argc,
                 char **argv, char **lifted);

/* --- suggest.c ------------------------------------------------------------ */

/* The name of names nearest to typed when it is close enough to be a typo
 * of it (a few edits, a swap of neighbours, or a prefix), else NULL. */
const char *suggest_nearest(const char *typed, const char *const *names, size_t n);

/* token.c: reads the token of the file at path (TOKEN or NAME TOKEN on
 * its first line that is not blank or a comment) into token. Returns
 * AMPCTL_OK, AMPCTL_EIO (cannot read it) or AMPCTL_EUSAGE (no token in
 * it), the reason printed. */
int token_read(const char *path, char *token, size_t tokenlen);

/* --- io.c ----------------------------------------------------------------- */

/* Reads all of path (NULL or "-": stdin) into a malloc'd *buf. */
int io_read_all(const char *path, uint8_t **buf, size_t *len);

/* Writes len bytes to path (NULL or "-": stdout), creating or truncating it.
 * A job's data output: to stdout on a terminal (path NULL), term.c's rules
 * apply (binary refused with AMPCTL_EUSAGE, a newline after text). */
int io_write_all(const char *path, const void *buf, size_t len);

/* Opens path (NULL or "-": stdout) for text output; io_close_output checks
 * the writes went through, and a file appears only then (out_file.c). */
int io_open_output(const char *path, FILE **out);
int io_close_output(const char *path, FILE *f);

/* --- out_file.c ------------------------------------------------------------ */

/* Opens -o path (not stdout) so that it appears whole or not at all: a
 * temporary beside it, renamed over it by out_file_close(path, fd, 1); with
 * ok 0, or when a signal ends ampctl first, the temporary goes and path is
 * as it was. A path that exists and is not a regular file is written in
 * place. fd may be -1 at close (already closed, e.g. by fclose). */
int out_file_open(const char *path, int *fd);
int out_file_close(const char *path, int fd, int ok);

/* True when output to path (NULL or "-": stdout) goes to a terminal. */
int io_is_terminal(const char *path);

/* A data command's input (a file or stdin), read no further than needed to
 * choose between one unary call and a stream. */
struct io_input {
    const char *name;     /* the path, or "stdin", for messages */
    int fd;               /* open descriptor; closed by io_input_close unless stdin */
    uint8_t *head;        /* bytes already read, malloc'd; head_pos <= head_len <= head_cap */
    size_t head_len, head_pos, head_cap;
    uint64_t size;        /* whole input size when known (a regular file), else 0 */
    int size_known;
    int eof;              /* fd is read to its end: head holds the whole input */
    int failed;           /* a read failed after opening (message already printed) */
    uint64_t taken;       /* bytes io_input_read() handed out */
};

/* Opens path (NULL or "-": stdin). A regular file under threshold bytes,
 * or any input that ends before threshold bytes, is read whole into head
 * (eof set); otherwise only up to threshold bytes of a pipe are read, and
 * the rest waits for io_input_read(). */
int io_input_open(const char *path, uint64_t threshold, struct io_input *in);

/* Reads the rest of the input into head (for jobs that need the total
 * length of an input of unknown size). */
int io_input_slurp(struct io_input *in);

/* True when the input should be streamed: not all read, or threshold bytes or more. */
int io_input_streams(const struct io_input *in, uint64_t threshold);

/* amp_read_cb over an io_input (ctx): head first, then the descriptor.
 * A read error prints the reason, sets in->failed and aborts with AMP_EIO. */
long io_input_read(void *ctx, void *buf, size_t cap);

void io_input_close(struct io_input *in);

/* Opens path (NULL or "-": stdout) for binary output; *fd is closed by
 * io_close_fd (which reports a failed close) unless it is stdout; a file
 * appears only when io_close_fd is told the job went ok (out_file.c). */
int io_open_fd(const char *path, int *fd);
int io_close_fd(const char *path, int fd, int ok);
/* Writes all len bytes of buf to fd (name: the file, for the message).
 * AMPCTL_OK, or AMPCTL_EIO with the reason printed. */
int io_write_fd(int fd, const char *name, const void *buf, size_t len);

/* --- human.c -------------------------------------------------------------- */

/* Long enough for any human_bytes or human_us text. */
#define HUMAN_TEXT_MAX 32

/* bytes as "512 B", "1.5 GiB" (powers of 1024). */
void human_bytes(char *buf, size_t cap, uint64_t bytes);
/* us microseconds as "850.0 us", "118.5 ms", "2.35 s". */
void human_us(char *buf, size_t cap, double us);

/* --- term.c --------------------------------------------------------------- */

/* One data output's way to stdout on a terminal; inactive for a file, a
 * pipe, or an explicit `-o -`. */
struct term_out {
    int guarded;   /* stdout is a terminal and no -o was given */
    int line_open; /* the last byte written was not a newline */
    int refused;   /* binary bytes were refused (message printed) */
};

void term_out_init(struct term_out *t, const char *path);
/* Call before writing buf to stdout: AMPCTL_OK, or AMPCTL_EUSAGE (message
 * printed) for bytes that are not text on a guarded terminal. */
int term_out_check(struct term_out *t, const void *buf, size_t len);
/* After the last write: ends an open line of text on a guarded terminal. */
int term_out_end(struct term_out *t);

/* Bytes of the UTF-8 character at s (not at its NUL), its code point in
 * *code: -1 for a byte that starts no valid sequence (one byte long). */
size_t term_char(const char *s, long *code);
/* Whether term_char's code is one a terminal may act on rather than show:
 * C0, DEL, C1, or an invalid byte. */
int term_is_control(long code);
/* Text from the daemon made safe to print: s with every control character
 * (term_is_control) written as \xNN per byte, into out (cap bytes, always
 * terminated, cut at a whole character). Returns out. */
const char *term_escape(char *out, size_t cap, const char *s);
/* Bytes term_escape writes for one byte of a control character ("\xNN"),
 * and the room it needs for text of up to n bytes, whatever it holds. */
#define TERM_ESCAPED_LEN 4
#define TERM_ESCAPED_MAX(n) (TERM_ESCAPED_LEN * (n) + 1)

/* --- job.c ---------------------------------------------------------------- */

/* A data command's job: its steps over the input, where its data output
 * goes and where its histograms go. */
struct job_spec {
    const amp_step *steps;
    size_t nsteps;
    const char *output;   /* the data output's file (NULL or "-": stdout); it
                           * must not be the input file */
    int has_output;       /* the last data step's result is written to output */
    amp_hist *hists;      /* one per histogram step, in order (nhists) */
    size_t nhists;
};

/* A command's own single call with the whole input in memory (in->head),
 * its results going where j says; arg is the command's own. Returns an
 * exit code. */
typedef int (*job_unary_fn)(struct ampctl *ctx, const struct io_input *in,
                            const struct job_spec *j, const void *arg);

/* Runs j over in the way open to it: over shared-memory regions where
 * --transport says so (region_job), as a stream when the input is large
 * or of unknown size (stream_job), else by unary(ctx, in, j, arg).
 * Returns an exit code. */
int job_run(struct ampctl *ctx, struct io_input *in, const struct job_spec *j,
            job_unary_fn unary, const void *arg);

/* --- stream.c ------------------------------------------------------------- */

/* Runs j over in as one Stream call (total_length when the input's size
 * is known), with a progress bar on a terminal. Returns an exit code; a
 * local read or write failure is AMPCTL_EIO. */
int stream_job(struct ampctl *ctx, struct io_input *in, const struct job_spec *j);

/* --- region.c ------------------------------------------------------------- */

/* What region_job() returns when the job should take the socket path
 * (any --transport but shm, or nothing to share): not an exit code. */
#define REGION_UNAVAILABLE (-1)

/* Runs j over in as one job over shared-memory regions, as stream_job()
 * does over a stream (same output). Returns an exit code, or
 * REGION_UNAVAILABLE. */
int region_job(struct ampctl *ctx, struct io_input *in, const struct job_spec *j);

/* --- progress.c ------------------------------------------------------------ */

/* A progress bar on stderr: bytes sent of the total, percent, MiB/s and
 * the time left, within the terminal's width, redrawn at most every
 * PROGRESS_REDRAW_MS. Inactive unless enabled. */
struct progress {
    int on;
    uint64_t total;        /* 0: unknown */
    long long start_ms, last_ms;
};

/* enabled: the user did not say --no-progress; the bar is still only drawn
 * when stderr is a terminal. */
void progress_start(struct progress *p, int enabled, uint64_t total);
void progress_update(struct progress *p, uint64_t done);
/* ok: draws the final state and ends the line; else erases the bar so an
 * error message starts on a clean line. */
void progress_end(struct progress *p, uint64_t done, int ok);

/* --- parse.c ---------------------------------------------------------------- */

/* Each returns 0, or -1 when text is not a whole number of the kind in range. */
int parse_u64(const char *text, uint64_t *out);
int parse_i64(const char *text, int64_t *out);
int parse_u32(const char *text, uint32_t max, uint32_t *out);
int parse_double(const char *text, double *out);
int parse_float(const char *text, float *out);
/* A duration in ms: a number with an optional unit, ms, s, m or h
 * ("500ms", "2s", "1.5m"); a bare number is milliseconds. */
int parse_duration_ms(const char *text, uint32_t max, uint32_t *out);
/* "LO:HI" with doubles on both sides. */
int parse_range(const char *text, double *lo, double *hi);
/* "uint8", "uint32", "int32", "float32", "int64". */
int parse_type(const char *text, amp_type *out);
const char *parse_type_name(amp_type t);
/* Bytes of one element of t. */
size_t parse_type_size(amp_type t);
/* "add", "xor", "and", "or", "set", "map". */
int parse_op(const char *text, amp_op *out);

/* --- json.c ----------------------------------------------------------------- */

/* Writes s as a JSON string literal, quotes included. */
void json_string(FILE *f, const char *s);

/* Writes h as one line {"step":N,"counts":[...],"below":N,"above":N,
 * "nan":N,"device":"..."}; "step" only when step >= 0. */
void json_hist(FILE *f, const amp_hist *h, long step, const char *device);

/* Writes l as {"jobs_running":N,"jobs_queued":N,"memory_in_use":N,
 * "memory_capacity":N}. */
void json_device_load(FILE *f, const amp_device_load *l);

/* --- cmd_devices.c ------------------------------------------------------------- */

/* A device's load as one line's text: "1 running, 0 queued, 1.0 MiB of 2.0 GiB". */
void devices_load_text(char *buf, size_t cap, const amp_device_load *l);

/* --- chart.c ----------------------------------------------------------------- */

/* Draws a histogram on a terminal: one line per bin, or per group of bins
 * when there are more than fit; bars scaled to the terminal width. lo/hi
 * give the bin edges of typed histograms; byte_bins for 256 byte bins. */
void chart_draw(FILE *f, const amp_hist *h, int byte_bins, double lo, double hi);

#endif
