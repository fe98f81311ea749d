// SPDX-License-Identifier: BSD-2-Clause
/*
 * stepvals: value records (struct pt_rec_vals) through a real aggregator
 * into per-step figures, throughput and KV-length bins, with exact
 * expected numbers. The config comes from the real parser; the records
 * are what BPF would send: arguments read at entry right after the ENTRY
 * record, return values at exit right before the EXIT record, a
 * percentile's elements in the record's tail.
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

#include "aggregate/stepvals.h"

#define PID 77
/* agg fids: the step function, and others with values */
enum { F_STEP = 0, F_SAMPLE = 1, F_OTHER = 2 };

struct fx {
	struct pt_config cfg;
	struct pt_stepvals sv;
	struct pt_agg *agg;
	uint64_t nsteps; /* on_step calls */
};

static struct fx F;

static void on_step(void *ctx, const struct pt_step *s)
{
	struct fx *f = ctx;

	f->nsteps++;
	pt_stepvals__step(&f->sv, s);
}

static void parse(struct pt_config *cfg, const char *text)
{
	char err[1024] = "";
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int ret;

	assert_non_null(f);
	ret = pt_config__parse(cfg, f, "t.conf", err, sizeof(err));
	fclose(f);
	if (ret)
		fail_msg("config: %s", err);
}

/* Config from text; an aggregator with the config's step mode and warmup,
 * F_STEP as the step function, F_SAMPLE and F_OTHER as plain functions. */
static void setup_text(const char *text)
{
	struct pt_agg_opts o = { 0 };

	memset(&F, 0, sizeof(F));
	parse(&F.cfg, text);
	assert_int_equal(pt_stepvals__init(&F.sv, &F.cfg), 0);
	o.step_mode = F.cfg.step_mode;
	o.warmup_steps = F.cfg.warmup_steps;
	o.on_step = on_step;
	o.ctx = &F;
	F.agg = pt_agg__new(&o);
	assert_non_null(F.agg);
	assert_int_equal(pt_agg__set_func(F.agg, F_STEP, true, 0), 0);
	assert_int_equal(pt_agg__set_func(F.agg, F_SAMPLE, false, 0), 0);
	assert_int_equal(pt_agg__set_func(F.agg, F_OTHER, false, 0), 0);
}

/* Per thread, the entry times of the calls open in the records fed so
 * far: a value record carries the t_entry of the call it was read at. */
static uint64_t open_t[64][PT_MAX_DEPTH];
static uint32_t open_n[64];

static int teardown(void **state)
{
	pt_agg__free(F.agg);
	pt_stepvals__free(&F.sv);
	pt_config__free(&F.cfg);
	memset(&F, 0, sizeof(F));
	memset(open_n, 0, sizeof(open_n));
	return 0;
}

static void rec(uint32_t type, uint32_t tid, uint32_t fid, uint32_t depth, uint64_t t0, uint64_t t1)
{
	struct pt_rec r = {
		.type = type,
		.fid = fid,
		.pid = PID,
		.tid = tid,
		.t_entry = t0,
		.t_exit = t1,
		.depth = depth,
	};

	if (type == PT_REC_ENTRY && depth < PT_MAX_DEPTH) {
		open_t[tid & 63][depth] = t0;
		open_n[tid & 63] = depth + 1;
	} else if (type == PT_REC_EXIT) {
		open_n[tid & 63] = depth;
	}
	pt_agg__record(F.agg, &r);
}

/* ---- value records ---- */

static struct pt_val S(int64_t v) /* an int */
{
	return (struct pt_val){ .v = v, .status = PT_VST_OK, .kind = PT_VKIND_SCALAR };
}

static struct pt_val
ST(unsigned int status) /* not read, and why */
{
	return (struct pt_val){ .status = (uint16_t)status };
}

static struct pt_val
U(void) /* the other side of the call */
{
	return ST(PT_VST_UNREAD);
}

static struct pt_val
L(const int64_t *e, uint32_t n) /* a list: n, sum, min, max */
{
	struct pt_val v = { .status = PT_VST_OK, .kind = PT_VKIND_LIST, .n = n };

	for (uint32_t i = 0; i < n; i++) {
		v.v += e[i];
		if (!i || e[i] < v.min)
			v.min = e[i];
		if (!i || e[i] > v.max)
			v.max = e[i];
	}
	return v;
}

/* A record of exactly its size (so ASan sees any read past it), with
 * nelem elements in the tail. */
static struct pt_rec_vals *
mkvals(uint32_t tid, bool at_exit, const struct pt_val *v, size_t nv, const int64_t *elem,
       uint32_t nelem, size_t *size)
{
	struct pt_rec_vals *r;

	*size = sizeof(*r) + (size_t)nelem * sizeof(int64_t);
	r = calloc(1, *size);
	assert_non_null(r);
	r->type = PT_REC_VALUES;
	r->pid = PID;
	r->tid = tid;
	r->t_entry = open_n[tid & 63] ? open_t[tid & 63][open_n[tid & 63] - 1] : 0;
	r->at_exit = at_exit;
	r->nelem = nelem;
	for (size_t k = 0; k < PT_MAX_VALS; k++)
		r->v[k] = k < nv ? v[k] : U();
	if (nelem)
		memcpy(r + 1, elem, (size_t)nelem * sizeof(int64_t));
	return r;
}

