// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/records.c: every probe record goes to the process it is from and
 * the part that owns it, and no further: calls to that process's
 * aggregator and the merged one (under the merged fid), records of a
 * process that is not traced, or of an image it exec'ed away from, to
 * nothing; fork, exec and dlopen records to the process chores.
 *
 * The run is made as a run makes it: pt_run__open on two children of
 * this test (waiting; -p PID,PID), which resolves the targets file's
 * native:exe: probes against them (this binary), adds them to the
 * process table and makes the merged view; each function is declared as
 * pt_run__attach_new declares it (pt_run__grow_fstate,
 * pt_run__declare_func), without BPF. The records are built here.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "aggregate/agg.h"
#include "attach/resolve.h"
#include "bpf/proftrace.h"
#include "run/env.h"
#include "run/run.h"
#include "run/funcs.h"
#include "run/procstate.h"
#include "run/records.h"
#include "run/steps.h"
#include "runfx.h"

#define MS 1000000ull

/* What the targets file names in the children (this binary): noinline
 * with a body, so the symbols are there to resolve. */
RUNFX_VICTIM(records_step);
RUNFX_VICTIM(records_forward);

static const char conf[] = "step   native:exe:records_step\n"
			   "bucket engine.forward native:exe:records_forward\n";

struct fx {
	struct run r;
	bool opened; /* pt_run__open was called: pt_run__free frees it */
	char path[32];
	pid_t child[2];
	struct proc *p[2];
	uint32_t pid[2];
	/* each process's local fids, and the merged view's */
	uint32_t step[2], fwd[2];
	uint32_t mstep, mfwd;
};

/* The local fid of p's function sym; -1: none. */
static int fid_of(const struct proc *p, const char *sym)
{
	for (size_t i = 0; i < pt_resolver__nfuncs(p->res); i++)
		if (!strcmp(pt_resolver__func(p->res, i)->symbol, sym))
			return (int)i;
	return -1;
}

/* p's functions declared as pt_run__attach_new declares them: its table
 * grown to the resolver's, then each one, in the order given. */
static int declare(struct proc *p, const int *fids, size_t n)
{
	if (pt_run__grow_fstate(p))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (fids[i] < 0 || pt_run__declare_func(p, (size_t)fids[i]))
			return -1;
	return 0;
}

static int teardown(void **state);

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	struct pt_env env = { 0 };

	if (!x)
		return -1;
	*state = x;
	strcpy(x->path, "/tmp/pt-test-records-XXXXXX");
	if (runfx__targets(x->path, conf))
		goto fail;
	for (int i = 0; i < 2; i++) {
		x->child[i] = runfx__child();
		if (x->child[i] < 0)
			goto fail;
		env.pids[env.npids++] = x->child[i];
	}
	env.pid = env.pids[0];
	env.targets = x->path;
	env.quiet = true;
	/* -p PID,PID: both opened and in the table, the merged view made */
	x->opened = true;
	if (pt_run__open(&x->r, &env) || x->r.procs.n != 2 || !x->r.multi)
		goto fail;
	for (int i = 0; i < 2; i++) {
		struct proc *p = x->r.procs.v[i];
		int s = fid_of(p, "records_step"), f = fid_of(p, "records_forward");

		if (s < 0 || f < 0)
			goto fail;
		x->p[i] = p;
		x->pid[i] = (uint32_t)x->child[i];
		x->step[i] = (uint32_t)s;
		x->fwd[i] = (uint32_t)f;
	}
	/*
	 * The merged view numbers a function when it is first declared, by
	 * any process. Process 0 declares its forward first (in a run: its
	 * library mapped before the step's, or found by an earlier rescan),
	 * so the merged fids are the other way round from the local ones
	 * (the resolver numbers the step first, in both processes), and a
	 * record routed by its local fid would land on the wrong function.
	 */
	{
		int order0[] = { (int)x->fwd[0], (int)x->step[0] };
		int order1[] = { (int)x->step[1], (int)x->fwd[1] };

		if (declare(x->p[0], order0, 2) || declare(x->p[1], order1, 2))
			goto fail;
	}
	x->mstep = x->p[0]->mfid[x->step[0]];
	x->mfwd = x->p[0]->mfid[x->fwd[0]];
	if (x->r.nmerged_funcs != 2 || x->mstep == x->step[0] || x->mfwd == x->fwd[0] ||
	    x->p[1]->mfid[x->step[1]] != x->mstep || x->p[1]->mfid[x->fwd[1]] != x->mfwd)
		goto fail;
	return 0;
