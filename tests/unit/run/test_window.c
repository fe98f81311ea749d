// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/window.c: --interval with a fake clock. A run opened by pt_run__open
 * on a child of this test that waits (no BPF object), its output folder
 * opened by pt_run__open_output, its clock started at a chosen t0, is
 * ticked at chosen times (pt_run__window_tick's now): no window is
 * written before the interval has passed, one each time it has, numbered
 * from 1 (window-0001.json, ...); a window's document counts the calls
 * routed to the process (pt_run__on_rec, records as BPF writes them)
 * since the last window ended, not before, a step across its edges in
 * neither, and says its index, start, end and interval; after a stall
 * one window is written, not one per interval missed; only the last
 * PT_WINDOWS_KEPT are kept; with -p A,B each process has its own files,
 * named with its pid, and one that ended has no window after the one it
 * ended in; without --interval nothing is written. The final summary
 * (all the run's calls) needs the functions attached: tests/integration
 * test_windows.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "attach/resolve.h"
#include "bpf/proftrace.h"
#include "run/env.h"
#include "run/procs.h"
#include "run/records.h"
#include "run/report.h"
#include "run/run.h"
#include "run/steps.h"
#include "run/window.h"
#include "util/util.h"
#include "runfx.h"

#define MS 1000000ull
#define SEC 1000000000ull

/* What the targets file names in the child (this binary): noinline with
 * a body, so the symbols are there to resolve. */
RUNFX_VICTIM(win_victim_step);
RUNFX_VICTIM(win_victim_forward);

struct fx {
	struct run r;
	pid_t child, child2; /* child2: with several processes */
	char targets[64];
	char out[64];	      /* the output folder */
	uint64_t t0;	      /* the fake clock's start */
	uint32_t fstep, ffwd; /* their fids (PT_FID_MAKE) */
};

static int teardown(void **state)
{
	struct fx *x = *state;
	char path[sizeof(x->out) + 256 + 2];
	struct dirent *d;
	DIR *dir;

	pt_run__free(&x->r);
	runfx__reap(x->child);
	runfx__reap(x->child2);
	unlink(x->targets);
	dir = opendir(x->out);
	while (dir && (d = readdir(dir)))
		if (d->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", x->out, d->d_name);
			unlink(path);
		}
	if (dir)
		closedir(dir);
	rmdir(x->out);
	unsetenv("PT_WINDOWS_KEPT");
	free(x);
	return 0;
}

/* The fid of the function of that symbol in process 0, or UINT32_MAX. */
static uint32_t fid_of(struct run *r, const char *symbol)
{
	struct proc *p = r->procs.v[0];

	for (size_t i = 0; i < p->nfs; i++)
		if (!strcmp(pt_resolver__func(p->res, i)->symbol, symbol))
			return PT_FID_MAKE(p->idx, (uint32_t)i);
	return UINT32_MAX;
}

/* A run of a child (two: -p PID,PID) with --interval interval_s, its
 * output folder open and its clock started (as pt_run__attach starts it)
 * at x->t0: 100 s ago, so that every time the tests tick at is past. */
static int open_run(void **state, double interval_s, bool two)
{
	static const char text[] = "step native:exe:win_victim_step\n"
				   "bucket eng.fwd native:exe:win_victim_forward\n";
	struct fx *x = calloc(1, sizeof(*x));
	struct pt_env env = { 0 };
	uint64_t now = pt_now_ns(CLOCK_MONOTONIC);

	if (!x)
		return -1;
	snprintf(x->targets, sizeof(x->targets), "/tmp/pt-test-window-XXXXXX");
	snprintf(x->out, sizeof(x->out), "/tmp/pt-test-window-out-XXXXXX");
	if (runfx__targets(x->targets, text) || !mkdtemp(x->out))
		return -1;
	x->child = runfx__child();
	x->child2 = two ? runfx__child() : -1;
	if (x->child < 0 || (two && x->child2 < 0))
		return -1;
	env.pid = env.pids[0] = x->child;
	env.pids[1] = x->child2;
	env.npids = two ? 2 : 1;
	env.targets = x->targets;
	env.quiet = true;
	env.output = x->out;
	env.interval_s = interval_s;
	*state = x;
	if (pt_run__open(&x->r, &env) || pt_run__open_output(&x->r)) {
		teardown(state);
		return -1;
	}
	x->t0 = now > 200 * SEC ? now - 100 * SEC : now;
	x->r.t0_mono = x->t0;
	x->r.t0_unix = pt_now_ns(CLOCK_REALTIME) - (now - x->t0);
	x->fstep = fid_of(&x->r, "win_victim_step");
	x->ffwd = fid_of(&x->r, "win_victim_forward");
	return 0;
}

static int setup(void **state)
{
	return open_run(state, 1.0, false);
}

static int setup_none(void **state)
{
	return open_run(state, 0, false);
}

static int setup_two(void **state)
{
	return open_run(state, 1.0, true);
}

/* A record of the child's main thread, as BPF writes it: the entry
 * (at t0 + a) or the exit (t0 + b) of a call of fid at that depth of its
 * stack, routed by pt_run__on_rec. */
static void rec(struct fx *x, uint32_t type, uint32_t fid, uint16_t depth, uint64_t a, uint64_t b)
{
	struct pt_rec r = { .type = type,
			    .fid = fid,
			    .pid = (uint32_t)x->child,
			    .tid = (uint32_t)x->child,
			    .t_entry = x->t0 + a,
			    .t_exit = type == PT_REC_EXIT ? x->t0 + b : 0,
			    .depth = depth };

	assert_int_equal(pt_run__on_rec(&x->r, &r, sizeof(r)), 0);
}

/* A step from t0 + at, 9 ms long, a forward of 4 ms in it. */
static void step_enter(struct fx *x, uint64_t at)
{
	rec(x, PT_REC_ENTRY, x->fstep, 0, at, 0);
	rec(x, PT_REC_ENTRY, x->ffwd, 1, at + 2 * MS, 0);
	rec(x, PT_REC_EXIT, x->ffwd, 1, at + 2 * MS, at + 6 * MS);
}

static void step_exit(struct fx *x, uint64_t at)
{
	rec(x, PT_REC_EXIT, x->fstep, 0, at, at + 9 * MS);
}

/* n steps, one each 10 ms from t0 + at. */
static void steps(struct fx *x, int n, uint64_t at)
{
	for (int i = 0; i < n; i++) {
		step_enter(x, at + (uint64_t)i * 10 * MS);
		step_exit(x, at + (uint64_t)i * 10 * MS);
	}
}

/* The window files of process pid in the output folder (pid 0: of the
 * one process, window-NNNN.json; else window-NNNN-PID.json), as a bit set
 * of their indexes (NNNN < 64). */
static uint64_t windows_of(struct fx *x, int pid)
{
	uint64_t set = 0;
	struct dirent *d;
	DIR *dir = opendir(x->out);
	unsigned int i;
	char end[32], want[32];

	if (pid)
		snprintf(want, sizeof(want), "-%d.json", pid);
	else
		snprintf(want, sizeof(want), ".json");
	assert_non_null(dir);
	while ((d = readdir(dir)))
		if (!strncmp(d->d_name, "window", 6)) {
			assert_int_equal(sscanf(d->d_name, "window-%4u%31s", &i, end), 2);
			assert_true(i < 64);
			if (!strcmp(end, want))
				set |= 1ull << i;
		}
	closedir(dir);
	return set;
}

static uint64_t windows(struct fx *x)
{
	return windows_of(x, 0);
}

/* Window i's document (of process pid; 0: the one), the caller deletes
 * it. */
static cJSON *window_doc(struct fx *x, unsigned int i, int pid)
{
	char path[128], *text;
	size_t len;
	FILE *f;
	cJSON *doc;

	if (pid)
		snprintf(path, sizeof(path), "%s/window-%04u-%d.json", x->out, i, pid);
	else
		snprintf(path, sizeof(path), "%s/window-%04u.json", x->out, i);
	f = fopen(path, "r");
	assert_non_null(f);
	text = calloc(1, 1 << 20);
	assert_non_null(text);
	len = fread(text, 1, (1 << 20) - 1, f);
	fclose(f);
	assert_true(len > 0);
	doc = cJSON_Parse(text);
	free(text);
	assert_non_null(doc);
	return doc;
}

static double num(const cJSON *o, const char *a, const char *b)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);

	if (b)
		v = cJSON_GetObjectItemCaseSensitive(v, b);
	assert_true(cJSON_IsNumber(v));
	return v->valuedouble;
}

