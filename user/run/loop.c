// SPDX-License-Identifier: BSD-2-Clause
/*
 * The event loop of a run: drain the rings on a timer (records are
 * submitted without wakeups), wake at once for dlopen, forks, signals and
 * the processes' exits, refresh the live status line, and stop on
 * --duration, SIGINT/SIGTERM or when every process has ended.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "run.h"
#include "procstate.h"
#include "proctable.h"
#include "metrics.h"
#include "gpustream.h"
#include "pyrec.h"
#include "pyagent.h"
#include "records.h"
#include "procs.h"
#include "window.h"
#include "loop.h"

#include "aggregate/agg.h"
#include "aggregate/dist.h"
#include "aggregate/overhead.h"
#include "attach/attach.h"
#include "attach/tracee.h"
#include "bpf/proftrace.h"
#include "sample/sampler.h"
#include "util/log.h"
#include "util/util.h"

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
	if (!r->dropped_seen)
		pt_msg("proftrace: warning: the ring buffer is full, records are lost (raise `set "
		       "ringbuf_mb` or lower `set poll_ms`)\n");
	n = c.dropped - r->dropped_seen;
	for (size_t i = 0; i < r->procs.n; i++)
		if (pt_proc__live(r->procs.v[i]))
			pt_agg__lost(r->procs.v[i]->v.agg, n);
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
	const struct pt_agg *a = r->multi ? r->all.agg : r->procs.v[0]->v.agg;
	const struct pt_agg_step_stats *ss = pt_agg__steps(a);
	double dt = (double)(now - st->last_ns) / 1e9;
	uint64_t steps = ss->dur.count;
	char procs[32] = "", pcts[64] = "", cost[32] = "";

	if (!st->on || dt < 1.0)
		return;
	if (r->multi)
		snprintf(procs, sizeof(procs), "%zu processes  ", r->procs.n);
	if (steps)
		snprintf(pcts, sizeof(pcts), "  p50 %.3f ms  p99 %.3f ms",
			 pt_dist__quantile(&ss->dur, 0.5) / 1e6,
			 pt_dist__quantile(&ss->dur, 0.99) / 1e6);
	if (steps && r->calib.ok && ss->dur.sum > 0) /* overhead.h: the probes' share */
		snprintf(cost, sizeof(cost), "  probes ~%.1f%%",
			 100 * pt_ovh__step_cost_ns(r->multi ? r->all.ovh : r->procs.v[0]->v.ovh) /
				 ss->dur.sum);
	pt_log__status(
		"proftrace: %.0fs  %ssteps %llu  %.1f steps/s%s%s  %.0f events/s  drops %llu",
		since_start_s(r), procs, (unsigned long long)steps,
		(double)(steps - st->last_steps) / dt, pcts, cost,
		(double)(r->events - st->last_events) / dt, (unsigned long long)r->dropped_seen);
	st->last_ns = now;
	st->last_events = r->events;
	st->last_steps = steps;
}

static int add_fd(int ep, int fd, uint32_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = tag };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/* The pidfds of the processes started since procs[from]: an exit wakes
 * the loop (one without a pidfd is checked each tick). */
static void watch_procs(struct run *r, size_t from)
{
	for (size_t i = from; i < r->procs.n; i++)
		if (r->procs.v[i]->pidfd >= 0)
			add_fd(r->ep, r->procs.v[i]->pidfd, TAG_PID + r->procs.v[i]->pos);
}

/* The events epoll gave: a stop signal, the timer, the ring, a pidfd. */
enum pt_loop_stop pt_run__dispatch(struct run *r, const struct epoll_event *evs, int n, int sfd,
				   int tfd)
{
	enum pt_loop_stop stop = PT_LOOP_GO;

	for (int i = 0; i < n; i++) {
		uint32_t tag = evs[i].data.u32;
		struct signalfd_siginfo si;
		uint64_t junk;

		switch (tag) {
		case TAG_SIG:
			if (read(sfd, &si, sizeof(si)) == sizeof(si))
				pt_vlog("proftrace: %s, stopping\n", strsignal((int)si.ssi_signo));
			stop = PT_LOOP_SIGNAL;
			break;
		case TAG_TIMER:
			/* nothing to read on a spurious wakeup: fine */
			junk = (uint64_t)read(tfd, &junk, sizeof(junk));
			break;
		case TAG_RING:
			break;
		case TAG_METRICS:
			pt_run__metrics_serve(r);
			break;
		default:
			if (tag >= TAG_PID && tag - TAG_PID < r->procs.n)
				pt_run__end_proc(r->procs.v[tag - TAG_PID], "exited");
			break;
		}
	}
	return stop;
}

/* Each tick: per-process chores (exec seen, attribute retries, the GPU
 * ring and its heartbeat, liveness without a pidfd). */
static void tick_procs(struct run *r, uint64_t now)
{
	for (size_t i = 0; i < r->procs.n; i++) {
		struct proc *p = r->procs.v[i];

		if (p->state == PT_PROC_EXECED) {
			pt_run__end_proc(p, "exec");
			if (r->multi) /* its new image */
				pt_run__add_cand(r, p->tracee.pid, pt_now_ns(CLOCK_MONOTONIC));
		}
		if (!pt_proc__live(p))
			continue;
		if (p->nretries)
			pt_run__attr_retries(p, now);
		if (p->agent.handle)
			pt_run__agent_tick(p, now);
		pt_run__gpu_tick(p, now, pt_run__on_gpu_rec);
		if (p->pidfd < 0 && !pt_tracee__alive(&p->tracee))
			pt_run__end_proc(p, "exited");
	}
}

