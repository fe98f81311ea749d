// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_pyline: hand-built tables of each format covering every entry kind
 * (3.11+ codes 0-15 in all lengths, one- and multi-chunk varints of both
 * signs; 3.10's no-line marker and 254-byte chains; 3.8's >255-byte and
 * >127-line splits, negative line deltas), malformed and truncated tables,
 * lines pushed out of int range, offsets outside the code, then random
 * valid tables made by an encoder here against the entry lists they were
 * made from. Real tables: tests/integration/test_pyline.py.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "python/pyline.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* 3.11+ entry header: code, length in code units (1-8) */
#define H(code, units) (uint8_t)(0x80 | (code) << 3 | ((units)-1))

struct rng {
	int64_t start, end;
	int line;
};

#define MAX_RANGES 4096

struct got {
	struct rng r[MAX_RANGES];
	size_t n;
	size_t stop_after; /* 0: never */
};

static int collect(void *ctx, int64_t start, int64_t end, int line)
{
	struct got *g = ctx;

	assert_true(g->n < MAX_RANGES);
	g->r[g->n++] = (struct rng){ start, end, line };
	if (g->stop_after && g->n == g->stop_after)
		return 7;
	return 0;
}

static void assert_ranges(unsigned int minor, const uint8_t *t, size_t len, unsigned int first,
			  const struct rng *want, size_t n)
{
	static struct got g;
	size_t i;
	int e;

	memset(&g, 0, sizeof(g));
	e = pt_pyline__ranges(minor, t, len, first, collect, &g);
	if (e)
		fail_msg("3.%u: pt_pyline__ranges: %d", minor, e);
	if (g.n != n)
		fail_msg("3.%u: %zu ranges, want %zu", minor, g.n, n);
	for (i = 0; i < n; i++)
		if (g.r[i].start != want[i].start || g.r[i].end != want[i].end ||
		    g.r[i].line != want[i].line)
			fail_msg("3.%u: range %zu is [%lld, %lld) %d, want [%lld, %lld) %d", minor,
				 i, (long long)g.r[i].start, (long long)g.r[i].end, g.r[i].line,
				 (long long)want[i].start, (long long)want[i].end, want[i].line);
}

struct probe {
	int64_t addr;
	int want;
};

static void assert_lines(unsigned int minor, const uint8_t *t, size_t len, unsigned int first,
			 const struct probe *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int l = pt_pyline__line(minor, t, len, first, p[i].addr);

		if (l != p[i].want)
			fail_msg("3.%u: offset %lld: %d, want %d", minor, (long long)p[i].addr, l,
				 p[i].want);
	}
}

static int ranges_ret(unsigned int minor, const uint8_t *t, size_t len, unsigned int first)
{
	static struct got g;

	memset(&g, 0, sizeof(g));
	return pt_pyline__ranges(minor, t, len, first, collect, &g);
}

/* ---- 3.11+ location tables ---- */

/* Every code, firstlineno 10. */
/* clang-format off */
static const uint8_t t311[] = {
	H(0, 1), 0x05,                      /* [0,2)   10: short form, same line */
	H(9, 2), 0x7f,                      /* [2,6)   10 */
	H(10, 1), 4, 8,                     /* [6,8)   10: one-line form, +0 */
	H(11, 1), 0, 3,                     /* [8,10)  11: +1 */
	H(12, 8), 1, 2,                     /* [10,26) 13: +2, longest entry */
	H(13, 1), 0x07,                     /* [26,28) 10: no columns, -3 */
	H(14, 2), 0x50, 0x01, 0x00, 0x05, 0x09, /* [28,32) 50: long, +40 in two chunks */
	H(15, 2),                           /* [32,36) none */
	H(15, 1),                           /* [36,38) none */
	H(13, 1), 0x40, 0x75, 0x30,         /* [38,40) 100050: +100000, three chunks */
	H(14, 1), 0x41, 0x75, 0x30, 0x42, 0x03, 0x01, 0x01, /* [40,42) 50: -100000 */
	H(5, 1), 0x12,                      /* [42,44) 50 */
	H(1, 1), 0x00,                      /* [44,46) 50 */
	H(2, 1), 0x00,                      /* [46,48) 50 */
	H(3, 1), 0x00,                      /* [48,50) 50 */
	H(4, 1), 0x00,                      /* [50,52) 50 */
	H(6, 1), 0x00,                      /* [52,54) 50 */
	H(7, 1), 0x00,                      /* [54,56) 50 */
	H(8, 1), 0x00,                      /* [56,58) 50 */
};
/* clang-format on */

