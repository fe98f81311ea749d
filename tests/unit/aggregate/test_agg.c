// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_agg on synthetic record streams, with exact expected figures (ns).
 *
 * A tiny simulator keeps a call stack per thread so scenarios read like
 * traces: in() and out() emit ENTRY/EXIT with the depth and entry time BPF
 * would give; in_lost()/out_lost() play a record the ring buffer dropped.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "aggregate/agg.h"

/* fids used by every scenario */
enum { F_STEP = 0, F_A = 1, F_B = 2, F_LEAF = 3, F_AB = 4 };
#define PID 4242
#define MAXTID 8

struct sim_frame {
	uint32_t fid;
	uint64_t t;
};

static struct {
	struct sim_frame st[PT_MAX_DEPTH];
	uint32_t n;
} sims[MAXTID];

struct got_step {
	uint64_t index;
	uint32_t pid, tid;
	uint64_t t0, t1, other;
	uint64_t b[4];
	unsigned int vmask; /* values of the step (pt_agg__value) */
	double val[3];
};

static struct got_step got[8192];
static size_t ngot;
static size_t nbuckets;
static struct pt_agg *agg;

static void on_step(void *ctx, const struct pt_step *s)
{
	struct got_step *g;
	size_t i;

	assert_ptr_equal(ctx, &ngot);
	assert_true(ngot < sizeof(got) / sizeof(got[0]));
	g = &got[ngot++];
	g->index = s->index;
	g->pid = s->pid;
	g->tid = s->tid;
	g->t0 = s->t_start;
	g->t1 = s->t_end;
	g->other = s->other_ns;
	for (i = 0; i < nbuckets && i < 4; i++)
		g->b[i] = s->bucket_ns[i];
	g->vmask = s->vmask;
	memcpy(g->val, s->val, sizeof(g->val));
}

/* A (bucket 0), B (bucket 1), AB (both), LEAF (no role), STEP. */
static struct pt_agg *make(size_t nb, enum pt_step_mode mode, unsigned int warmup)
{
	struct pt_agg_opts o = {
		.nbuckets = nb,
		.step_mode = mode,
		.warmup_steps = warmup,
		.on_step = on_step,
		.ctx = &ngot,
	};

	nbuckets = nb;
	agg = pt_agg__new(&o);
	assert_non_null(agg);
	assert_int_equal(pt_agg__set_func(agg, F_STEP, true, 0), 0);
	assert_int_equal(pt_agg__set_func(agg, F_LEAF, false, 0), 0);
	if (nb >= 1)
		assert_int_equal(pt_agg__set_func(agg, F_A, false, 1), 0);
	if (nb >= 2) {
		assert_int_equal(pt_agg__set_func(agg, F_B, false, 2), 0);
		assert_int_equal(pt_agg__set_func(agg, F_AB, false, 3), 0);
	}
	return agg;
}

static void rec(uint32_t type, uint32_t tid, uint32_t fid, uint32_t depth, uint64_t t_entry,
		uint64_t t_exit, uint32_t flags)
{
	struct pt_rec r = {
		.type = type,
		.fid = fid,
		.pid = PID,
		.tid = tid,
		.t_entry = t_entry,
		.t_exit = t_exit,
		.depth = depth,
		.flags = flags,
	};

	pt_agg__record(agg, &r);
}

static void push(uint32_t tid, uint32_t fid, uint64_t t, bool emit)
{
	assert_true(tid < MAXTID && sims[tid].n < PT_MAX_DEPTH);
	if (emit)
		rec(PT_REC_ENTRY, tid, fid, sims[tid].n, t, 0, 0);
	sims[tid].st[sims[tid].n].fid = fid;
	sims[tid].st[sims[tid].n].t = t;
	sims[tid].n++;
}

static void pop(uint32_t tid, uint64_t t, bool emit, uint32_t flags)
{
	struct sim_frame *f;

	assert_true(tid < MAXTID && sims[tid].n > 0);
	f = &sims[tid].st[--sims[tid].n];
	if (emit)
		rec(PT_REC_EXIT, tid, f->fid, sims[tid].n, f->t, t, flags);
}

static void in(uint32_t tid, uint32_t fid, uint64_t t)
{
	push(tid, fid, t, true);
}

static void out(uint32_t tid, uint64_t t)
{
	pop(tid, t, true, 0);
}

static void in_lost(uint32_t tid, uint32_t fid, uint64_t t)
{
	push(tid, fid, t, false);
}

static void out_lost(uint32_t tid)
{
	pop(tid, 0, false, 0);
}

/* EXIT that BPF flags: its ENTRY could not be written. */
static void out_entry_lost(uint32_t tid, uint64_t t)
{
	pop(tid, t, true, PT_RECF_ENTRY_LOST);
}

/* EXIT of an agent call with the agent's clock reads: its body ran from
 * body to t (the ENTRY has the enter hit's time, earlier). */
static void out_agent(uint32_t tid, uint64_t body, uint64_t t)
{
	assert_true(tid < MAXTID && sims[tid].n > 0);
	sims[tid].st[sims[tid].n - 1].t = body;
	pop(tid, t, true, PT_RECF_AGENT_ENTRY | PT_RECF_AGENT_EXIT);
}

static void call(uint32_t tid, uint32_t fid, uint64_t t0, uint64_t t1)
{
	in(tid, fid, t0);
	out(tid, t1);
}

static int setup(void **state)
{
	memset(sims, 0, sizeof(sims));
	memset(got, 0, sizeof(got));
	ngot = 0;
	agg = NULL;
	return 0;
}

static int teardown(void **state)
{
	pt_agg__free(agg);
	agg = NULL;
	return 0;
}

#define assert_dist(d, cnt, mn, mx, total)                                                         \
	do {                                                                                       \
		assert_int_equal((d)->count, (cnt));                                               \
		if (cnt) {                                                                         \
			assert_int_equal((d)->min, (mn));                                          \
			assert_int_equal((d)->max, (mx));                                          \
		}                                                                                  \
		assert_int_equal((uint64_t)(d)->sum, (total));                                     \
	} while (0)