/* The calls of the entry of array `what` (functions, buckets) whose key
 * is name; -1: none. */
static double calls_in(const cJSON *doc, const char *what, const char *key, const char *name)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, what))
	{
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, key);

		if (cJSON_IsString(n) && !strcmp(n->valuestring, name))
			return num(e, "calls", NULL);
	}
	return -1;
}

/* What window i's document says. */
struct win {
	int index;
	double start_s, end_s, interval_s, duration_s;
	double steps, incomplete, step_calls, fwd_calls;
};

static struct win window_of(struct fx *x, unsigned int i, int pid)
{
	cJSON *doc = window_doc(x, i, pid);
	struct win w = {
		.index = (int)num(doc, "window", "index"),
		.start_s = num(doc, "window", "start_s"),
		.end_s = num(doc, "window", "end_s"),
		.interval_s = num(doc, "window", "interval_s"),
		.duration_s = num(doc, "meta", "duration_s"),
		.steps = num(doc, "stats", "steps"),
		.incomplete = num(doc, "stats", "incomplete_steps"),
		.step_calls = calls_in(doc, "functions", "symbol", "win_victim_step"),
		.fwd_calls = calls_in(doc, "buckets", "name", "eng.fwd"),
	};

	cJSON_Delete(doc);
	return w;
}