/* clang-format off */
static const struct probe t311_lines[] = {
	{ 0, 10 },    { 1, 10 },     { 2, 10 },      { 5, 10 },     { 6, 10 },
	{ 7, 10 },    { 8, 11 },     { 9, 11 },      { 10, 13 },    { 25, 13 },
	{ 26, 10 },   { 28, 50 },    { 31, 50 },     { 32, 0 },     { 37, 0 },
	{ 38, 100050 }, { 39, 100050 }, { 40, 50 }, { 57, 50 },    { 58, -ERANGE },
	{ 59, -ERANGE }, { 1000, -ERANGE }, { INT64_MAX, -ERANGE }, { -1, -ERANGE },
	{ -2, -ERANGE }, { INT64_MIN, -ERANGE },
};
/* clang-format on */

static void test_311_every_code(void **state)
{
	/* 3.11's co_lines(): one range per entry */
	/* clang-format off */
	static const struct rng r11[] = {
		{ 0, 2, 10 },   { 2, 6, 10 },   { 6, 8, 10 },   { 8, 10, 11 },  { 10, 26, 13 },
		{ 26, 28, 10 }, { 28, 32, 50 }, { 32, 36, 0 },  { 36, 38, 0 },  { 38, 40, 100050 },
		{ 40, 42, 50 }, { 42, 44, 50 }, { 44, 46, 50 }, { 46, 48, 50 }, { 48, 50, 50 },
		{ 50, 52, 50 }, { 52, 54, 50 }, { 54, 56, 50 }, { 56, 58, 50 },
	};
	/* clang-format on */
	/* 3.12+: equal neighbours merged */
	/* clang-format off */
	static const struct rng r12[] = {
		{ 0, 8, 10 },   { 8, 10, 11 },  { 10, 26, 13 },       { 26, 28, 10 },
		{ 28, 32, 50 }, { 32, 38, 0 },  { 38, 40, 100050 },   { 40, 58, 50 },
	};
	/* clang-format on */
	unsigned int m;

	assert_ranges(11, t311, sizeof(t311), 10, r11, N(r11));
	for (m = 11; m <= 13; m++) {
		if (m >= 12)
			assert_ranges(m, t311, sizeof(t311), 10, r12, N(r12));
		assert_lines(m, t311, sizeof(t311), 10, t311_lines, N(t311_lines));
		assert_int_equal(pt_pyline__last_line(m, t311, sizeof(t311), 10), 100050);
	}
}

/* A line 0 (3.11+ modules' RESUME) and "no line" are both 0 to callers,
 * but 3.12+ do not merge them, as co_lines() gives 0 and None. */
static void test_311_line0_vs_none(void **state)
{
	/* clang-format off */
	static const uint8_t t[] = {
		H(13, 1), 0x03, /* [0,2) line 1 - 1 = 0 */
		H(15, 1),       /* [2,4) none */
		H(15, 3),       /* [4,10) none */
		H(13, 1), 0x02, /* [10,12) 1 */
		H(10, 1), 0, 0, /* [12,14) 1 */
	};
	/* clang-format on */
	static const struct rng r11[] = {
		{ 0, 2, 0 }, { 2, 4, 0 }, { 4, 10, 0 }, { 10, 12, 1 }, { 12, 14, 1 },
	};
	static const struct rng r12[] = { { 0, 2, 0 }, { 2, 10, 0 }, { 10, 14, 1 } };
	static const struct probe p[] = { { 0, 0 }, { 2, 0 }, { 9, 0 }, { 10, 1 }, { 13, 1 } };

	assert_ranges(11, t, sizeof(t), 1, r11, N(r11));
	assert_ranges(12, t, sizeof(t), 1, r12, N(r12));
	assert_ranges(13, t, sizeof(t), 1, r12, N(r12));
	assert_lines(12, t, sizeof(t), 1, p, N(p));
	assert_int_equal(pt_pyline__last_line(12, t, sizeof(t), 1), 1);
	/* nothing but "no line": no line at all */
	assert_int_equal(pt_pyline__last_line(12, t + 2, 2, 1), 0);
}

