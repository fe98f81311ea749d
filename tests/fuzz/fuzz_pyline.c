// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness for pyline.c: a line table is read out of the target,
 * so any bytes may arrive as any version's table.
 * Build and run with `make fuzz`.
 *
 * Input: [0] CPython 3.(8 + n % 6), bit 7: firstlineno as it is, else
 * modulo 1000 (so most inputs get past the INT_MAX check); [1..4]
 * firstlineno (little-endian); [5..12] an offset to look up (i64,
 * little-endian); the rest is the table. Seeds: tests/fuzz/corpus/pyline/.
 *
 * Beyond sanitizer findings, it traps when the answers disagree: ranges
 * must be contiguous from 0 with lines in [0, INT_MAX]; pt_pyline__line()
 * must give each range's line at both its ends; pt_pyline__last_line()
 * the largest; and, for tables accepted whole, a second decoder that reads
 * them the way CPython does (3.11+: after an entry's line delta, skip to
 * the next byte with bit 7 set) must agree at every range start.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "python/pyline.h"

#define HDR 13
#define MAX_RANGES 65536

struct rng {
	int64_t start, end;
	int line;
};

static struct rng got[MAX_RANGES];
static size_t n_got;

static int collect(void *ctx, int64_t start, int64_t end, int line)
{
	if (n_got == MAX_RANGES)
		__builtin_trap(); /* more ranges than table bytes */
	got[n_got++] = (struct rng){ start, end, line };
	return 0;
}

/* ---- CPython's way of reading, for tables pyline.c accepted ---- */

static int64_t ref_varint(const uint8_t *t, size_t len, size_t *p, bool sign)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	uint8_t b;

	do {
		if (*p >= len || shift > 30)
			__builtin_trap(); /* pyline.c accepted a cut varint */
		b = t[(*p)++];
		v |= (uint64_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	if (!sign)
		return (int64_t)v;
	return (v & 1) ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
}

/* the line at addr: 0 none, -1 past the end */
static int64_t ref_line(unsigned int minor, const uint8_t *t, size_t len, int64_t first,
			int64_t addr)
{
	int64_t line = first, pc = 0;
	size_t p = 0;

	if (minor <= 9) {
		for (p = 0; p + 1 < len; p += 2) {
			pc += t[p];
			if (pc > addr)
				break;
			line += (int8_t)t[p + 1];
		}
		return line;
	}
	if (minor == 10) {
		for (p = 0; p + 1 < len; p += 2) {
			int8_t ld = (int8_t)t[p + 1];

			if (ld != -128)
				line += ld;
			pc += t[p];
			if (addr < pc)
				return ld == -128 ? 0 : line;
		}
		return -1;
	}
	while (p < len) {
		uint8_t h = t[p];
		unsigned int code = (h >> 3) & 15;
		size_t q = p + 1;

		if (code == 13 || code == 14)
			line += ref_varint(t, len, &q, true);
		else if (code >= 10 && code <= 12)
			line += code - 10;
		pc += ((h & 7) + 1) * 2;
		if (addr < pc)
			return code == 15 ? 0 : line;
		for (p++; p < len && !(t[p] & 0x80); p++)
			;
	}
	return -1;
}

static uint64_t le(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *tab;
	unsigned int minor, first;
	int64_t addr, a, prev_end = 0;
	size_t len, i, step;
	int e, l, max = 0;

	if (size < HDR)
		return 0;
	minor = 8 + data[0] % 6;
	first = (uint32_t)le(data + 1, 4);
	if (!(data[0] & 0x80))
		first %= 1000;
	addr = (int64_t)le(data + 5, 8);
	tab = data + HDR;
	len = size - HDR;

	n_got = 0;
	e = pt_pyline__ranges(minor, tab, len, first, collect, NULL);
	if (e != 0 && e != -EINVAL)
		__builtin_trap();
	if (first > INT_MAX && (e != -EINVAL || n_got))
		__builtin_trap();
	for (i = 0; i < n_got; i++) {
		const struct rng *r = &got[i];

		if (r->start != prev_end || r->end <= r->start || r->line < 0)
			__builtin_trap();
		if (r->end == INT64_MAX && (minor >= 10 || i + 1 != n_got || e))
			__builtin_trap();
		/* 3.8/3.9 have no "no line": merged neighbours always differ */
		if (minor <= 9 && i && r->line == got[i - 1].line)
			__builtin_trap();
		prev_end = r->end;
		if (r->line > max)
			max = r->line;
	}
	/* each range's line at both ends (a sample of them: each look-up
	 * walks the table from its start) */
	step = n_got > 64 ? n_got / 32 : 1;
	for (i = 0; i < n_got; i += (i < 16 ? 1 : step)) {
		const struct rng *r = &got[i];

		if (pt_pyline__line(minor, tab, len, first, r->start) != r->line)
			__builtin_trap();
		if (r->end != INT64_MAX &&
		    pt_pyline__line(minor, tab, len, first, r->end - 1) != r->line)
			__builtin_trap();
		if (!e && ref_line(minor, tab, len, first, r->start) != r->line)
			__builtin_trap();
	}

	l = pt_pyline__line(minor, tab, len, first, addr);
	if (l < 0 && l != -ERANGE && l != -EINVAL)
		__builtin_trap();
	if (addr < 0 && l != -ERANGE && l != -EINVAL)
		__builtin_trap();
	if (!e) {
		int64_t want = -ERANGE;

		for (i = 0; i < n_got; i++)
			if (got[i].start <= addr && addr < got[i].end)
				want = got[i].line;
		if (l != want)
			__builtin_trap();
		if (pt_pyline__last_line(minor, tab, len, first) != max)
			__builtin_trap();
		if (minor >= 10 && pt_pyline__line(minor, tab, len, first, prev_end) != -ERANGE)
			__builtin_trap();
	} else if (pt_pyline__last_line(minor, tab, len, first) != -EINVAL) {
		__builtin_trap();
	}

	e = pt_pyline__addr(minor, addr, &a);
	if (e == 0 && (a < 0 || a % 2))
		__builtin_trap();
	if (e != 0 && e != -ERANGE && e != -EINVAL)
		__builtin_trap();
	return 0;
}
