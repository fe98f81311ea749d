// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/steps.c: the work of a session's phases, on runs opened by
 * pt_run__open on children of this test (waiting; a CPython one from
 * pyfx.h where the step is about Python), with targets files naming
 * functions of theirs (this binary).
 *
 * It proves: pt_run__open puts the processes -p names in the table in
 * the order given, their probes resolved, with a merged view for several
 * (or --children) only; the first process that runs CPython is the one
 * whose layout goes to BPF, and without a targets file such a process is
 * sampled ("just look"). --rate is taken over the file's sample_hz before
 * the modes are checked, and a bundled targets file's path is the run's
 * own copy. Each of its errors is -PT_EUSAGE (exit 2) with one line on
 * stderr: a targets file that does not parse (file:line:col, a hint) or
 * cannot be read; a pid that is gone, or in which a probe's symbol is not
 * found (with -p A,B: which pid); a glob wider than --max-probes (1000
 * when not given, summed over the processes; file:line:col, how many, the
 * --max-probes that takes them all; not checked by --dry-run); with
 * --children, a probe that matches nothing where its object is mapped, or
 * py: probes where no CPython runs; nothing to do but sample on a process
 * without CPython (no targets file, or --format). pt_run__free frees what
 * a failed open left (the processes opened before a failure included):
 * `make BUILD=asan` checks it.
 *
 * pt_run__report ends the run's figures before writing them: a step still
 * open is incomplete, in its process's section and in the merged one,
 * and with one process there is no merged view to end. What the files
 * hold, where the folder is and the fallback when it goes are report.c's
 * (test_report.c), as is the exit code of a failed open (test_session.c).
 *
 * pt_run__attach needs BPF past its first steps, which unit tests do not
 * load: tested here is only what it does before, reached with a stop
 * (SIGTERM) pending, as pt_run__stop_asked takes it at the first stop
 * point: the output folder is opened first (a symbolic link refused, said,
 * -PT_EUSAGE, the stop not even looked at), then SIGINT and SIGTERM are
 * blocked for the loop's signalfd and SIGPIPE ignored, --trace's buffer
 * made, and the stop ends it (-PT_ESTOPPED, r->stop_sig); pt_run__free
 * then removes the folder it created, empty. The calibration, the BPF
 * object, the sampler, the GPU rings and the probes: tests/integration.
 * Not reachable here either: --children on a kernel without
 * CONFIG_PROC_CHILDREN, and out of memory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "attach/resolve.h"
#include "bpf/proftrace.h"
#include "report/outdir.h"
#include "run/env.h"
#include "run/funcs.h"
#include "run/proctable.h"
#include "run/records.h"
#include "run/report.h"
#include "run/run.h"
#include "run/steps.h"
#include "util/util.h"
#include "pyfx.h"
#include "runfx.h"

#define MS 1000000ull

/* What the targets files name in the children (this binary): noinline
 * with a body, so the symbols are there to resolve. The wide ones are
 * the only functions whose names start steps_wide_: a glob takes three. */
RUNFX_VICTIM(steps_step);
RUNFX_VICTIM(steps_forward);
RUNFX_VICTIM(steps_wide_a);
RUNFX_VICTIM(steps_wide_b);
RUNFX_VICTIM(steps_wide_c);

static const char conf[] = "step native:exe:steps_step\n"
			   "bucket eng.fwd native:exe:steps_forward\n";

struct fx {
	struct run r;
	bool opened; /* pt_run__open was called: pt_run__free frees it */
	pid_t child[2];
	struct pyfx py;
	char tmp[64];	    /* the test's folder: targets files, outputs */
	char path[128];	    /* tmp/targets.conf */
	struct pt_env *env; /* of the last open_run (freed at teardown) */
	struct {
		bool on;
		sigset_t mask;		 /* before */
		struct sigaction act[3]; /* before: SIGINT, SIGTERM, SIGPIPE */
	} sig;
};

static const int saved_sigs[] = { SIGINT, SIGTERM, SIGPIPE };

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	if (!x)
		return -1;
	x->child[0] = x->child[1] = -1;
	x->py.pid = -1;
	x->py.in = -1;
	*state = x;
	snprintf(x->tmp, sizeof(x->tmp), "/tmp/pt-test-steps-XXXXXX");
	if (!mkdtemp(x->tmp))
		return -1;
	snprintf(x->path, sizeof(x->path), "%s/targets.conf", x->tmp);
	return 0;
}