/* Entry lengths 1-8 units, for every code. */
static void test_311_lengths(void **state)
{
	unsigned int code, units;

	for (code = 0; code <= 15; code++) {
		for (units = 1; units <= 8; units++) {
			uint8_t t[16] = { H(code, units) };
			size_t len = 1;
			struct rng want;
			int line = 7;

			/* the smallest payload of each kind, line delta 0 */
			if (code <= 9)
				len += 1;
			else if (code <= 12)
				len += 2;
			else if (code == 13)
				len += 1;
			else if (code == 14)
				len += 4;
			if (code >= 10 && code <= 12)
				line += (int)code - 10;
			want = (struct rng){ 0, 2 * units, code == 15 ? 0 : line };
			assert_ranges(12, t, len, 7, &want, 1);
			assert_int_equal(pt_pyline__line(12, t, len, 7, 2 * units - 1), want.line);
			assert_int_equal(pt_pyline__line(12, t, len, 7, 2 * units), -ERANGE);
			/* one byte less is a cut entry (15 has none to lose) */
			if (code != 15) {
				assert_int_equal(pt_pyline__line(12, t, len - 1, 7, 0), -EINVAL);
				assert_int_equal(ranges_ret(12, t, len - 1, 7), -EINVAL);
			}
		}
	}
}

static void test_311_malformed(void **state)
{
	static const struct {
		const char *what;
		uint8_t t[12];
		size_t len;
	} bad[] = {
		{ "no header bit", { 0x05 }, 1 },
		{ "no header bit after an entry", { H(15, 1), 0x7f }, 2 },
		{ "short form without its column", { H(3, 1) }, 1 },
		{ "one-line form without its end column", { H(11, 1), 4 }, 2 },
		{ "no-column form without its varint", { H(13, 1) }, 1 },
		{ "varint cut after a continuation", { H(13, 1), 0x40 }, 2 },
		{ "varint cut by a header", { H(13, 1), 0x41, H(15, 1) }, 3 },
		{ "long form without its end column", { H(14, 1), 0, 0, 0 }, 4 },
		{ "long form with a cut column varint", { H(14, 1), 0, 0, 0x45 }, 4 },
		{ "column byte with bit 7", { H(0, 1), 0x85 }, 2 },
		{ "end column with bit 7", { H(12, 1), 0x05, 0x80 }, 3 },
		{ "varint of seven chunks",
		  { H(13, 1), 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x00 },
		  8 },
		{ "long form column of seven chunks",
		  { H(14, 1), 0, 0, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x01, 0 },
		  11 },
	};
	size_t i;

	for (i = 0; i < N(bad); i++) {
		int l = pt_pyline__line(11, bad[i].t, bad[i].len, 1, 0);
		int r = ranges_ret(13, bad[i].t, bad[i].len, 1);
		bool first_ok = bad[i].t[0] == H(15, 1);

		/* a bad first entry fails the first offset; a bad later one
		 * only the walk over the whole table */
		if ((first_ok ? l != 0 : l != -EINVAL) || r != -EINVAL)
			fail_msg("%s: line %d, ranges %d", bad[i].what, l, r);
		assert_int_equal(pt_pyline__last_line(12, bad[i].t, bad[i].len, 1), -EINVAL);
	}

	/* six chunks are what CPython writes for 32 bits: fine */
	{
		static const uint8_t t[] = { H(13, 1), 0x40, 0x40, 0x40, 0x40, 0x40, 0x00 };

		assert_int_equal(pt_pyline__line(12, t, sizeof(t), 9, 0), 9);
	}
	/* a table damaged after the entry asked for still answers, like
	 * CPython, which reads no further */
	{
		static const uint8_t t[] = { H(10, 2), 1, 2, H(11, 1), 3 };

		assert_int_equal(pt_pyline__line(11, t, sizeof(t), 4, 3), 4);
		assert_int_equal(pt_pyline__line(11, t, sizeof(t), 4, 4), -EINVAL);
		assert_int_equal(ranges_ret(11, t, sizeof(t), 4), -EINVAL);
	}
}

