// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_top over synthetic symbolized samples whose figures are worked out by
 * hand: self time to the innermost frame and its line, total time once per
 * sample under recursion and at the outermost frame's line (so a
 * function's line totals add up to its total), on-CPU and off-CPU kept
 * apart, one row per code identity whatever the key collisions, frames of
 * unknown code ignored, and the bound on functions.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "aggregate/stacks.h"
#include "aggregate/top.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MS 1000000ULL

/* A frame of function (q, file, first line) at line ln; key k. */
#define FR(k, q, file, first, ln)                                                                  \
	((struct pt_sframe){ .label = q,                                                           \
			     .fid = UINT32_MAX,                                                    \
			     .line = (ln),                                                         \
			     .key = (k),                                                           \
			     .qualname = (q),                                                      \
			     .filename = (file),                                                   \
			     .first_line = (first),                                                \
			     .last_line = (first) + 20 })

static int add(struct pt_top *t, bool offcpu, uint64_t w, const struct pt_sframe *f, size_t n)
{
	struct pt_stacks_sample s = { .tid = 1, .offcpu = offcpu, .weight_ns = w, .f = f, .n = n };

	return pt_top__add(t, &s);
}

static const struct pt_top_fn *find(const struct pt_top *t, const char *q, const char *file)
{
	for (size_t i = 0; i < pt_top__nfuncs(t); i++) {
		const struct pt_top_fn *f = pt_top__func(t, i);

		if (!strcmp(f->qualname, q) && !strcmp(f->filename, file))
			return f;
	}
	return NULL;
}

static const struct pt_top_line *line(const struct pt_top_fn *f, uint32_t ln)
{
	for (size_t i = 0; i < f->nlines; i++)
		if (f->lines[i].line == ln)
			return &f->lines[i];
	return NULL;
}

static void test_self_total_lines(void **state)
{
	struct pt_top *t = pt_top__new();
	/* main:5 -> step:12 -> fwd:31 (on-CPU, 1 ms), twice */
	const struct pt_sframe a[] = { FR(3, "fwd", "/m.py", 30, 31),
				       FR(2, "step", "/m.py", 10, 12),
				       FR(1, "main", "/m.py", 1, 5) };
	/* main:5 -> step:14 (on-CPU, 1 ms): step's own time, another line */
	const struct pt_sframe b[] = { FR(2, "step", "/m.py", 10, 14),
				       FR(1, "main", "/m.py", 1, 5) };
	/* recursion: main:6 -> step:15 -> step:12 -> fwd:33, off-CPU 7 ms */
	const struct pt_sframe c[] = { FR(3, "fwd", "/m.py", 30, 33),
				       FR(2, "step", "/m.py", 10, 12),
				       FR(2, "step", "/m.py", 10, 15),
				       FR(1, "main", "/m.py", 1, 6) };
	const struct pt_top_fn *f;

	(void)state;
	assert_non_null(t);
	assert_int_equal(add(t, false, MS, a, 3), 0);
	assert_int_equal(add(t, false, MS, a, 3), 0);
	assert_int_equal(add(t, false, MS, b, 2), 0);
	assert_int_equal(add(t, true, 7 * MS, c, 4), 0);
	assert_int_equal(pt_top__nfuncs(t), 3);

	f = find(t, "fwd", "/m.py");
	assert_non_null(f);
	assert_int_equal(f->self.samples, 2);
	assert_int_equal(f->self.on_ns, 2 * MS);
	assert_int_equal(f->self.off_ns, 7 * MS);
	assert_int_equal(f->total.on_ns, 2 * MS);
	assert_int_equal(f->first_line, 30);
	assert_int_equal(f->last_line, 50);
	assert_int_equal(line(f, 31)->self.on_ns, 2 * MS);
	assert_int_equal(line(f, 33)->self.off_ns, 7 * MS);

	f = find(t, "step", "/m.py");
	assert_int_equal(f->self.on_ns, 1 * MS); /* sample b */
	assert_int_equal(f->self.off_ns, 0);
	/* once per sample, also when it recurses */
	assert_int_equal(f->total.samples, 3);
	assert_int_equal(f->total.on_ns, 3 * MS);
	assert_int_equal(f->total.off_ns, 7 * MS);
	/* line totals at the outermost frame: 12 (a, a), 14 (b), 15 (c) */
	assert_int_equal(f->nlines, 3);
	assert_int_equal(line(f, 12)->total.on_ns, 2 * MS);
	assert_int_equal(line(f, 12)->total.off_ns, 0);
	assert_int_equal(line(f, 14)->total.on_ns, 1 * MS);
	assert_int_equal(line(f, 14)->self.on_ns, 1 * MS);
	assert_int_equal(line(f, 15)->total.off_ns, 7 * MS);
	/* ... which add up to the function's total */
	{
		uint64_t on = 0, off = 0;

		for (size_t i = 0; i < f->nlines; i++) {
			on += f->lines[i].total.on_ns;
			off += f->lines[i].total.off_ns;
		}
		assert_int_equal(on, f->total.on_ns);
		assert_int_equal(off, f->total.off_ns);
	}
	/* sorted by line */
	assert_true(f->lines[0].line < f->lines[1].line && f->lines[1].line < f->lines[2].line);

	f = find(t, "main", "/m.py");
	assert_int_equal(f->self.on_ns + f->self.off_ns, 0);
	assert_int_equal(f->total.on_ns, 3 * MS);
	assert_int_equal(line(f, 5)->total.on_ns, 3 * MS);
	assert_int_equal(line(f, 6)->total.off_ns, 7 * MS);
	assert_null(line(f, 5)->self.samples ? f : NULL);
	pt_top__free(t);
}

