// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_ovh: the probes' cost nested in each interval (model in overhead.h).
 *
 * Each thread keeps one running sum, the cost of every probed call that
 * completed on it so far; an interval's nested cost is the sum at its end
 * less the sum at its start. Records of a thread come in time order, so
 * one pass suffices, as in agg.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "overhead.h"

static const char *const kind_names[PT_SITE_NKINDS] = {
	[PT_SITE_EMULATED] = "emulated",
	[PT_SITE_NOP5] = "nop5",
	[PT_SITE_SSTEP] = "single-step",
	[PT_SITE_AGENT] = "python-agent",
	[PT_SITE_FRAME] = "frame-probe",
	[PT_SITE_SAMPLE] = "sample",
	[PT_SITE_FRAME_UNNAMED] = "frame-probe-unnamed",
};

const char *pt_site_kind__str(enum pt_site_kind k)
{
	return (unsigned int)k < PT_SITE_NKINDS ? kind_names[k] : "unknown";
}

#define NO_FID UINT32_MAX
#define OVH_MAX_FID (1u << 24)

struct ofn {
	uint64_t bmask;
	double pair, self;
	enum pt_site_kind kind;
	bool declared, is_step;
};

struct oframe {
	uint32_t fid;
	double c0;
	uint64_t t_in; /* its ENTRY's time */
};

struct othread {
	uint32_t tid;
	double c;	  /* cost of the calls completed on it so far */
	uint32_t unnamed; /* pt_rec.unnamed of its last record */
	bool seen;	  /* a record came: unnamed is a baseline */
	uint32_t nstep;	  /* open calls of step functions */
	double step_c0;	  /* c when the open step began */
	uint64_t step_t0; /* its start */
	bool began;	  /* a step began on it (iteration: one is open) */
	double *pend;	  /* nb: bucket cost in the open step */
	uint32_t *cnt;	  /* nb: open calls of each bucket's functions */
	double *snap;	  /* nb: c when each bucket's outermost call began */
	/* the step that closed last, until on_step says it counts */
	bool closed;
	uint64_t closed_t0;
	double closed_cost;
	double *closed_pend; /* nb */
	struct oframe stack[PT_MAX_DEPTH];
};

struct pt_ovh {
	struct pt_ovh_opts opts;
	size_t nb;
	struct ofn *fn;
	struct pt_ovh_func *fst;
	size_t nfn, cap;
	struct othread **th;
	size_t nth, cap_th;
	struct othread *last;
	double step_cost, *bucket_cost; /* nb + 1 */
	double unnamed_ns;
	struct pt_dist steps;
	uint64_t hits[PT_SITE_NKINDS];
};

struct pt_ovh *pt_ovh__new(const struct pt_ovh_opts *opts)
{
	struct pt_ovh *o;

	if (!opts || opts->nbuckets > PT_MAX_BUCKETS)
		return NULL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->opts = *opts;
	o->nb = opts->nbuckets;
	o->bucket_cost = calloc(o->nb + 1, sizeof(*o->bucket_cost));
	if (!o->bucket_cost) {
		free(o);
		return NULL;
	}
	pt_dist__init(&o->steps);
	return o;
}

void pt_ovh__free(struct pt_ovh *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->nth; i++)
		free(o->th[i]);
	free(o->th);
	free(o->fn);
	for (size_t i = 0; o->fst && i < o->cap; i++)
		pt_dist__free(&o->fst[i].corrected);
	free(o->fst);
	free(o->bucket_cost);
	pt_dist__free(&o->steps);
	free(o);
}

