// SPDX-License-Identifier: BSD-2-Clause
/*
 * The reports of a run: summary.json's document (one per process and a
 * merged one with several), built a section at a time, and every output
 * file (report/emit.h's table) written into the output folder opened
 * before attaching (report/outdir.h), or into a fallback folder.
 */
#include <sys/utsname.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "run.h"
#include "env.h"
#include "probecost.h"
#include "gpustream.h"
#include "pyhint.h"
#include "pyagent.h"
#include "procs.h"
#include "report.h"

#include "aggregate/agg.h"
#include "aggregate/bursts.h"
#include "aggregate/flame.h"
#include "aggregate/skew.h"
#include "aggregate/stacks.h"
#include "aggregate/top.h"
#include "attach/attach.h"
#include "attach/prologue.h"
#include "attach/resolve.h"
#include "attach/tracee.h"
#include "bpf/proftrace.h"
#include "config/config.h"
#include "gpu/gpuring.h"
#include "gpu/nstid.h"
#include "python/agent.h"
#include "python/pyprobe.h"
#include "report/emit.h"
#include "report/outdir.h"
#include "report/summary.h"
#include "report/trace.h"
#include "sample/sampler.h"
#include "sample/thrname.h"
#include "shim/ptagent.h"
#include "util/log.h"
#include "util/steal.h"
#include "util/util.h"

static void print_dry_run_proc(struct proc *p)
{
	const struct pt_config *cfg = &p->run->cfg;

	if (p->run->multi)
		printf("pid %d (%s):\n", p->tracee.pid, p->tracee.comm);
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
			if (!p->python.have)
				printf("%-40s no CPython in this process\n", sp->text);
			continue; /* below, all at once: the agent is asked once */
		}
		if (!any && !pt_resolver__spec_nfuncs(p->res, s))
			printf("%-40s pending: no mapped object matches '%s' yet; it will be "
			       "attached when loaded\n",
			       sp->text, sp->object);
	}
	if (p->python.have && p->run->want_py)
		pt_run__py_dry_run(p);
}

void pt_run__print_dry_run(struct run *r)
{
	for (size_t i = 0; i < r->procs.n; i++)
		print_dry_run_proc(r->procs.v[i]);
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
	const struct fstate *fs; /* the process's own state of it */
};

/* What one summary document is built from. */
struct docsrc {
	struct run *r;
	struct view *v;
	struct proc *p; /* NULL: the merged view */
	struct fref *fr;
	size_t nfr;
};

/* How the threads of the view were named (sample/thrname.h), and why
 * none had its Python name when none had. */
static void thread_names(const struct docsrc *d, struct pt_report_sampling *sp)
{
	int err = 0;

	for (size_t i = 0; i < d->r->procs.n; i++) {
		struct proc *p = d->r->procs.v[i];
		struct pt_thrname_stats st;

		if ((d->p && p != d->p) || !p->python.tn)
			continue;
		pt_thrname__stats(p->python.tn, &st);
		sp->names_python += st.python;
		sp->names_comm += st.comm;
		if (st.failed && !err)
			err = st.last_error;
	}
	if (sp->names_python || !err)
		return;
	sp->names_why = err == -ENOTSUP
				? "this CPython's layout row does not say where sys.modules "
				  "is (on 3.14 the OS thread names are threading's)"
			: err == -ENOENT ? "the threading module is not imported"
					 : "threading._active could not be read";
}

/* What the host took from this VM meanwhile: short steals are on the CPU
 * to a sample, not to the threads' CPU clocks (util/steal.h). */
static void host_steal(const struct run *r, struct pt_report_sampling *sp)
{
	uint64_t now, span = r->t_end_mono - r->t0_mono;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	sp->steal_ok = r->steal0_ok && !pt_steal__now(&now) && now >= r->steal0_ns;
	if (!sp->steal_ok)
		return;
	sp->steal_ns = now - r->steal0_ns;
	sp->steal_share =
		span && cpus > 0 ? (double)sp->steal_ns / ((double)span * (double)cpus) : 0;
}

static int build_sampling(const struct docsrc *d, struct pt_report_sampling *sp,
			  struct pt_report_thread **threads)
{
	struct run *r = d->r;
	const struct pt_stacks_totals *t = pt_stacks__totals(d->v->stk);
	size_t n = pt_stacks__nthreads(d->v->stk);
	struct pt_sampler_stats ss;
	struct pt_report_thread *v;

