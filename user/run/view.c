// SPDX-License-Identifier: BSD-2-Clause
/*
 * Views (struct view: the figures of one process, or of all of them
 * merged): their aggregators, made and freed. The functions they know
 * are declared by the function table (funcs.c).
 *
 * --interval gives each process a window view too, fed with the same
 * records as its own: made here with every function the process knows,
 * written and made afresh at each window's end (window.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "run.h"
#include "probecost.h"
#include "view.h"

#include "aggregate/agg.h"
#include "aggregate/bursts.h"
#include "aggregate/overhead.h"
#include "aggregate/stacks.h"
#include "aggregate/stepvals.h"
#include "attach/resolve.h"

int pt_run__new_view(struct run *r, struct view *v,
		     void (*step_cb)(void *ctx, const struct pt_step *s), void *ctx)
{
	struct pt_agg_opts o = { 0 };
	struct pt_ovh_opts oo = { .nbuckets = r->cfg.nbuckets, .step_mode = r->cfg.step_mode };

	o.nbuckets = r->cfg.nbuckets;
	o.step_mode = r->cfg.step_mode;
	o.warmup_steps = r->cfg.warmup_steps;
	o.on_step = step_cb;
	o.ctx = ctx;
	if (pt_stepvals__init(&v->sv, &r->cfg))
		return -ENOMEM;
	v->agg = pt_agg__new(&o);
	v->runs = pt_bursts__new(r->cfg.nbuckets, (uint64_t)r->cfg.run_gap_ms * 1000000,
				 r->cfg.warmup_runs);
	v->ovh = pt_ovh__new(&oo);
	return v->agg && v->runs && v->ovh ? 0 : -ENOMEM;
}

void pt_run__free_view(struct view *v)
{
	pt_agg__free(v->agg);
	pt_ovh__free(v->ovh);
	pt_bursts__free(v->runs);
	pt_stacks__free(v->stk);
	pt_stepvals__free(&v->sv);
}

static void window_step(void *ctx, const struct pt_step *s)
{
	struct proc *p = ctx;

	pt_stepvals__step(&p->window_view->sv, s);
	pt_ovh__step(p->window_view->ovh, s);
}

int pt_run__window_declare(struct proc *p, const struct pt_func *f)
{
	if (!p->window_view)
		return 0;
	if (pt_agg__set_func(p->window_view->agg, (uint32_t)f->fid, f->is_step, f->bucket_mask) ||
	    pt_run__declare_cost(p, f, p->window_view->ovh, (uint32_t)f->fid))
		return -ENOMEM;
	return 0;
}

/* A fresh window view with every function p knows. */
static int window_new(struct proc *p)
{
	struct view *v = calloc(1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	if (pt_run__new_view(p->run, v, window_step, p)) {
		pt_run__free_view(v);
		free(v);
		return -ENOMEM;
	}
	p->window_view = v;
	for (size_t i = 0; i < p->nfs; i++)
		if (pt_run__window_declare(p, pt_resolver__func(p->res, i)))
			return -ENOMEM;
	return 0;
}

int pt_run__window_open(struct proc *p)
{
	if (!p->run->env.interval_s || p->window_view)
		return 0;
	return window_new(p);
}

void pt_run__window_thread_exit(struct proc *p, uint32_t tid)
{
	if (!p->window_view)
		return;
	pt_ovh__thread_exit(p->window_view->ovh, tid);
	pt_agg__thread_exit(p->window_view->agg, tid);
}

void pt_run__window_record(struct proc *p, const struct pt_rec *rec)
{
	if (!p->window_view)
		return;
	pt_ovh__record(p->window_view->ovh, rec);
	pt_agg__record(p->window_view->agg, rec);
}