static void vals_e(int spec, uint32_t tid, bool at_exit, const struct pt_val *v, size_t nv,
		   const int64_t *elem, uint32_t nelem)
{
	size_t size;
	struct pt_rec_vals *r = mkvals(tid, at_exit, v, nv, elem, nelem, &size);

	pt_stepvals__record(&F.sv, F.agg, spec, r, size);
	free(r);
}

#define VALS(spec, tid, at_exit, ...)                                                              \
	do {                                                                                       \
		const struct pt_val v_[] = { __VA_ARGS__ };                                        \
		vals_e((spec), (tid), (at_exit), v_, sizeof(v_) / sizeof(v_[0]), NULL, 0);         \
	} while (0)

#define ENTRY false
#define EXIT true

/*
 * A whole step call of the native config (spec 0: tokens=arg0
 * kv_len=arg1 batch=ret): ENTRY, the argument record, the return record,
 * EXIT.
 */
static void native_step(uint32_t tid, uint64_t t0, uint64_t t1, struct pt_val tok, struct pt_val kv,
			struct pt_val batch)
{
	rec(PT_REC_ENTRY, tid, F_STEP, 0, t0, 0);
	VALS(0, tid, ENTRY, tok, kv, U());
	VALS(0, tid, EXIT, U(), U(), batch);
	rec(PT_REC_EXIT, tid, F_STEP, 0, t0, t1);
}

static const char native_cfg[] = "step native:exe:step tokens=arg0 kv_len=arg1 batch=ret\n"
				 "set kv_bins 0,512,1024\n";

