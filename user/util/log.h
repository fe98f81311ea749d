/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proftrace's own messages on stderr, by level, and the live status line
 * (one line on a terminal, redrawn in place each second). Any message
 * clears the status line first, so the two never mix. Used by every
 * folder; depends on nothing.
 */
#ifndef PT_LOG_H
#define PT_LOG_H

#include <stdbool.h>

/* -v count: 0 quiet, 1 verbose (pt_vlog), 2 libbpf's debug output too. */
void pt_log__set_verbose(int level);
int pt_log__verbose(void);

/* A message on stderr ("proftrace: ..." is the caller's). */
void pt_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same, only with -v. */
void pt_vlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Redraw the status line (no newline): text replaces what is shown. */
void pt_log__status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Keep the last status line on screen and end it with a newline. */
void pt_log__status_end(void);
/* Erase the status line if it is shown (before writing anything else). */
void pt_log__clear_status(void);

#endif
