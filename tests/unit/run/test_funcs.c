// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/funcs.c: the function table of processes opened by
 * pt_run__open_proc (children of this test, waiting) whose targets file
 * names functions of this binary. pt_run__grow_fstate gives room for
 * every function the resolver has, new ones not attached and in no
 * merged view; pt_run__declare_func makes each known to its process's
 * aggregator with its step and bucket roles and, with several processes
 * (opened as the run opens them, pt_run__open), to the merged view: the
 * same probe, object and symbol in two processes is one merged function,
 * whatever the order they are declared in, and one resolved in the
 * second process only (a library only it loaded) a new one;
 * pt_run__mark_attached marks a function attached with the time, in the
 * merged view once; pt_run__set_val_spec does nothing without a BPF
 * object; pt_run__sync_py_funcs takes the py: functions found at run
 * time into the table, declared and attached.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "aggregate/agg.h"
#include "aggregate/stacks.h"
#include "attach/maps.h"
#include "attach/resolve.h"
#include "config/config.h"
#include "run/run.h"
#include "run/funcs.h"
#include "run/procs.h"
#include "run/steps.h"
#include "runfx.h"

#define MS 1000000ull

/* What the targets files name in the children (this binary): noinline
 * with a body, so the symbols are there to resolve. */
RUNFX_VICTIM(funcs_step);
RUNFX_VICTIM(funcs_fwd);
RUNFX_VICTIM(funcs_bwd);

/* a step with values, two buckets, one in a library the child loads
 * later, and a py: bucket (no CPython here: its functions come through
 * pt_resolver__add_py, as a PYCODE record brings them) */
static const char conf_one[] = "step native:exe:funcs_step tokens=arg0\n"
			       "bucket a.fwd native:exe:funcs_fwd\n"
			       "bucket a.bwd native:exe:funcs_bwd\n"
			       "bucket b.lib native:libelf_fixture.so*:fx_mul\n"
			       "bucket a.py py:funcsmod::work\n";

/* several processes: the library only the second one loads */
static const char conf_multi[] = "step native:exe:funcs_step\n"
				 "bucket a.fwd native:exe:funcs_fwd\n"
				 "bucket b.lib native:libelf_fixture.so*:fx_mul\n";

/* the fixture library (make unit's PT_FIXTURES), absolute */
static void fixture_lib(char *out)
{
	const char *dir = getenv("PT_FIXTURES");
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/libelf_fixture.so", dir ? dir : ".output/fixtures");
	assert_non_null(realpath(p, out));
}

/* A child that waits until killed and loads lib when told (one byte on
 * *go); -1 when fork fails. */
static pid_t child_loading(const char *lib, int *go)
{
	int in[2], ack[2];
	pid_t pid;
	char c = 0;

	if (pipe(in) || pipe(ack))
		return -1;
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* not left behind by a crash */
		close(in[1]);
		close(ack[0]);
		if (read(in[0], &c, 1) == 1) {
			c = dlopen(lib, RTLD_NOW) ? 'y' : 'n';
			if (write(ack[1], &c, 1) != 1)
				_exit(1);
		}
		for (;;)
			pause();
	}
	close(in[0]);
	close(ack[1]);
	in[0] = ack[0];
	if (pid < 0) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	go[0] = in[0]; /* its answer */
	go[1] = in[1]; /* the word */
	return pid;
}

/* The child of child_loading has loaded its library: true once mapped. */
static bool child_load(int *go)
{
	char c = 'g';

	return write(go[1], &c, 1) == 1 && read(go[0], &c, 1) == 1 && c == 'y';
}

/* A child that has loaded lib (NULL: none) and waits until killed; -1
 * when it could not. */
static pid_t child_with(const char *lib)
{
	int go[2];
	pid_t pid = child_loading(lib, go);

	if (pid > 0 && lib && !child_load(go)) {
		runfx__reap(pid);
		pid = -1;
	}
	if (pid > 0) {
		close(go[0]);
		close(go[1]);
	}
	return pid;
}

/* A targets file with text in it: its path (static), or NULL. */
static const char *targets(const char *text)
{
	static char path[64];

	snprintf(path, sizeof(path), "/tmp/pt-test-funcs-XXXXXX");
	return runfx__targets(path, text) ? NULL : path;
}

