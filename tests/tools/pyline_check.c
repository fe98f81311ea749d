// SPDX-License-Identifier: BSD-2-Clause
/*
 * pyline_check: pt_pyline__*() against an interpreter's own answers.
 * Reads on stdin the dump tests/integration/test_pyline.py makes a
 * CPython print about its code objects:
 *   V <minor>
 *   C <firstlineno> <code_len> <table hex, "-" if empty> <name>
 *   R <start> <end> <line>    co_lines() (3.10+), line -1 for None
 *   O <line> <line> ...       PyCode_Addr2Line() of offsets 0, 2, ... (3.8/3.9)
 *   S <addr> <line>           dis.findlinestarts() (3.8/3.9)
 *   E                         the end (a cut dump fails)
 * and checks, per code object: the ranges equal co_lines() (3.10+) or the
 * line starts (3.8/3.9); every even offset's line equals the truth, in the
 * ranges and (most, see LOOKUPS) through pt_pyline__line(); the
 * offset after the code is -ERANGE (3.10+); pt_pyline__addr() gives the
 * offset back from each version's frame position; pt_pyline__last_line()
 * is the largest line. Prints the counts; exit 1 on any mismatch.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python/pyline.h"

struct range {
	int64_t start, end;
	int line;
};

struct vec {
	struct range *v;
	size_t n, cap;
};

static void push(struct vec *a, int64_t start, int64_t end, int line)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 64;
		a->v = realloc(a->v, a->cap * sizeof(*a->v));
		if (!a->v) {
			perror("realloc");
			exit(2);
		}
	}
	a->v[a->n++] = (struct range){ start, end, line };
}

static int collect(void *ctx, int64_t start, int64_t end, int line)
{
	push(ctx, start, end, line);
	return 0;
}

static unsigned int minor;
static unsigned long n_code, n_offsets, n_lookups, n_ranges, n_bad;

/* pt_pyline__line() walks the table from its start on every call: asked at
 * every offset of a big code object that is quadratic (seconds under ASan
 * for the few module bodies of thousands of instructions). So it is asked
 * at up to LOOKUPS offsets spread over the code, and at both ends of the
 * first LOOKUPS ranges: every offset in most code objects. The ranges
 * cover every offset. */
#define LOOKUPS 512

/* the code object being read */
static struct {
	bool open;
	char name[256];
	unsigned int firstlineno;
	int64_t code_len;
	uint8_t *tab;
	size_t len;
	struct vec truth;  /* R or S lines, as ranges (S: end unused) */
	int *offset_lines; /* O line */
	size_t n_offset_lines;
} co;

