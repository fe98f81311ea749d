// SPDX-License-Identifier: BSD-2-Clause
/*
 * The routing of a run's records: each probe record (calls, values, code
 * objects, process events) to the process it is from and the part that
 * owns it; counted steps and GPU records to their consumers (the
 * aggregators, trace.json, the GPU join, the skew).
 */
#include "run.h"
#include "procstate.h"
#include "proctable.h"
#include "metrics.h"
#include "gpustream.h"
#include "view.h"
#include "pyrec.h"
#include "records.h"

#include "aggregate/agg.h"
#include "aggregate/bursts.h"
#include "aggregate/overhead.h"
#include "aggregate/skew.h"
#include "aggregate/stepvals.h"
#include "attach/resolve.h"
#include "bpf/proftrace.h"
#include "gpu/gpuring.h"
#include "report/trace.h"
#include "util/tasks.h"

static void on_proc_event(struct run *r, const struct pt_rec *rec);

/* trace.json's name of host thread tid, read once. */
static void trace_thread(struct proc *p, uint32_t tid)
{
	struct pt_trace *tr = p->run->trace;
	char comm[64];

	if (pt_trace__has_thread_name(tr, tid))
		return;
	pt_tasks__comm(p->tracee.pid, tid, comm, sizeof(comm));
	pt_trace__thread_name(tr, tid, (uint32_t)p->tracee.pid, comm);
}

static void on_values(struct proc *p, const struct pt_rec_vals *v, size_t size)
{
	uint32_t fid = v->fid & PT_FID_LOCAL_MASK;
	int spec;

	if (PT_FID_PROC(v->fid) != p->idx || fid >= p->nfs) {
		p->v.sv.bad_records++;
		return;
	}
	spec = pt_resolver__func(p->res, fid)->vals_spec;
	pt_stepvals__record(&p->v.sv, p->v.agg, spec, v, size);
	if (p->run->multi)
		pt_stepvals__record(&p->run->all.sv, p->run->all.agg, spec, v, size);
}

/* A completed call (local fid), for the consumers that want every one:
 * trace.json's slices and the GPU join's bucket calls. */
static void on_call(struct proc *p, const struct pt_rec *rec)
{
	struct run *r = p->run;
	const struct pt_func *f = pt_resolver__func(p->res, rec->fid);

	if (r->trace) {
		trace_thread(p, rec->tid);
		pt_trace__slice(r->trace, rec->tid, rec->t_entry, rec->t_exit, f->symbol, f->py,
				f->bucket_mask);
	}
	pt_run__gpu_call(p, rec, f->bucket_mask);
}

int pt_run__on_rec(void *ctx, const struct pt_rec *rec, size_t size)
{
	struct run *r = ctx;
	struct pt_rec copy;
	struct proc *p;
	uint32_t fid;

	r->events++;
	if (rec->type == PT_REC_FORK || rec->type == PT_REC_EXEC) {
		on_proc_event(r, rec);
		return 0;
	}
	p = pt_proctable__find(&r->procs, rec->pid);
	if (!p)
		return 0; /* a process that ended: its last records */
	p->events++;
	switch (rec->type) {
	case PT_REC_DLOPEN:
		p->rescan = true;
		if (!p->dl_ns)
			p->dl_ns = rec->t_entry;
		return 0;
	case PT_REC_PYCODE:
		if (p->python.probe)
			pt_run__on_pycode(p, (const struct pt_rec_pycode *)rec);
		return 0;
	case PT_REC_VALUES:
		on_values(p, (const struct pt_rec_vals *)rec, size);
		return 0;
	case PT_REC_ATTR:
		pt_run__on_attr(p, (const struct pt_rec_attr *)rec);
		return 0;
	case PT_REC_TEXIT:
		/* after the thread's last record: free what every view keeps
		 * for it */
		pt_ovh__thread_exit(p->v.ovh, rec->tid);
		pt_agg__thread_exit(p->v.agg, rec->tid);
		pt_run__window_thread_exit(p, rec->tid);
		if (r->multi) {
			pt_ovh__thread_exit(r->all.ovh, rec->tid);
			pt_agg__thread_exit(r->all.agg, rec->tid);
		}
		return 0;
	}
	copy = *rec;
	if (rec->fid == PT_FID_PY_PENDING) {
		/* A call that began before we answered for its code */
		if (!pt_run__py_pending_fid(p, rec, &fid))
			return 0;
	} else {
		if (PT_FID_PROC(rec->fid) != p->idx)
			return 0; /* the image before an exec */
		fid = rec->fid & PT_FID_LOCAL_MASK;
	}
	if (fid >= p->nfs)
		return 0;
	copy.fid = fid;
	pt_ovh__record(p->v.ovh, &copy); /* before pt_agg: its on_step needs it */
	pt_agg__record(p->v.agg, &copy);
	pt_run__window_record(p, &copy);
	if (r->multi) {
		copy.fid = p->mfid[fid];
		pt_ovh__record(r->all.ovh, &copy);
		pt_agg__record(r->all.agg, &copy);
		copy.fid = fid;
	}
	if (copy.type == PT_REC_EXIT && (r->trace || p->gpu.join))
		on_call(p, &copy);
	return 0;
}

/* A counted step of one process. */
void pt_run__on_step(void *ctx, const struct pt_step *s)
{
	struct proc *p = ctx;
	struct run *r = p->run;

	pt_stepvals__step(&p->v.sv, s);
	pt_ovh__step(p->v.ovh, s);
	pt_run__metrics_step(p, s);
	if (r->trace) {
		trace_thread(p, s->tid);
		pt_trace__step(r->trace, s);
	}
	if (p->v.runs)
		pt_bursts__step(p->v.runs, s); /* out of memory: runs are left out, and said */
	pt_run__gpu_step(p, s);
	if (r->multi)
		pt_skew__add(&p->steps, s->t_start, s->t_end);
}

/* A counted step of the merged view. */
void pt_run__on_merged_step(void *ctx, const struct pt_step *s)
{
	struct run *r = ctx;

	pt_stepvals__step(&r->all.sv, s);
	pt_ovh__step(r->all.ovh, s);
	if (r->all.runs)
		pt_bursts__step(r->all.runs, s);
}

int pt_run__on_gpu_rec(void *ctx, const struct pt_gpu_rec *g)
{
	struct proc *p = ctx;
	struct run *r = p->run;
	struct pt_gpu_rec host;

	g = pt_run__gpu_record(p, g, &host);
	pt_run__metrics_gpu(p, g);
	if (r->trace) {
		if (g->kind == PT_GPU_API && g->api.tid)
			trace_thread(p, g->api.tid);
		pt_trace__gpu(r->trace, g, (uint32_t)p->tracee.pid);
	}
	return 0;
}

static void on_proc_event(struct run *r, const struct pt_rec *rec)
{
	struct proc *p;

	if (rec->type == PT_REC_FORK) {
		r->scan_children = true;
		return;
	}
	p = pt_proctable__find(&r->procs, rec->pid);
	if (p)
		pt_proc__set_state(p, PT_PROC_EXECED); /* ending it drains the ring: the loop */
}