#define assert_bucket(i, ncalls, total)                                                            \
	do {                                                                                       \
		assert_int_equal(pt_agg__bucket(agg, (i))->calls, (ncalls));                       \
		assert_int_equal(pt_agg__bucket(agg, (i))->total_ns, (total));                     \
	} while (0)

#define assert_got(k, t0_, t1_, b0, b1, oth)                                                       \
	do {                                                                                       \
		assert_true((k) < ngot);                                                           \
		assert_int_equal(got[k].index, (k));                                               \
		assert_int_equal(got[k].t0, (t0_));                                                \
		assert_int_equal(got[k].t1, (t1_));                                                \
		assert_int_equal(got[k].b[0], (b0));                                               \
		assert_int_equal(got[k].b[1], (b1));                                               \
		assert_int_equal(got[k].other, (oth));                                             \
	} while (0)

static void test_call_nested_buckets(void **state)
{
	const struct pt_agg_step_stats *st;
	const struct pt_agg_health *h;

	make(2, PT_STEP_CALL, 0);
	in(1, F_STEP, 100);
	in(1, F_A, 200);
	call(1, F_B, 250, 350); /* B inside A */
	out(1, 500);
	call(1, F_B, 600, 700);
	call(1, F_LEAF, 800, 850);
	out(1, 1100);

	in(1, F_STEP, 2000);
	call(1, F_A, 2100, 2200);
	out(1, 2500);
	pt_agg__finish(agg);

	st = pt_agg__steps(agg);
	assert_dist(&st->dur, 2, 500, 1000, 1500);
	assert_int_equal(st->first_start_ns, 100);
	assert_int_equal(st->last_end_ns, 2500);
	assert_int_equal(st->warmup, 0);
	assert_int_equal(st->incomplete, 0);

	/* A: [200,500] + [2100,2200]; B: [250,350] + [600,700]. */
	assert_bucket(0, 2, 400);
	assert_dist(&pt_agg__bucket(agg, 0)->per_call, 2, 100, 300, 400);
	assert_bucket(1, 2, 200);
	assert_dist(&pt_agg__bucket(agg, 1)->per_call, 2, 100, 100, 200);
	/* other: 1000 - |[200,500] u [600,700]| = 600, then 500 - 100. */
	assert_bucket(2, 2, 1000);
	assert_dist(&pt_agg__bucket(agg, 2)->per_call, 2, 400, 600, 1000);
	assert_null(pt_agg__bucket(agg, 3));

	assert_int_equal(ngot, 2);
	assert_got(0, 100, 1100, 300, 200, 600);
	assert_got(1, 2000, 2500, 100, 0, 400);
	assert_int_equal(got[0].tid, 1);
	assert_int_equal(got[0].pid, PID);

	assert_dist(&pt_agg__func(agg, F_STEP)->dur, 2, 500, 1000, 1500);
	assert_int_equal(pt_agg__func(agg, F_STEP)->entries, 2);
	assert_dist(&pt_agg__func(agg, F_A)->dur, 2, 100, 300, 400);
	assert_dist(&pt_agg__func(agg, F_B)->dur, 2, 100, 100, 200);
	assert_dist(&pt_agg__func(agg, F_LEAF)->dur, 1, 50, 50, 50);
	assert_null(pt_agg__func(agg, 77));
	assert_int_equal(pt_agg__nfuncs(agg), 5);

	h = pt_agg__health(agg);
	assert_int_equal(h->records, 14);
	assert_int_equal(h->threads, 1);
	assert_int_equal(h->lost_calls, 0);
	assert_int_equal(h->bad_records, 0);
}

static void test_recursion(void **state)
{
	make(1, PT_STEP_CALL, 0);
	in(1, F_STEP, 0);
	in(1, F_STEP, 100); /* recursion: no second step */
	call(1, F_STEP, 200, 300);
	in(1, F_A, 400);
	in(1, F_A, 450); /* recursion: one bucket call, outermost time */
	call(1, F_A, 500, 600);
	out(1, 700);
	out(1, 800);
	out(1, 900);
	out(1, 1000);
	pt_agg__finish(agg);

	assert_dist(&pt_agg__steps(agg)->dur, 1, 1000, 1000, 1000);
	assert_bucket(0, 1, 400);
	assert_dist(&pt_agg__bucket(agg, 0)->per_call, 1, 400, 400, 400);
	assert_bucket(1, 1, 600);
	assert_int_equal(ngot, 1);
	assert_int_equal(got[0].b[0], 400);
	assert_int_equal(got[0].other, 600);
	/* Functions count every call, nested ones included. */
	assert_dist(&pt_agg__func(agg, F_STEP)->dur, 3, 100, 1000, 1900);
	assert_dist(&pt_agg__func(agg, F_A)->dur, 3, 100, 400, 750);
}

static void test_buckets_nesting_each_other(void **state)
{
	make(2, PT_STEP_CALL, 0);
	in(1, F_STEP, 0);
	in(1, F_A, 100);
	in(1, F_B, 200);
	call(1, F_A, 300, 400); /* A inside B inside A */
	out(1, 800);
	out(1, 900);
	in(1, F_B, 1000);
	call(1, F_A, 1100, 1200);
	out(1, 1500);
	call(1, F_AB, 1600, 1700); /* one function in both buckets */
	out(1, 2000);
	pt_agg__finish(agg);

	/* A: [100,900] [1100,1200] [1600,1700]; B: [200,800] [1000,1500]
	 * [1600,1700]; union: [100,900] [1000,1500] [1600,1700]. */
	assert_bucket(0, 3, 1000);
	assert_dist(&pt_agg__bucket(agg, 0)->per_call, 3, 100, 800, 1000);
	assert_bucket(1, 3, 1200);
	assert_dist(&pt_agg__bucket(agg, 1)->per_call, 3, 100, 600, 1200);
	assert_bucket(2, 1, 600);
	assert_int_equal(ngot, 1);
	assert_got(0, 0, 2000, 1000, 1200, 600);
	assert_dist(&pt_agg__func(agg, F_A)->dur, 3, 100, 800, 1000);
	assert_dist(&pt_agg__func(agg, F_B)->dur, 2, 500, 600, 1100);
}