fail:
	teardown(state);
	return -1;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	if (x->opened)
		pt_run__free(&x->r);
	for (int i = 0; i < 2; i++)
		runfx__reap(x->child[i]);
	if (x->path[0])
		unlink(x->path);
	free(x);
	return 0;
}

/* The fid BPF gives process i's local fid. */
static uint32_t fid(const struct fx *x, int i, uint32_t local)
{
	return PT_FID_MAKE(x->p[i]->idx, local);
}

static void call(struct run *r, uint32_t pid, uint32_t f, uint64_t t0, uint64_t t1)
{
	struct pt_rec e = { .type = PT_REC_ENTRY, .fid = f, .pid = pid, .tid = pid, .t_entry = t0 };
	struct pt_rec x = e;

	x.type = PT_REC_EXIT;
	x.t_exit = t1;
	assert_int_equal(pt_run__on_rec(r, &e, sizeof(e)), 0);
	assert_int_equal(pt_run__on_rec(r, &x, sizeof(x)), 0);
}

static uint64_t calls_of(const struct pt_agg *a, uint32_t fid)
{
	const struct pt_agg_func_stats *f = pt_agg__func(a, fid);

	return f ? f->dur.count : 0;
}

static void test_calls_to_their_process_and_merged(void **state)
{
	struct fx *x = *state;
	struct run *r = &x->r;

	/* process 0: a step */
	call(r, x->pid[0], fid(x, 0, x->step[0]), 10 * MS, 20 * MS);
	/* process 1: a forward inside a step */
	call(r, x->pid[1], fid(x, 1, x->fwd[1]), 11 * MS, 12 * MS);
	call(r, x->pid[1], fid(x, 1, x->step[1]), 10 * MS, 15 * MS);
	assert_int_equal(calls_of(x->p[0]->v.agg, x->step[0]), 1);
	assert_int_equal(calls_of(x->p[0]->v.agg, x->fwd[0]), 0);
	assert_int_equal(calls_of(x->p[1]->v.agg, x->fwd[1]), 1);
	assert_int_equal(calls_of(x->p[1]->v.agg, x->step[1]), 1);
	/* merged by function, not by local fid: two steps, one forward */
	assert_int_equal(calls_of(r->all.agg, x->mstep), 2);
	assert_int_equal(calls_of(r->all.agg, x->mfwd), 1);
	assert_int_equal(x->p[0]->events, 2);
	assert_int_equal(x->p[1]->events, 4);
	assert_int_equal(r->events, 6);
}

static void test_records_that_are_no_ones(void **state)
{
	struct fx *x = *state;
	struct run *r = &x->r;

	/* a pid nobody traces (this test's): counted as read, given to no one */
	call(r, (uint32_t)getpid(), fid(x, 0, x->step[0]), MS, 2 * MS);
	/* process 1's pid with process 0's fid: the image before an exec,
	 * or a child that inherited a breakpoint */
	call(r, x->pid[1], fid(x, 0, x->step[0]), MS, 2 * MS);
	/* a local fid beyond its functions */
	call(r, x->pid[0], fid(x, 0, 7), MS, 2 * MS);
	assert_int_equal(calls_of(x->p[0]->v.agg, x->step[0]), 0);
	assert_int_equal(calls_of(x->p[1]->v.agg, x->step[1]), 0);
	assert_int_equal(calls_of(r->all.agg, x->mstep), 0);
	assert_int_equal(r->events, 6);
	assert_int_equal(x->p[0]->events, 2);
	assert_int_equal(x->p[1]->events, 2);
	/* an ended process's last records go nowhere either */
	assert_int_equal(pt_proc__set_state(x->p[0], PT_PROC_ENDED), 0);
	call(r, x->pid[0], fid(x, 0, x->step[0]), MS, 2 * MS);
	assert_int_equal(calls_of(x->p[0]->v.agg, x->step[0]), 0);
}

