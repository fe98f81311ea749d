// SPDX-License-Identifier: BSD-2-Clause
/*
 * proftrace: attach to a live process, time configured functions exactly,
 * aggregate them into steps and buckets, write summary.json and report.md.
 *
 * The recipe: parse the command line and the targets file -> inspect the
 * target -> resolve probes against its maps -> load BPF -> attach -> drain
 * the ring into the aggregator until a stop condition -> write reports.
 */
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
#include "pyprobe.h"
#include "python.h"
#include "report.h"
#include "resolve.h"
#include "target.h"

#define EXIT_USAGE 2

/* Fallback maps rescan period: dlopen is seen at once through the
 * dynamic linker hook, this catches anything else (static binaries,
 * mmap'ed code without the hook). */
#define RESCAN_MS 1000

struct fstate {
	bool attached;
	double at_s;
	char *reason; /* owned */
};

struct run {
	struct pt_env env;
	struct pt_config cfg;
	struct pt_target tgt;
	struct pt_resolver *res;
	struct pt_attach *att;
	struct pt_agg *agg;
	struct fstate *fs;
	size_t nfs;
	uint64_t t0_mono, t0_unix, t_end_mono;
	uint64_t events;
	uint64_t dropped_seen;
	bool rescan;
	bool dl_hooked;
	bool dl_tried; /* a dynamic linker was seen: hooked or not, done */

