// SPDX-License-Identifier: BSD-2-Clause
/*
 * Views (struct view: the figures of one process, or of all of them
 * merged): their aggregators, made and freed. The functions they know
 * are declared by the function table (funcs.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "run.h"

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
