// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/procs.c: a process's life without BPF, on a run opened by
 * pt_run__open (no BPF object: r->att NULL, as before attaching) on
 * children of this test.
 *
 * pt_run__open_proc on a live child finds it (a BPF slot of its own
 * taken, its probes resolved, state found), and reads RANK and
 * LOCAL_RANK from the environment it was started with (exec'ed with
 * them), ignoring values that are not whole numbers from 0 to 999999 and
 * names that only end in them; with no CPython its py: rows would be
 * c-entry-only (pt_run__py_timing); pt_run__free_proc gives its slot back. On
 * a dead pid it fails with -ESRCH and says so; on a process with nothing
 * to trace it returns 1 with the reason (not strict: a descendant) or
 * fails (strict: a process named with -p); with every slot taken it
 * returns 1 and says so; a failure gives the slot back.
 *
 * pt_run__end_proc ends a process (state ended, why, when, its pidfd
 * closed): exited, its slot is given back; exec'ed, it is kept; a second
 * call changes nothing.
 *
 * --children: pt_run__open traces the descendants there are (children
 * and theirs), skipping one with nothing to trace (recorded with its
 * name and why); pt_run__scan_children makes each descendant not traced
 * a candidate once, seen at the `now` given; pt_run__add_candidates
 * leaves those younger than CHILD_SETTLE_MS, and inspects the others:
 * one with nothing to trace is skipped (and never a candidate again), one
 * gone is dropped unsaid; pt_run__add_cand takes a pid once.
 *
 * pt_run__stop_asked takes a pending SIGINT or SIGTERM (blocked, as
 * pt_run__attach blocks them) once: r->stop_sig set, the stop said once,
 * a later signal left pending.
 *
 * Not here, as they need BPF (tests/integration: test_procs.py,
 * test_attach_stop.py, test_native.py): pt_run__start_proc (the probes,
 * the sampler, the GPU ring, the dynamic linker's hook), pt_run__attach_new,
 * pt_run__rescan (it attaches what it finds), pt_run__open_sampler, and a
 * candidate's attach once old enough (pt_run__add_candidates after the
 * start: pt_run__start_proc).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "attach/resolve.h"
#include "attach/tracee.h"
#include "run/env.h"
#include "run/procs.h"
#include "run/procstate.h"
#include "run/proctable.h"
#include "run/run.h"
#include "run/steps.h"
#include "util/util.h"
#include "runfx.h"

#define MS 1000000ull

/* What the targets file names in the children (this binary): noinline
 * with a body, so the symbol is there to resolve. */
RUNFX_VICTIM(procs_victim);

static const char conf[] = "step native:exe:procs_victim\n";

struct fx {
	struct run r;
	bool opened;
	pid_t child;  /* the run's first process; with --children the tree's root */
	pid_t other;  /* another child, -1: none */
	int cmd, ack; /* the tree's root: its commands and answers, -1: none */
	char path[64];
	struct {
		bool on;
		sigset_t mask;		 /* before */
		struct sigaction act[3]; /* before, per stop_sigs[] */
		int saved, fd;		 /* stderr, and the file it goes to meanwhile */
		char path[64];
	} stop; /* the stop tests' */
};

static void stop_end(struct fx *x);

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	if (!x)
		return -1;
	x->child = x->other = -1;
	x->cmd = x->ack = -1;
	snprintf(x->path, sizeof(x->path), "/tmp/pt-test-procs-XXXXXX");
	if (runfx__targets(x->path, conf))
		return -1;
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	stop_end(x);
	if (x->opened)
		pt_run__free(&x->r);
	if (x->cmd >= 0) {
		/* the tree: its root leads a group of its own */
		kill(-x->child, SIGKILL);
		close(x->cmd);
		close(x->ack);
	}
	runfx__reap(x->child);
	runfx__reap(x->other);
	unlink(x->path);
	free(x);
	return 0;
}

/* The run of x->child (--children: and its descendants). */
static void open_run(struct fx *x, bool children)
{
	struct pt_env env = { 0 };
	int e;

	env.pid = env.pids[0] = x->child;
	env.npids = 1;
	env.targets = x->path;
	env.quiet = true;
	env.children = children;
	e = pt_run__open(&x->r, &env);
	x->opened = true; /* pt_run__free after it, failed or not */
	assert_int_equal(e, 0);
}