static void bad(const char *fmt, ...)
{
	va_list ap;

	if (++n_bad > 20)
		return;
	fprintf(stderr, "MISMATCH 3.%u %s (firstlineno %u, table %zu bytes): ", minor, co.name,
		co.firstlineno, co.len);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* The line the interpreter gives offset a, 0 for None; -1 when it has
 * none. Offsets come in order: *ti follows them through co_lines(). */
static int truth_line(int64_t a, size_t *ti)
{
	int l;

	if (minor >= 10) {
		while (*ti < co.truth.n && co.truth.v[*ti].end <= a)
			(*ti)++;
		if (*ti == co.truth.n || co.truth.v[*ti].start > a)
			return -1;
		l = co.truth.v[*ti].line;
		return l < 0 ? 0 : l;
	}
	if (a / 2 >= (int64_t)co.n_offset_lines)
		return -1;
	l = co.offset_lines[a / 2];
	return l < 0 ? 0 : l;
}

static void check_code(void)
{
	struct vec got = { 0 };
	int max = 0, e, want, l;
	size_t i, ti = 0;
	int64_t a, r, stride = co.code_len / 2 / LOOKUPS + 1;
	bool lookup;

	e = pt_pyline__ranges(minor, co.tab, co.len, co.firstlineno, collect, &got);
	if (e) {
		bad("pt_pyline__ranges: %d", e);
		goto out;
	}
	n_ranges += got.n;
	if (minor >= 10) {
		/* exactly co_lines() */
		if (got.n != co.truth.n)
			bad("%zu ranges, co_lines() has %zu", got.n, co.truth.n);
		for (i = 0; i < got.n && i < co.truth.n; i++) {
			const struct range *t = &co.truth.v[i], *g = &got.v[i];

			if (g->start != t->start || g->end != t->end ||
			    g->line != (t->line < 0 ? 0 : t->line)) {
				bad("range %zu: [%lld, %lld) line %d, co_lines() [%lld, %lld) %d",
				    i, (long long)g->start, (long long)g->end, g->line,
				    (long long)t->start, (long long)t->end, t->line);
				break;
			}
		}
		for (i = 0; i < co.truth.n; i++)
			if (co.truth.v[i].line > max)
				max = co.truth.v[i].line;
		if ((l = pt_pyline__line(minor, co.tab, co.len, co.firstlineno, co.code_len)) !=
		    -ERANGE)
			bad("the offset after the code (%lld): %d, want -ERANGE",
			    (long long)co.code_len, l);
	} else {
		/* the line starts of dis.findlinestarts(), inside the code */
		size_t n = 0;

		for (i = 0; i < got.n && got.v[i].start < co.code_len; i++, n++) {
			if (n >= co.truth.n || got.v[i].start != co.truth.v[n].start ||
			    got.v[i].line != co.truth.v[n].line) {
				bad("line start %zu: %lld line %d, findlinestarts() %lld line %d",
				    n, (long long)got.v[i].start, got.v[i].line,
				    n < co.truth.n ? (long long)co.truth.v[n].start : -1LL,
				    n < co.truth.n ? co.truth.v[n].line : -1);
				break;
			}
		}
		if (i == got.n || got.v[i].start >= co.code_len) {
			if (n != co.truth.n)
				bad("%zu line starts, findlinestarts() has %zu", n, co.truth.n);
		}
		if (got.n && got.v[got.n - 1].end != INT64_MAX)
			bad("the last range ends at %lld, not INT64_MAX",
			    (long long)got.v[got.n - 1].end);
		for (i = 0; i < co.n_offset_lines; i++)
			if (co.offset_lines[i] > max)
				max = co.offset_lines[i];
	}
	/* ranges are contiguous from 0 */
	for (i = 0; i < got.n; i++)
		if (got.v[i].start != (i ? got.v[i - 1].end : 0) ||
		    got.v[i].end <= got.v[i].start) {
			bad("range %zu [%lld, %lld) does not follow on", i,
			    (long long)got.v[i].start, (long long)got.v[i].end);
			break;
		}
	if ((l = pt_pyline__last_line(minor, co.tab, co.len, co.firstlineno)) != max)
		bad("last line %d, want %d", l, max);

	for (a = 0, i = 0; a < co.code_len; a += 2) {
		want = truth_line(a, &ti);
		if (want < 0) {
			bad("offset %lld: the interpreter gave no answer", (long long)a);
			break;
		}
		n_offsets++;
		/* the range holding it has the interpreter's line */
		while (i < got.n && got.v[i].end <= a)
			i++;
		if (i == got.n || got.v[i].start > a || got.v[i].line != want) {
			bad("offset %lld: not in a range of line %d", (long long)a, want);
			break;
		}
		lookup = (a / 2) % stride == 0 || a + 2 >= co.code_len ||
			 (i < LOOKUPS && (a == got.v[i].start || a + 2 == got.v[i].end));
		if (lookup) {
			n_lookups++;
			l = pt_pyline__line(minor, co.tab, co.len, co.firstlineno, a);
			if (l != want) {
				bad("offset %lld: line %d, want %d", (long long)a, l, want);
				break;
			}
		}
		/* the frame position that stands for this offset */
		if (pt_pyline__addr(minor, minor == 10 ? a / 2 : a, &r) || r != a) {
			bad("pt_pyline__addr of offset %lld", (long long)a);
			break;
		}
	}
	if (pt_pyline__line(minor, co.tab, co.len, co.firstlineno, -2) != -ERANGE)
		bad("offset -2 is not -ERANGE");
	n_code++;
out:
	free(got.v);
}

static void close_code(void)
{
	if (co.open)
		check_code();
	free(co.tab);
	free(co.offset_lines);
	free(co.truth.v);
	memset(&co, 0, sizeof(co));
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int open_code(char *line)
{
	static char hex[1 << 21]; /* tables stay far below 1 MiB */
	char name[256];
	long long len;
	size_t i, n;

	close_code();
	if (sscanf(line, "C %u %lld %2097151s %255s", &co.firstlineno, &len, hex, name) != 4)
		return -1;
	co.code_len = len;
	snprintf(co.name, sizeof(co.name), "%s", name);
	n = strcmp(hex, "-") ? strlen(hex) : 0;
	if (n % 2)
		return -1;
	co.tab = malloc(n / 2 + 1);
	if (!co.tab)
		return -1;
	for (i = 0; i < n / 2; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		co.tab[i] = (uint8_t)(hi << 4 | lo);
	}
	co.len = n / 2;
	co.open = true;
	return 0;
}

static int offsets_line(char *line)
{
	char *p = line + 1, *end;
	size_t cap = 0;

	for (;;) {
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		if (co.n_offset_lines == cap) {
			cap = cap ? 2 * cap : 256;
			co.offset_lines = realloc(co.offset_lines, cap * sizeof(int));
			if (!co.offset_lines)
				return -1;
		}
		co.offset_lines[co.n_offset_lines++] = (int)v;
		p = end;
	}
	return 0;
}

int main(void)
{
	char *line = NULL;
	size_t cap = 0;
	unsigned long lineno = 0;
	bool ended = false;
	ssize_t n;

	while ((n = getline(&line, &cap, stdin)) > 0) {
		long long s, e;
		int l, ok = 0;

		lineno++;
		if (line[n - 1] == '\n')
			line[n - 1] = 0;
		switch (line[0]) {
		case 'V':
			ok = sscanf(line, "V %u", &minor) == 1;
			break;
		case 'C':
			ok = open_code(line) == 0;
			break;
		case 'R':
			ok = co.open && sscanf(line, "R %lld %lld %d", &s, &e, &l) == 3;
			if (ok)
				push(&co.truth, s, e, l);
			break;
		case 'S':
			ok = co.open && sscanf(line, "S %lld %d", &s, &l) == 2;
			if (ok)
				push(&co.truth, s, 0, l);
			break;
		case 'O':
			ok = co.open && offsets_line(line) == 0;
			break;
		case 'E':
			close_code();
			ended = true;
			ok = 1;
			break;
		}
		if (!ok) {
			fprintf(stderr, "pyline_check: stdin line %lu: cannot parse\n", lineno);
			return 2;
		}
	}
	free(line);
	if (!ended || !n_code) {
		fprintf(stderr, "pyline_check: the dump is cut or empty\n");
		return 2;
	}
	printf("pyline_check 3.%u: %lu code objects, %lu offsets (%lu looked up one by one), "
	       "%lu ranges, %lu mismatches\n",
	       minor, n_code, n_offsets, n_lookups, n_ranges, n_bad);
	return n_bad ? 1 : 0;
}
