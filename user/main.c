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
#include "flame.h"
#include "gpu.h"
#include "gpuring.h"
#include "pyprobe.h"
#include "pysym.h"
#include "python.h"
#include "report.h"
#include "resolve.h"
#include "runs.h"
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

struct fstate {
	bool attached;
	double at_s;
	char *reason; /* owned */
	unsigned int last_line; /* py: last line per its line table, 0: unknown */
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
	bool have_py;   /* the target runs CPython (r->py is valid) */
	bool py_probed; /* the frame evaluator is probed */
	struct pt_python py;
	struct pt_pyprobe *pp;
	char proc_root[64], proc_cwd[64];
	int tramp_checks, tramp_on; /* perf trampoline: checks made, seen active */
	uint64_t py_unresolved; /* calls of code freed before it could be read */

	/* stack sampling */
	struct pt_sampler *smp;
	struct pt_pysym *sym;
	struct pt_stacks *stk;
	struct pt_sframe *sf; /* scratch: one sample's frames and their labels */
	char (*labels)[256];

	/* the GPU stream (CUPTI shim) */
	struct pt_gpuring *gr;
	struct pt_gpu *gpu;
	bool gpu_attached;
	bool gpu_oom; /* a GPU record, step or bucket call could not be kept */
	char gpu_why[256]; /* no GPU stream: why */

	/* runs split on idle gaps */
	struct pt_runs *runs;

	/* --trace: trace.json's events */
	struct pt_trace *trace;

	/* tokens, kv_len, batch per step */
	struct pt_stepvals sv;
	struct pt_tmem tmem; /* the target's memory (frame slots of py: values) */
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
static int read_target(void *ctx, uint64_t addr, void *buf, size_t len);
static void update_trampoline(struct run *r);

/* What BPF reads at f's calls, when its probe has values. */
static void set_val_spec(struct run *r, const struct pt_func *f)
{
	struct pt_val_spec vs;

	if (f->vals_spec < 0 || !r->att)
		return;
	pt_stepvals__bpf_spec(&r->sv, f->vals_spec, &vs);
	if (pt_attach__val_spec(r->att, (uint32_t)f->fid, &vs))
		fprintf(stderr, "proftrace: warning: cannot set the values of %s: no tokens, "
				"kv_len or batch from it\n", f->symbol);
}

/* The frame slots of a py: function's argument values in code object
 * code (they differ per code object: two functions can match a probe). */
static void set_py_slots(struct run *r, uint64_t code, struct pt_py_code *val)
{
	const struct pt_func *f;
	const struct pt_probe_spec *ps;
	const char *names[PT_MAX_VALS] = { 0 };
	int16_t slots[PT_MAX_VALS];
	struct pt_pytypes t = { .code_type = r->py.code_type,
				.unicode_type = r->py.unicode_type };

	for (int k = 0; k < PT_MAX_VALS; k++)
		val->slot[k] = PT_PY_SLOT_NONE;
	val->vals = 0;
	if (val->fid >= pt_resolver__nfuncs(r->res))
		return;
	f = pt_resolver__func(r->res, val->fid);
	if (f->vals_spec < 0)
		return;
	ps = &r->cfg.probes[f->vals_spec];
	for (unsigned int k = 0; k < ps->nvals && k < PT_MAX_VALS; k++)
		names[k] = ps->vals[k].src == PT_VSRC_PYARG ? ps->vals[k].name : NULL;
	if (pt_pycode__slots(&r->tmem, &r->py.L, &t, code, names, PT_MAX_VALS, slots) == 0)
		memcpy(val->slot, slots, sizeof(slots));
	for (unsigned int k = 0; k < ps->nvals && k < PT_MAX_VALS; k++)
		if (names[k] && val->slot[k] < 0)
			fprintf(stderr, "proftrace: warning: %s (%s:%u) has no argument '%s': %s=%s "
					"is missing for it\n", f->symbol, f->object, f->py_line,
				names[k], pt_vexpr__role_name(ps->vals[k].role), ps->vals[k].text);
	val->vals = 1;
}

/* Python functions found at run time, by the frame probe or in samples:
 * the aggregator and the report learn about them. */
static void sync_py_funcs(struct run *r)
{
	size_t before = r->nfs;

	if (grow_fstate(r))
		return;
	for (size_t i = before; i < r->nfs; i++) {
		const struct pt_func *f = pt_resolver__func(r->res, i);

		if (!f->py)
			continue; /* native: attach_new() does these */
		pt_agg__set_func(r->agg, (uint32_t)f->fid, f->is_step, f->bucket_mask);
		set_val_spec(r, f);
		r->fs[i].attached = true;
		r->fs[i].at_s = since_start_s(r);
		if (f->lines_spec >= 0 && r->stk)
			pt_stacks__want_lines(r->stk, (uint32_t)f->fid);
		if (f->lines_spec >= 0 && r->pp) {
			size_t len;

			/* read (and cached) now: by the time lines.txt is
			 * written the target may have exited */
			pt_pyprobe__source(r->pp, f->object, &len);
		}
		vlog("proftrace: python %s (%s:%u) is fid %d\n", f->symbol, f->object, f->py_line,
		     f->fid);
	}
}

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
	if (added)
		sync_py_funcs(r); /* before the answer: BPF needs the fid's value spec */
	if (fid != PT_FID_PY_NONE && pt_stepvals__active(&r->sv))
		set_py_slots(r, rec->code, &val);
	pt_attach__py_code(r->att, rec->code, &val);
}