/* A run of a waiting child. */
static struct proc *open_plain(struct fx *x)
{
	x->child = runfx__child();
	assert_true(x->child > 0);
	open_run(x, false);
	assert_int_equal(x->r.procs.n, 1);
	return x->r.procs.v[0];
}

/* path exec'ed with argv and envp in a child; returns once the exec is
 * done. */
static pid_t spawn(const char *path, char *const argv[], char *const envp[])
{
	int sync[2], e = 0;
	pid_t pid;

	assert_int_equal(pipe2(sync, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execve(path, argv, envp);
		e = errno;
		(void)!write(sync[1], &e, sizeof(e));
		_exit(127);
	}
	close(sync[1]);
	/* the pipe ends at the exec (O_CLOEXEC), or says why it failed */
	e = 0;
	assert_int_equal(read(sync[0], &e, sizeof(e)), 0);
	close(sync[0]);
	return pid;
}

/* This binary again, waiting (main's --wait), with that environment. */
static pid_t spawn_self(char *const envp[])
{
	char *argv[] = { "test_procs", "--wait", NULL };

	return spawn("/proc/self/exe", argv, envp);
}

/* /bin/sleep: nothing the targets file names, no CPython. */
static pid_t spawn_sleep(void)
{
	char *argv[] = { "sleep", "1000", NULL }, *envp[] = { NULL };

	return spawn("/bin/sleep", argv, envp);
}

static int busy_slots(const struct run *r)
{
	int n = 0;

	for (int i = 0; i < PT_MAX_PROCS; i++)
		n += r->procs.slot_busy[i];
	return n;
}

/* A live child: found, its slot taken, its probes resolved, its ranks
 * read; freed unused, its slot back. */
static void test_open_live(void **state)
{
	struct fx *x = *state;
	char env0[] = "RANK=3", env1[] = "LOCAL_RANK=1";
	char *envp[] = { env0, env1, NULL };
	struct proc *p0 = open_plain(x), *p = NULL;
	const struct pt_func *f;
	char err[512] = "";

	x->other = spawn_self(envp);
	assert_int_equal(busy_slots(&x->r), 1);
	assert_int_equal(pt_run__open_proc(&x->r, x->other, true, &p, err, sizeof(err)), 0);
	assert_non_null(p);
	assert_ptr_equal(p->run, &x->r);
	assert_int_equal(p->tracee.pid, x->other);
	assert_int_equal(p->state, PT_PROC_FOUND);
	assert_true(pt_proc__live(p));
	assert_int_equal(p->rank, 3);
	assert_int_equal(p->local_rank, 1);
	assert_int_equal(p->pidfd, -1); /* pt_run__start_proc opens it */
	assert_null(p->end_why);
	/* a slot of its own */
	assert_int_not_equal(p->idx, p0->idx);
	assert_true(x->r.procs.slot_busy[p->idx]);
	assert_int_equal(busy_slots(&x->r), 2);
	/* its probe resolved in its executable, a state for each function */
	assert_int_equal(pt_resolver__nfuncs(p->res), 1);
	assert_int_equal(pt_resolver__spec_nfuncs(p->res, 0), 1);
	f = pt_resolver__func(p->res, 0);
	assert_string_equal(f->symbol, "procs_victim");
	assert_string_equal(f->object, p->tracee.exe);
	assert_true(p->nfs >= 1);
	assert_false(p->fs[0].attached);
	/* no CPython, no agent: py: rows would be c-entry-only */
	assert_false(p->python.have);
	assert_string_equal(pt_run__py_timing(p), "c-entry-only");
	/* the run's own, forked without exec: no ranks in its environment */
	assert_int_equal(p0->rank, -1);
	pt_run__free_proc(p);
	assert_int_equal(busy_slots(&x->r), 1);
}

/* RANK and LOCAL_RANK: whole numbers from 0 to 999999; anything else,
 * and other names that end in them, is not a rank (-1). */
static void test_ranks(void **state)
{
	static const struct {
		const char *env[4];
		int rank, local;
	} cases[] = {
		{ { "RANK=0", "LOCAL_RANK=999999" }, 0, 999999 },
		{ { "LOCAL_RANK=7" }, -1, 7 },
		{ { "RANK=abc", "LOCAL_RANK=-2" }, -1, -1 },
		{ { "RANK=1000000", "LOCAL_RANK=" }, -1, -1 },
		{ { "RANK=3x", "LOCAL_RANK=2.5" }, -1, -1 },
		{ { "WORLD_RANK=4", "XLOCAL_RANK=5", "RANK" }, -1, -1 },
		{ { NULL }, -1, -1 },
	};
	struct fx *x = *state;

	open_plain(x);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *envp[5] = { 0 };
		struct proc *p = NULL;
		char err[512] = "";

		for (size_t k = 0; k < 4 && cases[i].env[k]; k++)
			envp[k] = (char *)cases[i].env[k];
		x->other = spawn_self(envp);
		assert_int_equal(pt_run__open_proc(&x->r, x->other, true, &p, err, sizeof(err)), 0);
		if (p->rank != cases[i].rank || p->local_rank != cases[i].local)
			fail_msg("case %zu (%s %s %s): rank %d local_rank %d, not %d %d", i,
				 cases[i].env[0], cases[i].env[1], cases[i].env[2], p->rank,
				 p->local_rank, cases[i].rank, cases[i].local);
		pt_run__free_proc(p);
		runfx__reap(x->other);
		x->other = -1;
	}
}

