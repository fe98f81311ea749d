// SPDX-License-Identifier: BSD-2-Clause
/*
 * The processes of a run: inspect one (resolve its probes, find its
 * interpreter), trace it (probes, frame probe, sampler, GPU ring; a stop
 * asked for meanwhile honoured), end it (exit, exec), and find the
 * descendants --children asks for.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"
#include "env.h"
#include "procstate.h"
#include "proctable.h"
#include "pyproc.h"
#include "metrics.h"
#include "prearm.h"
#include "gpustream.h"
#include "view.h"
#include "funcs.h"
#include "pyhint.h"
#include "pyagent.h"
#include "records.h"
#include "samples.h"
#include "procs.h"

#include "aggregate/skew.h"
#include "attach/attach.h"
#include "attach/elfsyms.h"
#include "attach/maps.h"
#include "attach/prologue.h"
#include "attach/resolve.h"
#include "attach/tracee.h"
#include "bpf/proftrace.h"
#include "config/config.h"
#include "python/pylayout.h"
#include "report/trace.h"
#include "sample/sampler.h"
#include "util/log.h"
#include "util/tasks.h"
#include "util/users.h"
#include "util/util.h"

/* SIGINT or SIGTERM pending while attaching (steps.c blocked them): taken,
 * kept in r->stop_sig, said once. Asked between the steps of an attach
 * and between the files of a process's probes. */
bool pt_run__stop_asked(struct run *r)
{
	struct timespec now = { 0, 0 };
	int sig;

	if (r->stop_sig)
		return true;
	/* taken off the pending set: the stop is acted on here, at once */
	sig = sigtimedwait(&r->stop_mask, NULL, &now);
	if (sig <= 0)
		return false;
	r->stop_sig = sig;
	pt_msg("proftrace: %s while attaching: stopping; everything attached so far is taken "
	       "out, nothing was measured\n",
	       sig == SIGINT ? "SIGINT" : "SIGTERM");
	return true;
}

/* Tests only (PT_TEST_ATTACH_PAUSE_MS): a pause between the files of an
 * attach, said on stderr, in which a stop is honoured as anywhere else.
 * true: a stop came. */
static bool test_pause(struct run *r)
{
	const char *v = getenv("PT_TEST_ATTACH_PAUSE_MS");
	long ms = v ? strtol(v, NULL, 10) : 0;

	if (ms <= 0)
		return false;
	pt_msg("proftrace: test: pausing %ld ms between files\n", ms);
	for (; ms > 0; ms -= 10) {
		if (pt_run__stop_asked(r))
			return true;
		usleep(10000);
	}
	return pt_run__stop_asked(r);
}

/* Functions of one file attached in one go (two uprobe_multi links). */
#define ATTACH_BATCH 4096

/* Attach every resolved function not tried yet. Returns how many were
 * attached now. A function that cannot be attached is reported, not
 * fatal: the others still give true figures. The functions of one file
 * go in together (pt_attach__funcs); between files, while proftrace is
 * attaching, a stop asked for is honoured and a long attach says so. */