static struct win window(struct fx *x, unsigned int i)
{
	return window_of(x, i, 0);
}

/* Window i: its index, times (s from the clock's start) and steps, each
 * with its forward, none cut by its edges. */
static void check_window(struct fx *x, unsigned int i, double start_s, double end_s, double nsteps)
{
	struct win w = window(x, i);

	assert_int_equal(w.index, (int)i);
	assert_true(w.start_s == start_s);
	assert_true(w.end_s == end_s);
	assert_true(w.interval_s == 1.0);
	assert_true(w.duration_s == end_s - start_s);
	assert_true(w.steps == nsteps);
	assert_true(w.step_calls == nsteps);
	assert_true(w.fwd_calls == nsteps);
	assert_true(w.incomplete == 0);
}

static void test_windows_when_due(void **state)
{
	struct fx *x = *state;

	assert_true(x->fstep != UINT32_MAX && x->ffwd != UINT32_MAX);
	pt_run__window_tick(&x->r, x->t0);
	steps(x, 3, 100 * MS);
	pt_run__window_tick(&x->r, x->t0 + 999 * MS);
	/* not before the interval has passed */
	assert_int_equal(windows(x), 0);
	assert_int_equal(x->r.nwindows, 0);
	pt_run__window_tick(&x->r, x->t0 + SEC);
	assert_int_equal(windows(x), 1ull << 1);
	check_window(x, 1, 0, 1, 3);
	/* the next window counts its own calls only */
	steps(x, 2, 1200 * MS);
	pt_run__window_tick(&x->r, x->t0 + 1500 * MS);
	assert_int_equal(windows(x), 1ull << 1);
	pt_run__window_tick(&x->r, x->t0 + 2 * SEC + 1);
	assert_int_equal(windows(x), 1ull << 1 | 1ull << 2);
	check_window(x, 2, 1, 2, 2);
	/* a window without a call is written too */
	pt_run__window_tick(&x->r, x->t0 + 3 * SEC);
	check_window(x, 3, 2, 3, 0);
	assert_int_equal(x->r.nwindows, 3);
}

/* A step across a window's end is a step of neither window. */
static void test_step_across_the_edge(void **state)
{
	struct fx *x = *state;
	struct win w;

	steps(x, 2, 100 * MS);
	step_enter(x, 995 * MS);
	pt_run__window_tick(&x->r, x->t0 + SEC);
	step_exit(x, 995 * MS);
	steps(x, 1, 1100 * MS);
	pt_run__window_tick(&x->r, x->t0 + 2 * SEC);
	/* the first: begun, not ended; its forward (ended) not a bucket
	 * call of a step either */
	w = window(x, 1);
	assert_true(w.steps == 2 && w.fwd_calls == 2 && w.step_calls == 2);
	assert_true(w.incomplete == 1);
	/* the second: its end, without a beginning; the function's call
	 * is timed (its exit record has both times), the step is not */
	w = window(x, 2);
	assert_true(w.steps == 1 && w.fwd_calls == 1);
	assert_true(w.incomplete == 1);
	assert_true(w.step_calls == 2);
}