static void test_311_overflow(void **state)
{
	/* +1 past INT_MAX */
	static const uint8_t up1[] = { H(11, 1), 0, 0 };
	/* +2^30 (six chunks), twice */
	static const uint8_t up30[] = { H(13, 1), 0x40, 0x40, 0x40, 0x40, 0x40, 0x02,
					H(13, 1), 0x40, 0x40, 0x40, 0x40, 0x40, 0x02 };
	/* the largest six-chunk value: +(2^35 - 1) */
	static const uint8_t huge[] = { H(13, 1), 0x7e, 0x7f, 0x7f, 0x7f, 0x7f, 0x3f };
	/* -(2^35 - 1) */
	static const uint8_t mhuge[] = { H(13, 1), 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x3f };
	/* -6 */
	static const uint8_t down6[] = { H(15, 1), H(13, 1), 0x0d };

	assert_int_equal(pt_pyline__line(11, up1, sizeof(up1), INT_MAX - 1, 0), INT_MAX);
	assert_int_equal(pt_pyline__line(11, up1, sizeof(up1), INT_MAX, 0), -EINVAL);
	assert_int_equal(ranges_ret(11, up1, sizeof(up1), INT_MAX), -EINVAL);
	assert_int_equal(pt_pyline__line(11, up30, sizeof(up30), 0, 0), 1 << 30);
	assert_int_equal(pt_pyline__line(11, up30, sizeof(up30), 0, 2), -EINVAL);
	assert_int_equal(pt_pyline__last_line(11, up30, sizeof(up30), 0), -EINVAL);
	assert_int_equal(pt_pyline__line(12, huge, sizeof(huge), 0, 0), -EINVAL);
	assert_int_equal(pt_pyline__line(12, mhuge, sizeof(mhuge), INT_MAX, 0), -EINVAL);
	/* below 0 */
	assert_int_equal(pt_pyline__line(13, down6, sizeof(down6), 6, 2), 0);
	assert_int_equal(pt_pyline__line(13, down6, sizeof(down6), 5, 0), 0);
	assert_int_equal(pt_pyline__line(13, down6, sizeof(down6), 5, 2), -EINVAL);
	/* firstlineno beyond int: nothing is read */
	assert_int_equal(pt_pyline__line(13, down6, sizeof(down6), (unsigned int)INT_MAX + 1, 0),
			 -EINVAL);
	assert_int_equal(pt_pyline__line(13, NULL, 0, UINT_MAX, 0), -EINVAL);
	assert_int_equal(pt_pyline__last_line(13, NULL, 0, UINT_MAX), -EINVAL);
}

/* ---- 3.10 ---- */

/* firstlineno 5 */
/* clang-format off */
static const uint8_t t310[] = {
	6, 0,                 /* [0,6) 5 */
	0, 3,                 /* [6,6) 8: empty, not a range */
	4, 1,                 /* [6,10) 9 */
	2, 0x80,              /* [10,12) none (-128) */
	0, 0x80,              /* empty none */
	254, (uint8_t)-2,     /* [12,266) 7 */
	254, 0,               /* [266,520) 7: a chain, not merged on 3.10 */
	0, 127, 0, 127,       /* line 134, 261 */
	10, 6,                /* [520,530) 267 */
	4, 0x80,              /* [530,534) none */
	2, (uint8_t)-127,     /* [534,536) 140 */
};
/* clang-format on */

static void test_310(void **state)
{
	/* clang-format off */
	static const struct rng r[] = {
		{ 0, 6, 5 },     { 6, 10, 9 },      { 10, 12, 0 },   { 12, 266, 7 },
		{ 266, 520, 7 }, { 520, 530, 267 }, { 530, 534, 0 }, { 534, 536, 140 },
	};
	/* clang-format on */
	/* clang-format off */
	static const struct probe p[] = {
		{ 0, 5 },     { 5, 5 },     { 6, 9 },       { 9, 9 },         { 10, 0 },
		{ 11, 0 },    { 12, 7 },    { 265, 7 },     { 266, 7 },       { 519, 7 },
		{ 520, 267 }, { 529, 267 }, { 530, 0 },     { 535, 140 },     { 536, -ERANGE },
		{ -1, -ERANGE }, { -2, -ERANGE }, { INT64_MAX, -ERANGE },
	};
	/* clang-format on */

	assert_ranges(10, t310, sizeof(t310), 5, r, N(r));
	assert_lines(10, t310, sizeof(t310), 5, p, N(p));
	assert_int_equal(pt_pyline__last_line(10, t310, sizeof(t310), 5), 267);
}

static void test_310_malformed(void **state)
{
	static const uint8_t odd[] = { 6, 0, 4 };
	static const uint8_t up[] = { 2, 0, 2, 127 };
	static const uint8_t down[] = { 2, (uint8_t)-4 };
	static const uint8_t tail_empty[] = { 2, 0, 0, 5 };
	static const struct rng r_tail = { 0, 2, 3 };

	assert_int_equal(pt_pyline__line(10, odd, sizeof(odd), 1, 0), -EINVAL);
	assert_int_equal(ranges_ret(10, odd, sizeof(odd), 1), -EINVAL);
	assert_int_equal(pt_pyline__line(10, odd, 1, 1, 0), -EINVAL);
	assert_int_equal(pt_pyline__line(10, up, sizeof(up), INT_MAX - 100, 0), INT_MAX - 100);
	assert_int_equal(pt_pyline__line(10, up, sizeof(up), INT_MAX - 100, 2), -EINVAL);
	assert_int_equal(pt_pyline__line(10, up, sizeof(up), INT_MAX - 127, 2), INT_MAX);
	assert_int_equal(pt_pyline__last_line(10, up, sizeof(up), INT_MAX - 100), -EINVAL);
	assert_int_equal(pt_pyline__line(10, down, sizeof(down), 3, 0), -EINVAL);
	assert_int_equal(pt_pyline__line(10, down, sizeof(down), 4, 0), 0);
	/* an empty entry at the end changes nothing that is read */
	assert_ranges(10, tail_empty, sizeof(tail_empty), 3, &r_tail, 1);
	assert_int_equal(pt_pyline__line(10, tail_empty, sizeof(tail_empty), 3, 2), -ERANGE);
}

