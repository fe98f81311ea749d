// SPDX-License-Identifier: BSD-2-Clause
/*
 * A process's GPU stream (struct proc_gpu, run.h): the CUPTI shim's ring
 * found (or the shim loaded with --inject), attached, drained each tick,
 * its records, steps and bucket calls into the GPU join, joined for the
 * documents, finished at the stop. The one file that writes p->gpu;
 * the records' routing (records.c) hands its callback to the drains.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "env.h"
#include "gpustream.h"

#include "aggregate/gpu.h"
#include "attach/inject.h"
#include "gpu/nstid.h"
#include "util/helpers.h"
#include "util/log.h"
#include "util/segment.h"
#include "util/sigbus.h"
#include "util/util.h"

/* Does pid run CUDA (the runtime or the driver library mapped)? */
bool pt_run__runs_cuda(int pid)
{
	char path[64], line[512];
	bool yes = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!yes && fgets(line, sizeof(line), f))
		yes = strstr(line, "/libcudart.so") || strstr(line, "/libcuda.so") ||
		      strstr(line, "/libcudart-");
	fclose(f);
	return yes;
}

/*
 * --inject, a CUDA process without the CUPTI shim: load it now (the same
 * borrowed-thread dlopen as the Python agent's; the shim starts dormant
 * from its constructor when CUDA is already there) and wait a little for
 * its ring. 0 with p->gpu.ring open, or -errno with err set.
 */
static int open_ring(void *ctx, char *why, size_t len)
{
	struct proc *p = ctx;

	return pt_gpuring__open(&p->gpu.ring, p->tracee.pid, why, len);
}

/* PT_GPU_MAX_HELD, PT_GPU_FOLD_LAG_MS: test knobs (bench/memory.py), a
 * small bound and lag so a run of minutes folds GPU records many times
 * (docs/gpu.md, "The memory bound"). */
static void gpu_test_bound(struct pt_gpu *g)
{
	const char *n = getenv("PT_GPU_MAX_HELD"), *lag = getenv("PT_GPU_FOLD_LAG_MS");

	if (n && atol(n) > 0)
		pt_gpu__set_max_held(g, (size_t)atol(n));
	if (lag && atol(lag) >= 0)
		pt_gpu__set_fold_lag(g, (uint64_t)atol(lag) * 1000000);
}

static int inject_shim(struct proc *p, char *err, size_t errlen)
{
	const struct run *r = p->run;
	struct pt_inject_opts o = { .wait_ms = r->env.inject_wait_ms,
				    .allow_epoll = r->env.inject_epoll };
	struct pt_inject_result res;
	char lib[PATH_MAX], why[1024];
	int e;

	if (pt_helper__path(PT_CUPTI_LIB, lib, sizeof(lib))) {
		snprintf(err, errlen, "--inject: no %s to load (built with CUDA's CUPTI)",
			 PT_CUPTI_LIB);
		return -ENOENT;
	}
	e = pt_inject__dlopen(p->tracee.pid, lib, &o, &res, why, sizeof(why));
	if (e) {
		snprintf(err, errlen, "--inject of the CUPTI shim: %s", why);
		return e;
	}
	if (!res.already)
		pt_msg("proftrace: pid %d: the CUPTI shim loaded (--inject): thread %d held "
		       "%.2f ms\n",
		       p->tracee.pid, res.tid, res.pause_ms);
	e = pt_segment__wait(open_ring, p, 2000, why, sizeof(why));
	if (e)
		snprintf(err, errlen, "--inject: the CUPTI shim is loaded in %d but %s",
			 p->tracee.pid, e == -ENOENT ? "has made no ring in 2 s" : why);
	return e;
}

/*
 * The CUPTI shim's ring, if the process has one (before the clock starts:
 * attaching is what wakes the shim). 0, or -PT_EUSAGE when --gpu on
 * cannot be honoured.
 */
int pt_run__open_gpu(struct proc *p)
{
	const struct run *r = p->run;
	char err[1280];
	int e;

	if (r->env.gpu == PT_GPU_OFF) {
		snprintf(p->gpu.why, sizeof(p->gpu.why), "--gpu off");
		return 0;
	}
	e = pt_gpuring__open(&p->gpu.ring, p->tracee.pid, err, sizeof(err));
	if (e == -ENOENT && r->env.inject && pt_run__runs_cuda(p->tracee.pid))
		e = inject_shim(p, err, sizeof(err));
	else if (e == -ENOENT)
		snprintf(err, sizeof(err),
			 "no CUPTI shim in pid %d: start the server after `eval \"$(proftrace "
			 "env)\"` "
			 "(CUDA_INJECTION64_PATH), or attach with --inject (see docs/gpu.md)",
			 p->tracee.pid);
	if (!e) {
		void *map;
		size_t len;

		/* sealed, so nobody can shrink it; guarded all the same: a
		 * fault is zeros, not our death (pt_run__gpu_lost() then stops
		 * reading it) */
		map = pt_gpuring__mapping(p->gpu.ring, &len);
		if (map)
			p->gpu.guard = pt_sigbus__guard(map, len);
		p->gpu.join = pt_gpu__new(r->cfg.nbuckets);
		if (!p->gpu.join)
			return -ENOMEM;
		gpu_test_bound(p->gpu.join);
		/* in a container: CUPTI's tids are the container's (docs/gpu.md) */
		e = pt_nstid__open(&p->gpu.nst, "/proc", p->tracee.pid);
		if (e == -ENOMEM)
			return e;
		if (e)
			pt_msg("proftrace: warning: pid %d: cannot read its thread ids (%s): GPU "
			       "work of a container's threads may count as outside steps\n",
			       p->tracee.pid, strerror(-e));
		return 0;
	}
	snprintf(p->gpu.why, sizeof(p->gpu.why), "%s", err);
	/* --children: launchers and helpers have no shim; main() checks that
	 * one process has */
	if (r->env.gpu == PT_GPU_ON && !r->env.children) {
		pt_msg("proftrace: --gpu on: %s\n", err);
		return -PT_EUSAGE;
	}
	if (e != -ENOENT || r->env.gpu == PT_GPU_ON)
		pt_msg("proftrace: warning: no GPU stream: %s\n", err);
	return 0;
}

