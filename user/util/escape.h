/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Text for a terminal, from bytes others chose: a targets file's lines,
 * a target's symbols and paths, what a target's helper wrote. Raw, an
 * escape sequence in them would drive the terminal (move the cursor,
 * retitle the window, hide the line before it) and invalid UTF-8 garbles
 * what follows. Every message proftrace prints goes through here
 * (log.c): control characters other than newline and tab, DEL, the C1
 * controls (U+0080-U+009F) and bytes that are not valid UTF-8 become
 * \xNN; valid UTF-8 (non-ASCII names) stays as it is.
 */
#ifndef PT_ESCAPE_H
#define PT_ESCAPE_H

#include <stddef.h>

/*
 * src (n bytes) escaped into dst (always NUL-terminated when dstlen > 0;
 * cut at a character's boundary when it does not fit). The length the
 * whole of it needs, as snprintf() returns.
 */
size_t pt_escape__term(char *dst, size_t dstlen, const char *src, size_t n);

#endif