/* ---- 3.8/3.9 co_lnotab ---- */

/* firstlineno 1 */
/* clang-format off */
static const uint8_t t38[] = {
	0, 1,                   /* line 2 from 0 */
	8, 1,                   /* [0,8) 2, then 3 */
	255, 0, 255, 0, 20, 1,  /* [8,538) 3 in three pairs, then 4 */
	4, (uint8_t)-3,         /* [538,542) 4, then 1 */
	6, 127, 0, 127, 0, 46,  /* [542,548) 1, then 301 */
	2, 0x80, 0, 0x80, 0, (uint8_t)-44, /* [548,550) 301, then 1 */
	10, 5,                  /* [550,560) 1, then 6 to the end */
};
/* clang-format on */

static void test_38_39(void **state)
{
	/* clang-format off */
	static const struct rng r[] = {
		{ 0, 8, 2 },       { 8, 538, 3 },   { 538, 542, 4 }, { 542, 548, 1 },
		{ 548, 550, 301 }, { 550, 560, 1 }, { 560, INT64_MAX, 6 },
	};
	/* clang-format on */
	/* clang-format off */
	static const struct probe p[] = {
		{ 0, 2 },     { 7, 2 },     { 8, 3 },         { 262, 3 },    { 263, 3 },
		{ 537, 3 },   { 538, 4 },   { 541, 4 },       { 542, 1 },    { 547, 1 },
		{ 548, 301 }, { 549, 301 }, { 550, 1 },       { 559, 1 },    { 560, 6 },
		{ 1000000000, 6 }, { INT64_MAX - 1, 6 }, { INT64_MAX, -ERANGE },
		{ -1, -ERANGE }, { INT64_MIN, -ERANGE },
	};
	/* clang-format on */
	unsigned int m;

	for (m = 8; m <= 9; m++) {
		assert_ranges(m, t38, sizeof(t38), 1, r, N(r));
		assert_lines(m, t38, sizeof(t38), 1, p, N(p));
		assert_int_equal(pt_pyline__last_line(m, t38, sizeof(t38), 1), 301);
	}
}

static void test_38_malformed(void **state)
{
	static const uint8_t odd[] = { 2, 1, 2 };
	static const uint8_t up[] = { 2, 127, 2, 0 };
	static const uint8_t down[] = { 2, (uint8_t)-3, 2, 0 };
	static const uint8_t late_up[] = { 2, 1, 4, 0, 0, 127 };

	assert_int_equal(pt_pyline__line(8, odd, sizeof(odd), 1, 0), -EINVAL);
	assert_int_equal(ranges_ret(9, odd, sizeof(odd), 1), -EINVAL);
	/* the line after the first pair is out of range: the first range
	 * still answers, as in CPython, which stops there */
	assert_int_equal(pt_pyline__line(8, up, sizeof(up), INT_MAX - 100, 1), INT_MAX - 100);
	assert_int_equal(pt_pyline__line(8, up, sizeof(up), INT_MAX - 100, 2), -EINVAL);
	assert_int_equal(pt_pyline__line(8, up, sizeof(up), INT_MAX - 127, 2), INT_MAX);
	assert_int_equal(ranges_ret(8, up, sizeof(up), INT_MAX - 100), -EINVAL);
	assert_int_equal(pt_pyline__line(9, down, sizeof(down), 2, 0), 2);
	assert_int_equal(pt_pyline__line(9, down, sizeof(down), 2, 2), -EINVAL);
	assert_int_equal(pt_pyline__line(9, down, sizeof(down), 3, 2), 0);
	/* the last pair's line change applies to the open range */
	assert_int_equal(pt_pyline__line(8, late_up, sizeof(late_up), INT_MAX - 128, 6), INT_MAX);
	assert_int_equal(pt_pyline__line(8, late_up, sizeof(late_up), INT_MAX - 127, 5),
			 INT_MAX - 126);
	assert_int_equal(pt_pyline__line(8, late_up, sizeof(late_up), INT_MAX - 127, 6), -EINVAL);
	assert_int_equal(pt_pyline__last_line(8, late_up, sizeof(late_up), INT_MAX - 127), -EINVAL);
}

