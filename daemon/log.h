/* SPDX-License-Identifier: MIT */
/* log.h: ampd's one way to say something on stderr.
 *
 * Every line the daemon prints goes through log_msg(): one fwrite() to
 * stderr per line, so lines from several threads never interleave, prefixed "ampd: "
 * and, below info, with its level's word. When stderr is the systemd
 * journal ($JOURNAL_STREAM names stderr's device and inode, as
 * sd-daemon(3) documents), each line starts with its syslog priority
 * ("<3>" ... "<7>") so journalctl shows and filters levels. The level is
 * an atomic: SIGHUP changes it (server.c) while I/O loops log.
 */
#ifndef AMPD_LOG_H
#define AMPD_LOG_H

#include <stdbool.h>

/* The levels, most severe first: XX(name, word, syslog priority). */
#define LOG_LEVEL_MAP(XX)      \
    XX(ERROR, "error", 3)      \
    XX(WARN, "warn", 4)        \
    XX(INFO, "info", 6)        \
    XX(DEBUG, "debug", 7)

enum log_level {
#define LOG_LEVEL_ENUM(name, word, prio) LOG_##name,
    LOG_LEVEL_MAP(LOG_LEVEL_ENUM)
#undef LOG_LEVEL_ENUM
    LOG_LEVEL_COUNT
};

/* Per-call lines (log_call): at most this many a second, daemon-wide, in
 * bursts of up to LOG_CALL_BURST; the rest are counted and the count is
 * said with the next line let through. A client failing calls in a loop
 * then costs the disk at most ~LOG_CALL_RATE lines a second. */
#define LOG_CALL_RATE 50
#define LOG_CALL_BURST 200

/* Looks at $JOURNAL_STREAM once; call before any thread logs. */
void log_init(void);

/* "warn" for LOG_WARN; "?" outside the list. */
const char *log_level_name(enum log_level level);

/* The level named word ("error", "warn", "info", "debug"). Returns 0, or
 * -1 for another word. */
int log_level_parse(const char *word, enum log_level *out);

/* Lines above level are dropped from now on (any thread). */
void log_set_level(enum log_level level);

/* Whether a line at level would be printed. */
bool log_enabled(enum log_level level);

/* Prints one line at level (printf format, no newline needed). */
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A line about one call (log_msg under the LOG_CALL_RATE limit). */
void log_call(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
