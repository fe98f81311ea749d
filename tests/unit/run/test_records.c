// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/records.c: every probe record goes to the process it is from and
 * the part that owns it, and no further: calls to that process's
 * aggregator and the merged one (under the merged fid), records of a
 * process that is not traced, or of an image it exec'ed away from, to
 * nothing; fork, exec and dlopen records to the process chores.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "aggregate/agg.h"
#include "aggregate/skew.h"
#include "bpf/proftrace.h"
#include "config/config.h"
#include "run/run.h"
#include "run/procstate.h"
#include "run/proctable.h"
#include "run/view.h"
#include "run/records.h"

#define MS 1000000ull

struct fx {
	struct run r;
	struct proc *p[2];
};

static const char conf[] = "step   native:exe:engine_step\n"
			   "bucket engine.forward native:exe:engine_forward\n";

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	char err[256];
	FILE *f = fmemopen((void *)conf, sizeof(conf) - 1, "r");

	if (!x || !f || pt_config__parse(&x->r.cfg, f, "t.conf", err, sizeof(err)))
		return -1;
	fclose(f);
	x->r.multi = true;
	if (pt_run__new_view(&x->r, &x->r.all, pt_run__on_merged_step, &x->r))
		return -1;
	/* merged fids: step 0, forward 1 */
	if (pt_agg__set_func(x->r.all.agg, 0, true, 0) ||
	    pt_agg__set_func(x->r.all.agg, 1, false, 1))
		return -1;
	for (unsigned int i = 0; i < 2; i++) {
		struct proc *p = calloc(1, sizeof(*p));

		if (!p)
			return -1;
		p->run = &x->r;
		p->idx = i;
		p->tracee.pid = 100 * (int)(i + 1);
		p->nfs = 2;
		p->fs = calloc(2, sizeof(*p->fs));
		p->mfid = calloc(2, sizeof(*p->mfid));
		if (!p->fs || !p->mfid || pt_run__new_view(&x->r, &p->v, pt_run__on_step, p))
			return -1;
		/* process 1 declared its functions the other way round */
		p->mfid[0] = i ? 1 : 0;
		p->mfid[1] = i ? 0 : 1;
		if (pt_agg__set_func(p->v.agg, 0, !i, i ? 1 : 0) ||
		    pt_agg__set_func(p->v.agg, 1, i, i ? 0 : 1))
			return -1;
		x->p[i] = p;
		if (pt_proctable__add(&x->r.procs, p))
			return -1;
	}
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	for (unsigned int i = 0; i < 2; i++) {
		free(x->p[i]->fs);
		free(x->p[i]->mfid);
		pt_run__free_view(&x->p[i]->v);
		pt_skew__free(&x->p[i]->steps);
		free(x->p[i]);
	}
	pt_proctable__free(&x->r.procs);
	pt_run__free_view(&x->r.all);
	pt_config__free(&x->r.cfg);
	free(x);
	return 0;
}

static void call(struct run *r, uint32_t pid, uint32_t fid, uint64_t t0, uint64_t t1)
{
	struct pt_rec e = {
		.type = PT_REC_ENTRY, .fid = fid, .pid = pid, .tid = pid, .t_entry = t0
	};
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

	/* process 0: a step with a forward inside */
	call(r, 100, PT_FID_MAKE(0, 0), 10 * MS, 20 * MS);
	/* process 1: its fid 1 is the step, fid 0 the forward */
	call(r, 200, PT_FID_MAKE(1, 0), 11 * MS, 12 * MS);
	call(r, 200, PT_FID_MAKE(1, 1), 10 * MS, 15 * MS);
	assert_int_equal(calls_of(x->p[0]->v.agg, 0), 1);
	assert_int_equal(calls_of(x->p[0]->v.agg, 1), 0);
	assert_int_equal(calls_of(x->p[1]->v.agg, 0), 1);
	assert_int_equal(calls_of(x->p[1]->v.agg, 1), 1);
	/* merged by function, not by local fid: two steps, one forward */
	assert_int_equal(calls_of(r->all.agg, 0), 2);
	assert_int_equal(calls_of(r->all.agg, 1), 1);
	assert_int_equal(x->p[0]->events, 2);
	assert_int_equal(x->p[1]->events, 4);
	assert_int_equal(r->events, 6);
}

