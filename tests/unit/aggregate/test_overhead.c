// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_ovh: the probes' cost nested in intervals, against the real
 * aggregator (its on_step says which steps count) on synthetic records
 * whose costs are known by construction.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "aggregate/agg.h"
#include "aggregate/overhead.h"

static struct pt_ovh *ovh;
static struct pt_agg *agg;

static void on_step(void *ctx, const struct pt_step *s)
{
	pt_ovh__step(ovh, s);
}

/* the frame probe's running count of unnamed frames, per thread (tid < 16) */
static uint32_t unnamed[16];

static void rec_f(uint32_t type, uint32_t fid, uint32_t tid, uint32_t depth, uint64_t t0,
		  uint64_t t1, uint16_t flags)
{
	struct pt_rec r = { .type = type,
			    .flags = flags,
			    .fid = fid,
			    .pid = 1,
			    .tid = tid,
			    .t_entry = t0,
			    .t_exit = t1,
			    .depth = (uint16_t)depth,
			    .unnamed = unnamed[tid % 16] };

	pt_ovh__record(ovh, &r);
	pt_agg__record(agg, &r);
}

static void rec(uint32_t type, uint32_t fid, uint32_t tid, uint32_t depth, uint64_t t0, uint64_t t1)
{
	rec_f(type, fid, tid, depth, t0, t1, 0);
}

/* fid 0: step (emulated: pair 1000, self 300); 1: bucket 0 (single-step:
 * pair 5000, self 2000); 2: no role (emulated) */
static void setup_run(enum pt_step_mode mode, unsigned int warmup)
{
	struct pt_agg_opts ao = {
		.nbuckets = 1, .step_mode = mode, .warmup_steps = warmup, .on_step = on_step
	};
	struct pt_ovh_opts oo = { .nbuckets = 1, .step_mode = mode };

	agg = pt_agg__new(&ao);
	ovh = pt_ovh__new(&oo);
	assert_non_null(agg);
	assert_non_null(ovh);
	for (uint32_t f = 0; f < 3; f++)
		assert_int_equal(pt_agg__set_func(agg, f, f == 0, f == 1 ? 1 : 0), 0);
	assert_int_equal(pt_ovh__set_func(ovh, 0, true, 0, PT_SITE_EMULATED, 1000, 300), 0);
	assert_int_equal(pt_ovh__set_func(ovh, 1, false, 1, PT_SITE_SSTEP, 5000, 2000), 0);
	assert_int_equal(pt_ovh__set_func(ovh, 2, false, 0, PT_SITE_EMULATED, 1000, 300), 0);
}

static void teardown_run(void)
{
	pt_agg__free(agg);
	pt_ovh__free(ovh);
}

/* step [0,100000): bucket call [10000,40000) with a fid-2 call inside,
 * another fid-2 call [50000,60000) outside any bucket */
static void one_step(uint32_t tid, uint64_t base)
{
	rec(PT_REC_ENTRY, 0, tid, 0, base, 0);
	rec(PT_REC_ENTRY, 1, tid, 1, base + 10000, 0);
	rec(PT_REC_ENTRY, 2, tid, 2, base + 20000, 0);
	rec(PT_REC_EXIT, 2, tid, 2, base + 20000, base + 25000);
	rec(PT_REC_EXIT, 1, tid, 1, base + 10000, base + 40000);
	rec(PT_REC_ENTRY, 2, tid, 1, base + 50000, 0);
	rec(PT_REC_EXIT, 2, tid, 1, base + 50000, base + 60000);
	rec(PT_REC_EXIT, 0, tid, 0, base, base + 100000);
}