/* Thread tid's comm into comm (empty when it cannot be read). */
static void read_comm(const struct run *r, uint32_t tid, char *comm, size_t len)
{
	char path[64];
	FILE *f;

	comm[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%u/comm", r->tgt.pid, tid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(comm, (int)len, f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
}

/* The thread's name, read once, for the flame graph and the report. */
static void name_thread(struct run *r, uint32_t tid)
{
	char comm[64];

	read_comm(r, tid, comm, sizeof(comm));
	pt_stacks__name_thread(r->stk, tid, comm[0] ? comm : "?");
}

/* trace.json's name of host thread tid, read once. */
static void trace_thread(struct run *r, uint32_t tid)
{
	char comm[64];

	if (pt_trace__has_thread_name(r->trace, tid))
		return;
	read_comm(r, tid, comm, sizeof(comm));
	pt_trace__thread_name(r->trace, tid, comm);
}

/* A stack sample: names and lines for its frames, then into the stacks. */
static int on_sample(void *ctx, const struct pt_sample *s)
{
	struct run *r = ctx;
	struct pt_stacks_sample ss = { .tid = s->tid, .offcpu = s->type == PT_REC_OFFCPU,
				       .weight_ns = s->weight, .flags = s->flags, .f = r->sf };
	const struct pt_pysym_code *codes[PT_SAMPLE_MAX_FRAMES];
	size_t before = pt_resolver__nfuncs(r->res);

	if (s->pid != (uint32_t)r->tgt.pid)
		return 0;
	if (!pt_stacks__has_thread(r->stk, s->tid))
		name_thread(r, s->tid);
	for (uint32_t i = 0; i < s->nframes && i < PT_SAMPLE_MAX_FRAMES; i++) {
		const struct pt_pysym_code *c;
		unsigned int line;

		if (!s->f[i].code)
			continue; /* C-stack shim frame */
		c = pt_pysym__code(r->sym, s->f[i].code);
		if (!c)
			return 0; /* out of memory: the sample is lost */
		line = pt_pysym__line(r->sym, c, s->f[i].pos);
		ss.unknown += !c->ok;
		pt_pysym__label(c, line, r->labels[ss.n], sizeof(r->labels[0]));
		r->sf[ss.n].label = r->labels[ss.n];
		r->sf[ss.n].fid = c->fid;
		r->sf[ss.n].line = line;
		codes[ss.n++] = c;
	}
	if (pt_resolver__nfuncs(r->res) != before)
		sync_py_funcs(r);
	for (size_t i = 0; i < ss.n; i++) {
		uint32_t fid = r->sf[i].fid;

		if (fid != PT_SFID_NONE && fid < r->nfs && !r->fs[fid].last_line)
			r->fs[fid].last_line = pt_pysym__last_line(r->sym, codes[i]);
	}
	pt_stacks__add(r->stk, &ss);
	return 0;
}

static void on_values(struct run *r, const struct pt_rec_vals *v, size_t size)
{
	if (v->fid >= r->nfs) {
		r->sv.bad_records++;
		return;
	}
	pt_stepvals__record(&r->sv, r->agg, pt_resolver__func(r->res, v->fid)->vals_spec, v,
			    size);
}

/* A completed call, for the consumers that want every one: trace.json's
 * slices and the GPU join's bucket calls. */
static void on_call(struct run *r, const struct pt_rec *rec)
{
	const struct pt_func *f;

	if (rec->fid >= r->nfs)
		return;
	f = pt_resolver__func(r->res, rec->fid);
	if (r->trace) {
		trace_thread(r, rec->tid);
		pt_trace__slice(r->trace, rec->tid, rec->t_entry, rec->t_exit, f->symbol, f->py,
				f->bucket_mask);
	}
	if (r->gpu && f->bucket_mask &&
	    pt_gpu__bucket_call(r->gpu, rec->tid, rec->t_entry, rec->t_exit, f->bucket_mask))
		r->gpu_oom = true;
}

static int on_rec(void *ctx, const struct pt_rec *rec, size_t size)
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
	case PT_REC_VALUES:
		on_values(r, (const struct pt_rec_vals *)rec, size);
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
		/* its code was not known at entry: BPF could not read its values */
		if (copy.fid < r->nfs)
			pt_stepvals__missed(&r->sv, pt_resolver__func(r->res, copy.fid)->vals_spec,
					    rec->type == PT_REC_EXIT, PT_VST_FIRST_CALL);
	}
	pt_agg__record(r->agg, rec);
	if (rec->type == PT_REC_EXIT && (r->trace || r->gpu))
		on_call(r, rec);
	return 0;
}