/* p's local fid of symbol, -1: not resolved in p */
static int fid_of(const struct proc *p, const char *symbol)
{
	for (size_t i = 0; i < pt_resolver__nfuncs(p->res); i++)
		if (!strcmp(pt_resolver__func(p->res, i)->symbol, symbol))
			return (int)i;
	return -1;
}

static void rec(struct pt_agg *a, uint32_t type, uint32_t fid, uint16_t depth, uint64_t t0,
		uint64_t t1)
{
	struct pt_rec r = {
		.type = type, .fid = fid, .pid = 7, .tid = 7, .t_entry = t0, .depth = depth
	};

	r.t_exit = type == PT_REC_EXIT ? t1 : 0;
	pt_agg__record(a, &r);
}

/* A step call of fid step on one thread, from 10 to 20 ms, with one call
 * of fid inner inside it, from 12 to 15 ms, into aggregator a (in the
 * thread's time order, as the ring buffer keeps it). */
static void step_with(struct pt_agg *a, uint32_t step, uint32_t inner)
{
	rec(a, PT_REC_ENTRY, step, 0, 10 * MS, 0);
	rec(a, PT_REC_ENTRY, inner, 1, 12 * MS, 0);
	rec(a, PT_REC_EXIT, inner, 1, 12 * MS, 15 * MS);
	rec(a, PT_REC_EXIT, step, 0, 10 * MS, 20 * MS);
}

/* ---- one process ---- */

struct fx {
	struct run r;
	pid_t child;
	int go[2]; /* child_loading's */
	struct proc *p;
};

static int setup_one(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	char err[512], lib[PATH_MAX];

	if (!x || runfx__config(&x->r, conf_one))
		return -1;
	fixture_lib(lib);
	x->child = child_loading(lib, x->go);
	*state = x;
	if (x->child < 0 || pt_run__open_proc(&x->r, x->child, true, &x->p, err, sizeof(err))) {
		fprintf(stderr, "open_proc: %s\n", err);
		runfx__reap(x->child); /* no teardown after a failed setup */
		return -1;
	}
	return 0;
}

static int teardown_one(void **state)
{
	struct fx *x = *state;

	pt_run__free_proc(x->p);
	runfx__reap(x->child);
	close(x->go[0]);
	close(x->go[1]);
	pt_proctable__free(&x->r.procs);
	pt_config__free(&x->r.cfg);
	free(x);
	return 0;
}

/* The child loads the library: its resolver finds fx_mul in it (as the
 * run's rescan does); returns its fid. */
static int load_library(struct fx *x)
{
	struct pt_maps maps = { 0 };
	char err[512];

	assert_true(child_load(x->go));
	assert_int_equal(pt_maps__read_pid(&maps, x->child), 0);
	assert_int_equal(pt_resolver__update(x->p->res, &maps, false, err, sizeof(err)), 1);
	pt_maps__free(&maps);
	return fid_of(x->p, "fx_mul");
}

/* Opened: a row per resolved function, none attached, declared or
 * merged. A library loaded later: its function gets a row of its own
 * when the table grows, and the rows there keep their state. */
static void test_grow_room_for_every_function(void **state)
{
	struct fx *x = *state;
	struct proc *p = x->p;
	int lib;

	assert_int_equal(pt_resolver__nfuncs(p->res), 3);
	assert_int_equal(p->nfs, 3);
	for (size_t i = 0; i < p->nfs; i++) {
		assert_false(p->fs[i].attached);
		assert_null(p->fs[i].reason);
		assert_int_equal(p->mfid[i], PT_SFID_NONE);
		assert_null(pt_agg__func(p->v.agg, (uint32_t)i));
	}
	assert_int_equal(pt_run__grow_fstate(p), 0); /* nothing new */
	assert_int_equal(p->nfs, 3);
	pt_run__mark_attached(p, 1);
	lib = load_library(x);
	assert_int_equal(lib, 3);
	assert_int_equal(p->nfs, 3); /* until it grows */
	assert_int_equal(pt_run__grow_fstate(p), 0);
	assert_int_equal(p->nfs, 4);
	assert_false(p->fs[lib].attached);
	assert_null(p->fs[lib].reason);
	assert_int_equal(p->mfid[lib], PT_SFID_NONE);
	assert_true(p->fs[1].attached);
	assert_false(p->fs[0].attached);
}