	/* py: probes */
	bool want_py;
	struct pt_python py;
	struct pt_pyprobe *pp;
	char proc_root[64], proc_cwd[64];
	int tramp_checks, tramp_on; /* perf trampoline: checks made, seen active */
	uint64_t py_unresolved; /* calls of code freed before it could be read */
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

static int grow_fstate(struct run *r);
static void update_trampoline(struct run *r);

/* A code object BPF has not seen: tell BPF whether it is ours. */
static void on_pycode(struct run *r, const struct pt_rec_pycode *rec)
{
	struct pt_py_code seen = { .filename = rec->filename, .name = rec->name,
				   .firstlineno = rec->firstlineno };
	struct pt_py_code val;
	bool added;
	int64_t fid = pt_pyprobe__resolve(r->pp, rec->code, &seen, &val, &added);

	/* out of memory: BPF keeps it pending, its calls are dropped;
	 * gone: the object now there announces itself */
	if (fid < 0 || fid == PT_PYPROBE_GONE)
		return;
	pt_attach__py_code(r->att, rec->code, &val);
	if (added && !grow_fstate(r)) {
		const struct pt_func *f = pt_resolver__func(r->res, (size_t)fid);

		pt_agg__set_func(r->agg, (uint32_t)fid, f->is_step, f->bucket_mask);
		r->fs[fid].attached = true;
		r->fs[fid].at_s = since_start_s(r);
		vlog("proftrace: python %s (%s:%u) is fid %lld\n", f->symbol, f->object, f->py_line,
		     (long long)fid);
	}
}

static int on_rec(void *ctx, const struct pt_rec *rec)
{
	struct run *r = ctx;
	struct pt_rec copy;

	r->events++;
	switch (rec->type) {
	case PT_REC_DLOPEN:
		r->rescan = true;
		return 0;
	case PT_REC_PYCODE:
		if (r->pp)
			on_pycode(r, (const struct pt_rec_pycode *)rec);
		return 0;
	}
	if (rec->fid == PT_FID_PY_PENDING) {
		/* A call that began before we answered for its code: the
		 * PYCODE record came first, so the answer is known now. */
		copy = *rec;
		copy.fid = r->pp ? pt_pyprobe__fid(r->pp, rec->code) : PT_FID_PY_NONE;
		if (copy.fid == PT_PYPROBE_GONE && rec->type == PT_REC_EXIT)
			r->py_unresolved++; /* ours or not: unknown, and said so */
		if (copy.fid == PT_FID_PY_NONE || copy.fid == PT_PYPROBE_GONE)
			return 0;
		rec = &copy;
	}
	pt_agg__record(r->agg, rec);
	return 0;
}

static int grow_fstate(struct run *r)
{
	size_t n = pt_resolver__nfuncs(r->res);
	struct fstate *v;

	if (n <= r->nfs)
		return 0;
	v = realloc(r->fs, n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memset(v + r->nfs, 0, (n - r->nfs) * sizeof(*v));
	r->fs = v;
	r->nfs = n;
	return 0;
}

/* Attach every resolved function not tried yet. Returns how many were
 * attached now. A function that cannot be attached is reported, not
 * fatal: the others still give true figures. */
static int attach_new(struct run *r, size_t from)
{
	char err[512];
	int n = 0;

	if (grow_fstate(r))
		return -ENOMEM;
	for (size_t i = from; i < r->nfs; i++) {
		const struct pt_func *f = pt_resolver__func(r->res, i);

		if (f->py)
			continue; /* found at run time, served by the frame probe */
		if (pt_agg__set_func(r->agg, (uint32_t)f->fid, f->is_step, f->bucket_mask))
			return -ENOMEM;
		if (f->unusable) {
			r->fs[i].reason = strdup(f->unusable);
			continue;
		}
		if (pt_attach__func(r->att, f, err, sizeof(err))) {
			fprintf(stderr, "proftrace: warning: %s\n", err);
			r->fs[i].reason = strdup(err);
			continue;
		}
		r->fs[i].attached = true;
		r->fs[i].at_s = since_start_s(r);
		n++;
		vlog("proftrace: probe %s:%s at file offset 0x%llx (+%u, %s)\n", f->object,
		     f->symbol, (unsigned long long)f->file_off, f->site.skip,
		     pt_insn_class__str(f->site.cls));
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
static void hook_dynamic_linker(struct run *r, const struct pt_maps *maps)
{
	for (size_t i = 0; i < maps->n && !r->dl_tried; i++) {
		const struct pt_mapping *mp = &maps->v[i];
		struct pt_elf *e;
		char *path;

		if (!pt_mapping__is_exec_file(mp) || !is_dynamic_linker(mp->path))
			continue;
		r->dl_tried = true; /* one ld.so per process: don't re-read it each rescan */
		path = pt_resolver__host_path(r->tgt.pid, mp);
		if (!path || pt_elf__open(&e, path)) {
			free(path);
			continue;
		}
		for (size_t k = 0; k < e->nsyms; k++) {
			if (strcmp(e->syms[k].name, "_dl_debug_state") != 0)
				continue;
			if (pt_attach__dl_hook(r->att, path, e->syms[k].file_off) == 0)
				r->dl_hooked = true;
			break;
		}
		pt_elf__free(e);
		free(path);
	}
	if (r->dl_tried && !r->dl_hooked)
		vlog("proftrace: no dynamic linker hook; new libraries are seen within %d ms\n",
		     RESCAN_MS);
}

static void rescan(struct run *r)
{
	struct pt_maps maps = { 0 };
	size_t before = pt_resolver__nfuncs(r->res);
	char err[1024];
	int n;

	r->rescan = false;
	if (r->want_py)
		update_trampoline(r);
	if (pt_maps__read_pid(&maps, r->tgt.pid))
		return; /* exiting: the pidfd tells us */
	if (!r->dl_tried)
		hook_dynamic_linker(r, &maps);
	n = pt_resolver__update(r->res, &maps, false, err, sizeof(err));
	pt_maps__free(&maps);
	if (n < 0) {
		clear_status();
		fprintf(stderr, "proftrace: warning: %s\n", err);
		return;
	}
	if (n == 0)
		return;
	clear_status();
	n = attach_new(r, before);
	if (n > 0) {
		const struct pt_func *f = pt_resolver__func(r->res, before);

		fprintf(stderr, "proftrace: attached %d more probe%s (%s) at +%.3fs\n", n,
			n == 1 ? "" : "s", f->object, since_start_s(r));
	}
}

static int read_target(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return pt_python__read(*(const int *)ctx, addr, buf, len);
}

/* Is every Python call seen? Checked at start and on each rescan: the
 * 3.12+ perf trampoline can be switched on and off at run time. */
static void update_trampoline(struct run *r)
{
	int t;

	if (r->py.L.evalframe_all_calls || !r->py.L.interp_eval_frame)
		return;
	t = pt_python__trampoline(&r->py, r->tgt.pid);
	if (t < 0)
		return;
	r->tramp_checks++;
	r->tramp_on += t;
}

static bool py_exact(const struct run *r)
{
	return r->py.L.evalframe_all_calls ||
	       (r->tramp_checks && r->tramp_on == r->tramp_checks);
}

static int start_python(struct run *r, char *err, size_t errlen)
{
	struct pt_pyprobe_opts o = { 0 };
	int e;

	e = pt_attach__python(r->att, err, errlen);
	if (e)
		return e;
	snprintf(r->proc_root, sizeof(r->proc_root), "/proc/%d/root", r->tgt.pid);
	snprintf(r->proc_cwd, sizeof(r->proc_cwd), "/proc/%d/cwd", r->tgt.pid);
	o.cfg = &r->cfg;
	o.res = r->res;
	o.layout = &r->py.L;
	o.types.code_type = r->py.code_type;
	o.types.unicode_type = r->py.unicode_type;
	o.mem.read = read_target;
	o.mem.ctx = &r->tgt.pid;
	o.root = r->proc_root;
	o.cwd = r->proc_cwd;
	r->pp = pt_pyprobe__new(&o);
	if (!r->pp) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (!py_exact(r))
		fprintf(stderr,
			"proftrace: warning: Python %s: only calls made from C code are seen "
			"(%s); py: rows are marked timing \"c-entry-only\"%s\n",
			r->py.version,
			r->py.L.minor == 11 ? "3.11 runs Python-to-Python calls inside one "
					      "_PyEval_EvalFrameDefault"
					    : "the perf trampoline is off",
			r->py.L.minor >= 12 ? "; restart the server with PYTHONPERFSUPPORT=1 "
					      "for exact times"
					    : "");
	return 0;
}

static void print_dry_run(const struct run *r)
{
	printf("%-40s %-10s %-40s %-12s %s\n", "PROBE", "FUNCTION", "OBJECT", "OFFSET",
	       "PROBE SITE");
	for (size_t s = 0; s < r->cfg.nprobes; s++) {
		const struct pt_probe_spec *sp = &r->cfg.probes[s];
		bool any = false;

		for (size_t i = 0; i < pt_resolver__nfuncs(r->res); i++) {
			const struct pt_func *f = pt_resolver__func(r->res, i);

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
			printf("%-40s python %s (%s): matched by code object as it runs\n",
			       sp->text, r->py.version, r->py.path);
			continue;
		}
		if (!any && !pt_resolver__spec_nfuncs(r->res, s))
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
	snprintf(buf, len, "proftrace_out/%s-%d-%s", r->tgt.comm, r->tgt.pid, stamp);
	/* comm may hold '/' (kernel threads rename freely): keep one dir */
	for (char *p = buf + strlen("proftrace_out/"); *p; p++)
		if (*p == '/' || *p == ' ')
			*p = '_';
}

static int write_outputs(struct run *r)
{
	struct pt_report rep = { 0 };
	struct pt_report_python pyrep = { 0 };
	struct pt_report_func *rows;
	struct pt_report_bucket *bks;
	struct pt_counters c = { 0 };
	const struct pt_agg_health *ah;
	const struct pt_agg_step_stats *ss;
	char dir[PATH_MAX], path[PATH_MAX + 32], kernel[128];
	struct utsname un;
	size_t nrows = 0, nunres = 0;
	cJSON *doc;
	int e = 0;

	if (r->att)
		pt_attach__counters(r->att, &c);
	for (size_t s = 0; s < r->cfg.nprobes; s++)
		nunres += pt_resolver__spec_nfuncs(r->res, s) == 0;
	rows = calloc(r->nfs + nunres + 1, sizeof(*rows));
	bks = calloc(r->cfg.nbuckets + 1, sizeof(*bks));
	if (!rows || !bks) {
		free(rows);
		free(bks);
		return -ENOMEM;
	}
	/* Rows in config order: each probe's functions, then probes that
	 * found nothing (with the reason). */
	for (size_t s = 0; s < r->cfg.nprobes; s++) {
		const struct pt_probe_spec *sp = &r->cfg.probes[s];

		for (size_t i = 0; i < r->nfs; i++) {
			const struct pt_func *f = pt_resolver__func(r->res, i);
			struct pt_report_func *row = &rows[nrows];

			if ((size_t)f->spec != s)
				continue;
			row->fid = f->fid;
			row->probe = sp->text;
			row->object = f->object;
			row->symbol = f->symbol;
			row->aliases = (const char *const *)f->aliases;
			row->naliases = f->naliases;
			row->file_offset = f->file_off;
			row->probe_skip = f->site.skip;
			row->probe_insn = pt_insn_class__str(f->site.cls);
			row->attached = r->fs[i].attached;
			row->attached_after_s = r->fs[i].at_s;
			row->reason = r->fs[i].reason;
			row->py = f->py;
			row->line = f->py_line;
			row->timing = f->py && !py_exact(r) ? "c-entry-only" : "exact";
			nrows++;
		}
		if (pt_resolver__spec_nfuncs(r->res, s) == 0) {
			rows[nrows].fid = -1;
			rows[nrows].probe = sp->text;
			rows[nrows].reason =
				sp->kind == PT_PROBE_PY
					? "no code object of this name ran while attached (module "
					  "not imported, or the function never called)"
				: pt_resolver__spec_nobjects(r->res, s)
					? "symbol not found in the mapped objects"
					: "no mapped object matched while attached";
			nrows++;
		}
	}
	for (size_t b = 0; b < r->cfg.nbuckets; b++) {
		bks[b].name = r->cfg.buckets[b].name;
		bks[b].domain = r->cfg.buckets[b].domain;
	}
	uname(&un);
	snprintf(kernel, sizeof(kernel), "%s", un.release);
	ah = pt_agg__health(r->agg);
	ss = pt_agg__steps(r->agg);
	rep.meta.tool = "proftrace";
	rep.meta.version = PT_VERSION;
	rep.meta.pid = r->tgt.pid;
	rep.meta.comm = r->tgt.comm;
	rep.meta.exe = pt_target__view(r->tgt.root, r->tgt.exe);
	rep.meta.start_unix_ns = r->t0_unix;
	rep.meta.duration_s = (double)(r->t_end_mono - r->t0_mono) / 1e9;
	rep.meta.targets_file = r->cfg.path;
	rep.meta.kernel = kernel;
	rep.meta.warmup_steps = r->cfg.warmup_steps;
	rep.meta.step_probe = r->cfg.step_probe >= 0 ? r->cfg.probes[r->cfg.step_probe].text : NULL;
	rep.meta.step_mode = r->cfg.step_mode == PT_STEP_ITERATION ? "iteration" : "call";
	if (r->want_py) {
		const struct pt_pyprobe_stats *ps = r->pp ? pt_pyprobe__stats(r->pp) : NULL;
		bool exact = py_exact(r);

		pyrep.version = r->py.version;
		pyrep.path = pt_target__view(r->tgt.root, r->py.path);
		pyrep.mechanism = "evalframe";
		pyrep.probe = r->att ? pt_attach__py_probe(r->att) : NULL;
		pyrep.perf_trampoline = r->tramp_checks && r->tramp_on == r->tramp_checks;
		pyrep.timing = exact ? "exact" : "c-entry-only";
		if (r->py.L.evalframe_all_calls)
			pyrep.why = "every Python call enters _PyEval_EvalFrameDefault on this "
				    "version: each configured call is timed from entry to return";
		else if (exact)
			pyrep.why = "the perf trampoline was active at every check: every Python "
				    "call enters _PyEval_EvalFrameDefault";
		else if (r->py.L.minor == 11)
			pyrep.why = "Python 3.11 runs Python-to-Python calls inside the caller's "
				    "_PyEval_EvalFrameDefault: only calls made from C code are seen";
		else
			pyrep.why = "the perf trampoline was not active (at every check): Python "
				    "3.12+ runs Python-to-Python calls inside the caller's "
				    "_PyEval_EvalFrameDefault, only calls made from C code are seen";
		if (!exact && r->py.L.minor >= 12)
			pyrep.advice = "restart the server with PYTHONPERFSUPPORT=1 (or python -X "
				       "perf) for exact py: timing";
		else if (!exact)
			pyrep.advice = "counts and times of py: rows are partial; Python 3.10 or "
				       "3.12+ with PYTHONPERFSUPPORT=1 gives exact timing";
		if (ps) {
			pyrep.code_objects = ps->codes;
			pyrep.matched = ps->matched;
			pyrep.unreadable = ps->unreadable;
			pyrep.no_source = ps->no_source;
			pyrep.no_source_file = ps->no_source ? ps->no_source_file : NULL;
		}
		rep.meta.python = &pyrep;
	}
	rep.agg = r->agg;
	rep.buckets = bks;
	rep.nbuckets = r->cfg.nbuckets;
	rep.funcs = rows;
	rep.nfuncs = nrows;
	rep.health.events = r->events;
	rep.health.dropped_events = c.dropped;
	rep.health.depth_overflow = c.depth_overflow;
	rep.health.unwound = c.unwound;
	rep.health.orphan_returns = c.orphan_returns;
	rep.health.py_unreadable = c.py_unreadable;
	rep.health.py_map_full = c.py_map_full;
	rep.health.py_unresolved = r->py_unresolved;
	rep.health.lost_calls = ah->lost_calls;
	rep.health.steps_incomplete = ss->incomplete;
	rep.health.probes_requested = (unsigned int)(r->nfs + nunres);
	rep.health.probes_attached = r->att ? (unsigned int)pt_attach__nattached(r->att) : 0;

	doc = pt_summary__build(&rep);
	if (!doc) {
		e = -ENOMEM;
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
	for (size_t i = 0; i < pt_nemitters; i++) {
		FILE *f;

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
	if (r->env.json)
		e = pt_summary__write_json(stdout, doc);
out:
	cJSON_Delete(doc);
	free(rows);
	free(bks);
	return e;
}

/* Tell the aggregator how many records BPF could not write, as it goes. */
static void note_drops(struct run *r)
{
	struct pt_counters c;

	pt_attach__counters(r->att, &c);
	if (c.dropped > r->dropped_seen) {
		clear_status();
		if (!r->dropped_seen)
			fprintf(stderr, "proftrace: warning: the ring buffer is full, records are "
				"lost (raise `set ringbuf_mb` or lower `set poll_ms`)\n");
		pt_agg__lost(r->agg, c.dropped - r->dropped_seen);
		r->dropped_seen = c.dropped;
	}
}

/* Live status on a terminal, refreshed each second in place. */
struct status {
	bool on;
	uint64_t last_ns, last_events, last_steps;
};

static void status_tick(struct run *r, struct status *st, uint64_t now)
{
	const struct pt_agg_step_stats *ss = pt_agg__steps(r->agg);
	double dt = (double)(now - st->last_ns) / 1e9;
	uint64_t steps = ss->dur.count;

	if (!st->on || dt < 1.0)
		return;
	fprintf(stderr, "\r\033[Kproftrace: %.0fs  steps %llu  %.1f steps/s", since_start_s(r),
		(unsigned long long)steps, (double)(steps - st->last_steps) / dt);
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

enum { TAG_SIG = 1, TAG_TIMER, TAG_PID, TAG_RING };

/* Drain on a timer (records are submitted without wakeups), wake at once
 * for dlopen, signals and the target's exit. */
static int event_loop(struct run *r, const sigset_t *mask)
{
	enum stop_reason stop = STOP_NONE;
	struct itimerspec its = { 0 };
	uint64_t last_rescan = now_ns(CLOCK_MONOTONIC);
	uint64_t deadline = 0;
	struct status st = { .on = !r->env.quiet && isatty(STDERR_FILENO),
			     .last_ns = last_rescan };
	int ep, sfd, tfd, pfd, e = 0;

	ep = epoll_create1(EPOLL_CLOEXEC);
	sfd = signalfd(-1, mask, SFD_CLOEXEC | SFD_NONBLOCK);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	pfd = pt_target__pidfd(&r->tgt);
	if (ep < 0 || sfd < 0 || tfd < 0) {
		e = -errno;
		goto out;
	}
	its.it_interval.tv_nsec = (long)r->cfg.poll_ms * 1000000L;
	its.it_value = its.it_interval;
	timerfd_settime(tfd, 0, &its, NULL);
	if (add_fd(ep, sfd, TAG_SIG) || add_fd(ep, tfd, TAG_TIMER) ||
	    add_fd(ep, pt_attach__ring_fd(r->att), TAG_RING) ||
	    (pfd >= 0 && add_fd(ep, pfd, TAG_PID))) {
		e = -errno;
		goto out;
	}
	if (r->env.duration_s > 0)
		deadline = r->t0_mono + (uint64_t)(r->env.duration_s * 1e9);

	while (stop == STOP_NONE) {
		struct epoll_event evs[4];
		int n = epoll_wait(ep, evs, 4, 1000);
		uint64_t now;

		if (n < 0 && errno != EINTR) {
			e = -errno;
			break;
		}
		for (int i = 0; i < n; i++) {
			uint64_t junk;

			switch (evs[i].data.u32) {
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
			case TAG_PID:
				stop = STOP_EXIT;
				break;
			case TAG_RING:
				break;
			}
		}
		pt_attach__drain(r->att);
		note_drops(r);
		now = now_ns(CLOCK_MONOTONIC);
		if (pfd < 0 && !pt_target__alive(&r->tgt))
			stop = STOP_EXIT;
		if (stop == STOP_NONE && (r->rescan || now - last_rescan >= RESCAN_MS * 1000000ull)) {
			rescan(r);
			last_rescan = now;
		}
		if (deadline && now >= deadline && stop == STOP_NONE)
			stop = STOP_DURATION;
		status_tick(r, &st, now);
	}
	status_end(&st);
	r->t_end_mono = now_ns(CLOCK_MONOTONIC);
	/* Records submitted before the stop are in the ring: take them all. */
	pt_attach__drain(r->att);
	note_drops(r);
	if (stop == STOP_EXIT)
		fprintf(stderr, "proftrace: process %d exited\n", r->tgt.pid);
out:
	if (pfd >= 0)
		close(pfd);
	if (tfd >= 0)
		close(tfd);
	if (sfd >= 0)
		close(sfd);
	if (ep >= 0)
		close(ep);
	return e;
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
	struct pt_maps maps = { 0 };
	struct pt_resolver_opts ropts = { 0 };
	struct pt_attach_opts aopts = { 0 };
	struct pt_agg_opts gopts = { 0 };
	sigset_t mask;
	char err[2048];
	int e, ret = 1, n;

	e = pt_cli__parse(&r.env, argc, argv);
	if (e)
		return e > 0 ? 0 : EXIT_USAGE;
	verbose = r.env.verbose;
	libbpf_set_print(libbpf_print);

	if (pt_config__load(&r.cfg, r.env.targets, err, sizeof(err))) {
		fprintf(stderr, "proftrace: %s\n", err);
		return EXIT_USAGE;
	}
	if (pt_target__open(&r.tgt, r.env.pid, err, sizeof(err))) {
		fprintf(stderr, "proftrace: %s\n", err);
		ret = EXIT_USAGE;
		goto cleanup;
	}
	e = pt_maps__read_pid(&maps, r.tgt.pid);
	if (e) {
		fprintf(stderr, "proftrace: cannot read /proc/%d/maps: %s (hint: %s)\n", r.tgt.pid,
			strerror(-e),
			e == -EACCES || e == -EPERM ? "run as root, e.g. `sudo proftrace ...`"
						    : "is the process exiting?");
		ret = e == -EACCES || e == -EPERM || e == -ENOENT ? EXIT_USAGE : 1;
		goto cleanup;
	}
	ropts.cfg = &r.cfg;
	ropts.pid = r.tgt.pid;
	ropts.exe = r.tgt.exe;
	ropts.root = r.tgt.root;
	r.res = pt_resolver__new(&ropts);
	if (!r.res)
		goto cleanup;
	n = pt_resolver__update(r.res, &maps, true, err, sizeof(err));
	if (n < 0) {
		fprintf(stderr, "proftrace: %s\n", err);
		ret = n == -ENOMEM ? 1 : EXIT_USAGE;
		goto cleanup;
	}
	for (size_t i = 0; i < r.cfg.nprobes; i++)
		r.want_py |= r.cfg.probes[i].kind == PT_PROBE_PY;
	if (r.want_py) {
		e = pt_python__find(&r.py, &maps, r.tgt.pid, err, sizeof(err));
		if (e) {
			fprintf(stderr, "proftrace: %s\n", err);
			ret = e == -ENOMEM ? 1 : EXIT_USAGE;
			goto cleanup;
		}
		update_trampoline(&r);
	}
	if (r.env.dry_run) {
		print_dry_run(&r);
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

	gopts.nbuckets = r.cfg.nbuckets;
	gopts.step_mode = r.cfg.step_mode;
	gopts.warmup_steps = r.cfg.warmup_steps;
	r.agg = pt_agg__new(&gopts);
	if (!r.agg)
		goto cleanup;
	aopts.pid = r.tgt.pid;
	aopts.ringbuf_mb = r.cfg.ringbuf_mb;
	aopts.wakeup_each = r.cfg.ringbuf_wakeup;
	aopts.on_rec = on_rec;
	aopts.ctx = &r;
	aopts.py = r.want_py ? &r.py : NULL;
	aopts.py_session = r.cfg.py_session;
	e = pt_attach__open(&r.att, &aopts, err, sizeof(err));
	if (e) {
		fprintf(stderr, "proftrace: %s\n", err);
		ret = e == -EPERM || e == -EACCES ? EXIT_USAGE : 1;
		goto cleanup;
	}
	r.t0_mono = now_ns(CLOCK_MONOTONIC);
	r.t0_unix = now_ns(CLOCK_REALTIME);
	if (r.want_py) {
		e = start_python(&r, err, sizeof(err));
		if (e) {
			fprintf(stderr, "proftrace: %s\n", err);
			goto cleanup;
		}
	}
	hook_dynamic_linker(&r, &maps);
	n = attach_new(&r, 0);
	if (n < 0)
		goto cleanup;
	{
		size_t pending = 0;

		for (size_t s = 0; s < r.cfg.nprobes; s++)
			pending += r.cfg.probes[s].kind == PT_PROBE_NATIVE &&
				   pt_resolver__spec_nfuncs(r.res, s) == 0;
		fprintf(stderr, "proftrace: attached %d probe%s to pid %d (%s)", n,
			n == 1 ? "" : "s", r.tgt.pid, r.tgt.comm);
		if (r.want_py)
			fprintf(stderr, "; Python %s frames probed", r.py.version);
		if (pending)
			fprintf(stderr, "; %zu probe%s waiting for %s to be loaded", pending,
				pending == 1 ? "" : "s", pending == 1 ? "its library" : "their libraries");
		fprintf(stderr, "\n");
	}
	e = event_loop(&r, &mask);
	if (e) {
		fprintf(stderr, "proftrace: event loop failed: %s\n", strerror(-e));
		goto cleanup;
	}
	pt_agg__finish(r.agg);
	e = write_outputs(&r);
	ret = e ? 1 : 0;

cleanup:
	pt_attach__free(r.att);
	pt_pyprobe__free(r.pp);
	pt_python__free(&r.py);
	pt_agg__free(r.agg);
	pt_resolver__free(r.res);
	pt_maps__free(&maps);
	for (size_t i = 0; i < r.nfs; i++)
		free(r.fs[i].reason);
	free(r.fs);
	pt_config__free(&r.cfg);
	return ret;
}
