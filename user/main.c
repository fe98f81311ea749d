// SPDX-License-Identifier: BSD-2-Clause
/*
 * proftrace: attach to a live process, time configured functions exactly,
 * aggregate them into steps and buckets, write summary.json and report.md.
 *
 * The recipe: parse the command line and the targets file -> inspect the
 * targets -> resolve probes against their maps -> load BPF -> attach ->
 * drain the ring into the aggregators until a stop condition -> write
 * reports.
 *
 * Several processes (-p PID,PID, --children) share one BPF object and one
 * sampler; each has its own resolver, aggregator and figures (struct
 * proc), and a merged view (struct view of the run) pools them all, its
 * functions matched across processes by probe, object and symbol.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <cjson/cJSON.h>

#include "agg.h"
#include "attach.h"
#include "cli.h"
#include "config.h"
#include "elfsyms.h"
#include "maps.h"
#include "flame.h"
#include "gpu.h"
#include "gpuring.h"
#include "pyprobe.h"
#include "pysym.h"
#include "python.h"
#include "report.h"
#include "resolve.h"
#include "runs.h"
#include "skew.h"
#include "sampler.h"
#include "stacks.h"
#include "stepvals.h"
#include "target.h"
#include "targets_list.h"
#include "trace.h"

#define EXIT_USAGE 2

/* Fallback maps rescan period: dlopen is seen at once through the
 * dynamic linker hook, this catches anything else (static binaries,
 * mmap'ed code without the hook). */
#define RESCAN_MS 1000
/* A new child is attached once it is this old: a fork is usually
 * followed at once by an exec, and the image wanted is the new one. */
#define CHILD_SETTLE_MS 100

struct fstate {
	bool attached;
	double at_s;
	char *reason; /* owned */
	unsigned int last_line; /* py: last line per its line table, 0: unknown */
};


struct run;
struct proc;

/* Figures of one process, or of all of them merged. */
struct view {
	struct pt_agg *agg;
	struct pt_stepvals sv;
	struct pt_runs *runs;
	struct pt_stacks *stk; /* NULL: not sampled */
};

/* One traced process. */
struct proc {
	struct run *run;
	unsigned int idx; /* in BPF fids (PT_FID_MAKE) */
	struct pt_target tgt;
	int rank, local_rank; /* RANK, LOCAL_RANK in its environment; -1: not set */
	int pidfd;            /* readable when it exits; -1: checked each tick */
	bool ended;           /* exited or exec'ed: its probes are off */
	bool exec_seen;       /* it exec'ed: ended by the event loop, not in a callback */
	const char *end_why;  /* "exited" | "exec" */
	uint64_t t_added, t_ended; /* CLOCK_MONOTONIC ns */
	uint64_t events;

	struct pt_resolver *res;
	struct fstate *fs;
	size_t nfs;
	uint32_t *mfid; /* local fid -> fid of the merged view (several processes) */
	bool rescan;
	bool dl_hooked;
	bool dl_tried; /* a dynamic linker was seen: hooked or not, done */

	/* py: probes */
	bool have_py;   /* it runs CPython (py is valid) */
	bool py_probed; /* its frame evaluator is probed */
	bool sampled;   /* its stacks are sampled */
	struct pt_python py;
	struct pt_pyprobe *pp;
	struct pt_pysym *sym;
	char proc_root[64], proc_cwd[64];
	int tramp_checks, tramp_on; /* perf trampoline: checks made, seen active */
	uint64_t py_unresolved; /* calls of code freed before it could be read */
	const char *py_why_not; /* have_py but not probed or sampled: why */

	struct view v;
	struct pt_skew_steps steps; /* counted steps, for the skew across processes */

	/* the GPU stream (CUPTI shim) */
	struct pt_gpuring *gr;
	struct pt_gpu *gpu;
	bool gpu_attached;
	bool gpu_oom; /* a GPU record, step or bucket call could not be kept */
	bool gpu_joined;
	const struct pt_gpu_result *gres;
	char gpu_why[256]; /* no GPU stream: why */

	struct pt_tmem tmem; /* its memory (frame slots of py: values) */
};

/* A function of the merged view: the same probe, object and symbol (or
 * file, qualified name and line) in any process. */
struct mfunc {
	const struct pt_func *f; /* as the first process that has it resolved it */
	struct proc *p;
	bool attached;
	double at_s;
	const char *reason;
	unsigned int last_line;
};

/* A descendant seen, attached once it is CHILD_SETTLE_MS old. */
struct cand {
	int pid;
	uint64_t seen;
};

/* A descendant not traced, and why (summary.json meta.processes_skipped). */
struct skipped {
	int pid;
	char comm[64];
	char why[160];
};

struct run {
	struct pt_env env;
	struct pt_config cfg;
	struct pt_attach *att;
	struct pt_sampler *smp;
	struct proc **procs;
	size_t nprocs;
	bool multi; /* several processes (or --children): merged view + sections */
	struct proc *last; /* of the last record: most come in runs */
	struct view all;   /* merged (multi only) */
	struct mfunc *mf;
	size_t nmf;
	const struct pt_python *py0; /* the interpreter BPF's layout is from */
	bool want_py;
	bool py_probe_wanted;
	uint64_t t0_mono, t0_unix, t_end_mono;
	uint64_t events;
	uint64_t dropped_seen;
	int ep; /* the event loop's epoll: pidfds of processes added later */

	/* --children */
	bool scan_children;
	struct cand *cands;
	size_t ncands;
	struct skipped *skipped;
	size_t nskipped;

	/* scratch of one sample: its frames and their labels, merged fids */
	struct pt_sframe *sf, *msf;
	char (*labels)[256];

	/* --trace: trace.json's events */
	struct pt_trace *trace;
};

static int verbose;
/* The live status line is on screen: clear it before any other message. */
static bool status_shown;

static void clear_status(void)
{
	if (status_shown) {
		fputs("\r\033[K", stderr);
		status_shown = false;
	}
}