int pt_ovh__set_func(struct pt_ovh *o, uint32_t fid, bool is_step, uint64_t bucket_mask,
		     enum pt_site_kind kind, double pair_ns, double self_ns)
{
	if (!o || fid >= OVH_MAX_FID || (unsigned int)kind >= PT_SITE_NKINDS)
		return -EINVAL;
	if (fid >= o->cap) {
		size_t cap = o->cap ? o->cap : 16;
		struct ofn *fn;
		struct pt_ovh_func *fst;

		while (cap <= fid)
			cap *= 2;
		fn = realloc(o->fn, cap * sizeof(*fn));
		if (!fn)
			return -ENOMEM;
		o->fn = fn;
		fst = realloc(o->fst, cap * sizeof(*fst));
		if (!fst)
			return -ENOMEM;
		o->fst = fst;
		memset(o->fn + o->cap, 0, (cap - o->cap) * sizeof(*fn));
		memset(o->fst + o->cap, 0, (cap - o->cap) * sizeof(*fst));
		o->cap = cap;
	}
	o->fn[fid] = (struct ofn){ .bmask = bucket_mask,
				   .pair = pair_ns,
				   .self = self_ns,
				   .kind = kind,
				   .declared = true,
				   .is_step = is_step };
	if (fid >= o->nfn)
		o->nfn = fid + 1;
	return 0;
}

void pt_ovh__set_unnamed_cost(struct pt_ovh *o, double ns)
{
	if (o)
		o->unnamed_ns = ns > 0 ? ns : 0;
}

void pt_ovh__thread_exit(struct pt_ovh *o, uint32_t tid)
{
	for (size_t i = 0; i < o->nth; i++) {
		if (o->th[i]->tid != tid)
			continue;
		if (o->last == o->th[i])
			o->last = NULL;
		free(o->th[i]);
		o->th[i] = o->th[--o->nth];
		return;
	}
}

static struct othread *thread_get(struct pt_ovh *o, uint32_t tid)
{
	struct othread *t;
	size_t nb = o->nb;

	if (o->last && o->last->tid == tid)
		return o->last;
	for (size_t i = 0; i < o->nth; i++)
		if (o->th[i]->tid == tid)
			return o->last = o->th[i];
	if (o->nth == o->cap_th) {
		size_t cap = o->cap_th ? o->cap_th * 2 : 16;
		struct othread **v = realloc(o->th, cap * sizeof(*v));

		if (!v)
			return NULL;
		o->th = v;
		o->cap_th = cap;
	}
	/* one block: the thread, then its four per-bucket arrays */
	t = calloc(1, sizeof(*t) + nb * (3 * sizeof(double) + sizeof(uint32_t)));
	if (!t)
		return NULL;
	t->tid = tid;
	t->pend = (double *)(t + 1);
	t->snap = t->pend + nb;
	t->closed_pend = t->snap + nb;
	t->cnt = (uint32_t *)(t->closed_pend + nb);
	for (size_t i = 0; i < PT_MAX_DEPTH; i++)
		t->stack[i].fid = NO_FID;
	o->th[o->nth++] = t;
	return o->last = t;
}

static void close_step(struct pt_ovh *o, struct othread *t, double cost)
{
	t->closed = true;
	t->closed_t0 = t->step_t0;
	t->closed_cost = cost;
	memcpy(t->closed_pend, t->pend, o->nb * sizeof(*t->pend));
}

static void open_step(struct pt_ovh *o, struct othread *t, uint64_t t0)
{
	t->step_c0 = t->c;
	t->step_t0 = t0;
	t->began = true;
	memset(t->pend, 0, o->nb * sizeof(*t->pend));
}

static void ovh_entry(struct pt_ovh *o, struct othread *t, const struct pt_rec *r,
		      const struct ofn *fn)
{
	if (r->depth >= PT_MAX_DEPTH)
		return;
	t->stack[r->depth] = (struct oframe){ .fid = r->fid, .c0 = t->c, .t_in = r->t_entry };
	if (fn->is_step) {
		if (!t->nstep) {
			if (o->opts.step_mode == PT_STEP_ITERATION && t->began)
				close_step(o, t, t->c - t->step_c0);
			open_step(o, t, r->t_entry);
		}
		t->nstep++;
	}
	for (uint64_t m = fn->bmask; m; m &= m - 1) {
		unsigned int b = __builtin_ctzll(m);

		if (b < o->nb && !t->cnt[b]++)
			t->snap[b] = t->c;
	}
}