/* A dead pid: -ESRCH, said; its slot back. */
static void test_open_dead(void **state)
{
	struct fx *x = *state;
	struct proc *p = (struct proc *)1;
	char err[512] = "", want[128];
	pid_t dead = runfx__child();

	open_plain(x);
	runfx__reap(dead);
	assert_int_equal(pt_run__open_proc(&x->r, dead, true, &p, err, sizeof(err)), -ESRCH);
	assert_null(p);
	snprintf(want, sizeof(want), "no such process: %d ", dead);
	assert_non_null(strstr(err, want));
	assert_int_equal(busy_slots(&x->r), 1);
}

/* Nothing to trace (sleep: no procs_victim, no CPython): a descendant is
 * left alone (1, why), a process named with -p is an error. */
static void test_open_nothing_to_trace(void **state)
{
	struct fx *x = *state;
	struct proc *p = (struct proc *)1;
	char err[512] = "";

	open_plain(x);
	x->other = spawn_sleep();
	assert_int_equal(pt_run__open_proc(&x->r, x->other, false, &p, err, sizeof(err)), 1);
	assert_null(p);
	assert_string_equal(err, "no CPython in it and no function the targets file names");
	assert_int_equal(busy_slots(&x->r), 1);
	p = (struct proc *)1;
	assert_int_equal(pt_run__open_proc(&x->r, x->other, true, &p, err, sizeof(err)), -EINVAL);
	assert_null(p);
	assert_non_null(strstr(err, "no function matches 'procs_victim'"));
	assert_int_equal(busy_slots(&x->r), 1);
}

/* Every slot taken (PT_TEST_MAX_PROCS=1, the run's process holds it): 1,
 * said. */
static void test_open_no_slot(void **state)
{
	struct fx *x = *state;
	struct proc *p = (struct proc *)1;
	char err[512] = "", want[128];

	open_plain(x);
	x->other = runfx__child();
	setenv("PT_TEST_MAX_PROCS", "1", 1);
	assert_int_equal(pt_run__open_proc(&x->r, x->other, true, &p, err, sizeof(err)), 1);
	unsetenv("PT_TEST_MAX_PROCS");
	assert_null(p);
	snprintf(want, sizeof(want), "more than 1 processes traced at once: pid %d is not traced",
		 x->other);
	assert_string_equal(err, want);
	assert_int_equal(busy_slots(&x->r), 1);
}

/* Exited: ended, its pidfd closed, its slot given back; once. */
static void test_end_exited(void **state)
{
	struct fx *x = *state;
	struct proc *p = open_plain(x);
	unsigned int idx = p->idx;
	uint64_t t0 = pt_now_ns(CLOCK_MONOTONIC), t_ended;
	pid_t pid = x->child;

	/* the pidfd pt_run__start_proc hands the loop (it needs BPF) */
	p->pidfd = pt_tracee__pidfd(&p->tracee);
	runfx__reap(pid);
	x->child = -1;
	pt_run__end_proc(p, "exited");
	assert_int_equal(p->state, PT_PROC_ENDED);
	assert_false(pt_proc__live(p));
	assert_string_equal(p->end_why, "exited");
	assert_true(p->t_ended >= t0);
	assert_int_equal(p->pidfd, -1);
	assert_false(x->r.procs.slot_busy[idx]);
	assert_true(x->r.procs.slot_freed[idx] >= t0);
	assert_null(pt_proctable__find(&x->r.procs, (uint32_t)pid));
	assert_true(pt_proctable__all_ended(&x->r.procs));
	/* again, and as an exec: nothing changes */
	t_ended = p->t_ended;
	pt_run__end_proc(p, "exec");
	assert_string_equal(p->end_why, "exited");
	assert_int_equal(p->t_ended, t_ended);
	assert_false(x->r.procs.slot_busy[idx]);
}

