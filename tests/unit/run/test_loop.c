// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/loop.c: the event loop's dispatch (pt_run__dispatch) and its stops,
 * on a run opened by pt_run__open on a child of this test that waits
 * (no BPF object: r->att NULL, as before attaching). A stop signal read
 * from a real signalfd stops it; the timer's expiries are read from a
 * real timerfd and stop nothing; a pidfd's tag ends its process
 * ("exited"), one past the table and any unknown tag do nothing; several
 * events at once are each handled. The whole loop (pt_run__loop) stops
 * once every process ended, woken by the pidfd it registered (the child
 * a zombie: only the pidfd tells) or by its liveness check (no pidfd),
 * on a stop signal, and, with a live process, not before --duration.
 * The ring's records, the sampler and the maps rescans (each RESCAN_MS:
 * they attach what they find) need BPF: tests/integration; the loops
 * here stop before the first rescan.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "attach/tracee.h"
#include "run/env.h"
#include "run/loop.h"
#include "run/procstate.h"
#include "run/proctable.h"
#include "run/run.h"
#include "run/steps.h"
#include "util/util.h"
#include "runfx.h"

#define MS 1000000ull

/* What the targets file names in the child (this binary): noinline with
 * a body, so the symbol is there to resolve. */
RUNFX_VICTIM(loop_victim);

struct fx {
	struct run r;
	pid_t child; /* -1 once reaped */
	char path[64];
	sigset_t stop, old; /* SIGINT, SIGTERM blocked while it runs */
};

static int teardown(void **state)
{
	struct fx *x = *state;
	struct timespec zero = { 0 };

	pt_run__free(&x->r);
	runfx__reap(x->child);
	unlink(x->path);
	/* a stop signal raised and not taken must not kill the test */
	while (sigtimedwait(&x->stop, NULL, &zero) > 0)
		;
	sigprocmask(SIG_SETMASK, &x->old, NULL);
	free(x);
	return 0;
}

/* The run of a child, opened with --duration duration_s. */
static int open_run(void **state, double duration_s)
{
	static const char text[] = "step native:exe:loop_victim\n";
	struct fx *x = calloc(1, sizeof(*x));
	struct pt_env env = { 0 };

	if (!x)
		return -1;
	snprintf(x->path, sizeof(x->path), "/tmp/pt-test-loop-XXXXXX");
	if (runfx__targets(x->path, text))
		return -1;
	sigemptyset(&x->stop);
	sigaddset(&x->stop, SIGINT);
	sigaddset(&x->stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &x->stop, &x->old);
	x->child = runfx__child();
	if (x->child < 0)
		return -1;
	env.pid = env.pids[0] = x->child;
	env.npids = 1;
	env.targets = x->path;
	env.quiet = true;
	env.duration_s = duration_s;
	*state = x;
	if (!pt_run__open(&x->r, &env))
		return 0;
	teardown(state);
	return -1;
}

static int setup(void **state)
{
	return open_run(state, 0);
}

/* --duration 0.8: a guard, so that a loop that does not stop when it
 * should is seen as slow, not as a hang; under RESCAN_MS, as a maps
 * rescan attaches what it finds (BPF) */
static int setup_guarded(void **state)
{
	return open_run(state, 0.8);
}

static int setup_short(void **state)
{
	return open_run(state, 0.3);
}

static struct proc *proc0(struct fx *x)
{
	assert_int_equal(x->r.procs.n, 1);
	return x->r.procs.v[0];
}

/* The child killed and reaped: it is gone. */
static void kill_child(struct fx *x)
{
	runfx__reap(x->child);
	x->child = -1;
}

static enum pt_loop_stop dispatch1(struct run *r, uint32_t tag, int sfd, int tfd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = tag };

	return pt_run__dispatch(r, &ev, 1, sfd, tfd);
}

static bool pending(int sig)
{
	sigset_t s;

	sigpending(&s);
	return sigismember(&s, sig) == 1;
}