/* ---- every format ---- */

static void test_empty_tables(void **state)
{
	static const uint8_t one = 0;
	static const struct rng whole = { 0, INT64_MAX, 42 };
	unsigned int m;

	for (m = 8; m <= 13; m++) {
		const uint8_t *ps[] = { NULL, &one };

		for (size_t k = 0; k < 2; k++) {
			if (m <= 9) {
				assert_ranges(m, ps[k], 0, 42, &whole, 1);
				assert_int_equal(pt_pyline__line(m, ps[k], 0, 42, 0), 42);
				assert_int_equal(pt_pyline__line(m, ps[k], 0, 42, 1234), 42);
				assert_int_equal(pt_pyline__last_line(m, ps[k], 0, 42), 42);
			} else {
				assert_ranges(m, ps[k], 0, 42, NULL, 0);
				assert_int_equal(pt_pyline__line(m, ps[k], 0, 42, 0), -ERANGE);
				assert_int_equal(pt_pyline__last_line(m, ps[k], 0, 42), 0);
			}
		}
		/* no table but a length: the caller's bug, not a crash */
		assert_int_equal(pt_pyline__line(m, NULL, 4, 42, 0), -EINVAL);
		assert_int_equal(ranges_ret(m, NULL, 4, 42), -EINVAL);
	}
}

static void test_unsupported_minor(void **state)
{
	static const unsigned int bad[] = { 0, 6, 7, 15, 313, UINT_MAX };
	int64_t a = 77;
	size_t i;

	for (i = 0; i < N(bad); i++) {
		assert_int_equal(pt_pyline__line(bad[i], t311, sizeof(t311), 10, 0), -EINVAL);
		assert_int_equal(ranges_ret(bad[i], t311, sizeof(t311), 10), -EINVAL);
		assert_int_equal(pt_pyline__last_line(bad[i], t311, sizeof(t311), 10), -EINVAL);
		assert_int_equal(pt_pyline__addr(bad[i], 0, &a), -EINVAL);
		assert_int_equal(a, 77);
	}
}

static void test_callback_stops(void **state)
{
	static struct got g;

	memset(&g, 0, sizeof(g));
	g.stop_after = 2;
	assert_int_equal(pt_pyline__ranges(11, t311, sizeof(t311), 10, collect, &g), 7);
	assert_int_equal(g.n, 2);
	memset(&g, 0, sizeof(g));
	g.stop_after = 7; /* the last range of 3.8's table: the open one */
	assert_int_equal(pt_pyline__ranges(8, t38, sizeof(t38), 1, collect, &g), 7);
	assert_int_equal(g.n, 7);
	memset(&g, 0, sizeof(g));
	g.stop_after = 1;
	assert_int_equal(pt_pyline__ranges(10, t310, sizeof(t310), 5, collect, &g), 7);
	assert_int_equal(g.n, 1);
}

static void test_addr(void **state)
{
	static const struct {
		unsigned int minor;
		int64_t pos;
		int ret;
		int64_t addr;
	} c[] = {
		{ 8, 0, 0, 0 },
		{ 8, 10, 0, 10 },
		{ 9, 1000000, 0, 1000000 },
		{ 8, -1, -ERANGE, 0 }, /* f_lasti before the first instruction */
		{ 9, -1, -ERANGE, 0 },
		{ 8, -2, -EINVAL, 0 },
		{ 8, 3, -EINVAL, 0 }, /* bytes of 2-byte units: never odd */
		{ 9, INT64_MIN, -EINVAL, 0 },
		{ 10, 0, 0, 0 },
		{ 10, 5, 0, 10 }, /* code units */
		{ 10, -1, -ERANGE, 0 },
		{ 10, -2, -EINVAL, 0 },
		{ 10, INT64_MAX / 2, 0, INT64_MAX - 1 },
		{ 10, INT64_MAX / 2 + 1, -EINVAL, 0 },
		{ 10, INT64_MAX, -EINVAL, 0 },
		{ 11, 0, 0, 0 },
		{ 11, 6, 0, 6 },
		{ 11, -2, -ERANGE, 0 }, /* prev_instr one unit before the code */
		{ 12, -2, -ERANGE, 0 },
		{ 13, -2, -ERANGE, 0 },
		{ 11, -1, -EINVAL, 0 },
		{ 12, -4, -EINVAL, 0 },
		{ 13, 7, -EINVAL, 0 },
		{ 13, INT64_MAX - 1, 0, INT64_MAX - 1 },
		{ 13, INT64_MIN, -EINVAL, 0 },
	};
	size_t i;

	for (i = 0; i < N(c); i++) {
		int64_t a = -12345;
		int r = pt_pyline__addr(c[i].minor, c[i].pos, &a);

		if (r != c[i].ret || (r == 0 && a != c[i].addr) || (r && a != -12345))
			fail_msg("3.%u pos %lld: %d, addr %lld", c[i].minor, (long long)c[i].pos, r,
				 (long long)a);
	}
}

