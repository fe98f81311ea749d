// SPDX-License-Identifier: BSD-2-Clause
/*
 * runs: counted steps split on idle gaps, per-run and across-run figures,
 * on steps whose times are known to the ns.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "aggregate/bursts.h"

#define MS 1000000ull

static void step(struct pt_bursts *rs, uint32_t tid, uint64_t t0, uint64_t t1, uint64_t b0,
		 int tokens)
{
	uint64_t b[1] = { b0 };
	struct pt_step s = {
		.tid = tid, .t_start = t0, .t_end = t1, .bucket_ns = b, .other_ns = t1 - t0 - b0
	};

	if (tokens >= 0) {
		s.vmask = 1u << PT_VROLE_TOKENS;
		s.val[PT_VROLE_TOKENS] = tokens;
	}
	assert_int_equal(pt_bursts__step(rs, &s), 0);
}

static void test_split_on_gaps(void **state)
{
	struct pt_bursts *rs = pt_bursts__new(1, 100 * MS, 1);
	const struct pt_runs_aggregate *A;
	const struct pt_run *r;

	assert_non_null(rs);
	/* run 0: two threads, overlapping, committed out of start order */
	step(rs, 2, 5 * MS, 15 * MS, 1 * MS, 4);
	step(rs, 1, 0, 10 * MS, 2 * MS, 2);
	/* 99 ms after the latest end (15): still run 0 */
	step(rs, 1, 114 * MS, 124 * MS, 3 * MS, -1);
	/* 100 ms after 124: run 1 */
	step(rs, 1, 224 * MS, 234 * MS, 4 * MS, 6);
	step(rs, 1, 240 * MS, 250 * MS, 2 * MS, 6);
	/* run 2 */
	step(rs, 1, 1000 * MS, 1020 * MS, 5 * MS, 10);
	assert_int_equal(pt_bursts__finish(rs), 0);
	assert_int_equal(pt_bursts__count(rs), 3);

	r = pt_bursts__get(rs, 0);
	assert_true(r->warmup);
	assert_int_equal(r->dur.count, 3);
	assert_int_equal(r->t0, 0);
	assert_int_equal(r->t1, 124 * MS);
	assert_int_equal(r->bucket_ns[0], 6 * MS);
	assert_int_equal(r->bucket_ns[1], 30 * MS - 6 * MS);
	assert_int_equal(r->tok_steps, 2);
	assert_true(r->tokens == 6);
	assert_true(r->tok_ns == 20.0 * MS);

	r = pt_bursts__get(rs, 1);
	assert_false(r->warmup);
	assert_int_equal(r->dur.count, 2);
	assert_int_equal(r->t0, 224 * MS);
	assert_int_equal(r->t1, 250 * MS);
	assert_true(r->tokens == 12);

	A = pt_bursts__aggregate(rs);
	assert_int_equal(A->runs, 2);
	assert_int_equal(A->warmup, 1);
	/* steps 2 and 1: mean 1.5, population std 0.5 */
	assert_true(A->steps.mean == 1.5 && A->steps.std == 0.5);
	/* mean step ms 10 and 20 */
	assert_true(fabs(A->mean_ms.mean - 15) < 1e-9 && fabs(A->mean_ms.std - 5) < 1e-9);
	/* bucket ms/step: (4+2)/2 = 3 and 5 */
	assert_true(fabs(A->bucket_ms[0].mean - 4) < 1e-9);
	assert_true(fabs(A->bucket_ms[0].std - 1) < 1e-9);
	/* shares 6/20 and 5/20 */
	assert_true(fabs(A->bucket_share[0].mean - 0.275) < 1e-9);
	/* tok/s: 12 tokens in 20 ms, 10 in 20 ms */
	assert_true(fabs(A->tok_per_s.mean - 550) < 1e-6);
	assert_int_equal(A->tok_per_s.n, 2);
	pt_bursts__free(rs);
}

static void test_empty_and_all_warmup(void **state)
{
	struct pt_bursts *rs = pt_bursts__new(0, MS, 5);

	assert_int_equal(pt_bursts__finish(rs), 0);
	assert_int_equal(pt_bursts__count(rs), 0);
	assert_int_equal(pt_bursts__aggregate(rs)->runs, 0);
	assert_int_equal(pt_bursts__aggregate(rs)->steps.n, 0);
	pt_bursts__free(rs);

	rs = pt_bursts__new(1, MS, 5);
	step(rs, 1, 0, MS, 0, -1);
	step(rs, 1, 10 * MS, 11 * MS, 0, -1);
	assert_int_equal(pt_bursts__finish(rs), 0);
	assert_int_equal(pt_bursts__count(rs), 2);
	assert_int_equal(pt_bursts__aggregate(rs)->runs, 0);
	assert_int_equal(pt_bursts__aggregate(rs)->warmup, 2);
	assert_int_equal(pt_bursts__aggregate(rs)->tok_per_s.n, 0);
	pt_bursts__free(rs);
}

