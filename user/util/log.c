// SPDX-License-Identifier: BSD-2-Clause
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "escape.h"
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

/* fmt's text on stderr, escaped (util/escape.h): messages carry what
 * targets files and targets chose (names, paths, their helpers' words),
 * and a terminal must only show them. */
static void put(const char *fmt, va_list ap)
{
	char small[1024], esmall[4096], *text = small, *out = esmall;
	size_t elen;
	va_list again;
	int n;

	va_copy(again, ap);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	if (n >= (int)sizeof(small)) {
		text = malloc((size_t)n + 1);
		if (text)
			vsnprintf(text, (size_t)n + 1, fmt, again);
	}
	va_end(again);
	if (n < 0 || !text)
		return;
	elen = pt_escape__term(esmall, sizeof(esmall), text, (size_t)n);
	if (elen >= sizeof(esmall)) {
		out = malloc(elen + 1);
		if (out)
			pt_escape__term(out, elen + 1, text, (size_t)n);
	}
	if (out)
		fwrite(out, 1, elen, stderr);
	if (out != esmall)
		free(out);
	if (text != small)
		free(text);
}

void pt_msg(const char *fmt, ...)
{
	va_list ap;

	pt_log__clear_status();
	va_start(ap, fmt);
	put(fmt, ap);
	va_end(ap);
}

void pt_vlog(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	pt_log__clear_status();
	va_start(ap, fmt);
	put(fmt, ap);
	va_end(ap);
}

void pt_log__status(const char *fmt, ...)
{
	va_list ap;

	fputs("\r\033[K", stderr);
	va_start(ap, fmt);
	put(fmt, ap);
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
