/* SPDX-License-Identifier: MIT */
/* log.c: leveled lines on stderr, journal priorities, a per-call rate
 * limit (see log.h). */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* One line, prefixes included; a longer one is cut. */
#define LOG_LINE_MAX 1024
#define LOG_NS_PER_S 1000000000ull
#define LOG_NS_PER_MS 1000000L

static atomic_int log_threshold = LOG_INFO;   /* lines above it are dropped */
static bool log_journal;   /* set by log_init() before any thread logs */

/* The per-call limit's token bucket: tokens are lines, refilled at
 * LOG_CALL_RATE a second up to LOG_CALL_BURST. */
static pthread_mutex_t log_bucket_lock = PTHREAD_MUTEX_INITIALIZER;
static double log_tokens = LOG_CALL_BURST;   /* under log_bucket_lock, as below */
static uint64_t log_refilled_ns;
static uint64_t log_dropped;                 /* lines refused since the last one let through */

static const char *const log_words[] = {
#define LOG_LEVEL_WORD(name, word, prio) word,
    LOG_LEVEL_MAP(LOG_LEVEL_WORD)
#undef LOG_LEVEL_WORD
};

static const int log_priorities[] = {
#define LOG_LEVEL_PRIO(name, word, prio) prio,
    LOG_LEVEL_MAP(LOG_LEVEL_PRIO)
#undef LOG_LEVEL_PRIO
};

void log_init(void)
{
    /* "DEV:INODE" of the journal's stream; stderr still being it means a
     * line's priority prefix is read, not shown. */
    const char *js = getenv("JOURNAL_STREAM");
    struct stat st;
    unsigned long long dev, ino;
    log_journal = js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0
                  && (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

const char *log_level_name(enum log_level level)
{
    return (unsigned)level < LOG_LEVEL_COUNT ? log_words[level] : "?";
}

int log_level_parse(const char *word, enum log_level *out)
{
    for (int i = 0; i < LOG_LEVEL_COUNT; i++) {
        if (strcmp(word, log_words[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

void log_set_level(enum log_level level)
{
    atomic_store_explicit(&log_threshold, (int)level, memory_order_relaxed);
}

bool log_enabled(enum log_level level)
{
    return (int)level <= atomic_load_explicit(&log_threshold, memory_order_relaxed);
}

/* A line's time where the journal does not add its own: UTC, RFC 3339,
 * milliseconds ("2026-11-28T17:20:01.123Z "). Returns its length. */
static int log_timestamp(char *buf, size_t len)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
    return (int)n + snprintf(buf + n, len - n, ".%03ldZ ", ts.tv_nsec / LOG_NS_PER_MS);
}

/* Formats and writes one line with a single fwrite(): stderr is
 * unbuffered, so the line goes out at once, and the stream's lock keeps
 * threads' lines whole. */
static void log_vline(enum log_level level, const char *fmt, va_list ap)
{
    char line[LOG_LINE_MAX];
    int n = 0;
    if (log_journal)
        n = snprintf(line, sizeof line, "<%d>", log_priorities[level]);
    else
        n = log_timestamp(line, sizeof line);
    n += snprintf(line + n, sizeof line - (size_t)n, "ampd: ");
    if (level != LOG_INFO)
        n += snprintf(line + n, sizeof line - (size_t)n, "%s: ", log_words[level]);
    int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    size_t len = m < 0 ? (size_t)n : (size_t)n + (size_t)m;
    if (len > sizeof line - 2)
        len = sizeof line - 2;   /* cut: room for the newline */
    /* Messages quote clients' text (a path, a field): one line stays one. */
    for (size_t i = (size_t)n; i < len; i++)
        if ((unsigned char)line[i] < ' ' || line[i] == 0x7f)
            line[i] = '?';
    line[len++] = '\n';
    fwrite(line, 1, len, stderr);   /* a failed log write has nowhere to go */
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    if ((unsigned)level >= LOG_LEVEL_COUNT || !log_enabled(level))
        return;
    va_list ap;
    va_start(ap, fmt);
    log_vline(level, fmt, ap);
    va_end(ap);
}

static uint64_t log_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * LOG_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* Takes a token; returns false when the bucket is empty. *dropped gets
 * the lines refused before this one (said once, with it). */
static bool log_bucket_take(uint64_t *dropped)
{
    uint64_t now = log_now_ns();
    pthread_mutex_lock(&log_bucket_lock);
    if (log_refilled_ns) {
        log_tokens += (double)(now - log_refilled_ns) * LOG_CALL_RATE / LOG_NS_PER_S;
        if (log_tokens > LOG_CALL_BURST)
            log_tokens = LOG_CALL_BURST;
    }
    log_refilled_ns = now;
    bool ok = log_tokens >= 1;
    if (ok) {
        log_tokens -= 1;
        *dropped = log_dropped;
        log_dropped = 0;
    } else {
        log_dropped++;
    }
    pthread_mutex_unlock(&log_bucket_lock);
    return ok;
}

void log_call(enum log_level level, const char *fmt, ...)
{
    uint64_t dropped;
    if ((unsigned)level >= LOG_LEVEL_COUNT || !log_enabled(level) || !log_bucket_take(&dropped))
        return;
    if (dropped)
        log_msg(LOG_WARN, "%llu call lines not logged (over %d a second)",
                (unsigned long long)dropped, LOG_CALL_RATE);
    va_list ap;
    va_start(ap, fmt);
    log_vline(level, fmt, ap);
    va_end(ap);
}
