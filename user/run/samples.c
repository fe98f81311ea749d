// SPDX-License-Identifier: BSD-2-Clause
/*
 * Stack samples of a run: each frame named and given its line (sample/
 * pysym), then into the stacks of its process and of the merged view.
 */
#include <stdio.h>

#include "run.h"
#include "proctable.h"
#include "funcs.h"
#include "pyhint.h"
#include "samples.h"

#include "aggregate/stacks.h"
#include "attach/resolve.h"
#include "bpf/proftrace.h"
#include "python/pythreads.h"
#include "sample/pysym.h"
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

/* A stack sample: names and lines for its frames, then into the stacks
 * of its process (and the merged ones). */
int pt_run__on_sample(void *ctx, const struct pt_sample *s)
{
	struct run *r = ctx;
	struct proc *p = pt_proctable__find(&r->procs, s->pid);
	struct pt_stacks_sample ss = { .tid = s->tid,
				       .offcpu = s->type == PT_REC_OFFCPU,
				       .weight_ns = s->weight,
				       .held_ns = s->type == PT_REC_SAMPLE && s->periods > 1
							  ? s->weight - s->weight / s->periods
							  : 0,
				       .flags = s->flags,
				       .f = r->sf };
	const struct pt_pysym_code *codes[PT_SAMPLE_MAX_FRAMES];
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
	for (uint32_t i = 0; i < s->nframes && i < PT_SAMPLE_MAX_FRAMES; i++) {
		const struct pt_pysym_code *c;
		unsigned int line;

		if (!s->f[i].code)
			continue; /* C-stack shim frame */
		c = pt_pysym__code(p->python.sym, s->f[i].code);
		if (!c)
			return 0; /* out of memory: the sample is lost */
		if (c->hidden)
			continue;
		line = pt_pysym__line(p->python.sym, c, s->f[i].pos);
		ss.unknown += !c->ok;
		pt_pysym__label(c, line, r->labels[ss.n], sizeof(r->labels[0]));
		r->sf[ss.n] = (struct pt_sframe){ .label = r->labels[ss.n],
						  .fid = c->fid,
						  .line = line,
						  .key = c->key,
						  .qualname = c->qualname,
						  .filename = c->filename,
						  .first_line = c->firstlineno,
						  .last_line = c->last_line };
		codes[ss.n++] = c;
	}
	if (pt_resolver__nfuncs(p->res) != before)
		pt_run__sync_py_funcs(p);
	for (size_t i = 0; i < ss.n; i++) {
		uint32_t fid = r->sf[i].fid;

		if (fid != PT_SFID_NONE && fid < p->nfs && !p->fs[fid].last_line)
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