int pt_run__attach_new(struct proc *p, size_t from)
{
	struct run *r = p->run;
	bool attaching = !r->attach_ns; /* the first attach, not a later dlopen */
	uint64_t t0 = pt_now_ns(CLOCK_MONOTONIC);
	const struct pt_func **batch = NULL;
	size_t *todo = NULL, ntodo = 0, done = 0;
	int *errs = NULL, n = 0, e = 0;
	bool said = false;
	char err[512];

	if (pt_run__grow_fstate(p))
		return -ENOMEM;
	todo = pt_zalloc(p->nfs - from, sizeof(*todo));
	batch = pt_zalloc(p->nfs - from, sizeof(*batch));
	errs = pt_zalloc(p->nfs - from, sizeof(*errs));
	if (!todo || !batch || !errs) {
		e = -ENOMEM;
		goto out;
	}
	for (size_t i = from; i < p->nfs; i++) {
		const struct pt_func *f = pt_resolver__func(p->res, i);

		if (f->py)
			continue; /* found at run time, served by the frame probe */
		if (pt_run__declare_func(p, i)) {
			e = -ENOMEM;
			goto out;
		}
		pt_run__set_val_spec(p, f);
		if (f->unusable)
			p->fs[i].reason = strdup(f->unusable);
		else
			todo[ntodo++] = i;
	}
	while (done < ntodo) {
		const char *path = pt_resolver__func(p->res, todo[done])->host_path;
		size_t nb = 0;

		if (attaching && pt_run__stop_asked(r)) {
			e = -PT_ESTOPPED;
			goto out;
		}
		/* the next file's functions, in resolver order (todo is
		 * compacted as they are taken) */
		for (size_t k = done; k < ntodo && nb < ATTACH_BATCH; k++) {
			const struct pt_func *f = pt_resolver__func(p->res, todo[k]);
			size_t t;

			if (strcmp(f->host_path, path))
				continue;
			t = todo[k];
			memmove(&todo[done + nb + 1], &todo[done + nb],
				(k - done - nb) * sizeof(*todo));
			todo[done + nb] = t;
			batch[nb++] = f;
		}
		pt_attach__funcs(r->att, p->idx, p->tracee.pid, batch, nb, errs);
		for (size_t k = 0; k < nb; k++) {
			size_t i = todo[done + k];
			const struct pt_func *f = batch[k];

			if (errs[k]) {
				pt_attach__func_err(f, errs[k], err, sizeof(err));
				pt_msg("proftrace: warning: %s\n", err);
				p->fs[i].reason = strdup(err);
				continue;
			}
			pt_run__mark_attached(p, i);
			n++;
			pt_vlog("proftrace: pid %d: probe %s:%s at file offset 0x%llx (+%u, %s)\n",
				p->tracee.pid, f->object, f->symbol,
				(unsigned long long)f->file_off, f->site.skip,
				pt_insn_class__str(f->site.cls));
		}
		done += nb;
		if (attaching && done < ntodo && test_pause(r)) {
			e = -PT_ESTOPPED;
			goto out;
		}
		if (attaching && !said && done < ntodo &&
		    pt_now_ns(CLOCK_MONOTONIC) - t0 > 1000000000ull) {
			pt_msg("proftrace: attaching %zu probes to pid %d: %zu done (Ctrl-C "
			       "stops)\n",
			       ntodo, p->tracee.pid, done);
			said = true;
		}
	}
out:
	free(todo);
	free(batch);
	free(errs);
	return e ? e : n;
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
		path = pt_resolver__host_path(p->tracee.pid, mp);
		if (!path || pt_elf__open(&e, path)) {
			free(path);
			continue;
		}
		for (size_t k = 0; k < e->nsyms; k++) {
			if (strcmp(e->syms[k].name, "_dl_debug_state") != 0)
				continue;
			if (pt_attach__dl_hook(p->run->att, p->idx, p->tracee.pid, path,
					       e->syms[k].file_off) == 0)
				p->dl_hooked = true;
			break;
		}
		pt_elf__free(e);
		free(path);
	}
	if (p->dl_tried && !p->dl_hooked)
		pt_vlog("proftrace: pid %d: no dynamic linker hook; new libraries are seen within "
			"%d ms\n",
			p->tracee.pid, RESCAN_MS);
}

void pt_run__rescan(struct proc *p)
{
	struct pt_maps maps = { 0 };
	size_t before = pt_resolver__nfuncs(p->res);
	char err[1024];
	int n;

	p->rescan = false;
	pt_run__py_recheck(p);
	if (pt_maps__read_pid(&maps, p->tracee.pid))
		return; /* exiting: the pidfd tells us */
	if (!p->dl_tried)
		hook_dynamic_linker(p, &maps);
	n = pt_resolver__update(p->res, &maps, false, err, sizeof(err));
	pt_maps__free(&maps);
	if (n < 0) {
		pt_msg("proftrace: warning: %s\n", err);
		return;
	}
	if (n == 0)
		return;
	pt_log__clear_status();
	n = pt_run__attach_new(p, before);
	if (p->dl_ns) {
		/* the window its calls could be missed in, said per function */
		double ms = (double)(pt_now_ns(CLOCK_MONOTONIC) - p->dl_ns) / 1e6;

		for (size_t i = before; i < p->nfs; i++) {
			p->fs[i].has_window = p->fs[i].attached;
			p->fs[i].window_ms = ms;
		}
	}
	p->dl_ns = 0;
	if (n > 0) {
		const struct pt_func *f = pt_resolver__func(p->res, before);

		pt_msg("proftrace: attached %d more probe%s (%s) to pid %d at +%.3fs\n", n,
		       n == 1 ? "" : "s", f->object, p->tracee.pid, since_start_s(p->run));
	}
}