static void test_signal_stops(void **state)
{
	struct fx *x = *state;
	int sfd = signalfd(-1, &x->stop, SFD_CLOEXEC | SFD_NONBLOCK);

	assert_true(sfd >= 0);
	raise(SIGTERM);
	assert_true(pending(SIGTERM));
	assert_int_equal(dispatch1(&x->r, TAG_SIG, sfd, -1), PT_LOOP_SIGNAL);
	assert_false(pending(SIGTERM)); /* read, not left pending */
	/* the process is not ended by it: the report has it as it was */
	assert_int_equal(proc0(x)->state, PT_PROC_FOUND);
	close(sfd);
}

static void test_timer_read_no_stop(void **state)
{
	struct fx *x = *state;
	struct itimerspec its = { .it_value = { .tv_nsec = 1 } };
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	struct pollfd pfd = { .fd = tfd, .events = POLLIN };
	uint64_t n;

	assert_true(tfd >= 0);
	assert_int_equal(timerfd_settime(tfd, 0, &its, NULL), 0);
	assert_int_equal(poll(&pfd, 1, 1000), 1); /* expired */
	assert_int_equal(dispatch1(&x->r, TAG_TIMER, -1, tfd), PT_LOOP_GO);
	/* its expiry was read: nothing left, so epoll does not wake again */
	assert_int_equal(read(tfd, &n, sizeof(n)), -1);
	assert_int_equal(errno, EAGAIN);
	/* a spurious wakeup (nothing to read) is no stop either */
	assert_int_equal(dispatch1(&x->r, TAG_TIMER, -1, tfd), PT_LOOP_GO);
	assert_int_equal(proc0(x)->state, PT_PROC_FOUND);
	close(tfd);
}

static void test_pidfd_ends_its_process(void **state)
{
	struct fx *x = *state;
	struct proc *p = proc0(x);
	int pid = p->tracee.pid;

	assert_non_null(pt_proctable__find(&x->r.procs, (uint32_t)pid));
	kill_child(x);
	assert_int_equal(dispatch1(&x->r, TAG_PID + p->pos, -1, -1), PT_LOOP_GO);
	assert_int_equal(p->state, PT_PROC_ENDED);
	assert_false(pt_proc__live(p));
	assert_string_equal(p->end_why, "exited");
	assert_true(p->t_ended > 0);
	/* its late records go nowhere, and the table knows it ended */
	assert_null(pt_proctable__find(&x->r.procs, (uint32_t)pid));
	assert_true(pt_proctable__all_ended(&x->r.procs));
	/* a second wakeup of the same pidfd: nothing more */
	assert_int_equal(dispatch1(&x->r, TAG_PID + p->pos, -1, -1), PT_LOOP_GO);
	assert_string_equal(p->end_why, "exited");
}

static void test_pidfd_past_the_table(void **state)
{
	struct fx *x = *state;

	assert_int_equal(dispatch1(&x->r, TAG_PID + 1, -1, -1), PT_LOOP_GO);
	assert_int_equal(dispatch1(&x->r, TAG_PID + 1000, -1, -1), PT_LOOP_GO);
	assert_int_equal(dispatch1(&x->r, UINT32_MAX, -1, -1), PT_LOOP_GO);
	assert_int_equal(proc0(x)->state, PT_PROC_FOUND);
	assert_null(proc0(x)->end_why);
}

static void test_unknown_tags(void **state)
{
	struct fx *x = *state;
	/* 0 and those between TAG_METRICS and TAG_PID are no one's; the
	 * ring's is drained after the dispatch, --metrics has no socket */
	const uint32_t tags[] = { 0, TAG_METRICS + 1, TAG_PID - 1, TAG_RING, TAG_METRICS };

	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++)
		assert_int_equal(dispatch1(&x->r, tags[i], -1, -1), PT_LOOP_GO);
	assert_int_equal(proc0(x)->state, PT_PROC_FOUND);
}

/* One wakeup with several events: a stop signal does not hide the
 * others. */
static void test_several_events(void **state)
{
	struct fx *x = *state;
	struct proc *p = proc0(x);
	struct epoll_event evs[] = {
		{ .events = EPOLLIN, .data.u32 = TAG_SIG },
		{ .events = EPOLLIN, .data.u32 = TAG_PID + p->pos },
		{ .events = EPOLLIN, .data.u32 = 9 },
	};
	int sfd = signalfd(-1, &x->stop, SFD_CLOEXEC | SFD_NONBLOCK);

	assert_true(sfd >= 0);
	raise(SIGINT);
	kill_child(x);
	assert_int_equal(pt_run__dispatch(&x->r, evs, 3, sfd, -1), PT_LOOP_SIGNAL);
	assert_false(pending(SIGINT));
	assert_int_equal(p->state, PT_PROC_ENDED);
	/* n counts: none given, none handled */
	assert_int_equal(pt_run__dispatch(&x->r, evs, 0, sfd, -1), PT_LOOP_GO);
	close(sfd);
}

