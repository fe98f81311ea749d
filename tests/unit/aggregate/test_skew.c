// SPDX-License-Identifier: BSD-2-Clause
/*
 * skew: step times of several processes lined up by time, slowest minus
 * fastest per index, on steps whose times are known to the ns.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "aggregate/skew.h"

#define US 1000ull

/* n lockstep steps: step i starts at t0 + i * period and lasts dur(i). */
static void lockstep(struct pt_skew_steps *s, uint64_t t0, uint64_t period, size_t n, uint64_t base,
		     uint64_t extra)
{
	for (size_t i = 0; i < n; i++)
		pt_skew__add(s, t0 + i * period, t0 + i * period + base + (i % 4) * extra);
}

static void test_two_ranks_exact(void **state)
{
	struct pt_skew_steps a = { 0 }, b = { 0 };
	const struct pt_skew_steps *v[2] = { &a, &b };
	struct pt_skew k;

	lockstep(&a, 1000 * US, 3000 * US, 100, 1000 * US, 100 * US);
	lockstep(&b, 1000 * US + 5 * US, 3000 * US, 100, 1400 * US, 100 * US);
	assert_int_equal(pt_skew__compute(v, 2, &k), 0);
	assert_null(k.why);
	assert_int_equal(k.aligned, 100);
	assert_int_equal(k.unaligned, 0);
	/* b is 400 us slower on every step: the skew is exactly that */
	assert_int_equal(k.skew.min, 400 * US);
	assert_int_equal(k.skew.max, 400 * US);
	assert_int_equal(k.slowest[1], 100);
	assert_int_equal(k.fastest[0], 100);
	assert_int_equal(k.slowest[0], 0);
	assert_true(k.skew_ms_sum > 39.99 && k.skew_ms_sum < 40.01);
	pt_skew__free_result(&k);
	pt_skew__free(&a);
	pt_skew__free(&b);
}

/* b was attached 5 steps later: its step 0 is a's step 5. */
static void test_attached_apart(void **state)
{
	struct pt_skew_steps a = { 0 }, b = { 0 };
	const struct pt_skew_steps *v[2] = { &a, &b };
	struct pt_skew k;

	lockstep(&a, 0, 3000 * US, 50, 1000 * US, 0);
	lockstep(&b, 5 * 3000 * US + 10 * US, 3000 * US, 45, 1200 * US, 0);
	assert_int_equal(pt_skew__compute(v, 2, &k), 0);
	assert_int_equal(k.aligned, 45);
	assert_int_equal(k.first[0], 5);
	assert_int_equal(k.first[1], 0);
	assert_int_equal(k.offset[0], 5);
	assert_int_equal(k.skew.min, 200 * US);
	assert_int_equal(k.skew.max, 200 * US);
	pt_skew__free_result(&k);
	pt_skew__free(&a);
	pt_skew__free(&b);
}

/* The reference's first step stands alone (slow start); a lost step in
 * the middle of b shifts nothing: that index is not compared, the rest
 * are. */
static void test_lone_first_step_and_a_gap(void **state)
{
	struct pt_skew_steps a = { 0 }, b = { 0 };
	const struct pt_skew_steps *v[2] = { &a, &b };
	struct pt_skew k;

	/* a: 20 steps; b's first starts later than a's first ends */
	lockstep(&a, 0, 3000 * US, 20, 1000 * US, 0);
	pt_skew__add(&b, 1500 * US, 2000 * US); /* b's step 0: overlaps nothing of a */
	for (size_t i = 1; i < 20; i++)
		pt_skew__add(&b, i * 3000 * US, i * 3000 * US + 1100 * US);
	assert_int_equal(pt_skew__compute(v, 2, &k), 0);
	/* b is the reference (later first step); its step 1 lines up with
	 * a's 1: index 0 is not compared */
	assert_int_equal(k.aligned, 19);
	assert_int_equal(k.unaligned, 1);
	assert_int_equal(k.skew.max, 100 * US);
	pt_skew__free_result(&k);
	pt_skew__free(&a);
	pt_skew__free(&b);
}

static void test_not_lockstep_and_edges(void **state)
{
	struct pt_skew_steps a = { 0 }, b = { 0 }, c = { 0 };
	const struct pt_skew_steps *v[3] = { &a, &b, &c };
	struct pt_skew k;

	/* fewer than two processes: an error */
	assert_int_equal(pt_skew__compute(v, 1, &k), -EINVAL);
	pt_skew__free_result(&k);
	/* a process without steps */
	lockstep(&a, 0, 3000 * US, 10, 1000 * US, 0);
	assert_int_equal(pt_skew__compute(v, 2, &k), 0);
	assert_int_equal(k.aligned, 0);
	assert_non_null(k.why);
	pt_skew__free_result(&k);
	/* steps that never overlap: not lockstep, said, nothing guessed */
	lockstep(&b, 1500 * US, 3000 * US, 10, 1000 * US, 0);
	assert_int_equal(pt_skew__compute(v, 2, &k), 0);
	assert_int_equal(k.aligned, 0);
	assert_non_null(k.why);
	pt_skew__free_result(&k);
	/* three processes, one much shorter list: compared while all have */
	lockstep(&c, 100 * US, 3000 * US, 4, 1500 * US, 0);
	pt_skew__free(&b);
	lockstep(&b, 50 * US, 3000 * US, 10, 1200 * US, 0);
	assert_int_equal(pt_skew__compute(v, 3, &k), 0);
	assert_int_equal(k.aligned, 4);
	assert_int_equal(k.slowest[2], 4);
	assert_int_equal(k.fastest[0], 4);
	assert_int_equal(k.skew.max, 500 * US);
	pt_skew__free_result(&k);
	pt_skew__free(&a);
	pt_skew__free(&b);
	pt_skew__free(&c);
}

/* Two independent loops with different periods touch now and then:
 * no figures from chance overlaps. */
static void test_independent_loops(void **state)
{
	struct pt_skew_steps a = { 0 }, b = { 0 };
	const struct pt_skew_steps *v[2] = { &a, &b };
	struct pt_skew k;

	lockstep(&a, 0, 3000 * US, 200, 2000 * US, 0);
	lockstep(&b, 10 * US, 3700 * US, 160, 2500 * US, 0);
	assert_int_equal(pt_skew__compute(v, 2, &k), 0);
	assert_int_equal(k.aligned, 0);
	assert_non_null(k.why);
	assert_int_equal(k.skew.count, 0);
	assert_int_equal(k.slowest[0] + k.slowest[1], 0);
	pt_skew__free_result(&k);
	pt_skew__free(&a);
	pt_skew__free(&b);
}

static void test_grows(void **state)
{
	struct pt_skew_steps a = { 0 }, b = { 0 };
	const struct pt_skew_steps *v[2] = { &a, &b };
	struct pt_skew k;

	lockstep(&a, 0, 100 * US, 100000, 50 * US, 0);
	lockstep(&b, 1 * US, 100 * US, 100000, 60 * US, 0);
	assert_int_equal(a.n, 100000);
	assert_false(a.oom);
	assert_int_equal(pt_skew__compute(v, 2, &k), 0);
	assert_int_equal(k.aligned, 100000);
	assert_int_equal(k.skew.max, 10 * US);
	pt_skew__free_result(&k);
	pt_skew__free(&a);
	pt_skew__free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_ranks_exact),
		cmocka_unit_test(test_attached_apart),
		cmocka_unit_test(test_lone_first_step_and_a_gap),
		cmocka_unit_test(test_not_lockstep_and_edges),
		cmocka_unit_test(test_independent_loops),
		cmocka_unit_test(test_grows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
