// SPDX-License-Identifier: BSD-2-Clause
/*
 * Stack samples of a run: each frame named and given its line (sample/
 * pysym), then into the stacks of its process and of the merged view.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "run.h"
#include "proctable.h"
#include "funcs.h"
#include "pyhint.h"
#include "samples.h"

#include "aggregate/stacks.h"
#include "attach/resolve.h"
#include "bpf/proftrace.h"
#include "python/pythreads.h"
#include "sample/mixed.h"
#include "sample/pysym.h"
#include "sample/unwind.h"
#include "sample/thrname.h"
#include "util/tasks.h"
#include "util/util.h"

/* tid as the target sees it, in its own PID namespace (the last NSpid of
 * its status); tid itself when that cannot be read. */
static uint32_t inner_tid(int pid, uint32_t tid)
{
	char path[64];
	int outer, inner;
	uint32_t depth;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%u/status", pid, tid);
	f = fopen(path, "re");
	if (!f)
		return tid;
	if (pt_tasks__parse_nspid(f, &outer, &inner, &depth) || inner <= 0)
		inner = (int)tid;
	fclose(f);
	return (uint32_t)inner;
}

/* A thread first seen: what it is called (sample/thrname.h), in the
 * stacks of its process and the merged ones; proftrace's own threads
 * are marked so, to be kept apart. */
static void name_thread(struct run *r, struct proc *p, uint32_t tid)
{
	char comm[64], name[PT_PYTHREADS_NAME_MAX];
	uint32_t ns_tid = p->python.other_ns ? inner_tid(p->tracee.pid, tid) : tid;
	bool own;

	pt_tasks__comm(p->tracee.pid, tid, comm, sizeof(comm));
	own = pt_thrname__name(p->python.tn, ns_tid, comm, pt_now_ns(CLOCK_MONOTONIC), name,
			       sizeof(name));
	for (int k = 0; k < 1 + r->multi; k++) {
		struct pt_stacks *st = k ? r->all.stk : p->v.stk;

		if (own) {
			pt_stacks__own_thread(st, tid, name);
			continue;
		}
		pt_stacks__name_thread(st, tid, name);
		if (comm[0])
			pt_stacks__thread_comm(st, tid, comm);
	}
}

/* A native stack of tid at t, unwound, until its sample comes: the two
 * records of one sample come in order, but other CPUs' records can come
 * between them. A slot per thread in flight; the oldest is reused. */
static struct run_nat *nat_slot(struct run *r, uint32_t tid)
{
	struct run_nat *v;

	if (!r->nat) {
		r->nat = calloc(RUN_NAT_SLOTS, sizeof(*r->nat));
		if (!r->nat)
			return NULL;
	}
	for (size_t i = 0; i < RUN_NAT_SLOTS; i++)
		if (r->nat[i].used && r->nat[i].tid == tid)
			return &r->nat[i];
	for (size_t i = 0; i < RUN_NAT_SLOTS; i++)
		if (!r->nat[i].used)
			return &r->nat[i];
	/* its sample will not find it: counted missing then */
	v = &r->nat[r->nat_next++ % RUN_NAT_SLOTS];
	return v;
}

int pt_run__on_ustack(void *ctx, const struct pt_ustack *u)
{
	struct run *r = ctx;
	struct proc *p = pt_proctable__find(&r->procs, u->pid);
	struct run_nat *n;
	uint64_t t0;

	if (!p || !p->python.sampled || !p->python.unw)
		return 0;
	n = nat_slot(r, u->tid);
	if (!n)
		return 0; /* out of memory: its sample is counted missing */
	t0 = pt_now_ns(CLOCK_MONOTONIC);
	n->n = pt_unwind__stack(p->python.unw, u->tid, (const uint64_t *)u->regs, u->data, u->len,
				n->f, RUN_NAT_FRAMES, &n->end);
	r->nstat.unwind_ns += pt_now_ns(CLOCK_MONOTONIC) - t0;
	r->nstat.bytes += u->len;
	n->tid = u->tid;
	n->t = u->t;
	n->used = true;
	return 0;
}

