// SPDX-License-Identifier: BSD-2-Clause
/*
 * proftrace: attach to live processes, time configured functions exactly,
 * aggregate them into steps and buckets, write summary.json and report.md.
 * This file: the command line, the event loop, and the order of things.
 *
 * The recipe: parse the command line and the targets file -> inspect the
 * targets -> resolve probes against their maps -> load BPF -> attach ->
 * drain the ring into the aggregators until a stop condition -> write
 * reports.
 *
 * Several processes: see run.h.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "run/run.h"
#include "config/targets_list.h"


static int verbose;
/* The live status line is on screen: clear it before any other message. */
static bool status_shown;

void pt_run__clear_status(void)
{
	if (status_shown) {
		fputs("\r\033[K", stderr);
		status_shown = false;
	}
}

void pt_run__vlog(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	pt_run__clear_status();
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
	pt_run__clear_status();
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

int pt_run__add_fd(int ep, int fd, uint32_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = tag };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
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
	if (pt_run__add_fd(ep, sfd, TAG_SIG) || pt_run__add_fd(ep, tfd, TAG_TIMER) ||
	    pt_run__add_fd(ep, pt_attach__ring_fd(r->att), TAG_RING)) {
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
					pt_run__vlog("proftrace: %s, stopping\n", strsignal((int)si.ssi_signo));
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
					pt_run__end_proc(r->procs[tag - TAG_PID], "exited");
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
				pt_run__end_proc(p, "exec");
				if (r->multi) /* its new image */
					pt_run__add_cand(r, p->tgt.pid, now_ns(CLOCK_MONOTONIC));
			}
			if (p->ended)
				continue;
			if (p->nretries)
				pt_run__attr_retries(p, now);
			if (p->gpu_attached) {
				/* the shim goes dormant after 1 s without a heartbeat */
				pt_gpuring__heartbeat(p->gr, now);
				pt_gpuring__drain(p->gr, pt_run__on_gpu_rec, p);
			}
			if (p->pidfd < 0 && !pt_target__alive(&p->tgt))
				pt_run__end_proc(p, "exited");
		}
		if (r->env.children && (r->scan_children || now - last_rescan >= RESCAN_MS * 1000000ull))
			pt_run__scan_children(r, now);
		if (r->ncands && pt_run__add_candidates(r, now, false) == -ENOMEM) {
			e = -ENOMEM;
			break;
		}
		if (pt_run__all_ended(r) && !r->ncands) {
			if (!r->multi && r->procs[0]->end_why && !strcmp(r->procs[0]->end_why, "exec"))
				fprintf(stderr, "proftrace: its probes went with the old image: "
						"stopping (give --children to follow it into the "
						"new one)\n");
			stop = STOP_EXIT;
		}
		if (stop == STOP_NONE && now - last_rescan >= RESCAN_MS * 1000000ull) {
			for (size_t i = 0; i < r->nprocs; i++)
				if (!r->procs[i]->ended)
					pt_run__rescan(r->procs[i]);
			last_rescan = now;
		} else if (stop == STOP_NONE) {
			for (size_t i = 0; i < r->nprocs; i++)
				if (!r->procs[i]->ended && r->procs[i]->rescan)
					pt_run__rescan(r->procs[i]);
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
			pt_gpuring__finish(r->procs[i]->gr, pt_run__on_gpu_rec, r->procs[i], 1000);
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
	if (pt_run__py_has_roles(cfg)) {
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
	/* descendants are found through the kernel's children lists
	 * (CONFIG_PROC_CHILDREN): they exist for every thread, ours too */
	if (r.env.children && access("/proc/thread-self/children", R_OK)) {
		fprintf(stderr, "proftrace: --children needs /proc/PID/task/TID/children, which this "
				"kernel does not keep (CONFIG_PROC_CHILDREN) (hint: name the "
				"processes with -p PID,PID)\n");
		ret = EXIT_USAGE;
		goto cleanup;
	}
	/* The processes named: each must be there and match the config. */
	for (int i = 0; i < r.env.npids; i++) {
		struct proc *p;

		e = pt_run__open_proc(&r, r.env.pids[i], true, &p, err, sizeof(err));
		if (!e && pt_run__add_procs(&r, p)) {
			pt_run__free_proc(p);
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
		pt_run__scan_children(&r, 0);
		if (pt_run__add_candidates(&r, 0, true))
			goto cleanup;
	}
	if (r.env.children) {
		/* what strict resolution checks per process, over them all: a
		 * probe whose object is mapped somewhere must match there */
		for (size_t s = 0; s < r.cfg.nprobes; s++) {
			size_t nf = 0, no = 0;

			if (r.cfg.probes[s].kind != PT_PROBE_NATIVE)
				continue;
			for (size_t i = 0; i < r.nprocs; i++) {
				nf += pt_resolver__spec_nfuncs(r.procs[i]->res, s);
				no += pt_resolver__spec_nobjects(r.procs[i]->res, s);
			}
			if (no && !nf) {
				fprintf(stderr, "proftrace: %s: probe '%s' matches no function in pid %d "
						"or its descendants, though they map its object (hint: "
						"check the symbol with --dry-run -p <a worker>)\n",
					r.cfg.path, r.cfg.probes[s].text, r.env.pid);
				ret = EXIT_USAGE;
				goto cleanup;
			}
		}
	}
	if (r.multi) {
		if (pt_run__new_view(&r, &r.all, pt_run__on_merged_step, &r))
			goto cleanup;
	}
	for (size_t i = 0; i < r.nprocs && !pyp; i++)
		if (r.procs[i]->have_py)
			pyp = r.procs[i];
	r.py0 = pyp ? &pyp->py : NULL;
	if (!pyp && r.env.children && (r.want_py || r.cfg.nlines)) {
		fprintf(stderr, "proftrace: the targets file has py: probes, but no CPython runs in "
				"pid %d or its descendants (hint: attach once the Python workers "
				"run, or -p a worker)\n", r.env.pid);
		ret = EXIT_USAGE;
		goto cleanup;
	}
	if (r.env.dry_run) {
		for (size_t i = 0; i < r.nprocs; i++)
			pt_run__print_dry_run(r.procs[i]);
		ret = 0;
		goto cleanup;
	}
	if (geteuid() != 0)
		pt_run__vlog("proftrace: not root: this works only with CAP_BPF, CAP_PERFMON and "
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
	r.py_probe_wanted = pyp && pt_run__want_py_probe(&r, pyp);
	aopts.ringbuf_mb = r.cfg.ringbuf_mb;
	aopts.wakeup_each = r.cfg.ringbuf_wakeup;
	aopts.follow_children = r.env.children;
	aopts.on_rec = pt_run__on_rec;
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
		e = pt_run__open_sampler(&r, err, sizeof(err));
		if (e == -ENOMEM)
			goto cleanup;
		if (e)
			fprintf(stderr, "proftrace: warning: no stack sampling: %s\n", err);
	}
	{
		bool any_gpu = false;

		for (size_t i = 0; i < r.nprocs; i++) {
			e = pt_run__open_gpu(r.procs[i]);
			if (e) {
				ret = e == EXIT_USAGE ? EXIT_USAGE : 1;
				goto cleanup;
			}
			any_gpu |= r.procs[i]->gpu != NULL;
		}
		if (r.env.gpu == PT_GPU_ON && r.env.children && !any_gpu) {
			fprintf(stderr, "proftrace: --gpu on: no CUPTI shim in pid %d or its "
					"descendants: start the server with CUDA_INJECTION64_PATH="
					"/path/to/libproftrace_cupti.so (see docs/gpu.md)\n", r.env.pid);
			ret = EXIT_USAGE;
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
		e = pt_run__start_proc(r.procs[i], r.ep);
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
	e = pt_run__write_outputs(&r);
	ret = e ? 1 : 0;

cleanup:
	pt_sampler__free(r.smp);
	pt_attach__free(r.att);
	for (size_t i = 0; i < r.nprocs; i++)
		pt_run__free_proc(r.procs[i]);
	free(r.procs);
	pt_run__free_view(&r.all);
	free(r.mf);
	free(r.cands);
	free(r.skipped);
	free(r.attr_warned);
	free(r.sf);
	free(r.msf);
	free(r.labels);
	pt_trace__free(r.trace);
	if (r.ep >= 0)
		close(r.ep);
	pt_config__free(&r.cfg);
	return ret;
}