/* Exec'ed: ended, its slot kept (its old probes may still be coming out
 * while the new image runs); once. Its new image is a candidate. */
static void test_end_exec(void **state)
{
	struct fx *x = *state;
	struct proc *p = open_plain(x);
	unsigned int idx = p->idx;

	pt_run__end_proc(p, "exec");
	assert_int_equal(p->state, PT_PROC_ENDED);
	assert_string_equal(p->end_why, "exec");
	assert_true(x->r.procs.slot_busy[idx]);
	assert_int_equal(x->r.procs.slot_freed[idx], 0);
	pt_run__end_proc(p, "exited");
	assert_string_equal(p->end_why, "exec");
	assert_true(x->r.procs.slot_busy[idx]);
	/* as the loop does with an exec'ed process (--children) */
	pt_run__add_cand(&x->r, x->child, 5 * MS);
	pt_run__add_cand(&x->r, x->child, 6 * MS);
	assert_int_equal(x->r.ncands, 1);
	assert_int_equal(x->r.cands[0].pid, x->child);
	assert_int_equal(x->r.cands[0].seen, 5 * MS);
}

/* ---- --children: a tree of processes, grown when told ---- */

/* The tree's root: the run's process, in a group of its own, its
 * children reaped as they die; on each command it forks: 'f' a child
 * that waits, 'g' one that waits with a child of its own that waits,
 * 's' one that runs sleep; it answers with their pids (0 ends them). */
static void tree_root(int cmd, int ack)
{
	char c;

	setpgid(0, 0);
	signal(SIGCHLD, SIG_IGN);
	while (read(cmd, &c, 1) == 1) {
		int pids[3] = { 0 };
		pid_t pid;
		int sync[2];

		if (c == 's' && pipe2(sync, O_CLOEXEC))
			_exit(1);
		pid = fork();
		if (pid == 0) {
			if (c == 's') {
				char *argv[] = { "sleep", "1000", NULL }, *envp[] = { NULL };

				execve("/bin/sleep", argv, envp);
				_exit(127);
			}
			if (c == 'g') {
				pids[0] = getpid();
				pids[1] = fork();
				if (pids[1] == 0)
					for (;;)
						pause();
				(void)!write(ack, pids, sizeof(pids));
			}
			for (;;)
				pause();
		}
		if (c == 's') {
			close(sync[1]);
			(void)!read(sync[0], &c, 1); /* its exec done */
			close(sync[0]);
		}
		if (c != 'g') {
			pids[0] = pid;
			(void)!write(ack, pids, sizeof(pids));
		}
	}
	for (;;)
		pause();
}

static void start_tree(struct fx *x)
{
	int cmd[2], ack[2];

	assert_int_equal(pipe2(cmd, O_CLOEXEC), 0);
	assert_int_equal(pipe2(ack, O_CLOEXEC), 0);
	x->child = fork();
	assert_true(x->child >= 0);
	if (x->child == 0) {
		close(cmd[1]);
		close(ack[0]);
		tree_root(cmd[0], ack[1]);
	}
	close(cmd[0]);
	close(ack[1]);
	x->cmd = cmd[1];
	x->ack = ack[0];
	setpgid(x->child, x->child); /* as it does itself: whichever runs first */
}

/* The tree's root forks (c: 'f', 'g' or 's'); their pids into pids[3]. */
static void grow(struct fx *x, char c, int *pids)
{
	assert_int_equal(write(x->cmd, &c, 1), 1);
	assert_int_equal(read(x->ack, pids, 3 * sizeof(int)), (ssize_t)(3 * sizeof(int)));
}

/* pid killed, and gone (its parent reaps it). */
static void kill_gone(int pid)
{
	kill(pid, SIGKILL);
	for (int i = 0; i < 2000 && !kill(pid, 0); i++)
		usleep(1000);
	assert_int_equal(kill(pid, 0), -1);
}

static const struct cand *cand_of(const struct run *r, int pid)
{
	for (size_t i = 0; i < r->ncands; i++)
		if (r->cands[i].pid == pid)
			return &r->cands[i];
	return NULL;
}

static struct proc *proc_of(struct run *r, int pid)
{
	return pt_proctable__find(&r->procs, (uint32_t)pid);
}