/* Growth past the first allocation; every step lands in one run. */
static void test_many_steps(void **state)
{
	struct pt_bursts *rs = pt_bursts__new(1, 50 * MS, 0);
	uint64_t total = 0;

	for (int i = 0; i < 5000; i++) {
		/* a 60 ms pause every 1000 steps */
		uint64_t t = (uint64_t)i * MS + (uint64_t)(i / 1000) * 60 * MS;

		step(rs, 1, t, t + MS / 2, MS / 4, 1);
	}
	assert_int_equal(pt_bursts__finish(rs), 0);
	assert_int_equal(pt_bursts__count(rs), 5);
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(pt_bursts__get(rs, i)->dur.count, 1000);
		total += pt_bursts__get(rs, i)->dur.count;
	}
	assert_int_equal(total, 5000);
	assert_true(pt_bursts__aggregate(rs)->steps.std == 0);
	pt_bursts__free(rs);
}

/* Steps from several threads, committed out of start order, folded
 * through a buffer of 8: the same runs as with every step held, and
 * nothing late (no step is longer than the buffer's reach). */
static void test_bounded_buffer_same_runs(void **state)
{
	struct pt_bursts *all = pt_bursts__new(1, 50 * MS, 1);
	struct pt_bursts *few = pt_bursts__new(1, 50 * MS, 1);

	pt_bursts__set_pending_max(few, 8);
	for (int i = 0; i < 3000; i++) {
		/* 3 threads, each committing in turn; a 60 ms pause every 500 */
		uint64_t t = (uint64_t)(i / 3) * MS + (uint64_t)(i / 500) * 60 * MS;
		uint32_t tid = 1 + (uint32_t)(i % 3);
		uint64_t t0 = t + (2 - i % 3) * 100000, t1 = t0 + MS / 2;

		step(all, tid, t0, t1, MS / 4, i % 7);
		step(few, tid, t0, t1, MS / 4, i % 7);
	}
	assert_int_equal(pt_bursts__finish(all), 0);
	assert_int_equal(pt_bursts__finish(few), 0);
	assert_int_equal(pt_bursts__count(few), pt_bursts__count(all));
	assert_int_equal(pt_bursts__count(few), 6);
	for (size_t i = 0; i < pt_bursts__count(all); i++) {
		const struct pt_run *a = pt_bursts__get(all, i), *f = pt_bursts__get(few, i);

		assert_int_equal(f->dur.count, a->dur.count);
		assert_int_equal(f->t0, a->t0);
		assert_int_equal(f->t1, a->t1);
		assert_int_equal(f->bucket_ns[0], a->bucket_ns[0]);
		assert_int_equal(f->bucket_ns[1], a->bucket_ns[1]);
		assert_true(f->tokens == a->tokens);
	}
	assert_int_equal(pt_bursts__late(few), 0);
	pt_bursts__free(all);
	pt_bursts__free(few);
}

/* A step that started before steps already folded: counted, in the run
 * being built, and said (late). */
static void test_late_step_counted(void **state)
{
	struct pt_bursts *rs = pt_bursts__new(0, 50 * MS, 0);
	uint64_t n = 0;

	pt_bursts__set_pending_max(rs, 4);
	for (int i = 0; i < 20; i++)
		step(rs, 1, 10 * MS + (uint64_t)i * MS, 10 * MS + (uint64_t)i * MS + MS / 2, 0, -1);
	/* thread 2's one long step, from before all of them */
	step(rs, 2, 0, 40 * MS, 0, -1);
	assert_int_equal(pt_bursts__finish(rs), 0);
	assert_int_equal(pt_bursts__count(rs), 1);
	n = pt_bursts__get(rs, 0)->dur.count;
	assert_int_equal(n, 21);
	assert_int_equal(pt_bursts__get(rs, 0)->t0, 0);
	assert_int_equal(pt_bursts__get(rs, 0)->t1, 40 * MS);
	assert_int_equal(pt_bursts__late(rs), 1);
	pt_bursts__free(rs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_on_gaps),
		cmocka_unit_test(test_empty_and_all_warmup),
		cmocka_unit_test(test_many_steps),
		cmocka_unit_test(test_bounded_buffer_same_runs),
		cmocka_unit_test(test_late_step_counted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
