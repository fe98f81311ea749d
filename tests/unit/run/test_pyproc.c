// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/pyproc.c: a process's Python part, on runs opened by pt_run__open
 * on live children of this test (pyfx.h: CPython that imported a module
 * and waits; tests/unit/run/runfx.h: a fork of this binary), no BPF
 * object (r->att and r->smp NULL, as before attaching).
 *
 * Opened on Debian's python3.11 (and pyenv's 3.12) with py: probes,
 * CPython is found (its version the one the interpreter printed, its
 * layout that minor's, its memory read through its pid); a
 * native-only targets file looks for it too (sampling wants its stacks)
 * but not with `set sample_hz 0`. A process without CPython has none:
 * no error without py: probes, an error naming the fix when strict with
 * py: probes ("remove the py: probes or attach to the Python process"),
 * "nothing to trace" when not strict. pt_run__py_start makes the code
 * objects' map once. Every Python call is seen (pt_run__py_exact) on
 * 3.10 (its evaluator runs per call: no trampoline check), not on 3.11,
 * and on 3.12 exactly when the perf trampoline is on (PYTHONPERFSUPPORT=1:
 * each pt_run__py_recheck counts a check, and one that saw it on). The
 * frame probe is wanted with `set python_mode evalframe` and py: probes
 * only; pt_run__py_probe does nothing when it is not wanted, nor
 * pt_run__py_sample without a sampler; pt_run__py_free (through
 * pt_run__free) frees what was set up without a crash (a leak shows in
 * `make asan`'s build of this test). The pyenv interpreters are skipped
 * where absent. Attaching the frame probe and the sampler needs BPF:
 * tests/integration.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "run/env.h"
#include "run/procs.h"
#include "run/pyproc.h"
#include "run/run.h"
#include "run/steps.h"
#include "pyfx.h"
#include "runfx.h"

/* What a native-only targets file names in a fork of this binary:
 * noinline with a body, so the symbol is there to resolve. */
RUNFX_VICTIM(pyproc_victim);

struct fx {
	struct run r;
	bool opened;
	struct pyfx py;
	pid_t other; /* a child that runs no Python, -1: none */
	char path[64];
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	if (!x)
		return -1;
	x->py.pid = x->py.in = -1;
	x->other = -1;
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	if (x->opened)
		pt_run__free(&x->r);
	pyfx__stop(&x->py);
	runfx__reap(x->other);
	if (x->path[0])
		unlink(x->path);
	free(x);
	return 0;
}

/* The run of pid with targets text, as the command line
 * `proftrace -p PID --targets FILE` opens it: pt_run__open's result. */
static int open_run(struct fx *x, int pid, const char *text)
{
	struct pt_env env = { 0 };

	assert_int_equal(pyfx__targets(x->path, text), 0);
	env.pid = env.pids[0] = pid;
	env.npids = 1;
	env.targets = x->path;
	env.quiet = true;
	x->opened = true;
	return pt_run__open(&x->r, &env);
}

/* A pyenv python3.<minor> (said when there is none). */
static const char *pyenv(unsigned int minor, char *buf, size_t len)
{
	const char *py = pyfx__pyenv(minor, buf, len);

	if (!py)
		print_message("skipped: no pyenv python3.%u\n", minor);
	return py;
}

/* The run of a CPython child (python, or skipped when NULL), the one
 * process of it. */
static struct proc *open_python(struct fx *x, const char *python, bool perf, const char *text)
{
	if (!python)
		return NULL;
	assert_int_equal(pyfx__start(&x->py, python, NULL, perf), 0);
	assert_int_equal(open_run(x, x->py.pid, text), 0);
	assert_int_equal(x->r.procs.n, 1);
	return x->r.procs.v[0];
}

/* Debian's python3.11 is there (said when not). */
static bool debian(void)
{
	if (!access(PYFX_DEBIAN, X_OK))
		return true;
	print_message("skipped: no %s\n", PYFX_DEBIAN);
	return false;
}

static const char step_py[] = "step py:ptmod.Engine.step\n";

static void test_found_debian(void **state)
{
	struct fx *x = *state;
	struct proc *p;

	if (!debian())
		skip();
	p = open_python(x, PYFX_DEBIAN, false, step_py);
	assert_true(x->r.want_py);
	assert_true(p->python.have);
	assert_string_equal(p->python.rt.version, x->py.version);
	assert_int_equal(x->py.minor, 11);
	assert_int_equal(p->python.rt.L.minor, 11);
	assert_int_equal((p->python.rt.hexversion >> 16) & 0xff, 11);
	assert_non_null(strstr(p->python.rt.path, "python3.11"));
	assert_true(p->python.rt.runtime != 0);
	assert_true(p->python.rt.code_type != 0);
	/* its memory is read through its pid */
	assert_non_null(p->python.mem.read);
	assert_int_equal(*(const int *)p->python.mem.ctx, x->py.pid);
	/* the first process's CPython is the run's */
	assert_ptr_equal(x->r.py0, &p->python.rt);
	/* set up at attach, not at open */
	assert_null(p->python.probe);
	assert_false(p->python.probed);
	assert_false(p->python.sampled);
}

/* A pyenv 3.12 is found as 3.12. */
static void test_found_pyenv312(void **state)
{
	struct fx *x = *state;
	char buf[PATH_MAX];
	struct proc *p = open_python(x, pyenv(12, buf, sizeof(buf)), false, step_py);

	if (!p)
		skip();
	assert_true(p->python.have);
	assert_string_equal(p->python.rt.version, x->py.version);
	assert_int_equal(x->py.minor, 12);
	assert_int_equal(p->python.rt.L.minor, 12);
	assert_int_equal((p->python.rt.hexversion >> 16) & 0xff, 12);
}

/* Sampling wants Python stacks: a native-only targets file finds CPython
 * too, unless sampling is off. */
static void test_found_for_sampling_only(void **state)
{
	struct fx *x = *state;
	struct proc *p;

	if (!debian())
		skip();
	p = open_python(x, PYFX_DEBIAN, false, "step native:exe:Py_RunMain\n");
	assert_false(x->r.want_py);
	assert_true(x->r.cfg.sample_hz > 0);
	assert_true(p->python.have);
	assert_int_equal(p->python.rt.L.minor, 11);
}

static void test_not_looked_for_without_need(void **state)
{
	struct fx *x = *state;
	struct proc *p;

	if (!debian())
		skip();
	p = open_python(x, PYFX_DEBIAN, false, "set sample_hz 0\nstep native:exe:Py_RunMain\n");
	assert_false(p->python.have);
	assert_int_equal(p->python.tramp_checks, 0);
	assert_null(x->r.py0);
}

/* No CPython, no py: probes: no error, no Python part. */
static void test_not_python_native_only(void **state)
{
	struct fx *x = *state;
	struct proc *p;

	x->other = runfx__child();
	assert_true(x->other > 0);
	assert_int_equal(open_run(x, x->other, "step native:exe:pyproc_victim\n"), 0);
	p = x->r.procs.v[0];
	assert_false(p->python.have);
	assert_int_equal(p->python.tramp_checks, 0);
	assert_false(pt_run__py_exact(p));
	/* nothing to set up for it */
	assert_int_equal(pt_run__py_sample(p), 0);
	assert_null(p->python.sym);
	assert_null(x->r.py0);
}

/* No CPython, py: probes: strict (-p) refuses it with what to do; a
 * descendant (not strict) has nothing to trace. The run is one that
 * found CPython in its first process, as a second -p PID or a
 * descendant is opened. */
static void test_not_python_with_py_probes(void **state)
{
	struct fx *x = *state;
	struct proc *q = (struct proc *)1;
	char err[2048];

	if (!debian())
		skip();
	open_python(x, PYFX_DEBIAN, false, step_py);
	x->other = runfx__child();
	assert_true(x->other > 0);
	err[0] = 0;
	assert_int_equal(pt_run__open_proc(&x->r, x->other, true, &q, err, sizeof(err)), -EINVAL);
	assert_null(q);
	assert_non_null(strstr(err, "; remove the py: probes or attach to the Python process"));
	/* its slot was given back: the next one opens */
	q = (struct proc *)1;
	err[0] = 0;
	assert_int_equal(pt_run__open_proc(&x->r, x->other, false, &q, err, sizeof(err)), 1);
	assert_null(q);
	assert_string_equal(err, "no CPython in it and no function the targets file names");
}

/* The code objects' map is made once. */
static void test_py_start_once(void **state)
{
	struct fx *x = *state;
	struct pt_pyprobe *first;
	struct proc *p;
	char want[64];

	if (!debian())
		skip();
	p = open_python(x, PYFX_DEBIAN, false, step_py);
	assert_int_equal(pt_run__py_start(p), 0);
	first = p->python.probe;
	assert_non_null(first);
	snprintf(want, sizeof(want), "/proc/%d/root", x->py.pid);
	assert_string_equal(p->python.root, want);
	snprintf(want, sizeof(want), "/proc/%d/cwd", x->py.pid);
	assert_string_equal(p->python.cwd, want);
	assert_int_equal(pt_run__py_start(p), 0);
	assert_ptr_equal(p->python.probe, first);
}

/* p's perf-trampoline checks, at open and after one recheck: each one
 * counted, seen on each time when on, and p exact only then. */
static void assert_rechecked(struct proc *p, bool on)
{
	assert_false(p->python.rt.L.evalframe_all_calls);
	for (int n = 1; n <= 2; n++) {
		if (n == 2)
			pt_run__py_recheck(p);
		assert_int_equal(p->python.tramp_checks, n);
		assert_int_equal(p->python.tramp_on, on ? n : 0);
		assert_int_equal(pt_run__py_exact(p), on);
	}
}

/* 3.11 runs Python-to-Python calls inside one evaluator run, and has no
 * perf trampoline: not exact, each recheck one more check. */
static void test_exact_debian311(void **state)
{
	struct fx *x = *state;
	struct proc *p;

	if (!debian())
		skip();
	p = open_python(x, PYFX_DEBIAN, false, step_py);
	assert_rechecked(p, false);
}

/* 3.10: every Python call enters the evaluator; nothing to check. */
static void test_exact_pyenv310(void **state)
{
	struct fx *x = *state;
	char buf[PATH_MAX];
	struct proc *p = open_python(x, pyenv(10, buf, sizeof(buf)), false, step_py);

	if (!p)
		skip();
	assert_true(p->python.have);
	assert_int_equal(p->python.rt.L.minor, 10);
	assert_true(p->python.rt.L.evalframe_all_calls);
	assert_true(pt_run__py_exact(p));
	pt_run__py_recheck(p);
	assert_int_equal(p->python.tramp_checks, 0);
	assert_true(pt_run__py_exact(p));
}

/* 3.12 with the perf trampoline on: every call seen, each check counted
 * as on. */
static void test_trampoline_pyenv312_on(void **state)
{
	struct fx *x = *state;
	char buf[PATH_MAX];
	struct proc *p = open_python(x, pyenv(12, buf, sizeof(buf)), true, step_py);

	if (!p)
		skip();
	assert_rechecked(p, true);
}

/* 3.12 without it: checked, not on, not exact. */
static void test_trampoline_pyenv312_off(void **state)
{
	struct fx *x = *state;
	char buf[PATH_MAX];
	struct proc *p = open_python(x, pyenv(12, buf, sizeof(buf)), false, step_py);

	if (!p)
		skip();
	assert_rechecked(p, false);
}

/* The frame probe: with python_mode evalframe and py: probes only. */
static void test_want_py_probe_evalframe(void **state)
{
	struct fx *x = *state;
	struct proc *p;

	if (!debian())
		skip();
	p = open_python(x, PYFX_DEBIAN, false, "set python_mode evalframe\nstep py:ptmod::work\n");
	assert_int_equal(x->r.cfg.python_mode, PT_PYMODE_EVALFRAME);
	assert_true(pt_run__want_py_probe(&x->r, p));
	assert_true(x->r.py_probe_wanted);
}

static void test_want_py_probe_auto(void **state)
{
	struct fx *x = *state;
	struct proc *p;

	if (!debian())
		skip();
	p = open_python(x, PYFX_DEBIAN, false, step_py);
	assert_int_equal(x->r.cfg.python_mode, PT_PYMODE_AUTO);
	assert_false(pt_run__want_py_probe(&x->r, p));
	assert_false(x->r.py_probe_wanted);
}

/* evalframe without py: probes: nothing to time with it. */
static void test_want_py_probe_no_py_probes(void **state)
{
	struct fx *x = *state;
	struct proc *p;

	if (!debian())
		skip();
	p = open_python(x, PYFX_DEBIAN, false,
			"set python_mode evalframe\nstep native:exe:Py_RunMain\n");
	assert_true(p->python.have); /* for sampling */
	assert_false(pt_run__want_py_probe(&x->r, p));
	assert_false(x->r.py_probe_wanted);
}

/* No sampler (none opened, or it failed): nothing set up, not sampled. */
static void test_sample_without_sampler(void **state)
{
	struct fx *x = *state;
	struct proc *p;

	if (!debian())
		skip();
	p = open_python(x, PYFX_DEBIAN, false, step_py);
	assert_int_equal(pt_run__py_start(p), 0);
	assert_null(x->r.smp);
	assert_int_equal(pt_run__py_sample(p), 0);
	assert_false(p->python.sampled);
	assert_null(p->python.sym);
	assert_null(p->python.threads);
	assert_null(p->python.tn);
	assert_null(p->v.stk);
}

/* The frame probe not wanted (python_mode auto): nothing probed, no
 * reason to give. */
static void test_probe_not_wanted(void **state)
{
	struct fx *x = *state;
	struct proc *p;
	char err[256] = "";

	if (!debian())
		skip();
	p = open_python(x, PYFX_DEBIAN, false, step_py);
	assert_false(x->r.py_probe_wanted);
	assert_int_equal(pt_run__py_probe(p, err, sizeof(err)), 0);
	assert_false(p->python.probed);
	assert_null(p->python.why_not);
	assert_string_equal(err, "");
}

/* What was set up is freed with the process (pt_run__free ->
 * pt_run__free_proc -> pt_run__py_free), the map made at attach too;
 * one without CPython is freed by test_not_python_native_only's
 * teardown. */
static void test_py_free(void **state)
{
	struct fx *x = *state;

	if (!debian())
		skip();
	open_python(x, PYFX_DEBIAN, false, step_py);
	assert_int_equal(pt_run__py_start(x->r.procs.v[0]), 0);
	pt_run__free(&x->r);
	x->opened = false;
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_found_debian),
		T(test_found_pyenv312),
		T(test_found_for_sampling_only),
		T(test_not_looked_for_without_need),
		T(test_not_python_native_only),
		T(test_not_python_with_py_probes),
		T(test_py_start_once),
		T(test_exact_debian311),
		T(test_exact_pyenv310),
		T(test_trampoline_pyenv312_on),
		T(test_trampoline_pyenv312_off),
		T(test_want_py_probe_evalframe),
		T(test_want_py_probe_auto),
		T(test_want_py_probe_no_py_probes),
		T(test_sample_without_sampler),
		T(test_probe_not_wanted),
		T(test_py_free),
	};

	return cmocka_run_group_tests_name("pyproc", tests, NULL, NULL);
}