/* Opened with --children: its descendants there are traced (a child's
 * child too), one with nothing to trace skipped, with its name and why. */
static void test_children_at_open(void **state)
{
	struct fx *x = *state;
	int g[3], s[3];

	start_tree(x);
	grow(x, 'g', g);
	grow(x, 's', s);
	open_run(x, true);
	assert_int_equal(x->r.procs.n, 3);
	assert_non_null(proc_of(&x->r, x->child));
	assert_non_null(proc_of(&x->r, g[0]));
	assert_non_null(proc_of(&x->r, g[1]));
	for (size_t i = 0; i < x->r.procs.n; i++)
		assert_int_equal(x->r.procs.v[i]->state, PT_PROC_FOUND);
	assert_null(proc_of(&x->r, s[0]));
	assert_int_equal(x->r.nskipped, 1);
	assert_int_equal(x->r.skipped[0].pid, s[0]);
	assert_string_equal(x->r.skipped[0].comm, "sleep");
	assert_string_equal(x->r.skipped[0].why,
			    "no CPython in it and no function the targets file names");
	assert_int_equal(x->r.ncands, 0);
	/* a later scan: each traced or skipped, none a candidate */
	pt_run__scan_children(&x->r, 1000 * MS);
	assert_int_equal(x->r.ncands, 0);
}

/* Descendants found by a scan are candidates from the `now` given, once;
 * inspected once CHILD_SETTLE_MS old: skipped (then never a candidate
 * again), dropped when gone, kept while younger. */
static void test_children_settle(void **state)
{
	struct fx *x = *state;
	const uint64_t t = 1000 * MS, settle = CHILD_SETTLE_MS * MS;
	int s[3], gone[3], late[3];

	start_tree(x);
	open_run(x, true);
	assert_int_equal(x->r.procs.n, 1);
	assert_int_equal(x->r.ncands, 0);
	grow(x, 's', s);
	grow(x, 'f', gone);
	/* as records.c does on a fork record */
	x->r.scan_children = true;
	pt_run__scan_children(&x->r, t);
	assert_false(x->r.scan_children);
	assert_int_equal(x->r.ncands, 2);
	assert_int_equal(cand_of(&x->r, s[0])->seen, t);
	assert_int_equal(cand_of(&x->r, gone[0])->seen, t);
	grow(x, 'f', late);
	pt_run__scan_children(&x->r, t + 50 * MS);
	assert_int_equal(x->r.ncands, 3);
	assert_int_equal(cand_of(&x->r, s[0])->seen, t); /* first seen */
	assert_int_equal(cand_of(&x->r, late[0])->seen, t + 50 * MS);
	/* none old enough: nothing done */
	assert_int_equal(pt_run__add_candidates(&x->r, t + settle - 1, false), 0);
	assert_int_equal(x->r.ncands, 3);
	assert_int_equal(x->r.nskipped, 0);
	assert_int_equal(x->r.procs.n, 1);
	/* two old enough: sleep skipped, the gone one dropped unsaid; the
	 * late one kept (once old enough, it would be attached: BPF) */
	kill_gone(gone[0]);
	assert_int_equal(pt_run__add_candidates(&x->r, t + settle, false), 0);
	assert_int_equal(x->r.ncands, 1);
	assert_int_equal(x->r.cands[0].pid, late[0]);
	assert_int_equal(x->r.nskipped, 1);
	assert_int_equal(x->r.skipped[0].pid, s[0]);
	assert_string_equal(x->r.skipped[0].comm, "sleep");
	assert_int_equal(x->r.procs.n, 1);
	assert_int_equal(busy_slots(&x->r), 1);
	/* skipped: not a candidate again */
	pt_run__scan_children(&x->r, t + settle);
	assert_int_equal(x->r.ncands, 1);
	pt_run__add_cand(&x->r, s[0], t + settle);
	assert_int_equal(x->r.ncands, 1);
	assert_null(cand_of(&x->r, s[0]));
}

/* ---- a stop asked for while attaching ---- */

static const int stop_sigs[] = { SIGINT, SIGTERM, SIGUSR1 };

static void noop(int sig)
{
}

/* SIGINT and SIGTERM blocked, and r->stop_mask set, as pt_run__attach
 * does (it needs BPF); SIGUSR1 blocked too, and each given a handler
 * that does nothing (one left pending must not end the test when
 * teardown unblocks it); stderr to a file. */