#define assert_dbl(x, want)                                                                        \
	do {                                                                                       \
		double x_ = (x), w_ = (want);                                                      \
		if (x_ != w_)                                                                      \
			fail_msg("%s = %.9g, want %.9g", #x, x_, w_);                              \
	} while (0)

static void check_bin(size_t i, uint64_t lo, uint64_t hi, uint64_t steps, uint64_t dur_sum,
		      double tokens, uint64_t tok_steps, double tok_ns)
{
	const struct pt_stepvals_bin *b = &F.sv.bins[i];

	assert_true(i < F.sv.nbins);
	assert_int_equal(b->lo, lo);
	assert_int_equal(b->hi, hi);
	assert_int_equal(b->dur.count, steps);
	assert_dbl(b->dur.sum, (double)dur_sum);
	assert_dbl(b->tokens, tokens);
	assert_int_equal(b->tok_steps, tok_steps);
	assert_dbl(b->tok_ns, tok_ns);
}

/* ---- tests ---- */

static void test_init(void **state)
{
	setup_text(native_cfg);
	assert_true(pt_stepvals__active(&F.sv));
	assert_ptr_equal(F.sv.cfg, &F.cfg);
	for (int r = 0; r < 3; r++) {
		assert_ptr_equal(F.sv.role[r].probe, &F.cfg.probes[0]);
		assert_int_equal(F.sv.role[r].expr->role, r);
	}
	assert_string_equal(F.sv.role[PT_VROLE_TOKENS].expr->text, "arg0");
	assert_string_equal(F.sv.role[PT_VROLE_KVLEN].expr->text, "arg1");
	assert_string_equal(F.sv.role[PT_VROLE_BATCH].expr->text, "ret");
	assert_int_equal(F.sv.ncounts, 0);
	assert_null(F.sv.counts);
	assert_int_equal(F.sv.nbins, 3);
	check_bin(0, 0, 512, 0, 0, 0, 0, 0);
	check_bin(1, 512, 1024, 0, 0, 0, 0, 0);
	check_bin(2, 1024, UINT64_MAX, 0, 0, 0, 0, 0);
	teardown(state);

	/* no values configured: nothing to do */
	setup_text("step native:exe:step\n");
	assert_false(pt_stepvals__active(&F.sv));
	assert_null(F.sv.role[0].probe);
	assert_int_equal(F.sv.nbins, 7);
	assert_int_equal(F.sv.bins[6].lo, 16384);
	assert_int_equal(F.sv.bins[6].hi, UINT64_MAX);
	teardown(state);

	/* free twice is safe */
	setup_text(native_cfg);
	pt_stepvals__free(&F.sv);
	pt_stepvals__free(&F.sv);
	assert_false(pt_stepvals__active(&F.sv));
}

static void test_native_steps_and_bins(void **state)
{
	const struct pt_stepvals *sv = &F.sv;

	setup_text(native_cfg);
	/*            tid  t0     t1     tokens    kv        batch   */
	native_step(1, 1000, 2000, S(10), S(100), S(4));    /* bin 0, 1000 ns */
	native_step(1, 10000, 13000, S(30), S(600), S(8));  /* bin 1, 3000 ns */
	native_step(1, 20000, 22000, S(50), S(5000), S(6)); /* bin 2, 2000 ns */
	native_step(1, 30000, 34000, ST(PT_VST_FAULT), S(700), ST(PT_VST_TYPE)); /* bin 1 */
	native_step(1, 40000, 40500, S(0), S(512), S(1));  /* bin 1: lo is in, 500 ns */
	native_step(1, 50000, 50100, S(5), S(1023), S(3)); /* bin 1, 100 ns */
	pt_agg__finish(F.agg);

	assert_int_equal(F.nsteps, 6);
	assert_int_equal(sv->steps, 6);
	assert_int_equal(sv->tok_steps, 5); /* zero tokens is a token figure */
	assert_dbl(sv->tokens, 95);
	assert_dbl(sv->tok_ns, 1000 + 3000 + 2000 + 500 + 100);
	assert_int_equal(sv->batch_steps, 5);
	assert_dbl(sv->batch_sum, 4 + 8 + 6 + 1 + 3);
	assert_int_equal(sv->kv_steps, 6);
	assert_dbl(sv->kv_sum, 100 + 600 + 5000 + 700 + 512 + 1023);

	assert_int_equal(sv->role[PT_VROLE_TOKENS].read, 5);
	assert_int_equal(sv->role[PT_VROLE_TOKENS].steps, 5);
	assert_int_equal(sv->role[PT_VROLE_TOKENS].missing[PT_VST_FAULT], 1);
	assert_int_equal(sv->role[PT_VROLE_KVLEN].read, 6);
	assert_int_equal(sv->role[PT_VROLE_KVLEN].steps, 6);
	assert_int_equal(sv->role[PT_VROLE_BATCH].read, 5);
	assert_int_equal(sv->role[PT_VROLE_BATCH].steps, 5);
	assert_int_equal(sv->role[PT_VROLE_BATCH].missing[PT_VST_TYPE], 1);
	for (int r = 0; r < 3; r++) {
		uint64_t total = 0;

		for (int k = 0; k < PT_VST_NREASONS; k++)
			total += sv->role[r].missing[k];
		assert_int_equal(total, r == PT_VROLE_KVLEN ? 0 : 1);
		assert_int_equal(sv->role[r].outside, 0);
	}

	check_bin(0, 0, 512, 1, 1000, 10, 1, 1000);
	/* 600 (3000 ns, 30 tokens), 700 (4000 ns, no tokens), 512 (500 ns, 0
	 * tokens), 1023 (100 ns, 5 tokens) */
	check_bin(1, 512, 1024, 4, 3000 + 4000 + 500 + 100, 35, 3, 3000 + 500 + 100);
	check_bin(2, 1024, UINT64_MAX, 1, 2000, 50, 1, 2000);
	assert_int_equal(sv->bins[1].dur.min, 100);
	assert_int_equal(sv->bins[1].dur.max, 4000);
	assert_int_equal(sv->bad_records, 0);
	assert_int_equal(pt_agg__health(F.agg)->bad_records, 0);
}

/* Steps straight into pt_stepvals__step: a negative kv_len is in no bin
 * but counts in the kv mean; a step without kv_len is in no bin. */
static void test_step_direct(void **state)
{
	struct pt_step s = { 0 };

	setup_text(native_cfg);
	s.t_start = 100;
	s.t_end = 300;
	s.vmask = 1u << PT_VROLE_KVLEN | 1u << PT_VROLE_TOKENS;
	s.val[PT_VROLE_KVLEN] = -1;
	s.val[PT_VROLE_TOKENS] = 7;
	pt_stepvals__step(&F.sv, &s);
	s.vmask = 1u << PT_VROLE_TOKENS;
	s.val[PT_VROLE_KVLEN] = 100; /* not in vmask: ignored */
	s.val[PT_VROLE_TOKENS] = 3;
	pt_stepvals__step(&F.sv, &s);
	s.vmask = 0;
	s.t_end = 50; /* ends before it starts: 0 ns */
	pt_stepvals__step(&F.sv, &s);
	s.vmask = 1u << PT_VROLE_KVLEN | 1u << PT_VROLE_TOKENS;
	s.val[PT_VROLE_KVLEN] = 2000;
	s.val[PT_VROLE_TOKENS] = 1;
	pt_stepvals__step(&F.sv, &s);

	assert_int_equal(F.sv.steps, 4);
	assert_int_equal(F.sv.tok_steps, 3);
	assert_dbl(F.sv.tokens, 11);
	assert_dbl(F.sv.tok_ns, 400);
	assert_int_equal(F.sv.kv_steps, 2);
	assert_dbl(F.sv.kv_sum, 1999);
	assert_int_equal(F.sv.role[PT_VROLE_KVLEN].steps, 2);
	assert_int_equal(F.sv.role[PT_VROLE_BATCH].steps, 0);
	check_bin(0, 0, 512, 0, 0, 0, 0, 0);
	check_bin(1, 512, 1024, 0, 0, 0, 0, 0);
	check_bin(2, 1024, UINT64_MAX, 1, 0, 1, 1, 0); /* 0 ns */
	assert_int_equal(F.sv.bins[2].dur.zeros, 1);
}

static void test_count_tokens(void **state)
{
	const struct pt_stepvals_count *c;

	setup_text("step native:exe:step tokens=arg0\ncount tokens native:exe:sample ret\n");
	assert_int_equal(F.sv.ncounts, 1);
	c = &F.sv.counts[0];
	assert_ptr_equal(c->probe, &F.cfg.probes[1]);
	assert_string_equal(c->expr->text, "ret");

	/* step on tid 1: 10 from its argument, two samples inside: 3 + 4 */
	rec(PT_REC_ENTRY, 1, F_STEP, 0, 1000, 0);
	VALS(0, 1, ENTRY, S(10));
	rec(PT_REC_ENTRY, 1, F_SAMPLE, 1, 1100, 0);
	VALS(1, 1, EXIT, S(3));
	rec(PT_REC_EXIT, 1, F_SAMPLE, 1, 1100, 1200);
	rec(PT_REC_ENTRY, 1, F_SAMPLE, 1, 1300, 0);
	VALS(1, 1, EXIT, S(4));
	rec(PT_REC_EXIT, 1, F_SAMPLE, 1, 1300, 1400);
	rec(PT_REC_EXIT, 1, F_STEP, 0, 1000, 2000);
	/* after the step: outside */
	rec(PT_REC_ENTRY, 1, F_SAMPLE, 0, 3000, 0);
	VALS(1, 1, EXIT, S(7));
	rec(PT_REC_EXIT, 1, F_SAMPLE, 0, 3000, 3100);
	/* on a thread that never runs a step: outside */
	rec(PT_REC_ENTRY, 2, F_SAMPLE, 0, 3000, 0);
	VALS(1, 2, EXIT, S(5));
	rec(PT_REC_EXIT, 2, F_SAMPLE, 0, 3000, 3100);
	/* a negative count outside adds nothing to tokens_sum_outside */
	VALS(1, 2, EXIT, S(-9));
	/* an entry-side record of the count probe carries no count */
	VALS(1, 2, ENTRY, S(1000));
	/* a second step with only counts */
	rec(PT_REC_ENTRY, 1, F_STEP, 0, 5000, 0);
	VALS(0, 1, ENTRY, ST(PT_VST_RANGE));
	VALS(1, 1, EXIT, S(6));
	VALS(1, 1, EXIT, ST(PT_VST_TYPE));
	rec(PT_REC_EXIT, 1, F_STEP, 0, 5000, 5500);
	pt_agg__finish(F.agg);

	assert_int_equal(c->read, 6);
	assert_int_equal(c->outside, 3);
	assert_int_equal(c->tokens_sum_outside, 12);
	assert_int_equal(c->missing[PT_VST_TYPE], 1);
	assert_int_equal(F.sv.steps, 2);
	assert_int_equal(F.sv.tok_steps, 2);
	assert_dbl(F.sv.tokens, 17 + 6);
	assert_dbl(F.sv.tok_ns, 1000 + 500);
	assert_int_equal(F.sv.role[PT_VROLE_TOKENS].read, 1);
	assert_int_equal(F.sv.role[PT_VROLE_TOKENS].missing[PT_VST_RANGE], 1);
	/* the step had a token figure from the counts alone */
	assert_int_equal(F.sv.role[PT_VROLE_TOKENS].steps, 2);
	assert_null(F.sv.role[PT_VROLE_KVLEN].probe);
	assert_int_equal(F.sv.kv_steps, 0);
}

static void test_count_only(void **state)
{
	setup_text("step native:exe:step mode=iteration\ncount tokens native:exe:sample arg1\n");
	assert_true(pt_stepvals__active(&F.sv));
	assert_null(F.sv.role[PT_VROLE_TOKENS].probe);
	/* iteration: counts between one step entry and the next */
	rec(PT_REC_ENTRY, 1, F_STEP, 0, 0, 0);
	rec(PT_REC_EXIT, 1, F_STEP, 0, 0, 10);
	VALS(1, 1, ENTRY, S(2));
	VALS(1, 1, ENTRY, S(2));
	rec(PT_REC_ENTRY, 1, F_STEP, 0, 100, 0);
	VALS(1, 1, ENTRY, S(5));
	rec(PT_REC_EXIT, 1, F_STEP, 0, 100, 110);
	rec(PT_REC_ENTRY, 1, F_STEP, 0, 300, 0);
	rec(PT_REC_EXIT, 1, F_STEP, 0, 300, 310);
	/* a step with no count has no token figure */
	rec(PT_REC_ENTRY, 1, F_STEP, 0, 400, 0);
	pt_agg__finish(F.agg);

	assert_int_equal(F.sv.steps, 3);
	assert_int_equal(F.sv.tok_steps, 2);
	assert_dbl(F.sv.tokens, 9);
	assert_dbl(F.sv.tok_ns, 100 + 200);
	assert_int_equal(F.sv.counts[0].read, 3);
	assert_int_equal(F.sv.counts[0].outside, 0);
}

static void test_warmup(void **state)
{
	setup_text("set warmup_steps 2\nstep native:exe:step tokens=arg0 kv_len=arg1 batch=ret\n"
		   "set kv_bins 0,512,1024\n");
	native_step(1, 0, 100, S(1000), S(10), S(50));
	native_step(1, 200, 300, S(1000), S(600), S(50));
	native_step(1, 400, 700, S(12), S(2000), S(3));
	pt_agg__finish(F.agg);

	assert_int_equal(pt_agg__steps(F.agg)->warmup, 2);
	assert_int_equal(F.sv.steps, 1);
	assert_int_equal(F.sv.tok_steps, 1);
	assert_dbl(F.sv.tokens, 12);
	assert_dbl(F.sv.tok_ns, 300);
	assert_dbl(F.sv.batch_sum, 3);
	assert_dbl(F.sv.kv_sum, 2000);
	/* reads are counted as they come; warmup or not */
	assert_int_equal(F.sv.role[PT_VROLE_TOKENS].read, 3);
	assert_int_equal(F.sv.role[PT_VROLE_TOKENS].steps, 1);
	check_bin(0, 0, 512, 0, 0, 0, 0, 0);
	check_bin(1, 512, 1024, 0, 0, 0, 0, 0);
	check_bin(2, 1024, UINT64_MAX, 1, 300, 12, 1, 300);
}

static void test_statuses(void **state)
{
	static const unsigned int st[] = { PT_VST_FAULT,  PT_VST_TYPE,	PT_VST_RANGE,
					   PT_VST_NONAME, PT_VST_UNSET, PT_VST_TRUNC };

	setup_text("step py:m.Engine.step tokens=len(arg:reqs) kv_len=arg:seq_lens "
		   "batch=len(ret)\n");
	for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
		uint64_t t = 1000 * i;

		rec(PT_REC_ENTRY, 1, F_STEP, 0, t, 0);
		VALS(0, 1, ENTRY, ST(st[i]), S(100));
		VALS(0, 1, EXIT, U(), U(), ST(st[(i + 1) % 6]));
		rec(PT_REC_EXIT, 1, F_STEP, 0, t, t + 10);
	}
	/* a list where an int is wanted (tokens=len() is an int: BPF's len) */
	rec(PT_REC_ENTRY, 1, F_STEP, 0, 9000, 0);
	{
		static const int64_t e[] = { 1, 2 };

		VALS(0, 1, ENTRY, L(e, 2), S(5));
	}
	/* a status BPF never sends counts as unreadable */
	VALS(0, 1, EXIT, U(), U(), ST(200));
	rec(PT_REC_EXIT, 1, F_STEP, 0, 9000, 9010);
	pt_agg__finish(F.agg);

	for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
		assert_int_equal(F.sv.role[PT_VROLE_TOKENS].missing[st[i]],
				 st[i] == PT_VST_TYPE ? 2 : 1);
		assert_int_equal(F.sv.role[PT_VROLE_BATCH].missing[st[i]],
				 st[i] == PT_VST_FAULT ? 2 : 1);
		assert_int_equal(F.sv.role[PT_VROLE_KVLEN].missing[st[i]], 0);
	}
	assert_int_equal(F.sv.role[PT_VROLE_TOKENS].missing[PT_VST_OK], 0);
	assert_int_equal(F.sv.role[PT_VROLE_TOKENS].missing[PT_VST_UNREAD], 0);
	assert_int_equal(F.sv.role[PT_VROLE_TOKENS].read, 0);
	assert_int_equal(F.sv.role[PT_VROLE_BATCH].read, 0);
	assert_int_equal(F.sv.role[PT_VROLE_KVLEN].read, 7);
	assert_int_equal(F.sv.steps, 7);
	assert_int_equal(F.sv.tok_steps, 0);
	assert_int_equal(F.sv.batch_steps, 0);
	assert_int_equal(F.sv.kv_steps, 7);
	assert_dbl(F.sv.kv_sum, 6 * 100 + 5);
}