/* Iteration boundaries at 0, 1000, 2000, 3000; bucket A straddles two. */
static void iteration_stream(void)
{
	in(1, F_STEP, 0);
	call(1, F_STEP, 5, 8); /* nested: not a boundary */
	out(1, 10);
	in(1, F_A, 500);
	call(1, F_STEP, 1000, 1010); /* inside A: splits it */
	out(1, 1500);
	in(1, F_A, 1800);
	call(1, F_STEP, 2000, 2010);
	out(1, 2500);
	call(1, F_A, 2600, 2700);
	call(1, F_STEP, 3000, 3010);
}

static void test_iteration_split(void **state)
{
	make(1, PT_STEP_ITERATION, 0);
	iteration_stream();
	assert_int_equal(pt_agg__steps(agg)->incomplete, 0);
	pt_agg__finish(agg);

	assert_dist(&pt_agg__steps(agg)->dur, 3, 1000, 1000, 3000);
	assert_int_equal(pt_agg__steps(agg)->incomplete, 1); /* [3000, ...) */
	assert_int_equal(pt_agg__steps(agg)->first_start_ns, 0);
	assert_int_equal(pt_agg__steps(agg)->last_end_ns, 3000);
	/* Pieces: [500,1000] | [1000,1500] [1800,2000] | [2000,2500] [2600,2700] */
	assert_int_equal(ngot, 3);
	assert_got(0, 0, 1000, 500, 0, 500);
	assert_got(1, 1000, 2000, 700, 0, 300);
	assert_got(2, 2000, 3000, 600, 0, 400);
	/* A call's per_call sums its pieces over the steps it spans. */
	assert_bucket(0, 3, 1800);
	assert_dist(&pt_agg__bucket(agg, 0)->per_call, 3, 100, 1000, 1800);
	assert_bucket(1, 3, 1200);
	assert_dist(&pt_agg__bucket(agg, 1)->per_call, 3, 300, 500, 1200);
	assert_dist(&pt_agg__func(agg, F_STEP)->dur, 5, 3, 10, 43);
	assert_int_equal(pt_agg__health(agg)->lost_calls, 0);
}

/* Call mode: what an agent call opened starts at its body's start (the
 * EXIT's t_entry): the step, its bucket and the buckets' union (other). */
static void test_agent_clocks_call(void **state)
{
	make(1, PT_STEP_CALL, 0);
	in(1, F_STEP, 100);
	in(1, F_A, 200);
	out_agent(1, 210, 500);
	in(1, F_LEAF, 600);
	out_agent(1, 605, 700);
	out_agent(1, 110, 1000);
	pt_agg__finish(agg);

	assert_int_equal(ngot, 1);
	assert_got(0, 110, 1000, 290, 0, 600);
	assert_bucket(0, 1, 290);
	assert_dist(&pt_agg__func(agg, F_STEP)->dur, 1, 890, 890, 890);
	assert_dist(&pt_agg__func(agg, F_A)->dur, 1, 290, 290, 290);
	assert_dist(&pt_agg__func(agg, F_LEAF)->dur, 1, 95, 95, 95);
}

/* Iteration mode: a step begins at its function's ENTRY and ends at the
 * next one (the boundary stays where the hit was); a bucket call around
 * the boundary keeps its split there, and one the step function is not
 * in is not moved by its EXIT. */
static void test_agent_clocks_iteration(void **state)
{
	make(1, PT_STEP_ITERATION, 0);
	in(1, F_A, 0);
	in(1, F_STEP, 100);
	out_agent(1, 110, 300);
	in(1, F_STEP, 1000);
	out_agent(1, 1010, 1200);
	out_agent(1, 5, 1500);
	in(1, F_STEP, 2000);
	out_agent(1, 2010, 2100);
	pt_agg__finish(agg);

	assert_int_equal(ngot, 2);
	assert_got(0, 100, 1000, 900, 0, 0);
	assert_got(1, 1000, 2000, 500, 0, 500);
	assert_dist(&pt_agg__func(agg, F_STEP)->dur, 3, 90, 190, 470);
	assert_dist(&pt_agg__func(agg, F_A)->dur, 1, 1495, 1495, 1495);
}

static void test_iteration_warmup(void **state)
{
	make(1, PT_STEP_ITERATION, 1);
	iteration_stream();
	pt_agg__finish(agg);

	assert_dist(&pt_agg__steps(agg)->dur, 2, 1000, 1000, 2000);
	assert_int_equal(pt_agg__steps(agg)->warmup, 1);
	assert_int_equal(pt_agg__steps(agg)->first_start_ns, 1000);
	assert_int_equal(ngot, 2);
	assert_got(0, 1000, 2000, 700, 0, 300);
	assert_got(1, 2000, 3000, 600, 0, 400);
	/* [500,1500] keeps only its piece in the counted step: 500. */
	assert_bucket(0, 3, 1300);
	assert_dist(&pt_agg__bucket(agg, 0)->per_call, 3, 100, 700, 1300);
	assert_bucket(1, 2, 700);
}

static void test_warmup_call(void **state)
{
	uint64_t t;
	int i;

	make(1, PT_STEP_CALL, 3);
	/* Steps of 100, 200, ..., 500 ns, each with 10 ns of A. */
	for (i = 1, t = 0; i <= 5; i++, t += 10000) {
		in(1, F_STEP, t);
		call(1, F_A, t + 10, t + 20);
		out(1, t + 100 * i);
	}
	pt_agg__finish(agg);

	assert_int_equal(pt_agg__steps(agg)->warmup, 3);
	assert_dist(&pt_agg__steps(agg)->dur, 2, 400, 500, 900);
	assert_int_equal(pt_agg__steps(agg)->first_start_ns, 30000);
	assert_bucket(0, 2, 20);
	assert_bucket(1, 2, 880);
	assert_int_equal(ngot, 2);
	assert_int_equal(got[0].index, 0);
	assert_int_equal(got[0].t0, 30000);
	assert_int_equal(got[1].index, 1);
	/* Functions ignore warmup. */
	assert_dist(&pt_agg__func(agg, F_A)->dur, 5, 10, 10, 50);
}