/* ---- random valid tables against the entries they encode ---- */

static uint64_t rs = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return (uint32_t)(rs % n);
}

struct enc {
	uint8_t b[1 << 16];
	size_t n;
};

static void put(struct enc *e, uint8_t v)
{
	assert_true(e->n < sizeof(e->b));
	e->b[e->n++] = v;
}

static void put_varint(struct enc *e, uint32_t v)
{
	while (v >= 64) {
		put(e, (uint8_t)(0x40 | (v & 63)));
		v >>= 6;
	}
	put(e, (uint8_t)v);
}

static void put_svarint(struct enc *e, int32_t v)
{
	put_varint(e, v < 0 ? ((uint32_t) - (int64_t)v << 1) | 1 : (uint32_t)v << 1);
}

/* A line delta keeping the line in [0, INT_MAX]: mostly small, some huge. */
static int64_t pick_delta(int64_t line)
{
	int64_t d;

	switch (rnd(4)) {
	case 0:
		d = (int64_t)rnd(7) - 3;
		break;
	case 1:
		d = (int64_t)rnd(400) - 200;
		break;
	case 2:
		d = (int64_t)rnd(1u << 20) - (1 << 19);
		break;
	default:
		d = (int64_t)rnd(UINT32_MAX) - INT32_MAX;
		break;
	}
	if (line + d < 0)
		d = -line;
	if (line + d > INT_MAX)
		d = INT_MAX - line;
	return d;
}

/* The model: per entry, its range and line (-1 none); merged or not. */
struct model {
	struct rng r[MAX_RANGES];
	int key[MAX_RANGES];
	size_t n;
};

static void model_add(struct model *m, int64_t start, int64_t end, int key, bool merge)
{
	if (start == end)
		return;
	if (merge && m->n && m->key[m->n - 1] == key) {
		m->r[m->n - 1].end = end;
		return;
	}
	assert_true(m->n < MAX_RANGES);
	m->key[m->n] = key;
	m->r[m->n++] = (struct rng){ start, end, key < 0 ? 0 : key };
}

static void check_model(unsigned int minor, const struct enc *e, unsigned int first,
			const struct model *m)
{
	int max = 0;
	size_t i;
	int64_t a;

	assert_ranges(minor, e->b, e->n, first, m->r, m->n);
	for (i = 0; i < m->n; i++) {
		if (m->r[i].line > max)
			max = m->r[i].line;
		/* both ends and a few inside */
		for (a = m->r[i].start; a < m->r[i].end && a < m->r[i].start + 6; a++)
			assert_int_equal(pt_pyline__line(minor, e->b, e->n, first, a),
					 m->r[i].line);
		if (m->r[i].end != INT64_MAX)
			assert_int_equal(pt_pyline__line(minor, e->b, e->n, first, m->r[i].end - 1),
					 m->r[i].line);
	}
	if (minor >= 10)
		assert_int_equal(
			pt_pyline__line(minor, e->b, e->n, first, m->n ? m->r[m->n - 1].end : 0),
			-ERANGE);
	assert_int_equal(pt_pyline__last_line(minor, e->b, e->n, first), max);
}