/* Declared: the process's aggregator knows each function in its roles
 * (a step, a bucket inside it); one process has no merged view. */
static void test_declare_one_process(void **state)
{
	struct fx *x = *state;
	struct proc *p = x->p;
	int step = fid_of(p, "funcs_step"), fwd = fid_of(p, "funcs_fwd"),
	    bwd = fid_of(p, "funcs_bwd");

	assert_true(step >= 0 && fwd >= 0 && bwd >= 0);
	for (size_t i = 0; i < p->nfs; i++)
		assert_int_equal(pt_run__declare_func(p, i), 0);
	assert_int_equal(pt_agg__nfuncs(p->v.agg), 3);
	for (size_t i = 0; i < p->nfs; i++) {
		assert_non_null(pt_agg__func(p->v.agg, (uint32_t)i));
		assert_int_equal(p->mfid[i], PT_SFID_NONE);
	}
	assert_int_equal(x->r.nmerged_funcs, 0);
	/* a step, funcs_fwd inside it: a step counted, time in a.fwd only */
	step_with(p->v.agg, (uint32_t)step, (uint32_t)fwd);
	assert_int_equal(pt_agg__steps(p->v.agg)->dur.count, 1);
	assert_int_equal(pt_agg__bucket(p->v.agg, 0)->calls, 1);
	assert_int_equal(pt_agg__bucket(p->v.agg, 0)->total_ns, 3 * MS);
	assert_int_equal(pt_agg__bucket(p->v.agg, 1)->calls, 0);
	assert_int_equal(pt_agg__func(p->v.agg, (uint32_t)fwd)->dur.count, 1);
}

/* Attached: marked with the time since the run's start, the others not. */
static void test_mark_attached_with_time(void **state)
{
	struct fx *x = *state;
	struct proc *p = x->p;
	int fwd = fid_of(p, "funcs_fwd");
	double t0, t1;

	for (size_t i = 0; i < p->nfs; i++)
		assert_int_equal(pt_run__declare_func(p, i), 0);
	t0 = since_start_s(&x->r);
	pt_run__mark_attached(p, (size_t)fwd);
	t1 = since_start_s(&x->r);
	assert_true(p->fs[fwd].attached);
	assert_true(p->fs[fwd].at_s >= t0 && p->fs[fwd].at_s <= t1);
	for (size_t i = 0; i < p->nfs; i++)
		if (i != (size_t)fwd)
			assert_false(p->fs[i].attached);
}

/* A function with values, and no BPF object to tell: nothing happens. */
static void test_val_spec_without_bpf(void **state)
{
	struct fx *x = *state;
	struct proc *p = x->p;
	const struct pt_func *f = pt_resolver__func(p->res, (size_t)fid_of(p, "funcs_step"));

	assert_true(f->vals_spec >= 0);
	assert_null(x->r.att);
	pt_run__set_val_spec(p, f);
	assert_false(p->fs[f->fid].attached);
}

/* A py: function found at run time: a new row, declared in its role and
 * attached; a native one found with it (a library loaded) is left to
 * pt_run__attach_new. */
static void test_sync_py_funcs(void **state)
{
	struct fx *x = *state;
	struct proc *p = x->p;
	size_t spec = 4; /* the py: line */
	int lib, fid;

	assert_int_equal(x->r.cfg.probes[spec].kind, PT_PROBE_PY);
	lib = load_library(x);
	fid = pt_resolver__add_py(p->res, &spec, 1, "/srv/funcsmod.py", "work", 10);
	assert_int_equal(lib, 3);
	assert_int_equal(fid, 4);
	assert_int_equal(p->nfs, 3); /* not grown yet */
	pt_run__mark_attached(p, 0);
	pt_run__sync_py_funcs(p);
	assert_int_equal(p->nfs, 5);
	assert_true(p->fs[fid].attached);
	assert_int_equal(p->mfid[fid], PT_SFID_NONE);
	assert_non_null(pt_agg__func(p->v.agg, (uint32_t)fid));
	/* the native rows: neither declared nor marked by it */
	assert_false(p->fs[lib].attached);
	assert_null(pt_agg__func(p->v.agg, (uint32_t)lib));
	assert_null(pt_agg__func(p->v.agg, 1));
	assert_true(p->fs[0].attached); /* the rows there stay */
	assert_false(p->fs[1].attached);
	/* a bucket (a.py, the fourth), not a step */
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(pt_run__declare_func(p, i), 0);
	step_with(p->v.agg, (uint32_t)fid_of(p, "funcs_step"), (uint32_t)fid);
	assert_int_equal(pt_agg__steps(p->v.agg)->dur.count, 1);
	assert_int_equal(pt_agg__bucket(p->v.agg, 3)->calls, 1);
	/* nothing new: nothing changes */
	pt_run__sync_py_funcs(p);
	assert_int_equal(p->nfs, 5);
}