/* Warmup is by order of opening, not of closing. */
static void test_warmup_order(void **state)
{
	make(1, PT_STEP_CALL, 1);
	in(1, F_STEP, 0); /* first to open: warmup */
	in(2, F_STEP, 5);
	call(2, F_A, 10, 20);
	out(2, 100); /* closes first, counted */
	call(1, F_A, 200, 300);
	out(1, 1000);
	call(1, F_STEP, 2000, 2500);
	pt_agg__finish(agg);

	assert_int_equal(pt_agg__steps(agg)->warmup, 1);
	assert_dist(&pt_agg__steps(agg)->dur, 2, 95, 500, 595);
	assert_bucket(0, 1, 10);
	assert_int_equal(ngot, 2);
	assert_int_equal(got[0].tid, 2);
	assert_int_equal(got[0].index, 0);
	assert_int_equal(got[1].tid, 1);
	assert_int_equal(got[1].index, 1);
	assert_int_equal(pt_agg__health(agg)->threads, 2);
}

static void test_interleaved_threads(void **state)
{
	make(2, PT_STEP_CALL, 0);
	in(1, F_STEP, 0);
	in(2, F_STEP, 100);
	in(3, F_A, 150); /* thread 3 has no step */
	in(1, F_A, 200);
	in(2, F_B, 250);
	out(3, 250);
	in(2, F_A, 300);
	out(1, 300);
	out(2, 350);
	out(2, 450);
	out(2, 600);
	out(1, 1000);
	pt_agg__finish(agg);

	assert_dist(&pt_agg__steps(agg)->dur, 2, 500, 1000, 1500);
	assert_int_equal(ngot, 2);
	/* Thread 2 [100,600]: A [300,350], B [250,450]; thread 1 [0,1000]: A [200,300]. */
	assert_int_equal(got[0].tid, 2);
	assert_got(0, 100, 600, 50, 200, 300);
	assert_int_equal(got[1].tid, 1);
	assert_got(1, 0, 1000, 100, 0, 900);
	assert_bucket(0, 2, 150);
	assert_bucket(1, 1, 200);
	assert_bucket(2, 2, 1200);
	assert_dist(&pt_agg__func(agg, F_A)->dur, 3, 50, 100, 250);
	assert_int_equal(pt_agg__health(agg)->threads, 3);
	assert_int_equal(pt_agg__steps(agg)->first_start_ns, 0);
	assert_int_equal(pt_agg__steps(agg)->last_end_ns, 1000);
}

/* Thousands of threads, all open at once: the thread table grows under
 * live state. */
static void test_many_threads(void **state)
{
	const uint32_t n = 5000;
	uint32_t i, tid;

	make(1, PT_STEP_CALL, 0);
	for (i = 0; i < n; i++)
		rec(PT_REC_ENTRY, 100000 + i * 7919, F_STEP, 0, i, 0, 0);
	for (i = 0; i < n; i++)
		rec(PT_REC_ENTRY, 100000 + i * 7919, F_A, 1, i + 10, 0, 0);
	for (i = n; i-- > 0;) {
		tid = 100000 + i * 7919;
		rec(PT_REC_EXIT, tid, F_A, 1, i + 10, i + 10 + i % 7, 0);
		rec(PT_REC_EXIT, tid, F_STEP, 0, i, i + 10000, 0);
	}
	pt_agg__finish(agg);

	assert_int_equal(pt_agg__health(agg)->threads, n);
	assert_dist(&pt_agg__steps(agg)->dur, n, 10000, 10000, (uint64_t)n * 10000);
	assert_int_equal(pt_agg__bucket(agg, 0)->calls, n);
	/* sum of i % 7 over 0..4999: 714 full cycles of 21, then 0+1 */
	assert_int_equal(pt_agg__bucket(agg, 0)->total_ns, 714 * 21 + 1);
	assert_int_equal(pt_agg__steps(agg)->incomplete, 0);
	assert_int_equal(pt_agg__health(agg)->lost_calls, 0);
}

/* Threads that come and go: each is freed at its exit, so the table
 * holds the live ones only; figures are those of every thread; a thread
 * that ends inside a step leaves it incomplete; a tid reused after its
 * exit starts fresh. */
static void test_thread_exit_frees(void **state)
{
	const uint32_t n = 8000; /* < got[] */
	uint32_t i, tid;

	make(1, PT_STEP_CALL, 0);
	for (i = 0; i < n; i++) {
		/* 50 live at a time, interleaved, exits out of start order */
		tid = 1000 + i;
		rec(PT_REC_ENTRY, tid, F_STEP, 0, 10 * i, 0, 0);
		rec(PT_REC_ENTRY, tid, F_A, 1, 10 * i + 1, 0, 0);
		rec(PT_REC_EXIT, tid, F_A, 1, 10 * i + 1, 10 * i + 3, 0);
		rec(PT_REC_EXIT, tid, F_STEP, 0, 10 * i, 10 * i + 5, 0);
		if (i >= 50)
			assert_true(pt_agg__thread_exit(agg, 1000 + i - 50));
	}
	assert_int_equal(pt_agg__health(agg)->threads, n);
	assert_int_equal(pt_agg__health(agg)->threads_ended, n - 50);
	assert_true(pt_agg__health(agg)->threads_max <= 51);
	assert_false(pt_agg__thread_exit(agg, 999));  /* never seen */
	assert_false(pt_agg__thread_exit(agg, 1000)); /* already gone */
	/* the live ones are still found, whatever moved in the table */
	for (i = n - 50; i < n; i++)
		assert_true(pt_agg__thread_exit(agg, 1000 + i));

	/* ended inside a step: incomplete; its tid reused: a fresh thread */
	in(1, F_STEP, 1000000);
	in(1, F_A, 1000010);
	assert_true(pt_agg__thread_exit(agg, 1));
	memset(&sims[1], 0, sizeof(sims[1]));
	call(1, F_STEP, 2000000, 2000100);
	pt_agg__finish(agg);
	assert_int_equal(pt_agg__steps(agg)->incomplete, 1);
	assert_int_equal(pt_agg__steps(agg)->dur.count, n + 1);
	assert_int_equal(pt_agg__bucket(agg, 0)->calls, n);
	assert_int_equal(pt_agg__bucket(agg, 0)->total_ns, 2 * n);
	assert_int_equal(pt_agg__health(agg)->lost_calls, 0);
}

