/* SPDX-License-Identifier: MIT */
/* term.c: a job's data bytes on a terminal. Written to a file or a pipe
 * they are exact; on a terminal that no `-o -` asked for, bytes that are
 * not text are refused before any reaches the screen (control bytes can
 * reprogram a terminal; curl refuses the same way), and text that does
 * not end a line gets a newline so the prompt starts on its own line.
 * io.c and stream.c route their stdout writes through here.
 */
#include <string.h>
#include <unistd.h>

#include "ampctl.h"

#define TERM_DEL 0x7f

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