/* A read of its ring faulted (its memory went from under us; a sealed
 * segment cannot shrink, so nothing known does this): said once, and the
 * ring is not read again; the GPU records before it stay. */
bool pt_run__gpu_lost(struct proc *p)
{
	if (!p->gpu.ring)
		return false;
	if (pt_sigbus__faults(p->gpu.guard))
		pt_gpuring__set_lost(p->gpu.ring);
	if (!pt_gpuring__lost(p->gpu.ring))
		return false;
	p->gpu.attached = false;
	if (!p->gpu.truncated[0]) {
		snprintf(p->gpu.truncated, sizeof(p->gpu.truncated),
			 "a read of the CUPTI shim's ring faulted at +%.3fs (its memory went from "
			 "under us): proftrace stopped reading it, GPU records after that are "
			 "missing",
			 since_start_s(p->run));
		pt_msg("proftrace: warning: pid %d: %s; the rest of the profile is kept\n",
		       p->tracee.pid, p->gpu.truncated);
	}
	return true;
}

/* What its ring holds now, to cb, unless it was lost. */
void pt_run__gpu_drain(struct proc *p, pt_gpuring_cb cb)
{
	if (!p->gpu.attached || pt_run__gpu_lost(p))
		return;
	pt_gpuring__drain(p->gpu.ring, cb, p);
	pt_run__gpu_lost(p); /* lost while we read: said now */
}

void pt_run__gpu_tick(struct proc *p, uint64_t now, pt_gpuring_cb cb)
{
	if (!p->gpu.attached)
		return;
	/* the shim goes dormant after 1 s without a heartbeat */
	pt_gpuring__heartbeat(p->gpu.ring, now);
	pt_nstid__refresh(p->gpu.nst); /* threads started since: before their records */
	pt_run__gpu_drain(p, cb);
}

void pt_run__gpu_end(struct proc *p, pt_gpuring_cb cb)
{
	if (!p->gpu.attached)
		return;
	pt_run__gpu_drain(p, cb);
	p->gpu.attached = false;
}

void pt_run__gpu_finish(struct proc *p, pt_gpuring_cb cb)
{
	/* detach: the shim disables CUPTI and flushes what it holds */
	if (p->gpu.attached)
		pt_gpuring__finish(p->gpu.ring, cb, p, 1000);
}

int pt_run__attach_gpu(struct proc *p)
{
	int e;

	if (!p->gpu.ring)
		return 0;
	e = pt_gpuring__attach(p->gpu.ring, pt_now_ns(CLOCK_MONOTONIC));
	if (!e) {
		p->gpu.attached = true;
		return 0;
	}
	snprintf(p->gpu.why, sizeof(p->gpu.why),
		 e == -EBUSY ? "another proftrace is reading this process's CUPTI shim"
			     : "cannot attach to the CUPTI shim's ring: %s",
		 strerror(-e));
	pt_gpu__free(p->gpu.join);
	p->gpu.join = NULL;
	if (p->run->env.gpu == PT_GPU_ON) {
		pt_msg("proftrace: --gpu on: %s\n", p->gpu.why);
		return -PT_EUSAGE;
	}
	pt_msg("proftrace: warning: no GPU stream: %s\n", p->gpu.why);
	return 0;
}

/* A GPU record of p's ring into its join; the record as the host sees it
 * (its thread mapped out of p's PID namespace, in *host then) for the
 * other consumers. */
const struct pt_gpu_rec *pt_run__gpu_record(struct proc *p, const struct pt_gpu_rec *g,
					    struct pt_gpu_rec *host)
{
	if (p->gpu.nst && g->kind == PT_GPU_API) {
		/* the thread as BPF sees it (0 when unknown: in no step) */
		*host = *g;
		host->api.tid =
			pt_nstid__host_tid(p->gpu.nst, g->api.tid, pt_now_ns(CLOCK_MONOTONIC));
		host->api.pid = (uint32_t)p->tracee.pid;
		g = host;
	}
	if (pt_gpu__record(p->gpu.join, g))
		p->gpu.oom = true;
	return g;
}

void pt_run__gpu_step(struct proc *p, const struct pt_step *s)
{
	if (p->gpu.join && pt_gpu__step(p->gpu.join, s->tid, s->t_start, s->t_end))
		p->gpu.oom = true; /* said at the end */
}

void pt_run__gpu_call(struct proc *p, const struct pt_rec *rec, uint32_t bucket_mask)
{
	if (p->gpu.join && bucket_mask &&
	    pt_gpu__bucket_call(p->gpu.join, rec->tid, rec->t_entry, rec->t_exit, bucket_mask))
		p->gpu.oom = true;
}

const struct pt_gpu_result *pt_run__gpu_result(struct proc *p)
{
	const struct run *r = p->run;

	if (!p->gpu.joined) /* the merged document may show it too */
		p->gpu.res = pt_gpu__join(p->gpu.join, r->t0_mono, r->t_end_mono);
	p->gpu.joined = true;
	return p->gpu.res;
}

void pt_run__gpu_free(struct proc *p)
{
	pt_sigbus__unguard(p->gpu.guard);
	pt_gpuring__close(p->gpu.ring);
	pt_nstid__free(p->gpu.nst);
	pt_gpu__free(p->gpu.join);
}