/* ---- two processes, opened as the run opens them ---- */

struct mfx {
	struct run r;
	pid_t child[2];
	const char *path;
	int step[2], fwd[2], lib[2]; /* local fids, -1: not resolved */
};

static int setup_multi(void **state)
{
	struct mfx *x = calloc(1, sizeof(*x));
	struct pt_env env = { 0 };
	char lib[PATH_MAX];

	if (!x)
		return -1;
	fixture_lib(lib);
	x->path = targets(conf_multi);
	x->child[0] = child_with(NULL);
	x->child[1] = child_with(lib);
	if (!x->path || x->child[0] < 0 || x->child[1] < 0)
		goto fail;
	env.pid = env.pids[0] = x->child[0];
	env.pids[1] = x->child[1];
	env.npids = 2;
	env.targets = x->path;
	env.quiet = true;
	if (pt_run__open(&x->r, &env) || x->r.procs.n != 2) {
		pt_run__free(&x->r);
		goto fail;
	}
	for (int i = 0; i < 2; i++) {
		x->step[i] = fid_of(x->r.procs.v[i], "funcs_step");
		x->fwd[i] = fid_of(x->r.procs.v[i], "funcs_fwd");
		x->lib[i] = fid_of(x->r.procs.v[i], "fx_mul");
	}
	*state = x;
	return 0;
fail: /* no teardown after a failed setup */
	runfx__reap(x->child[0]);
	runfx__reap(x->child[1]);
	if (x->path)
		unlink(x->path);
	return -1;
}

static int teardown_multi(void **state)
{
	struct mfx *x = *state;

	pt_run__free(&x->r);
	runfx__reap(x->child[0]);
	runfx__reap(x->child[1]);
	unlink(x->path);
	free(x);
	return 0;
}

static void declare_all(struct proc *p)
{
	for (size_t i = 0; i < p->nfs; i++)
		assert_int_equal(pt_run__declare_func(p, i), 0);
}

/* The merged function of mfid m is symbol, first resolved by p. */
static void merged_is(const struct run *r, uint32_t m, const struct proc *p, const char *symbol)
{
	assert_true(m < r->nmerged_funcs);
	assert_ptr_equal(r->merged_funcs[m].p, p);
	assert_string_equal(pt_resolver__func(p->res, (size_t)r->merged_funcs[m].fid)->symbol,
			    symbol);
	assert_non_null(pt_agg__func(r->all.agg, m));
}

/* The same function in both is one merged function; the library's, in
 * the second only, a new one; each process's aggregator has its own. */
