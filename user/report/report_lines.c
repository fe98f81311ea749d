// SPDX-License-Identifier: BSD-2-Clause
/*
 * lines.txt: sampled time per source line of the functions selected by
 * `lines` directives, laid out like line_profiler's text output so that
 * people who know that tool read it at once. Like report.md it reads only
 * the summary document, so every figure here is in summary.json.
 *
 * What differs from line_profiler is said in each block's header: Time is
 * sampled wall time (on-CPU + off-CPU) including callees, not measured line
 * time, and Hits and Per Hit stay blank because proftrace never counts line
 * executions. A figure that is missing from the document prints as "–".
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jread.h"
#include "report_lines.h"

#define NA "–"
#define NO_SOURCE "<source unavailable>"

/* line_profiler's columns, with Samples added last before the source
 * text, so the first five read as they always do. */
enum { COL_LINE, COL_HITS, COL_TIME, COL_PER_HIT, COL_PCT, COL_SAMPLES, NCOLS };

static const int col_width[NCOLS] = { 6, 9, 12, 8, 8, 8 };
static const char *const col_title[NCOLS] = {
	"Line #", "Hits", "Time", "Per Hit", "% Time", "Samples",
};
static const char contents_title[] = "Line Contents";

static const char *or_na(const char *s)
{
	return s ? s : NA;
}

/* v * scale with prec decimals into buf, or "–" when the key is missing,
 * null or not a number. A count written as raw digits is printed as is:
 * past 2^53 a double would change its last digits. */
static const char *fmt_num(char *buf, size_t n, const cJSON *o, const char *k, double scale,
			   int prec)
{
	const cJSON *it = pt_jget(o, k);
	double v;

	if (scale == 1 && !prec && cJSON_IsRaw(it) && it->valuestring && *it->valuestring &&
	    strspn(it->valuestring, "0123456789") == strlen(it->valuestring))
		return it->valuestring;
	if (!pt_jnum(o, k, &v))
		return NA;
	snprintf(buf, n, "%.*f", prec, v * scale);
	return buf;
}

static void put_int(FILE *f, const cJSON *o, const char *k)
{
	char buf[64];

	fputs(fmt_num(buf, sizeof(buf), o, k, 1, 0), f);
}

/* "N things", "1 thing", "– things". */
static void put_counted(FILE *f, const cJSON *o, const char *k, const char *noun)
{
	double v;

	if (pt_jnum(o, k, &v))
		fprintf(f, "%.0f %s%s", v, noun, v == 1 ? "" : "s");
	else
		fprintf(f, NA " %ss", noun);
}

/* Seconds as line_profiler prints its total ("%g"), from a key in ms. */
static void put_secs(FILE *f, const cJSON *o, const char *k)
{
	double v;

	if (pt_jnum(o, k, &v))
		fprintf(f, "%g", v / 1000);
	else
		fputs(NA, f);
}

