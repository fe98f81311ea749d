// SPDX-License-Identifier: BSD-2-Clause
/*
 * The steps of a run, as session.c takes them: open (the targets file
 * and the processes, probes resolved), attach (BPF, the sampler, the GPU
 * rings, the probes), (the loop: loop.c) and report; then free. Each
 * prints its own one-line error and returns 0 or -errno (-PT_EUSAGE: the
 * user's to fix, exit 2).
 */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "run.h"
#include "env.h"
#include "calib.h"
#include "proctable.h"
#include "pyproc.h"
#include "metrics.h"
#include "gpustream.h"
#include "view.h"
#include "records.h"
#include "procs.h"
#include "report.h"
#include "steps.h"

#include "aggregate/agg.h"
#include "aggregate/overhead.h"
#include "aggregate/stacks.h"
#include "attach/attach.h"
#include "attach/resolve.h"
#include "bpf/proftrace.h"
#include "config/config.h"
#include "python/agent.h"
#include "report/outdir.h"
#include "report/trace.h"
#include "sample/sampler.h"
#include "util/log.h"
#include "util/steal.h"
#include "util/util.h"

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	int verbose = pt_log__verbose();

	if (verbose < 2 && level != LIBBPF_WARN)
		return 0;
	if (verbose < 1)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* What will time p's py: functions: the agent (named, or auto and it is
 * loaded, or --inject or PEP 768 on 3.14+ will load it), the frame probe
 * (evalframe, before 3.11); -1: none to measure (auto without the agent
 * samples). */
static int python_site(const struct run *r, const struct proc *p)
{
	enum pt_python_mode m = r->cfg.python_mode;
	struct pt_agent *a;
	char why[256];

	if (!p->python.have || !r->want_py ||
	    (m != PT_PYMODE_AUTO && m != PT_PYMODE_AGENT && m != PT_PYMODE_EVALFRAME))
		return -1;
	if (m == PT_PYMODE_AGENT ||
	    (m == PT_PYMODE_AUTO && (r->env.inject || p->python.rt.hexversion >= 0x030e0000)))
		return PT_SITE_AGENT;
	if (m == PT_PYMODE_AUTO) {
		/* without the agent, auto samples: nothing to measure */
		if (pt_agent__open(&a, p->tracee.pid, why, sizeof(why)))
			return -1;
		pt_agent__close(a);
		return PT_SITE_AGENT;
	}
	/* 3.11+ calls Python functions inside one evaluator run: the frame
	 * probe is used there only with the perf trampoline, which a fresh
	 * interpreter would not have (the bench's figure then) */
	if (p->python.rt.hexversion >= 0x030b0000)
		return -1;
	return PT_SITE_FRAME;
}

/* Does an error line name pid already (as a number of its own)? Then no
 * "pid N:" goes before it. */
static bool names_pid(const char *err, int pid)
{
	char num[16];
	size_t n = (size_t)snprintf(num, sizeof(num), "%d", pid);

	for (const char *q = strstr(err, num); q; q = strstr(q + 1, num))
		if ((q == err || !isdigit((unsigned char)q[-1])) && !isdigit((unsigned char)q[n]))
			return true;
	return false;
}

/* The processes named with -p: each must be there and match the config. */
static int open_named(struct run *r)
{
	char err[2048];

	for (int i = 0; i < r->env.npids; i++) {
		struct proc *p;
		int e = pt_run__open_proc(r, r->env.pids[i], true, &p, err, sizeof(err));

		if (!e && pt_proctable__add(&r->procs, p)) {
			pt_run__free_proc(p);
			e = -ENOMEM;
		}
		if (!e)
			continue;
		if (r->env.npids > 1 && e != -ENOMEM && !names_pid(err, r->env.pids[i]))
			pt_msg("proftrace: pid %d: %s\n", r->env.pids[i], err);
		else
			pt_msg("proftrace: %s\n", err);
		return e == -ENOMEM ? e : -PT_EUSAGE;
	}
	return 0;
}

/* --children: what strict resolution checks per process, over them all:
 * a probe whose object is mapped somewhere must match there. */