static void test_call_mode(void **state)
{
	const struct pt_ovh_func *f;

	setup_run(PT_STEP_CALL, 1);
	one_step(7, 0); /* warmup: not counted */
	one_step(7, 1000000);
	one_step(8, 2000000); /* another thread */
	pt_agg__finish(agg);

	/* the step: its own self (300) + nested: two fid-2 pairs and one
	 * bucket pair = 1000 + 1000 + 5000 */
	assert_true(pt_ovh__step_cost_ns(ovh) == 2 * 7300);
	assert_int_equal(pt_ovh__steps(ovh)->count, 2);
	assert_true(pt_ovh__steps(ovh)->min == 100000 - 7300);
	/* the bucket: its own self (2000) + the fid-2 pair inside */
	assert_true(pt_ovh__bucket_cost_ns(ovh, 0) == 2 * 3000);
	/* step.other: the step's cost less its bucket's */
	assert_true(pt_ovh__bucket_cost_ns(ovh, 1) == 2 * 4300);
	/* functions: every call, warmup included */
	f = pt_ovh__func(ovh, 1);
	assert_int_equal(f->calls, 3);
	assert_true(f->cost_ns == 3 * 3000);
	f = pt_ovh__func(ovh, 2);
	assert_int_equal(f->calls, 6);
	assert_true(f->cost_ns == 6 * 300);
	f = pt_ovh__func(ovh, 0);
	assert_true(f->cost_ns == 3 * 7300);
	/* per call, each less its own cost: fid 2's two kinds of calls (5 and
	 * 10 us, self 300), the bucket call (30 us less 2000 and the fid-2
	 * pair inside), the step (100 us less 7300) */
	f = pt_ovh__func(ovh, 2);
	assert_int_equal(f->corrected.count, 6);
	assert_int_equal(f->corrected.min, 4700);
	assert_int_equal(f->corrected.max, 9700);
	f = pt_ovh__func(ovh, 1);
	assert_int_equal(f->corrected.count, 3);
	assert_int_equal(f->corrected.min, 27000);
	assert_int_equal(f->corrected.max, 27000);
	f = pt_ovh__func(ovh, 0);
	assert_int_equal(f->corrected.min, 92700);
	assert_int_equal(pt_ovh__hits(ovh, PT_SITE_EMULATED), 9);
	assert_int_equal(pt_ovh__hits(ovh, PT_SITE_SSTEP), 3);
	assert_null(pt_ovh__func(ovh, 3));
	teardown_run();
}

/* Agent calls whose EXIT has the agent's clock reads (its t_entry the
 * body's start, later than the ENTRY's hit): the step the aggregator
 * reports starts there, and its cost is still the step's. */
static void test_agent_clocks(void **state)
{
	const uint16_t ag = PT_RECF_AGENT_ENTRY | PT_RECF_AGENT_EXIT;

	setup_run(PT_STEP_CALL, 0);
	for (uint64_t base = 0; base < 2000000; base += 1000000) {
		rec(PT_REC_ENTRY, 0, 7, 0, base, 0);
		rec(PT_REC_ENTRY, 2, 7, 1, base + 20000, 0);
		rec_f(PT_REC_EXIT, 2, 7, 1, base + 20100, base + 24900, ag);
		rec_f(PT_REC_EXIT, 0, 7, 0, base + 100, base + 99900, ag);
	}
	pt_agg__finish(agg);
	/* self 300 + the fid-2 pair inside: each step found */
	assert_int_equal(pt_ovh__steps(ovh)->count, 2);
	assert_true(pt_ovh__step_cost_ns(ovh) == 2 * 1300);
	assert_true(pt_ovh__steps(ovh)->min == 99800 - 1300);
	assert_int_equal(pt_ovh__func(ovh, 2)->corrected.min, 4800 - 300);
	teardown_run();
}

static void test_iteration_mode(void **state)
{
	setup_run(PT_STEP_ITERATION, 0);
	one_step(7, 0);
	one_step(7, 1000000); /* closes the first iteration */
	one_step(7, 2000000); /* closes the second; the third never closes */
	pt_agg__finish(agg);
	/* an iteration: entry to next entry, every pair in it, no self */
	assert_int_equal(pt_ovh__steps(ovh)->count, 2);
	assert_true(pt_ovh__step_cost_ns(ovh) == 2 * 8000);
	assert_true(pt_ovh__steps(ovh)->max == 1000000 - 8000);
	teardown_run();
}

/*
 * The frame probe's unnamed frames (pt_rec.unnamed, a per-thread running
 * count) are charged to the intervals open where they fell: 3 before the
 * step (nowhere), 4 in the bucket call outside its fid-2 call, 5 in the
 * fid-2 call, 6 between the bucket call and the second fid-2 call, 7
 * after the step. Unnamed frame: 100 ns.
 */