/* Columns are counted in characters, not bytes: "–" is three bytes. */
static size_t width_of(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static void put_right(FILE *f, const char *s, int width)
{
	for (size_t n = width_of(s); n < (size_t)width; n++)
		fputc(' ', f);
	fputs(s, f);
}

/* One source line: its line end dropped, as line_profiler does; a stray
 * newline inside would break the one-row-per-line layout. */
static void put_source(FILE *f, const char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	for (size_t i = 0; i < n; i++)
		fputc(s[i] == '\n' || s[i] == '\r' ? ' ' : s[i], f);
}

static void put_row(FILE *f, const char *const cell[NCOLS], const char *text)
{
	for (int i = 0; i < NCOLS; i++) {
		if (i)
			fputc(' ', f);
		put_right(f, cell[i], col_width[i]);
	}
	fputs("  ", f);
	put_source(f, text);
	fputc('\n', f);
}

static void put_column_header(FILE *f)
{
	size_t len = strlen(contents_title) + 2;

	for (int i = 0; i < NCOLS; i++)
		len += col_width[i] + (i ? 1 : 0);
	put_row(f, col_title, contents_title);
	for (size_t i = 0; i < len; i++)
		fputc('=', f);
	fputc('\n', f);
}

/* A line no sample fell on prints blank figures, like a line that
 * line_profiler never saw run. A line with off-CPU time only (blocked
 * in a call made from it) is not blank: it has wall time. */
static bool unsampled(const cJSON *ln)
{
	double s, w;
	bool has_s = pt_jnum(ln, "samples", &s), has_w = pt_jnum(ln, "wall_ms", &w);

	return (has_s || has_w) && (!has_s || s == 0) && (!has_w || w == 0);
}

static void put_line(FILE *f, const cJSON *ln)
{
	char lbuf[32], tbuf[64], pbuf[32], sbuf[32];
	const char *cell[NCOLS];
	const char *text = pt_jstr(ln, "text");

	cell[COL_LINE] = fmt_num(lbuf, sizeof(lbuf), ln, "line", 1, 0);
	/* proftrace never counts line executions: never invent them. */
	cell[COL_HITS] = cell[COL_PER_HIT] = "";
	if (unsampled(ln)) {
		cell[COL_TIME] = cell[COL_PCT] = cell[COL_SAMPLES] = "";
	} else {
		/* Timer unit 1e-06 s: ms * 1000, one decimal as line_profiler. */
		cell[COL_TIME] = fmt_num(tbuf, sizeof(tbuf), ln, "wall_ms", 1000, 1);
		cell[COL_PCT] = fmt_num(pbuf, sizeof(pbuf), ln, "share", 100, 1);
		cell[COL_SAMPLES] = fmt_num(sbuf, sizeof(sbuf), ln, "samples", 1, 0);
	}
	put_row(f, cell, text ? text : NO_SOURCE);
}

/* Calls are said only when they were counted exactly: a partial count
 * must not read as a measurement. */
static void put_calls(FILE *f, const cJSON *doc, const cJSON *fn)
{
	const cJSON *py = pt_jget(pt_jget(doc, "meta"), "python");
	const char *timing = pt_jstr(fn, "timing"), *py_timing = pt_jstr(py, "timing");
	const char *why = pt_jstr(py, "why");

	if (!timing) {
		fputs("Calls: " NA "\n", f);
		return;
	}
	if (!strcmp(timing, "exact")) {
		fputs("Calls: ", f);
		put_int(f, fn, "calls");
		fputs(" (exact), exact total ", f);
		put_secs(f, fn, "exact_total_ms");
		fputs(" s\n", f);
		return;
	}
	fputs("Calls: not counted (", f);
	if (cJSON_IsNull(pt_jget(fn, "probe"))) {
		/* a top function of a run without a targets file */
		fputs("no targets file names this function", f);
	} else if (py_timing && strcmp(py_timing, "exact")) {
		fprintf(f, "Python calls are timed %s here", py_timing);
		if (why)
			fprintf(f, ": %s", why);
	} else {
		fputs("this function is not timed exactly", f);
	}
	fputs("; its time is sampled only)\n", f);
}

static void put_function(FILE *f, const cJSON *doc, const cJSON *sampling, const cJSON *fn)
{
	const cJSON *rows = pt_jarr(fn, "lines"), *ln;
	const char *err = pt_jstr(fn, "source_error");

	fputs("Total time: ", f);
	put_secs(f, fn, "wall_ms");
	fputs(" s\n", f);
	fprintf(f, "File: %s\n", or_na(pt_jstr(fn, "file")));
	fprintf(f, "Function: %s at line ", or_na(pt_jstr(fn, "function")));
	put_int(f, fn, "first_line");
	fputs("\n", f);

	fputs("Time = sampled wall time (on-CPU + off-CPU) at ", f);
	put_int(f, sampling, "hz");
	fputs(" Hz, ", f);
	put_counted(f, fn, "samples", "sample");
	fputs("; on-CPU ", f);
	put_secs(f, fn, "on_cpu_ms");
	fputs(" s, off-CPU ", f);
	put_secs(f, fn, "off_cpu_ms");
	fputs(" s\n", f);
	put_calls(f, doc, fn);
	if (err)
		fprintf(f, "Source unavailable: %s\n", err);
	fputs("\n", f);

	put_column_header(f);
	cJSON_ArrayForEach(ln, rows)
	{
		if (cJSON_IsObject(ln))
			put_line(f, ln);
	}
	fputs("\n", f);
}

/* Austin-style footer: how far the samples can be trusted. */
static void put_footer(FILE *f, const cJSON *s)
{
	double lost;

	fputs("Sampling: ", f);
	put_int(f, s, "hz");
	fprintf(f, " Hz, %s; ", or_na(pt_jstr(s, "mechanism")));
	put_counted(f, s, "samples", "on-CPU sample");
	fputs(", ", f);
	put_counted(f, s, "off_cpu_intervals", "off-CPU interval");
	fputs("; ", f);
	put_counted(f, s, "threads_sampled", "thread");
	fputs(" sampled, ", f);
	put_int(f, s, "threads_failed");
	fputs(" failed\n", f);

	fputs("Lost samples: ", f);
	put_int(f, s, "lost_samples");
	fputs(", unreadable stacks: ", f);
	put_int(f, s, "unreadable_stacks");
	fputs(", truncated stacks: ", f);
	put_int(f, s, "truncated_stacks");
	fputs(", unknown frames: ", f);
	put_int(f, s, "unknown_frames");
	fputs("\n", f);
	if (pt_jnum(s, "lost_samples", &lost) && lost > 0)
		fprintf(f,
			"Warning: %.0f sample%s lost (ring buffer full): sampled times are "
			"too low; raise `set ringbuf_mb` or lower `set sample_hz`.\n",
			lost, lost == 1 ? " was" : "s were");
}

/* A run without a targets file (meta.targets_file null): lines.txt shows
 * the top functions. */
static bool no_targets(const cJSON *summary)
{
	const char *mode = pt_jstr(pt_jget(summary, "meta"), "mode");

	return mode && !strcmp(mode, "sampling");
}

int pt_report_lines__write(FILE *f, const struct cJSON *summary)
{
	const cJSON *sampling, *fns, *fn;
	int n = 0;

	if (!f || !summary)
		return -EINVAL;
	sampling = pt_jget(pt_jget(summary, "meta"), "sampling");
	fns = pt_jarr(summary, "lines");
	cJSON_ArrayForEach(fn, fns)
	{
		n += cJSON_IsObject(fn);
	}

	if (!cJSON_IsObject(sampling)) {
		fputs("No line timings: they come from stack sampling, which was off in this run "
		      "(`set sample_hz 0`).\n",
		      f);
	} else if (!n && no_targets(summary)) {
		fputs("No line timings: no Python function was sampled.\n\n", f);
		put_footer(f, sampling);
	} else if (!n) {
		fputs("No line timings: no `lines` directive in the targets file selected a "
		      "function.\n\n",
		      f);
		put_footer(f, sampling);
	} else {
		fputs("Timer unit: 1e-06 s\n\n", f);
		if (no_targets(summary))
			fputs("No targets file: the functions with the most time of their own "
			      "(report.md's top functions), line by line.\n\n",
			      f);
		cJSON_ArrayForEach(fn, fns)
		{
			if (cJSON_IsObject(fn))
				put_function(f, summary, sampling, fn);
		}
		put_footer(f, sampling);
	}
	if (fflush(f) == EOF || ferror(f))
		return -EIO;
	return 0;
}