static void on_step(void *ctx, const struct pt_step *s)
{
	struct run *r = ctx;

	pt_stepvals__step(&r->sv, s);
	if (r->trace) {
		trace_thread(r, s->tid);
		pt_trace__step(r->trace, s);
	}
	if (r->runs)
		pt_runs__step(r->runs, s); /* out of memory: runs are left out, and said */
	if (r->gpu && pt_gpu__step(r->gpu, s->tid, s->t_start, s->t_end))
		r->gpu_oom = true; /* said at the end */
}

static int on_gpu_rec(void *ctx, const struct pt_gpu_rec *g)
{
	struct run *r = ctx;

	if (pt_gpu__record(r->gpu, g))
		r->gpu_oom = true;
	if (r->trace) {
		if (g->kind == PT_GPU_API)
			trace_thread(r, g->api.tid);
		pt_trace__gpu(r->trace, g);
	}
	return 0;
}

/*
 * The CUPTI shim's ring, if the target has one (before the clock starts:
 * attaching is what wakes the shim). 0, or EXIT_USAGE when --gpu on
 * cannot be honoured.
 */
static int open_gpu(struct run *r)
{
	char err[256];
	int e;

	if (r->env.gpu == PT_GPU_OFF) {
		snprintf(r->gpu_why, sizeof(r->gpu_why), "--gpu off");
		return 0;
	}
	e = pt_gpuring__open(&r->gr, r->tgt.pid, err, sizeof(err));
	if (e == -ENOENT)
		snprintf(err, sizeof(err),
			 "no CUPTI shim in pid %d: start the server with "
			 "CUDA_INJECTION64_PATH=/path/to/libproftrace_cupti.so (see docs/gpu.md)",
			 r->tgt.pid);
	if (!e) {
		r->gpu = pt_gpu__new(r->cfg.nbuckets);
		if (!r->gpu)
			return -ENOMEM;
		return 0;
	}
	snprintf(r->gpu_why, sizeof(r->gpu_why), "%s", err);
	if (r->env.gpu == PT_GPU_ON) {
		fprintf(stderr, "proftrace: --gpu on: %s\n", err);
		return EXIT_USAGE;
	}
	if (e != -ENOENT)
		fprintf(stderr, "proftrace: warning: no GPU stream: %s\n", err);
	return 0;
}