static void test_unnamed_frames(void **state)
{
	const uint32_t tid = 5, base = 1000000;

	setup_run(PT_STEP_CALL, 0);
	pt_ovh__set_unnamed_cost(ovh, 100);
	unnamed[tid] = UINT32_MAX - 1;	     /* the count wraps; differences hold */
	rec(PT_REC_ENTRY, 2, tid, 0, 10, 0); /* a first record: the baseline */
	rec(PT_REC_EXIT, 2, tid, 0, 10, 20);
	unnamed[tid] += 3;
	rec(PT_REC_ENTRY, 0, tid, 0, base, 0);
	rec(PT_REC_ENTRY, 1, tid, 1, base + 10000, 0);
	unnamed[tid] += 4;
	rec(PT_REC_ENTRY, 2, tid, 2, base + 20000, 0);
	unnamed[tid] += 5;
	rec(PT_REC_EXIT, 2, tid, 2, base + 20000, base + 25000);
	rec(PT_REC_EXIT, 1, tid, 1, base + 10000, base + 40000);
	unnamed[tid] += 6;
	rec(PT_REC_ENTRY, 2, tid, 1, base + 50000, 0);
	rec(PT_REC_EXIT, 2, tid, 1, base + 50000, base + 60000);
	rec(PT_REC_EXIT, 0, tid, 0, base, base + 100000);
	unnamed[tid] += 7;
	rec(PT_REC_ENTRY, 2, tid, 0, base + 200000, 0);
	rec(PT_REC_EXIT, 2, tid, 0, base + 200000, base + 200010);
	pt_agg__finish(agg);

	/* every unnamed frame after the baseline is a hit */
	assert_int_equal(pt_ovh__hits(ovh, PT_SITE_FRAME_UNNAMED), 3 + 4 + 5 + 6 + 7);
	/* fid-2 calls: self 300 each (4 calls) + the 5 frames in one */
	assert_true(pt_ovh__func(ovh, 2)->cost_ns == 4 * 300 + 500);
	/* the bucket: self 2000, the fid-2 pair, 9 frames */
	assert_true(pt_ovh__bucket_cost_ns(ovh, 0) == 2000 + 1000 + 900);
	/* the step: self 300, two fid-2 pairs, one bucket pair, 15 frames */
	assert_true(pt_ovh__step_cost_ns(ovh) == 300 + 2000 + 5000 + 1500);
	assert_true(pt_ovh__steps(ovh)->min == 100000 - 8800);
	/* step.other: the frames between the bucket call and the fid-2 call */
	assert_true(pt_ovh__bucket_cost_ns(ovh, 1) == 8800 - 3900);
	teardown_run();
	memset(unnamed, 0, sizeof(unnamed));
}

static void test_unknown_and_lost(void **state)
{
	struct pt_rec r = { .type = PT_REC_EXIT,
			    .fid = 2,
			    .tid = 9,
			    .depth = 3,
			    .flags = PT_RECF_ENTRY_LOST,
			    .t_entry = 1,
			    .t_exit = 2 };

	setup_run(PT_STEP_CALL, 0);
	/* an exit without its entry: a call, its own self, nothing nested */
	pt_ovh__record(ovh, &r);
	assert_true(pt_ovh__func(ovh, 2)->cost_ns == 300);
	/* its time is not known whole: no corrected time per call */
	assert_int_equal(pt_ovh__func(ovh, 2)->corrected.count, 0);
	/* undeclared fids, other record types, NULL: ignored */
	r.fid = 99;
	pt_ovh__record(ovh, &r);
	r.type = PT_REC_DLOPEN;
	r.fid = 2;
	pt_ovh__record(ovh, &r);
	assert_int_equal(pt_ovh__func(ovh, 2)->calls, 1);
	assert_int_equal(pt_ovh__set_func(ovh, 1u << 25, false, 0, PT_SITE_EMULATED, 1, 1),
			 -EINVAL);
	assert_int_equal(pt_ovh__set_func(ovh, 1, false, 0, PT_SITE_NKINDS, 1, 1), -EINVAL);
	assert_string_equal(pt_site_kind__str(PT_SITE_AGENT), "python-agent");
	pt_ovh__free(NULL);
	teardown_run();
}

int main(void)
{
	/* clang-format off */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_call_mode),
		cmocka_unit_test(test_agent_clocks),
		cmocka_unit_test(test_iteration_mode),
		cmocka_unit_test(test_unnamed_frames),
		cmocka_unit_test(test_unknown_and_lost),
	};
	/* clang-format on */

	return cmocka_run_group_tests(tests, NULL, NULL);
}
