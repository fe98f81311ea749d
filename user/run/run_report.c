// SPDX-License-Identifier: BSD-2-Clause
/*
 * The reports of a run: summary.json's document (one per process and a
 * merged one with several), report.md and lines.txt from it, and the
 * flame graph, folded stacks and trace.json.
 */
#include <sys/stat.h>
#include <sys/utsname.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include <cjson/cJSON.h>
#include <limits.h>

#include "aggregate/flame.h"
#include "report/report.h"

static void print_dry_run_proc(const struct proc *p)
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

void pt_run__print_dry_run(const struct run *r)
{
	for (size_t i = 0; i < r->nprocs; i++)
		print_dry_run_proc(r->procs[i]);
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
	v = pt_zalloc(n, sizeof(*v));
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
	l->exact = fr->p->py_probed && pt_run__py_exact(fr->p);
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
	v = pt_zalloc(last - first + 1, sizeof(*v));
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
	struct pt_report_lines_fn *v = pt_zalloc(d->nfr + cfg->nprobes, sizeof(*v));
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
	struct pt_trace_proc *procs = pt_zalloc(r->nprocs, sizeof(*procs));
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
	struct fref *v = pt_zalloc(p->nfs, sizeof(*v));

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
	struct fref *v = pt_zalloc(r->nmf, sizeof(*v));

	if (!v)
		return NULL;
	for (size_t i = 0; i < r->nmf; i++) {
		const struct mfunc *m = &r->mf[i];
		struct proc *p = m->p;

		v[i] = (struct fref){ .f = pt_resolver__func(p->res, m->fid), .p = p, .fid = (int)i,
				      .attached = m->attached, .at_s = m->at_s,
				      .reason = m->attached ? NULL : p->fs[m->fid].reason,
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
	bool exact = p->py_probed && pt_run__py_exact(p);
	bool sampled = !strcmp(pt_run__py_timing(p), "sampled");

	pyrep->version = p->py.version;
	pyrep->path = pt_target__view(p->tgt.root, p->py.path);
	pyrep->mechanism = sampled ? "sampled" : "evalframe";
	pyrep->probe = r->att && p->py_probed ? pt_attach__py_probe(r->att) : NULL;
	pyrep->perf_trampoline = p->tramp_checks && p->tramp_on == p->tramp_checks;
	pyrep->timing = pt_run__py_timing(p);
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
	b->rows = pt_zalloc(d->nfr + nunres + 1, sizeof(*b->rows));
	b->bks = pt_zalloc(r->cfg.nbuckets + 1, sizeof(*b->bks));
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
		b->pids = pt_zalloc(r->nprocs, sizeof(*b->pids));
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
	const struct pt_skew_steps **v = pt_zalloc(r->nprocs, sizeof(*v));
	struct proc **who = pt_zalloc(r->nprocs, sizeof(*who));
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
			struct pt_report_skew_proc *sp = pt_zalloc(n, sizeof(*sp));

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

int pt_run__write_outputs(struct run *r)
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
		pds = pt_zalloc(r->nprocs, sizeof(*pds));
		pb = pt_zalloc(r->nprocs, sizeof(*pb));
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
