// SPDX-License-Identifier: BSD-2-Clause
/*
 * Three table formats, one walker: each yields the table's entries in
 * order as [start, end) byte ranges with a line, and the public functions
 * only differ in what they do with them. Format rules: see pyline.h and
 * ../shared/notes/cpython.md ("Line tables").
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>

#include "pyline.h"
#include "pylayout.h"

#define NO_LINE (-1) /* internal: kept apart from line 0 so 3.12+ merge like co_lines() */

/* No entry covers more than 255 bytes: stopping there keeps start, end and
 * 3.8/3.9's open end (INT64_MAX) apart without overflow, whatever len is. */
#define PC_MAX (INT64_MAX - 256)

struct walk {
	unsigned int minor;
	const uint8_t *p, *end;
	int64_t pc;   /* where the next entry starts */
	int64_t line; /* the line the table has reached, in [0, INT_MAX] */
	int pending;  /* 3.8/3.9: line delta of the entry last given */
	bool done;    /* 3.8/3.9: the open last range was given */
};

static int walk_init(struct walk *w, unsigned int minor, const uint8_t *tab, size_t len,
		     unsigned int firstlineno)
{
	if (minor < PT_PY_MINOR_MIN || minor > PT_PY_MINOR_MAX || firstlineno > INT_MAX ||
	    (!tab && len))
		return -EINVAL;
	/* the 2-byte formats: a lone last byte is a cut table (3.8/3.9
	 * ignore it, 3.10 pairs it with the bytes object's terminator) */
	if (minor <= 10 && len % 2)
		return -EINVAL;
	/* (NULL + 0 is undefined: an empty table may come as NULL) */
	*w = (struct walk){
		.minor = minor, .p = tab, .end = len ? tab + len : tab, .line = firstlineno
	};
	return 0;
}

/* Lines stay in [0, INT_MAX]: CPython keeps them in an int and never
 * writes a negative one (no line has its own marker). |delta| < 2^36. */
static int add_line(struct walk *w, int64_t delta)
{
	int64_t l = w->line + delta;

	if (l < 0 || l > INT_MAX)
		return -EINVAL;
	w->line = l;
	return 0;
}

/*
 * 3.11+ varint: 6-bit chunks, least significant first, 0x40 = another
 * follows. CPython writes 32-bit values, so at most 6 chunks; a seventh
 * is garbage (and would shift past what we accumulate). A byte with bit 7
 * set is the next entry's header: this one was cut short.
 */
static int varint(struct walk *w, uint64_t *v)
{
	uint64_t val = 0;
	unsigned int shift;

	for (shift = 0; shift <= 30; shift += 6) {
		uint8_t b;

		if (w->p == w->end)
			return -EINVAL;
		b = *w->p++;
		if (b & 0x80)
			return -EINVAL;
		val |= (uint64_t)(b & 63) << shift;
		if (!(b & 64)) {
			*v = val;
			return 0;
		}
	}
	return -EINVAL;
}

