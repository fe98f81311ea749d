// SPDX-License-Identifier: BSD-2-Clause
/*
 * A process's function table: what the run keeps of each function its
 * resolver found (struct fstate: attached or why not, and when; mfid: its
 * fid in the merged view), grown as the resolver finds more, and each
 * function made known to the figures: declared, with its step and bucket
 * roles, in the process's views and, with several processes, matched
 * into the merged view's functions (run->merged_funcs) by probe, object
 * and symbol; marked attached; and what BPF reads at its calls. Native
 * functions come here from pt_run__attach_new (procs.c), Python ones
 * found at run time through pt_run__sync_py_funcs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "probecost.h"
#include "view.h"
#include "funcs.h"

#include "aggregate/agg.h"
#include "aggregate/stacks.h"
#include "aggregate/stepvals.h"
#include "attach/attach.h"
#include "attach/resolve.h"
#include "bpf/proftrace.h"
#include "python/pyprobe.h"
#include "util/log.h"

/* Room for every function the resolver has now (new ones zeroed, in no
 * merged view yet). 0 or -ENOMEM. */
int pt_run__grow_fstate(struct proc *p)
{
	size_t n = pt_resolver__nfuncs(p->res);
	struct fstate *v;
	uint32_t *m;

	if (n <= p->nfs)
		return 0;
	v = realloc(p->fs, n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	p->fs = v;
	m = realloc(p->mfid, n * sizeof(*m));
	if (!m)
		return -ENOMEM;
	p->mfid = m;
	memset(v + p->nfs, 0, (n - p->nfs) * sizeof(*v));
	for (size_t i = p->nfs; i < n; i++)
		m[i] = PT_SFID_NONE;
	p->nfs = n;
	return 0;
}

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
		pt_msg("proftrace: warning: cannot set the values of %s: no tokens, kv_len or "
		       "batch from it\n",
		       f->symbol);
}

/* Python functions found at run time, by the frame probe or in samples:
 * the aggregators and the report learn about them. */
void pt_run__sync_py_funcs(struct proc *p)
{
	size_t before = p->nfs;

	if (pt_run__grow_fstate(p))
		return;
	for (size_t i = before; i < p->nfs; i++) {
		const struct pt_func *f = pt_resolver__func(p->res, i);

		if (!f->py)
			continue; /* native: pt_run__attach_new() does these */
		if (pt_run__declare_func(p, i))
			continue; /* out of memory: its records are ignored */
		pt_run__set_val_spec(p, f);
		pt_run__mark_attached(p, i);
		if (f->lines_spec >= 0 && p->v.stk)
			pt_stacks__want_lines(p->v.stk, (uint32_t)f->fid);
		if (f->lines_spec >= 0 && p->python.probe) {
			size_t len;

			/* read (and cached) now: by the time lines.txt is
			 * written the target may have exited */
			pt_pyprobe__source(p->python.probe, f->object, &len);
		}
		pt_vlog("proftrace: pid %d: python %s (%s:%u) is fid %d\n", p->tracee.pid,
			f->symbol, f->object, f->py_line, f->fid);
	}
}