static void test_process_events(void **state)
{
	struct fx *x = *state;
	struct run *r = &x->r;
	struct pt_rec fork = { .type = PT_REC_FORK, .pid = x->pid[0], .tid = x->pid[0] + 1 };
	struct pt_rec exec = { .type = PT_REC_EXEC, .pid = x->pid[1] };
	struct pt_rec dl = { .type = PT_REC_DLOPEN, .pid = x->pid[0] };

	assert_false(r->scan_children);
	assert_int_equal(pt_run__on_rec(r, &fork, sizeof(fork)), 0);
	assert_true(r->scan_children);
	/* an exec is ended from the event loop, not inside the ring callback */
	assert_int_equal(pt_run__on_rec(r, &exec, sizeof(exec)), 0);
	assert_int_equal(x->p[1]->state, PT_PROC_EXECED);
	assert_true(pt_proc__live(x->p[1]));
	assert_int_equal(x->p[0]->state, PT_PROC_FOUND);
	dl.t_entry = 5 * MS;
	assert_int_equal(pt_run__on_rec(r, &dl, sizeof(dl)), 0);
	assert_true(x->p[0]->rescan);
	assert_false(x->p[1]->rescan);
	/* the linker's first notification: where a library's window starts */
	assert_int_equal(x->p[0]->dl_ns, 5 * MS);
	dl.t_entry = 6 * MS;
	assert_int_equal(pt_run__on_rec(r, &dl, sizeof(dl)), 0);
	assert_int_equal(x->p[0]->dl_ns, 5 * MS);
}

/* A thread's exit frees what its process's figures and the merged ones
 * keep for it; a step it was in is incomplete in both. */
static void test_thread_exit(void **state)
{
	struct fx *x = *state;
	struct run *r = &x->r;
	uint32_t tid = x->pid[0] + 1;
	struct pt_rec in = { .type = PT_REC_ENTRY,
			     .fid = fid(x, 0, x->step[0]),
			     .pid = x->pid[0],
			     .tid = tid,
			     .t_entry = MS };
	struct pt_rec texit = {
		.type = PT_REC_TEXIT, .pid = x->pid[0], .tid = tid, .t_entry = 2 * MS
	};

	call(r, x->pid[0], fid(x, 0, x->step[0]), 10 * MS, 20 * MS); /* its main thread, lives on */
	assert_int_equal(pt_run__on_rec(r, &in, sizeof(in)), 0);
	assert_int_equal(pt_agg__health(x->p[0]->v.agg)->threads, 2);
	assert_int_equal(pt_run__on_rec(r, &texit, sizeof(texit)), 0);
	assert_int_equal(pt_agg__health(x->p[0]->v.agg)->threads_ended, 1);
	assert_int_equal(pt_agg__health(r->all.agg)->threads_ended, 1);
	assert_int_equal(pt_agg__steps(x->p[0]->v.agg)->incomplete, 1);
	assert_int_equal(pt_agg__steps(r->all.agg)->incomplete, 1);
	/* the thread that lives on is still followed */
	call(r, x->pid[0], fid(x, 0, x->step[0]), 30 * MS, 40 * MS);
	assert_int_equal(pt_agg__steps(x->p[0]->v.agg)->dur.count, 2);
}

/* A counted step of a process reaches its runs and skew steps, and the
 * merged view counts it too. */
static void test_steps(void **state)
{
	struct fx *x = *state;
	struct run *r = &x->r;

	call(r, x->pid[0], fid(x, 0, x->step[0]), 10 * MS, 20 * MS);
	call(r, x->pid[0], fid(x, 0, x->step[0]), 30 * MS, 40 * MS);
	pt_agg__finish(x->p[0]->v.agg);
	pt_agg__finish(r->all.agg);
	assert_int_equal(pt_agg__steps(x->p[0]->v.agg)->dur.count, 2);
	assert_int_equal(pt_agg__steps(r->all.agg)->dur.count, 2);
	assert_int_equal(x->p[0]->steps.n, 2);
	assert_int_equal(x->p[1]->steps.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_calls_to_their_process_and_merged, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_records_that_are_no_ones, setup, teardown),
		cmocka_unit_test_setup_teardown(test_process_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_thread_exit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_steps, setup, teardown),
	};

	return cmocka_run_group_tests_name("records", tests, NULL, NULL);
}