/* A key says nothing alone: two functions whose keys collide are two
 * rows; one function seen under two code objects (two processes) is one.
 * Unknown frames and weightless samples count for nothing. */
static void test_identity(void **state)
{
	struct pt_top *t = pt_top__new();
	const struct pt_sframe x[] = { FR(9, "f", "/a.py", 1, 2) };
	const struct pt_sframe y[] = { FR(9, "f", "/b.py", 1, 2) }; /* same key, other file */
	const struct pt_sframe z[] = { FR(9, "f", "/a.py", 7, 8) }; /* same key, other line */
	const struct pt_sframe u[] = { { .label = "[unknown code]", .fid = UINT32_MAX },
				       FR(9, "f", "/a.py", 1, 3) }; /* innermost unknown */

	(void)state;
	assert_int_equal(add(t, false, MS, x, 1), 0);
	assert_int_equal(add(t, false, MS, x, 1), 0);
	assert_int_equal(add(t, false, MS, y, 1), 0);
	assert_int_equal(add(t, false, MS, z, 1), 0);
	assert_int_equal(add(t, false, MS, u, 2), 0);
	assert_int_equal(add(t, false, 0, x, 1), 0);
	assert_int_equal(pt_top__nfuncs(t), 3);
	assert_int_equal(find(t, "f", "/b.py")->self.samples, 1);
	assert_int_equal(pt_top__func(t, 2)->first_line, 7);
	assert_int_equal(pt_top__func(t, 2)->self.samples, 1);
	/* the unknown innermost frame's sample is nobody's self time */
	assert_int_equal(pt_top__func(t, 0)->self.samples, 2);
	assert_int_equal(pt_top__func(t, 0)->total.samples, 3);
	pt_top__free(t);
}

