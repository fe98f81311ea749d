// SPDX-License-Identifier: BSD-2-Clause
/*
 * The record streams of a run into the aggregators: probe records (calls,
 * values, code objects, process events), stack samples, steps and GPU
 * records, each to its process's figures and, with several processes, to
 * the merged view.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

#include "python/pyattr.h"

static void on_proc_event(struct run *r, const struct pt_rec *rec);

/* The merged view's fid of p's function f, added when new; -1: out of
 * memory. */
static int64_t merged_fid(struct run *r, struct proc *p, const struct pt_func *f)
{
	struct mfunc *v;

	for (size_t i = 0; i < r->nmf; i++) {
		const struct pt_func *g = pt_resolver__func(r->mf[i].p->res, r->mf[i].fid);

		if (g->spec == f->spec && g->py == f->py && g->py_line == f->py_line &&
		    !strcmp(g->symbol, f->symbol) && !strcmp(g->object, f->object))
			return (int64_t)i;
	}
	v = realloc(r->mf, (r->nmf + 1) * sizeof(*v));
	if (!v)
		return -1;
	r->mf = v;
	r->mf[r->nmf] = (struct mfunc){ .p = p, .fid = f->fid };
	if (pt_agg__set_func(r->all.agg, (uint32_t)r->nmf, f->is_step, f->bucket_mask))
		return -1;
	if (f->lines_spec >= 0 && r->all.stk)
		pt_stacks__want_lines(r->all.stk, (uint32_t)r->nmf);
	return (int64_t)r->nmf++;
}

/* Function i of p is known to the aggregators (and attached when
 * attached): declare it, and in the merged view. */
int pt_run__declare_func(struct proc *p, size_t i)
{
	const struct pt_func *f = pt_resolver__func(p->res, i);
	struct run *r = p->run;
	int64_t m;

	if (pt_agg__set_func(p->v.agg, (uint32_t)f->fid, f->is_step, f->bucket_mask))
		return -ENOMEM;
	if (!r->multi)
		return 0;
	m = merged_fid(r, p, f);
	if (m < 0)
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
	if (r->multi && !r->mf[p->mfid[i]].attached) {
		r->mf[p->mfid[i]].attached = true;
		r->mf[p->mfid[i]].at_s = p->fs[i].at_s;
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
		fprintf(stderr, "proftrace: warning: cannot set the values of %s: no tokens, "
				"kv_len or batch from it\n", f->symbol);
}

/* The frame slots of a py: function's argument values in code object
 * code (they differ per code object: two functions can match a probe). */
static void set_py_slots(struct proc *p, uint64_t code, struct pt_py_code *val)
{
	const struct pt_func *f;
	const struct pt_probe_spec *ps;
	const char *names[PT_MAX_VALS] = { 0 };
	int16_t slots[PT_MAX_VALS];
	struct pt_pytypes t = { .code_type = p->py.code_type,
				.unicode_type = p->py.unicode_type };

	for (int k = 0; k < PT_MAX_VALS; k++)
		val->slot[k] = PT_PY_SLOT_NONE;
	val->vals = 0;
	if (val->fid >= pt_resolver__nfuncs(p->res))
		return;
	f = pt_resolver__func(p->res, val->fid);
	if (f->vals_spec < 0)
		return;
	ps = &p->run->cfg.probes[f->vals_spec];
	for (unsigned int k = 0; k < ps->nvals && k < PT_MAX_VALS; k++)
		names[k] = ps->vals[k].src == PT_VSRC_PYARG ? ps->vals[k].name : NULL;
	if (pt_pycode__slots(&p->tmem, &p->py.L, &t, code, names, PT_MAX_VALS, slots) == 0)
		memcpy(val->slot, slots, sizeof(slots));
	for (unsigned int k = 0; k < ps->nvals && k < PT_MAX_VALS; k++)
		if (names[k] && val->slot[k] < 0)
			fprintf(stderr, "proftrace: warning: %s (%s:%u) has no argument '%s': %s=%s "
					"is missing for it\n", f->symbol, f->object, f->py_line,
				names[k], pt_vexpr__role_name(ps->vals[k].role), ps->vals[k].text);
	val->vals = 1;
}

/* Python functions found at run time, by the frame probe or in samples:
 * the aggregators and the report learn about them. */
static void sync_py_funcs(struct proc *p)
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
		if (f->lines_spec >= 0 && p->pp) {
			size_t len;

			/* read (and cached) now: by the time lines.txt is
			 * written the target may have exited */
			pt_pyprobe__source(p->pp, f->object, &len);
		}
		pt_vlog("proftrace: pid %d: python %s (%s:%u) is fid %d\n", p->tgt.pid, f->symbol,
		     f->object, f->py_line, f->fid);
	}
}