static void test_missed(void **state)
{
	setup_text(native_cfg);
	/* the first call of a py function (here: any) at entry: only the
	 * argument expressions miss */
	pt_stepvals__missed(&F.sv, 0, false, PT_VST_FIRST_CALL);
	pt_stepvals__missed(&F.sv, 0, false, PT_VST_FIRST_CALL);
	assert_int_equal(F.sv.role[PT_VROLE_TOKENS].missing[PT_VST_FIRST_CALL], 2);
	assert_int_equal(F.sv.role[PT_VROLE_KVLEN].missing[PT_VST_FIRST_CALL], 2);
	assert_int_equal(F.sv.role[PT_VROLE_BATCH].missing[PT_VST_FIRST_CALL], 0);
	/* at exit: only the return value */
	pt_stepvals__missed(&F.sv, 0, true, PT_VST_LOST);
	assert_int_equal(F.sv.role[PT_VROLE_BATCH].missing[PT_VST_LOST], 1);
	assert_int_equal(F.sv.role[PT_VROLE_TOKENS].missing[PT_VST_LOST], 0);
	assert_int_equal(F.sv.role[PT_VROLE_KVLEN].missing[PT_VST_LOST], 0);
	/* a reason beyond the table counts as unreadable */
	pt_stepvals__missed(&F.sv, 0, true, PT_VST_NREASONS);
	assert_int_equal(F.sv.role[PT_VROLE_BATCH].missing[PT_VST_FAULT], 1);
	/* not a spec: ignored */
	pt_stepvals__missed(&F.sv, -1, false, PT_VST_FIRST_CALL);
	pt_stepvals__missed(&F.sv, 1, false, PT_VST_FIRST_CALL);
	pt_stepvals__missed(&F.sv, 1000000, true, PT_VST_LOST);
	assert_int_equal(F.sv.role[PT_VROLE_TOKENS].missing[PT_VST_FIRST_CALL], 2);
	assert_int_equal(F.sv.role[PT_VROLE_BATCH].missing[PT_VST_LOST], 1);
	assert_int_equal(F.sv.role[PT_VROLE_TOKENS].read, 0);
	teardown(state);

	/* count expressions miss in their own entry */
	setup_text("step native:exe:step kv_len=arg0\ncount tokens native:exe:sample ret\n"
		   "count tokens native:exe:other arg2\n");
	assert_int_equal(F.sv.ncounts, 2);
	pt_stepvals__missed(&F.sv, 1, true, PT_VST_LOST);
	pt_stepvals__missed(&F.sv, 1, false, PT_VST_LOST); /* ret: not at entry */
	pt_stepvals__missed(&F.sv, 2, false, PT_VST_FIRST_CALL);
	assert_int_equal(F.sv.counts[0].missing[PT_VST_LOST], 1);
	assert_int_equal(F.sv.counts[0].missing[PT_VST_FIRST_CALL], 0);
	assert_int_equal(F.sv.counts[1].missing[PT_VST_FIRST_CALL], 1);
	assert_int_equal(F.sv.counts[1].missing[PT_VST_LOST], 0);
	assert_int_equal(F.sv.role[PT_VROLE_KVLEN].missing[PT_VST_LOST], 0);

	assert_string_equal(pt_stepvals__reason_name(PT_VST_FIRST_CALL), "first_call");
	assert_string_equal(pt_stepvals__reason_name(PT_VST_LOST), "lost");
	assert_string_equal(pt_stepvals__reason_name(PT_VST_NONAME), "no_such_argument");
	assert_string_equal(pt_stepvals__reason_name(PT_VST_TRUNC), "list_too_long");
	assert_string_equal(pt_stepvals__reason_name(PT_VST_NREASONS), "?");
}