static void test_bucket_outside_step(void **state)
{
	make(1, PT_STEP_CALL, 0);
	call(1, F_A, 0, 100);
	call(1, F_STEP, 200, 300);
	call(1, F_A, 400, 500);
	pt_agg__finish(agg);

	assert_dist(&pt_agg__func(agg, F_A)->dur, 2, 100, 100, 200);
	assert_bucket(0, 0, 0);
	assert_int_equal(pt_agg__bucket(agg, 0)->per_call.count, 0);
	assert_bucket(1, 1, 100);
	assert_int_equal(ngot, 1);
	assert_got(0, 200, 300, 0, 0, 100);
}

/* A bucket function that calls the step function: the bucket gets the
 * part inside steps; its one call ends outside any step. */
static void test_bucket_around_steps(void **state)
{
	make(1, PT_STEP_CALL, 0);
	in(1, F_A, 0);
	call(1, F_STEP, 100, 400);
	call(1, F_STEP, 500, 700);
	out(1, 1000);
	pt_agg__finish(agg);

	assert_int_equal(ngot, 2);
	assert_got(0, 100, 400, 300, 0, 0);
	assert_got(1, 500, 700, 200, 0, 0);
	assert_bucket(0, 1, 500);
	assert_dist(&pt_agg__bucket(agg, 0)->per_call, 1, 500, 500, 500);
	assert_bucket(1, 2, 0);
}

static void test_lost_entry(void **state)
{
	make(1, PT_STEP_CALL, 0);
	in(1, F_STEP, 0);
	in_lost(1, F_A, 100);
	out_entry_lost(1, 200); /* a call, but no bucket interval */
	out(1, 1000);

	/* A step whose ENTRY was lost: never opened, incomplete. */
	in_lost(1, F_STEP, 2000);
	call(1, F_A, 2100, 2200); /* outside any known step */
	out(1, 3000);
	pt_agg__finish(agg);

	assert_dist(&pt_agg__func(agg, F_A)->dur, 2, 100, 100, 200);
	assert_int_equal(pt_agg__func(agg, F_A)->entries, 1);
	assert_dist(&pt_agg__func(agg, F_STEP)->dur, 2, 1000, 1000, 2000);
	assert_int_equal(pt_agg__func(agg, F_STEP)->entries, 1);
	assert_dist(&pt_agg__steps(agg)->dur, 1, 1000, 1000, 1000);
	assert_int_equal(pt_agg__steps(agg)->incomplete, 1);
	assert_bucket(0, 0, 0);
	assert_bucket(1, 1, 1000);
	assert_int_equal(pt_agg__health(agg)->lost_calls, 0);
}

/* A lost step ENTRY in iteration mode hides a boundary: the iteration it
 * would have closed cannot be told from the next one, so neither counts. */
static void test_lost_entry_iteration(void **state)
{
	make(1, PT_STEP_ITERATION, 0);
	call(1, F_STEP, 0, 10);
	in_lost(1, F_STEP, 1000);
	out_entry_lost(1, 1010);
	call(1, F_STEP, 2000, 2010);
	call(1, F_STEP, 3000, 3010);
	pt_agg__finish(agg);

	assert_dist(&pt_agg__steps(agg)->dur, 1, 1000, 1000, 1000);
	assert_int_equal(ngot, 1);
	assert_int_equal(got[0].t0, 2000);
	/* [0, 2000) broken by the lost ENTRY, [3000, ...) open at the end. */
	assert_int_equal(pt_agg__steps(agg)->incomplete, 2);
	assert_dist(&pt_agg__func(agg, F_STEP)->dur, 4, 10, 10, 40);
}

static void test_lost_exit(void **state)
{
	make(2, PT_STEP_CALL, 0);
	/* The step's EXIT is lost; the next step's ENTRY at the same depth
	 * tells us. */
	in(1, F_STEP, 0);
	call(1, F_A, 100, 200);
	out_lost(1);
	in(1, F_STEP, 1000);
	call(1, F_A, 1100, 1150);
	out(1, 1500);
	assert_int_equal(pt_agg__health(agg)->lost_calls, 1);
	assert_int_equal(pt_agg__steps(agg)->incomplete, 1);
	assert_dist(&pt_agg__steps(agg)->dur, 1, 500, 500, 500);
	assert_bucket(0, 1, 50); /* [100,200] ended in the broken step */

	/* A bucket call's EXIT is lost, seen by the step's EXIT below it:
	 * the step still counts, the interval's piece is dropped. */
	in(1, F_STEP, 2000);
	in(1, F_A, 2100);
	out_lost(1);
	out(1, 3000);
	assert_int_equal(pt_agg__health(agg)->lost_calls, 2);
	assert_dist(&pt_agg__steps(agg)->dur, 2, 500, 1000, 1500);
	assert_bucket(0, 1, 50);
	assert_got(1, 2000, 3000, 0, 0, 1000);

	/* Lost A around a complete B: covered time keeps what surely was,
	 * [4100, 4250], so other + B never exceeds the step. */
	in(1, F_STEP, 4000);
	in(1, F_A, 4100);
	call(1, F_B, 4150, 4250);
	out_lost(1);
	call(1, F_LEAF, 4300, 4400);
	out(1, 5000);
	pt_agg__finish(agg);

	assert_int_equal(pt_agg__health(agg)->lost_calls, 3);
	assert_dist(&pt_agg__steps(agg)->dur, 3, 500, 1000, 2500);
	assert_got(2, 4000, 5000, 0, 100, 850);
	assert_bucket(0, 1, 50);
	assert_bucket(1, 1, 100);
	assert_int_equal(pt_agg__steps(agg)->incomplete, 1);
	assert_int_equal(pt_agg__func(agg, F_STEP)->entries, 4);
	assert_int_equal(pt_agg__func(agg, F_STEP)->dur.count, 3);
	assert_int_equal(pt_agg__func(agg, F_A)->entries, 4);
	assert_int_equal(pt_agg__func(agg, F_A)->dur.count, 2);
}

