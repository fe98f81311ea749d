// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_dist: exact moments, quantiles within the promised relative error
 * against sorted samples (several shapes, fixed seeds), zeros, merge, and
 * constant memory.
 */
#include <malloc.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "aggregate/dist.h"

#define N 100000

/* splitmix64: fixed seeds, the same samples on every run. */
static uint64_t rng_state;

static uint64_t rng(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double rng_unit(void) /* (0, 1) */
{
	return ((double)(rng() >> 11) + 0.5) / 9007199254740992.0;
}

static int cmp_u64(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;

	return a < b ? -1 : a > b;
}

/* q in units of 1/10000, so the true nearest rank is exact integer math. */
static const unsigned int qs[] = { 100, 1000, 5000, 9000, 9900, 9990 };

static void check_quantiles(uint64_t *v, size_t n, const char *what)
{
	struct pt_dist d = PT_DIST_INIT;
	size_t i;

	for (i = 0; i < n; i++)
		assert_int_equal(pt_dist__add(&d, v[i]), 0);
	qsort(v, n, sizeof(*v), cmp_u64);

	for (i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		size_t rank = ((size_t)qs[i] * n + 9999) / 10000;
		double truth = (double)v[rank - 1];
		double got = pt_dist__quantile(&d, qs[i] / 10000.0);
		double rel = fabs(got - truth) / truth;

		if (rel > 0.01)
			fail_msg("%s: q=%.4f: got %.1f, true %.0f (%.3f%%)", what, qs[i] / 10000.0,
				 got, truth, rel * 100);
		/* dist.h promises (gamma-1)/(gamma+1) < 0.5%. */
		if (rel > 0.005)
			fail_msg("%s: q=%.4f: error %.4f%% above the 0.5%% bound", what,
				 qs[i] / 10000.0, rel * 100);
	}
	assert_true(pt_dist__quantile(&d, 0) == (double)v[0]);
	assert_true(pt_dist__quantile(&d, 1) == (double)v[n - 1]);
	pt_dist__free(&d);
}

static void test_quantile_uniform(void **state)
{
	uint64_t *v = malloc(N * sizeof(*v));
	size_t i;

	assert_non_null(v);
	rng_state = 1;
	for (i = 0; i < N; i++)
		v[i] = 1 + rng() % 10000000; /* 1 ns .. 10 ms */
	check_quantiles(v, N, "uniform");
	free(v);
}

static void test_quantile_lognormal(void **state)
{
	uint64_t *v = malloc(N * sizeof(*v));
	size_t i;

	assert_non_null(v);
	rng_state = 2;
	for (i = 0; i < N; i++) {
		/* Box-Muller; median e^12 ~ 160 us, sigma 2 spans decades. */
		double z = sqrt(-2 * log(rng_unit())) * cos(2 * M_PI * rng_unit());

		v[i] = 1 + (uint64_t)exp(12 + 2 * z);
	}
	check_quantiles(v, N, "lognormal");
	free(v);
}

static void test_quantile_constant(void **state)
{
	uint64_t *v = malloc(N * sizeof(*v));
	struct pt_dist d = PT_DIST_INIT;
	size_t i;

	assert_non_null(v);
	for (i = 0; i < N; i++)
		v[i] = 123457;
	check_quantiles(v, N, "constant");
	/* Clamped into [min, max]: a constant comes back exactly. */
	for (i = 0; i < 10; i++)
		pt_dist__add(&d, 123457);
	assert_true(pt_dist__quantile(&d, 0.5) == 123457.0);
	assert_true(pt_dist__quantile(&d, 0.9) == 123457.0);
	pt_dist__free(&d);
	free(v);
}

static void test_quantile_two_spikes(void **state)
{
	uint64_t *v = malloc(N * sizeof(*v));
	size_t i;

	assert_non_null(v);
	rng_state = 3;
	for (i = 0; i < N; i++)
		v[i] = rng() % 100 < 70 ? 1000 : 1000000000; /* 1 us, 1 s */
	check_quantiles(v, N, "two spikes");
	free(v);
}

static void test_quantile_extremes(void **state)
{
	uint64_t *v = malloc(N * sizeof(*v));
	size_t i;

	assert_non_null(v);
	rng_state = 4;
	/* The whole documented range, 1 ns .. 1e13 ns, log-uniform. */
	for (i = 0; i < N; i++)
		v[i] = (uint64_t)exp(rng_unit() * log(1e13));
	check_quantiles(v, N, "1ns..1e13ns");
	free(v);
}

static void test_moments(void **state)
{
	static const uint64_t v[] = { 2, 4, 4, 4, 5, 5, 7, 9 };
	struct pt_dist d;
	size_t i;

	pt_dist__init(&d);
	for (i = 0; i < 8; i++)
		assert_int_equal(pt_dist__add(&d, v[i]), 0);
	assert_int_equal(d.count, 8);
	assert_int_equal(d.min, 2);
	assert_int_equal(d.max, 9);
	assert_true(d.sum == 40.0);
	assert_true(fabs(d.mean - 5.0) < 1e-12);
	assert_true(fabs(pt_dist__std(&d) - 2.0) < 1e-12); /* population std */
	assert_int_equal(d.zeros, 0);
	pt_dist__free(&d);
}

static void test_moments_large(void **state)
{
	struct pt_dist d = PT_DIST_INIT;
	double sum = 0, mean, m2 = 0;
	uint64_t mn = UINT64_MAX, mx = 0, x;
	size_t i;

	/* Welford stays accurate where sum-of-squares would cancel: values
	 * ~1e12 with a spread of ~1e3. */
	rng_state = 5;
	for (i = 0; i < 10000; i++) {
		x = 1000000000000ULL + rng() % 1000;
		pt_dist__add(&d, x);
		sum += (double)x;
		mn = x < mn ? x : mn;
		mx = x > mx ? x : mx;
	}
	mean = sum / 10000;
	rng_state = 5;
	for (i = 0; i < 10000; i++) {
		x = 1000000000000ULL + rng() % 1000;
		m2 += ((double)x - mean) * ((double)x - mean);
	}
	assert_int_equal(d.count, 10000);
	assert_int_equal(d.min, mn);
	assert_int_equal(d.max, mx);
	assert_true(fabs(d.sum - sum) <= 1e-9 * sum);
	assert_true(fabs(d.mean - mean) < 1e-3);
	assert_true(fabs(pt_dist__std(&d) - sqrt(m2 / 10000)) < 1e-3 * sqrt(m2 / 10000));
	pt_dist__free(&d);
}

static void test_zeros(void **state)
{
	struct pt_dist d = PT_DIST_INIT;
	int i;

	for (i = 0; i < 10; i++)
		pt_dist__add(&d, 0);
	/* No non-zero value yet: nothing allocated. */
	assert_null(d.bins);
	assert_int_equal(d.count, 10);
	assert_int_equal(d.zeros, 10);
	assert_true(pt_dist__quantile(&d, 0.5) == 0);
	assert_true(pt_dist__quantile(&d, 1) == 0);

	for (i = 0; i < 10; i++)
		pt_dist__add(&d, 5000);
	assert_int_equal(d.count, 20);
	assert_int_equal(d.zeros, 10);
	assert_int_equal(d.min, 0);
	assert_int_equal(d.max, 5000);
	assert_true(pt_dist__quantile(&d, 0) == 0);
	assert_true(pt_dist__quantile(&d, 0.5) == 0);		     /* rank 10: a zero */
	assert_true(fabs(pt_dist__quantile(&d, 0.55) - 5000) <= 25); /* rank 11 */
	assert_true(d.sum == 50000.0);
	assert_true(fabs(d.mean - 2500.0) < 1e-9);
	pt_dist__free(&d);
}

static void test_empty(void **state)
{
	struct pt_dist d = PT_DIST_INIT;

	assert_true(pt_dist__quantile(&d, 0.5) == 0);
	assert_true(pt_dist__std(&d) == 0);
	assert_true(pt_dist__quantile(NULL, 0.5) == 0);
	pt_dist__free(&d);
	pt_dist__free(&d);
	pt_dist__free(NULL);
}

static void test_merge(void **state)
{
	struct pt_dist all = PT_DIST_INIT, a = PT_DIST_INIT, b = PT_DIST_INIT, e = PT_DIST_INIT;
	uint64_t x;
	size_t i;
	int k;

	rng_state = 6;
	for (i = 0; i < N; i++) {
		x = i % 17 ? (uint64_t)exp(rng_unit() * 20) : 0;
		pt_dist__add(&all, x);
		pt_dist__add(i % 3 ? &a : &b, x);
	}
	assert_int_equal(pt_dist__merge(&a, &b), 0);
	assert_int_equal(pt_dist__merge(&a, &e), 0); /* empty source: no change */
	assert_int_equal(a.count, all.count);
	assert_int_equal(a.zeros, all.zeros);
	assert_int_equal(a.min, all.min);
	assert_int_equal(a.max, all.max);
	assert_true(fabs(a.sum - all.sum) <= 1e-9 * all.sum);
	assert_true(fabs(a.mean - all.mean) <= 1e-9 * all.mean);
	assert_true(fabs(a.m2 - all.m2) <= 1e-9 * all.m2);
	for (k = 0; k <= 1000; k++)
		assert_true(pt_dist__quantile(&a, k / 1000.0) ==
			    pt_dist__quantile(&all, k / 1000.0));

	/* Into an empty destination: a copy. */
	assert_int_equal(pt_dist__merge(&e, &all), 0);
	assert_int_equal(e.count, all.count);
	assert_int_equal(e.min, all.min);
	assert_int_equal(e.max, all.max);
	assert_true(e.m2 == all.m2);
	for (k = 0; k <= 100; k++)
		assert_true(pt_dist__quantile(&e, k / 100.0) == pt_dist__quantile(&all, k / 100.0));

	pt_dist__free(&all);
	pt_dist__free(&a);
	pt_dist__free(&b);
	pt_dist__free(&e);
}

static void test_merge_saturates(void **state)
{
	struct pt_dist a = PT_DIST_INIT, b = PT_DIST_INIT;
	size_t i, n, hit = 0;

	pt_dist__add(&a, 1000);
	pt_dist__add(&b, 1000);
	n = malloc_usable_size(b.bins) / sizeof(*b.bins);
	for (i = 0; i < n; i++) {
		if (b.bins[i]) {
			b.bins[i] = UINT32_MAX - 1;
			hit = i;
		}
	}
	assert_int_equal(pt_dist__merge(&a, &b), 0);
	assert_int_equal(a.bins[hit], UINT32_MAX); /* 1 + (2^32 - 2): saturated, not 0 */
	assert_int_equal(pt_dist__merge(&a, &b), 0);
	assert_int_equal(a.bins[hit], UINT32_MAX);
	pt_dist__free(&a);
	pt_dist__free(&b);
}

static void test_constant_memory(void **state)
{
	struct pt_dist d = PT_DIST_INIT;
	uint32_t *bins;
	size_t size, i;
	uint64_t x;

	pt_dist__add(&d, 1);
	bins = d.bins;
	assert_non_null(bins);
	size = malloc_usable_size(bins);
	/* ~3000 bins of 4 bytes: the documented range at 1% steps. */
	assert_true(size >= 3000 * sizeof(uint32_t) && size < 4096 * sizeof(uint32_t));

	rng_state = 7;
	for (i = 0; i < 10000000; i++) {
		x = rng();
		pt_dist__add(&d, x >> (x & 63)); /* all magnitudes up to 2^64 */
	}
	pt_dist__add(&d, UINT64_MAX);
	assert_ptr_equal(d.bins, bins);
	assert_int_equal(malloc_usable_size(d.bins), size);
	assert_int_equal(d.count, 10000002);
	assert_true(pt_dist__quantile(&d, 0.999) <= (double)d.max);
	assert_true(pt_dist__quantile(&d, 0.5) >= (double)d.min);
	pt_dist__free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_moments),
		cmocka_unit_test(test_moments_large),
		cmocka_unit_test(test_quantile_uniform),
		cmocka_unit_test(test_quantile_lognormal),
		cmocka_unit_test(test_quantile_constant),
		cmocka_unit_test(test_quantile_two_spikes),
		cmocka_unit_test(test_quantile_extremes),
		cmocka_unit_test(test_zeros),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_merge_saturates),
		cmocka_unit_test(test_constant_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