static void vlog(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	clear_status();
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (verbose < 2 && level != LIBBPF_WARN)
		return 0;
	if (verbose < 1)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double since_start_s(const struct run *r)
{
	return (double)(now_ns(CLOCK_MONOTONIC) - r->t0_mono) / 1e9;
}

static void *xcalloc(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static int grow_fstate(struct proc *p);
static int read_target(void *ctx, uint64_t addr, void *buf, size_t len);
static void update_trampoline(struct proc *p);

/* The merged view's fid of p's function f, added when new; -1: out of
 * memory. */
static int64_t merged_fid(struct run *r, struct proc *p, const struct pt_func *f)
{
	struct mfunc *v;

	for (size_t i = 0; i < r->nmf; i++) {
		const struct pt_func *g = r->mf[i].f;

		if (g->spec == f->spec && g->py == f->py && g->py_line == f->py_line &&
		    !strcmp(g->symbol, f->symbol) && !strcmp(g->object, f->object))
			return (int64_t)i;
	}
	v = realloc(r->mf, (r->nmf + 1) * sizeof(*v));
	if (!v)
		return -1;
	r->mf = v;
	r->mf[r->nmf] = (struct mfunc){ .f = f, .p = p };
	if (pt_agg__set_func(r->all.agg, (uint32_t)r->nmf, f->is_step, f->bucket_mask))
		return -1;
	if (f->lines_spec >= 0 && r->all.stk)
		pt_stacks__want_lines(r->all.stk, (uint32_t)r->nmf);
	return (int64_t)r->nmf++;
}

/* Function i of p is known to the aggregators (and attached when
 * attached): declare it, and in the merged view. */
static int declare_func(struct proc *p, size_t i)
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
static void mark_attached(struct proc *p, size_t i)
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
static void set_val_spec(struct proc *p, const struct pt_func *f)
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

	if (grow_fstate(p))
		return;
	for (size_t i = before; i < p->nfs; i++) {
		const struct pt_func *f = pt_resolver__func(p->res, i);

		if (!f->py)
			continue; /* native: attach_new() does these */
		if (declare_func(p, i))
			continue; /* out of memory: its records are ignored */
		set_val_spec(p, f);
		mark_attached(p, i);
		if (f->lines_spec >= 0 && p->v.stk)
			pt_stacks__want_lines(p->v.stk, (uint32_t)f->fid);
		if (f->lines_spec >= 0 && p->pp) {
			size_t len;

			/* read (and cached) now: by the time lines.txt is
			 * written the target may have exited */
			pt_pyprobe__source(p->pp, f->object, &len);
		}
		vlog("proftrace: pid %d: python %s (%s:%u) is fid %d\n", p->tgt.pid, f->symbol,
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
static int on_sample(void *ctx, const struct pt_sample *s)
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

static void on_proc_event(struct run *r, const struct pt_rec *rec);

static int on_rec(void *ctx, const struct pt_rec *rec, size_t size)
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
static void on_step(void *ctx, const struct pt_step *s)
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
static void on_merged_step(void *ctx, const struct pt_step *s)
{
	struct run *r = ctx;

	pt_stepvals__step(&r->all.sv, s);
	if (r->all.runs)
		pt_runs__step(r->all.runs, s);
}

static int on_gpu_rec(void *ctx, const struct pt_gpu_rec *g)
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

/*
 * The CUPTI shim's ring, if the process has one (before the clock starts:
 * attaching is what wakes the shim). 0, or EXIT_USAGE when --gpu on
 * cannot be honoured.
 */
static int open_gpu(struct proc *p)
{
	const struct run *r = p->run;
	char err[256];
	int e;

	if (r->env.gpu == PT_GPU_OFF) {
		snprintf(p->gpu_why, sizeof(p->gpu_why), "--gpu off");
		return 0;
	}
	e = pt_gpuring__open(&p->gr, p->tgt.pid, err, sizeof(err));
	if (e == -ENOENT)
		snprintf(err, sizeof(err),
			 "no CUPTI shim in pid %d: start the server with "
			 "CUDA_INJECTION64_PATH=/path/to/libproftrace_cupti.so (see docs/gpu.md)",
			 p->tgt.pid);
	if (!e) {
		p->gpu = pt_gpu__new(r->cfg.nbuckets);
		if (!p->gpu)
			return -ENOMEM;
		return 0;
	}
	snprintf(p->gpu_why, sizeof(p->gpu_why), "%s", err);
	if (r->env.gpu == PT_GPU_ON) {
		fprintf(stderr, "proftrace: --gpu on: %s\n", err);
		return EXIT_USAGE;
	}
	if (e != -ENOENT)
		fprintf(stderr, "proftrace: warning: no GPU stream: %s\n", err);
	return 0;
}

static int attach_gpu(struct proc *p)
{
	int e;

	if (!p->gr)
		return 0;
	e = pt_gpuring__attach(p->gr, now_ns(CLOCK_MONOTONIC));
	if (!e) {
		p->gpu_attached = true;
		return 0;
	}
	snprintf(p->gpu_why, sizeof(p->gpu_why),
		 e == -EBUSY ? "another proftrace is reading this process's CUPTI shim"
			     : "cannot attach to the CUPTI shim's ring: %s", strerror(-e));
	pt_gpu__free(p->gpu);
	p->gpu = NULL;
	if (p->run->env.gpu == PT_GPU_ON) {
		fprintf(stderr, "proftrace: --gpu on: %s\n", p->gpu_why);
		return EXIT_USAGE;
	}
	fprintf(stderr, "proftrace: warning: no GPU stream: %s\n", p->gpu_why);
	return 0;
}

static int grow_fstate(struct proc *p)
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

/* Attach every resolved function not tried yet. Returns how many were
 * attached now. A function that cannot be attached is reported, not
 * fatal: the others still give true figures. */
static int attach_new(struct proc *p, size_t from)
{
	char err[512];
	int n = 0;

	if (grow_fstate(p))
		return -ENOMEM;
	for (size_t i = from; i < p->nfs; i++) {
		const struct pt_func *f = pt_resolver__func(p->res, i);

		if (f->py)
			continue; /* found at run time, served by the frame probe */
		if (declare_func(p, i))
			return -ENOMEM;
		set_val_spec(p, f);
		if (f->unusable) {
			p->fs[i].reason = strdup(f->unusable);
			continue;
		}
		if (pt_attach__func(p->run->att, p->idx, p->tgt.pid, f, err, sizeof(err))) {
			fprintf(stderr, "proftrace: warning: %s\n", err);
			p->fs[i].reason = strdup(err);
			continue;
		}
		mark_attached(p, i);
		n++;
		vlog("proftrace: pid %d: probe %s:%s at file offset 0x%llx (+%u, %s)\n",
		     p->tgt.pid, f->object, f->symbol, (unsigned long long)f->file_off,
		     f->site.skip, pt_insn_class__str(f->site.cls));
	}
	return n;
}

static bool is_dynamic_linker(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return strncmp(b, "ld-linux", 8) == 0 || strncmp(b, "ld-", 3) == 0 ||
	       strncmp(b, "ld.so", 5) == 0;
}

/* Probe _dl_debug_state() so dlopen'ed libraries are seen at once. */
static void hook_dynamic_linker(struct proc *p, const struct pt_maps *maps)
{
	for (size_t i = 0; i < maps->n && !p->dl_tried; i++) {
		const struct pt_mapping *mp = &maps->v[i];
		struct pt_elf *e;
		char *path;

		if (!pt_mapping__is_exec_file(mp) || !is_dynamic_linker(mp->path))
			continue;
		p->dl_tried = true; /* one ld.so per process: don't re-read it each rescan */
		path = pt_resolver__host_path(p->tgt.pid, mp);
		if (!path || pt_elf__open(&e, path)) {
			free(path);
			continue;
		}
		for (size_t k = 0; k < e->nsyms; k++) {
			if (strcmp(e->syms[k].name, "_dl_debug_state") != 0)
				continue;
			if (pt_attach__dl_hook(p->run->att, p->idx, p->tgt.pid, path,
					       e->syms[k].file_off) == 0)
				p->dl_hooked = true;
			break;
		}
		pt_elf__free(e);
		free(path);
	}
	if (p->dl_tried && !p->dl_hooked)
		vlog("proftrace: pid %d: no dynamic linker hook; new libraries are seen within "
		     "%d ms\n", p->tgt.pid, RESCAN_MS);
}

static void rescan(struct proc *p)
{
	struct pt_maps maps = { 0 };
	size_t before = pt_resolver__nfuncs(p->res);
	char err[1024];
	int n;

	p->rescan = false;
	if (p->have_py)
		update_trampoline(p);
	if (pt_maps__read_pid(&maps, p->tgt.pid))
		return; /* exiting: the pidfd tells us */
	if (!p->dl_tried)
		hook_dynamic_linker(p, &maps);
	n = pt_resolver__update(p->res, &maps, false, err, sizeof(err));
	pt_maps__free(&maps);
	if (n < 0) {
		clear_status();
		fprintf(stderr, "proftrace: warning: %s\n", err);
		return;
	}
	if (n == 0)
		return;
	clear_status();
	n = attach_new(p, before);
	if (n > 0) {
		const struct pt_func *f = pt_resolver__func(p->res, before);

		fprintf(stderr, "proftrace: attached %d more probe%s (%s) to pid %d at +%.3fs\n", n,
			n == 1 ? "" : "s", f->object, p->tgt.pid, since_start_s(p->run));
	}
}

static int read_target(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return pt_python__read(*(const int *)ctx, addr, buf, len);
}

/* Is every Python call seen? Checked at start and on each rescan: the
 * 3.12+ perf trampoline can be switched on and off at run time. */
static void update_trampoline(struct proc *p)
{
	int t;

	if (p->py.L.evalframe_all_calls || !p->py.L.interp_eval_frame)
		return;
	t = pt_python__trampoline(&p->py, p->tgt.pid);
	if (t < 0)
		return;
	p->tramp_checks++;
	p->tramp_on += t;
}

static bool py_exact(const struct proc *p)
{
	return p->py.L.evalframe_all_calls ||
	       (p->tramp_checks && p->tramp_on == p->tramp_checks);
}

/* A py: probe that opens steps or bucket intervals needs its entries. */
static bool py_has_roles(const struct pt_config *cfg)
{
	for (size_t i = 0; i < cfg->nprobes; i++)
		if (cfg->probes[i].kind == PT_PROBE_PY &&
		    (cfg->probes[i].is_step || cfg->probes[i].bucket_mask || cfg->probes[i].nvals))
			return true;
	return false;
}

/*
 * Probe the frame evaluator? python_mode auto: where it sees every call,
 * or where a py: probe is a step or in a bucket (they need entries), or
 * when there are no samples to time functions with. Decided on the first
 * Python process: the BPF object is loaded once.
 */
static bool want_py_probe(const struct run *r, const struct proc *p)
{
	if (!r->want_py)
		return false;
	switch (r->cfg.python_mode) {
	case PT_PYMODE_EVALFRAME:
		return true;
	case PT_PYMODE_SAMPLED:
		return false;
	case PT_PYMODE_AUTO:
		break;
	}
	return py_exact(p) || !r->cfg.sample_hz || py_has_roles(&r->cfg);
}

/* How p's py: rows are timed: "exact", "sampled" or "c-entry-only". */
static const char *py_timing(const struct proc *p)
{
	if (p->py_probed && py_exact(p))
		return "exact";
	if (p->sampled && p->run->cfg.python_mode != PT_PYMODE_EVALFRAME)
		return "sampled";
	return "c-entry-only";
}

/* Code objects -> py: functions, for the probe and the sampler. */
static int start_python(struct proc *p)
{
	struct pt_pyprobe_opts o = { 0 };

	snprintf(p->proc_root, sizeof(p->proc_root), "/proc/%d/root", p->tgt.pid);
	snprintf(p->proc_cwd, sizeof(p->proc_cwd), "/proc/%d/cwd", p->tgt.pid);
	o.cfg = &p->run->cfg;
	o.res = p->res;
	o.layout = &p->py.L;
	o.types.code_type = p->py.code_type;
	o.types.unicode_type = p->py.unicode_type;
	o.mem.read = read_target;
	o.mem.ctx = &p->tgt.pid;
	o.root = p->proc_root;
	o.cwd = p->proc_cwd;
	p->pp = pt_pyprobe__new(&o);
	return p->pp ? 0 : -ENOMEM;
}

/* Say once, at attach, when p's py: rows will not be exact. */
static void warn_py_timing(const struct proc *p)
{
	const struct run *r = p->run;
	const char *why = p->py.L.minor == 11 ? "3.11 runs Python-to-Python calls inside one "
						"_PyEval_EvalFrameDefault"
					      : "the perf trampoline is off";
	const char *fix = p->py.L.minor >= 12 ? "; restart the server with PYTHONPERFSUPPORT=1 "
						"for exact times"
					      : "";

	if (!r->want_py || !p->have_py || (p->py_probed && py_exact(p)))
		return;
	if (!strcmp(py_timing(p), "sampled"))
		fprintf(stderr,
			"proftrace: warning: Python %s: not every call can be seen (%s); py: rows "
			"get sampled times (timing \"sampled\")%s\n",
			p->py.version,
			p->py_probed || r->cfg.python_mode != PT_PYMODE_SAMPLED ? why
										 : "python_mode sampled",
			r->cfg.python_mode == PT_PYMODE_SAMPLED ? "" : fix);
	else
		fprintf(stderr,
			"proftrace: warning: Python %s: only calls made from C code are seen "
			"(%s); py: rows are marked timing \"c-entry-only\"%s\n",
			p->py.version, why, fix);
}

/* Stack sampling of every thread, loaded with the first Python process's
 * layout. */
static int open_sampler(struct run *r, char *err, size_t errlen)
{
	struct pt_sampler_opts so = { 0 };

	so.hz = r->cfg.sample_hz;
	so.offcpu = true;
	so.py = r->py0;
	so.ringbuf_mb = r->cfg.ringbuf_mb;
	so.on_sample = on_sample;
	so.ctx = r;
	return pt_sampler__open(&r->smp, &so, err, errlen);
}

/* Sample p too. Not fatal when it cannot be: its probes still give true
 * figures. */
static int sample_proc(struct proc *p)
{
	struct run *r = p->run;
	struct pt_pysym_opts yo = { 0 };
	char err[256];
	int e;

	if (!r->smp || !p->have_py)
		return 0;
	if (p->py.L.minor != r->py0->L.minor) {
		fprintf(stderr, "proftrace: warning: pid %d runs Python %s, the sampler reads %s: "
				"its stacks are not sampled\n", p->tgt.pid, p->py.version,
			r->py0->version);
		p->py_why_not = "its Python minor version differs from the first process's";
		return 0;
	}
	yo.layout = &p->py.L;
	yo.types.code_type = p->py.code_type;
	yo.types.unicode_type = p->py.unicode_type;
	yo.mem.read = read_target;
	yo.mem.ctx = &p->tgt.pid;
	yo.pp = p->pp;
	p->sym = pt_pysym__new(&yo);
	p->v.stk = pt_stacks__new();
	if (!p->sym || !p->v.stk)
		return -ENOMEM;
	for (size_t i = 0; i < p->nfs; i++) {
		const struct pt_func *f = pt_resolver__func(p->res, i);

		if (f->py && f->lines_spec >= 0)
			pt_stacks__want_lines(p->v.stk, (uint32_t)f->fid);
	}
	e = pt_sampler__add_process(r->smp, p->tgt.pid, p->py.runtime, err, sizeof(err));
	if (e == -ENOMEM)
		return e;
	if (e) {
		fprintf(stderr, "proftrace: warning: no stack sampling of pid %d: %s\n", p->tgt.pid,
			err);
		return 0;
	}
	p->sampled = true;
	return 0;
}

/* The frame evaluator's probe in p, where python_mode wants it. */
static int probe_python(struct proc *p, char *err, size_t errlen)
{
	struct run *r = p->run;
	int e;

	if (!r->py_probe_wanted || !p->have_py)
		return 0;
	e = pt_attach__python(r->att, p->idx, p->tgt.pid, &p->py, err, errlen);
	if (!e)
		p->py_probed = true;
	return e;
}

static void print_dry_run(const struct proc *p)
{
	const struct pt_config *cfg = &p->run->cfg;

	if (p->run->multi)
		printf("pid %d (%s):\n", p->tgt.pid, p->tgt.comm);
	printf("%-40s %-10s %-40s %-12s %s\n", "PROBE", "FUNCTION", "OBJECT", "OFFSET",
	       "PROBE SITE");
	for (size_t s = 0; s < cfg->nprobes; s++) {
		const struct pt_probe_spec *sp = &cfg->probes[s];
		bool any = false;

		for (size_t i = 0; i < pt_resolver__nfuncs(p->res); i++) {
			const struct pt_func *f = pt_resolver__func(p->res, i);

			if ((size_t)f->spec != s)
				continue;
			any = true;
			printf("%-40s %-10s %-40s 0x%-10llx +%u %s%s%s\n", sp->text, f->symbol,
			       f->object, (unsigned long long)f->file_off, f->site.skip,
			       pt_insn_class__str(f->site.cls), f->unusable ? ", unusable: " : "",
			       f->unusable ? f->unusable : "");
			for (size_t a = 0; a < f->naliases; a++)
				printf("%-40s   alias %s\n", "", f->aliases[a]);
		}
		if (sp->kind == PT_PROBE_PY) {
			if (p->have_py)
				printf("%-40s python %s (%s): matched by code object as it runs\n",
				       sp->text, p->py.version, p->py.path);
			else
				printf("%-40s no CPython in this process\n", sp->text);
			continue;
		}
		if (!any && !pt_resolver__spec_nfuncs(p->res, s))
			printf("%-40s pending: no mapped object matches '%s' yet; it will be "
			       "attached when loaded\n",
			       sp->text, sp->object);
	}
}
static int mkdir_p(const char *dir)
{
	char buf[PATH_MAX];
	size_t n = strlen(dir);

	if (n == 0 || n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, dir, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

static void default_output(const struct run *r, char *buf, size_t len)
{
	time_t t = (time_t)(r->t0_unix / 1000000000ull);
	struct tm tm;
	char stamp[32];

	localtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	snprintf(buf, len, "proftrace_out/%s-%d-%s", r->procs[0]->tgt.comm, r->procs[0]->tgt.pid,
		 stamp);
	/* comm may hold '/' (kernel threads rename freely): keep one dir */
	for (char *p = buf + strlen("proftrace_out/"); *p; p++)
		if (*p == '/' || *p == ' ')
			*p = '_';
}

static int thread_wall_cmp(const void *a, const void *b)
{
	const struct pt_report_thread *x = a, *y = b;
	uint64_t wx = x->on_ns + x->off_ns, wy = y->on_ns + y->off_ns;

	if (wx != wy)
		return wx < wy ? 1 : -1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* A function as one summary document sees it: a process's own, or one
 * of the merged view (then p is the first process that resolved it). */
struct fref {
	const struct pt_func *f;
	struct proc *p;
	int fid; /* in the document's view */
	bool attached;
	double at_s;
	const char *reason;
	unsigned int last_line;
};

/* What one summary document is built from. */
struct docsrc {
	struct run *r;
	struct view *v;
	struct proc *p; /* NULL: the merged view */
	struct fref *fr;
	size_t nfr;
};

static int build_sampling(const struct docsrc *d, struct pt_report_sampling *sp,
			  struct pt_report_thread **threads)
{
	struct run *r = d->r;
	const struct pt_stacks_totals *t = pt_stacks__totals(d->v->stk);
	size_t n = pt_stacks__nthreads(d->v->stk);
	struct pt_sampler_stats ss;
	struct pt_report_thread *v;

	pt_sampler__stats(r->smp, &ss);
	v = xcalloc(n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct pt_stacks_thread *th = pt_stacks__thread(d->v->stk, i);

		v[i].tid = th->tid;
		v[i].name = th->name;
		v[i].python = th->python;
		v[i].samples = th->t.samples;
		v[i].on_ns = th->t.on_ns;
		v[i].off_ns = th->t.off_ns;
	}
	qsort(v, n, sizeof(*v), thread_wall_cmp);
	*threads = v;
	sp->hz = r->cfg.sample_hz;
	sp->period_ns = 1000000000ull / r->cfg.sample_hz;
	sp->mechanism = "perf cpu-clock event per thread (on-CPU) + sched_switch (off-CPU)";
	sp->threads = v;
	sp->nthreads = n;
	sp->samples = t->t.samples;
	sp->on_ns = t->t.on_ns;
	sp->off_ns = t->t.off_ns;
	sp->intervals = t->intervals;
	sp->python_samples = t->python_samples;
	sp->no_frames = t->no_frames;
	sp->not_python = t->not_python;
	sp->truncated = t->truncated;
	sp->unreadable = t->unreadable;
	sp->unknown_frames = t->unknown_frames;
	sp->lost = ss.bpf.lost + ss.bad_records;
	/* threads created later inherit their event: count what was seen */
	sp->threads_sampled = n > ss.threads ? (unsigned int)n : ss.threads;
	sp->threads_failed = ss.threads_failed;
	sp->folded = "stacks.folded";
	sp->svg = "flame.svg";
	return 0;
}

/* Skip to the start of line k (1-based) from p, which starts line at. */
static const char *skip_lines(const char *p, const char *end, unsigned int at, unsigned int k)
{
	const char *nl;

	for (; at < k && p < end; at++) {
		nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
	}
	return p;
}

/* The line starting at p as a string of its own; NULL when past the end. */
static char *line_at(const char *p, const char *end)
{
	const char *nl;
	size_t n;

	if (p >= end)
		return NULL;
	nl = memchr(p, '\n', (size_t)(end - p));
	n = (size_t)((nl ? nl : end) - p);
	if (n && p[n - 1] == '\r')
		n--;
	return strndup(p, n);
}

static void free_lines(struct pt_report_lines_fn *l, size_t n)
{
	for (size_t i = 0; l && i < n; i++) {
		for (size_t k = 0; k < l[i].nlines; k++)
			free((char *)l[i].lines[k].text);
		free((struct pt_report_line *)l[i].lines);
		free((char *)l[i].source_error);
	}
	free(l);
}

/* One `lines` function: every source line from its first to its last,
 * with the samples each got. */
static int build_lines_fn(const struct docsrc *d, const struct fref *fr,
			  struct pt_report_lines_fn *l)
{
	const struct pt_func *f = fr->f;
	const struct pt_stacks_time *t = pt_stacks__func(d->v->stk, (uint32_t)fr->fid);
	const struct pt_stacks_line *sl;
	const char *src, *p;
	size_t nsl, k = 0, srclen;
	unsigned int first = f->py_line, last = fr->last_line;
	struct pt_report_line *v;

	sl = pt_stacks__lines(d->v->stk, (uint32_t)fr->fid, &nsl);
	if (last < first)
		last = first;
	if (nsl && sl[0].line < first)
		first = sl[0].line; /* a table that disagrees with co_firstlineno */
	if (nsl && sl[nsl - 1].line > last)
		last = sl[nsl - 1].line;
	l->probe = d->r->cfg.probes[f->lines_spec].text;
	l->file = f->object;
	l->function = f->symbol;
	l->first_line = first;
	l->last_line = last;
	l->exact = fr->p->py_probed && py_exact(fr->p);
	l->fid = fr->fid;
	l->samples = t ? t->samples : 0;
	l->on_ns = t ? t->on_ns : 0;
	l->off_ns = t ? t->off_ns : 0;
	src = fr->p->pp ? pt_pyprobe__source(fr->p->pp, f->object, &srclen) : NULL;
	if (!src) {
		char buf[PATH_MAX + 96];

		snprintf(buf, sizeof(buf), "cannot read %s through /proc/%d/root", f->object,
			 fr->p->tgt.pid);
		l->source_error = strdup(buf);
		if (!l->source_error)
			return -ENOMEM;
	}
	v = xcalloc(last - first + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	l->lines = v;
	/* one pass over the source: from the first line on, line by line */
	p = src ? skip_lines(src, src + srclen, 1, first) : NULL;
	for (unsigned int ln = first; ln <= last; ln++) {
		struct pt_report_line *e = &v[l->nlines++];

		e->line = ln;
		if (p) {
			e->text = line_at(p, src + srclen);
			p = skip_lines(p, src + srclen, ln, ln + 1);
		}
		while (k < nsl && sl[k].line < ln)
			k++;
		if (k < nsl && sl[k].line == ln) {
			e->samples = sl[k].t.samples;
			e->on_ns = sl[k].t.on_ns;
			e->off_ns = sl[k].t.off_ns;
		}
	}
	return 0;
}

/* `lines`: the functions of each lines directive, in config order. */
static int build_lines(const struct docsrc *d, struct pt_report_lines_fn **out, size_t *nout)
{
	const struct pt_config *cfg = &d->r->cfg;
	struct pt_report_lines_fn *v = xcalloc(d->nfr + cfg->nprobes, sizeof(*v));
	size_t n = 0;
	int e = 0;

	if (!v)
		return -ENOMEM;
	for (size_t s = 0; s < cfg->nprobes && !e; s++) {
		bool any = false;

		if (!cfg->probes[s].is_lines)
			continue;
		for (size_t i = 0; i < d->nfr && !e; i++) {
			const struct pt_func *f = d->fr[i].f;

			if (!f->py || f->lines_spec != (int)s)
				continue;
			any = true;
			e = build_lines_fn(d, &d->fr[i], &v[n++]);
		}
		if (!any && !e) {
			v[n].probe = cfg->probes[s].text;
			v[n].fid = -1;
			v[n].source_error = strdup("no code object of this name was sampled or "
						   "called while attached");
			e = v[n++].source_error ? 0 : -ENOMEM;
		}
	}
	*out = v;
	*nout = n;
	return e;
}

/* trace.json (--trace), from the events kept while the run went. */
static int write_trace(struct run *r, const char *dir)
{
	struct pt_trace_write_opts o = { 0 };
	const char **bnames = calloc(r->cfg.nbuckets + 1, sizeof(*bnames));
	struct pt_trace_proc *procs = xcalloc(r->nprocs, sizeof(*procs));
	char path[PATH_MAX + 32];
	FILE *f;
	int e;

	if (!bnames || !procs) {
		free(bnames);
		free(procs);
		return -ENOMEM;
	}
	for (size_t b = 0; b < r->cfg.nbuckets; b++)
		bnames[b] = r->cfg.buckets[b].name;
	for (size_t i = 0; i < r->nprocs; i++)
		procs[i] = (struct pt_trace_proc){ .pid = r->procs[i]->tgt.pid,
						   .name = r->procs[i]->tgt.comm,
						   .rank = r->procs[i]->rank };
	o.procs = procs;
	o.nprocs = r->nprocs;
	o.t0 = r->t0_mono;
	o.start_unix_ns = r->t0_unix;
	o.version = PT_VERSION;
	o.bucket_names = bnames;
	snprintf(path, sizeof(path), "%s/trace.json", dir);
	f = fopen(path, "we");
	if (!f) {
		e = -errno;
	} else {
		e = pt_trace__write(r->trace, f, &o);
		if (fclose(f) && !e)
			e = -errno;
	}
	free(bnames);
	free(procs);
	if (e)
		fprintf(stderr, "proftrace: cannot write %s: %s\n", path, strerror(-e));
	else
		fprintf(stderr, "proftrace: wrote %s\n", path);
	return e;
}

/* stacks.folded and flame.svg, from the sampled call tree. */
static int write_flame(const struct docsrc *d, const char *dir)
{
	struct run *r = d->r;
	const struct pt_stacks *stk = d->v->stk;
	const struct pt_stacks_totals *t = pt_stacks__totals(stk);
	struct pt_flame_svg_opts o = { 0 };
	char path[PATH_MAX + 32], title[256], sub[256];
	const char *names[] = { "stacks.folded", "flame.svg" };
	int e = 0;

	if (r->nprocs > 1)
		snprintf(title, sizeof(title), "proftrace: %s (pid %d) and %zu more process%s",
			 r->procs[0]->tgt.comm, r->procs[0]->tgt.pid, r->nprocs - 1,
			 r->nprocs == 2 ? "" : "es");
	else
		snprintf(title, sizeof(title), "proftrace: %s (pid %d)", r->procs[0]->tgt.comm,
			 r->procs[0]->tgt.pid);
	snprintf(sub, sizeof(sub),
		 "wall time: on-CPU sampled at %u Hz (%.3f s) + off-CPU intervals (%.3f s)",
		 r->cfg.sample_hz, (double)t->t.on_ns / 1e9, (double)t->t.off_ns / 1e9);
	o.title = title;
	o.subtitle = sub;
	o.unit = "us";
	for (size_t i = 0; i < 2 && !e; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		f = fopen(path, "we");
		if (!f) {
			e = -errno;
		} else {
			e = i == 0 ? pt_flame__write_folded(pt_stacks__flame(stk), f)
				   : pt_flame__write_svg(pt_stacks__flame(stk), f, &o);
			if (fclose(f) && !e)
				e = -errno;
		}
		if (e)
			fprintf(stderr, "proftrace: cannot write %s: %s\n", path, strerror(-e));
		else
			fprintf(stderr, "proftrace: wrote %s\n", path);
	}
	return e;
}


/* The functions of p's own document, in its fid order. */
static struct fref *proc_frefs(struct proc *p, size_t *n)
{
	struct fref *v = xcalloc(p->nfs, sizeof(*v));

	if (!v)
		return NULL;
	for (size_t i = 0; i < p->nfs; i++)
		v[i] = (struct fref){ .f = pt_resolver__func(p->res, i), .p = p, .fid = (int)i,
				      .attached = p->fs[i].attached, .at_s = p->fs[i].at_s,
				      .reason = p->fs[i].reason,
				      .last_line = p->fs[i].last_line };
	*n = p->nfs;
	return v;
}

/* The functions of the merged document. Not attached anywhere: the
 * first process's reason. */
static struct fref *merged_frefs(struct run *r, size_t *n)
{
	struct fref *v = xcalloc(r->nmf, sizeof(*v));

	if (!v)
		return NULL;
	for (size_t i = 0; i < r->nmf; i++) {
		const struct mfunc *m = &r->mf[i];
		struct proc *p = m->p;
		const char *reason = NULL;

		for (size_t k = 0; k < p->nfs && !m->attached; k++)
			if (pt_resolver__func(p->res, k) == m->f)
				reason = p->fs[k].reason;
		v[i] = (struct fref){ .f = m->f, .p = p, .fid = (int)i, .attached = m->attached,
				      .at_s = m->at_s, .reason = reason,
				      .last_line = m->last_line };
	}
	*n = r->nmf;
	return v;
}

/* How many functions a document's probe s resolved to. */
static size_t spec_nfuncs(const struct docsrc *d, size_t s)
{
	size_t n = 0;

	for (size_t i = 0; i < d->nfr; i++)
		n += (size_t)d->fr[i].f->spec == s;
	return n;
}

/* Whether probe s named any mapped object, in the document's processes. */
static bool spec_has_objects(const struct docsrc *d, size_t s)
{
	for (size_t i = 0; i < d->r->nprocs; i++) {
		const struct proc *p = d->r->procs[i];

		if ((!d->p || d->p == p) && pt_resolver__spec_nobjects(p->res, s))
			return true;
	}
	return false;
}

/* The process whose interpreter a document describes: its own, or the
 * first Python process's for the merged one. */
static struct proc *py_proc(const struct docsrc *d)
{
	if (d->p)
		return d->p->have_py ? d->p : NULL;
	for (size_t i = 0; i < d->r->nprocs; i++)
		if (d->r->procs[i]->have_py)
			return d->r->procs[i];
	return NULL;
}

static void fill_python(const struct docsrc *d, struct proc *p, struct pt_report_python *pyrep)
{
	const struct run *r = d->r;
	const struct pt_pyprobe_stats *ps = p->pp ? pt_pyprobe__stats(p->pp) : NULL;
	bool exact = p->py_probed && py_exact(p);
	bool sampled = !strcmp(py_timing(p), "sampled");

	pyrep->version = p->py.version;
	pyrep->path = pt_target__view(p->tgt.root, p->py.path);
	pyrep->mechanism = sampled ? "sampled" : "evalframe";
	pyrep->probe = r->att && p->py_probed ? pt_attach__py_probe(r->att) : NULL;
	pyrep->perf_trampoline = p->tramp_checks && p->tramp_on == p->tramp_checks;
	pyrep->timing = py_timing(p);
	if (p->py_why_not && !p->py_probed && !p->sampled)
		pyrep->why = p->py_why_not;
	else if (r->cfg.python_mode == PT_PYMODE_SAMPLED)
		pyrep->why = "python_mode sampled: py: functions are timed from stack samples "
			     "only, the frame evaluator is not probed";
	else if (p->py.L.evalframe_all_calls)
		pyrep->why = "every Python call enters _PyEval_EvalFrameDefault on this "
			     "version: each configured call is timed from entry to return";
	else if (exact)
		pyrep->why = "the perf trampoline was active at every check: every Python "
			     "call enters _PyEval_EvalFrameDefault";
	else if (p->py.L.minor == 11)
		pyrep->why = "Python 3.11 runs Python-to-Python calls inside the caller's "
			     "_PyEval_EvalFrameDefault: only calls made from C code are seen";
	else
		pyrep->why = "the perf trampoline was not active (at every check): Python "
			     "3.12+ runs Python-to-Python calls inside the caller's "
			     "_PyEval_EvalFrameDefault, only calls made from C code are seen";
	if (sampled && !p->py_probed && r->cfg.python_mode == PT_PYMODE_AUTO)
		pyrep->why = p->py.L.minor == 11
				     ? "Python 3.11 runs Python-to-Python calls inside the "
				       "caller's _PyEval_EvalFrameDefault, so calls cannot all "
				       "be seen: py: functions are timed from stack samples"
				     : "the perf trampoline was not active: Python 3.12+ runs "
				       "Python-to-Python calls inside the caller's "
				       "_PyEval_EvalFrameDefault, so py: functions are timed "
				       "from stack samples";
	if (r->cfg.python_mode == PT_PYMODE_SAMPLED)
		pyrep->advice = NULL;
	else if (!exact && p->py.L.minor >= 12)
		pyrep->advice = "restart the server with PYTHONPERFSUPPORT=1 (or python -X "
				"perf) for exact py: timing";
	else if (!exact && sampled)
		pyrep->advice = "py: rows carry sampled times, not call counts; Python 3.10 "
				"or 3.12+ with PYTHONPERFSUPPORT=1 gives exact timing";
	else if (!exact)
		pyrep->advice = "counts and times of py: rows are partial; Python 3.10 or "
				"3.12+ with PYTHONPERFSUPPORT=1 gives exact timing";
	if (ps) {
		pyrep->code_objects = ps->codes;
		pyrep->matched = ps->matched;
		pyrep->unreadable = ps->unreadable;
		pyrep->no_source = ps->no_source;
		pyrep->no_source_file = ps->no_source ? ps->no_source_file : NULL;
	}
}

/* The GPU stream a document reports: its process's; for the merged
 * one, the only process that has one. NULL: gpu_why says why. */
static struct proc *gpu_proc(const struct docsrc *d, const char **why)
{
	struct proc *only = NULL;
	size_t n = 0;

	if (d->p) {
		*why = d->p->gpu_why;
		return d->p->gpu ? d->p : NULL;
	}
	for (size_t i = 0; i < d->r->nprocs; i++)
		if (d->r->procs[i]->gpu) {
			only = d->r->procs[i];
			n++;
		}
	*why = d->r->procs[0]->gpu_why;
	if (n > 1) {
		*why = "several processes have a GPU stream: see processes[].gpu";
		return NULL;
	}
	return only;
}

/* Everything one summary document needs, owned here. */
struct docbuf {
	struct pt_report rep;
	struct pt_report_python pyrep;
	struct pt_report_sampling smp;
	struct pt_report_trace trace_rep;
	struct pt_gpuring_info gpu_info;
	struct pt_report_thread *threads;
	struct pt_report_lines_fn *lfns;
	size_t nlfns;
	struct pt_report_func *rows;
	struct pt_report_bucket *bks;
	int *pids;
	char kernel[128];
};

static void docbuf_free(struct docbuf *b)
{
	free(b->rows);
	free(b->bks);
	free(b->threads);
	free(b->pids);
	free_lines(b->lfns, b->nlfns);
	memset(b, 0, sizeof(*b));
}

/*
 * The summary document of one view: a process's (d->p) or the merged
 * one. NULL on allocation failure (said).
 */
static cJSON *build_doc(const struct docsrc *d, struct docbuf *b)
{
	struct run *r = d->r;
	struct pt_report *rep = &b->rep;
	struct pt_counters c = { 0 };
	const struct pt_agg_health *ah;
	const struct pt_agg_step_stats *ss;
	struct proc *pyp = py_proc(d), *gp;
	struct proc *mp = d->p ? d->p : r->procs[0]; /* meta */
	struct utsname un;
	size_t nrows = 0, nunres = 0;
	const char *gwhy;

	if (r->att)
		pt_attach__counters(r->att, &c);
	for (size_t s = 0; s < r->cfg.nprobes; s++)
		nunres += spec_nfuncs(d, s) == 0;
	b->rows = xcalloc(d->nfr + nunres + 1, sizeof(*b->rows));
	b->bks = xcalloc(r->cfg.nbuckets + 1, sizeof(*b->bks));
	if (!b->rows || !b->bks)
		return NULL;
	/* Rows in config order: each probe's functions, then probes that
	 * found nothing (with the reason). */
	for (size_t s = 0; s < r->cfg.nprobes; s++) {
		const struct pt_probe_spec *sp = &r->cfg.probes[s];

		for (size_t i = 0; i < d->nfr; i++) {
			const struct fref *fr = &d->fr[i];
			const struct pt_func *f = fr->f;
			struct pt_report_func *row = &b->rows[nrows];

			if ((size_t)f->spec != s)
				continue;
			row->fid = fr->fid;
			row->probe = sp->text;
			row->object = f->object;
			row->symbol = f->symbol;
			row->aliases = (const char *const *)f->aliases;
			row->naliases = f->naliases;
			row->file_offset = f->file_off;
			row->probe_skip = f->site.skip;
			row->probe_insn = pt_insn_class__str(f->site.cls);
			row->attached = fr->attached;
			row->attached_after_s = fr->at_s;
			row->reason = fr->reason;
			row->py = f->py;
			row->line = f->py_line;
			row->timing = f->py ? py_timing(fr->p) : "exact";
			if (f->py && d->v->stk) {
				const struct pt_stacks_time *t =
					pt_stacks__func(d->v->stk, (uint32_t)fr->fid);

				row->sampled = true;
				row->s_samples = t ? t->samples : 0;
				row->s_on_ns = t ? t->on_ns : 0;
				row->s_off_ns = t ? t->off_ns : 0;
			}
			nrows++;
		}
		if (spec_nfuncs(d, s) == 0) {
			b->rows[nrows].fid = -1;
			b->rows[nrows].probe = sp->text;
			b->rows[nrows].py = sp->kind == PT_PROBE_PY;
			b->rows[nrows].sampled = b->rows[nrows].py && d->v->stk;
			b->rows[nrows].reason =
				sp->kind == PT_PROBE_PY
					? "no code object of this name ran while attached (module "
					  "not imported, or the function never called)"
				: spec_has_objects(d, s)
					? "symbol not found in the mapped objects"
					: "no mapped object matched while attached";
			nrows++;
		}
	}
	for (size_t k = 0; k < r->cfg.nbuckets; k++) {
		b->bks[k].name = r->cfg.buckets[k].name;
		b->bks[k].domain = r->cfg.buckets[k].domain;
	}
	uname(&un);
	snprintf(b->kernel, sizeof(b->kernel), "%s", un.release);
	ah = pt_agg__health(d->v->agg);
	ss = pt_agg__steps(d->v->agg);
	rep->meta.tool = "proftrace";
	rep->meta.version = PT_VERSION;
	rep->meta.pid = mp->tgt.pid;
	rep->meta.comm = mp->tgt.comm;
	rep->meta.exe = pt_target__view(mp->tgt.root, mp->tgt.exe);
	rep->meta.start_unix_ns = r->t0_unix;
	rep->meta.duration_s = (double)(r->t_end_mono - r->t0_mono) / 1e9;
	rep->meta.targets_file = r->cfg.path;
	rep->meta.kernel = b->kernel;
	rep->meta.warmup_steps = r->cfg.warmup_steps;
	rep->meta.step_probe = r->cfg.step_probe >= 0 ? r->cfg.probes[r->cfg.step_probe].text
						       : NULL;
	rep->meta.step_mode = r->cfg.step_mode == PT_STEP_ITERATION ? "iteration" : "call";
	if (r->multi && d->p) {
		rep->meta.process = true;
		rep->meta.rank = d->p->rank;
		rep->meta.local_rank = d->p->local_rank;
		rep->meta.added_s = (double)(d->p->t_added - r->t0_mono) / 1e9;
		if (d->p->t_added < r->t0_mono)
			rep->meta.added_s = 0;
		rep->meta.ended = d->p->end_why;
		rep->meta.ended_s = d->p->ended ? (double)(d->p->t_ended - r->t0_mono) / 1e9 : 0;
	} else if (r->multi) {
		b->pids = xcalloc(r->nprocs, sizeof(*b->pids));
		if (!b->pids)
			return NULL;
		for (size_t i = 0; i < r->nprocs; i++)
			b->pids[i] = r->procs[i]->tgt.pid;
		rep->meta.pids = b->pids;
		rep->meta.npids = r->nprocs;
		rep->meta.children = r->env.children;
		for (size_t i = 0; i < r->nskipped && i < PT_REPORT_MAX_SKIPPED; i++) {
			rep->meta.skipped[i].pid = r->skipped[i].pid;
			rep->meta.skipped[i].comm = r->skipped[i].comm;
			rep->meta.skipped[i].why = r->skipped[i].why;
		}
		rep->meta.nskipped = r->nskipped;
	}
	if (r->want_py && pyp) {
		fill_python(d, pyp, &b->pyrep);
		rep->meta.python = &b->pyrep;
	}
	if (d->v->stk) {
		int e = build_sampling(d, &b->smp, &b->threads);

		if (!e)
			e = build_lines(d, &b->lfns, &b->nlfns);
		if (e)
			return NULL;
		rep->meta.sampling = &b->smp;
		rep->lines = b->lfns;
		rep->nlines = b->nlfns;
		if (d->p && r->multi) {
			/* the flame graph files are the merged view's */
			b->smp.folded = NULL;
			b->smp.svg = NULL;
		}
	}
	rep->agg = d->v->agg;
	rep->buckets = b->bks;
	rep->nbuckets = r->cfg.nbuckets;
	rep->funcs = b->rows;
	rep->nfuncs = nrows;
	rep->t0_mono = r->t0_mono;
	if (d->v->runs && (pt_runs__failed(d->v->runs) || pt_runs__finish(d->v->runs)))
		fprintf(stderr, "proftrace: warning: out of memory: no runs in the report\n");
	else
		rep->runs = d->v->runs;
	rep->vals = &d->v->sv;
	rep->val_records_dropped = c.val_dropped;
	gp = gpu_proc(d, &gwhy);
	if (gp) {
		if (gp->gpu_oom)
			fprintf(stderr, "proftrace: warning: out of memory for GPU records of pid %d: "
					"the GPU figures are incomplete\n", gp->tgt.pid);
		pt_gpuring__info(gp->gr, &b->gpu_info);
		if (b->gpu_info.conflict_call && (!r->multi || d->p))
			fprintf(stderr, "proftrace: warning: CUPTI could not be enabled in pid %d: %s "
					"failed with %s (another profiler holding CUPTI, or no GPU "
					"driver): no GPU records\n", gp->tgt.pid,
				pt_gpuring__call_name(b->gpu_info.conflict_call),
				pt_gpuring__result_name(b->gpu_info.conflict_code));
		if (!gp->gpu_joined) /* the merged document may show it too */
			gp->gres = pt_gpu__join(gp->gpu, r->t0_mono, r->t_end_mono);
		gp->gpu_joined = true;
		rep->gpu = gp->gres;
		rep->gpu_info = &b->gpu_info;
		if (!rep->gpu)
			gwhy = "out of memory joining GPU records";
	}
	rep->gpu_why = gwhy;
	rep->health.events = d->p ? d->p->events : r->events;
	rep->health.process = r->multi && d->p;
	rep->health.dropped_events = c.dropped;
	rep->health.depth_overflow = c.depth_overflow;
	rep->health.unwound = c.unwound;
	rep->health.orphan_returns = c.orphan_returns;
	rep->health.py_unreadable = c.py_unreadable;
	rep->health.py_map_full = c.py_map_full;
	for (size_t i = 0; i < r->nprocs; i++)
		if (!d->p || d->p == r->procs[i])
			rep->health.py_unresolved += r->procs[i]->py_unresolved;
	rep->health.lost_calls = ah->lost_calls;
	rep->health.steps_incomplete = ss->incomplete;
	rep->health.probes_requested = (unsigned int)(d->nfr + nunres);
	/* functions with probes in place: native uprobes, and py: functions
	 * the frame probe (or the sampler) found */
	rep->health.probes_attached = 0;
	for (size_t i = 0; i < d->nfr; i++)
		rep->health.probes_attached += d->fr[i].attached;
	if (r->trace && !(r->multi && d->p)) {
		struct pt_trace_stats ts;

		pt_trace__stats(r->trace, &ts);
		b->trace_rep = (struct pt_report_trace){ .file = "trace.json", .events = ts.events,
							 .dropped = ts.dropped,
							 .max_events = ts.max_events,
							 .truncated = ts.truncated };
		rep->meta.trace = &b->trace_rep;
	}
	return pt_summary__build(rep);
}

/* The skew of step times across the processes with steps. */
static int build_skew(struct run *r, cJSON *doc)
{
	const struct pt_skew_steps **v = xcalloc(r->nprocs, sizeof(*v));
	struct proc **who = xcalloc(r->nprocs, sizeof(*who));
	struct pt_skew k;
	size_t n = 0;
	int e = -ENOMEM;

	if (v && who)
		for (size_t i = 0; i < r->nprocs; i++)
			if (r->procs[i]->steps.n || r->procs[i]->steps.oom) {
				who[n] = r->procs[i];
				v[n++] = &r->procs[i]->steps;
			}
	if (v && who) {
		memset(&k, 0, sizeof(k));
		e = n >= 2 ? pt_skew__compute(v, n, &k) : 0;
		if (!e) {
			struct pt_report_skew_proc *sp = xcalloc(n, sizeof(*sp));

			e = -ENOMEM;
			if (sp) {
				for (size_t i = 0; i < n; i++)
					sp[i] = (struct pt_report_skew_proc){
						.pid = who[i]->tgt.pid, .rank = who[i]->rank,
						.steps = who[i]->steps.n,
						.first = n >= 2 ? k.first[i] : 0,
						.slowest = n >= 2 ? k.slowest[i] : 0,
						.fastest = n >= 2 ? k.fastest[i] : 0 };
				e = pt_summary__add_skew(doc, n >= 2 ? &k : NULL, sp, n);
				free(sp);
			}
		}
		pt_skew__free_result(&k);
	}
	free(v);
	free(who);
	return e;
}

static int write_outputs(struct run *r)
{
	struct docbuf top = { 0 }, *pb = NULL;
	struct docsrc td = { .r = r };
	char dir[PATH_MAX], path[PATH_MAX + 32];
	struct docsrc *pds = NULL;
	cJSON *doc = NULL, *procs;
	int e = -ENOMEM;

	if (r->multi) {
		td.v = &r->all;
		td.fr = merged_frefs(r, &td.nfr);
		pds = xcalloc(r->nprocs, sizeof(*pds));
		pb = xcalloc(r->nprocs, sizeof(*pb));
		if (!td.fr || !pds || !pb)
			goto out;
	} else {
		td.v = &r->procs[0]->v;
		td.p = r->procs[0];
		td.fr = proc_frefs(r->procs[0], &td.nfr);
		if (!td.fr)
			goto out;
	}
	doc = build_doc(&td, &top);
	if (!doc)
		goto out;
	if (r->multi) {
		procs = cJSON_AddArrayToObject(doc, "processes");
		if (!procs)
			goto out;
		for (size_t i = 0; i < r->nprocs; i++) {
			cJSON *pd;

			pds[i] = (struct docsrc){ .r = r, .v = &r->procs[i]->v, .p = r->procs[i] };
			pds[i].fr = proc_frefs(r->procs[i], &pds[i].nfr);
			pd = pds[i].fr ? build_doc(&pds[i], &pb[i]) : NULL;
			if (!pd)
				goto out;
			cJSON_AddItemToArray(procs, pd);
		}
		if (build_skew(r, doc))
			goto out;
	}
	if (r->env.output)
		snprintf(dir, sizeof(dir), "%s", r->env.output);
	else
		default_output(r, dir, sizeof(dir));
	e = mkdir_p(dir);
	if (e) {
		fprintf(stderr, "proftrace: cannot create %s: %s\n", dir, strerror(-e));
		goto out;
	}
	if (td.v->stk) {
		e = write_flame(&td, dir);
		if (e)
			goto out;
	}
	for (size_t i = 0; i < pt_nemitters; i++) {
		FILE *f;

		if (pt_emitters[i].wanted && !pt_emitters[i].wanted(doc))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, pt_emitters[i].filename);
		f = fopen(path, "we");
		if (!f) {
			e = -errno;
			fprintf(stderr, "proftrace: cannot write %s: %s\n", path, strerror(-e));
			goto out;
		}
		e = pt_emitters[i].write(f, doc);
		if (fclose(f) && !e)
			e = -errno;
		if (e) {
			fprintf(stderr, "proftrace: cannot write %s: %s\n", path, strerror(-e));
			goto out;
		}
		fprintf(stderr, "proftrace: wrote %s\n", path);
	}
	if (r->trace) {
		e = write_trace(r, dir);
		if (e)
			goto out;
	}
	if (r->env.json)
		e = pt_summary__write_json(stdout, doc);
out:
	if (e == -ENOMEM)
		fprintf(stderr, "proftrace: out of memory writing the report\n");
	cJSON_Delete(doc);
	docbuf_free(&top);
	free(td.fr);
	for (size_t i = 0; pds && i < r->nprocs; i++) {
		free(pds[i].fr);
		docbuf_free(&pb[i]);
	}
	free(pds);
	free(pb);
	return e;
}

/* Tell the aggregators how many records BPF could not write, as it goes.
 * The count is the BPF object's: with several processes it cannot be
 * told whose they were, so each aggregator hears of all of them. */
static void note_drops(struct run *r)
{
	struct pt_counters c;
	uint64_t n;

	pt_attach__counters(r->att, &c);
	if (c.dropped <= r->dropped_seen)
		return;
	clear_status();
	if (!r->dropped_seen)
		fprintf(stderr, "proftrace: warning: the ring buffer is full, records are "
				"lost (raise `set ringbuf_mb` or lower `set poll_ms`)\n");
	n = c.dropped - r->dropped_seen;
	for (size_t i = 0; i < r->nprocs; i++)
		if (!r->procs[i]->ended)
			pt_agg__lost(r->procs[i]->v.agg, n);
	if (r->multi)
		pt_agg__lost(r->all.agg, n);
	r->dropped_seen = c.dropped;
}

/* Live status on a terminal, refreshed each second in place. */
struct status {
	bool on;
	uint64_t last_ns, last_events, last_steps;
};

static void status_tick(struct run *r, struct status *st, uint64_t now)
{
	const struct pt_agg *a = r->multi ? r->all.agg : r->procs[0]->v.agg;
	const struct pt_agg_step_stats *ss = pt_agg__steps(a);
	double dt = (double)(now - st->last_ns) / 1e9;
	uint64_t steps = ss->dur.count;

	if (!st->on || dt < 1.0)
		return;
	fprintf(stderr, "\r\033[Kproftrace: %.0fs  ", since_start_s(r));
	if (r->multi)
		fprintf(stderr, "%zu processes  ", r->nprocs);
	fprintf(stderr, "steps %llu  %.1f steps/s", (unsigned long long)steps,
		(double)(steps - st->last_steps) / dt);
	if (steps)
		fprintf(stderr, "  p50 %.3f ms  p99 %.3f ms", pt_dist__quantile(&ss->dur, 0.5) / 1e6,
			pt_dist__quantile(&ss->dur, 0.99) / 1e6);
	fprintf(stderr, "  %.0f events/s  drops %llu", (double)(r->events - st->last_events) / dt,
		(unsigned long long)r->dropped_seen);
	fflush(stderr);
	status_shown = true;
	st->last_ns = now;
	st->last_events = r->events;
	st->last_steps = steps;
}

static void status_end(struct status *st)
{
	if (st->on && status_shown)
		fputs("\n", stderr); /* keep the last figures on screen */
	status_shown = false;
}

enum stop_reason { STOP_NONE, STOP_SIGNAL, STOP_DURATION, STOP_EXIT };

static int add_fd(int ep, int fd, uint32_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = tag };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/* epoll tags; TAG_PID + i is process i's pidfd */
enum { TAG_SIG = 1, TAG_TIMER, TAG_RING, TAG_PID = 16 };

/* RANK and LOCAL_RANK from p's environment (as it was at exec). */
static void read_ranks(struct proc *p)
{
	char path[64], *buf = NULL;
	size_t cap = 0, n = 0;
	FILE *f;

	p->rank = p->local_rank = -1;
	snprintf(path, sizeof(path), "/proc/%d/environ", p->tgt.pid);
	f = fopen(path, "re");
	if (!f)
		return;
	for (;;) {
		char *v;
		size_t got;

		if (n + 4096 + 1 > cap) {
			v = realloc(buf, cap + 65536);
			if (!v)
				break;
			buf = v;
			cap += 65536;
		}
		got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (!got || n > (16u << 20))
			break;
	}
	fclose(f);
	for (size_t i = 0; buf && i < n; i += strlen(buf + i) + 1) {
		const char *e = buf + i;
		int *dst = !strncmp(e, "RANK=", 5)	  ? &p->rank
			   : !strncmp(e, "LOCAL_RANK=", 11) ? &p->local_rank
							    : NULL;
		const char *val = dst ? strchr(e, '=') + 1 : NULL;
		char *end;
		long x;

		buf[n] = 0; /* environ ends in NUL; a cut one too, now */
		if (!dst || !*val)
			continue;
		x = strtol(val, &end, 10);
		if (!*end && x >= 0 && x < 1000000)
			*dst = (int)x;
	}
	free(buf);
}

static void free_view(struct view *v)
{
	pt_agg__free(v->agg);
	pt_runs__free(v->runs);
	pt_stacks__free(v->stk);
	pt_stepvals__free(&v->sv);
}

static int new_view(struct run *r, struct view *v, void (*on_step)(void *, const struct pt_step *),
		    void *ctx)
{
	struct pt_agg_opts o = { 0 };

	o.nbuckets = r->cfg.nbuckets;
	o.step_mode = r->cfg.step_mode;
	o.warmup_steps = r->cfg.warmup_steps;
	o.on_step = on_step;
	o.ctx = ctx;
	if (pt_stepvals__init(&v->sv, &r->cfg))
		return -ENOMEM;
	v->agg = pt_agg__new(&o);
	v->runs = pt_runs__new(r->cfg.nbuckets, (uint64_t)r->cfg.run_gap_ms * 1000000,
			       r->cfg.warmup_runs);
	return v->agg && v->runs ? 0 : -ENOMEM;
}

static void free_proc(struct proc *p)
{
	if (!p)
		return;
	pt_gpuring__close(p->gr);
	pt_gpu__free(p->gpu);
	pt_pysym__free(p->sym);
	pt_pyprobe__free(p->pp);
	pt_python__free(&p->py);
	free_view(&p->v);
	pt_skew__free(&p->steps);
	pt_resolver__free(p->res);
	for (size_t i = 0; i < p->nfs; i++)
		free(p->fs[i].reason);
	free(p->fs);
	free(p->mfid);
	if (p->pidfd >= 0)
		close(p->pidfd);
	free(p);
}

/*
 * Inspect process pid: resolve the probes against its maps, find its
 * interpreter, set up its figures. strict (the processes named with -p):
 * a probe that names a mapped object but matches nothing, or py: probes
 * without CPython, are errors. Returns 0 (*out set), 1 when a descendant
 * holds nothing to trace (*out NULL, why in err), or -errno with a
 * message in err (-ESRCH, -EACCES, -EINVAL: exit 2).
 */
static int open_proc(struct run *r, int pid, bool strict, struct proc **out, char *err,
		     size_t errlen)
{
	struct pt_resolver_opts ropts = { 0 };
	struct pt_maps maps = { 0 };
	struct proc *p;
	int e, n;

	*out = NULL;
	if (r->nprocs >= PT_MAX_PROCS) {
		snprintf(err, errlen, "more than %d processes: pid %d is not traced",
			 PT_MAX_PROCS, pid);
		return 1;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->run = r;
	p->idx = (unsigned int)r->nprocs;
	p->pidfd = -1;
	p->rank = p->local_rank = -1;
	e = pt_target__open(&p->tgt, pid, err, errlen);
	if (e)
		goto fail;
	e = pt_maps__read_pid(&maps, pid);
	if (e) {
		snprintf(err, errlen, "cannot read /proc/%d/maps: %s (hint: %s)", pid, strerror(-e),
			 e == -EACCES || e == -EPERM ? "run as root, e.g. `sudo proftrace ...`"
						     : "is the process exiting?");
		goto fail;
	}
	read_ranks(p);
	ropts.cfg = &r->cfg;
	ropts.pid = pid;
	ropts.exe = p->tgt.exe;
	ropts.root = p->tgt.root;
	p->res = pt_resolver__new(&ropts);
	if (!p->res) {
		e = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	n = pt_resolver__update(p->res, &maps, strict, err, errlen);
	if (n < 0) {
		e = n == -ENOMEM ? -ENOMEM : -EINVAL;
		goto fail;
	}
	if (r->want_py || r->cfg.sample_hz) {
		char perr[512];

		e = pt_python__find(&p->py, &maps, pid, perr, sizeof(perr));
		if (e && strict && (r->want_py || r->cfg.nlines)) {
			snprintf(err, errlen, "%s", perr);
			e = e == -ENOMEM ? -ENOMEM : -EINVAL;
			goto fail;
		}
		/* Sampling walks Python stacks: nothing to do without them. */
		if (e)
			vlog("proftrace: pid %d: no Python stacks: %s\n", pid, perr);
		p->have_py = !e;
		if (p->have_py)
			update_trampoline(p);
	}
	if (!strict && !n && !p->have_py) {
		snprintf(err, errlen, "no CPython in it and no function the targets file names");
		e = 1;
		goto fail;
	}
	p->tmem.read = read_target;
	p->tmem.ctx = &p->tgt.pid;
	e = new_view(r, &p->v, on_step, p);
	if (e || grow_fstate(p)) {
		snprintf(err, errlen, "out of memory");
		e = -ENOMEM;
		goto fail;
	}
	pt_maps__free(&maps);
	*out = p;
	return 0;
fail:
	pt_maps__free(&maps);
	free_proc(p);
	return e;
}

/* p is traced from now on: its probes go in. Not fatal when a part
 * cannot (said): the rest still gives true figures. -ENOMEM, or
 * EXIT_USAGE (--gpu on cannot be honoured). */
static int start_proc(struct proc *p, int ep)
{
	struct run *r = p->run;
	struct pt_maps maps = { 0 };
	char err[1024];
	size_t pending = 0;
	int e, n;

	p->t_added = now_ns(CLOCK_MONOTONIC);
	e = pt_attach__add_proc(r->att, p->idx, p->tgt.pid);
	if (e) {
		fprintf(stderr, "proftrace: warning: cannot trace pid %d: %s\n", p->tgt.pid,
			strerror(-e));
		return 0;
	}
	e = attach_gpu(p);
	if (e)
		return e;
	if (p->have_py && start_python(p))
		return -ENOMEM;
	/* Sampling first: its window is then the whole run. */
	if (sample_proc(p))
		return -ENOMEM;
	if (probe_python(p, err, sizeof(err))) {
		fprintf(stderr, "proftrace: warning: pid %d: %s\n", p->tgt.pid, err);
		p->py_why_not = "the frame evaluator could not be probed";
	}
	warn_py_timing(p);
	if (!pt_maps__read_pid(&maps, p->tgt.pid))
		hook_dynamic_linker(p, &maps);
	pt_maps__free(&maps);
	n = attach_new(p, 0);
	if (n < 0)
		return n;
	if (r->trace) /* its track carries its name even if it never calls in */
		pt_trace__thread_name(r->trace, (uint32_t)p->tgt.pid, (uint32_t)p->tgt.pid,
				      p->tgt.comm);
	p->pidfd = pt_target__pidfd(&p->tgt);
	if (p->pidfd >= 0 && ep >= 0)
		add_fd(ep, p->pidfd, TAG_PID + p->idx);
	for (size_t s = 0; s < r->cfg.nprobes; s++)
		pending += r->cfg.probes[s].kind == PT_PROBE_NATIVE &&
			   pt_resolver__spec_nfuncs(p->res, s) == 0;
	clear_status();
	fprintf(stderr, "proftrace: attached %d probe%s to pid %d (%s)", n, n == 1 ? "" : "s",
		p->tgt.pid, p->tgt.comm);
	if (p->rank >= 0)
		fprintf(stderr, " rank %d", p->rank);
	if (p->py_probed)
		fprintf(stderr, "; Python %s frames probed", p->py.version);
	if (p->sampled)
		fprintf(stderr, "; stacks sampled at %u Hz", r->cfg.sample_hz);
	if (p->gpu)
		fprintf(stderr, "; GPU stream from the CUPTI shim");
	if (pending)
		fprintf(stderr, "; %zu probe%s waiting for %s to be loaded", pending,
			pending == 1 ? "" : "s", pending == 1 ? "its library" : "their libraries");
	if (r->t0_mono && p->t_added > r->t0_mono + 100000000ull)
		fprintf(stderr, " at +%.3fs", since_start_s(r));
	fprintf(stderr, "\n");
	return 0;
}

/* p exited or exec'ed: its probes come off, what its GPU ring still
 * holds is taken. */
static void end_proc(struct proc *p, const char *why)
{
	struct run *r = p->run;

	if (p->ended)
		return;
	/* its last records first: they are in the ring already */
	pt_attach__drain(r->att);
	if (r->smp)
		pt_sampler__drain(r->smp);
	p->ended = true;
	p->end_why = why;
	p->t_ended = now_ns(CLOCK_MONOTONIC);
	pt_attach__end_proc(r->att, p->idx, p->tgt.pid);
	pt_sampler__end_process(r->smp, p->tgt.pid);
	if (p->gpu_attached) {
		pt_gpuring__drain(p->gr, on_gpu_rec, p);
		p->gpu_attached = false;
	}
	if (p->pidfd >= 0) {
		close(p->pidfd); /* leaves the epoll set */
		p->pidfd = -1;
	}
	if (r->last == p)
		r->last = NULL;
	clear_status();
	fprintf(stderr, "proftrace: process %d %s at +%.3fs\n", p->tgt.pid,
		!strcmp(why, "exec") ? "replaced its image (exec)" : "exited", since_start_s(r));
}

static int add_procs(struct run *r, struct proc *p)
{
	struct proc **v = realloc(r->procs, (r->nprocs + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	r->procs = v;
	r->procs[r->nprocs++] = p;
	return 0;
}

static bool traced(const struct run *r, int pid)
{
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i]->tgt.pid == pid && !r->procs[i]->ended)
			return true;
	return false;
}

static void add_cand(struct run *r, int pid, uint64_t now)
{
	struct cand *v;

	for (size_t i = 0; i < r->ncands; i++)
		if (r->cands[i].pid == pid)
			return;
	for (size_t i = 0; i < r->nskipped; i++)
		if (r->skipped[i].pid == pid)
			return;
	v = realloc(r->cands, (r->ncands + 1) * sizeof(*v));
	if (!v)
		return; /* the next scan finds it again */
	r->cands = v;
	r->cands[r->ncands++] = (struct cand){ .pid = pid, .seen = now };
}

static void skip_proc(struct run *r, int pid, const char *why)
{
	struct skipped *v = realloc(r->skipped, (r->nskipped + 1) * sizeof(*v));
	struct pt_target t;
	char e[64];

	if (!v)
		return;
	r->skipped = v;
	v = &r->skipped[r->nskipped++];
	v->pid = pid;
	v->comm[0] = 0;
	if (!pt_target__open(&t, pid, e, sizeof(e)))
		snprintf(v->comm, sizeof(v->comm), "%s", t.comm);
	snprintf(v->why, sizeof(v->why), "%.*s", (int)sizeof(v->why) - 1, why);
	vlog("proftrace: not tracing pid %d (%s): %s\n", pid, v->comm, why);
}

/* pid's parent from /proc/pid/stat; -1 when it cannot be read. */
static int read_ppid(int pid)
{
	char path[64], buf[512], *rp;
	int ppid = -1;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* comm may hold spaces and parentheses: the state follows the last ')' */
	rp = strrchr(buf, ')');
	if (rp && sscanf(rp + 1, " %*c %d", &ppid) != 1)
		ppid = -1;
	return ppid;
}

/* --children: every descendant of the processes named and of those
 * traced that is not traced yet becomes a candidate. */
static void scan_children(struct run *r, uint64_t now)
{
	struct { int pid, ppid; } *all = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int *set = NULL;
	size_t nset = 0;
	bool grew = true;
	DIR *d = opendir("/proc");

	r->scan_children = false;
	while (d && (de = readdir(d))) {
		int pid = isdigit((unsigned char)de->d_name[0]) ? atoi(de->d_name) : 0;

		if (pid <= 0)
			continue;
		if (n == cap) {
			void *v = realloc(all, (cap = cap ? cap * 2 : 1024) * sizeof(*all));

			if (!v)
				goto out;
			all = v;
		}
		all[n].pid = pid;
		all[n++].ppid = read_ppid(pid);
	}
	set = xcalloc(n + r->env.npids + r->nprocs, sizeof(*set));
	if (!set)
		goto out;
	for (int i = 0; i < r->env.npids; i++)
		set[nset++] = r->env.pids[i];
	for (size_t i = 0; i < r->nprocs; i++)
		set[nset++] = r->procs[i]->tgt.pid;
	while (grew) { /* the tree is shallow: a few passes */
		grew = false;
		for (size_t i = 0; i < n; i++) {
			bool in = false, parent_in = false;

			for (size_t k = 0; k < nset && !(in && parent_in); k++) {
				in |= set[k] == all[i].pid;
				parent_in |= set[k] == all[i].ppid;
			}
			if (in || !parent_in)
				continue;
			set[nset++] = all[i].pid;
			grew = true;
			if (!traced(r, all[i].pid))
				add_cand(r, all[i].pid, now);
		}
	}
out:
	if (d)
		closedir(d);
	free(all);
	free(set);
}

/* Candidates old enough are inspected and traced, or skipped. */
static int add_candidates(struct run *r, uint64_t now, bool at_start)
{
	char err[1024];
	size_t k = 0;
	int e = 0;

	for (size_t i = 0; i < r->ncands; i++) {
		struct cand c = r->cands[i];
		struct proc *p;

		if (!at_start && now - c.seen < CHILD_SETTLE_MS * 1000000ull) {
			r->cands[k++] = c;
			continue;
		}
		if (e || traced(r, c.pid))
			continue;
		e = open_proc(r, c.pid, false, &p, err, sizeof(err));
		if (e == -ENOMEM)
			continue;
		if (e) {
			if (e != -ESRCH) /* gone already: nothing to say */
				skip_proc(r, c.pid, err);
			e = 0;
			continue;
		}
		if (add_procs(r, p)) {
			free_proc(p);
			e = -ENOMEM;
			continue;
		}
		if (at_start)
			continue; /* started with the others */
		if (!open_gpu(p))
			e = start_proc(p, r->ep);
		if (e == EXIT_USAGE)
			e = 0; /* --gpu on: a child without the shim is said, not fatal */
	}
	r->ncands = k;
	return e;
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

static bool all_ended(const struct run *r)
{
	for (size_t i = 0; i < r->nprocs; i++)
		if (!r->procs[i]->ended)
			return false;
	return true;
}

/* Drain on a timer (records are submitted without wakeups), wake at once
 * for dlopen, forks, signals and the processes' exits. */
static int event_loop(struct run *r, const sigset_t *mask)
{
	enum stop_reason stop = STOP_NONE;
	struct itimerspec its = { 0 };
	uint64_t last_rescan = now_ns(CLOCK_MONOTONIC);
	uint64_t deadline = 0;
	struct status st = { .on = !r->env.quiet && isatty(STDERR_FILENO),
			     .last_ns = last_rescan };
	int ep = r->ep, sfd, tfd, e = 0;

	sfd = signalfd(-1, mask, SFD_CLOEXEC | SFD_NONBLOCK);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (sfd < 0 || tfd < 0) {
		e = -errno;
		goto out;
	}
	its.it_interval.tv_nsec = (long)r->cfg.poll_ms * 1000000L;
	its.it_value = its.it_interval;
	timerfd_settime(tfd, 0, &its, NULL);
	if (add_fd(ep, sfd, TAG_SIG) || add_fd(ep, tfd, TAG_TIMER) ||
	    add_fd(ep, pt_attach__ring_fd(r->att), TAG_RING)) {
		e = -errno;
		goto out;
	}
	if (r->env.duration_s > 0)
		deadline = r->t0_mono + (uint64_t)(r->env.duration_s * 1e9);

	while (stop == STOP_NONE) {
		struct epoll_event evs[8];
		int n = epoll_wait(ep, evs, 8, 1000);
		uint64_t now;

		if (n < 0 && errno != EINTR) {
			e = -errno;
			break;
		}
		for (int i = 0; i < n; i++) {
			uint32_t tag = evs[i].data.u32;
			uint64_t junk;

			switch (tag) {
			case TAG_SIG: {
				struct signalfd_siginfo si;

				if (read(sfd, &si, sizeof(si)) == sizeof(si))
					vlog("proftrace: %s, stopping\n", strsignal((int)si.ssi_signo));
				stop = STOP_SIGNAL;
				break;
			}
			case TAG_TIMER:
				/* nothing to read on a spurious wakeup: fine */
				junk = (uint64_t)read(tfd, &junk, sizeof(junk));
				break;
			case TAG_RING:
				break;
			default:
				if (tag >= TAG_PID && tag - TAG_PID < r->nprocs)
					end_proc(r->procs[tag - TAG_PID], "exited");
				break;
			}
		}
		pt_attach__drain(r->att);
		if (r->smp)
			pt_sampler__drain(r->smp);
		note_drops(r);
		now = now_ns(CLOCK_MONOTONIC);
		for (size_t i = 0; i < r->nprocs; i++) {
			struct proc *p = r->procs[i];

			if (p->exec_seen && !p->ended) {
				end_proc(p, "exec");
				if (r->multi) /* its new image */
					add_cand(r, p->tgt.pid, now_ns(CLOCK_MONOTONIC));
			}
			if (p->ended)
				continue;
			if (p->gpu_attached) {
				/* the shim goes dormant after 1 s without a heartbeat */
				pt_gpuring__heartbeat(p->gr, now);
				pt_gpuring__drain(p->gr, on_gpu_rec, p);
			}
			if (p->pidfd < 0 && !pt_target__alive(&p->tgt))
				end_proc(p, "exited");
		}
		if (r->env.children && (r->scan_children || now - last_rescan >= RESCAN_MS * 1000000ull))
			scan_children(r, now);
		if (r->ncands && add_candidates(r, now, false) == -ENOMEM) {
			e = -ENOMEM;
			break;
		}
		if (all_ended(r) && !r->ncands) {
			if (!r->multi && r->procs[0]->end_why && !strcmp(r->procs[0]->end_why, "exec"))
				fprintf(stderr, "proftrace: its probes went with the old image: "
						"stopping (give --children to follow it into the "
						"new one)\n");
			stop = STOP_EXIT;
		}
		if (stop == STOP_NONE && now - last_rescan >= RESCAN_MS * 1000000ull) {
			for (size_t i = 0; i < r->nprocs; i++)
				if (!r->procs[i]->ended)
					rescan(r->procs[i]);
			last_rescan = now;
		} else if (stop == STOP_NONE) {
			for (size_t i = 0; i < r->nprocs; i++)
				if (!r->procs[i]->ended && r->procs[i]->rescan)
					rescan(r->procs[i]);
		}
		if (deadline && now >= deadline && stop == STOP_NONE)
			stop = STOP_DURATION;
		status_tick(r, &st, now);
	}
	status_end(&st);
	r->t_end_mono = now_ns(CLOCK_MONOTONIC);
	/* Records submitted before the stop are in the ring: take them all. */
	pt_attach__drain(r->att);
	pt_sampler__stop(r->smp, r->t_end_mono);
	note_drops(r);
	/* detach: the shim disables CUPTI and flushes what it holds */
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i]->gpu_attached)
			pt_gpuring__finish(r->procs[i]->gr, on_gpu_rec, r->procs[i], 1000);
out:
	if (tfd >= 0)
		close(tfd);
	if (sfd >= 0)
		close(sfd);
	return e;
}
/* Settings that cannot work together: one line, before anything starts. */
static int check_modes(const struct pt_config *cfg, char *err, size_t errlen)
{
	if (cfg->nlines && !cfg->sample_hz) {
		snprintf(err, errlen, "%s: lines needs stack sampling, which `set sample_hz 0` "
			 "turns off (hint: remove that line)", cfg->path);
		return -EINVAL;
	}
	if (cfg->python_mode != PT_PYMODE_SAMPLED)
		return 0;
	if (!cfg->sample_hz) {
		snprintf(err, errlen, "%s: python_mode sampled needs stack sampling, which `set "
			 "sample_hz 0` turns off (hint: remove one of the two lines)", cfg->path);
		return -EINVAL;
	}
	if (py_has_roles(cfg)) {
		snprintf(err, errlen, "%s: python_mode sampled cannot time a py: probe used as a "
			 "step, in a bucket or read for values: they need the frame probe (hint: "
			 "use python_mode auto or evalframe)", cfg->path);
		return -EINVAL;
	}
	return 0;
}

static void raise_nofile(void)
{
	struct rlimit rl;

	/* Two perf-event fds per probed function. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int main(int argc, char **argv)
{
	struct run r = { 0 };
	struct pt_attach_opts aopts = { 0 };
	struct proc *pyp = NULL;
	sigset_t mask;
	char err[2048];
	int e, ret = 1;

	r.ep = -1;
	e = pt_cli__parse(&r.env, argc, argv);
	if (e)
		return e > 0 ? 0 : EXIT_USAGE;
	if (r.env.list_targets)
		return pt_targets__list(NULL, stdout) < 0 ? 1 : 0;
	if (pt_targets__resolve(r.env.targets, r.env.targets_path, sizeof(r.env.targets_path)) > 0)
		r.env.targets = r.env.targets_path; /* --targets vllm: a bundled file */
	verbose = r.env.verbose;
	libbpf_set_print(libbpf_print);

	if (pt_config__load(&r.cfg, r.env.targets, err, sizeof(err))) {
		fprintf(stderr, "proftrace: %s\n", err);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < r.cfg.nprobes; i++)
		r.want_py |= r.cfg.probes[i].kind == PT_PROBE_PY;
	if (check_modes(&r.cfg, err, sizeof(err))) {
		fprintf(stderr, "proftrace: %s\n", err);
		ret = EXIT_USAGE;
		goto cleanup;
	}
	r.multi = r.env.npids > 1 || r.env.children;
	/* The processes named: each must be there and match the config. */
	for (int i = 0; i < r.env.npids; i++) {
		struct proc *p;

		e = open_proc(&r, r.env.pids[i], true, &p, err, sizeof(err));
		if (!e && add_procs(&r, p)) {
			free_proc(p);
			e = -ENOMEM;
		}
		if (e) {
			if (r.env.npids > 1 && e != -ENOMEM && !strstr(err, "pid"))
				fprintf(stderr, "proftrace: pid %d: %s\n", r.env.pids[i], err);
			else
				fprintf(stderr, "proftrace: %s\n", err);
			ret = e == -ENOMEM ? 1 : EXIT_USAGE;
			goto cleanup;
		}
	}
	if (r.env.children) {
		scan_children(&r, 0);
		if (add_candidates(&r, 0, true))
			goto cleanup;
	}
	if (r.multi) {
		if (new_view(&r, &r.all, on_merged_step, &r))
			goto cleanup;
	}
	for (size_t i = 0; i < r.nprocs && !pyp; i++)
		if (r.procs[i]->have_py)
			pyp = r.procs[i];
	r.py0 = pyp ? &pyp->py : NULL;
	if (r.env.dry_run) {
		for (size_t i = 0; i < r.nprocs; i++)
			print_dry_run(r.procs[i]);
		ret = 0;
		goto cleanup;
	}
	if (geteuid() != 0)
		vlog("proftrace: not root: this works only with CAP_BPF, CAP_PERFMON and "
		     "CAP_SYS_RESOURCE\n");
	raise_nofile();

	/* Block the stop signals before anything is attached, so a signal
	 * arriving during attach still ends in a full report. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);

	if (r.env.trace) {
		r.trace = pt_trace__new(r.env.trace_max ? r.env.trace_max : PT_TRACE_DEFAULT_MAX,
					r.cfg.nbuckets);
		if (!r.trace)
			goto cleanup;
	}
	r.py_probe_wanted = pyp && want_py_probe(&r, pyp);
	aopts.ringbuf_mb = r.cfg.ringbuf_mb;
	aopts.wakeup_each = r.cfg.ringbuf_wakeup;
	aopts.follow_children = r.env.children;
	aopts.on_rec = on_rec;
	aopts.ctx = &r;
	aopts.py = r.py_probe_wanted ? r.py0 : NULL;
	aopts.py_session = r.cfg.py_session;
	e = pt_attach__open(&r.att, &aopts, err, sizeof(err));
	if (e) {
		fprintf(stderr, "proftrace: %s\n", err);
		ret = e == -EPERM || e == -EACCES ? EXIT_USAGE : 1;
		goto cleanup;
	}
	if (pyp && r.cfg.sample_hz) {
		/* Loaded before the clock starts: verifying the stack walker
		 * takes most of a second. */
		e = open_sampler(&r, err, sizeof(err));
		if (e == -ENOMEM)
			goto cleanup;
		if (e)
			fprintf(stderr, "proftrace: warning: no stack sampling: %s\n", err);
	}
	for (size_t i = 0; i < r.nprocs; i++) {
		e = open_gpu(r.procs[i]);
		if (e) {
			ret = e == EXIT_USAGE ? EXIT_USAGE : 1;
			goto cleanup;
		}
	}
	r.ep = epoll_create1(EPOLL_CLOEXEC);
	if (r.ep < 0)
		goto cleanup;
	r.t0_mono = now_ns(CLOCK_MONOTONIC);
	r.t0_unix = now_ns(CLOCK_REALTIME);
	if (r.smp) {
		r.sf = xcalloc(PT_SAMPLE_MAX_FRAMES, sizeof(*r.sf));
		r.msf = xcalloc(PT_SAMPLE_MAX_FRAMES, sizeof(*r.msf));
		r.labels = xcalloc(PT_SAMPLE_MAX_FRAMES, sizeof(*r.labels));
		if (r.multi)
			r.all.stk = pt_stacks__new();
		if (!r.sf || !r.msf || !r.labels || (r.multi && !r.all.stk))
			goto cleanup;
		e = pt_sampler__attach(r.smp, err, sizeof(err));
		if (e) {
			/* the probes still give true figures: go on without */
			fprintf(stderr, "proftrace: warning: no stack sampling: %s\n", err);
			pt_sampler__free(r.smp);
			r.smp = NULL;
			pt_stacks__free(r.all.stk);
			r.all.stk = NULL;
		}
	}
	for (size_t i = 0; i < r.nprocs; i++) {
		e = start_proc(r.procs[i], r.ep);
		if (e) {
			ret = e == EXIT_USAGE ? EXIT_USAGE : 1;
			goto cleanup;
		}
	}
	e = event_loop(&r, &mask);
	if (e) {
		fprintf(stderr, "proftrace: event loop failed: %s\n", strerror(-e));
		goto cleanup;
	}
	for (size_t i = 0; i < r.nprocs; i++)
		pt_agg__finish(r.procs[i]->v.agg);
	if (r.multi)
		pt_agg__finish(r.all.agg);
	e = write_outputs(&r);
	ret = e ? 1 : 0;

cleanup:
	pt_sampler__free(r.smp);
	pt_attach__free(r.att);
	for (size_t i = 0; i < r.nprocs; i++)
		free_proc(r.procs[i]);
	free(r.procs);
	free_view(&r.all);
	free(r.mf);
	free(r.cands);
	free(r.skipped);
	free(r.sf);
	free(r.msf);
	free(r.labels);
	pt_trace__free(r.trace);
	if (r.ep >= 0)
		close(r.ep);
	pt_config__free(&r.cfg);
	return ret;
}