/* Zig-zag in CPython's order: the low bit is the sign. */
static int svarint(struct walk *w, int64_t *v)
{
	uint64_t u;
	int e = varint(w, &u);

	if (e)
		return e;
	*v = (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
	return 0;
}

/* n payload bytes (columns): all must lack bit 7, or entries would not
 * start where CPython's reader (which skips to the next bit-7 byte) sees
 * them. */
static int skip_payload(struct walk *w, size_t n)
{
	if ((size_t)(w->end - w->p) < n)
		return -EINVAL;
	for (; n; n--)
		if (*w->p++ & 0x80)
			return -EINVAL;
	return 0;
}

/* 3.8/3.9 co_lnotab: pairs (u8 addr_incr, i8 line_incr); the bytes up to
 * a + addr_incr keep the line before line_incr. The line_incr is applied
 * on the next call, so the entry holding addr is answered (as CPython's
 * PyCode_Addr2Line does) before anything after it is looked at. */
static int next_lnotab(struct walk *w, int64_t *start, int64_t *end, int *line)
{
	int e;

	if (w->done)
		return 0;
	if ((e = add_line(w, w->pending)))
		return e;
	w->pending = 0;
	*start = w->pc;
	*line = (int)w->line;
	if (w->p == w->end) {
		*end = INT64_MAX; /* the code's length is not in the table */
		w->done = true;
		return 1;
	}
	w->pc += w->p[0];
	w->pending = (int8_t)w->p[1];
	w->p += 2;
	*end = w->pc;
	return 1;
}

/* 3.10 co_linetable: pairs (u8 sdelta, i8 ldelta), each its own range;
 * ldelta -128 is "no line" and leaves the line alone. */
static int next_310(struct walk *w, int64_t *start, int64_t *end, int *line)
{
	int8_t ld;
	int e;

	if (w->p == w->end)
		return 0;
	ld = (int8_t)w->p[1];
	if (ld == -128) {
		*line = NO_LINE;
	} else {
		if ((e = add_line(w, ld)))
			return e;
		*line = (int)w->line;
	}
	*start = w->pc;
	w->pc += w->p[0];
	*end = w->pc;
	w->p += 2;
	return 1;
}

/* 3.11+ location table: header 1CCCCLLL covers (L + 1) code units;
 * C 0-9 same line + 1 column byte, 10-12 line += C - 10 + 2 column bytes,
 * 13 line += signed varint, 14 the same then 3 varints (end line, columns),
 * 15 no line. */
static int next_311(struct walk *w, int64_t *start, int64_t *end, int *line)
{
	int64_t delta = 0;
	uint64_t ignored;
	unsigned int code;
	uint8_t h;
	int e = 0;

	if (w->p == w->end)
		return 0;
	h = *w->p++;
	if (!(h & 0x80))
		return -EINVAL;
	code = (h >> 3) & 15;
	if (code <= 9) {
		e = skip_payload(w, 1);
	} else if (code <= 12) {
		delta = code - 10;
		e = skip_payload(w, 2);
	} else if (code == 13) {
		e = svarint(w, &delta);
	} else if (code == 14) {
		if (!(e = svarint(w, &delta)) && !(e = varint(w, &ignored)) &&
		    !(e = varint(w, &ignored)))
			e = varint(w, &ignored);
	}
	if (e || (e = add_line(w, delta)))
		return e;
	*line = code == 15 ? NO_LINE : (int)w->line;
	*start = w->pc;
	w->pc += ((h & 7) + 1) * 2;
	*end = w->pc;
	return 1;
}

/* The next entry, empty ones included: 1, 0 at the table's end, -EINVAL. */
static int walk_next(struct walk *w, int64_t *start, int64_t *end, int *line)
{
	if (w->pc > PC_MAX)
		return -EINVAL;
	if (w->minor <= 9)
		return next_lnotab(w, start, end, line);
	if (w->minor == 10)
		return next_310(w, start, end, line);
	return next_311(w, start, end, line);
}

int pt_pyline__addr(unsigned int minor, int64_t pos, int64_t *addr)
{
	if (minor < PT_PY_MINOR_MIN || minor > PT_PY_MINOR_MAX)
		return -EINVAL;
	/* a frame that has not started: f_lasti -1 (3.8-3.10); 3.11/3.12's
	 * prev_instr one unit before the code (3.13 should not have it, but
	 * it means the same there) */
	if ((minor <= 10 && pos == -1) || (minor >= 11 && pos == -2))
		return -ERANGE;
	if (pos < 0)
		return -EINVAL;
	if (minor == 10) {
		if (pos > INT64_MAX / 2)
			return -EINVAL;
		pos *= 2;
	}
	if (pos % 2)
		return -EINVAL;
	*addr = pos;
	return 0;
}

int pt_pyline__line(unsigned int minor, const uint8_t *tab, size_t len, unsigned int firstlineno,
		    int64_t addr)
{
	int64_t start, end;
	struct walk w;
	int line, e;

	if ((e = walk_init(&w, minor, tab, len, firstlineno)))
		return e;
	if (addr < 0)
		return -ERANGE;
	/* entries are contiguous from 0: the first that ends after addr
	 * holds it (empty ones never do) */
	while ((e = walk_next(&w, &start, &end, &line)) == 1)
		if (addr < end)
			return line == NO_LINE ? 0 : line;
	return e ? e : -ERANGE;
}

int pt_pyline__ranges(unsigned int minor, const uint8_t *tab, size_t len, unsigned int firstlineno,
		      pt_pyline_range_fn cb, void *ctx)
{
	/* co_lines() merges equal neighbours from 3.12 on; 3.8/3.9 have no
	 * co_lines(), and merged ranges are their line starts */
	bool merge = minor <= 9 || minor >= 12, have = false;
	int64_t start, end, pstart = 0, pend = 0;
	int line, pline = 0, e;
	struct walk w;

	if ((e = walk_init(&w, minor, tab, len, firstlineno)))
		return e;
	while ((e = walk_next(&w, &start, &end, &line)) == 1) {
		if (start == end)
			continue;
		if (have && merge && line == pline) {
			pend = end;
			continue;
		}
		if (have && (e = cb(ctx, pstart, pend, pline == NO_LINE ? 0 : pline)))
			return e;
		pstart = start;
		pend = end;
		pline = line;
		have = true;
	}
	if (e)
		return e;
	return have ? cb(ctx, pstart, pend, pline == NO_LINE ? 0 : pline) : 0;
}

static int max_line(void *ctx, int64_t start, int64_t end, int line)
{
	int *max = ctx;

	if (line > *max)
		*max = line;
	return 0;
}

int pt_pyline__last_line(unsigned int minor, const uint8_t *tab, size_t len,
			 unsigned int firstlineno)
{
	int max = 0, e = pt_pyline__ranges(minor, tab, len, firstlineno, max_line, &max);

	return e ? e : max;
}