/* How p's py: rows are timed: "exact", "sampled" or "c-entry-only". */
const char *pt_run__py_timing(const struct proc *p)
{
	if (pt_run__agent_ok(p))
		return "exact";
	if (p->python.probed && pt_run__py_exact(p))
		return "exact";
	if (p->python.sampled && p->run->cfg.python_mode != PT_PYMODE_EVALFRAME)
		return "sampled";
	return "c-entry-only";
}

/* Say once, at attach, when p's py: rows will not be exact, and how to
 * get them exact. */
static void warn_py_timing(const struct proc *p)
{
	const struct run *r = p->run;
	const char *how = "start the server after `eval \"$(proftrace env)\"` (or attach with "
			  "--inject)";

	if (!r->want_py || !p->python.have || pt_run__agent_ok(p) ||
	    (p->python.probed && pt_run__py_exact(p)))
		return;
	if (p->agent.state == PT_AGENT_BLOCKED || p->agent.state == PT_AGENT_LOST)
		return; /* the agent is there and blocked: said with what blocks it */
	if (r->cfg.python_mode == PT_PYMODE_SAMPLED)
		return; /* asked for */
	/* the process holds a memfd of the agent's name that is not its */
	if (p->agent.foreign)
		how = "find what in the process made that memfd (not our agent) and restart it "
		      "without";
	if (!strcmp(pt_run__py_timing(p), "sampled"))
		pt_msg("proftrace: warning: pid %d: Python %s has no agent (%s): py: functions get "
		       "sampled times and the py: step and buckets are not counted; for exact "
		       "timing %s\n",
		       p->tracee.pid, p->python.rt.version,
		       p->agent.why ? p->agent.why : "none found", how);
	else
		pt_msg("proftrace: warning: Python %s: the frame probe sees only calls made from C "
		       "code here; py: rows are marked timing \"c-entry-only\" (for exact timing "
		       "%s)\n",
		       p->python.rt.version, how);
}

/* --inject that loads nothing into p (no py: probes, no CUDA, ...) is
 * said, not silently ignored: the user expected something from it. */
static void warn_inject_unused(const struct proc *p)
{
	const struct run *r = p->run;
	const char *py, *gpu;

	if (!r->env.inject || p->agent.inject_tried || p->agent.handle || p->gpu.ring)
		return;
	if (!r->want_py)
		py = "the targets file names no py: function";
	else if (!p->python.have)
		py = "it runs no CPython";
	else if (r->cfg.python_mode != PT_PYMODE_AUTO && r->cfg.python_mode != PT_PYMODE_AGENT)
		py = "its python_mode needs no agent";
	else
		return; /* the agent was wanted: its outcome is said where it is tried */
	if (r->env.gpu == PT_GPU_OFF)
		gpu = "--gpu off";
	else if (!pt_run__runs_cuda(p->tracee.pid))
		gpu = "it runs no CUDA";
	else
		return;
	pt_msg("proftrace: warning: pid %d: --inject loads nothing here: %s, and %s (it loads "
	       "the Python agent for py: probes and the CUPTI shim into a CUDA process)\n",
	       p->tracee.pid, py, gpu);
}

/* Stack sampling of every thread (each process brings its layout). */
int pt_run__open_sampler(struct run *r, char *err, size_t errlen)
{
	struct pt_sampler_opts so = { 0 };

	so.hz = r->cfg.sample_hz;
	so.offcpu = true;
	so.ringbuf_mb = r->cfg.ringbuf_mb;
	so.native = r->cfg.native_frames;
	so.on_sample = pt_run__on_sample;
	so.on_ustack = pt_run__on_ustack;
	so.ctx = r;
	return pt_sampler__open(&r->smp, &so, err, errlen);
}

/* RANK and LOCAL_RANK from p's environment (as it was at exec: the
 * kernel caps it at ARG_MAX-like sizes; more than ENVIRON_MAX is cut). */
#define ENVIRON_MAX (4u << 20)