static void test_records_that_are_no_ones(void **state)
{
	struct fx *x = *state;
	struct run *r = &x->r;

	/* a pid nobody traces: counted as read, given to no one */
	call(r, 300, PT_FID_MAKE(0, 0), MS, 2 * MS);
	/* pid 200 with process 0's fid: the image before an exec, or a
	 * child that inherited a breakpoint */
	call(r, 200, PT_FID_MAKE(0, 0), MS, 2 * MS);
	/* a local fid beyond its functions */
	call(r, 100, PT_FID_MAKE(0, 7), MS, 2 * MS);
	assert_int_equal(calls_of(x->p[0]->v.agg, 0), 0);
	assert_int_equal(calls_of(x->p[1]->v.agg, 0), 0);
	assert_int_equal(calls_of(r->all.agg, 0), 0);
	assert_int_equal(r->events, 6);
	assert_int_equal(x->p[0]->events, 2);
	assert_int_equal(x->p[1]->events, 2);
	/* an ended process's last records go nowhere either */
	assert_int_equal(pt_proc__set_state(x->p[0], PT_PROC_ENDED), 0);
	call(r, 100, PT_FID_MAKE(0, 0), MS, 2 * MS);
	assert_int_equal(calls_of(x->p[0]->v.agg, 0), 0);
}

static void test_process_events(void **state)
{
	struct fx *x = *state;
	struct run *r = &x->r;
	struct pt_rec fork = { .type = PT_REC_FORK, .pid = 100, .tid = 101 };
	struct pt_rec exec = { .type = PT_REC_EXEC, .pid = 200 };
	struct pt_rec dl = { .type = PT_REC_DLOPEN, .pid = 100 };

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
	struct pt_rec in = { .type = PT_REC_ENTRY,
			     .fid = PT_FID_MAKE(0, 0),
			     .pid = 100,
			     .tid = 101,
			     .t_entry = MS };
	struct pt_rec texit = { .type = PT_REC_TEXIT, .pid = 100, .tid = 101, .t_entry = 2 * MS };

	call(r, 100, PT_FID_MAKE(0, 0), 10 * MS, 20 * MS); /* tid 100, lives on */
	assert_int_equal(pt_run__on_rec(r, &in, sizeof(in)), 0);
	assert_int_equal(pt_agg__health(x->p[0]->v.agg)->threads, 2);
	assert_int_equal(pt_run__on_rec(r, &texit, sizeof(texit)), 0);
	assert_int_equal(pt_agg__health(x->p[0]->v.agg)->threads_ended, 1);
	assert_int_equal(pt_agg__health(r->all.agg)->threads_ended, 1);
	assert_int_equal(pt_agg__steps(x->p[0]->v.agg)->incomplete, 1);
	assert_int_equal(pt_agg__steps(r->all.agg)->incomplete, 1);
	/* the thread that lives on is still followed */
	call(r, 100, PT_FID_MAKE(0, 0), 30 * MS, 40 * MS);
	assert_int_equal(pt_agg__steps(x->p[0]->v.agg)->dur.count, 2);
}

/* A counted step of a process reaches its runs and skew steps, and the
 * merged view counts it too. */
static void test_steps(void **state)
{
	struct fx *x = *state;
	struct run *r = &x->r;

	call(r, 100, PT_FID_MAKE(0, 0), 10 * MS, 20 * MS);
	call(r, 100, PT_FID_MAKE(0, 0), 30 * MS, 40 * MS);
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