static void test_declare_merges_by_function(void **state)
{
	struct mfx *x = *state;
	struct run *r = &x->r;
	struct proc *a = r->procs.v[0], *b = r->procs.v[1];

	assert_true(r->multi);
	assert_int_equal(a->nfs, 2);
	assert_int_equal(b->nfs, 3);
	assert_int_equal(x->lib[0], -1);
	assert_true(x->step[1] >= 0 && x->fwd[1] >= 0 && x->lib[1] >= 0);
	declare_all(a);
	declare_all(b);
	assert_int_equal(r->nmerged_funcs, 3);
	assert_int_equal(pt_agg__nfuncs(r->all.agg), 3);
	assert_int_equal(a->mfid[x->step[0]], b->mfid[x->step[1]]);
	assert_int_equal(a->mfid[x->fwd[0]], b->mfid[x->fwd[1]]);
	assert_int_not_equal(a->mfid[x->step[0]], a->mfid[x->fwd[0]]);
	merged_is(r, a->mfid[x->step[0]], a, "funcs_step");
	merged_is(r, a->mfid[x->fwd[0]], a, "funcs_fwd");
	assert_int_equal(b->mfid[x->lib[1]], 2);
	merged_is(r, 2, b, "fx_mul");
	assert_int_equal(pt_agg__nfuncs(a->v.agg), 2);
	assert_int_equal(pt_agg__nfuncs(b->v.agg), 3);
	/* the merged view has the roles: a step with the library's bucket */
	step_with(r->all.agg, a->mfid[x->step[0]], 2);
	assert_int_equal(pt_agg__steps(r->all.agg)->dur.count, 1);
	assert_int_equal(pt_agg__bucket(r->all.agg, 1)->total_ns, 3 * MS);
}

/* Declared the other way round: the merged fids follow the first
 * declaration, and still match by function. */
static void test_declare_order(void **state)
{
	struct mfx *x = *state;
	struct run *r = &x->r;
	struct proc *a = r->procs.v[0], *b = r->procs.v[1];

	assert_int_equal(pt_run__declare_func(b, (size_t)x->lib[1]), 0);
	assert_int_equal(b->mfid[x->lib[1]], 0);
	assert_int_equal(pt_run__declare_func(a, (size_t)x->fwd[0]), 0);
	assert_int_equal(a->mfid[x->fwd[0]], 1);
	declare_all(b);
	declare_all(a);
	assert_int_equal(r->nmerged_funcs, 3);
	assert_int_equal(b->mfid[x->fwd[1]], 1);
	assert_int_equal(a->mfid[x->step[0]], b->mfid[x->step[1]]);
	assert_int_equal(b->mfid[x->step[1]], 2);
	merged_is(r, 2, b, "funcs_step");
	merged_is(r, 1, a, "funcs_fwd");
}

/* Attached in each process: the merged function is marked once, at the
 * first process's time. */
static void test_mark_attached_merged(void **state)
{
	struct mfx *x = *state;
	struct run *r = &x->r;
	struct proc *a = r->procs.v[0], *b = r->procs.v[1];
	uint32_t m;

	declare_all(a);
	declare_all(b);
	m = a->mfid[x->step[0]];
	assert_false(r->merged_funcs[m].attached);
	pt_run__mark_attached(b, (size_t)x->step[1]);
	assert_true(b->fs[x->step[1]].attached);
	assert_false(a->fs[x->step[0]].attached);
	assert_true(r->merged_funcs[m].attached);
	assert_true(r->merged_funcs[m].at_s == b->fs[x->step[1]].at_s);
	usleep(2000);
	pt_run__mark_attached(a, (size_t)x->step[0]);
	assert_true(a->fs[x->step[0]].attached);
	assert_true(a->fs[x->step[0]].at_s > b->fs[x->step[1]].at_s);
	assert_true(r->merged_funcs[m].at_s == b->fs[x->step[1]].at_s);
	/* the others untouched */
	assert_false(r->merged_funcs[a->mfid[x->fwd[0]]].attached);
	assert_false(r->merged_funcs[b->mfid[x->lib[1]]].attached);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_grow_room_for_every_function, setup_one,
						teardown_one),
		cmocka_unit_test_setup_teardown(test_declare_one_process, setup_one, teardown_one),
		cmocka_unit_test_setup_teardown(test_mark_attached_with_time, setup_one,
						teardown_one),
		cmocka_unit_test_setup_teardown(test_val_spec_without_bpf, setup_one, teardown_one),
		cmocka_unit_test_setup_teardown(test_sync_py_funcs, setup_one, teardown_one),
		cmocka_unit_test_setup_teardown(test_declare_merges_by_function, setup_multi,
						teardown_multi),
		cmocka_unit_test_setup_teardown(test_declare_order, setup_multi, teardown_multi),
		cmocka_unit_test_setup_teardown(test_mark_attached_merged, setup_multi,
						teardown_multi),
	};

	return cmocka_run_group_tests_name("funcs", tests, NULL, NULL);
}