/* Iteration mode: the step function's EXIT is lost, seen at the next
 * boundary; the iteration it belonged to is not trusted. */
static void test_lost_exit_iteration(void **state)
{
	make(1, PT_STEP_ITERATION, 0);
	in(1, F_STEP, 0);
	call(1, F_A, 100, 200);
	out_lost(1);
	call(1, F_STEP, 1000, 1010);
	call(1, F_A, 1100, 1300);
	call(1, F_STEP, 2000, 2010);

	assert_int_equal(pt_agg__health(agg)->lost_calls, 1);
	assert_int_equal(pt_agg__steps(agg)->incomplete, 1);
	assert_dist(&pt_agg__steps(agg)->dur, 1, 1000, 1000, 1000);
	assert_int_equal(ngot, 1);
	assert_got(0, 1000, 2000, 200, 0, 800);
	assert_bucket(0, 1, 200);
}

/* An EXIT flagged ENTRY_LOST never closes the frame at its depth, even one
 * of the same function: that frame is an older call whose EXIT was lost. */
static void test_entry_lost_flag(void **state)
{
	make(1, PT_STEP_CALL, 0);
	in(1, F_STEP, 0);
	in(1, F_A, 100);
	out_lost(1);
	in_lost(1, F_A, 300);
	out_entry_lost(1, 400);
	out(1, 1000);
	pt_agg__finish(agg);

	assert_int_equal(pt_agg__health(agg)->lost_calls, 1);
	assert_dist(&pt_agg__steps(agg)->dur, 1, 1000, 1000, 1000);
	assert_bucket(0, 0, 0);
	assert_bucket(1, 1, 1000);
	assert_dist(&pt_agg__func(agg, F_A)->dur, 1, 100, 100, 100);
	assert_int_equal(pt_agg__func(agg, F_A)->entries, 1);
}

static void test_finish_open_step(void **state)
{
	make(1, PT_STEP_CALL, 0);
	call(1, F_STEP, 0, 100);
	in(1, F_STEP, 1000);
	call(1, F_A, 1100, 1200);
	in(1, F_A, 1300);
	pt_agg__finish(agg);

	assert_int_equal(pt_agg__steps(agg)->incomplete, 1);
	assert_dist(&pt_agg__steps(agg)->dur, 1, 100, 100, 100);
	assert_bucket(0, 0, 0);
	assert_bucket(1, 1, 100);
	assert_int_equal(pt_agg__health(agg)->lost_calls, 0); /* unfinished, not lost */
	assert_int_equal(ngot, 1);

	pt_agg__finish(agg); /* idempotent */
	assert_int_equal(pt_agg__steps(agg)->incomplete, 1);
	assert_int_equal(pt_agg__steps(agg)->dur.count, 1);
	assert_int_equal(pt_agg__health(agg)->lost_calls, 0);
}

static void test_unknown_fid(void **state)
{
	make(1, PT_STEP_CALL, 0);
	rec(PT_REC_ENTRY, 1, F_STEP, 0, 0, 0, 0);
	rec(PT_REC_ENTRY, 1, 99, 1, 100, 0, 0); /* never declared */
	rec(PT_REC_ENTRY, 1, F_A, 2, 150, 0, 0);
	rec(PT_REC_EXIT, 1, F_A, 2, 150, 250, 0);
	rec(PT_REC_EXIT, 1, 99, 1, 100, 300, 0);
	rec(7, 1, F_A, 0, 400, 500, 0); /* unknown type */
	rec(PT_REC_DLOPEN, 1, 0, 0, 450, 0, 0);
	rec(PT_REC_EXIT, 1, F_STEP, 0, 0, 1000, 0);
	pt_agg__finish(agg);

	assert_int_equal(pt_agg__health(agg)->records, 8);
	assert_int_equal(pt_agg__health(agg)->bad_records, 3);
	assert_int_equal(pt_agg__health(agg)->lost_calls, 0);
	assert_null(pt_agg__func(agg, 99));
	assert_dist(&pt_agg__steps(agg)->dur, 1, 1000, 1000, 1000);
	assert_bucket(0, 1, 100);
	assert_dist(&pt_agg__func(agg, F_A)->dur, 1, 100, 100, 100);
}

static void test_set_func_late(void **state)
{
	const uint32_t F_LATE = 7, F_FAR = 300;

	make(1, PT_STEP_CALL, 0);
	in(1, F_STEP, 0);
	call(1, F_LATE, 100, 200); /* not declared yet: ignored */
	out(1, 1000);
	assert_int_equal(pt_agg__health(agg)->bad_records, 2);

	/* A library attached late; the fid arrays grow while state lives. */
	assert_int_equal(pt_agg__set_func(agg, F_LATE, false, 1), 0);
	in(1, F_STEP, 2000);
	assert_int_equal(pt_agg__set_func(agg, F_FAR, false, 0), 0);
	call(1, F_LATE, 2100, 2400);
	call(1, F_FAR, 2500, 2600);
	in(1, F_LATE, 2700);
	/* Roles changing mid-call apply to later calls only. */
	assert_int_equal(pt_agg__set_func(agg, F_LATE, false, 0), 0);
	out(1, 2800);
	call(1, F_LATE, 2850, 2900);
	out(1, 3000);
	pt_agg__finish(agg);

	assert_int_equal(pt_agg__nfuncs(agg), F_FAR + 1);
	assert_null(pt_agg__func(agg, F_FAR - 1));
	assert_dist(&pt_agg__func(agg, F_LATE)->dur, 3, 50, 300, 450);
	assert_dist(&pt_agg__func(agg, F_FAR)->dur, 1, 100, 100, 100);
	assert_bucket(0, 2, 400);
	assert_int_equal(pt_agg__health(agg)->bad_records, 2);
	assert_int_equal(pt_agg__health(agg)->lost_calls, 0);

	assert_int_equal(pt_agg__set_func(agg, 8, false, 1ULL << 5), -EINVAL); /* no bucket 5 */
}