static void signals_back(struct fx *x);

static int teardown(void **state)
{
	struct fx *x = *state;

	/* before the signals are back: a stop left pending must not end us */
	if (x->opened)
		pt_run__free(&x->r);
	signals_back(x);
	for (int i = 0; i < 2; i++)
		runfx__reap(x->child[i]);
	pyfx__stop(&x->py);
	free(x->env);
	nftw(x->tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(x);
	return 0;
}

/* tmp/name, in buf (PATH_MAX) */
static const char *in_tmp_at(struct fx *x, const char *name, char *buf)
{
	snprintf(buf, PATH_MAX, "%s/%s", x->tmp, name);
	return buf;
}
/* tmp/name, valid in the caller's block */
#define in_tmp(x, name) in_tmp_at(x, name, (char[PATH_MAX]){ 0 })

/* The targets file holds text. */
static void targets(struct fx *x, const char *text)
{
	FILE *f = fopen(x->path, "w");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

/* A waiting child, as x->child[i]. */
static pid_t child(struct fx *x, int i)
{
	x->child[i] = runfx__child();
	assert_true(x->child[i] > 0);
	return x->child[i];
}

/* An env for -p pids[0..n) with the targets file (heap: a test may
 * change it after the open; freed at teardown). */
static struct pt_env *env_for(struct fx *x, const pid_t *pids, int n)
{
	struct pt_env *env = calloc(1, sizeof(*env));

	assert_non_null(env);
	free(x->env);
	x->env = env;
	for (int i = 0; i < n; i++)
		env->pids[i] = pids[i];
	env->npids = n;
	env->pid = pids[0];
	env->targets = x->path;
	env->quiet = true;
	return env;
}

/* pt_run__open(env): its return; pt_run__free at teardown either way. */
static int open_run(struct fx *x, const struct pt_env *env)
{
	int e = pt_run__open(&x->r, env);

	x->opened = true;
	return e;
}

/* ---- what is said on stderr ---- */

static void capture_start(struct runfx_ear *c)
{
	assert_int_equal(runfx__hear(c, STDERR_FILENO), 0);
}

/* What was said meanwhile (static: the last capture's). */
static const char *capture_end(struct runfx_ear *c)
{
	static char text[16384];
	char *said = runfx__heard(c);

	assert_non_null(said);
	snprintf(text, sizeof(text), "%s", said);
	free(said);
	return text;
}

/* text is one line of proftrace's, ending in a newline. */
static void one_line(const char *text)
{
	const char *nl = strchr(text, '\n');

	if (strncmp(text, "proftrace: ", 11) || !nl || nl[1])
		fail_msg("not one line: '%s'", text);
}

/* pt_run__open(env) fails with -PT_EUSAGE and says one line, returned
 * (static). */
static const char *open_fails(struct fx *x, const struct pt_env *env)
{
	struct runfx_ear c;
	const char *said;
	int e;

	capture_start(&c);
	e = open_run(x, env);
	said = capture_end(&c);
	if (e != -PT_EUSAGE)
		fail_msg("pt_run__open: %d, not -PT_EUSAGE; said '%s'", e, said);
	one_line(said);
	return said;
}

/* s holds want, or the test fails saying both. */
static void holds(const char *s, const char *want)
{
	if (!strstr(s, want))
		fail_msg("'%s' does not hold '%s'", s, want);
}

/* The fid of symbol in p; -1: none. */
static int fid_of(const struct proc *p, const char *sym)
{
	for (size_t i = 0; i < pt_resolver__nfuncs(p->res); i++)
		if (!strcmp(pt_resolver__func(p->res, i)->symbol, sym))
			return (int)i;
	return -1;
}

/* ---- pt_run__open: what it builds ---- */

/* One process: in the table, its probes resolved in its executable, no
 * merged view (nothing to merge), no CPython to sample. */
static void test_open_one(void **state)
{
	struct fx *x = *state;
	pid_t pid = child(x, 0);
	struct proc *p;
	int s, f;

	targets(x, conf);
	assert_int_equal(open_run(x, env_for(x, &pid, 1)), 0);
	assert_int_equal(x->r.procs.n, 1);
	p = x->r.procs.v[0];
	assert_ptr_equal(pt_proctable__find(&x->r.procs, (uint32_t)pid), p);
	assert_int_equal(p->tracee.pid, pid);
	assert_int_equal(pt_resolver__nfuncs(p->res), 2);
	s = fid_of(p, "steps_step");
	f = fid_of(p, "steps_forward");
	assert_true(s >= 0 && f >= 0);
	assert_string_equal(pt_resolver__func(p->res, (size_t)s)->object, p->tracee.exe);
	assert_true(pt_resolver__func(p->res, (size_t)s)->is_step);
	assert_false(pt_resolver__func(p->res, (size_t)f)->is_step);
	assert_false(x->r.multi);
	assert_null(x->r.all.agg);
	assert_null(x->r.py0);
	assert_false(x->r.want_py);
	assert_false(x->r.py_probe_wanted);
}

/* -p A,B: both in the table, in the order given, each resolved; the
 * merged view made. */
static void test_open_two(void **state)
{
	struct fx *x = *state;
	pid_t pids[2] = { child(x, 0), child(x, 1) };

	targets(x, conf);
	assert_int_equal(open_run(x, env_for(x, pids, 2)), 0);
	assert_int_equal(x->r.procs.n, 2);
	for (int i = 0; i < 2; i++) {
		struct proc *p = x->r.procs.v[i];

		assert_int_equal(p->tracee.pid, pids[i]);
		assert_ptr_equal(pt_proctable__find(&x->r.procs, (uint32_t)pids[i]), p);
		assert_true(fid_of(p, "steps_step") >= 0);
		assert_true(fid_of(p, "steps_forward") >= 0);
	}
	assert_int_not_equal(x->r.procs.v[0]->idx, x->r.procs.v[1]->idx);
	assert_true(x->r.multi);
	assert_non_null(x->r.all.agg);
}

/* --rate over the file's sample_hz, and before the modes are checked: a
 * file that turns sampling off for python_mode sampled is refused alone,
 * taken with --rate; --rate 0 leaves the file's. */
static void test_open_rate(void **state)
{
	struct fx *x = *state;
	pid_t pid = child(x, 0);
	struct pt_env *env;
	const char *said;

	targets(x, "step native:exe:steps_step\n"
		   "set sample_hz 0\n"
		   "set python_mode sampled\n");
	env = env_for(x, &pid, 1);
	said = open_fails(x, env);
	holds(said, x->path);
	holds(said, "python_mode sampled needs stack sampling");
	holds(said, "(hint: ");
	pt_run__free(&x->r);
	x->opened = false;

	env->rate_hz = 99;
	assert_int_equal(open_run(x, env), 0);
	assert_int_equal(x->r.cfg.sample_hz, 99);
	pt_run__free(&x->r);
	x->opened = false;

	targets(x, "step native:exe:steps_step\nset sample_hz 50\n");
	env->rate_hz = 0;
	assert_int_equal(open_run(x, env), 0);
	assert_int_equal(x->r.cfg.sample_hz, 50);
}

/* --targets NAME (a bundled file, its path in env's targets_path): the
 * run reads it, and keeps its own copy of the path, not the caller's. */
static void test_open_bundled(void **state)
{
	struct fx *x = *state;
	pid_t pid = child(x, 0);
	struct pt_env *env;

	targets(x, conf);
	env = env_for(x, &pid, 1);
	snprintf(env->targets_path, sizeof(env->targets_path), "%s", x->path);
	env->targets = env->targets_path;
	assert_int_equal(open_run(x, env), 0);
	assert_int_equal(pt_resolver__nfuncs(x->r.procs.v[0]->res), 2);
	/* the caller's env may go */
	memset(env->targets_path, 0, sizeof(env->targets_path));
	assert_non_null(x->r.env.targets);
	assert_string_equal(x->r.env.targets, x->path);
}

/* ---- pt_run__open: its errors, one line each, exit 2 ---- */

/* A line that does not parse: file:line:col, what, a hint. */
static void test_bad_targets(void **state)
{
	struct fx *x = *state;
	pid_t pid = child(x, 0);
	const char *said;
	char want[256];

	targets(x, "step native:exe:steps_step\nbucket\n");
	said = open_fails(x, env_for(x, &pid, 1));
	snprintf(want, sizeof(want), "proftrace: %s:2:1: error: ", x->path);
	assert_int_equal(strncmp(said, want, strlen(want)), 0);
	holds(said, "(hint: ");
	assert_int_equal(x->r.procs.n, 0); /* no process looked at */
}

/* A targets file that is not there: said with its path and why. */
static void test_targets_missing(void **state)
{
	struct fx *x = *state;
	pid_t pid = child(x, 0);
	const char *said;
	char want[256];

	said = open_fails(x, env_for(x, &pid, 1));
	snprintf(want, sizeof(want), "proftrace: %s: cannot read targets file: %s\n", x->path,
		 strerror(ENOENT));
	assert_string_equal(said, want);
}

/* A pid that is gone: said with a hint; with -p A,B, B gone: said as
 * B's, A (opened first) freed by pt_run__free. */
static void test_dead_pid(void **state)
{
	struct fx *x = *state;
	pid_t pids[2] = { child(x, 0), child(x, 1) };
	const char *said;
	char want[256];

	targets(x, conf);
	runfx__reap(pids[1]);
	x->child[1] = -1;
	said = open_fails(x, env_for(x, &pids[1], 1));
	snprintf(want, sizeof(want), "proftrace: no such process: %d (hint: ", pids[1]);
	assert_int_equal(strncmp(said, want, strlen(want)), 0);
	pt_run__free(&x->r);
	x->opened = false;

	said = open_fails(x, env_for(x, pids, 2));
	/* the line names the pid: no "pid N:" before it */
	snprintf(want, sizeof(want), "proftrace: no such process: %d (hint: ", pids[1]);
	assert_int_equal(strncmp(said, want, strlen(want)), 0);
	assert_int_equal(x->r.procs.n, 1);
	assert_int_equal(x->r.procs.v[0]->tracee.pid, pids[0]);
}

/* A symbol the process does not have: file:line:col, the symbol, the
 * object; with -p A,B, the first process it is missing in named. */
static void test_unknown_symbol(void **state)
{
	struct fx *x = *state;
	pid_t pids[2] = { child(x, 0), child(x, 1) };
	const char *said;
	char want[512];

	targets(x, "step native:exe:steps_step\n"
		   "bucket eng.x native:exe:steps_no_such_fn\n");
	said = open_fails(x, env_for(x, pids, 1));
	snprintf(want, sizeof(want),
		 "proftrace: %s:2:14: error: no function matches "
		 "'steps_no_such_fn' in ",
		 x->path);
	assert_int_equal(strncmp(said, want, strlen(want)), 0);
	assert_int_equal(x->r.procs.n, 0);
	pt_run__free(&x->r);
	x->opened = false;

	said = open_fails(x, env_for(x, pids, 2));
	snprintf(want, sizeof(want),
		 "proftrace: pid %d: %s:2:14: error: no function matches "
		 "'steps_no_such_fn' in ",
		 pids[0], x->path);
	assert_int_equal(strncmp(said, want, strlen(want)), 0);
}

/* A glob that takes more functions than --max-probes: where, how many,
 * the --max-probes that takes them all; as many as the limit are taken;
 * --dry-run lists them whatever their number. */
static void test_wide_probe(void **state)
{
	struct fx *x = *state;
	pid_t pids[2] = { child(x, 0), child(x, 1) };
	struct pt_env *env;
	const char *said;
	char want[512];

	targets(x, "step native:exe:steps_step\n"
		   "bucket eng.wide native:exe:steps_wide_*\n");
	env = env_for(x, pids, 1);
	env->max_probes = 2;
	said = open_fails(x, env);
	snprintf(want, sizeof(want),
		 "proftrace: %s:2:17: probe 'native:exe:steps_wide_*' "
		 "matches 3 functions, more than --max-probes 2: ",
		 x->path);
	assert_int_equal(strncmp(said, want, strlen(want)), 0);
	holds(said, "(hint: give --max-probes 3 to take them all");
	pt_run__free(&x->r);
	x->opened = false;

	env->max_probes = 3;
	assert_int_equal(open_run(x, env), 0);
	assert_int_equal(pt_resolver__spec_nfuncs(x->r.procs.v[0]->res, 1), 3);
	pt_run__free(&x->r);
	x->opened = false;

	/* not given: 1000, not none */
	env->max_probes = 0;
	assert_int_equal(open_run(x, env), 0);
	pt_run__free(&x->r);
	x->opened = false;

	env->max_probes = 2;
	env->dry_run = true;
	assert_int_equal(open_run(x, env), 0);
	pt_run__free(&x->r);
	x->opened = false;

	/* -p A,B: what attaching them all takes, 3 in each */
	env = env_for(x, pids, 2);
	env->max_probes = 5;
	said = open_fails(x, env);
	holds(said, "matches 6 functions, more than --max-probes 5: ");
}

/* Not given, --max-probes is 1000: libc's every function is more. */
static void test_wide_probe_default(void **state)
{
	struct fx *x = *state;
	pid_t pid = child(x, 0);
	const char *said, *at;
	size_t n = 0;
	char hint[64];

	targets(x, "step native:exe:steps_step\n"
		   "bucket libc.all native:libc.so*:*\n");
	said = open_fails(x, env_for(x, &pid, 1));
	at = strstr(said, "matches ");
	assert_non_null(at);
	assert_int_equal(sscanf(at, "matches %zu functions", &n), 1);
	assert_true(n > 1000);
	holds(said, "more than --max-probes 1000: ");
	snprintf(hint, sizeof(hint), "give --max-probes %zu ", n);
	holds(said, hint);
}

/* Without a targets file, or with --format (sampled Python stacks), on
 * a process without CPython: nothing to do, said with what would. */
static void test_nothing_to_sample(void **state)
{
	struct fx *x = *state;
	pid_t pid = child(x, 0);
	struct pt_env *env;
	const char *said;
	char want[512];

	targets(x, conf);
	env = env_for(x, &pid, 1);
	env->targets = NULL;
	said = open_fails(x, env);
	snprintf(want, sizeof(want),
		 "proftrace: pid %d (test_steps) runs no CPython: without a "
		 "targets file there is nothing to sample (hint: ",
		 pid);
	assert_int_equal(strncmp(said, want, strlen(want)), 0);
	assert_int_equal(x->r.procs.n, 1);
	pt_run__free(&x->r);
	x->opened = false;

	env->targets = x->path;
	env->format = PT_FORMAT_FLAME;
	said = open_fails(x, env);
	snprintf(want, sizeof(want),
		 "proftrace: pid %d (test_steps) runs no CPython: -o FILE and "
		 "--format write sampled Python stacks (hint: -o DIR ",
		 pid);
	assert_int_equal(strncmp(said, want, strlen(want)), 0);
}

/* --children, a probe that matches nothing though its object is mapped
 * (the executable, in the root): said with the root's pid. A probe whose
 * object is mapped nowhere yet (a library loaded later) is no error. */
static void test_children_probe_nowhere(void **state)
{
	struct fx *x = *state;
	pid_t pid = child(x, 0);
	struct pt_env *env;
	const char *said;
	char want[512];

	targets(x, "step native:exe:steps_step\n"
		   "bucket eng.later native:libpt_absent.so:absent_fn\n");
	env = env_for(x, &pid, 1);
	env->children = true;
	assert_int_equal(open_run(x, env), 0);
	assert_int_equal(x->r.procs.n, 1);
	assert_true(x->r.multi); /* descendants may come: the merged view */
	assert_non_null(x->r.all.agg);
	pt_run__free(&x->r);
	x->opened = false;

	targets(x, "step native:exe:steps_no_such_fn\n");
	said = open_fails(x, env);
	snprintf(want, sizeof(want),
		 "proftrace: %s: probe 'native:exe:steps_no_such_fn' matches "
		 "no function in pid %d or its descendants, though they map its object (hint: ",
		 x->path, pid);
	assert_int_equal(strncmp(said, want, strlen(want)), 0);
}

/* --children, py: probes and no CPython in the tree: said. */
static void test_children_no_python(void **state)
{
	struct fx *x = *state;
	pid_t pid = child(x, 0);
	struct pt_env *env;
	const char *said;
	char want[512];

	targets(x, "step py:ptmod.Engine.step\n");
	env = env_for(x, &pid, 1);
	env->children = true;
	said = open_fails(x, env);
	snprintf(want, sizeof(want),
		 "proftrace: the targets file has py: probes, but no CPython "
		 "runs in pid %d or its descendants (hint: ",
		 pid);
	assert_int_equal(strncmp(said, want, strlen(want)), 0);
}

/* ---- pt_run__open on CPython ---- */

static void start_python(struct fx *x)
{
	if (access(PYFX_DEBIAN, X_OK))
		skip();
	assert_int_equal(pyfx__start(&x->py, PYFX_DEBIAN, NULL, false), 0);
}

/* No targets file on a CPython process: sampled ("just look"), its
 * interpreter the one whose layout goes to BPF. */
static void test_python_just_look(void **state)
{
	struct fx *x = *state;
	struct pt_env *env;

	start_python(x);
	env = env_for(x, &x->py.pid, 1);
	env->targets = NULL;
	assert_int_equal(open_run(x, env), 0);
	assert_int_equal(x->r.procs.n, 1);
	assert_true(x->r.procs.v[0]->python.have);
	assert_ptr_equal(x->r.py0, &x->r.procs.v[0]->python.rt);
	assert_int_equal(x->r.cfg.nprobes, 0);
	assert_false(x->r.want_py);
}

/* -p A,B, CPython in B only: B's interpreter goes to BPF, not A's lack of
 * one; py: probes (python_mode evalframe) want the frame probe. */
static void test_python_first(void **state)
{
	struct fx *x = *state;
	pid_t pids[2];

	start_python(x);
	pids[0] = child(x, 0);
	pids[1] = x->py.pid;
	/* a function both have (libc), so neither is refused for lack of one */
	targets(x, "step native:libc.so*:getpid\n");
	assert_int_equal(open_run(x, env_for(x, pids, 2)), 0);
	assert_int_equal(x->r.procs.n, 2);
	assert_false(x->r.procs.v[0]->python.have);
	assert_true(x->r.procs.v[1]->python.have);
	assert_ptr_equal(x->r.py0, &x->r.procs.v[1]->python.rt);
	assert_false(x->r.py_probe_wanted);
	pt_run__free(&x->r);
	x->opened = false;

	targets(x, "step py:ptmod.Engine.step\nset python_mode evalframe\n");
	assert_int_equal(open_run(x, env_for(x, &x->py.pid, 1)), 0);
	assert_true(x->r.want_py);
	assert_true(x->r.py_probe_wanted);
}

/* ---- pt_run__report ---- */

/* p's functions declared as pt_run__attach_new declares them (it needs
 * BPF): its table grown to the resolver's, then each one. */
static void declare_all(struct proc *p)
{
	assert_int_equal(pt_run__grow_fstate(p), 0);
	for (size_t i = 0; i < pt_resolver__nfuncs(p->res); i++)
		assert_int_equal(pt_run__declare_func(p, i), 0);
}

/* A call of p's function sym, from t0 to t1 (0: no exit yet), as BPF
 * writes its records. */
static void call(struct fx *x, struct proc *p, const char *sym, uint64_t t0, uint64_t t1)
{
	int f = fid_of(p, sym);
	struct pt_rec e = { .type = PT_REC_ENTRY,
			    .fid = PT_FID_MAKE(p->idx, (uint32_t)f),
			    .pid = (uint32_t)p->tracee.pid,
			    .tid = (uint32_t)p->tracee.pid,
			    .t_entry = t0 };

	assert_true(f >= 0);
	assert_int_equal(pt_run__on_rec(&x->r, &e, sizeof(e)), 0);
	if (!t1)
		return;
	e.type = PT_REC_EXIT;
	e.t_exit = t1;
	assert_int_equal(pt_run__on_rec(&x->r, &e, sizeof(e)), 0);
}

static cJSON *summary(const char *dir)
{
	char path[PATH_MAX], *text = calloc(1, 1 << 20);
	cJSON *doc;
	FILE *f;
	size_t n;

	assert_non_null(text);
	snprintf(path, sizeof(path), "%s/summary.json", dir);
	f = fopen(path, "re");
	assert_non_null(f);
	n = fread(text, 1, (1 << 20) - 1, f);
	fclose(f);
	assert_true(n > 0);
	doc = cJSON_Parse(text);
	free(text);
	assert_non_null(doc);
	return doc;
}

static double incomplete(const cJSON *doc)
{
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(doc, "stats");
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(st, "incomplete_steps");

	assert_true(cJSON_IsNumber(n));
	return n->valuedouble;
}

static double steps(const cJSON *doc)
{
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(doc, "stats");
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(st, "steps");

	assert_true(cJSON_IsNumber(n));
	return n->valuedouble;
}

/* The run's output folder, -o out: opened as pt_run__attach opens it
 * first (report.c's pt_run__open_output), since the rest of an attach
 * needs BPF. */
static const char *open_out(struct fx *x, struct pt_env *env)
{
	static char out[PATH_MAX];

	in_tmp_at(x, "out", out);
	env->output = out;
	assert_int_equal(open_run(x, env), 0);
	assert_int_equal(pt_run__open_output(&x->r), 0);
	return out;
}

/* -p A,B, A's step still open at the end: incomplete in A's section and
 * in the merged figures, B's counted step left alone. */
static void test_report_ends_open_steps(void **state)
{
	struct fx *x = *state;
	pid_t pids[2] = { child(x, 0), child(x, 1) };
	const cJSON *procs;
	const char *out;
	cJSON *doc;

	targets(x, conf);
	out = open_out(x, env_for(x, pids, 2));
	for (int i = 0; i < 2; i++)
		declare_all(x->r.procs.v[i]);
	call(x, x->r.procs.v[1], "steps_step", 10 * MS, 20 * MS);
	call(x, x->r.procs.v[0], "steps_step", 30 * MS, 0);
	assert_int_equal(pt_run__report(&x->r), 0);
	doc = summary(out);
	assert_true(incomplete(doc) == 1);
	assert_true(steps(doc) == 1);
	procs = cJSON_GetObjectItemCaseSensitive(doc, "processes");
	assert_int_equal(cJSON_GetArraySize(procs), 2);
	assert_true(incomplete(cJSON_GetArrayItem(procs, 0)) == 1);
	assert_true(steps(cJSON_GetArrayItem(procs, 0)) == 0);
	assert_true(incomplete(cJSON_GetArrayItem(procs, 1)) == 0);
	assert_true(steps(cJSON_GetArrayItem(procs, 1)) == 1);
	cJSON_Delete(doc);
}

/* One process: its open step ended, and no merged view to end. */
static void test_report_one(void **state)
{
	struct fx *x = *state;
	pid_t pid = child(x, 0);
	const char *out;
	cJSON *doc;

	targets(x, conf);
	out = open_out(x, env_for(x, &pid, 1));
	declare_all(x->r.procs.v[0]);
	call(x, x->r.procs.v[0], "steps_step", 10 * MS, 20 * MS);
	call(x, x->r.procs.v[0], "steps_step", 30 * MS, 0);
	assert_int_equal(pt_run__report(&x->r), 0);
	doc = summary(out);
	assert_true(steps(doc) == 1);
	assert_true(incomplete(doc) == 1);
	assert_null(cJSON_GetObjectItemCaseSensitive(doc, "processes"));
	cJSON_Delete(doc);
}

/* ---- pt_run__attach, up to where it needs BPF ---- */

static void noop(int sig)
{
}

/* A stop asked for before the attach: SIGTERM pending (blocked here, a
 * handler that does nothing should it be unblocked), as a user's kill
 * during the attach leaves it for pt_run__stop_asked. It also keeps a
 * broken attach from going on to load BPF. The mask and the handlers of
 * SIGINT, SIGTERM and SIGPIPE are saved for signals_back. */
static void stop_pending(struct fx *x)
{
	struct sigaction sa = { .sa_handler = noop };
	sigset_t term;

	for (size_t i = 0; i < ARRAY_SIZE(saved_sigs); i++)
		sigaction(saved_sigs[i], NULL, &x->sig.act[i]);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, &x->sig.mask);
	x->sig.on = true;
	raise(SIGTERM);
}

/* What stop_pending and pt_run__attach changed, back as it was. */
static void signals_back(struct fx *x)
{
	struct timespec zero = { 0 };
	sigset_t both;

	if (!x->sig.on)
		return;
	sigemptyset(&both);
	sigaddset(&both, SIGINT);
	sigaddset(&both, SIGTERM);
	while (sigtimedwait(&both, NULL, &zero) > 0)
		;
	sigprocmask(SIG_SETMASK, &x->sig.mask, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(saved_sigs); i++)
		sigaction(saved_sigs[i], &x->sig.act[i], NULL);
	x->sig.on = false;
}

static bool blocked(int sig)
{
	sigset_t now;

	sigprocmask(SIG_BLOCK, NULL, &now);
	return sigismember(&now, sig) == 1;
}

static bool pending(int sig)
{
	sigset_t p;

	sigpending(&p);
	return sigismember(&p, sig) == 1;
}

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Stopped at its first stop point: the output folder made (-o a new
 * one), SIGINT and SIGTERM blocked for the loop, SIGPIPE ignored (a
 * reader of --json that goes away is an error to say, not a death), the
 * stop taken and said; pt_run__free removes the folder, empty, and frees
 * --trace's buffer. */
static void test_attach_stopped(void **state)
{
	struct fx *x = *state;
	pid_t pid = child(x, 0);
	const char *out = in_tmp(x, "new/out"), *said;
	struct sigaction pipe_act;
	struct pt_env *env;
	struct runfx_ear c;
	struct stat st;

	targets(x, conf);
	env = env_for(x, &pid, 1);
	env->output = out;
	env->trace = true;
	assert_int_equal(open_run(x, env), 0);
	stop_pending(x);
	assert_false(blocked(SIGINT));
	capture_start(&c);
	assert_int_equal(pt_run__attach(&x->r), -PT_ESTOPPED);
	said = capture_end(&c);
	assert_string_equal(said, "proftrace: SIGTERM while attaching: stopping; everything "
				  "attached so far is taken out, nothing was measured\n");
	assert_int_equal(x->r.stop_sig, SIGTERM);
	assert_false(pending(SIGTERM));
	assert_true(blocked(SIGINT));
	assert_true(blocked(SIGTERM));
	assert_int_equal(sigaction(SIGPIPE, NULL, &pipe_act), 0);
	assert_ptr_equal(pipe_act.sa_handler, SIG_IGN);
	assert_int_equal(lstat(out, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(entries(out), 0);
	pt_run__free(&x->r);
	x->opened = false;
	assert_int_equal(lstat(out, &st), -1);
	assert_int_equal(errno, ENOENT);
}

/* -o a symbolic link to a folder: refused before anything else (the stop
 * pending is not even looked at), one line, exit 2, nothing written
 * where it points. */
static void test_attach_output_refused(void **state)
{
	struct fx *x = *state;
	pid_t pid = child(x, 0);
	const char *said;
	struct pt_env *env;
	struct runfx_ear c;

	targets(x, conf);
	assert_int_equal(mkdir(in_tmp(x, "real"), 0700), 0);
	assert_int_equal(symlink(in_tmp(x, "real"), in_tmp(x, "link")), 0);
	env = env_for(x, &pid, 1);
	env->output = in_tmp(x, "link");
	assert_int_equal(open_run(x, env), 0);
	stop_pending(x);
	capture_start(&c);
	assert_int_equal(pt_run__attach(&x->r), -PT_EUSAGE);
	said = capture_end(&c);
	one_line(said);
	holds(said, "symbolic link");
	assert_int_equal(x->r.stop_sig, 0);
	assert_true(pending(SIGTERM));
	assert_int_equal(entries(in_tmp(x, "real")), 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_open_one),
		T(test_open_two),
		T(test_open_rate),
		T(test_open_bundled),
		T(test_bad_targets),
		T(test_targets_missing),
		T(test_dead_pid),
		T(test_unknown_symbol),
		T(test_wide_probe),
		T(test_wide_probe_default),
		T(test_nothing_to_sample),
		T(test_children_probe_nowhere),
		T(test_children_no_python),
		T(test_python_just_look),
		T(test_python_first),
		T(test_report_ends_open_steps),
		T(test_report_one),
		T(test_attach_stopped),
		T(test_attach_output_refused),
	};
#undef T

	return cmocka_run_group_tests_name("steps", tests, NULL, NULL);
}
