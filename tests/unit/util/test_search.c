// SPDX-License-Identifier: BSD-2-Clause
/*
 * util/search: pt_lower_bound() as a lower bound ("elem < key") and as an
 * upper bound ("elem <= key") on fixed arrays (empty, absent keys, runs of
 * equals, the first and the last element), on records searched by a key
 * of another type, and against a linear scan on random sorted arrays.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "util/search.h"
#include "util/util.h"

static bool lt(const void *elem, const void *key)
{
	return *(const int *)elem < *(const int *)key;
}

static bool le(const void *elem, const void *key)
{
	return *(const int *)elem <= *(const int *)key;
}

static size_t lower(const int *v, size_t n, int key)
{
	return pt_lower_bound(v, n, sizeof(*v), &key, lt);
}

static size_t upper(const int *v, size_t n, int key)
{
	return pt_lower_bound(v, n, sizeof(*v), &key, le);
}

static void test_empty(void **state)
{
	int one = 5;

	(void)state;
	/* no element is read: NULL is what an array not grown yet holds */
	assert_int_equal(lower(NULL, 0, 5), 0);
	assert_int_equal(upper(NULL, 0, 5), 0);
	assert_int_equal(lower(&one, 1, 4), 0);
	assert_int_equal(lower(&one, 1, 5), 0);
	assert_int_equal(upper(&one, 1, 5), 1);
	assert_int_equal(lower(&one, 1, 6), 1);
}

static void test_fixed(void **state)
{
	static const int v[] = { 1, 3, 3, 3, 7, 9, 9 };
	const size_t n = ARRAY_SIZE(v);

	(void)state;
	/* absent: before all, between two, after all: where it would go */
	assert_int_equal(lower(v, n, 0), 0);
	assert_int_equal(upper(v, n, 0), 0);
	assert_int_equal(lower(v, n, 5), 4);
	assert_int_equal(upper(v, n, 5), 4);
	assert_int_equal(lower(v, n, 10), n);
	assert_int_equal(upper(v, n, 10), n);
	/* the first and the last element */
	assert_int_equal(lower(v, n, 1), 0);
	assert_int_equal(upper(v, n, 1), 1);
	assert_int_equal(lower(v, n, 9), 5);
	assert_int_equal(upper(v, n, 9), n);
	/* a run of equals: the first of it, and just past it */
	assert_int_equal(lower(v, n, 3), 1);
	assert_int_equal(upper(v, n, 3), 4);
	assert_int_equal(lower(v, n, 7), 4);
	assert_int_equal(upper(v, n, 7), 5);
}

/* records by (tid, s), searched by a pair: the GPU join's steps */
struct rec {
	uint64_t s;
	uint32_t tid;
};

struct at {
	uint32_t tid;
	uint64_t t;
};

static bool at_or_before(const void *elem, const void *key)
{
	const struct rec *r = elem;
	const struct at *k = key;

	return r->tid < k->tid || (r->tid == k->tid && r->s <= k->t);
}

static void test_records(void **state)
{
	static const struct rec v[] = { { 10, 1 }, { 20, 1 }, { 5, 2 }, { 15, 2 }, { 15, 2 } };
	const size_t n = ARRAY_SIZE(v);
	struct at k;

	(void)state;
	k = (struct at){ 1, 15 }; /* after the first record, before the second */
	assert_int_equal(pt_lower_bound(v, n, sizeof(*v), &k, at_or_before), 1);
	k = (struct at){ 1, 9 }; /* before any of tid 1 */
	assert_int_equal(pt_lower_bound(v, n, sizeof(*v), &k, at_or_before), 0);
	k = (struct at){ 2, 15 }; /* past both equals, the end */
	assert_int_equal(pt_lower_bound(v, n, sizeof(*v), &k, at_or_before), n);
	k = (struct at){ 2, 4 }; /* past tid 1, before tid 2 */
	assert_int_equal(pt_lower_bound(v, n, sizeof(*v), &k, at_or_before), 2);
}

static int int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Sorted arrays of 0 to 64 small values (many equals), every key from
 * below the least to above the greatest: as the scan finds them. */
static void test_random(void **state)
{
	int v[64];

	(void)state;
	srand(25);
	for (int round = 0; round < 2000; round++) {
		size_t n = (size_t)rand() % (ARRAY_SIZE(v) + 1);
		int span = 1 + rand() % 40;

		for (size_t i = 0; i < n; i++)
			v[i] = rand() % span - span / 2;
		qsort(v, n, sizeof(*v), int_cmp);
		for (int key = -span / 2 - 1; key <= span / 2 + 1; key++) {
			size_t lo = 0, hi = 0;

			while (lo < n && v[lo] < key)
				lo++;
			while (hi < n && v[hi] <= key)
				hi++;
			assert_int_equal(lower(v, n, key), lo);
			assert_int_equal(upper(v, n, key), hi);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_fixed),
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests_name("search", tests, NULL, NULL);
}
