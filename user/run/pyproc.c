// SPDX-License-Identifier: BSD-2-Clause
/*
 * A process's Python part (p->python, written here only): its CPython
 * found when it is opened, the reader of its memory, the code objects'
 * map to py: functions, its stack sampling set up, the frame evaluator's
 * probe where python_mode asks for it, and whether every Python call is
 * seen (the 3.12+ perf trampoline). How its py: calls end up timed (the
 * agent, the probe, samples) is procs.c's to say: it knows the agent too.
 */
#include <errno.h>
#include <stdio.h>

#include "run.h"
#include "pyproc.h"

#include "aggregate/stacks.h"
#include "attach/attach.h"
#include "attach/maps.h"
#include "attach/resolve.h"
#include "config/config.h"
#include "python/pylayout.h"
#include "python/pyprobe.h"
#include "python/python.h"
#include "python/pythreads.h"
#include "sample/pysym.h"
#include "sample/unwind.h"
#include "sample/sampler.h"
#include "sample/thrname.h"
#include "util/log.h"
#include "util/tasks.h"

static int read_target(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return pt_python__read(*(const int *)ctx, addr, buf, len);
}

/* What to do when py: probes are given and pt_python__find() failed with e. */
static const char *py_hint(int e)
{
	return e == -ENOENT ? "remove the py: probes or attach to the Python process"
			    : "remove the py: probes to profile only native code";
}

int pt_run__py_find(struct proc *p, const struct pt_maps *maps, bool strict, char *err,
		    size_t errlen)
{
	const struct run *r = p->run;
	char perr[512] = "cannot read its Python interpreter"; /* when none said */
	int e;

	p->python.mem.read = read_target;
	p->python.mem.ctx = &p->tracee.pid;
	if (!r->want_py && !r->cfg.sample_hz)
		return 0;
	e = pt_python__find(&p->python.rt, maps, p->tracee.pid, perr, sizeof(perr));
	/* with --children the interpreter may be in the descendants only (a
	 * launcher: mpirun, a shell): steps.c checks that one process has it */
	if (e && strict && !r->env.children && (r->want_py || r->cfg.nlines)) {
		snprintf(err, errlen, "%s; %s", perr, py_hint(e));
		return e == -ENOMEM ? -ENOMEM : -EINVAL;
	}
	/* Sampling walks Python stacks: nothing to do without them. The hint
	 * is for py: probes: a targets file without any (native: probes,
	 * sampling only) has nothing to remove. */
	if (e)
		pt_vlog("proftrace: pid %d: no Python stacks: %s%s%s\n", p->tracee.pid, perr,
			r->want_py ? "; " : "", r->want_py ? py_hint(e) : "");
	p->python.have = !e;
	pt_run__py_recheck(p);
	return 0;
}

void pt_run__py_recheck(struct proc *p)
{
	int t;

	if (!p->python.have || p->python.rt.L.evalframe_all_calls ||
	    !p->python.rt.L.interp_eval_frame)
		return;
	t = pt_python__trampoline(&p->python.rt, p->tracee.pid);
	if (t < 0)
		return;
	p->python.tramp_checks++;
	p->python.tramp_on += t;
}

bool pt_run__py_exact(const struct proc *p)
{
	return p->python.rt.L.evalframe_all_calls ||
	       (p->python.tramp_checks && p->python.tramp_on == p->python.tramp_checks);
}

bool pt_run__want_py_probe(const struct run *r, const struct proc *p)
{
	return r->want_py && r->cfg.python_mode == PT_PYMODE_EVALFRAME;
}

int pt_run__py_start(struct proc *p)
{
	struct pt_pyprobe_opts o = { 0 };

	if (p->python.probe)
		return 0;
	snprintf(p->python.root, sizeof(p->python.root), "/proc/%d/root", p->tracee.pid);
	snprintf(p->python.cwd, sizeof(p->python.cwd), "/proc/%d/cwd", p->tracee.pid);
	o.cfg = &p->run->cfg;
	o.res = p->res;
	o.layout = &p->python.rt.L;
	o.types.code_type = p->python.rt.code_type;
	o.types.unicode_type = p->python.rt.unicode_type;
	o.mem = p->python.mem;
	o.root = p->python.root;
	o.cwd = p->python.cwd;
	p->python.probe = pt_pyprobe__new(&o);
	return p->python.probe ? 0 : -ENOMEM;
}

int pt_run__py_sample(struct proc *p)
{
	struct run *r = p->run;
	struct pt_pysym_opts yo = { 0 };
	struct pt_py_offsets po;
	char err[256];
	int e;

	if (!r->smp || !p->python.have)
		return 0;
	yo.layout = &p->python.rt.L;
	yo.types.code_type = p->python.rt.code_type;
	yo.types.unicode_type = p->python.rt.unicode_type;
	yo.mem = p->python.mem;
	yo.pyprobe = p->python.probe;
	p->python.sym = pt_pysym__new(&yo);
	p->v.stk = pt_stacks__new(); /* its view's stacks: there are some now */
	p->python.threads =
		pt_pythreads__new(&yo.mem, &p->python.rt.L, &yo.types, p->python.rt.runtime);
	p->python.tn = pt_thrname__new(p->python.threads);
	p->python.other_ns = pt_tasks__ns_pid(p->tracee.pid) != p->tracee.pid;
	if (!p->python.sym || !p->v.stk || !p->python.threads || !p->python.tn)
		return -ENOMEM;
	for (size_t i = 0; i < p->nfs; i++) {
		const struct pt_func *f = pt_resolver__func(p->res, i);

		if (f->py && f->lines_spec >= 0)
			pt_stacks__want_lines(p->v.stk, (uint32_t)f->fid);
	}
	pt_py_layout__offsets(&p->python.rt.L, &po);
	e = pt_sampler__add_process(r->smp, p->tracee.pid, p->python.rt.runtime, &po, err,
				    sizeof(err));
	if (e == -ENOMEM)
		return e;
	if (e) {
		pt_msg("proftrace: warning: no stack sampling of pid %d: %s\n", p->tracee.pid, err);
		return 0;
	}
	p->python.sampled = true;
	if (r->cfg.native_frames) {
		/* its libraries through its root (set by pt_run__py_start,
		 * which comes first): a container's are not ours */
		struct pt_unwind_opts uo = { .pid = p->tracee.pid, .root = p->python.root };

		if (pt_unwind__new(&p->python.unw, &uo, err, sizeof(err)) == -ENOMEM)
			return -ENOMEM;
		if (!p->python.unw)
			pt_msg("proftrace: warning: no native frames in pid %d's stacks: %s\n",
			       p->tracee.pid, err);
	}
	return 0;
}

int pt_run__py_probe(struct proc *p, char *err, size_t errlen)
{
	struct run *r = p->run;
	int e;

	if (!r->py_probe_wanted || !p->python.have)
		return 0;
	e = pt_attach__python(r->att, p->idx, p->tracee.pid, p->python.rt.host_path,
			      p->python.rt.path,
			      p->python.rt.evalframe_off + p->python.rt.site.skip, err, errlen);
	if (!e)
		p->python.probed = true;
	else
		p->python.why_not = "the frame evaluator could not be probed";
	return e;
}

void pt_run__py_free(struct proc *p)
{
	pt_pysym__free(p->python.sym);
	pt_unwind__free(p->python.unw);
	pt_thrname__free(p->python.tn);
	pt_pythreads__free(p->python.threads);
	pt_pyprobe__free(p->python.probe);
	pt_python__free(&p->python.rt);
}
