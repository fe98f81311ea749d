// SPDX-License-Identifier: BSD-2-Clause
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

static int verbose;
/* The live status line is on screen: clear it before any other message. */
static bool status_shown;

void pt_log__set_verbose(int level)
{
	verbose = level;
}

int pt_log__verbose(void)
{
	return verbose;
}

void pt_log__clear_status(void)
{
	if (status_shown) {
		fputs("\r\033[K", stderr);
		status_shown = false;
	}
}

void pt_msg(const char *fmt, ...)
{
	va_list ap;

	pt_log__clear_status();
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

void pt_vlog(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	pt_log__clear_status();
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

void pt_log__status(const char *fmt, ...)
{
	va_list ap;

	fputs("\r\033[K", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
	status_shown = true;
}

void pt_log__status_end(void)
{
	if (status_shown)
		fputs("\n", stderr); /* keep the last figures on screen */
	status_shown = false;
}