static void read_ranks(struct proc *p)
{
	char path[64], *buf = NULL;
	size_t cap = 0, n = 0, got;
	FILE *f;

	p->rank = p->local_rank = -1;
	snprintf(path, sizeof(path), "/proc/%d/environ", p->tracee.pid);
	f = fopen(path, "re");
	if (!f)
		return;
	do {
		if (n + 1 >= cap) {
			char *v = cap < ENVIRON_MAX ? realloc(buf, cap + 65536) : NULL;

			if (!v)
				break;
			buf = v;
			cap += 65536;
		}
		got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
	} while (got);
	fclose(f);
	if (!buf)
		return;
	buf[n] = 0; /* the target's bytes: a cut last entry ends here too */
	for (size_t i = 0; i < n; i += strlen(buf + i) + 1) {
		const char *e = buf + i, *val;
		int *dst;
		char *end;
		long x;

		if (!strncmp(e, "RANK=", 5))
			dst = &p->rank, val = e + 5;
		else if (!strncmp(e, "LOCAL_RANK=", 11))
			dst = &p->local_rank, val = e + 11;
		else
			continue;
		x = strtol(val, &end, 10);
		if (*val && !*end && x >= 0 && x < 1000000)
			*dst = (int)x;
	}
	free(buf);
}

void pt_run__free_proc(struct proc *p)
{
	if (!p)
		return;
	if (p->run && pt_proc__live(p))
		pt_proctable__put_slot(&p->run->procs, p->idx); /* not ended: free at once */
	pt_run__agent_free(p);
	pt_run__py_hint_free(p);
	if (p->window_view) {
		pt_run__free_view(p->window_view);
		free(p->window_view);
	}
	pt_run__gpu_free(p);
	pt_run__metrics_free_proc(p);
	pt_run__py_free(p);
	pt_run__free_view(&p->v);
	pt_skew__free(&p->steps);
	pt_resolver__free(p->res);
	for (size_t i = 0; i < p->nfs; i++)
		free(p->fs[i].reason);
	free(p->fs);
	free(p->mfid);
	free(p->retries);
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
int pt_run__open_proc(struct run *r, int pid, bool strict, struct proc **out, char *err,
		      size_t errlen)
{
	int slot;
	struct pt_resolver_opts ropts = { 0 };
	struct pt_maps maps = { 0 };
	struct proc *p;
	int e, n;

	*out = NULL;
	slot = pt_proctable__take_slot(&r->procs); /* until it ends, or is freed unused */
	if (slot < 0) {
		snprintf(err, errlen, "more than %d processes traced at once: pid %d is not traced",
			 pt_proctable__nslots(), pid);
		return 1;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		pt_proctable__put_slot(&r->procs, (unsigned int)slot);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->run = r;
	p->idx = (unsigned int)slot;
	p->pidfd = -1;
	p->gpu.guard = -1;
	p->rank = p->local_rank = -1;
	e = pt_tracee__open(&p->tracee, pid, err, errlen);
	if (e)
		goto fail;
	e = pt_maps__read_pid(&maps, pid);
	if (e) {
		char hint[512];

		snprintf(err, errlen, "cannot read /proc/%d/maps: %s (hint: %s)", pid, strerror(-e),
			 e == -EACCES || e == -EPERM
				 ? pt_users__denied_hint(pid, hint, sizeof(hint))
				 : "is the process exiting?");
		goto fail;
	}
	read_ranks(p);
	ropts.cfg = &r->cfg;
	ropts.pid = pid;
	ropts.exe = p->tracee.exe;
	ropts.root = p->tracee.root;
	p->res = pt_resolver__new(&ropts);
	if (!p->res) {
		e = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	/* with --children a named process may be a launcher that holds none
	 * of the functions: main() checks each probe over all processes */
	n = pt_resolver__update(p->res, &maps, strict && !r->env.children, err, errlen);
	if (n < 0) {
		e = n == -ENOMEM ? -ENOMEM : -EINVAL;
		goto fail;
	}
	e = pt_run__py_find(p, &maps, strict, err, errlen);
	if (e)
		goto fail;
	if (!strict && !n && !p->python.have) {
		snprintf(err, errlen, "no CPython in it and no function the targets file names");
		e = 1;
		goto fail;
	}
	e = pt_run__new_view(r, &p->v, pt_run__on_step, p);
	if (e || pt_run__grow_fstate(p) || pt_run__window_open(p)) {
		snprintf(err, errlen, "out of memory");
		e = -ENOMEM;
		goto fail;
	}
	pt_maps__free(&maps);
	*out = p;
	return 0;
fail:
	pt_maps__free(&maps);
	pt_run__free_proc(p);
	return e;
}

/* The libraries named by probes and not loaded yet whose file can be
 * found now, probed ahead of their mapping (prearm.c finds and resolves
 * them): the number of functions attached, or -errno. */
static int arm_ahead(struct proc *p)
{
	size_t before = pt_resolver__nfuncs(p->res), nlibs;
	int n = pt_run__prearm(p, &nlibs);

	if (n <= 0)
		return n;
	n = pt_run__attach_new(p, before);
	for (size_t i = before; i < p->nfs; i++)
		p->fs[i].has_window = p->fs[i].attached; /* window 0 */
	if (n > 0)
		pt_vlog("proftrace: pid %d: %d probe%s in %zu librar%s not loaded yet, armed ahead "
			"(its first calls are timed)\n",
			p->tracee.pid, n, n == 1 ? "" : "s", nlibs, nlibs == 1 ? "y" : "ies");
	return n;
}

/* The Python agent, where python_mode wants it: -ENOMEM, or -PT_EUSAGE
 * when python_mode agent cannot be honoured; else 0 (why said). */
static int use_agent(struct proc *p)
{
	struct run *r = p->run;
	char err[512];
	int e;

	if (!p->python.have || !r->want_py ||
	    (r->cfg.python_mode != PT_PYMODE_AUTO && r->cfg.python_mode != PT_PYMODE_AGENT))
		return 0;
	e = pt_run__agent_start(p, err, sizeof(err));
	if (!e || e == -ENOMEM)
		return e;
	if (p->agent.inject_failed && !r->env.children) {
		/* asked for, and refused: nothing was left stopped or traced */
		pt_msg("proftrace: pid %d: %s\n", p->tracee.pid, err);
		return -PT_EUSAGE;
	}
	if (e == -EINPROGRESS) {
		/* each tick looks again: exact from the moment it is up */
		pt_msg("proftrace: warning: pid %d: %s\n", p->tracee.pid, err);
		return 0;
	}
	if (r->cfg.python_mode == PT_PYMODE_AGENT && !r->env.children) {
		pt_msg("proftrace: python_mode agent: pid %d: %s\n", p->tracee.pid, err);
		return -PT_EUSAGE;
	}
	return 0;
}

/* p's probes go in. Not fatal when a part cannot (said): the rest still
 * gives true figures. 0, 1 when BPF would not take p (said), -ENOMEM,
 * -PT_EUSAGE (--gpu on cannot be honoured) or -PT_ESTOPPED. */
static int attach_proc(struct proc *p)
{
	char line[1024];
	size_t at = 0;
	struct run *r = p->run;
	struct pt_maps maps = { 0 };
	struct pt_py_offsets po;
	char err[1024];
	size_t pending = 0, npy = 0, pyfound = 0;
	int e, n, armed;

	p->t_added = pt_now_ns(CLOCK_MONOTONIC);
	pt_run__agents_alive(r); /* those started before: this one takes a while */
	if (p->python.have)
		pt_py_layout__offsets(&p->python.rt.L, &po);
	e = pt_attach__add_proc(r->att, p->idx, p->tracee.pid, p->python.have ? &po : NULL);
	if (e) {
		pt_msg("proftrace: warning: cannot trace pid %d: %s\n", p->tracee.pid,
		       strerror(-e));
		return 1;
	}
	e = pt_run__attach_gpu(p);
	if (e)
		return e;
	if (p->python.have && pt_run__py_start(p))
		return -ENOMEM;
	/* Sampling first: its window is then the whole run. */
	if (pt_run__py_sample(p))
		return -ENOMEM;
	if (pt_run__py_probe(p, err, sizeof(err)))
		pt_msg("proftrace: warning: pid %d: %s\n", p->tracee.pid, err);
	e = use_agent(p);
	if (e)
		return e;
	warn_py_timing(p);
	warn_inject_unused(p);
	if (!pt_maps__read_pid(&maps, p->tracee.pid))
		hook_dynamic_linker(p, &maps);
	pt_maps__free(&maps);
	pt_run__agents_alive(r);
	n = pt_run__attach_new(p, 0);
	pt_run__agents_alive(r);
	if (n < 0)
		return n;
	armed = arm_ahead(p);
	if (armed < 0)
		return armed;
	n += armed;
	if (r->trace) /* its track carries its name even if it never calls in */
		pt_trace__thread_name(r->trace, (uint32_t)p->tracee.pid, (uint32_t)p->tracee.pid,
				      p->tracee.comm);
	/* the event loop waits on it (loop.c) */
	p->pidfd = pt_tracee__pidfd(&p->tracee);
	for (size_t s = 0; s < r->cfg.nprobes; s++) {
		bool py = r->cfg.probes[s].kind == PT_PROBE_PY;

		pending += !py && pt_resolver__spec_nfuncs(p->res, s) == 0;
		npy += py;
		pyfound += py && pt_resolver__spec_nfuncs(p->res, s) > 0;
	}
	/* py: functions found (hooked by the agent, or by the frame probe)
	 * are attached probes too, as Health counts them */
	for (size_t i = 0; i < p->nfs; i++)
		n += pt_resolver__func(p->res, i)->py && p->fs[i].attached;
	/* one line, printed at once (pt_msg clears the live status line) */
	pt_appendf(line, sizeof(line), &at, "proftrace: attached %d probe%s to pid %d (%s)", n,
		   n == 1 ? "" : "s", p->tracee.pid, p->tracee.comm);
	if (p->rank >= 0)
		pt_appendf(line, sizeof(line), &at, " rank %d", p->rank);
	if (p->python.probed)
		pt_appendf(line, sizeof(line), &at, "; Python %s frames probed",
			   p->python.rt.version);
	if (pt_run__agent_ok(p))
		pt_appendf(line, sizeof(line), &at,
			   "; Python %s agent hooks %u code object%s for %zu of %zu py: probe%s",
			   p->python.rt.version, p->agent.narm, p->agent.narm == 1 ? "" : "s",
			   pyfound, npy, npy == 1 ? "" : "s");
	else if (p->agent.handle)
		pt_appendf(line, sizeof(line), &at, "; Python %s agent blocked (above)",
			   p->python.rt.version);
	else if (npy && p->python.have && !strcmp(pt_run__py_timing(p), "sampled"))
		pt_appendf(line, sizeof(line), &at,
			   "; %zu py: probe%s timed from samples (no Python agent: above)", npy,
			   npy == 1 ? "" : "s");
	if (p->python.sampled)
		pt_appendf(line, sizeof(line), &at, "; stacks sampled at %u Hz", r->cfg.sample_hz);
	if (p->gpu.join)
		pt_appendf(line, sizeof(line), &at, "; GPU stream from the CUPTI shim");
	if (armed)
		pt_appendf(line, sizeof(line), &at,
			   "; %d of them in %s not loaded yet, armed ahead", armed,
			   armed == 1 ? "a library" : "libraries");
	if (pending)
		pt_appendf(line, sizeof(line), &at, "; %zu probe%s waiting for %s to be loaded",
			   pending, pending == 1 ? "" : "s",
			   pending == 1 ? "its library" : "their libraries");
	if (r->t0_mono && p->t_added > r->t0_mono + 100000000ull)
		pt_appendf(line, sizeof(line), &at, " at +%.3fs", since_start_s(r));
	pt_msg("%s\n", line);
	return 0;
}

/* p is traced from now on: attaching, then attached, or failed (said;
 * a stop asked for leaves it attaching: the run ends). 0 (also when BPF
 * would not take it), -ENOMEM, -PT_EUSAGE (--gpu on cannot be honoured)
 * or -PT_ESTOPPED. */
int pt_run__start_proc(struct proc *p)
{
	int e;

	pt_proc__set_state(p, PT_PROC_ATTACHING);
	e = attach_proc(p);
	if (e != -PT_ESTOPPED)
		pt_proc__set_state(p, e ? PT_PROC_FAILED : PT_PROC_ATTACHED);
	return e < 0 ? e : 0;
}

/* p exited or exec'ed: its probes come off, what its GPU ring still
 * holds is taken. */
void pt_run__end_proc(struct proc *p, const char *why)
{
	struct run *r = p->run;

	if (!pt_proc__live(p))
		return;
	/* its last records first: they are in the ring already */
	pt_attach__drain(r->att);
	if (r->smp)
		pt_sampler__drain(r->smp);
	pt_run__agent_stop(p); /* an exec'ed image has none left: no harm */
	pt_proc__set_state(p, PT_PROC_ENDED);
	p->end_why = why;
	p->t_ended = pt_now_ns(CLOCK_MONOTONIC);
	pt_attach__end_proc(r->att, p->idx, p->tracee.pid, !strcmp(why, "exec"));
	/* exited: its slot can serve another */
	pt_proctable__ended(&r->procs, p, strcmp(why, "exec") != 0, pt_now_ns(CLOCK_MONOTONIC));
	pt_sampler__end_process(r->smp, p->tracee.pid);
	pt_run__gpu_end(p, pt_run__on_gpu_rec);
	if (p->pidfd >= 0) {
		close(p->pidfd); /* leaves the epoll set */
		p->pidfd = -1;
	}
	pt_msg("proftrace: process %d %s at +%.3fs\n", p->tracee.pid,
	       !strcmp(why, "exec") ? "replaced its image (exec)" : "exited", since_start_s(r));
}

void pt_run__add_cand(struct run *r, int pid, uint64_t now)
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
	struct pt_tracee t;
	char e[64];

	if (!v)
		return;
	r->skipped = v;
	v = &r->skipped[r->nskipped++];
	v->pid = pid;
	v->comm[0] = 0;
	if (!pt_tracee__open(&t, pid, e, sizeof(e)))
		snprintf(v->comm, sizeof(v->comm), "%s", t.comm);
	snprintf(v->why, sizeof(v->why), "%.*s", (int)sizeof(v->why) - 1, why);
	pt_vlog("proftrace: not tracing pid %d (%s): %s\n", pid, v->comm, why);
}

/* A set of pids (small: the processes of one server). */
struct pidset {
	int *v;
	size_t n, cap;
};

static bool pidset_has(const struct pidset *s, int pid)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i] == pid)
			return true;
	return false;
}

