/* SPDX-License-Identifier: MIT */
/* term.c: what reaches a terminal. A job's data bytes: written to a file
 * or a pipe they are exact; on a terminal that no `-o -` asked for, bytes
 * that are not text are refused before any reaches the screen (control
 * bytes can reprogram a terminal; curl refuses the same way), and text
 * that does not end a line gets a newline so the prompt starts on its own
 * line. io.c and stream.c route their stdout writes through here.
 * Text that came from the daemon (its messages, device names, version):
 * term_escape() writes its control characters as \xNN, so a daemon, or
 * whoever is on the other end of --address, cannot drive the terminal.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ampctl.h"

#define TERM_DEL 0x7f
#define TERM_C1_END 0xa0       /* U+0080..U+009F: C1 controls (CSI is U+009B) */
#define TERM_UTF8_CONT(c) (((c) & 0xc0) == 0x80)

void term_out_init(struct term_out *t, const char *path)
{
    memset(t, 0, sizeof *t);
    /* -o - is the user saying "my terminal, whatever the bytes". */
    t->guarded = path == NULL && isatty(STDOUT_FILENO);
}

/* Text: no C0 control byte but tab, newline and carriage return, and no
 * DEL. Bytes of 0x80 and up pass, so UTF-8 text does; random bytes show
 * a control byte within a few dozen. */
static int term_is_text(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        uint8_t c = p[i];
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == TERM_DEL)
            return 0;
    }
    return 1;
}

int term_out_check(struct term_out *t, const void *buf, size_t len)
{
    if (!t->guarded || len == 0)
        return AMPCTL_OK;
    if (!term_is_text(buf, len)) {
        t->refused = 1;
        ampctl_error("the output is binary and stdout is a terminal: not written; give -o FILE, "
                     "pipe it, or say -o - to write it to the terminal anyway");
        return AMPCTL_EUSAGE;
    }
    t->line_open = ((const uint8_t *)buf)[len - 1] != '\n';
    return AMPCTL_OK;
}

int term_out_end(struct term_out *t)
{
    if (!t->guarded || !t->line_open || t->refused)
        return AMPCTL_OK;
    t->line_open = 0;
    return io_write_all("-", "\n", 1);
}

/* The UTF-8 character at s (not at its NUL): its length in bytes, and its
 * code point in *code, or -1 for a byte that starts no valid sequence
 * (overlong, surrogate, past U+10FFFF, cut short), which is then a
 * character of one byte. */
static size_t term_utf8(const unsigned char *s, long *code)
{
    unsigned char c = s[0];
    size_t n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
             : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    *code = -1;
    if (n == 0)
        return 1;
    long v = n == 1 ? c : c & (0x7f >> n);
    for (size_t i = 1; i < n; i++) {
        if (!TERM_UTF8_CONT(s[i]))
            return 1;
        v = (v << 6) | (s[i] & 0x3f);
    }
    static const long min[] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (v < min[n] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 1;
    *code = v;
    return n;
}

int term_is_control(long code)
{
    return code < 0x20 || (code >= TERM_DEL && code < TERM_C1_END);
}

size_t term_char(const char *s, long *code)
{
    return term_utf8((const unsigned char *)s, code);
}

const char *term_escape(char *out, size_t cap, const char *s)
{
    size_t o = 0;
    while (*s) {
        long code;
        size_t n = term_char(s, &code);
        size_t need = term_is_control(code) ? n * TERM_ESCAPED_LEN : n;
        if (o + need >= cap)
            break;   /* whole characters only */
        for (size_t i = 0; i < n; i++) {
            if (term_is_control(code))
                o += (size_t)snprintf(out + o, cap - o, "\\x%02x", (unsigned char)s[i]);
            else
                out[o++] = s[i];
        }
        s += n;
    }
    if (cap)
        out[o] = '\0';
    return out;
}