static void ovh_exit(struct pt_ovh *o, struct othread *t, const struct pt_rec *r,
		     const struct ofn *fn)
{
	struct pt_ovh_func *fs = &o->fst[r->fid];
	struct oframe *f = r->depth < PT_MAX_DEPTH ? &t->stack[r->depth] : NULL;
	bool paired = f && f->fid == r->fid && !(r->flags & PT_RECF_ENTRY_LOST);
	double nested = paired ? t->c - f->c0 : 0;

	o->hits[fn->kind]++;
	fs->calls++;
	fs->cost_ns += fn->self + (nested > 0 ? nested : 0);
	if (paired) {
		double corr =
			(double)(r->t_exit - r->t_entry) - fn->self - (nested > 0 ? nested : 0);

		/* out of memory, only this call is missing from it */
		if (r->t_exit >= r->t_entry)
			(void)pt_dist__add(&fs->corrected, corr > 0 ? (uint64_t)corr : 0);
		for (uint64_t m = fn->bmask; m; m &= m - 1) {
			unsigned int b = __builtin_ctzll(m);

			if (b < o->nb && t->cnt[b] && !--t->cnt[b])
				t->pend[b] += t->c - t->snap[b] + fn->self;
		}
		if (fn->is_step && t->nstep && !--t->nstep && o->opts.step_mode == PT_STEP_CALL) {
			/* as the aggregator does (agg.c, rebase()): the step
			 * starts where its body did */
			if ((r->flags & PT_RECF_AGENT_ENTRY) && t->step_t0 == f->t_in)
				t->step_t0 = r->t_entry;
			close_step(o, t, t->c - t->step_c0 + fn->self);
		}
		f->fid = NO_FID;
	}
	t->c += fn->pair;
}

void pt_ovh__record(struct pt_ovh *o, const struct pt_rec *r)
{
	const struct ofn *fn;
	struct othread *t;

	if (!o || (r->type != PT_REC_ENTRY && r->type != PT_REC_EXIT) || r->fid >= o->nfn)
		return;
	fn = &o->fn[r->fid];
	if (!fn->declared)
		return;
	t = thread_get(o, r->tid);
	if (!t)
		return;
	/* The unnamed frames trapped since the thread's last record fell
	 * inside whatever was open then: charged before this record opens or
	 * closes anything. The first record is only a baseline. */
	if (t->seen) {
		uint32_t n = r->unnamed - t->unnamed; /* modulo 2^32 */

		o->hits[PT_SITE_FRAME_UNNAMED] += n;
		t->c += (double)n * o->unnamed_ns;
	}
	t->unnamed = r->unnamed;
	t->seen = true;
	if (r->type == PT_REC_ENTRY)
		ovh_entry(o, t, r, fn);
	else
		ovh_exit(o, t, r, fn);
}

void pt_ovh__step(struct pt_ovh *o, const struct pt_step *s)
{
	struct othread *t;
	double sum = 0, dur;

	if (!o)
		return;
	t = thread_get(o, s->tid);
	if (!t || !t->closed || t->closed_t0 != s->t_start)
		return;
	t->closed = false;
	o->step_cost += t->closed_cost;
	for (size_t b = 0; b < o->nb; b++) {
		o->bucket_cost[b] += t->closed_pend[b];
		sum += t->closed_pend[b];
	}
	if (t->closed_cost > sum)
		o->bucket_cost[o->nb] += t->closed_cost - sum;
	dur = (double)(s->t_end - s->t_start) - t->closed_cost;
	pt_dist__add(&o->steps, dur > 0 ? (uint64_t)dur : 0);
}

const struct pt_ovh_func *pt_ovh__func(const struct pt_ovh *o, uint32_t fid)
{
	return o && fid < o->nfn && o->fn[fid].declared ? &o->fst[fid] : NULL;
}

double pt_ovh__step_cost_ns(const struct pt_ovh *o)
{
	return o ? o->step_cost : 0;
}

double pt_ovh__bucket_cost_ns(const struct pt_ovh *o, size_t b)
{
	return o && b <= o->nb ? o->bucket_cost[b] : 0;
}

const struct pt_dist *pt_ovh__steps(const struct pt_ovh *o)
{
	return o ? &o->steps : NULL;
}

uint64_t pt_ovh__hits(const struct pt_ovh *o, enum pt_site_kind k)
{
	return o && (unsigned int)k < PT_SITE_NKINDS ? o->hits[k] : 0;
}