	pt_sampler__stats(r->smp, &ss);
	v = pt_zalloc(n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	/* the target's threads from the front, proftrace's own from the back */
	for (size_t i = 0, k = 0, o = n; i < n; i++) {
		const struct pt_stacks_thread *th = pt_stacks__thread(d->v->stk, i);
		struct pt_report_thread *x = th->own ? &v[--o] : &v[k++];

		x->tid = th->tid;
		x->name = th->name;
		x->comm = th->comm ? th->comm : th->name;
		x->python = th->python;
		x->samples = th->t.samples;
		x->on_ns = th->t.on_ns;
		x->off_ns = th->t.off_ns;
		if (th->own)
			sp->nown++;
	}
	qsort(v, n - sp->nown, sizeof(*v), thread_wall_cmp);
	qsort(v + n - sp->nown, sp->nown, sizeof(*v), thread_wall_cmp);
	*threads = v;
	sp->own = v + n - sp->nown;
	sp->own_samples = t->own.samples;
	sp->own_on_ns = t->own.on_ns;
	sp->own_off_ns = t->own.off_ns;
	sp->hz = r->cfg.sample_hz;
	sp->period_ns = 1000000000ull / r->cfg.sample_hz;
	sp->mechanism = "perf cpu-clock event per thread (on-CPU) + sched_switch (off-CPU)";
	sp->threads = v;
	sp->nthreads = n - sp->nown;
	sp->samples = t->t.samples;
	sp->on_ns = t->t.on_ns;
	sp->off_ns = t->t.off_ns;
	sp->intervals = t->intervals;
	sp->python_samples = t->python_samples;
	sp->no_frames = t->no_frames;
	sp->not_python = t->not_python;
	sp->not_python_out = ss.bpf.offcpu_not_python + ss.not_python_at_end;
	sp->found_late = ss.bpf.offcpu_found_late;
	sp->unseen_in = ss.bpf.offcpu_unseen_in;
	sp->truncated = t->truncated;
	sp->unreadable = t->unreadable;
	sp->unknown_frames = t->unknown_frames;
	sp->threads_merged = t->threads_merged;
	sp->late_samples = t->late_samples;
	sp->late_ns = t->late_ns;
	/* not written (ring full), not taken (no thread storage), not read,
	 * not run (the kernel skipped the program), intervals never closed */
	sp->lost = ss.bpf.lost + ss.bpf.no_storage + ss.bad_records + ss.prog_misses +
		   ss.bpf.offcpu_unclosed;
	/* threads created later inherit their event: count what was seen */
	sp->threads_sampled = n > ss.threads ? (unsigned int)n : ss.threads;
	sp->threads_failed = ss.threads_failed;
	sp->native = r->cfg.native_frames;
	sp->nat = r->nstat;
	/* not written (ring full), or written and not there for its sample */
	sp->nat.missing += ss.bpf.ustack_lost;
	sp->nat.offcpu_budget = ss.bpf.offcpu_budget;
	sp->nat.offcpu_moved = ss.bpf.offcpu_moved;
	sp->nat.pooled = ss.bpf.pooled;
	sp->nat.offcpu_via = ss.task_work ? "task_work" : "sys_exit";
	sp->nat.offcpu_work_missed = ss.bpf.tw_busy + ss.bpf.tw_failed;
	host_steal(r, sp);
	thread_names(d, sp);
	sp->folded = "stacks.folded";
	sp->svg = "flame.svg";
	sp->svg_wall = "flame-wall.svg";
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

/* l's rows, first_line to last_line, with the source text p has and the
 * samples of sl (sorted by line). */
static int fill_rows(struct pt_report_lines_fn *l, struct proc *p, const struct pt_stacks_line *sl,
		     size_t nsl)
{
	struct pt_report_line *v;
	const char *src, *at;
	size_t k = 0, srclen;
	unsigned int first = l->first_line, last = l->last_line;

	src = p && p->python.probe ? pt_pyprobe__source(p->python.probe, l->file, &srclen) : NULL;
	if (!src) {
		char buf[PATH_MAX + 96];

		snprintf(buf, sizeof(buf), "cannot read %s through /proc/%d/root", l->file,
			 p ? p->tracee.pid : 0);
		l->source_error = strdup(buf);
		if (!l->source_error)
			return -ENOMEM;
	}
	v = pt_zalloc(last - first + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	l->lines = v;
	/* one pass over the source: from the first line on, line by line */
	at = src ? skip_lines(src, src + srclen, 1, first) : NULL;
	for (unsigned int ln = first; ln <= last; ln++) {
		struct pt_report_line *e = &v[l->nlines++];

		e->line = ln;
		if (at) {
			e->text = line_at(at, src + srclen);
			at = skip_lines(at, src + srclen, ln, ln + 1);
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

/* One `lines` function: every source line from its first to its last,
 * with the samples each got. */
static int build_lines_fn(const struct docsrc *d, const struct fref *fr,
			  struct pt_report_lines_fn *l)
{
	const struct pt_func *f = fr->f;
	const struct pt_stacks_time *t = pt_stacks__func(d->v->stk, (uint32_t)fr->fid);
	const struct pt_stacks_line *sl;
	size_t nsl;
	unsigned int first = f->py_line, last = fr->last_line;

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
	l->exact = !strcmp(pt_run__py_timing(fr->p), "exact");
	l->fid = fr->fid;
	l->samples = t ? t->samples : 0;
	l->on_ns = t ? t->on_ns : 0;
	l->off_ns = t ? t->off_ns : 0;
	return fill_rows(l, fr->p, sl, nsl);
}

/* How many of the top functions lines.txt shows without a targets file. */
#define TOP_LINES_FNS 5

static struct proc *py_proc(const struct docsrc *d);

/* Without a targets file: lines of the top functions (by self time, as
 * report.md ranks them), their line times as `lines` has them. */
static int build_top_lines(const struct docsrc *d, struct pt_report_lines_fn *v, size_t *n)
{
	const struct pt_top_fn *fns[TOP_LINES_FNS];
	size_t nf = pt_top__rank_funcs(pt_stacks__top(d->v->stk), fns, TOP_LINES_FNS);
	struct proc *p = py_proc(d);

	for (size_t i = 0; i < nf; i++) {
		const struct pt_top_fn *f = fns[i];
		struct pt_report_lines_fn *l = &v[(*n)++];
		struct pt_stacks_line *sl = pt_zalloc(f->nlines + 1, sizeof(*sl));
		int e;

		if (!sl)
			return -ENOMEM;
		for (size_t k = 0; k < f->nlines; k++)
			sl[k] = (struct pt_stacks_line){ f->lines[k].line, f->lines[k].total };
		l->file = f->filename;
		l->function = f->qualname;
		l->first_line = f->first_line;
		l->last_line = f->last_line > f->first_line ? f->last_line : f->first_line;
		if (f->nlines && sl[0].line < l->first_line)
			l->first_line = sl[0].line;
		if (f->nlines && sl[f->nlines - 1].line > l->last_line)
			l->last_line = sl[f->nlines - 1].line;
		l->fid = -1;
		l->samples = f->total.samples;
		l->on_ns = f->total.on_ns;
		l->off_ns = f->total.off_ns;
		e = fill_rows(l, p, sl, f->nlines);
		free(sl);
		if (e)
			return e;
	}
	return 0;
}

/* `lines`: the functions of each lines directive, in config order;
 * without a targets file, the top functions'. */
static int build_lines(const struct docsrc *d, struct pt_report_lines_fn **out, size_t *nout)
{
	const struct pt_config *cfg = &d->r->cfg;
	struct pt_report_lines_fn *v = pt_zalloc(d->nfr + cfg->nprobes + TOP_LINES_FNS, sizeof(*v));
	size_t n = 0;
	int e = 0;

	if (!v)
		return -ENOMEM;
	if (!d->r->env.targets) {
		e = build_top_lines(d, v, &n);
		*out = v;
		*nout = n;
		return e;
	}
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

/* The functions of p's own document, in its fid order. */
static struct fref *proc_frefs(struct proc *p, size_t *n)
{
	struct fref *v = pt_zalloc(p->nfs, sizeof(*v));

	if (!v)
		return NULL;
	for (size_t i = 0; i < p->nfs; i++)
		v[i] = (struct fref){ .f = pt_resolver__func(p->res, i),
				      .p = p,
				      .fid = (int)i,
				      .attached = p->fs[i].attached,
				      .at_s = p->fs[i].at_s,
				      .reason = p->fs[i].reason,
				      .last_line = p->fs[i].last_line,
				      .fs = &p->fs[i] };
	*n = p->nfs;
	return v;
}

/* The functions of the merged document. Not attached anywhere: the
 * first process's reason. */
static struct fref *merged_frefs(struct run *r, size_t *n)
{
	struct fref *v = pt_zalloc(r->nmerged_funcs, sizeof(*v));

	if (!v)
		return NULL;
	for (size_t i = 0; i < r->nmerged_funcs; i++) {
		const struct mfunc *m = &r->merged_funcs[i];
		struct proc *p = m->p;

		v[i] = (struct fref){ .f = pt_resolver__func(p->res, m->fid),
				      .p = p,
				      .fid = (int)i,
				      .attached = m->attached,
				      .at_s = m->at_s,
				      .reason = m->attached ? NULL : p->fs[m->fid].reason,
				      .last_line = m->last_line,
				      .fs = &p->fs[m->fid] };
	}
	*n = r->nmerged_funcs;
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
	for (size_t i = 0; i < d->r->procs.n; i++) {
		const struct proc *p = d->r->procs.v[i];

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
		return d->p->python.have ? d->p : NULL;
	for (size_t i = 0; i < d->r->procs.n; i++)
		if (d->r->procs.v[i]->python.have)
			return d->r->procs.v[i];
	return NULL;
}

static const char *const HOW_EXACT =
	"start the server after `eval \"$(proftrace env)\"` (the agent, dormant until "
	"proftrace attaches), or attach with --inject; Python 3.14+ loads it at attach";

/* 3.8-3.11: which named functions the frame evaluator hooks (the rest
 * have trampolines), by name into buf. */
static void evaluator_functions(const struct proc *p, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (uint32_t i = 0; p->agent.arm && i < p->agent.narm; i++) {
		uint32_t fid = pt_pyprobe__fid(p->python.probe, p->agent.arm[i]);
		const struct pt_func *f = pt_resolver__func(p->res, fid);

		if (pt_agent__trampolined(p->agent.handle, i) || !f || !f->symbol)
			continue;
		pt_appendf(buf, len, &used, "%s%s", used ? ", " : "", f->symbol);
	}
}

/* meta.python.agent: what the agent did, from its segment at the end. */
static void fill_agent(const struct proc *p, struct pt_report_python *pyrep, char *evalfns,
		       size_t len)
{
	const struct pt_agent_info *in = &p->agent.last;

	if (!p->agent.handle)
		return;
	pyrep->agent.hooks = in->mechanism == PTAG_MECH_MONITORING ? "sys.monitoring"
			     : !in->has_how || !in->ntramp	   ? "frame evaluator"
			     : in->evaluator_on			   ? "trampolines + frame evaluator"
								   : "trampolines";
	if (in->has_how && in->mechanism == PTAG_MECH_EVALFRAME) {
		evaluator_functions(p, evalfns, len);
		pyrep->agent.trampolines = in->ntramp;
		pyrep->agent.evaluator_functions = evalfns;
		pyrep->agent.evaluator = in->evaluator_on;
		pyrep->agent.trampolines_lost = in->tramp_lost;
	}
	pyrep->agent.tool_id = in->tool_id;
	pyrep->agent.loaded_by = p->agent.loaded_by;
	pyrep->agent.clocks = in->clocks;
	pyrep->agent.candidates = in->ncand;
	pyrep->agent.hooked = p->agent.narm;
	pyrep->agent.scans = in->scans;
	pyrep->agent.scan_ms = (double)in->scan_ns / 1e6;
	if (p->agent.injected) {
		pyrep->agent.injected = true;
		pyrep->agent.inject_tid = p->agent.inject.tid;
		pyrep->agent.inject_syscall = p->agent.inject.syscall;
		pyrep->agent.inject_pause_ms = p->agent.inject.pause_ms;
		pyrep->agent.inject_wait_ms = p->agent.inject.wait_ms;
		pyrep->agent.inject_call_ms = p->agent.inject.call_ms;
	}
	if (in->conflict || in->hook_lost)
		pyrep->agent.problem = in->conflict_text[0] ? in->conflict_text
							    : "its frame evaluator was replaced";
	else if (in->has_how && in->tramp_lost)
		pyrep->agent.problem = "the program set the __code__ of a named function itself "
				       "while attached: that function's calls since are not timed "
				       "(agent.trampolines_lost; `set py_trampolines off` times it "
				       "by code object again once the program puts its own back)";
	if (p->agent.truncated[0])
		pyrep->agent.segment_lost = p->agent.truncated;
}

static void fill_python(const struct docsrc *d, struct proc *p, struct pt_report_python *pyrep,
			char *evalfns, size_t len)
{
	const struct run *r = d->r;
	const struct pt_pyprobe_stats *ps =
		p->python.probe ? pt_pyprobe__stats(p->python.probe) : NULL;
	const char *timing = pt_run__py_timing(p);
	bool agent = pt_run__agent_ok(p);
	bool exact = !strcmp(timing, "exact");
	struct pt_counters c = { 0 };

	pyrep->version = p->python.rt.version;
	pyrep->path = pt_tracee__view(p->tracee.root, p->python.rt.path);
	pyrep->mechanism = agent ? "agent" : !strcmp(timing, "sampled") ? "sampled" : "evalframe";
	pyrep->probe = r->att && p->python.probed ? pt_attach__py_probe(r->att) : NULL;
	pyrep->perf_trampoline =
		p->python.tramp_checks && p->python.tramp_on == p->python.tramp_checks;
	pyrep->timing = timing;
	if (r->att)
		pt_attach__counters(r->att, &c);
	fill_agent(p, pyrep, evalfns, len);
	/* BPF's count is the run's, all processes: each agent reports it */
	pyrep->agent.clock_rejected = c.agent_clock_rejected;
	if (p->python.probed) {
		pyrep->evalframe = true;
		pyrep->unnamed_frames = c.py_unnamed;
	}
	if (agent)
		pyrep->why =
			p->agent.last.mechanism == PTAG_MECH_MONITORING
				? "the agent set sys.monitoring events on the named code "
				  "objects only: each named call is timed from start to return, "
				  "every other call runs untouched"
			: !p->agent.last.evaluator_on && p->agent.last.ntramp
				? "the agent gave each named function a trampoline (its code "
				  "wrapped in calls to the agent): each named call is timed "
				  "from entry to return, every other call runs untouched"
			: p->agent.last.ntramp
				? "the agent gave the named functions trampolines, and hooks "
				  "those it cannot wrap (async generators, nested functions: "
				  "agent.evaluator_functions) with a frame evaluator "
				  "that every other frame passes through after one lookup; each "
				  "named call is timed from entry to return"
				: "the agent's frame evaluator passes every frame that is not "
				  "named straight on: each named call is timed from entry to "
				  "return";
	else if (p->agent.truncated[0])
		pyrep->why = p->agent.truncated;
	else if (p->python.why_not && !p->python.probed && !p->python.sampled)
		pyrep->why = p->python.why_not;
	else if (r->cfg.python_mode == PT_PYMODE_SAMPLED)
		pyrep->why = "python_mode sampled: py: functions are timed from stack samples "
			     "only";
	else if (p->python.probed && p->python.rt.L.evalframe_all_calls)
		pyrep->why = "python_mode evalframe: every Python call enters "
			     "_PyEval_EvalFrameDefault on this version, each one trapped by the "
			     "probe (named or not)";
	else if (p->python.probed && exact)
		pyrep->why = "python_mode evalframe: the perf trampoline was active at every "
			     "check, every Python call enters _PyEval_EvalFrameDefault";
	else if (p->python.probed)
		pyrep->why = "python_mode evalframe: this Python runs Python-to-Python calls "
			     "inside the caller's _PyEval_EvalFrameDefault, only calls made from "
			     "C code are seen";
	else
		pyrep->why = p->agent.why ? p->agent.why : "no Python agent in the process";
	if (!exact && r->cfg.python_mode != PT_PYMODE_SAMPLED)
		pyrep->advice = HOW_EXACT;
	else if (p->python.probed && p->python.rt.L.evalframe_all_calls)
		pyrep->advice = "python_mode auto with the agent costs only the named calls";
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
		*why = d->p->gpu.why;
		return d->p->gpu.join ? d->p : NULL;
	}
	for (size_t i = 0; i < d->r->procs.n; i++)
		if (d->r->procs.v[i]->gpu.join) {
			only = d->r->procs.v[i];
			n++;
		}
	*why = d->r->procs.v[0]->gpu.why;
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
	char evalfns[1024]; /* meta.python.agent.evaluator_functions */
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

/* Why py: probe s matched nothing (pyhint.c): in the document's process,
 * or the first process that can say. */
static const char *py_why(const struct docsrc *d, size_t s)
{
	const char *why = NULL;

	if (d->p)
		return pt_run__py_hint_why(d->p, s);
	for (size_t i = 0; i < d->r->procs.n && !why; i++)
		why = pt_run__py_hint_why(d->r->procs.v[i], s);
	return why;
}

/* functions[]: in config order, each probe's functions, then the probes
 * that found nothing (with the reason). */
static int doc_functions(const struct docsrc *d, struct docbuf *b, size_t nunres)
{
	const struct run *r = d->r;
	size_t nrows = 0;

	b->rows = pt_zalloc(d->nfr + nunres + 1, sizeof(*b->rows));
	if (!b->rows)
		return -ENOMEM;
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
			row->mangled = f->mangled;
			row->aliases = (const char *const *)f->aliases;
			row->naliases = f->naliases;
			row->file_offset = f->file_off;
			row->probe_skip = f->site.skip;
			row->probe_insn = pt_insn_class__str(f->site.cls);
			row->attached = fr->attached;
			row->attached_after_s = fr->at_s;
			row->has_window = fr->fs && fr->fs->has_window;
			row->window_ms = row->has_window ? fr->fs->window_ms : 0;
			row->reason = fr->reason;
			row->py = f->py;
			row->line = f->py_line;
			row->timing = f->py ? pt_run__py_timing(fr->p) : "exact";
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
			const char *why = sp->kind == PT_PROBE_PY ? py_why(d, s) : NULL;

			b->rows[nrows].fid = -1;
			b->rows[nrows].probe = sp->text;
			b->rows[nrows].py = sp->kind == PT_PROBE_PY;
			b->rows[nrows].sampled = b->rows[nrows].py && d->v->stk;
			b->rows[nrows].reason =
				why ? why
				: sp->kind == PT_PROBE_PY
					? "no code object of this name ran while attached (module "
					  "not imported, or the function never called)"
				: spec_has_objects(d, s)
					? "symbol not found in the mapped objects"
					: "no mapped object matched while attached";
			nrows++;
		}
	}
	b->rep.funcs = b->rows;
	b->rep.nfuncs = nrows;
	return 0;
}

/* meta: the process (or, merged, every pid and those skipped), the run. */
static int doc_meta(const struct docsrc *d, struct docbuf *b)
{
	const struct run *r = d->r;
	struct pt_report_meta *m = &b->rep.meta;
	const struct proc *mp = d->p ? d->p : r->procs.v[0];
	struct utsname un;

	uname(&un);
	snprintf(b->kernel, sizeof(b->kernel), "%s", un.release);
	m->tool = "proftrace";
	m->version = PT_VERSION;
	m->pid = mp->tracee.pid;
	m->comm = mp->tracee.comm;
	m->exe = pt_tracee__view(mp->tracee.root, mp->tracee.exe);
	m->start_unix_ns = r->t0_unix;
	m->duration_s = (double)(r->t_end_mono - r->t0_mono) / 1e9;
	m->targets_file = r->cfg.path;
	m->sampling_only = !r->env.targets;
	m->kernel = b->kernel;
	m->warmup_steps = r->cfg.warmup_steps;
	m->step_probe = r->cfg.step_probe >= 0 ? r->cfg.probes[r->cfg.step_probe].text : NULL;
	m->step_mode = r->cfg.step_mode == PT_STEP_ITERATION ? "iteration" : "call";
	if (r->multi && d->p) {
		m->process = true;
		m->rank = d->p->rank;
		m->local_rank = d->p->local_rank;
		m->added_s =
			d->p->t_added < r->t0_mono ? 0 : (double)(d->p->t_added - r->t0_mono) / 1e9;
		m->ended = d->p->end_why;
		m->ended_s = !pt_proc__live(d->p) ? (double)(d->p->t_ended - r->t0_mono) / 1e9 : 0;
	} else if (r->multi) {
		b->pids = pt_zalloc(r->procs.n, sizeof(*b->pids));
		if (!b->pids)
			return -ENOMEM;
		for (size_t i = 0; i < r->procs.n; i++)
			b->pids[i] = r->procs.v[i]->tracee.pid;
		m->pids = b->pids;
		m->npids = r->procs.n;
		m->children = r->env.children;
		for (size_t i = 0; i < r->nskipped && i < PT_REPORT_MAX_SKIPPED; i++) {
			m->skipped[i].pid = r->skipped[i].pid;
			m->skipped[i].comm = r->skipped[i].comm;
			m->skipped[i].why = r->skipped[i].why;
		}
		m->nskipped = r->nskipped;
	}
	return 0;
}

/* meta.python, meta.sampling and lines[]. */
static int doc_python(const struct docsrc *d, struct docbuf *b)
{
	const struct run *r = d->r;
	struct proc *pyp = py_proc(d);
	int e;

	if (r->want_py && pyp) {
		fill_python(d, pyp, &b->pyrep, b->evalfns, sizeof(b->evalfns));
		b->rep.meta.python = &b->pyrep;
	}
	if (!d->v->stk)
		return 0;
	e = build_sampling(d, &b->smp, &b->threads);
	if (!e)
		e = build_lines(d, &b->lfns, &b->nlfns);
	if (e)
		return e;
	b->rep.meta.sampling = &b->smp;
	b->rep.top = pt_stacks__top(d->v->stk);
	b->rep.lines = b->lfns;
	b->rep.nlines = b->nlfns;
	if (d->p && r->multi) {
		/* the flame graph files are the merged view's */
		b->smp.folded = NULL;
		b->smp.svg = NULL;
		b->smp.svg_wall = NULL;
	}
	return 0;
}

/* steps, buckets, values and runs: the view's aggregators. */
static int doc_figures(const struct docsrc *d, struct docbuf *b, const struct pt_counters *c)
{
	const struct run *r = d->r;
	struct pt_report *rep = &b->rep;

	b->bks = pt_zalloc(r->cfg.nbuckets + 1, sizeof(*b->bks));
	if (!b->bks)
		return -ENOMEM;
	for (size_t k = 0; k < r->cfg.nbuckets; k++) {
		b->bks[k].name = r->cfg.buckets[k].name;
		b->bks[k].domain = r->cfg.buckets[k].domain;
	}
	rep->agg = d->v->agg;
	rep->buckets = b->bks;
	rep->nbuckets = r->cfg.nbuckets;
	rep->t0_mono = r->t0_mono;
	if (d->v->runs && (pt_bursts__failed(d->v->runs) || pt_bursts__finish(d->v->runs)))
		pt_msg("proftrace: warning: out of memory: no runs in the report\n");
	else
		rep->runs = d->v->runs;
	rep->vals = &d->v->sv;
	rep->val_records_dropped = c->val_dropped;
	return 0;
}

/* gpu: the one process with a GPU stream in this view, joined. */
static void doc_gpu(const struct docsrc *d, struct docbuf *b)
{
	const struct run *r = d->r;
	const char *why;
	struct proc *gp = gpu_proc(d, &why);

	if (gp) {
		if (gp->gpu.oom)
			pt_msg("proftrace: warning: out of memory for GPU records of pid %d: the "
			       "GPU "
			       "figures are incomplete\n",
			       gp->tracee.pid);
		pt_gpuring__info(gp->gpu.ring, &b->gpu_info);
		pt_run__gpu_lost(gp);
		if (gp->gpu.truncated[0])
			b->rep.gpu_lost = gp->gpu.truncated;
		if (b->gpu_info.conflict_call && (!r->multi || d->p))
			pt_msg("proftrace: warning: CUPTI could not be enabled in pid %d: %s "
			       "failed "
			       "with %s (another profiler holding CUPTI, or no GPU driver): no GPU "
			       "records\n",
			       gp->tracee.pid, pt_gpuring__call_name(b->gpu_info.conflict_call),
			       pt_gpuring__result_name(b->gpu_info.conflict_code));
		b->rep.gpu = pt_run__gpu_result(gp);
		b->rep.gpu_info = &b->gpu_info;
		if (!b->rep.gpu)
			why = "out of memory joining GPU records";
	}
	b->rep.gpu_why = why;
}

/* health: what was lost, dropped or never attached. */
static void doc_health(const struct docsrc *d, struct docbuf *b, const struct pt_counters *c,
		       size_t nunres)
{
	const struct run *r = d->r;
	struct pt_report_health *h = &b->rep.health;

	h->events = d->p ? d->p->events : r->events;
	h->process = r->multi && d->p;
	h->dropped_events = c->dropped;
	h->depth_overflow = c->depth_overflow;
	h->unwound = c->unwound;
	h->orphan_returns = c->orphan_returns;
	h->py_unreadable = c->py_unreadable;
	h->py_map_full = c->py_map_full;
	for (size_t i = 0; i < r->procs.n; i++)
		if (!d->p || d->p == r->procs.v[i])
			h->py_unresolved += r->procs.v[i]->py_unresolved;
	h->lost_calls = pt_agg__health(d->v->agg)->lost_calls;
	h->threads = pt_agg__health(d->v->agg)->threads;
	h->threads_ended = pt_agg__health(d->v->agg)->threads_ended;
	h->threads_max = pt_agg__health(d->v->agg)->threads_max;
	h->thread_exits_dropped = c->texit_dropped;
	h->runs_late_steps = d->v->runs ? pt_bursts__late(d->v->runs) : 0;
	for (size_t i = 0; i < r->procs.n && !d->p; i++)
		h->skew_steps_not_kept += r->procs.v[i]->steps.not_kept;
	h->steps_incomplete = pt_agg__steps(d->v->agg)->incomplete;
	h->probes_requested = (unsigned int)(d->nfr + nunres);
	/* functions with probes in place: native uprobes, and py: functions
	 * the frame probe (or the sampler) found */
	h->probes_attached = 0;
	for (size_t i = 0; i < d->nfr; i++)
		h->probes_attached += d->fr[i].attached;
}

/* meta.trace (--trace): the merged document's, or the only one's. */
static void doc_trace(const struct docsrc *d, struct docbuf *b)
{
	const struct run *r = d->r;
	struct pt_trace_stats ts;

	if (!r->trace || (r->multi && d->p))
		return;
	pt_trace__stats(r->trace, &ts);
	b->trace_rep = (struct pt_report_trace){ .file = "trace.json",
						 .events = ts.events,
						 .dropped = ts.dropped,
						 .max_events = ts.max_events,
						 .truncated = ts.truncated };
	b->rep.meta.trace = &b->trace_rep;
}

/* gpu.pid_namespace: how CUPTI's thread ids were mapped to the host's
 * (docs/summary.md). NULL stays NULL; out of memory leaves it out. */
static cJSON *add_pid_namespace(const struct docsrc *d, cJSON *doc)
{
	const char *why;
	struct proc *gp = gpu_proc(d, &why);
	struct pt_nstid_stats st;
	cJSON *g = doc ? cJSON_GetObjectItemCaseSensitive(doc, "gpu") : NULL, *o;

	if (!g || !gp || !cJSON_GetObjectItemCaseSensitive(g, "kernels"))
		return doc;
	pt_nstid__stats(gp->gpu.nst, &st);
	o = cJSON_AddObjectToObject(g, "pid_namespace");
	if (!o)
		return doc;
	cJSON_AddBoolToObject(o, "other", gp->gpu.nst != NULL);
	cJSON_AddNumberToObject(o, "ns_pid", gp->gpu.nst ? st.ns_pid : gp->tracee.pid);
	cJSON_AddNumberToObject(o, "threads_mapped", (double)st.threads);
	cJSON_AddNumberToObject(o, "api_records_mapped", (double)st.translated);
	cJSON_AddNumberToObject(o, "api_records_unmapped", (double)st.unmapped);
	return doc;
}

/*
 * The summary document of one view: a process's (d->p) or the merged
 * one, a section at a time. NULL on allocation failure.
 */
static cJSON *build_doc(const struct docsrc *d, struct docbuf *b)
{
	const struct run *r = d->r;
	struct pt_counters c = { 0 };
	size_t nunres = 0;
	cJSON *doc;

	if (r->att)
		pt_attach__counters(r->att, &c);
	for (size_t s = 0; s < r->cfg.nprobes; s++)
		nunres += spec_nfuncs(d, s) == 0;
	if (doc_functions(d, b, nunres) || doc_meta(d, b) || doc_python(d, b) ||
	    doc_figures(d, b, &c))
		return NULL;
	doc_gpu(d, b);
	doc_health(d, b, &c, nunres);
	doc_trace(d, b);
	doc = add_pid_namespace(d, pt_summary__build(&b->rep));
	if (doc) {
		cJSON *meta = cJSON_GetObjectItem(doc, "meta");
		char host[256];

		/* for `proftrace merge` of several hosts' runs */
		if (meta && !gethostname(host, sizeof(host))) {
			host[sizeof(host) - 1] = '\0';
			cJSON_AddStringToObject(meta, "host", host);
		}
		if (meta && d->p && !cJSON_GetObjectItem(meta, "rank")) {
			if (d->p->rank >= 0)
				cJSON_AddNumberToObject(meta, "rank", d->p->rank);
			else
				cJSON_AddNullToObject(meta, "rank");
		}
		pt_run__overhead_doc(r, d->v, &b->rep, doc);
	}
	return doc;
}

/* The skew of step times across the processes with steps. */
static int build_skew(struct run *r, cJSON *doc)
{
	const struct pt_skew_steps **v = pt_zalloc(r->procs.n, sizeof(*v));
	struct proc **who = pt_zalloc(r->procs.n, sizeof(*who));
	struct pt_skew k;
	size_t n = 0;
	int e = -ENOMEM;

	if (v && who)
		for (size_t i = 0; i < r->procs.n; i++)
			if (r->procs.v[i]->steps.n || r->procs.v[i]->steps.oom) {
				who[n] = r->procs.v[i];
				v[n++] = &r->procs.v[i]->steps;
			}
	if (v && who) {
		memset(&k, 0, sizeof(k));
		e = n >= 2 ? pt_skew__compute(v, n, &k) : 0;
		if (!e) {
			struct pt_report_skew_proc *sp = pt_zalloc(n, sizeof(*sp));

			e = -ENOMEM;
			if (sp) {
				for (size_t i = 0; i < n; i++)
					sp[i] = (struct pt_report_skew_proc){
						.pid = who[i]->tracee.pid,
						.rank = who[i]->rank,
						.steps = who[i]->steps.n,
						.first = n >= 2 ? k.first[i] : 0,
						.slowest = n >= 2 ? k.slowest[i] : 0,
						.fastest = n >= 2 ? k.fastest[i] : 0
					};
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

/* The default output folder: proftrace_out/<comm>-<pid>-<time> here. */
static void default_output(const struct run *r, char *buf, size_t len)
{
	time_t t = (time_t)(pt_now_ns(CLOCK_REALTIME) / 1000000000ull);
	struct tm tm;
	char stamp[32];

	localtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	snprintf(buf, len, "proftrace_out/%s-%d-%s", r->procs.v[0]->tracee.comm,
		 r->procs.v[0]->tracee.pid, stamp);
	/* comm may hold '/' (kernel threads rename freely): keep one dir */
	for (char *p = buf + strlen("proftrace_out/"); *p; p++)
		if (*p == '/' || *p == ' ')
			*p = '_';
}

/* -o x.svg, --format: the one output's emitter name (--idle: the wall
 * time flame graph). */
static const char *format_file(const struct pt_env *env)
{
	switch (env->format) {
	case PT_FORMAT_FLAME:
		return env->idle ? "flame-wall.svg" : "flame.svg";
	case PT_FORMAT_FOLDED:
		return "stacks.folded";
	case PT_FORMAT_PPROF:
		return "profile.pb.gz";
	default:
		return NULL;
	}
}

int pt_run__open_output(struct run *r)
{
	char dir[PATH_MAX], err[PATH_MAX + 256];
	const char *slash;
	int e;

	if (r->env.output && r->env.format) {
		/* -o x.svg: that file, in its folder */
		slash = strrchr(r->env.output, '/');
		if (!slash)
			snprintf(dir, sizeof(dir), ".");
		else if (slash == r->env.output)
			snprintf(dir, sizeof(dir), "/");
		else
			snprintf(dir, sizeof(dir), "%.*s", (int)(slash - r->env.output),
				 r->env.output);
		/* the folder needs a name of its own: "." is the one we are in */
		slash = strrchr(dir, '/');
		slash = slash ? slash + 1 : dir;
		if (!strcmp(slash, ".") || !strcmp(slash, "..")) {
			char *abs = realpath(dir, NULL);

			if (abs)
				snprintf(dir, sizeof(dir), "%s", abs);
			free(abs);
		}
	} else if (r->env.output) {
		snprintf(dir, sizeof(dir), "%s", r->env.output);
	} else {
		default_output(r, dir, sizeof(dir));
	}
	e = pt_outdir__open(&r->out, dir, !r->env.output, err, sizeof(err));
	if (!e)
		return 0;
	pt_msg("proftrace: %s\n", err);
	return e == -ENOMEM ? e : -PT_EUSAGE;
}

/* What the flame graphs and trace.json are drawn with; o->flame_cpu is
 * made here (the caller frees it). */
static int output_opts(struct run *r, const struct docsrc *td, struct pt_outputs *o, char *title,
		       char *sub, char *sub_wall, size_t len)
{
	const struct pt_stacks *stk = td->v->stk;
	const char **bnames;
	struct pt_trace_proc *procs;

	if (stk) {
		const struct pt_stacks_totals *t = pt_stacks__totals(stk);

		if (r->procs.n > 1)
			snprintf(title, len, "proftrace: %s (pid %d) and %zu more process%s",
				 r->procs.v[0]->tracee.comm, r->procs.v[0]->tracee.pid,
				 r->procs.n - 1, r->procs.n == 2 ? "" : "es");
		else
			snprintf(title, len, "proftrace: %s (pid %d)", r->procs.v[0]->tracee.comm,
				 r->procs.v[0]->tracee.pid);
		snprintf(sub, len,
			 "on-CPU time: sampled at %u Hz (%.3f s); off-CPU time (%.3f s) is in %s",
			 r->cfg.sample_hz, (double)t->t.on_ns / 1e9, (double)t->t.off_ns / 1e9,
			 r->env.format ? "the graph drawn with --idle" : "flame-wall.svg");
		snprintf(sub_wall, len,
			 "wall time: on-CPU sampled at %u Hz (%.3f s) + off-CPU intervals (%.3f s)",
			 r->cfg.sample_hz, (double)t->t.on_ns / 1e9, (double)t->t.off_ns / 1e9);
		o->flame = pt_stacks__flame(stk);
		o->flame_cpu = pt_flame__copy(o->flame, PT_STACKS_OFFCPU);
		if (!o->flame_cpu)
			return -ENOMEM;
		o->svg =
			(struct pt_flame_svg_opts){ .title = title, .subtitle = sub, .unit = "us" };
		o->svg_wall = (struct pt_flame_svg_opts){ .title = title,
							  .subtitle = sub_wall,
							  .unit = "us" };
	}
	if (!r->trace)
		return 0;
	bnames = pt_zalloc(r->cfg.nbuckets + 1, sizeof(*bnames));
	procs = pt_zalloc(r->procs.n, sizeof(*procs));
	if (!bnames || !procs) {
		free(bnames);
		free(procs);
		return -ENOMEM;
	}
	for (size_t b = 0; b < r->cfg.nbuckets; b++)
		bnames[b] = r->cfg.buckets[b].name;
	for (size_t i = 0; i < r->procs.n; i++)
		procs[i] = (struct pt_trace_proc){ .pid = r->procs.v[i]->tracee.pid,
						   .name = r->procs.v[i]->tracee.comm,
						   .rank = r->procs.v[i]->rank };
	o->trace = r->trace;
	o->trace_opts = (struct pt_trace_write_opts){ .procs = procs,
						      .nprocs = r->procs.n,
						      .t0 = r->t0_mono,
						      .start_unix_ns = r->t0_unix,
						      .version = PT_VERSION,
						      .bucket_names = bnames };
	return 0;
}

struct emit_ctx {
	const struct pt_emitter *em;
	const struct pt_outputs *o;
};

static int emit_one(FILE *f, const void *ctx)
{
	const struct emit_ctx *c = ctx;

	return c->em->write(f, c->o);
}

/* Every wanted output into d; with -o x.svg or --format only that one
 * (named as -o says). 0, or the first error (said in err). */
static int write_files(const struct run *r, struct pt_outdir *d, const struct pt_outputs *o,
		       char *err, size_t errlen)
{
	const char *only = format_file(&r->env), *as = NULL;

	if (only && r->env.output)
		as = strrchr(r->env.output, '/') ? strrchr(r->env.output, '/') + 1 : r->env.output;
	for (size_t i = 0; i < pt_nemitters; i++) {
		struct emit_ctx c = { .em = &pt_emitters[i], .o = o };
		const char *name = as ? as : c.em->filename;
		int e;

		if (only && strcmp(only, c.em->filename))
			continue;
		if (c.em->wanted && !c.em->wanted(o)) {
			if (!only)
				continue;
			snprintf(err, errlen,
				 "nothing to write into %s: no Python stack was sampled", name);
			return -ENODATA;
		}
		e = pt_outdir__write(d, name, emit_one, &c, err, errlen);
		if (e)
			return e;
		pt_msg("proftrace: wrote %s/%s\n", pt_outdir__path(d), name);
	}
	return 0;
}

/* Into the output folder, else into a fallback folder of our own: a
 * profile that was taken is always written somewhere, and said where. */
static int write_somewhere(struct run *r, const struct pt_outputs *o)
{
	char err[PATH_MAX + 256], err2[PATH_MAX + 256], base[64];
	struct pt_outdir *fb;
	int e = -ENOENT;

	if (r->out) {
		e = write_files(r, r->out, o, err, sizeof(err));
		if (!e)
			return 0;
		if (e == -ENOMEM || e == -ENODATA) {
			pt_msg("proftrace: %s\n", err);
			return e;
		}
	} else {
		snprintf(err, sizeof(err), "no output folder");
	}
	snprintf(base, sizeof(base), "proftrace-%d", r->procs.v[0]->tracee.pid);
	if (pt_outdir__fallback(&fb, base, err2, sizeof(err2))) {
		pt_msg("proftrace: %s; %s: the profile is lost\n", err, err2);
		return e;
	}
	pt_msg("proftrace: %s; writing the profile to %s instead\n", err, pt_outdir__path(fb));
	e = write_files(r, fb, o, err2, sizeof(err2));
	if (e)
		pt_msg("proftrace: %s: the profile is lost\n", err2);
	pt_outdir__close(fb);
	/* written, but not where asked: not a success */
	return e ? e : -EIO;
}

cJSON *pt_run__view_doc(struct run *r, struct proc *p, struct view *v)
{
	struct docbuf b = { 0 };
	struct docsrc d = { .r = r, .v = v, .p = p };
	cJSON *doc;

	d.fr = proc_frefs(p, &d.nfr);
	if (!d.fr)
		return NULL;
	doc = build_doc(&d, &b);
	docbuf_free(&b);
	free(d.fr);
	return doc;
}

int pt_run__write_outputs(struct run *r)
{
	struct docbuf top = { 0 }, *pb = NULL;
	struct docsrc td = { .r = r };
	struct pt_outputs o = { 0 };
	char title[256], sub[256], sub_wall[256];
	struct docsrc *pds = NULL;
	cJSON *doc = NULL, *procs;
	int e = -ENOMEM;

	if (r->multi) {
		td.v = &r->all;
		td.fr = merged_frefs(r, &td.nfr);
		pds = pt_zalloc(r->procs.n, sizeof(*pds));
		pb = pt_zalloc(r->procs.n, sizeof(*pb));
		if (!td.fr || !pds || !pb)
			goto out;
	} else {
		td.v = &r->procs.v[0]->v;
		td.p = r->procs.v[0];
		td.fr = proc_frefs(r->procs.v[0], &td.nfr);
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
		for (size_t i = 0; i < r->procs.n; i++) {
			cJSON *pd;

			pds[i] = (struct docsrc){ .r = r,
						  .v = &r->procs.v[i]->v,
						  .p = r->procs.v[i] };
			pds[i].fr = proc_frefs(r->procs.v[i], &pds[i].nfr);
			pd = pds[i].fr ? build_doc(&pds[i], &pb[i]) : NULL;
			if (!pd)
				goto out;
			cJSON_AddItemToArray(procs, pd);
		}
		if (build_skew(r, doc))
			goto out;
	}
	o.doc = doc;
	if (output_opts(r, &td, &o, title, sub, sub_wall, sizeof(title)))
		goto out;
	e = write_somewhere(r, &o);
	if (r->env.json) {
		int e2 = pt_summary__write_json(stdout, doc);

		if (e2 && e2 != -ENOMEM)
			pt_msg("proftrace: cannot print summary.json on stdout: %s (the files "
			       "are written)\n",
			       strerror(-e2));
		e = e ? e : e2;
	}
out:
	if (e == -ENOMEM)
		pt_msg("proftrace: out of memory writing the report\n");
	pt_flame__free((struct pt_flame *)o.flame_cpu);
	free((void *)o.trace_opts.procs);
	free((void *)o.trace_opts.bucket_names);
	cJSON_Delete(doc);
	docbuf_free(&top);
	free(td.fr);
	for (size_t i = 0; pds && i < r->procs.n; i++) {
		free(pds[i].fr);
		docbuf_free(&pb[i]);
	}
	free(pds);
	free(pb);
	return e;
}
