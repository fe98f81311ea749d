// SPDX-License-Identifier: BSD-2-Clause
/*
 * Views (struct view: the figures of one process, or of all of them
 * merged) and a process's functions as they know them: declared (with
 * their step and bucket roles) in its view and, with several processes,
 * matched into the merged view by probe, object and symbol; marked
 * attached; and what BPF reads at their calls.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

/* The merged view's fid of p's function f, added when new; -1: out of
 * memory. */
static int64_t merged_fid(struct run *r, struct proc *p, const struct pt_func *f)
{
	struct mfunc *v;

	for (size_t i = 0; i < r->nmerged_funcs; i++) {
		const struct pt_func *g =
			pt_resolver__func(r->merged_funcs[i].p->res, r->merged_funcs[i].fid);

		if (g->spec == f->spec && g->py == f->py && g->py_line == f->py_line &&
		    !strcmp(g->symbol, f->symbol) && !strcmp(g->object, f->object))
			return (int64_t)i;
	}
	v = realloc(r->merged_funcs, (r->nmerged_funcs + 1) * sizeof(*v));
	if (!v)
		return -1;
	r->merged_funcs = v;
	r->merged_funcs[r->nmerged_funcs] = (struct mfunc){ .p = p, .fid = f->fid };
	if (pt_agg__set_func(r->all.agg, (uint32_t)r->nmerged_funcs, f->is_step, f->bucket_mask))
		return -1;
	if (f->lines_spec >= 0 && r->all.stk)
		pt_stacks__want_lines(r->all.stk, (uint32_t)r->nmerged_funcs);
	return (int64_t)r->nmerged_funcs++;
}

/* Function i of p is known to the aggregators (and attached when
 * attached): declare it, and in the merged view. */
int pt_run__declare_func(struct proc *p, size_t i)
{
	const struct pt_func *f = pt_resolver__func(p->res, i);
	struct run *r = p->run;
	int64_t m;

	if (pt_agg__set_func(p->v.agg, (uint32_t)f->fid, f->is_step, f->bucket_mask) ||
	    pt_run__declare_cost(p, f, p->v.ovh, (uint32_t)f->fid) || pt_run__window_declare(p, f))
		return -ENOMEM;
	if (!r->multi)
		return 0;
	m = merged_fid(r, p, f);
	if (m < 0 || pt_run__declare_cost(p, f, r->all.ovh, (uint32_t)m))
		return -ENOMEM;
	p->mfid[i] = (uint32_t)m;
	return 0;
}

/* Function i of p has its probes now (or was found, for py:). */
void pt_run__mark_attached(struct proc *p, size_t i)
{
	struct run *r = p->run;

	p->fs[i].attached = true;
	p->fs[i].at_s = since_start_s(r);
	if (r->multi && !r->merged_funcs[p->mfid[i]].attached) {
		r->merged_funcs[p->mfid[i]].attached = true;
		r->merged_funcs[p->mfid[i]].at_s = p->fs[i].at_s;
	}
}

/* What BPF reads at f's calls, when its probe has values. */
void pt_run__set_val_spec(struct proc *p, const struct pt_func *f)
{
	struct pt_val_spec vs;

	if (f->vals_spec < 0 || !p->run->att)
		return;
	pt_stepvals__bpf_spec(&p->v.sv, f->vals_spec, &vs);
	if (pt_attach__val_spec(p->run->att, PT_FID_MAKE(p->idx, f->fid), &vs))
		fprintf(stderr,
			"proftrace: warning: cannot set the values of %s: no tokens, "
			"kv_len or batch from it\n",
			f->symbol);
}

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