static void stop_begin(struct fx *x)
{
	struct sigaction sa = { .sa_handler = noop };
	sigset_t block;

	sigemptyset(&block);
	for (size_t i = 0; i < ARRAY_SIZE(stop_sigs); i++) {
		sigaction(stop_sigs[i], &sa, &x->stop.act[i]);
		sigaddset(&block, stop_sigs[i]);
	}
	sigprocmask(SIG_BLOCK, &block, &x->stop.mask);
	sigemptyset(&x->r.stop_mask);
	sigaddset(&x->r.stop_mask, SIGINT);
	sigaddset(&x->r.stop_mask, SIGTERM);
	snprintf(x->stop.path, sizeof(x->stop.path), "/tmp/pt-test-procs-err-XXXXXX");
	x->stop.fd = mkstemp(x->stop.path);
	assert_true(x->stop.fd >= 0);
	fflush(stderr);
	x->stop.saved = dup(2);
	dup2(x->stop.fd, 2);
	x->stop.on = true;
}

/* stderr back; the signals taken off, their handlers and the mask as
 * they were (teardown). */
static void stop_end(struct fx *x)
{
	struct timespec zero = { 0 };
	sigset_t all;

	if (!x->stop.on)
		return;
	fflush(stderr);
	dup2(x->stop.saved, 2);
	close(x->stop.saved);
	close(x->stop.fd);
	unlink(x->stop.path);
	sigemptyset(&all);
	for (size_t i = 0; i < ARRAY_SIZE(stop_sigs); i++)
		sigaddset(&all, stop_sigs[i]);
	while (sigtimedwait(&all, NULL, &zero) > 0)
		;
	sigprocmask(SIG_SETMASK, &x->stop.mask, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(stop_sigs); i++)
		sigaction(stop_sigs[i], &x->stop.act[i], NULL);
}

/* What was said on stderr since stop_begin. */
static const char *said(struct fx *x)
{
	static char buf[4096];
	ssize_t n;

	fflush(stderr);
	n = pread(x->stop.fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

static bool pending(int sig)
{
	sigset_t p;

	sigpending(&p);
	return sigismember(&p, sig) == 1;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *s = hay; (s = strstr(s, needle)); s += strlen(needle))
		n++;
	return n;
}

/* SIGTERM pending: taken, kept, said once; a SIGINT after it is left
 * pending; another signal is none of its business. */
static void test_stop_sigterm(void **state)
{
	struct fx *x = *state;

	open_plain(x);
	stop_begin(x);
	raise(SIGUSR1);
	assert_false(pt_run__stop_asked(&x->r));
	assert_int_equal(x->r.stop_sig, 0);
	assert_true(pending(SIGUSR1));
	raise(SIGTERM);
	assert_true(pt_run__stop_asked(&x->r));
	assert_int_equal(x->r.stop_sig, SIGTERM);
	assert_false(pending(SIGTERM)); /* taken */
	raise(SIGINT);
	assert_true(pt_run__stop_asked(&x->r));
	assert_int_equal(x->r.stop_sig, SIGTERM);
	assert_true(pending(SIGINT));
	assert_int_equal(count(said(x), "SIGTERM while attaching: stopping"), 1);
	assert_int_equal(count(said(x), "SIGINT"), 0);
}

/* SIGINT (Ctrl-C): the same, said as SIGINT; nothing pending, nothing
 * asked. */
static void test_stop_sigint(void **state)
{
	struct fx *x = *state;

	open_plain(x);
	stop_begin(x);
	assert_false(pt_run__stop_asked(&x->r));
	raise(SIGINT);
	assert_true(pt_run__stop_asked(&x->r));
	assert_int_equal(x->r.stop_sig, SIGINT);
	assert_false(pending(SIGINT));
	assert_true(pt_run__stop_asked(&x->r));
	assert_int_equal(count(said(x), "SIGINT while attaching: stopping"), 1);
}

int main(int argc, char **argv)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_open_live),	 T(test_ranks),
		T(test_open_dead),	 T(test_open_nothing_to_trace),
		T(test_open_no_slot),	 T(test_end_exited),
		T(test_end_exec),	 T(test_children_at_open),
		T(test_children_settle), T(test_stop_sigterm),
		T(test_stop_sigint),
	};
#undef T

	/* a child of the tests, exec'ed with an environment of theirs */
	if (argc > 1 && !strcmp(argv[1], "--wait"))
		for (;;)
			pause();
	return cmocka_run_group_tests_name("procs", tests, NULL, NULL);
}