/* The native stack of sample s, taken from its slot; NULL: not there.
 * An off-CPU interval's is keyed by its start (bpf/proftrace.h). */
static const struct run_nat *nat_take(struct run *r, const struct pt_sample *s)
{
	uint64_t t = s->type == PT_REC_OFFCPU ? s->t - s->weight : s->t;

	for (size_t i = 0; r->nat && i < RUN_NAT_SLOTS; i++) {
		struct run_nat *n = &r->nat[i];

		if (n->used && n->tid == s->tid) {
			n->used = false;
			if (n->t == t)
				return n;
			break;
		}
	}
	r->nstat.missing++;
	return NULL;
}

/* Python frame f of a sample as frame ss->n: its name and line. 1: left
 * out (a shim or trampoline frame), -ENOMEM: the sample is lost. */
static int py_frame(struct run *r, struct proc *p, const struct pt_sample_frame *f,
		    struct pt_stacks_sample *ss, const struct pt_pysym_code **codes)
{
	const struct pt_pysym_code *c;
	unsigned int line;

	if (!f->code)
		return 1; /* C-stack shim frame */
	c = pt_pysym__code(p->python.sym, f->code);
	if (!c)
		return -ENOMEM;
	if (c->hidden)
		return 1;
	line = pt_pysym__line(p->python.sym, c, f->pos);
	ss->unknown += !c->ok;
	pt_pysym__label(c, line, r->labels[ss->n], sizeof(r->labels[0]));
	r->sf[ss->n] = (struct pt_sframe){ .label = r->labels[ss->n],
					   .fid = c->fid,
					   .line = line,
					   .key = c->key,
					   .qualname = c->qualname,
					   .filename = c->filename,
					   .first_line = c->firstlineno,
					   .last_line = c->last_line };
	codes[ss->n++] = c;
	return 0;
}

/* Native frame nf as frame ss->n. Its function and module name it in the
 * top tables (no py: function, no line). */
static void native_frame(struct run *r, const struct pt_unwind_frame *nf,
			 struct pt_stacks_sample *ss, const struct pt_pysym_code **codes)
{
	char *label = r->labels[ss->n];

	pt_mixed__label(nf, label, sizeof(r->labels[0]));
	r->sf[ss->n] = (struct pt_sframe){ .label = label,
					   .fid = PT_SFID_NONE,
					   .key = pt_mixed__key(label),
					   .qualname = nf->sym ? nf->sym : label,
					   .filename = nf->module ? nf->module : "" };
	codes[ss->n++] = NULL;
	ss->native++;
	r->nstat.frames++;
	r->nstat.unnamed += !nf->sym;
}

/* The interpreter's GIL code as frame ss->n: a pseudo frame (no module),
 * "[GIL wait]" or "[GIL]" (sample/mixed.h). */
static void gil_frame(struct run *r, uint8_t kind, struct pt_stacks_sample *ss,
		      const struct pt_pysym_code **codes)
{
	const char *label =
		kind == PT_MIXED_GIL_WAIT ? PT_MIXED_GIL_WAIT_LABEL : PT_MIXED_GIL_LABEL;

	r->sf[ss->n] = (struct pt_sframe){ .label = label,
					   .fid = PT_SFID_NONE,
					   .key = pt_mixed__key(label),
					   .qualname = label,
					   .filename = "" };
	codes[ss->n++] = NULL;
	ss->native++; /* not a Python frame */
	r->nstat.gil++;
}

