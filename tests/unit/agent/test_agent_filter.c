// SPDX-License-Identifier: BSD-2-Clause
/*
 * The agent's filter (shim/agent/codeset.c): the one lookup every frame
 * pays on 3.8-3.11 and every hooked event on 3.12+. It must say yes for
 * exactly the code objects proftrace armed — never a false yes (an unnamed
 * call would be timed) nor a false no (a named call lost) — whatever the
 * addresses: 16-byte aligned heap addresses that collide in the hash,
 * duplicates, zeros, a full rebuild to another set, an empty set. Then the
 * module matcher (shim/agent/scan.c), at '/' boundaries as proftrace
 * matches co_filename. Against the interpreters: test_agent.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "shim/agent/codeset.h"
#include "shim/agent/scan.h"
#include "shim/agent/tramp.h"

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* s holds exactly want[0..n) (sorted): every member yes, and no for each
 * of many non-members near them and elsewhere */
static void exact(const struct ptag_codeset *s, const uint64_t *want, uint32_t n, uint64_t *r)
{
	for (uint32_t i = 0; i < n; i++) {
		assert_true(ptag_codeset__has(s, want[i]));
		for (int d = -64; d <= 64; d += 16) {
			uint64_t c = want[i] + d;

			if (!bsearch(&c, want, n, sizeof(*want), cmp))
				assert_false(ptag_codeset__has(s, c));
		}
	}
	for (int k = 0; k < 20000; k++) {
		uint64_t c = (0x7f0000000000ull + (rnd(r) & 0xffffffff0ull));

		assert_int_equal(ptag_codeset__has(s, c),
				 !!bsearch(&c, want, n, sizeof(*want), cmp));
	}
}

static void test_random_sets(void **state)
{
	static const uint32_t sizes[] = { 0, 1, 2, 3, 15, 16, 17, 255, 1000, 3072 };
	uint64_t seed = 0x9e3779b97f4a7c15ull;

	(void)state;
	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		uint32_t n = sizes[z], m = 0;
		uint64_t *codes = calloc(n + 1, sizeof(*codes)), *want = calloc(n + 1, 8);
		struct ptag_codeset s;

		/* code objects of one heap: close together, 16-byte aligned */
		for (uint32_t i = 0; i < n; i++)
			codes[i] = 0x7f0000000000ull + (rnd(&seed) & 0xffffff0ull);
		assert_int_equal(ptag_codeset__build(&s, codes, n), 0);
		for (uint32_t i = 0; i < n; i++)
			want[i] = codes[i];
		qsort(want, n, sizeof(*want), cmp);
		for (uint32_t i = 0; i < n; i++)
			if (!m || want[m - 1] != want[i])
				want[m++] = want[i];
		assert_int_equal(s.n, m);
		/* at most 1/4 full: a miss ends within a few slots */
		assert_true(s.mask + 1 >= 4ull * m);
		exact(&s, want, m, &seed);
		ptag_codeset__free(&s);
		assert_false(ptag_codeset__has(&s, codes[0]));
		free(codes);
		free(want);
	}
}

static void test_collisions_duplicates_zeros(void **state)
{
	/* addresses 16 slots * 2^k apart hash to nearby slots in a small table;
	 * the same address twice and a zero are dropped */
	uint64_t codes[64], want[64];
	uint32_t n = 0, m;
	uint64_t seed = 7;
	struct ptag_codeset s;

	(void)state;
	for (int i = 0; i < 40; i++)
		codes[n++] = 0x1000ull + ((uint64_t)i << 36);
	codes[n++] = 0x1000ull; /* again */
	codes[n++] = 0;
	codes[n++] = 0x1000ull + (3ull << 36);
	assert_int_equal(ptag_codeset__build(&s, codes, n), 0);
	for (m = 0; m < 40; m++)
		want[m] = 0x1000ull + ((uint64_t)m << 36);
	qsort(want, m, sizeof(*want), cmp);
	assert_int_equal(s.n, 40);
	assert_false(ptag_codeset__has(&s, 0));
	exact(&s, want, m, &seed);
	ptag_codeset__free(&s);
}

static void test_rebuild_replaces(void **state)
{
	/* proftrace arms a new list: what left it is no longer hooked */
	uint64_t a[] = { 0x10, 0x20, 0x30 }, b[] = { 0x30, 0x40 };
	struct ptag_codeset s;

	(void)state;
	assert_int_equal(ptag_codeset__build(&s, a, 3), 0);
	assert_true(ptag_codeset__has(&s, 0x20));
	ptag_codeset__free(&s);
	assert_int_equal(ptag_codeset__build(&s, b, 2), 0);
	assert_false(ptag_codeset__has(&s, 0x10));
	assert_false(ptag_codeset__has(&s, 0x20));
	assert_true(ptag_codeset__has(&s, 0x30));
	assert_true(ptag_codeset__has(&s, 0x40));
	ptag_codeset__free(&s);
	assert_int_equal(ptag_codeset__build(&s, b, 0), 0);
	assert_false(ptag_codeset__has(&s, 0x30));
	ptag_codeset__free(&s);
}

static void test_file_matches(void **state)
{
	static const struct {
		const char *file, *path;
		bool yes;
	} t[] = {
		{ "/srv/vllm/v1/engine/core.py", "vllm/v1/engine/core", true },
		{ "/srv/vllm/v1/engine/core/__init__.py", "vllm/v1/engine/core", true },
		{ "/srv/__pycache__x/vllm/v1/engine/core.pyc", "vllm/v1/engine/core", true },
		{ "core.py", "core", true },
		{ "/a/mycore.py", "core", false }, /* not at a '/' */
		{ "/a/core.pyx", "core", false },
		{ "/a/core.py.bak", "core", false },
		{ "/a/core.py", "a/core", true },
		{ "/b/a/core.py", "x/a/core", false },
		{ "/a/core/__init__.py", "core/__init__", true }, /* written out in full */
		{ "/a/core/x.py", "core", false },
		{ "", "core", false },
		{ "/a/sched.py", "", false }, /* an empty path names no file */
		{ "<frozen importlib._bootstrap>", "importlib/_bootstrap", false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (ptag_scan__file_matches(t[i].file, t[i].path) != t[i].yes)
			fail_msg("%s ~ %s: want %d", t[i].file, t[i].path, t[i].yes);
}

/* A trampoline fits a function's, a generator's or a coroutine's code; an
 * async generator, a generator made a coroutine by types.coroutine, and a
 * function nested in another one (a new function object per call) stay on
 * the frame evaluator; unreadable flags never fit. */
static void test_tramp_fits(void **state)
{
	(void)state;
	assert_null(ptag_tramp__unfit(0));
	assert_null(ptag_tramp__unfit(0x1 | 0x2 | 0x4 | 0x8 | 0x40)); /* locals, varargs... */
	assert_null(ptag_tramp__unfit(0x20 | 0x3));		      /* generator */
	assert_null(ptag_tramp__unfit(0x80 | 0x3));		      /* coroutine */
	assert_non_null(ptag_tramp__unfit(0x20 | 0x100));	      /* types.coroutine */
	assert_non_null(ptag_tramp__unfit(0x200));		      /* async generator */
	assert_non_null(ptag_tramp__unfit(0x10));		      /* nested */
	assert_non_null(ptag_tramp__unfit(0x20 | 0x10));
	assert_non_null(ptag_tramp__unfit(-1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_sets),
		cmocka_unit_test(test_collisions_duplicates_zeros),
		cmocka_unit_test(test_rebuild_replaces),
		cmocka_unit_test(test_file_matches),
		cmocka_unit_test(test_tramp_fits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