static void random_311(unsigned int minor)
{
	static struct enc e;
	static struct model m;
	unsigned int first = rnd(3) ? rnd(2000) : rnd(INT32_MAX);
	int64_t line = first, pc = 0;
	size_t k, n = rnd(200);

	e.n = 0;
	m.n = 0;
	for (k = 0; k < n; k++) {
		unsigned int code = rnd(16), units = 1 + rnd(8);
		int64_t d = 0;
		int key;

		if (code >= 10 && code <= 12 && line + (code - 10) > INT_MAX)
			code = 15;
		put(&e, H(code, units));
		if (code <= 9) {
			put(&e, (uint8_t)rnd(128));
		} else if (code <= 12) {
			d = code - 10;
			put(&e, (uint8_t)rnd(128));
			put(&e, (uint8_t)rnd(128));
		} else if (code == 13) {
			d = pick_delta(line);
			put_svarint(&e, (int32_t)d);
		} else if (code == 14) {
			d = pick_delta(line);
			put_svarint(&e, (int32_t)d);
			put_varint(&e, rnd(3) ? rnd(10) : rnd(UINT32_MAX));
			put_varint(&e, rnd(200));
			put_varint(&e, rnd(3) ? rnd(200) : rnd(UINT32_MAX));
		}
		line += d;
		key = code == 15 ? -1 : (int)line;
		model_add(&m, pc, pc + 2 * units, key, minor >= 12);
		pc += 2 * units;
	}
	check_model(minor, &e, first, &m);
}

static void random_310(void)
{
	static struct enc e;
	static struct model m;
	unsigned int first = rnd(2000);
	int64_t line = first, pc = 0;
	size_t k, n = rnd(300);

	e.n = 0;
	m.n = 0;
	for (k = 0; k < n; k++) {
		unsigned int sd = rnd(4) ? rnd(20) : rnd(256);
		int ld = rnd(5) ? (int)rnd(9) - 4 : (int)rnd(256) - 128;

		if (ld != -128 && (line + ld < 0 || line + ld > INT_MAX))
			ld = 0;
		put(&e, (uint8_t)sd);
		put(&e, (uint8_t)ld);
		if (ld != -128)
			line += ld;
		model_add(&m, pc, pc + sd, ld == -128 ? -1 : (int)line, false);
		pc += sd;
	}
	check_model(10, &e, first, &m);
}

static void random_lnotab(unsigned int minor)
{
	static struct enc e;
	static struct model m;
	unsigned int first = rnd(2000);
	int64_t line = first, pc = 0;
	size_t k, n = rnd(300);

	e.n = 0;
	m.n = 0;
	for (k = 0; k < n; k++) {
		unsigned int incr = rnd(4) ? rnd(20) : rnd(256);
		int ld = rnd(5) ? (int)rnd(9) - 4 : (int)rnd(256) - 128;

		if (line + ld < 0 || line + ld > INT_MAX)
			ld = 0;
		put(&e, (uint8_t)incr);
		put(&e, (uint8_t)ld);
		/* [pc, pc + incr) keeps the line from before this pair */
		model_add(&m, pc, pc + incr, (int)line, true);
		pc += incr;
		line += ld;
	}
	model_add(&m, pc, INT64_MAX, (int)line, true);
	check_model(minor, &e, first, &m);
}

static void test_random_valid_tables(void **state)
{
	int i;

	for (i = 0; i < 3000; i++) {
		random_311(11 + (unsigned int)(i % 3));
		random_310();
		random_lnotab(8 + (unsigned int)(i % 2));
	}
}

/* Random bytes, any version: never a crash (the sanitizer build and the
 * fuzzer look harder), answers agree with the ranges. */
static void test_random_bytes(void **state)
{
	static struct got g;
	uint8_t t[64];
	int i;

	for (i = 0; i < 20000; i++) {
		unsigned int minor = 8 + rnd(6), first = rnd(100);
		size_t len = rnd(sizeof(t) + 1), k;
		int e;

		for (k = 0; k < len; k++)
			t[k] = (uint8_t)rnd(256);
		memset(&g, 0, sizeof(g));
		e = pt_pyline__ranges(minor, t, len, first, collect, &g);
		assert_true(e == 0 || e == -EINVAL);
		for (k = 0; k < g.n; k++) {
			assert_true(g.r[k].line >= 0);
			assert_true(g.r[k].start < g.r[k].end);
			assert_true(g.r[k].start == (k ? g.r[k - 1].end : 0));
			assert_int_equal(pt_pyline__line(minor, t, len, first, g.r[k].start),
					 g.r[k].line);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_311_every_code),
		cmocka_unit_test(test_311_line0_vs_none),
		cmocka_unit_test(test_311_lengths),
		cmocka_unit_test(test_311_malformed),
		cmocka_unit_test(test_311_overflow),
		cmocka_unit_test(test_310),
		cmocka_unit_test(test_310_malformed),
		cmocka_unit_test(test_38_39),
		cmocka_unit_test(test_38_malformed),
		cmocka_unit_test(test_empty_tables),
		cmocka_unit_test(test_unsupported_minor),
		cmocka_unit_test(test_callback_stops),
		cmocka_unit_test(test_addr),
		cmocka_unit_test(test_random_valid_tables),
		cmocka_unit_test(test_random_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