static const char pct_cfg[] = "step py:m.Engine.step kv_len=p90(arg:seqs) tokens=len(arg:reqs) "
			      "batch=max(ret)\nset kv_bins 0,100,1000\n";

static void test_percentile_tail(void **state)
{
	static const int64_t a[] = { 50, 300, 120, 900, 10 }; /* p90: 900 */
	static const int64_t b[] = { 1000, 9000, 2000, 8000, 3000, 7000, 4000, 6000, 5000, 10000 };
	static const int64_t bl[] = { 2, 7, 5 };
	struct pt_val v[2];

	setup_text(pct_cfg);
	rec(PT_REC_ENTRY, 1, F_STEP, 0, 0, 0);
	v[0] = L(a, 5);
	v[1] = S(5);
	vals_e(0, 1, ENTRY, v, 2, a, 5);
	v[0] = U();
	v[1] = U();
	{
		struct pt_val w[3] = { U(), U(), L(bl, 3) };

		vals_e(0, 1, EXIT, w, 3, NULL, 0);
	}
	rec(PT_REC_EXIT, 1, F_STEP, 0, 0, 1000);

	rec(PT_REC_ENTRY, 1, F_STEP, 0, 2000, 0);
	v[0] = L(b, 10); /* p90: rank 9 of 1000..10000 = 9000 */
	v[1] = S(10);
	vals_e(0, 1, ENTRY, v, 2, b, 10);
	rec(PT_REC_EXIT, 1, F_STEP, 0, 2000, 4000);

	/* the tail does not match the list: not read */
	rec(PT_REC_ENTRY, 1, F_STEP, 0, 5000, 0);
	v[0] = L(a, 5);
	v[1] = S(1);
	vals_e(0, 1, ENTRY, v, 2, a, 4);
	rec(PT_REC_EXIT, 1, F_STEP, 0, 5000, 5100);

	/* an empty list has no percentile */
	rec(PT_REC_ENTRY, 1, F_STEP, 0, 6000, 0);
	v[0] = L(NULL, 0);
	v[1] = S(0);
	vals_e(0, 1, ENTRY, v, 2, NULL, 0);
	rec(PT_REC_EXIT, 1, F_STEP, 0, 6000, 6100);
	pt_agg__finish(F.agg);

	assert_int_equal(F.sv.steps, 4);
	assert_int_equal(F.sv.kv_steps, 2);
	assert_dbl(F.sv.kv_sum, 900 + 9000);
	assert_int_equal(F.sv.role[PT_VROLE_KVLEN].missing[PT_VST_FAULT], 1);
	assert_int_equal(F.sv.role[PT_VROLE_KVLEN].missing[PT_VST_TYPE], 1);
	assert_int_equal(F.sv.tok_steps, 4);
	assert_dbl(F.sv.tokens, 16);
	assert_int_equal(F.sv.batch_steps, 1);
	assert_dbl(F.sv.batch_sum, 7);
	check_bin(0, 0, 100, 0, 0, 0, 0, 0);
	check_bin(1, 100, 1000, 1, 1000, 5, 1, 1000);
	check_bin(2, 1000, UINT64_MAX, 1, 2000, 10, 1, 2000);
	assert_int_equal(F.sv.bad_records, 0);
}