static int check_probes_somewhere(struct run *r)
{
	for (size_t s = 0; s < r->cfg.nprobes; s++) {
		size_t nf = 0, no = 0;

		if (r->cfg.probes[s].kind != PT_PROBE_NATIVE)
			continue;
		for (size_t i = 0; i < r->procs.n; i++) {
			nf += pt_resolver__spec_nfuncs(r->procs.v[i]->res, s);
			no += pt_resolver__spec_nobjects(r->procs.v[i]->res, s);
		}
		if (no && !nf) {
			pt_msg("proftrace: %s: probe '%s' matches no function in pid %d or its "
			       "descendants, though they map its object (hint: check the symbol "
			       "with --dry-run -p <a worker>)\n",
			       r->cfg.path, r->cfg.probes[s].text, r->env.pid);
			return -PT_EUSAGE;
		}
	}
	return 0;
}

#define MAX_PROBES_DEFAULT 1000

/* A native: probe that takes more functions than --max-probes (a glob
 * wider than meant, as often as not: every call of each of them then
 * pays a probe) is refused, saying what it would take. */
static int check_wide_probes(struct run *r)
{
	unsigned long limit = r->env.max_probes ? r->env.max_probes : MAX_PROBES_DEFAULT;

	for (size_t s = 0; s < r->cfg.nprobes; s++) {
		size_t nf = 0;

		if (r->cfg.probes[s].kind != PT_PROBE_NATIVE)
			continue;
		for (size_t i = 0; i < r->procs.n; i++)
			nf += pt_resolver__spec_nfuncs(r->procs.v[i]->res, s);
		if (nf <= limit)
			continue;
		/* 2,153 functions of libc attached in 0.70 s on the 2-vCPU VM */
		pt_msg("proftrace: %s:%d:%d: probe '%s' matches %zu functions, more than "
		       "--max-probes %lu: attaching them takes about %.1f s, and every call of "
		       "each then pays a probe (about 1 us) (hint: give --max-probes %zu to take "
		       "them all, or narrow the glob; --dry-run lists them)\n",
		       r->cfg.path, r->cfg.probes[s].line, r->cfg.probes[s].col,
		       r->cfg.probes[s].text, nf, limit, (double)nf * 0.35e-3 + 0.1, nf);
		return -PT_EUSAGE;
	}
	return 0;
}

/* The first process that runs CPython: its layout goes into BPF. */
static struct proc *first_python(const struct run *r)
{
	for (size_t i = 0; i < r->procs.n; i++)
		if (r->procs.v[i]->python.have)
			return r->procs.v[i];
	return NULL;
}