/* pt_run__loop from now on (the clock started, as pt_run__attach does):
 * its return, and how long it ran, in ns. */
static int loop(struct fx *x, uint64_t *took)
{
	uint64_t t0 = pt_now_ns(CLOCK_MONOTONIC);
	int e;

	x->r.t0_mono = t0;
	x->r.t0_unix = pt_now_ns(CLOCK_REALTIME);
	e = pt_run__loop(&x->r);
	*took = pt_now_ns(CLOCK_MONOTONIC) - t0;
	return e;
}

/* Its pidfd (what pt_run__start_proc hands the loop) wakes the loop: the
 * child is a zombie, alive to kill(pid, 0), so nothing else can tell. */
static void test_loop_stops_when_all_ended_pidfd(void **state)
{
	struct fx *x = *state;
	struct proc *p = proc0(x);
	uint64_t took;

	p->pidfd = pt_tracee__pidfd(&p->tracee);
	if (p->pidfd < 0)
		skip();		 /* no pidfd_open (Linux < 5.3): the next test's path */
	kill(x->child, SIGKILL); /* not reaped */
	assert_int_equal(loop(x, &took), 0);
	assert_true(took < 600 * MS); /* not the --duration 0.8 guard */
	assert_int_equal(p->state, PT_PROC_ENDED);
	assert_string_equal(p->end_why, "exited");
	assert_int_equal(p->pidfd, -1); /* closed: out of the epoll set */
	assert_true(x->r.t_end_mono >= x->r.t0_mono);
}

/* No pidfd: the loop checks each process's life each tick. */
static void test_loop_stops_when_all_ended_no_pidfd(void **state)
{
	struct fx *x = *state;
	struct proc *p = proc0(x);
	uint64_t took;

	assert_int_equal(p->pidfd, -1);
	kill_child(x);
	assert_int_equal(loop(x, &took), 0);
	assert_true(took < 600 * MS); /* a tick (poll_ms 20) or two, not the guard */
	assert_int_equal(p->state, PT_PROC_ENDED);
	assert_string_equal(p->end_why, "exited");
}

/* SIGTERM, blocked as pt_run__attach blocks it, read by the loop from
 * its signalfd on r->stop_mask: it stops, the process still live. */
static void test_loop_stops_on_signal(void **state)
{
	struct fx *x = *state;
	uint64_t took;

	x->r.stop_mask = x->stop;
	raise(SIGTERM);
	assert_int_equal(loop(x, &took), 0);
	assert_true(took < 600 * MS);
	assert_false(pending(SIGTERM));
	assert_true(pt_proc__live(proc0(x)));
}

/* A live process: the loop runs its --duration (0.3 s, under RESCAN_MS),
 * no less. */
static void test_loop_runs_its_duration(void **state)
{
	struct fx *x = *state;
	uint64_t took;

	assert_int_equal(loop(x, &took), 0);
	assert_true(took >= 300 * MS);
	assert_true(took < 1300 * MS);
	assert_true(x->r.t_end_mono - x->r.t0_mono >= 300 * MS);
	assert_int_equal(proc0(x)->state, PT_PROC_FOUND);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_signal_stops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timer_read_no_stop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pidfd_ends_its_process, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pidfd_past_the_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_tags, setup, teardown),
		cmocka_unit_test_setup_teardown(test_several_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loop_stops_when_all_ended_pidfd, setup_guarded,
						teardown),
		cmocka_unit_test_setup_teardown(test_loop_stops_when_all_ended_no_pidfd,
						setup_guarded, teardown),
		cmocka_unit_test_setup_teardown(test_loop_stops_on_signal, setup_guarded, teardown),
		cmocka_unit_test_setup_teardown(test_loop_runs_its_duration, setup_short, teardown),
	};

	return cmocka_run_group_tests_name("loop", tests, NULL, NULL);
}