static void test_bad_opts(void **state)
{
	struct pt_agg_opts o = { .nbuckets = PT_MAX_BUCKETS + 1 };
	struct pt_agg *a;

	assert_null(pt_agg__new(&o));
	o.nbuckets = PT_MAX_BUCKETS;
	a = pt_agg__new(&o);
	assert_non_null(a);
	/* All 64 buckets addressable. */
	assert_int_equal(pt_agg__set_func(a, 0, false, UINT64_MAX), 0);
	pt_agg__free(a);
	pt_agg__free(NULL);
}

/* One function in all 64 buckets, and the highest bucket's interval. */
static void test_64_buckets(void **state)
{
	size_t i;

	make(PT_MAX_BUCKETS, PT_STEP_CALL, 0);
	assert_int_equal(pt_agg__set_func(agg, 10, false, UINT64_MAX), 0);
	assert_int_equal(pt_agg__set_func(agg, 11, false, 1ULL << 63), 0);
	in(1, F_STEP, 0);
	call(1, 10, 100, 200);
	call(1, 11, 300, 350);
	out(1, 1000);
	pt_agg__finish(agg);

	for (i = 0; i < 63; i++)
		assert_bucket(i, 1, 100);
	assert_bucket(63, 2, 150);
	assert_bucket(64, 1, 850);
}

/* ---- values read during a step (pt_agg__value) ---- */

#define VM(r) (1u << (r))

static void assert_vals(size_t k, unsigned int vmask, double tok, double kv, double batch)
{
	assert_true(k < ngot);
	assert_int_equal(got[k].vmask, vmask);
	if (vmask & VM(PT_VROLE_TOKENS) && got[k].val[PT_VROLE_TOKENS] != tok)
		fail_msg("step %zu tokens %g, want %g", k, got[k].val[PT_VROLE_TOKENS], tok);
	if (vmask & VM(PT_VROLE_KVLEN) && got[k].val[PT_VROLE_KVLEN] != kv)
		fail_msg("step %zu kv_len %g, want %g", k, got[k].val[PT_VROLE_KVLEN], kv);
	if (vmask & VM(PT_VROLE_BATCH) && got[k].val[PT_VROLE_BATCH] != batch)
		fail_msg("step %zu batch %g, want %g", k, got[k].val[PT_VROLE_BATCH], batch);
}

static void test_value_no_step(void **state)
{
	make(1, PT_STEP_CALL, 0);
	/* a thread never seen */
	assert_false(pt_agg__value(agg, 1, PID, PT_VROLE_TOKENS, 5, 0));
	/* a thread in a call that is no step */
	in(2, F_A, 100);
	assert_false(pt_agg__value(agg, 2, PID, PT_VROLE_COUNT, 5, 0));
	out(2, 200);
	/* after its step ended */
	call(2, F_STEP, 300, 400);
	assert_false(pt_agg__value(agg, 2, PID, PT_VROLE_KVLEN, 5, 0));
	/* a role that does not exist, in an open step */
	in(2, F_STEP, 500);
	assert_false(pt_agg__value(agg, 2, PID, PT_VROLE_MAX, 5, 0));
	assert_false(pt_agg__value(agg, 2, PID, 1000, 5, 0));
	out(2, 600);
	/* after the end of the run */
	in(3, F_STEP, 700);
	assert_true(pt_agg__value(agg, 3, PID, PT_VROLE_BATCH, 2, 700));
	pt_agg__finish(agg);
	assert_false(pt_agg__value(agg, 3, PID, PT_VROLE_BATCH, 2, 700));

	assert_int_equal(ngot, 2);
	assert_vals(0, 0, 0, 0, 0);
	assert_vals(1, 0, 0, 0, 0);
	assert_int_equal(pt_agg__health(agg)->bad_records, 0);
}

static void test_value_add_and_set(void **state)
{
	make(0, PT_STEP_CALL, 0);
	in(1, F_STEP, 0);
	/* tokens and count tokens add up, in any order */
	assert_true(pt_agg__value(agg, 1, PID, PT_VROLE_COUNT, 3, 0));
	assert_true(pt_agg__value(agg, 1, PID, PT_VROLE_TOKENS, 5, 0));
	assert_true(pt_agg__value(agg, 1, PID, PT_VROLE_COUNT, 2.5, 0));
	/* kv_len and batch: the last one read */
	assert_true(pt_agg__value(agg, 1, PID, PT_VROLE_KVLEN, 100, 0));
	assert_true(pt_agg__value(agg, 1, PID, PT_VROLE_KVLEN, 250, 0));
	assert_true(pt_agg__value(agg, 1, PID, PT_VROLE_BATCH, 8, 0));
	assert_true(pt_agg__value(agg, 1, PID, PT_VROLE_BATCH, 0, 0));
	call(1, F_LEAF, 10, 20);
	out(1, 100);

	/* the next step starts with none of them */
	in(1, F_STEP, 200);
	out(1, 300);

	in(1, F_STEP, 400);
	assert_true(pt_agg__value(agg, 1, PID, PT_VROLE_KVLEN, 7, 400));
	assert_true(pt_agg__value(agg, 1, PID, PT_VROLE_TOKENS, -1, 400));
	out(1, 500);

	in(1, F_STEP, 600);
	assert_true(pt_agg__value(agg, 1, PID, PT_VROLE_COUNT, 4, 0));
	out(1, 700);
	pt_agg__finish(agg);

	assert_int_equal(ngot, 4);
	assert_vals(0, VM(PT_VROLE_TOKENS) | VM(PT_VROLE_KVLEN) | VM(PT_VROLE_BATCH), 10.5, 250, 0);
	assert_vals(1, 0, 0, 0, 0);
	assert_vals(2, VM(PT_VROLE_TOKENS) | VM(PT_VROLE_KVLEN), -1, 7, 0);
	/* count alone is a token figure, not added to the -1 before */
	assert_vals(3, VM(PT_VROLE_TOKENS), 4, 0, 0);
}