static void test_kv_len_reduce(void **state)
{
	static const int64_t e[] = { 300, 100, 777, 200 };
	struct pt_val v[1];

	/* a bare kv_len list, reduced by kv_len_reduce; an int as it is */
	setup_text("step py:m.Engine.step kv_len=arg:seqs\nset kv_len_reduce max\n");
	rec(PT_REC_ENTRY, 1, F_STEP, 0, 0, 0);
	VALS(0, 1, ENTRY, L(e, 4));
	rec(PT_REC_EXIT, 1, F_STEP, 0, 0, 10);
	rec(PT_REC_ENTRY, 1, F_STEP, 0, 20, 0);
	VALS(0, 1, ENTRY, S(300));
	rec(PT_REC_EXIT, 1, F_STEP, 0, 20, 30);
	pt_agg__finish(F.agg);
	assert_dbl(F.sv.kv_sum, 777 + 300);
	assert_int_equal(F.sv.kv_steps, 2);
	teardown(state);

	setup_text("step py:m.Engine.step kv_len=arg:seqs\nset kv_len_reduce p50\n");
	rec(PT_REC_ENTRY, 1, F_STEP, 0, 0, 0);
	v[0] = L(e, 4); /* 100 200 300 777: rank 2 */
	vals_e(0, 1, ENTRY, v, 1, e, 4);
	rec(PT_REC_EXIT, 1, F_STEP, 0, 0, 10);
	pt_agg__finish(F.agg);
	assert_dbl(F.sv.kv_sum, 200);
	teardown(state);

	setup_text("step py:m.Engine.step kv_len=arg:seqs\n"); /* mean */
	rec(PT_REC_ENTRY, 1, F_STEP, 0, 0, 0);
	VALS(0, 1, ENTRY, L(e, 4));
	rec(PT_REC_EXIT, 1, F_STEP, 0, 0, 10);
	pt_agg__finish(F.agg);
	assert_dbl(F.sv.kv_sum, 344.25);
}