static int pidset_add(struct pidset *s, int pid)
{
	if (pidset_has(s, pid))
		return 0;
	if (s->n == s->cap) {
		int *v = realloc(s->v, (s->cap = s->cap ? s->cap * 2 : 64) * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
	}
	s->v[s->n++] = pid;
	return 1;
}

/* pid's children into s, from the kernel's list of each of its threads
 * (/proc/PID/task/TID/children). 0 or -ENOMEM (the rest is found at the
 * next scan). */
struct children_of {
	struct pidset *s;
	int pid;
	int e;
};

static int add_thread_children(void *ctx, int tid)
{
	struct children_of *c = ctx;
	char path[64];
	FILE *f;
	int child;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", c->pid, tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fscanf(f, "%d", &child) == 1)
		if (child > 0 && pidset_add(c->s, child) < 0)
			c->e = -ENOMEM;
	fclose(f);
	return 0;
}

static int add_children(struct pidset *s, int pid)
{
	struct children_of c = { .s = s, .pid = pid };

	pt_tasks__each(pid, add_thread_children, &c);
	return c.e;
}

/* --children: every descendant of the processes named and of those
 * traced that is not traced yet becomes a candidate. Walked down from
 * them through the kernel's children lists: only their own tree is read,
 * not every process of the machine, each second. */
void pt_run__scan_children(struct run *r, uint64_t now)
{
	struct pidset s = { 0 };
	size_t roots;

	r->scan_children = false;
	for (int i = 0; i < r->env.npids; i++)
		pidset_add(&s, r->env.pids[i]);
	for (size_t i = 0; i < r->procs.n; i++)
		pidset_add(&s, r->procs.v[i]->tracee.pid);
	roots = s.n;
	for (size_t i = 0; i < s.n; i++) /* s grows as it goes: breadth first */
		add_children(&s, s.v[i]);
	for (size_t i = roots; i < s.n; i++)
		if (!pt_proctable__traced(&r->procs, s.v[i]))
			pt_run__add_cand(r, s.v[i], now);
	free(s.v);
}

/* Candidates old enough are inspected and traced, or skipped. */
int pt_run__add_candidates(struct run *r, uint64_t now, bool at_start)
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
		if (e || pt_proctable__traced(&r->procs, c.pid))
			continue;
		e = pt_run__open_proc(r, c.pid, false, &p, err, sizeof(err));
		if (e == -ENOMEM)
			continue;
		if (e) {
			if (e != -ESRCH) /* gone already: nothing to say */
				skip_proc(r, c.pid, err);
			e = 0;
			continue;
		}
		if (pt_proctable__add(&r->procs, p)) {
			pt_run__free_proc(p);
			e = -ENOMEM;
			continue;
		}
		if (at_start)
			continue;	 /* started with the others */
		e = pt_run__open_gpu(p); /* none: said (--children), the rest traced */
		if (!e)
			e = pt_run__start_proc(p);
		if (e == -PT_EUSAGE)
			e = 0;
	}
	r->ncands = k;
	return e;
}