static int attach_gpu(struct run *r)
{
	int e;

	if (!r->gr)
		return 0;
	e = pt_gpuring__attach(r->gr, now_ns(CLOCK_MONOTONIC));
	if (!e) {
		r->gpu_attached = true;
		return 0;
	}
	snprintf(r->gpu_why, sizeof(r->gpu_why),
		 e == -EBUSY ? "another proftrace is reading this process's CUPTI shim"
			     : "cannot attach to the CUPTI shim's ring: %s", strerror(-e));
	pt_gpu__free(r->gpu);
	r->gpu = NULL;
	if (r->env.gpu == PT_GPU_ON) {
		fprintf(stderr, "proftrace: --gpu on: %s\n", r->gpu_why);
		return EXIT_USAGE;
	}
	fprintf(stderr, "proftrace: warning: no GPU stream: %s\n", r->gpu_why);
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
		set_val_spec(r, f);
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
 * when there are no samples to time functions with.
 */
static bool want_py_probe(const struct run *r)
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
	return py_exact(r) || !r->cfg.sample_hz || py_has_roles(&r->cfg);
}

/* How py: rows are timed: "exact", "sampled" or "c-entry-only". */
static const char *py_timing(const struct run *r)
{
	if (r->py_probed && py_exact(r))
		return "exact";
	if (r->smp && r->cfg.python_mode != PT_PYMODE_EVALFRAME)
		return "sampled";
	return "c-entry-only";
}

/* The frame evaluator's probe, where python_mode wants it. */
static int probe_python(struct run *r, char *err, size_t errlen)
{
	int e;

	if (!want_py_probe(r))
		return 0;
	e = pt_attach__python(r->att, err, errlen);
	if (!e)
		r->py_probed = true;
	return e;
}

/* Code objects -> py: functions, for the probe and the sampler. */
static int start_python(struct run *r, char *err, size_t errlen)
{
	struct pt_pyprobe_opts o = { 0 };

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
	return 0;
}

/* Say once, at attach, when py: rows will not be exact. */
static void warn_py_timing(const struct run *r)
{
	const char *why = r->py.L.minor == 11 ? "3.11 runs Python-to-Python calls inside one "
						"_PyEval_EvalFrameDefault"
					      : "the perf trampoline is off";
	const char *fix = r->py.L.minor >= 12 ? "; restart the server with PYTHONPERFSUPPORT=1 "
						"for exact times"
					      : "";

	if (!r->want_py || (r->py_probed && py_exact(r)))
		return;
	if (!strcmp(py_timing(r), "sampled"))
		fprintf(stderr,
			"proftrace: warning: Python %s: not every call can be seen (%s); py: rows "
			"get sampled times (timing \"sampled\")%s\n",
			r->py.version,
			r->py_probed || r->cfg.python_mode != PT_PYMODE_SAMPLED ? why
										 : "python_mode sampled",
			r->cfg.python_mode == PT_PYMODE_SAMPLED ? "" : fix);
	else
		fprintf(stderr,
			"proftrace: warning: Python %s: only calls made from C code are seen "
			"(%s); py: rows are marked timing \"c-entry-only\"%s\n",
			r->py.version, why, fix);
}