static void test_outside_step(void **state)
{
	setup_text(native_cfg);
	/* an ENTRY record lost: its values find no step open */
	VALS(0, 1, ENTRY, S(10), S(100));
	VALS(0, 1, EXIT, U(), U(), S(4));
	rec(PT_REC_EXIT, 1, F_STEP, 0, 0, 100);
	/* values keep coming after the step ends */
	native_step(1, 200, 300, S(1), S(2), S(3));
	VALS(0, 1, EXIT, U(), U(), S(4));
	pt_agg__finish(F.agg);

	assert_int_equal(F.sv.role[PT_VROLE_TOKENS].read, 2);
	assert_int_equal(F.sv.role[PT_VROLE_TOKENS].outside, 1);
	assert_int_equal(F.sv.role[PT_VROLE_KVLEN].outside, 1);
	assert_int_equal(F.sv.role[PT_VROLE_BATCH].read, 3);
	assert_int_equal(F.sv.role[PT_VROLE_BATCH].outside, 2);
	assert_int_equal(F.sv.steps, 1);
	assert_dbl(F.sv.tokens, 1);
	assert_dbl(F.sv.batch_sum, 3);
}

/* Two threads: each thread's values go to its own step. */
static void test_threads(void **state)
{
	setup_text(native_cfg);
	rec(PT_REC_ENTRY, 1, F_STEP, 0, 0, 0);
	rec(PT_REC_ENTRY, 2, F_STEP, 0, 10, 0);
	VALS(0, 2, ENTRY, S(20), S(2000));
	VALS(0, 1, ENTRY, S(10), S(100));
	VALS(0, 1, EXIT, U(), U(), S(1));
	rec(PT_REC_EXIT, 1, F_STEP, 0, 0, 100);
	VALS(0, 2, EXIT, U(), U(), S(2));
	rec(PT_REC_EXIT, 2, F_STEP, 0, 10, 410);
	pt_agg__finish(F.agg);

	assert_int_equal(F.sv.steps, 2);
	check_bin(0, 0, 512, 1, 100, 10, 1, 100);
	check_bin(2, 1024, UINT64_MAX, 1, 400, 20, 1, 400);
	assert_dbl(F.sv.batch_sum, 3);
}

static void test_malformed(void **state)
{
	struct pt_rec_vals *r;
	size_t size;
	struct pt_val v[2] = { S(1), S(2) };
	int64_t e[2] = { 1, 2 };
	void *tiny;

	setup_text(pct_cfg);
	rec(PT_REC_ENTRY, 1, F_STEP, 0, 0, 0);

	/* shorter than the header: the buffer is only 8 bytes, nothing past
	 * it may be read */
	tiny = calloc(1, 8);
	assert_non_null(tiny);
	pt_stepvals__record(&F.sv, F.agg, 0, tiny, 8);
	free(tiny);
	r = mkvals(1, ENTRY, v, 2, NULL, 0, &size);
	pt_stepvals__record(&F.sv, F.agg, 0, r, 0);
	pt_stepvals__record(&F.sv, F.agg, 0, r, size - 1);
	assert_int_equal(F.sv.bad_records, 3);

	/* more elements than BPF ever sends */
	r->nelem = PT_VAL_MAX_ELEMS + 1;
	pt_stepvals__record(&F.sv, F.agg, 0, r, size);
	r->nelem = UINT32_MAX;
	pt_stepvals__record(&F.sv, F.agg, 0, r, size);
	assert_int_equal(F.sv.bad_records, 5);

	/* elements beyond the record's size */
	r->nelem = 1;
	pt_stepvals__record(&F.sv, F.agg, 0, r, size);
	assert_int_equal(F.sv.bad_records, 6);
	free(r);
	r = mkvals(1, ENTRY, v, 2, e, 2, &size);
	pt_stepvals__record(&F.sv, F.agg, 0, r, size - 8);
	r->nelem = 3;
	pt_stepvals__record(&F.sv, F.agg, 0, r, size);
	assert_int_equal(F.sv.bad_records, 8);

	/* not a spec */
	r->nelem = 2;
	pt_stepvals__record(&F.sv, F.agg, -1, r, size);
	pt_stepvals__record(&F.sv, F.agg, 1, r, size);
	pt_stepvals__record(&F.sv, F.agg, INT32_MAX, r, size);
	assert_int_equal(F.sv.bad_records, 11);
	free(r);

	/* nothing of them reached the step */
	rec(PT_REC_EXIT, 1, F_STEP, 0, 0, 100);
	pt_agg__finish(F.agg);
	assert_int_equal(F.sv.steps, 1);
	assert_int_equal(F.sv.tok_steps, 0);
	assert_int_equal(F.sv.kv_steps, 0);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(F.sv.role[k].read, 0);
		for (int m = 0; m < PT_VST_NREASONS; m++)
			assert_int_equal(F.sv.role[k].missing[m], 0);
	}

	/* the largest well-formed record: a full tail */
	teardown(state);
	setup_text(pct_cfg);
	{
		int64_t *big = malloc(PT_VAL_MAX_ELEMS * sizeof(*big));

		assert_non_null(big);
		for (int i = 0; i < PT_VAL_MAX_ELEMS; i++)
			big[i] = PT_VAL_MAX_ELEMS - i; /* 4096..1 */
		rec(PT_REC_ENTRY, 1, F_STEP, 0, 0, 0);
		v[0] = L(big, PT_VAL_MAX_ELEMS);
		v[1] = S(1);
		vals_e(0, 1, ENTRY, v, 2, big, PT_VAL_MAX_ELEMS);
		rec(PT_REC_EXIT, 1, F_STEP, 0, 0, 100);
		free(big);
	}
	pt_agg__finish(F.agg);
	assert_int_equal(F.sv.bad_records, 0);
	assert_dbl(F.sv.kv_sum, 3687); /* rank ceil(0.9 * 4096) = 3687 */
}