/* The frames of s, Python and native merged (sample/mixed.h). */
static int mixed_frames(struct run *r, struct proc *p, const struct pt_sample *s,
			const struct run_nat *nat, struct pt_stacks_sample *ss,
			const struct pt_pysym_code **codes)
{
	struct pt_mixed_ref refs[PT_STACKS_MAX_FRAMES];
	size_t n = s->nframes < PT_SAMPLE_MAX_FRAMES ? s->nframes : PT_SAMPLE_MAX_FRAMES;
	enum pt_mixed_how how;
	size_t nr;

	nr = pt_mixed__merge(p->python.rt.L.minor, s->f, n, nat->f, nat->n, nat->end, refs,
			     PT_STACKS_MAX_FRAMES, &how);
	r->nstat.stacks++;
	r->nstat.offcpu += s->type == PT_REC_OFFCPU;
	r->nstat.whole += how == PT_MIXED_WHOLE;
	r->nstat.partial += how == PT_MIXED_PARTIAL;
	r->nstat.mismatched += how == PT_MIXED_MISMATCH;
	for (size_t k = 0; k < nr; k++) {
		if (refs[k].native == PT_MIXED_NATIVE) {
			native_frame(r, &nat->f[refs[k].i], ss, codes);
			continue;
		}
		if (refs[k].native) {
			gil_frame(r, refs[k].native, ss, codes);
			continue;
		}
		if (py_frame(r, p, &s->f[refs[k].i], ss, codes) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* A stack sample: names and lines for its frames, then into the stacks
 * of its process (and the merged ones). */
int pt_run__on_sample(void *ctx, const struct pt_sample *s)
{
	struct run *r = ctx;
	struct proc *p = pt_proctable__find(&r->procs, s->pid);
	struct pt_stacks_sample ss = { .tid = s->tid,
				       .offcpu = s->type == PT_REC_OFFCPU,
				       .weight_ns = s->weight,
				       /* pooled: periods are samples, all on the CPU */
				       .held_ns = s->type == PT_REC_SAMPLE && s->periods > 1 &&
								  !(s->flags & PT_SAMPLEF_POOLED)
							  ? s->weight - s->weight / s->periods
							  : 0,
				       .nsamples = s->flags & PT_SAMPLEF_POOLED ? s->periods : 1,
				       .flags = s->flags,
				       .f = r->sf };
	const struct pt_pysym_code *codes[PT_STACKS_MAX_FRAMES];
	const struct run_nat *nat = NULL;
	size_t before;

	if (!p || !p->python.sampled)
		return 0;
	/* without the agent, the first second of samples says which py:
	 * probes' modules run, and what is there to name */
	if (r->want_py && !p->agent.handle &&
	    pt_now_ns(CLOCK_MONOTONIC) - p->t_added >= 1000000000ull)
		pt_run__py_hint_samples(p);
	before = pt_resolver__nfuncs(p->res);
	if (!pt_stacks__has_thread(p->v.stk, s->tid))
		name_thread(r, p, s->tid);
	if (s->flags & PT_SAMPLEF_NATIVE)
		nat = nat_take(r, s);
	if (nat) {
		if (mixed_frames(r, p, s, nat, &ss, codes))
			return 0; /* out of memory: the sample is lost */
	} else {
		for (uint32_t i = 0; i < s->nframes && i < PT_SAMPLE_MAX_FRAMES; i++)
			if (py_frame(r, p, &s->f[i], &ss, codes) < 0)
				return 0; /* out of memory: the sample is lost */
	}
	if (pt_resolver__nfuncs(p->res) != before)
		pt_run__sync_py_funcs(p);
	for (size_t i = 0; i < ss.n; i++) {
		uint32_t fid = r->sf[i].fid;

		if (codes[i] && fid != PT_SFID_NONE && fid < p->nfs && !p->fs[fid].last_line)
			p->fs[fid].last_line = pt_pysym__last_line(p->python.sym, codes[i]);
	}
	pt_stacks__add(p->v.stk, &ss);
	if (r->multi) {
		for (size_t i = 0; i < ss.n; i++) {
			uint32_t fid = r->sf[i].fid;

			r->msf[i] = r->sf[i];
			r->msf[i].fid =
				fid != PT_SFID_NONE && fid < p->nfs ? p->mfid[fid] : PT_SFID_NONE;
			if (r->msf[i].fid != PT_SFID_NONE &&
			    !r->merged_funcs[r->msf[i].fid].last_line)
				r->merged_funcs[r->msf[i].fid].last_line = p->fs[fid].last_line;
		}
		ss.f = r->msf;
		pt_stacks__add(r->all.stk, &ss);
	}
	return 0;
}