static void *xcalloc(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

/* Stack sampling of every thread, when the target runs CPython. */
static int open_sampler(struct run *r, char *err, size_t errlen)
{
	struct pt_sampler_opts so = { 0 };

	so.pid = r->tgt.pid;
	so.hz = r->cfg.sample_hz;
	so.offcpu = true;
	so.py = &r->py;
	so.ringbuf_mb = r->cfg.ringbuf_mb;
	so.on_sample = on_sample;
	so.ctx = r;
	return pt_sampler__open(&r->smp, &so, err, errlen);
}

static int start_sampling(struct run *r, char *err, size_t errlen)
{
	struct pt_pysym_opts yo = { 0 };

	yo.layout = &r->py.L;
	yo.types.code_type = r->py.code_type;
	yo.types.unicode_type = r->py.unicode_type;
	yo.mem.read = read_target;
	yo.mem.ctx = &r->tgt.pid;
	yo.pp = r->pp;
	r->sym = pt_pysym__new(&yo);
	r->stk = pt_stacks__new();
	r->sf = xcalloc(PT_SAMPLE_MAX_FRAMES, sizeof(*r->sf));
	r->labels = xcalloc(PT_SAMPLE_MAX_FRAMES, sizeof(*r->labels));
	if (!r->sym || !r->stk || !r->sf || !r->labels) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < r->nfs; i++) {
		const struct pt_func *f = pt_resolver__func(r->res, i);

		if (f->py && f->lines_spec >= 0)
			pt_stacks__want_lines(r->stk, (uint32_t)f->fid);
	}
	return pt_sampler__attach(r->smp, err, errlen);
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

static int thread_wall_cmp(const void *a, const void *b)
{
	const struct pt_report_thread *x = a, *y = b;
	uint64_t wx = x->on_ns + x->off_ns, wy = y->on_ns + y->off_ns;

	if (wx != wy)
		return wx < wy ? 1 : -1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int build_sampling(struct run *r, struct pt_report_sampling *sp,
			  struct pt_report_thread **threads)
{
	const struct pt_stacks_totals *t = pt_stacks__totals(r->stk);
	size_t n = pt_stacks__nthreads(r->stk);
	struct pt_sampler_stats ss;
	struct pt_report_thread *v;

	pt_sampler__stats(r->smp, &ss);
	v = xcalloc(n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct pt_stacks_thread *th = pt_stacks__thread(r->stk, i);

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
static int build_lines_fn(struct run *r, const struct pt_func *f, struct pt_report_lines_fn *l)
{
	const struct pt_stacks_time *t = pt_stacks__func(r->stk, (uint32_t)f->fid);
	const struct pt_stacks_line *sl;
	const char *src, *p;
	size_t nsl, k = 0, srclen;
	unsigned int first = f->py_line, last = r->fs[f->fid].last_line;
	struct pt_report_line *v;

	sl = pt_stacks__lines(r->stk, (uint32_t)f->fid, &nsl);
	if (last < first)
		last = first;
	if (nsl && sl[0].line < first)
		first = sl[0].line; /* a table that disagrees with co_firstlineno */
	if (nsl && sl[nsl - 1].line > last)
		last = sl[nsl - 1].line;
	l->probe = r->cfg.probes[f->lines_spec].text;
	l->file = f->object;
	l->function = f->symbol;
	l->first_line = first;
	l->last_line = last;
	l->exact = r->py_probed && py_exact(r);
	l->fid = f->fid;
	l->samples = t ? t->samples : 0;
	l->on_ns = t ? t->on_ns : 0;
	l->off_ns = t ? t->off_ns : 0;
	src = pt_pyprobe__source(r->pp, f->object, &srclen);
	if (!src) {
		char buf[PATH_MAX + 96];

		snprintf(buf, sizeof(buf), "cannot read %s through /proc/%d/root", f->object,
			 r->tgt.pid);
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
static int build_lines(struct run *r, struct pt_report_lines_fn **out, size_t *nout)
{
	struct pt_report_lines_fn *v = xcalloc(r->nfs + r->cfg.nprobes, sizeof(*v));
	size_t n = 0;
	int e = 0;

	if (!v)
		return -ENOMEM;
	for (size_t s = 0; s < r->cfg.nprobes && !e; s++) {
		bool any = false;

		if (!r->cfg.probes[s].is_lines)
			continue;
		for (size_t i = 0; i < r->nfs && !e; i++) {
			const struct pt_func *f = pt_resolver__func(r->res, i);

			if (!f->py || f->lines_spec != (int)s)
				continue;
			any = true;
			e = build_lines_fn(r, f, &v[n++]);
		}
		if (!any && !e) {
			v[n].probe = r->cfg.probes[s].text;
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
	char path[PATH_MAX + 32];
	FILE *f;
	int e;

	if (!bnames)
		return -ENOMEM;
	for (size_t b = 0; b < r->cfg.nbuckets; b++)
		bnames[b] = r->cfg.buckets[b].name;
	o.pid = r->tgt.pid;
	o.process_name = r->tgt.comm;
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
	if (e)
		fprintf(stderr, "proftrace: cannot write %s: %s\n", path, strerror(-e));
	else
		fprintf(stderr, "proftrace: wrote %s\n", path);
	return e;
}

/* stacks.folded and flame.svg, from the sampled call tree. */
static int write_flame(struct run *r, const char *dir)
{
	const struct pt_stacks_totals *t = pt_stacks__totals(r->stk);
	struct pt_flame_svg_opts o = { 0 };
	char path[PATH_MAX + 32], title[256], sub[256];
	const char *names[] = { "stacks.folded", "flame.svg" };
	int e = 0;

	snprintf(title, sizeof(title), "proftrace: %s (pid %d)", r->tgt.comm, r->tgt.pid);
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
			e = i == 0 ? pt_flame__write_folded(pt_stacks__flame(r->stk), f)
				   : pt_flame__write_svg(pt_stacks__flame(r->stk), f, &o);
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

static int write_outputs(struct run *r)
{
	struct pt_report rep = { 0 };
	struct pt_report_python pyrep = { 0 };
	struct pt_report_sampling smp = { 0 };
	struct pt_report_trace trace_rep;
	struct pt_gpuring_info gpu_info;
	struct pt_report_thread *threads = NULL;
	struct pt_report_lines_fn *lfns = NULL;
	size_t nlfns = 0;
	struct pt_report_func *rows;
	struct pt_report_bucket *bks;
	struct pt_counters c = { 0 };
	const struct pt_agg_health *ah;
	const struct pt_agg_step_stats *ss;
	char dir[PATH_MAX], path[PATH_MAX + 32], kernel[128];
	struct utsname un;
	size_t nrows = 0, nunres = 0;
	cJSON *doc = NULL;
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
			row->timing = f->py ? py_timing(r) : "exact";
			if (f->py && r->stk) {
				const struct pt_stacks_time *t =
					pt_stacks__func(r->stk, (uint32_t)f->fid);

				row->sampled = true;
				row->s_samples = t ? t->samples : 0;
				row->s_on_ns = t ? t->on_ns : 0;
				row->s_off_ns = t ? t->off_ns : 0;
			}
			nrows++;
		}
		if (pt_resolver__spec_nfuncs(r->res, s) == 0) {
			rows[nrows].fid = -1;
			rows[nrows].probe = sp->text;
			rows[nrows].py = sp->kind == PT_PROBE_PY;
			rows[nrows].sampled = rows[nrows].py && r->stk;
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
		bool exact = r->py_probed && py_exact(r);
		bool sampled = !strcmp(py_timing(r), "sampled");

		pyrep.version = r->py.version;
		pyrep.path = pt_target__view(r->tgt.root, r->py.path);
		pyrep.mechanism = sampled ? "sampled" : "evalframe";
		pyrep.probe = r->att && r->py_probed ? pt_attach__py_probe(r->att) : NULL;
		pyrep.perf_trampoline = r->tramp_checks && r->tramp_on == r->tramp_checks;
		pyrep.timing = py_timing(r);
		if (r->cfg.python_mode == PT_PYMODE_SAMPLED)
			pyrep.why = "python_mode sampled: py: functions are timed from stack samples "
				    "only, the frame evaluator is not probed";
		else if (r->py.L.evalframe_all_calls)
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
		if (sampled && !r->py_probed && r->cfg.python_mode == PT_PYMODE_AUTO)
			pyrep.why = r->py.L.minor == 11
					    ? "Python 3.11 runs Python-to-Python calls inside the "
					      "caller's _PyEval_EvalFrameDefault, so calls cannot all "
					      "be seen: py: functions are timed from stack samples"
					    : "the perf trampoline was not active: Python 3.12+ runs "
					      "Python-to-Python calls inside the caller's "
					      "_PyEval_EvalFrameDefault, so py: functions are timed "
					      "from stack samples";
		if (r->cfg.python_mode == PT_PYMODE_SAMPLED)
			pyrep.advice = NULL;
		else if (!exact && r->py.L.minor >= 12)
			pyrep.advice = "restart the server with PYTHONPERFSUPPORT=1 (or python -X "
				       "perf) for exact py: timing";
		else if (!exact && sampled)
			pyrep.advice = "py: rows carry sampled times, not call counts; Python 3.10 "
				       "or 3.12+ with PYTHONPERFSUPPORT=1 gives exact timing";
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
	if (r->smp) {
		e = build_sampling(r, &smp, &threads);
		if (!e)
			e = build_lines(r, &lfns, &nlfns);
		if (e)
			goto out;
		rep.meta.sampling = &smp;
		rep.lines = lfns;
		rep.nlines = nlfns;
	}
	rep.agg = r->agg;
	rep.buckets = bks;
	rep.nbuckets = r->cfg.nbuckets;
	rep.funcs = rows;
	rep.nfuncs = nrows;
	rep.t0_mono = r->t0_mono;
	if (r->runs && (pt_runs__failed(r->runs) || pt_runs__finish(r->runs)))
		fprintf(stderr, "proftrace: warning: out of memory: no runs in the report\n");
	else
		rep.runs = r->runs;
	rep.vals = &r->sv;
	rep.val_records_dropped = c.val_dropped;
	if (r->gpu) {
		if (r->gpu_oom)
			fprintf(stderr, "proftrace: warning: out of memory for GPU records: the GPU "
					"figures are incomplete\n");
		pt_gpuring__info(r->gr, &gpu_info);
		if (gpu_info.conflict_call)
			fprintf(stderr, "proftrace: warning: CUPTI could not be enabled in pid %d: %s "
					"failed with %s (another profiler holding CUPTI, or no GPU "
					"driver): no GPU records\n", r->tgt.pid,
				pt_gpuring__call_name(gpu_info.conflict_call),
				pt_gpuring__result_name(gpu_info.conflict_code));
		rep.gpu = pt_gpu__join(r->gpu, r->t0_mono, r->t_end_mono);
		rep.gpu_info = &gpu_info;
		if (!rep.gpu)
			snprintf(r->gpu_why, sizeof(r->gpu_why), "out of memory joining GPU records");
	}
	rep.gpu_why = r->gpu_why;
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
	/* functions with probes in place: native uprobes, and py: functions
	 * the frame probe (or the sampler) found; pt_attach__nattached()
	 * counts only the former */
	rep.health.probes_attached = 0;
	for (size_t i = 0; i < r->nfs; i++)
		rep.health.probes_attached += r->fs[i].attached;

	if (r->trace) {
		struct pt_trace_stats ts;

		pt_trace__stats(r->trace, &ts);
		trace_rep = (struct pt_report_trace){ .file = "trace.json", .events = ts.events,
						      .dropped = ts.dropped,
						      .max_events = ts.max_events,
						      .truncated = ts.truncated };
		rep.meta.trace = &trace_rep;
	}
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
	if (r->smp) {
		e = write_flame(r, dir);
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
	cJSON_Delete(doc);
	free(rows);
	free(bks);
	free(threads);
	free_lines(lfns, nlfns);
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
		if (r->smp)
			pt_sampler__drain(r->smp);
		note_drops(r);
		now = now_ns(CLOCK_MONOTONIC);
		if (r->gpu_attached) {
			/* the shim goes dormant after 1 s without a heartbeat */
			pt_gpuring__heartbeat(r->gr, now);
			pt_gpuring__drain(r->gr, on_gpu_rec, r);
		}
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
	pt_sampler__stop(r->smp, r->t_end_mono);
	note_drops(r);
	/* detach: the shim disables CUPTI and flushes what it holds */
	if (r->gpu_attached)
		pt_gpuring__finish(r->gr, on_gpu_rec, r, 1000);
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
	if (check_modes(&r.cfg, err, sizeof(err))) {
		fprintf(stderr, "proftrace: %s\n", err);
		ret = EXIT_USAGE;
		goto cleanup;
	}
	if (r.want_py || r.cfg.sample_hz) {
		e = pt_python__find(&r.py, &maps, r.tgt.pid, err, sizeof(err));
		if (e && (r.want_py || r.cfg.nlines)) {
			fprintf(stderr, "proftrace: %s\n", err);
			ret = e == -ENOMEM ? 1 : EXIT_USAGE;
			goto cleanup;
		}
		/* Sampling walks Python stacks: nothing to do without them. */
		if (e)
			vlog("proftrace: no stack sampling: %s\n", err);
		r.have_py = !e;
		if (r.have_py)
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
	if (pt_stepvals__init(&r.sv, &r.cfg))
		goto cleanup;
	gopts.on_step = on_step;
	gopts.ctx = &r;
	r.tmem.read = read_target;
	r.tmem.ctx = &r.tgt.pid;
	r.agg = pt_agg__new(&gopts);
	if (r.env.trace) {
		r.trace = pt_trace__new(r.env.trace_max ? r.env.trace_max : PT_TRACE_DEFAULT_MAX,
					r.cfg.nbuckets);
		if (!r.trace)
			goto cleanup;
	}
	r.runs = pt_runs__new(r.cfg.nbuckets, (uint64_t)r.cfg.run_gap_ms * 1000000, r.cfg.warmup_runs);
	if (!r.runs)
		goto cleanup;
	if (!r.agg)
		goto cleanup;
	aopts.pid = r.tgt.pid;
	aopts.ringbuf_mb = r.cfg.ringbuf_mb;
	aopts.wakeup_each = r.cfg.ringbuf_wakeup;
	aopts.on_rec = on_rec;
	aopts.ctx = &r;
	aopts.py = want_py_probe(&r) ? &r.py : NULL;
	aopts.py_session = r.cfg.py_session;
	e = pt_attach__open(&r.att, &aopts, err, sizeof(err));
	if (e) {
		fprintf(stderr, "proftrace: %s\n", err);
		ret = e == -EPERM || e == -EACCES ? EXIT_USAGE : 1;
		goto cleanup;
	}
	if (r.have_py && r.cfg.sample_hz) {
		/* Loaded before the clock starts: verifying the stack walker
		 * takes most of a second. */
		e = open_sampler(&r, err, sizeof(err));
		if (e == -ENOMEM)
			goto cleanup;
		if (e)
			fprintf(stderr, "proftrace: warning: no stack sampling: %s\n", err);
	}
	e = open_gpu(&r);
	if (e) {
		ret = e == EXIT_USAGE ? EXIT_USAGE : 1;
		goto cleanup;
	}
	r.t0_mono = now_ns(CLOCK_MONOTONIC);
	r.t0_unix = now_ns(CLOCK_REALTIME);
	e = attach_gpu(&r);
	if (e) {
		ret = EXIT_USAGE;
		goto cleanup;
	}
	if (r.have_py) {
		e = start_python(&r, err, sizeof(err));
		if (e) {
			fprintf(stderr, "proftrace: %s\n", err);
			goto cleanup;
		}
	}
	/* Sampling first: its window is then the whole run. */
	if (r.smp) {
		e = start_sampling(&r, err, sizeof(err));
		if (e == -ENOMEM)
			goto cleanup;
		if (e) {
			/* the probes still give true figures: go on without */
			fprintf(stderr, "proftrace: warning: no stack sampling: %s\n", err);
			pt_sampler__free(r.smp);
			r.smp = NULL;
		}
	}
	if (r.have_py) {
		e = probe_python(&r, err, sizeof(err));
		if (e) {
			fprintf(stderr, "proftrace: %s\n", err);
			goto cleanup;
		}
	}
	warn_py_timing(&r);
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
		if (r.py_probed)
			fprintf(stderr, "; Python %s frames probed", r.py.version);
		if (r.smp) {
			struct pt_sampler_stats ss;

			pt_sampler__stats(r.smp, &ss);
			fprintf(stderr, "; %u thread%s sampled at %u Hz", ss.threads,
				ss.threads == 1 ? "" : "s", r.cfg.sample_hz);
		}
		if (r.gpu)
			fprintf(stderr, "; GPU stream from the CUPTI shim");
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
	pt_gpuring__close(r.gr);
	pt_gpu__free(r.gpu);
	pt_sampler__free(r.smp);
	pt_stacks__free(r.stk);
	pt_pysym__free(r.sym);
	free(r.sf);
	free(r.labels);
	pt_attach__free(r.att);
	pt_pyprobe__free(r.pp);
	pt_python__free(&r.py);
	pt_agg__free(r.agg);
	pt_runs__free(r.runs);
	pt_trace__free(r.trace);
	pt_stepvals__free(&r.sv);
	pt_resolver__free(r.res);
	pt_maps__free(&maps);
	for (size_t i = 0; i < r.nfs; i++)
		free(r.fs[i].reason);
	free(r.fs);
	pt_config__free(&r.cfg);
	return ret;
}
