// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/view.c: a view made by pt_run__new_view from a run's config (parsed
 * from text) has its aggregators, set as the config says (buckets, step
 * mode, warmup steps, run gap); a counted step reaches its step callback
 * with its context, warmup steps do not; pt_run__free_view frees a view
 * made or never made. With --interval (env.interval_s), a process opened
 * by pt_run__open_proc (a child of this test, waiting) has a window view
 * with every function it knows, fed by pt_run__window_record as its own
 * view is (its steps reach the window's overhead and values), told of
 * functions found later and of threads that end; without it there is no
 * window view and the window calls do nothing.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "aggregate/agg.h"
#include "aggregate/bursts.h"
#include "aggregate/overhead.h"
#include "aggregate/stacks.h"
#include "aggregate/stepvals.h"
#include "attach/resolve.h"
#include "config/config.h"
#include "run/run.h"
#include "run/procs.h"
#include "run/view.h"
#include "runfx.h"

#define MS 1000000ull

/* What the targets files name in the child (this binary): noinline with
 * a body, so the symbols are there to resolve. */
RUNFX_VICTIM(view_step);
RUNFX_VICTIM(view_fwd);

static const char conf[] = "step native:exe:view_step tokens=arg0\n"
			   "bucket a.fwd native:exe:view_fwd\n"
			   "bucket a.py py:viewmod::work\n"
			   "set warmup_steps 1\n"
			   "set run_gap_ms 250\n";

static const char conf_iter[] = "step native:exe:view_step mode=iteration\n";

static void rec(struct pt_rec *r, uint32_t type, uint32_t tid, uint32_t fid, uint16_t depth,
		uint64_t t0, uint64_t t1)
{
	*r = (struct pt_rec){ .type = type,
			      .fid = fid,
			      .pid = tid,
			      .tid = tid,
			      .t_entry = t0,
			      .t_exit = type == PT_REC_EXIT ? t1 : 0,
			      .depth = depth };
}

/* A step call (fid step) from t to t + 10 ms on thread tid, with a call
 * of fid inner from t + 2 to t + 5 ms inside, each record to feed (in
 * the thread's time order). */
static void step_with(void (*feed)(void *ctx, const struct pt_rec *r), void *ctx, uint32_t tid,
		      uint32_t step, uint32_t inner, uint64_t t)
{
	struct pt_rec r;

	rec(&r, PT_REC_ENTRY, tid, step, 0, t, 0);
	feed(ctx, &r);
	rec(&r, PT_REC_ENTRY, tid, inner, 1, t + 2 * MS, 0);
	feed(ctx, &r);
	rec(&r, PT_REC_EXIT, tid, inner, 1, t + 2 * MS, t + 5 * MS);
	feed(ctx, &r);
	rec(&r, PT_REC_EXIT, tid, step, 0, t, t + 10 * MS);
	feed(ctx, &r);
}

static void to_agg(void *ctx, const struct pt_rec *r)
{
	pt_agg__record(ctx, r);
}

static void to_window(void *ctx, const struct pt_rec *r)
{
	pt_run__window_record(ctx, r);
}

/* What the step callback saw. */
struct seen {
	size_t nbuckets; /* the config's */
	unsigned int n;
	struct pt_step last;
	uint64_t last_fwd_ns; /* bucket 0 */
};

static void on_step(void *ctx, const struct pt_step *s)
{
	struct seen *w = ctx;

	w->n++;
	w->last = *s;
	w->last_fwd_ns = w->nbuckets ? s->bucket_ns[0] : 0;
}

/* ---- a view ---- */

/* Made as the config says; counted steps reach the callback with its
 * context, the warmup step does not. */
static void test_new_view(void **state)
{
	struct run *r = calloc(1, sizeof(*r));
	struct view v = { 0 };
	struct seen w = { 0 };

	assert_non_null(r);
	assert_int_equal(runfx__config(r, conf), 0);
	w.nbuckets = r->cfg.nbuckets;
	assert_int_equal(pt_run__new_view(r, &v, on_step, &w), 0);
	assert_non_null(v.agg);
	assert_non_null(v.runs);
	assert_non_null(v.ovh);
	assert_null(v.stk); /* sampled views only */
	assert_ptr_equal(v.sv.cfg, &r->cfg);
	assert_non_null(v.sv.role[PT_VROLE_TOKENS].probe);
	assert_int_equal(pt_bursts__gap_ns(v.runs), 250 * MS);
	assert_int_equal(pt_bursts__nbuckets(v.runs), 2);
	assert_int_equal(pt_agg__set_func(v.agg, 0, true, 0), 0);
	assert_int_equal(pt_agg__set_func(v.agg, 1, false, 1), 0);
	step_with(to_agg, v.agg, 7, 0, 1, 10 * MS);
	assert_int_equal(w.n, 0); /* warmup_steps 1 */
	assert_int_equal(pt_agg__steps(v.agg)->warmup, 1);
	step_with(to_agg, v.agg, 7, 0, 1, 30 * MS);
	assert_int_equal(w.n, 1);
	assert_int_equal(w.last.index, 0);
	assert_int_equal(w.last.tid, 7);
	assert_int_equal(w.last.t_start, 30 * MS);
	assert_int_equal(w.last.t_end, 40 * MS);
	assert_int_equal(w.last_fwd_ns, 3 * MS);
	assert_int_equal(w.last.other_ns, 7 * MS);
	step_with(to_agg, v.agg, 8, 0, 1, 50 * MS);
	assert_int_equal(w.n, 2);
	assert_int_equal(w.last.index, 1);
	assert_int_equal(w.last.tid, 8);
	pt_run__free_view(&v);
	pt_config__free(&r->cfg);
	free(r);
}

/* mode=iteration: a step runs from one entry to the next. */
static void test_new_view_iteration(void **state)
{
	struct run *r = calloc(1, sizeof(*r));
	struct view v = { 0 };
	struct seen w = { 0 };
	struct pt_rec e;

	assert_non_null(r);
	assert_int_equal(runfx__config(r, conf_iter), 0);
	assert_int_equal(pt_run__new_view(r, &v, on_step, &w), 0);
	assert_int_equal(pt_agg__set_func(v.agg, 0, true, 0), 0);
	for (uint64_t t = 10; t <= 30; t += 10) {
		rec(&e, PT_REC_ENTRY, 7, 0, 0, t * MS, 0);
		pt_agg__record(v.agg, &e);
		rec(&e, PT_REC_EXIT, 7, 0, 0, t * MS, (t + 1) * MS);
		pt_agg__record(v.agg, &e);
	}
	assert_int_equal(w.n, 2);
	assert_int_equal(w.last.t_start, 20 * MS);
	assert_int_equal(w.last.t_end, 30 * MS);
	pt_run__free_view(&v);
	pt_config__free(&r->cfg);
	free(r);
}

/* A view never made (a process that failed before it) frees, as does
 * one with stacks. */
static void test_free_view(void **state)
{
	struct run *r = calloc(1, sizeof(*r));
	struct view v = { 0 };

	assert_non_null(r);
	pt_run__free_view(&v);
	assert_int_equal(runfx__config(r, conf_iter), 0);
	assert_int_equal(pt_run__new_view(r, &v, NULL, NULL), 0);
	v.stk = pt_stacks__new();
	assert_non_null(v.stk);
	pt_run__free_view(&v);
	pt_config__free(&r->cfg);
	free(r);
}

/* ---- the window view (--interval) ---- */

struct fx {
	struct run r;
	pid_t child;
	struct proc *p;
	int step, fwd; /* fids */
};

static int open_with(void **state, double interval_s)
{
	struct fx *x = calloc(1, sizeof(*x));
	char err[512];

	if (!x || runfx__config(&x->r, conf))
		return -1;
	x->r.env.interval_s = interval_s;
	x->child = runfx__child();
	if (x->child < 0 || pt_run__open_proc(&x->r, x->child, true, &x->p, err, sizeof(err))) {
		fprintf(stderr, "open_proc: %s\n", err);
		runfx__reap(x->child); /* no teardown after a failed setup */
		return -1;
	}
	x->step = x->fwd = -1;
	for (size_t i = 0; i < x->p->nfs; i++) {
		const char *s = pt_resolver__func(x->p->res, i)->symbol;

		if (!strcmp(s, "view_step"))
			x->step = (int)i;
		if (!strcmp(s, "view_fwd"))
			x->fwd = (int)i;
	}
	*state = x;
	if (x->step >= 0 && x->fwd >= 0)
		return 0;
	pt_run__free_proc(x->p);
	runfx__reap(x->child);
	return -1;
}

static int setup_window(void **state)
{
	return open_with(state, 1.0);
}

static int setup_no_window(void **state)
{
	return open_with(state, 0);
}

static int teardown(void **state)
{
	struct fx *x = *state;

	pt_run__free_proc(x->p);
	runfx__reap(x->child);
	pt_proctable__free(&x->r.procs);
	pt_config__free(&x->r.cfg);
	free(x);
	return 0;
}

/* The window view of an opened process knows every function it has, and
 * is fed as its own view is: its counted steps reach the window's
 * overhead and values (window_step), not the process's own view. */
static void test_window_view(void **state)
{
	struct fx *x = *state;
	struct proc *p = x->p;
	struct view *wv = p->window_view;
	uint64_t hits = 0;

	assert_non_null(wv);
	assert_int_equal(pt_run__window_open(p), 0);
	assert_ptr_equal(p->window_view, wv); /* one at a time */
	assert_int_equal(pt_agg__nfuncs(wv->agg), p->nfs);
	for (size_t i = 0; i < p->nfs; i++) {
		assert_non_null(pt_agg__func(wv->agg, (uint32_t)i));
		assert_non_null(pt_ovh__func(wv->ovh, (uint32_t)i));
	}
	step_with(to_window, p, 7, (uint32_t)x->step, (uint32_t)x->fwd, 10 * MS); /* warmup */
	step_with(to_window, p, 7, (uint32_t)x->step, (uint32_t)x->fwd, 30 * MS);
	assert_int_equal(pt_agg__steps(wv->agg)->dur.count, 1);
	assert_int_equal(pt_agg__bucket(wv->agg, 0)->total_ns, 3 * MS);
	assert_int_equal(pt_agg__func(wv->agg, (uint32_t)x->fwd)->dur.count, 2);
	assert_int_equal(pt_ovh__steps(wv->ovh)->count, 1);
	assert_int_equal(wv->sv.steps, 1);
	for (int k = 0; k < PT_SITE_NKINDS; k++)
		hits += pt_ovh__hits(wv->ovh, k);
	assert_int_equal(hits, 4);
	/* the process's own view is fed by the records' route, not here */
	assert_int_equal(pt_agg__health(p->v.agg)->records, 0);
	assert_int_equal(pt_agg__health(wv->agg)->records, 8);
}

/* A function found later is declared in the window view too; a thread
 * that ends is forgotten there. */
static void test_window_declare_and_thread_exit(void **state)
{
	struct fx *x = *state;
	struct proc *p = x->p;
	struct view *wv = p->window_view;
	size_t spec = 2; /* the py: line */
	struct pt_rec e;
	int fid;

	fid = pt_resolver__add_py(p->res, &spec, 1, "/srv/viewmod.py", "work", 3);
	assert_true(fid >= 0);
	assert_null(pt_agg__func(wv->agg, (uint32_t)fid));
	assert_int_equal(pt_run__window_declare(p, pt_resolver__func(p->res, (size_t)fid)), 0);
	assert_non_null(pt_agg__func(wv->agg, (uint32_t)fid));
	assert_non_null(pt_ovh__func(wv->ovh, (uint32_t)fid));
	/* a bucket there: the second */
	step_with(to_window, p, 7, (uint32_t)x->step, (uint32_t)fid, 10 * MS); /* warmup */
	step_with(to_window, p, 7, (uint32_t)x->step, (uint32_t)fid, 30 * MS);
	assert_int_equal(pt_agg__bucket(wv->agg, 1)->total_ns, 3 * MS);
	/* a thread with a step open ends: incomplete, and forgotten */
	rec(&e, PT_REC_ENTRY, 9, (uint32_t)x->step, 0, 50 * MS, 0);
	pt_run__window_record(p, &e);
	assert_int_equal(pt_agg__health(wv->agg)->threads, 2);
	pt_run__window_thread_exit(p, 9);
	assert_int_equal(pt_agg__health(wv->agg)->threads_ended, 1);
	assert_int_equal(pt_agg__steps(wv->agg)->incomplete, 1);
	pt_run__window_thread_exit(p, 9); /* gone already */
	assert_int_equal(pt_agg__health(wv->agg)->threads_ended, 1);
}

/* Without --interval: no window view, and the window calls do nothing. */
static void test_no_window(void **state)
{
	struct fx *x = *state;
	struct proc *p = x->p;
	struct pt_rec e;

	assert_null(p->window_view);
	assert_int_equal(pt_run__window_open(p), 0);
	assert_null(p->window_view);
	assert_int_equal(pt_run__window_declare(p, pt_resolver__func(p->res, 0)), 0);
	rec(&e, PT_REC_ENTRY, 7, (uint32_t)x->step, 0, 10 * MS, 0);
	pt_run__window_record(p, &e);
	pt_run__window_thread_exit(p, 7);
	assert_null(p->window_view);
	assert_int_equal(pt_agg__health(p->v.agg)->records, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_view),
		cmocka_unit_test(test_new_view_iteration),
		cmocka_unit_test(test_free_view),
		cmocka_unit_test_setup_teardown(test_window_view, setup_window, teardown),
		cmocka_unit_test_setup_teardown(test_window_declare_and_thread_exit, setup_window,
						teardown),
		cmocka_unit_test_setup_teardown(test_no_window, setup_no_window, teardown),
	};

	return cmocka_run_group_tests_name("view", tests, NULL, NULL);
}