/* The loop stalled 4.5 s: one window, then the next a whole interval
 * after the stall. */
static void test_stall_one_window(void **state)
{
	struct fx *x = *state;

	pt_run__window_tick(&x->r, x->t0 + SEC);
	steps(x, 4, 1100 * MS);
	pt_run__window_tick(&x->r, x->t0 + 5500 * MS);
	assert_int_equal(windows(x), 1ull << 1 | 1ull << 2);
	check_window(x, 2, 1, 2, 4);
	pt_run__window_tick(&x->r, x->t0 + 6 * SEC);
	assert_int_equal(windows(x), 1ull << 1 | 1ull << 2);
	steps(x, 1, 5600 * MS);
	pt_run__window_tick(&x->r, x->t0 + 6500 * MS);
	assert_int_equal(windows(x), 1ull << 1 | 1ull << 2 | 1ull << 3);
	check_window(x, 3, 5.5, 6.5, 1);
}

/* PT_WINDOWS_KEPT=2: the last two only. */
static void test_last_kept(void **state)
{
	struct fx *x = *state;

	setenv("PT_WINDOWS_KEPT", "2", 1);
	for (unsigned int i = 1; i <= 5; i++)
		pt_run__window_tick(&x->r, x->t0 + i * SEC);
	assert_int_equal(windows(x), 1ull << 4 | 1ull << 5);
	assert_int_equal(x->r.nwindows, 5);
}

/* -p A,B: a file per process and window, named with its pid, each
 * counting its own process's calls; a process that ended has the window
 * it ended in written, and no more. */
static void test_several_processes(void **state)
{
	struct fx *x = *state;
	int a = x->child, b = x->child2;
	struct proc *pb = x->r.procs.v[1];

	assert_int_equal(x->r.procs.n, 2);
	assert_int_equal(pb->tracee.pid, b);
	steps(x, 3, 100 * MS); /* A's */
	pt_run__window_tick(&x->r, x->t0 + SEC);
	assert_int_equal(windows_of(x, a), 1ull << 1);
	assert_int_equal(windows_of(x, b), 1ull << 1);
	assert_int_equal(windows(x), 0); /* no file without a pid */
	assert_true(window_of(x, 1, a).steps == 3);
	assert_true(window_of(x, 1, b).steps == 0);
	assert_int_equal(window_of(x, 1, b).index, 1);
	/* B exits in window 2 */
	runfx__reap(b);
	x->child2 = -1;
	pt_run__end_proc(pb, "exited");
	pt_run__window_tick(&x->r, x->t0 + 2 * SEC);
	assert_int_equal(windows_of(x, b), 1ull << 1 | 1ull << 2);
	pt_run__window_tick(&x->r, x->t0 + 3 * SEC);
	assert_int_equal(windows_of(x, a), 1ull << 1 | 1ull << 2 | 1ull << 3);
	assert_int_equal(windows_of(x, b), 1ull << 1 | 1ull << 2);
	assert_null(pb->window_view);
}

/* No --interval: no window view, no window, ever. */
static void test_no_interval(void **state)
{
	struct fx *x = *state;

	assert_null(x->r.procs.v[0]->window_view);
	steps(x, 2, 100 * MS);
	for (unsigned int i = 1; i <= 3; i++)
		pt_run__window_tick(&x->r, x->t0 + i * SEC);
	assert_int_equal(windows(x), 0);
	assert_int_equal(x->r.nwindows, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_windows_when_due, setup, teardown),
		cmocka_unit_test_setup_teardown(test_step_across_the_edge, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stall_one_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_last_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_several_processes, setup_two, teardown),
		cmocka_unit_test_setup_teardown(test_no_interval, setup_none, teardown),
	};

	return cmocka_run_group_tests_name("window", tests, NULL, NULL);
}