/* Maps rescans: every RESCAN_MS, and at once after a dlopen. */
static void rescan(struct run *r, uint64_t now, uint64_t *last)
{
	bool all = now - *last >= RESCAN_MS * 1000000ull;

	for (size_t i = 0; i < r->procs.n; i++)
		if (pt_proc__live(r->procs.v[i]) && (all || r->procs.v[i]->rescan))
			pt_run__rescan(r->procs.v[i]);
	if (all)
		*last = now;
}

/* After the stop: what is still in the rings, and the shims' last records. */
static void drain_at_stop(struct run *r)
{
	r->t_end_mono = pt_now_ns(CLOCK_MONOTONIC);
	/* the agents take their hooks out: nothing more is timed */
	for (size_t i = 0; i < r->procs.n; i++)
		if (pt_proc__live(r->procs.v[i]))
			pt_run__agent_stop(r->procs.v[i]);
	/* Records submitted before the stop are in the ring: take them all. */
	pt_attach__drain(r->att);
	pt_sampler__stop(r->smp, r->t_end_mono);
	note_drops(r);
	/* detach: the shim disables CUPTI and flushes what it holds */
	for (size_t i = 0; i < r->procs.n; i++)
		pt_run__gpu_finish(r->procs.v[i], pt_run__on_gpu_rec);
}

/* What the loop waits on: the stop signals, its timer, the probe ring
 * (none without a BPF object: a run opened, not attached, as the unit
 * tests make), the --metrics socket and the processes' pidfds. The files
 * that open them hand them over; only the loop registers them. */
static int open_fds(struct run *r, int *sfd, int *tfd)
{
	struct itimerspec its = { 0 };
	int mfd = pt_run__metrics_fd(r);

	r->ep = epoll_create1(EPOLL_CLOEXEC);
	*sfd = signalfd(-1, &r->stop_mask, SFD_CLOEXEC | SFD_NONBLOCK);
	*tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (r->ep < 0 || *sfd < 0 || *tfd < 0)
		return -errno;
	its.it_interval.tv_nsec = (long)r->cfg.poll_ms * 1000000L;
	its.it_value = its.it_interval;
	timerfd_settime(*tfd, 0, &its, NULL);
	if (add_fd(r->ep, *sfd, TAG_SIG) || add_fd(r->ep, *tfd, TAG_TIMER) ||
	    (r->att && add_fd(r->ep, pt_attach__ring_fd(r->att), TAG_RING)) ||
	    (mfd >= 0 && add_fd(r->ep, mfd, TAG_METRICS)))
		return -errno;
	watch_procs(r, 0);
	return 0;
}

int pt_run__loop(struct run *r)
{
	enum pt_loop_stop stop = PT_LOOP_GO;
	uint64_t last_rescan = pt_now_ns(CLOCK_MONOTONIC), deadline = 0;
	struct status st = { .on = !r->env.quiet && isatty(STDERR_FILENO), .last_ns = last_rescan };
	int sfd = -1, tfd = -1, e;

	e = open_fds(r, &sfd, &tfd);
	if (r->env.duration_s > 0)
		deadline = r->t0_mono + (uint64_t)(r->env.duration_s * 1e9);
	while (!e && stop == PT_LOOP_GO) {
		struct epoll_event evs[8];
		int n = epoll_wait(r->ep, evs, 8, 1000);
		uint64_t now;

		if (n < 0 && errno != EINTR) {
			e = -errno;
			break;
		}
		stop = pt_run__dispatch(r, evs, n > 0 ? n : 0, sfd, tfd);
		pt_attach__drain(r->att);
		if (r->smp)
			pt_sampler__drain(r->smp);
		note_drops(r);
		now = pt_now_ns(CLOCK_MONOTONIC);
		tick_procs(r, now);
		if (r->env.children &&
		    (r->scan_children || now - last_rescan >= RESCAN_MS * 1000000ull))
			pt_run__scan_children(r, now);
		if (r->ncands) {
			size_t from = r->procs.n;

			if (pt_run__add_candidates(r, now, false) == -ENOMEM) {
				e = -ENOMEM;
				break;
			}
			watch_procs(r, from);
		}
		if (pt_proctable__all_ended(&r->procs) && !r->ncands) {
			if (!r->multi && r->procs.v[0]->end_why &&
			    !strcmp(r->procs.v[0]->end_why, "exec"))
				pt_msg("proftrace: its probes went with the old image: stopping "
				       "(give "
				       "--children to follow it into the new one)\n");
			stop = PT_LOOP_EXIT;
		}
		if (stop == PT_LOOP_GO)
			rescan(r, now, &last_rescan);
		if (deadline && now >= deadline && stop == PT_LOOP_GO)
			stop = PT_LOOP_DURATION;
		status_tick(r, &st, now);
		pt_run__window_tick(r, now);
	}
	if (st.on)
		pt_log__status_end();
	/* also after a failure: what was taken is reported */
	drain_at_stop(r);
	if (e)
		pt_msg("proftrace: event loop failed: %s\n", strerror(-e));
	if (tfd >= 0)
		close(tfd);
	if (sfd >= 0)
		close(sfd);
	return e;
}