/* A code object BPF has not seen: tell BPF whether it is ours. */
static void on_pycode(struct proc *p, const struct pt_rec_pycode *rec)
{
	struct pt_py_code seen = { .filename = rec->filename, .name = rec->name,
				   .firstlineno = rec->firstlineno };
	struct pt_py_code val;
	bool added;
	int64_t fid = pt_pyprobe__resolve(p->pp, rec->code, &seen, &val, &added);

	/* out of memory: BPF keeps it pending, its calls are dropped;
	 * gone: the object now there announces itself */
	if (fid < 0 || fid == PT_PYPROBE_GONE)
		return;
	if (added)
		sync_py_funcs(p); /* before the answer: BPF needs the fid's value spec */
	if (fid != PT_FID_PY_NONE && pt_stepvals__active(&p->v.sv))
		set_py_slots(p, rec->code, &val);
	if (val.fid != PT_FID_PY_NONE && val.fid != PT_FID_PY_PENDING)
		val.fid = PT_FID_MAKE(p->idx, val.fid);
	pt_attach__py_code(p->run->att, p->tgt.pid, rec->code, &val);
}

/* Thread tid's comm into comm (empty when it cannot be read). */
static void read_comm(int pid, uint32_t tid, char *comm, size_t len)
{
	char path[64];
	FILE *f;

	comm[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%u/comm", pid, tid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(comm, (int)len, f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
}

/* trace.json's name of host thread tid, read once. */
static void trace_thread(struct proc *p, uint32_t tid)
{
	struct pt_trace *tr = p->run->trace;
	char comm[64];

	if (pt_trace__has_thread_name(tr, tid))
		return;
	read_comm(p->tgt.pid, tid, comm, sizeof(comm));
	pt_trace__thread_name(tr, tid, (uint32_t)p->tgt.pid, comm);
}

/* The process a record is from: by pid, the live one (an exec'ed
 * image's records in flight belong to no process: fids tell). */
static struct proc *proc_of(struct run *r, uint32_t pid)
{
	if (r->last && (uint32_t)r->last->tgt.pid == pid && !r->last->ended)
		return r->last;
	for (size_t i = r->nprocs; i-- > 0;)
		if ((uint32_t)r->procs[i]->tgt.pid == pid && !r->procs[i]->ended)
			return r->last = r->procs[i];
	return NULL;
}

/* A stack sample: names and lines for its frames, then into the stacks
 * of its process (and the merged ones). */
int pt_run__on_sample(void *ctx, const struct pt_sample *s)
{
	struct run *r = ctx;
	struct proc *p = proc_of(r, s->pid);
	struct pt_stacks_sample ss = { .tid = s->tid, .offcpu = s->type == PT_REC_OFFCPU,
				       .weight_ns = s->weight, .flags = s->flags, .f = r->sf };
	const struct pt_pysym_code *codes[PT_SAMPLE_MAX_FRAMES];
	size_t before;

	if (!p || !p->sampled)
		return 0;
	before = pt_resolver__nfuncs(p->res);
	if (!pt_stacks__has_thread(p->v.stk, s->tid)) {
		char comm[64];

		read_comm(p->tgt.pid, s->tid, comm, sizeof(comm));
		pt_stacks__name_thread(p->v.stk, s->tid, comm[0] ? comm : "?");
		if (r->multi)
			pt_stacks__name_thread(r->all.stk, s->tid, comm[0] ? comm : "?");
	}
	for (uint32_t i = 0; i < s->nframes && i < PT_SAMPLE_MAX_FRAMES; i++) {
		const struct pt_pysym_code *c;
		unsigned int line;

		if (!s->f[i].code)
			continue; /* C-stack shim frame */
		c = pt_pysym__code(p->sym, s->f[i].code);
		if (!c)
			return 0; /* out of memory: the sample is lost */
		line = pt_pysym__line(p->sym, c, s->f[i].pos);
		ss.unknown += !c->ok;
		pt_pysym__label(c, line, r->labels[ss.n], sizeof(r->labels[0]));
		r->sf[ss.n].label = r->labels[ss.n];
		r->sf[ss.n].fid = c->fid;
		r->sf[ss.n].line = line;
		codes[ss.n++] = c;
	}
	if (pt_resolver__nfuncs(p->res) != before)
		sync_py_funcs(p);
	for (size_t i = 0; i < ss.n; i++) {
		uint32_t fid = r->sf[i].fid;

		if (fid != PT_SFID_NONE && fid < p->nfs && !p->fs[fid].last_line)
			p->fs[fid].last_line = pt_pysym__last_line(p->sym, codes[i]);
	}
	pt_stacks__add(p->v.stk, &ss);
	if (r->multi) {
		for (size_t i = 0; i < ss.n; i++) {
			uint32_t fid = r->sf[i].fid;

			r->msf[i] = r->sf[i];
			r->msf[i].fid = fid != PT_SFID_NONE && fid < p->nfs ? p->mfid[fid]
									   : PT_SFID_NONE;
			if (r->msf[i].fid != PT_SFID_NONE && !r->mf[r->msf[i].fid].last_line)
				r->mf[r->msf[i].fid].last_line = p->fs[fid].last_line;
		}
		ss.f = r->msf;
		pt_stacks__add(r->all.stk, &ss);
	}
	return 0;
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
	if (p->gpu && f->bucket_mask &&
	    pt_gpu__bucket_call(p->gpu, rec->tid, rec->t_entry, rec->t_exit, f->bucket_mask))
		p->gpu_oom = true;
}

/* Ask BPF to ask again about key in a second: the type's location was
 * not found yet (no instance holds the name yet, or it was freed). */
static void retry_attr(struct proc *p, const struct pt_attr_key *key)
{
	struct attr_retry *v = realloc(p->retries, (p->nretries + 1) * sizeof(*v));

	if (!v)
		return; /* it stays pending: counted, never guessed */
	p->retries = v;
	v[p->nretries++] = (struct attr_retry){ .key = *key,
						.due = pt_now_ns(CLOCK_MONOTONIC) + 1000000000ull };
}

void pt_run__attr_retries(struct proc *p, uint64_t now)
{
	size_t k = 0;

	for (size_t i = 0; i < p->nretries; i++) {
		if (p->retries[i].due > now)
			p->retries[k++] = p->retries[i];
		else
			pt_attach__attr_forget(p->run->att, &p->retries[i].key);
	}
	p->nretries = k;
}

/* Was the attribute of expression k of spec said missing already? */
static bool warned_once(struct run *r, size_t spec, unsigned int k)
{
	size_t i = spec * PT_MAX_VALS + k;

	if (!r->attr_warned)
		r->attr_warned = calloc(r->cfg.nprobes * PT_MAX_VALS + 1, 1);
	if (!r->attr_warned || r->attr_warned[i])
		return true;
	r->attr_warned[i] = 1;
	return false;
}

/* An attribute is wanted from an object of a type BPF has no location
 * for: find where that type keeps it (user/pyattr.c), once. */
static void on_attr(struct proc *p, const struct pt_rec_attr *a)
{
	struct pt_attr_key key = { .type = a->obj_type, .fid = a->fid, .k = a->k };
	uint32_t fid = a->fid & PT_FID_LOCAL_MASK;
	const struct pt_probe_spec *ps;
	struct pt_pyattr_loc loc;
	const struct pt_func *f;
	const char *attr;
	char why[256];
	int ret;

	if (PT_FID_PROC(a->fid) != p->idx || fid >= p->nfs || !p->have_py)
		return;
	f = pt_resolver__func(p->res, fid);
	ps = f->vals_spec >= 0 ? &p->run->cfg.probes[f->vals_spec] : NULL;
	if (!ps || a->k >= ps->nvals || !ps->vals[a->k].attr)
		return;
	attr = ps->vals[a->k].attr;
	/* the instance BPF saw helps find the name's key; if it was freed
	 * and its memory reused meanwhile, the type alone must do */
	ret = pt_pyattr__resolve_obj(&p->tmem, &p->py.L, a->obj, attr, &loc, why, sizeof(why));
	if (ret != -EOPNOTSUPP && ret != -ENOENT && (ret || loc.type != a->obj_type))
		ret = pt_pyattr__resolve(&p->tmem, &p->py.L, a->obj_type, attr, &loc, why,
					 sizeof(why));
	if (ret == -EFAULT) { /* the type went away under us: ask again */
		retry_attr(p, &key);
		pt_vlog("proftrace: pid %d: %s.%s: %s (asking again)\n", p->tgt.pid,
			     f->symbol, attr, why);
		return;
	}
	if (ret == -EAGAIN) {
		/* Neither the type nor this instance has the name: objects of
		 * the type lack it for now. Asked again each second, so the
		 * first instance that has it gets it read. */
		memset(&loc, 0, sizeof(loc));
		loc.kind = PT_PYATTR_K_NONE;
		loc.vst = PT_VST_ATTR_MISSING;
		retry_attr(p, &key);
		if (!warned_once(p->run, (size_t)f->vals_spec, a->k)) {
			pt_msg("proftrace: warning: %s=%s in %s (pid %d): %s: counted as "
					"no_attribute until an object has it\n",
				pt_vexpr__role_name(ps->vals[a->k].role), ps->vals[a->k].text,
				f->symbol, p->tgt.pid, why);
		}
	} else if (ret) {
		memset(&loc, 0, sizeof(loc));
		loc.kind = PT_PYATTR_K_NONE;
		loc.vst = ret == -ENOENT ? PT_VST_ATTR_MISSING : PT_VST_ATTR_UNREADABLE;
		pt_msg("proftrace: warning: %s=%s in %s (pid %d): %s: counted as %s\n",
			pt_vexpr__role_name(ps->vals[a->k].role), ps->vals[a->k].text, f->symbol,
			p->tgt.pid, why, pt_vexpr__status_name(loc.vst));
	} else {
		pt_vlog("proftrace: pid %d: %s.%s: %s\n", p->tgt.pid, f->symbol, attr, why);
	}
	loc.type = a->obj_type;
	if (pt_attach__attr_loc(p->run->att, &key, &loc))
		retry_attr(p, &key); /* the map is full: stays pending */
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
	p = proc_of(r, rec->pid);
	if (!p)
		return 0; /* a process that ended: its last records */
	p->events++;
	switch (rec->type) {
	case PT_REC_DLOPEN:
		p->rescan = true;
		return 0;
	case PT_REC_PYCODE:
		if (p->pp)
			on_pycode(p, (const struct pt_rec_pycode *)rec);
		return 0;
	case PT_REC_VALUES:
		on_values(p, (const struct pt_rec_vals *)rec, size);
		return 0;
	case PT_REC_ATTR:
		on_attr(p, (const struct pt_rec_attr *)rec);
		return 0;
	}
	copy = *rec;
	if (rec->fid == PT_FID_PY_PENDING) {
		/* A call that began before we answered for its code: the
		 * PYCODE record came first, so the answer is known now. */
		fid = p->pp ? pt_pyprobe__fid(p->pp, rec->code) : PT_FID_PY_NONE;
		if (fid == PT_PYPROBE_GONE && rec->type == PT_REC_EXIT)
			p->py_unresolved++; /* ours or not: unknown, and said so */
		if (fid == PT_FID_PY_NONE || fid == PT_PYPROBE_GONE)
			return 0;
		/* its code was not known at entry: BPF could not read its values */
		if (fid < p->nfs) {
			int spec = pt_resolver__func(p->res, fid)->vals_spec;
			bool at_exit = rec->type == PT_REC_EXIT;

			pt_stepvals__missed(&p->v.sv, spec, at_exit, PT_VST_FIRST_CALL);
			if (r->multi)
				pt_stepvals__missed(&r->all.sv, spec, at_exit, PT_VST_FIRST_CALL);
		}
	} else {
		if (PT_FID_PROC(rec->fid) != p->idx)
			return 0; /* the image before an exec */
		fid = rec->fid & PT_FID_LOCAL_MASK;
	}
	if (fid >= p->nfs)
		return 0;
	copy.fid = fid;
	pt_agg__record(p->v.agg, &copy);
	if (r->multi) {
		copy.fid = p->mfid[fid];
		pt_agg__record(r->all.agg, &copy);
		copy.fid = fid;
	}
	if (copy.type == PT_REC_EXIT && (r->trace || p->gpu))
		on_call(p, &copy);
	return 0;
}

/* A counted step of one process. */
void pt_run__on_step(void *ctx, const struct pt_step *s)
{
	struct proc *p = ctx;
	struct run *r = p->run;

	pt_stepvals__step(&p->v.sv, s);
	if (r->trace) {
		trace_thread(p, s->tid);
		pt_trace__step(r->trace, s);
	}
	if (p->v.runs)
		pt_runs__step(p->v.runs, s); /* out of memory: runs are left out, and said */
	if (p->gpu && pt_gpu__step(p->gpu, s->tid, s->t_start, s->t_end))
		p->gpu_oom = true; /* said at the end */
	if (r->multi)
		pt_skew__add(&p->steps, s->t_start, s->t_end);
}

/* A counted step of the merged view. */
void pt_run__on_merged_step(void *ctx, const struct pt_step *s)
{
	struct run *r = ctx;

	pt_stepvals__step(&r->all.sv, s);
	if (r->all.runs)
		pt_runs__step(r->all.runs, s);
}

int pt_run__on_gpu_rec(void *ctx, const struct pt_gpu_rec *g)
{
	struct proc *p = ctx;
	struct run *r = p->run;

	if (pt_gpu__record(p->gpu, g))
		p->gpu_oom = true;
	if (r->trace) {
		if (g->kind == PT_GPU_API)
			trace_thread(p, g->api.tid);
		pt_trace__gpu(r->trace, g, (uint32_t)p->tgt.pid);
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
	p = proc_of(r, rec->pid);
	if (p)
		p->exec_seen = true; /* ending it drains the ring: not from in here */
}