int pt_run__open(struct run *r, const struct pt_env *env)
{
	struct proc *pyp;
	char err[2048];
	int e;

	memset(r, 0, sizeof(*r));
	r->t_start_mono = pt_now_ns(CLOCK_MONOTONIC);
	r->ep = -1;
	r->env = *env;
	if (env->targets == env->targets_path) /* a bundled file: the copy's path */
		r->env.targets = r->env.targets_path;
	libbpf_set_print(libbpf_print);
	e = 0;
	if (r->env.targets)
		e = pt_config__load(&r->cfg, r->env.targets, err, sizeof(err));
	else
		pt_config__sampling_only(&r->cfg); /* no targets file: just look */
	/* --rate: the command line's over the file's */
	if (!e && r->env.rate_hz)
		r->cfg.sample_hz = r->env.rate_hz;
	if (r->env.native)
		r->cfg.native_frames = r->env.native > 0;
	if (e || pt_config__check_modes(&r->cfg, err, sizeof(err))) {
		pt_msg("proftrace: %s\n", err);
		return -PT_EUSAGE;
	}
	for (size_t i = 0; i < r->cfg.nprobes; i++)
		r->want_py |= r->cfg.probes[i].kind == PT_PROBE_PY;
	r->multi = r->env.npids > 1 || r->env.children;
	/* descendants are found through the kernel's children lists
	 * (CONFIG_PROC_CHILDREN): they exist for every thread, ours too */
	if (r->env.children && access("/proc/thread-self/children", R_OK)) {
		pt_msg("proftrace: --children needs /proc/PID/task/TID/children, which this kernel "
		       "does not keep (CONFIG_PROC_CHILDREN) (hint: name the processes with -p "
		       "PID,PID)\n");
		return -PT_EUSAGE;
	}
	e = open_named(r);
	if (!e && r->env.children) {
		pt_run__scan_children(r, 0);
		e = pt_run__add_candidates(r, 0, true);
		if (!e)
			e = check_probes_somewhere(r);
	}
	if (!e && !r->env.dry_run)
		e = check_wide_probes(r);
	if (!e && r->multi && pt_run__new_view(r, &r->all, pt_run__on_merged_step, r))
		e = -ENOMEM;
	if (e)
		return e;
	pyp = first_python(r);
	r->py0 = pyp ? &pyp->python.rt : NULL;
	if (!pyp && r->env.children && (r->want_py || r->cfg.nlines)) {
		pt_msg("proftrace: the targets file has py: probes, but no CPython runs in pid %d "
		       "or "
		       "its descendants (hint: attach once the Python workers run, or -p a "
		       "worker)\n",
		       r->env.pid);
		return -PT_EUSAGE;
	}
	if (!pyp && (!r->env.targets || r->env.format)) {
		/* sampling is all there is to do, or all that was asked for */
		pt_msg("proftrace: pid %d (%s)%s runs no CPython: %s\n", r->env.pid,
		       r->procs.v[0]->tracee.comm, r->env.children ? " or its descendants" : "",
		       r->env.targets ? "-o FILE and --format write sampled Python stacks (hint: "
					"-o DIR for summary.json and report.md)"
				      : "without a targets file there is nothing to sample (hint: "
					"name its native functions in one, --targets FILE; see "
					"docs/targets.md)");
		return -PT_EUSAGE;
	}
	r->py_probe_wanted = pyp && pt_run__want_py_probe(r, pyp);
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

static bool has_native(const struct pt_config *cfg)
{
	for (size_t i = 0; i < cfg->nprobes; i++)
		if (cfg->probes[i].kind == PT_PROBE_NATIVE)
			return true;
	return false;
}

static int open_bpf(struct run *r)
{
	struct pt_attach_opts aopts = {
		.ringbuf_mb = r->cfg.ringbuf_mb,
		.wakeup_each = r->cfg.ringbuf_wakeup,
		.follow_children = r->env.children,
		.on_rec = pt_run__on_rec,
		.ctx = r,
		.py_probe = r->py_probe_wanted,
		.py_agent = r->want_py,
		.py_session = r->cfg.py_session,
		.native = has_native(&r->cfg),
		.has_vals = r->cfg.nvals > 0,
	};
	char err[2048];
	int e = pt_attach__open(&r->att, &aopts, err, sizeof(err));

	if (!e)
		return 0;
	pt_msg("proftrace: %s\n", err);
	return e == -EPERM || e == -EACCES ? -PT_EUSAGE : e;
}

/* The CUPTI shims' rings (before the clock starts: attaching wakes them). */
static int open_gpus(struct run *r)
{
	bool any = false;

	for (size_t i = 0; i < r->procs.n; i++) {
		int e = pt_run__open_gpu(r->procs.v[i]);

		if (e)
			return e;
		any |= r->procs.v[i]->gpu.join != NULL;
	}
	if (r->env.gpu == PT_GPU_ON && r->env.children && !any) {
		pt_msg("proftrace: --gpu on: no CUPTI shim in pid %d or its descendants: start the "
		       "server with CUDA_INJECTION64_PATH=/path/to/libproftrace_cupti.so (see "
		       "docs/gpu.md)\n",
		       r->env.pid);
		return -PT_EUSAGE;
	}
	return 0;
}

/* Stack sampling, once the clock runs: a failure leaves the probes,
 * which still give true figures. */
static int start_sampling(struct run *r)
{
	char err[2048];

	r->sf = pt_zalloc(PT_STACKS_MAX_FRAMES, sizeof(*r->sf));
	r->msf = pt_zalloc(PT_STACKS_MAX_FRAMES, sizeof(*r->msf));
	r->labels = pt_zalloc(PT_STACKS_MAX_FRAMES, sizeof(*r->labels));
	if (r->multi)
		r->all.stk = pt_stacks__new();
	if (!r->sf || !r->msf || !r->labels || (r->multi && !r->all.stk))
		return -ENOMEM;
	if (!pt_sampler__attach(r->smp, err, sizeof(err)))
		return 0;
	pt_msg("proftrace: warning: no stack sampling: %s\n", err);
	pt_sampler__free(r->smp);
	r->smp = NULL;
	pt_stacks__free(r->all.stk);
	r->all.stk = NULL;
	return 0;
}

/* Between the steps of an attach: a stop asked for ends it (-PT_ESTOPPED),
 * everything attached undone by pt_run__free. */
#define STOP_POINT(r)                                                                              \
	do {                                                                                       \
		if (pt_run__stop_asked(r))                                                         \
			return -PT_ESTOPPED;                                                       \
	} while (0)

int pt_run__attach(struct run *r)
{
	char err[2048];
	int e;

	if (geteuid() != 0)
		pt_vlog("proftrace: not root: this works only with CAP_BPF, CAP_PERFMON and "
			"CAP_SYS_RESOURCE\n");
	raise_nofile();
	e = pt_run__open_output(r);
	if (e)
		return e;
	/* Block the stop signals before anything is attached, so a signal
	 * arriving during attach still ends in a full report. */
	sigemptyset(&r->stop_mask);
	sigaddset(&r->stop_mask, SIGINT);
	sigaddset(&r->stop_mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &r->stop_mask, NULL);
	/* `--json | head -c 10`: a reader that goes away is a write error
	 * to report, not a death (the files are written first anyway). */
	signal(SIGPIPE, SIG_IGN);
	if (r->env.trace) {
		r->trace = pt_trace__new(r->env.trace_max ? r->env.trace_max : PT_TRACE_DEFAULT_MAX,
					 r->cfg.nbuckets);
		if (!r->trace)
			return -ENOMEM;
	}
	/* before any function is declared (pt_run__start_proc): each is
	 * given its cost; after the processes were found, so a wrong pid
	 * is said at once */
	STOP_POINT(r);
	pt_calib__get(&r->calib, NULL);
	for (size_t i = 0; i < r->procs.n; i++) {
		/* a named Python call's cost, on the first Python process's
		 * interpreter, through what will time it there */
		char exe[64];
		int k = python_site(r, r->procs.v[i]);

		if (k < 0)
			continue;
		snprintf(exe, sizeof(exe), "/proc/%d/exe", r->procs.v[i]->tracee.pid);
		pt_calib__python(&r->calib, exe, r->procs.v[i]->tracee.exe, k);
		break;
	}
	STOP_POINT(r);
	e = open_bpf(r);
	if (!e && r->py0 && r->cfg.sample_hz) {
		/* Loaded before the clock starts: verifying the stack walker
		 * takes most of a second. */
		e = pt_run__open_sampler(r, err, sizeof(err));
		if (e && e != -ENOMEM) {
			pt_msg("proftrace: warning: no stack sampling: %s\n", err);
			e = 0;
		}
	}
	if (!e)
		e = open_gpus(r);
	if (e)
		return e;
	STOP_POINT(r);
	if (r->env.metrics) {
		e = pt_run__metrics_open(r);
		if (e)
			return e;
	}
	r->t0_mono = pt_now_ns(CLOCK_MONOTONIC);
	r->t0_unix = pt_now_ns(CLOCK_REALTIME);
	r->steal0_ok = !pt_steal__now(&r->steal0_ns);
	if (r->smp) {
		e = start_sampling(r);
		if (e)
			return e;
	}
	for (size_t i = 0; i < r->procs.n && !e; i++) {
		e = pt_run__start_proc(r->procs.v[i]);
		if (!e && pt_run__stop_asked(r))
			e = -PT_ESTOPPED;
	}
	if (!e) {
		r->attach_ns = pt_now_ns(CLOCK_MONOTONIC) - r->t_start_mono;
		r->attach_cpu_ns = pt_now_ns(CLOCK_PROCESS_CPUTIME_ID);
	}
	return e;
}

int pt_run__report(struct run *r)
{
	for (size_t i = 0; i < r->procs.n; i++)
		pt_agg__finish(r->procs.v[i]->v.agg);
	if (r->multi)
		pt_agg__finish(r->all.agg);
	return pt_run__write_outputs(r);
}

void pt_run__free(struct run *r)
{
	pt_run__metrics_free(r);
	pt_sampler__free(r->smp);
	pt_attach__free(r->att);
	for (size_t i = 0; i < r->procs.n; i++)
		pt_run__free_proc(r->procs.v[i]);
	pt_proctable__free(&r->procs);
	pt_run__free_view(&r->all);
	free(r->merged_funcs);
	free(r->cands);
	free(r->skipped);
	free(r->attr_warned);
	free(r->sf);
	free(r->msf);
	free(r->labels);
	free(r->nat);
	pt_trace__free(r->trace);
	pt_outdir__close(r->out);
	if (r->ep >= 0)
		close(r->ep);
	pt_config__free(&r->cfg);
}