static void test_bpf_spec(void **state)
{
	struct pt_val_spec s;

	setup_text(pct_cfg);
	memset(&s, 0xab, sizeof(s));
	pt_stepvals__bpf_spec(&F.sv, 0, &s);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.pad, 0);
	assert_int_equal(s.e[0].src, PT_VSRC_PYARG);
	assert_int_equal(s.e[0].op, PT_VOP_ELEMS);
	assert_int_equal(s.e[1].src, PT_VSRC_PYARG);
	assert_int_equal(s.e[1].op, PT_VOP_LEN);
	assert_int_equal(s.e[2].src, PT_VSRC_PYRET);
	assert_int_equal(s.e[2].op, PT_VOP_AGG);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(s.e[k].argn, 0);
		assert_int_equal(s.e[k].width, 0);
	}
	teardown(state);

	setup_text("bucket x.y native:exe:helper\nstep native:exe:step kv_len=arg3 batch=ret\n"
		   "count tokens native:exe:sample arg5\n");
	memset(&s, 0xab, sizeof(s));
	pt_stepvals__bpf_spec(&F.sv, 0, &s); /* the bucket probe: no values */
	assert_int_equal(s.n, 0);
	for (size_t i = 0; i < sizeof(s); i++)
		assert_int_equal(((unsigned char *)&s)[i], 0);
	pt_stepvals__bpf_spec(&F.sv, 1, &s);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.e[0].src, PT_VSRC_ARG);
	assert_int_equal(s.e[0].argn, 3);
	assert_int_equal(s.e[0].op, PT_VOP_INT);
	assert_int_equal(s.e[1].src, PT_VSRC_RET);
	assert_int_equal(s.e[1].op, PT_VOP_INT);
	assert_int_equal(s.e[2].src, 0);
	assert_int_equal(s.e[2].op, 0);
	pt_stepvals__bpf_spec(&F.sv, 2, &s);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.e[0].src, PT_VSRC_ARG);
	assert_int_equal(s.e[0].argn, 5);
	assert_int_equal(s.e[0].op, PT_VOP_INT);
	teardown(state);

	/* a bare kv_len follows kv_len_reduce */
	setup_text("step py:m.E.step kv_len=ret\nset kv_len_reduce p90\n");
	pt_stepvals__bpf_spec(&F.sv, 0, &s);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.e[0].src, PT_VSRC_PYRET);
	assert_int_equal(s.e[0].op, PT_VOP_AUTO_ELEMS);
	teardown(state);
	setup_text("step py:m.E.step kv_len=ret\nset kv_len_reduce sum\n");
	pt_stepvals__bpf_spec(&F.sv, 0, &s);
	assert_int_equal(s.e[0].op, PT_VOP_AUTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_init, teardown),
		cmocka_unit_test_teardown(test_native_steps_and_bins, teardown),
		cmocka_unit_test_teardown(test_step_direct, teardown),
		cmocka_unit_test_teardown(test_count_tokens, teardown),
		cmocka_unit_test_teardown(test_count_only, teardown),
		cmocka_unit_test_teardown(test_warmup, teardown),
		cmocka_unit_test_teardown(test_statuses, teardown),
		cmocka_unit_test_teardown(test_missed, teardown),
		cmocka_unit_test_teardown(test_percentile_tail, teardown),
		cmocka_unit_test_teardown(test_kv_len_reduce, teardown),
		cmocka_unit_test_teardown(test_outside_step, teardown),
		cmocka_unit_test_teardown(test_threads, teardown),
		cmocka_unit_test_teardown(test_malformed, teardown),
		cmocka_unit_test_teardown(test_bpf_spec, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