/* Past PT_TOP_MAX_FUNCS functions new ones are counted, not kept. */
static void test_bound(void **state)
{
	struct pt_top *t = pt_top__new();
	char name[32];

	(void)state;
	for (uint32_t i = 0; i < PT_TOP_MAX_FUNCS + 10; i++) {
		struct pt_sframe f[1];

		snprintf(name, sizeof(name), "f%u", i);
		f[0] = FR(i + 1, name, "/a.py", 1, 1);
		assert_int_equal(add(t, false, MS, f, 1), 0);
	}
	assert_int_equal(pt_top__nfuncs(t), PT_TOP_MAX_FUNCS);
	assert_int_equal(pt_top__stats(t)->frames_not_kept, 10);
	assert_string_equal(pt_top__func(t, 5)->qualname, "f5");
	pt_top__free(t);
}

/* Ranked by self on-CPU time, then self off-CPU, then total; lines by
 * their self time; only what has time of its own. */
static void test_rank(void **state)
{
	struct pt_top *t = pt_top__new();
	const struct pt_sframe hot[] = { FR(3, "hot", "/m.py", 30, 31),
					 FR(1, "main", "/m.py", 1, 5) };
	const struct pt_sframe warm[] = { FR(2, "warm", "/m.py", 10, 12),
					  FR(1, "main", "/m.py", 1, 6) };
	const struct pt_sframe idle[] = { FR(4, "idle", "/m.py", 40, 41),
					  FR(1, "main", "/m.py", 1, 7) };
	const struct pt_top_fn *f[8];
	struct pt_top_lref l[8];

	(void)state;
	for (int i = 0; i < 3; i++)
		assert_int_equal(add(t, false, MS, hot, 2), 0);
	assert_int_equal(add(t, false, MS, warm, 2), 0);
	assert_int_equal(add(t, true, 50 * MS, idle, 2), 0);
	assert_int_equal(add(t, true, 60 * MS, warm, 2), 0);
	assert_int_equal(pt_top__rank_funcs(t, f, 8), 4);
	assert_string_equal(f[0]->qualname, "hot");  /* 3 ms on-CPU */
	assert_string_equal(f[1]->qualname, "warm"); /* 1 ms on-CPU */
	assert_string_equal(f[2]->qualname, "idle"); /* off-CPU only */
	assert_string_equal(f[3]->qualname, "main"); /* no self time: by its total */
	assert_int_equal(pt_top__rank_funcs(t, f, 2), 2);
	assert_string_equal(f[1]->qualname, "warm");
	/* lines with self time: hot:31, warm:12, idle:41 */
	assert_int_equal(pt_top__rank_lines(t, l, 8), 3);
	assert_string_equal(l[0].fn->qualname, "hot");
	assert_int_equal(l[0].line->line, 31);
	assert_int_equal(l[1].line->line, 12);
	assert_int_equal(l[2].line->line, 41);
	pt_top__free(t);
}

/* A late sample (3 of its 4 periods missed: bpf/sampleclock.h) is one
 * period on the CPU and three off it, self and total, function and line. */
static void test_late_sample(void **state)
{
	struct pt_top *t = pt_top__new();
	const struct pt_sframe a[] = { FR(2, "step", "/m.py", 10, 12),
				       FR(1, "main", "/m.py", 1, 5) };
	struct pt_stacks_sample s = {
		.tid = 1, .weight_ns = 4 * MS, .held_ns = 3 * MS, .f = a, .n = 2
	};
	const struct pt_top_fn *f;

	assert_non_null(t);
	assert_int_equal(pt_top__add(t, &s), 0);
	f = find(t, "step", "/m.py");
	assert_non_null(f);
	assert_int_equal(f->self.samples, 1);
	assert_int_equal(f->self.on_ns, MS);
	assert_int_equal(f->self.off_ns, 3 * MS);
	assert_int_equal(line(f, 12)->self.off_ns, 3 * MS);
	f = find(t, "main", "/m.py");
	assert_int_equal(f->total.on_ns, MS);
	assert_int_equal(f->total.off_ns, 3 * MS);
	assert_int_equal(f->self.on_ns + f->self.off_ns, 0);
	pt_top__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_total_lines),
		cmocka_unit_test(test_identity),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_late_sample),
		cmocka_unit_test(test_rank),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