/* Values go to the step of their own thread; recursion is one step. */
static void test_value_threads_and_recursion(void **state)
{
	make(0, PT_STEP_CALL, 0);
	in(1, F_STEP, 0);
	in(2, F_STEP, 10);
	assert_true(pt_agg__value(agg, 2, PID, PT_VROLE_TOKENS, 20, 10));
	assert_true(pt_agg__value(agg, 1, PID, PT_VROLE_TOKENS, 1, 0));
	in(1, F_STEP, 20); /* nested: the same step, whose values are the outer call's */
	assert_false(pt_agg__value(agg, 1, PID, PT_VROLE_TOKENS, 2, 20));
	out(1, 30);
	assert_true(pt_agg__value(agg, 1, PID, PT_VROLE_TOKENS, 4, 0));
	out(2, 40);
	out(1, 50);
	assert_false(pt_agg__value(agg, 4, PID, PT_VROLE_TOKENS, 4, 0)); /* no such thread */
	pt_agg__finish(agg);

	assert_int_equal(ngot, 2);
	assert_int_equal(got[0].tid, 2);
	assert_vals(0, VM(PT_VROLE_TOKENS), 20, 0, 0);
	assert_int_equal(got[1].tid, 1);
	assert_vals(1, VM(PT_VROLE_TOKENS), 5, 0, 0);
}

static void test_value_iteration(void **state)
{
	make(0, PT_STEP_ITERATION, 0);
	/* before the first iteration: no step */
	assert_false(pt_agg__value(agg, 1, PID, PT_VROLE_TOKENS, 99, 0));
	in(1, F_STEP, 0);
	assert_true(pt_agg__value(agg, 1, PID, PT_VROLE_KVLEN, 10, 0));
	out(1, 5);
	/* between the step call's return and the next entry: still the
	 * same iteration */
	assert_true(pt_agg__value(agg, 1, PID, PT_VROLE_TOKENS, 3, 0));
	call(1, F_LEAF, 6, 7);
	assert_true(pt_agg__value(agg, 1, PID, PT_VROLE_COUNT, 4, 0));
	in(1, F_STEP, 100); /* closes iteration 0 with its values */
	assert_true(pt_agg__value(agg, 1, PID, PT_VROLE_BATCH, 2, 100));
	out(1, 110);
	in(1, F_STEP, 200);
	out(1, 210);
	in(1, F_STEP, 300);
	assert_true(pt_agg__value(agg, 1, PID, PT_VROLE_TOKENS, 1, 300));
	out(1, 310);
	pt_agg__finish(agg); /* the last iteration never closes */

	assert_int_equal(ngot, 3);
	assert_vals(0, VM(PT_VROLE_TOKENS) | VM(PT_VROLE_KVLEN), 7, 10, 0);
	assert_int_equal(got[0].t0, 0);
	assert_int_equal(got[0].t1, 100);
	assert_vals(1, VM(PT_VROLE_BATCH), 0, 0, 2);
	assert_vals(2, 0, 0, 0, 0);
	assert_int_equal(pt_agg__steps(agg)->incomplete, 1);
}

/* Warmup and broken steps take their values with them. */
static void test_value_warmup_and_loss(void **state)
{
	make(0, PT_STEP_CALL, 1);
	in(1, F_STEP, 0);
	assert_true(pt_agg__value(agg, 1, PID, PT_VROLE_TOKENS, 50, 0));
	out(1, 10);
	in(1, F_STEP, 100);
	assert_true(pt_agg__value(agg, 1, PID, PT_VROLE_KVLEN, 5, 100));
	out_lost(1);	    /* its EXIT lost: the step is not counted */
	in(1, F_STEP, 200); /* at depth 0 again: the lost call shows */
	assert_true(pt_agg__value(agg, 1, PID, PT_VROLE_TOKENS, 6, 200));
	out(1, 300);
	pt_agg__finish(agg);

	assert_int_equal(pt_agg__steps(agg)->warmup, 1);
	assert_int_equal(pt_agg__steps(agg)->incomplete, 1);
	assert_int_equal(ngot, 1);
	assert_int_equal(got[0].t0, 200);
	assert_vals(0, VM(PT_VROLE_TOKENS), 6, 0, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_call_nested_buckets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recursion, setup, teardown),
		cmocka_unit_test_setup_teardown(test_buckets_nesting_each_other, setup, teardown),
		cmocka_unit_test_setup_teardown(test_iteration_split, setup, teardown),
		cmocka_unit_test_setup_teardown(test_agent_clocks_call, setup, teardown),
		cmocka_unit_test_setup_teardown(test_agent_clocks_iteration, setup, teardown),
		cmocka_unit_test_setup_teardown(test_iteration_warmup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warmup_call, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warmup_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_interleaved_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_thread_exit_frees, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bucket_outside_step, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bucket_around_steps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_entry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_entry_iteration, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_exit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_exit_iteration, setup, teardown),
		cmocka_unit_test_setup_teardown(test_entry_lost_flag, setup, teardown),
		cmocka_unit_test_setup_teardown(test_finish_open_step, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_fid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_func_late, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_opts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_64_buckets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_value_no_step, setup, teardown),
		cmocka_unit_test_setup_teardown(test_value_add_and_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_value_threads_and_recursion, setup, teardown),
		cmocka_unit_test_setup_teardown(test_value_iteration, setup, teardown),
		cmocka_unit_test_setup_teardown(test_value_warmup_and_loss, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
