// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/pyhint.c: py: probes that match nothing, why, and the closest
 * names, on runs opened by pt_run__open on live CPython children of this
 * test (pyfx.h: module ptmod and package module ptpkg.mod imported), no
 * BPF object.
 *
 * --dry-run (pt_run__py_dry_run) with the Python agent preloaded asks it
 * what it would hook, on stdout, one line per py: probe (none for a
 * native: one): a probe that matches with the function, its file and
 * first line, "(the agent hooks it at attach)" (a dotted one read as a
 * function of module ptpkg.mod too); one that matches nothing with
 * "matches nothing now:" and why, as docs/targets.md says it: a
 * misspelled method or function gets the closest qualified names of its
 * module (five at most, anonymous code never; a method named without its
 * class has its Class.method spelling among them), a wrong module that it
 * is not imported (neither reading's, for a dotted one), a class named as
 * a function that it is a class, a dotted probe whose two modules are
 * imported both spellings. Nothing is said on stderr, nothing hooked, and
 * the agent is left free: another proftrace right after lists the same.
 * On Debian's 3.11, and pyenv's 3.10 (names from the source) and 3.12
 * (sys.monitoring), skipped where absent. Without the agent the dry run
 * says, per py: probe, that there is none to ask.
 *
 * pt_run__py_hint_why gives the reason for the report: the dry run's;
 * none for a probe that matched, a native: probe, a run without py:
 * probes, or, without the agent and samples, when nothing can be said.
 * pt_run__py_hint_agent says each reason once on stderr (file:line:col,
 * a warning with the closest names), from the candidates alone when the
 * agent gave no lists (only what ran is then known). pt_run__py_hint_free
 * drops what was learnt.
 *
 * Not here (they need the BPF sampler): the reasons worked out from
 * sampled stacks (pt_run__py_hint_samples, "no code of module ... was
 * sampled").
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "python/agent.h"
#include "run/env.h"
#include "run/pyhint.h"
#include "run/pyproc.h"
#include "run/run.h"
#include "run/steps.h"
#include "pyfx.h"
#include "runfx.h"

struct fx {
	struct run r;
	bool opened;
	struct pyfx py;
	char path[64];
	char agent[PATH_MAX];
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	if (!x)
		return -1;
	x->py.pid = x->py.in = -1;
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	if (x->opened)
		pt_run__free(&x->r);
	pyfx__stop(&x->py);
	if (x->path[0])
		unlink(x->path);
	free(x);
	return 0;
}

/* A pyenv python3.<minor> (said when there is none). */
static const char *pyenv(unsigned int minor, char *buf, size_t len)
{
	const char *py = pyfx__pyenv(minor, buf, len);

	if (!py)
		print_message("skipped: no pyenv python3.%u\n", minor);
	return py;
}

/* The run of a CPython child (python; agent preloaded when with_agent),
 * as `proftrace -p PID --targets FILE` opens it; its one process. NULL
 * (the test skipped) when python or the agent is not there. */
static struct proc *open_python(struct fx *x, const char *python, bool with_agent, const char *text)
{
	struct pt_env env = { 0 };
	const char *agent = NULL;

	if (!python || access(python, X_OK)) {
		if (python)
			print_message("skipped: no %s\n", python);
		return NULL;
	}
	if (with_agent) {
		agent = pyfx__agent(x->agent, sizeof(x->agent));
		if (!agent) {
			print_message("skipped: no Python agent (make builds "
				      "libproftrace_agent.so; $PT_AGENT names it)\n");
			return NULL;
		}
	}
	assert_int_equal(pyfx__start(&x->py, python, agent, false), 0);
	assert_int_equal(pyfx__targets(x->path, text), 0);
	env.pid = env.pids[0] = x->py.pid;
	env.npids = 1;
	env.targets = x->path;
	env.quiet = true;
	x->opened = true;
	assert_int_equal(pt_run__open(&x->r, &env), 0);
	assert_int_equal(x->r.procs.n, 1);
	assert_true(x->r.procs.v[0]->python.have);
	return x->r.procs.v[0];
}

/* fd (1 or 2) into a temporary file, until cap_end. */
static void cap_start(struct runfx_ear *c, int fd)
{
	assert_int_equal(runfx__hear(c, fd), 0);
}

/* fd back, and what it got (malloc'ed, NUL-terminated). */
static char *cap_end(struct runfx_ear *c)
{
	char *out = runfx__heard(c);

	assert_non_null(out);
	return out;
}

/* What fn(p) wrote on stdout (returned) and on stderr (*err; NULL: not
 * wanted), each malloc'ed. */
static char *capture(void (*fn)(struct proc *), struct proc *p, char **err)
{
	struct runfx_ear o, e;
	char *out, *text;

	cap_start(&o, 1);
	cap_start(&e, 2);
	fn(p);
	text = cap_end(&e);
	out = cap_end(&o);
	if (err)
		*err = text;
	else
		free(text);
	return out;
}

/* The line of out that starts with probe, then spaces (NULL: none), and
 * that there is one only. */
static const char *line_of(const char *out, const char *probe, char *buf, size_t len)
{
	const char *hit = NULL;
	size_t lp = strlen(probe);

	for (const char *l = out; *l;) {
		const char *nl = strchr(l, '\n');
		size_t ll = nl ? (size_t)(nl - l) : strlen(l);

		if (ll > lp && !strncmp(l, probe, lp) && l[lp] == ' ') {
			assert_null(hit);
			hit = l;
			snprintf(buf, len, "%.*s", (int)ll, l);
		}
		l += ll + (nl ? 1 : 0);
	}
	return hit ? buf : NULL;
}

/* What follows the probe and its padding on its line. */
static const char *rest_of(const char *out, const char *probe, char *buf, size_t len)
{
	const char *l = line_of(out, probe, buf, len);

	assert_non_null(l);
	l += strlen(probe);
	while (*l == ' ')
		l++;
	return l;
}

static void dry_run(struct proc *p)
{
	pt_run__py_dry_run(p);
}

/* The fixture of the test that runs: its child's code objects. */
static struct fx *cur;

/* The agent's candidates handed over as pyagent.c does once it resolved
 * them: the child's functions (an agent that gave no found[] or near[]
 * lists: p->agent has no handle here). */
static void hint_candidates(struct proc *p)
{
	pt_run__py_hint_agent(p, cur->py.codes, PYFX_NCODES);
}

/* Each a way to get a py: probe wrong, but 0 and 7 (which match) and
 * the last (native: not the dry run's). */
static const char typos[] =
	"step   py:ptmod.Engine.step\n"		       /* 0: matches */
	"bucket a.typo py:ptmod.Engine.stepp\n"	       /* 1: a method misspelled */
	"bucket a.func py:ptmod::wrok\n"	       /* 2: a function misspelled */
	"bucket a.mod  py:ptmodd::work\n"	       /* 3: a wrong module */
	"bucket a.meth py:ptmod::step\n"	       /* 4: a method, no class */
	"bucket a.cls  py:ptmod.Engine\n"	       /* 5: a class, as a function */
	"bucket a.gone py:nosuch.Engine.step\n"	       /* 6: no module, dotted */
	"bucket a.dot  py:ptpkg.mod.run\n"	       /* 7: matches, function run of ptpkg.mod */
	"bucket a.two  py:ptpkg.mod.nosuch\n"	       /* 8: neither reading matches */
	"bucket a.nat  native:*python3*:Py_RunMain\n"; /* 9 */
#define NPY 9

static const char no_match[] = "no function of module ptmod matches (closest: ";
static const char not_imported[] =
	"module ptmodd is not imported (sys.modules has no module of its file); its functions "
	"are hooked if it is";
static const char neither[] =
	"neither module nosuch nor nosuch.Engine is imported (sys.modules has no module of their "
	"files); its functions are hooked if one is";
static const char is_class[] = "; Engine is a class: name a method, py:ptmod.Engine.<method>";

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static bool ends(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);

	return ls >= lx && !strcmp(s + ls - lx, suffix);
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (const char *q = strstr(s, what); q; q = strstr(q + 1, what))
		n++;
	return n;
}

static size_t nlines(const char *s)
{
	return count(s, "\n");
}

/* The reason after "matches nothing now: " on probe's line, and that it
 * is pt_run__py_hint_why's for spec too. */
static const char *reason(struct proc *p, const char *out, size_t spec, char *buf, size_t len)
{
	static const char head[] = "matches nothing now: ";
	const char *probe = p->run->cfg.probes[spec].text, *l = rest_of(out, probe, buf, len);
	const char *why = pt_run__py_hint_why(p, spec);

	if (!starts(l, head))
		fail_msg("%s: '%s'", probe, l);
	l += strlen(head);
	assert_non_null(why);
	assert_string_equal(why, l);
	return l;
}

/* A dry run's listing of typos, with the agent: what docs/targets.md
 * says of each. */
static void check_listing(struct fx *x, struct proc *p, const char *out)
{
	char buf[2048], want[512];
	const char *l;

	/* one line per py: probe, none for the native: one */
	assert_int_equal(nlines(out), NPY);
	assert_null(line_of(out, x->r.cfg.probes[NPY].text, buf, sizeof(buf)));
	/* the one that matches: the function, where it is, hooked at attach */
	snprintf(want, sizeof(want), "%-10s %s:%d (the agent hooks it at attach)", "Engine.step",
		 x->py.module, PYFX_STEP_LINE);
	assert_string_equal(rest_of(out, "py:ptmod.Engine.step", buf, sizeof(buf)), want);
	assert_null(pt_run__py_hint_why(p, 0));
	/* a misspelled method: the closest names of its module, its own
	 * class's first */
	l = reason(p, out, 1, buf, sizeof(buf));
	if (!starts(l, no_match) ||
	    !starts(l + strlen(no_match), "py:ptmod.Engine.step, py:ptmod.Engine.stop, "))
		fail_msg("stepp: '%s'", l);
	/* a misspelled function: the function first, in the :: spelling */
	l = reason(p, out, 2, buf, sizeof(buf));
	if (!starts(l, no_match) || !starts(l + strlen(no_match), "py:ptmod::work, "))
		fail_msg("wrok: '%s'", l);
	/* five of its six, anonymous code never */
	assert_int_equal(count(l, "py:ptmod"), 5);
	assert_non_null(strstr(l, "py:ptmod::serve"));
	assert_null(strstr(l, "lambda"));
	assert_true(ends(l, ")"));
	/* a module that is not imported */
	assert_string_equal(reason(p, out, 3, buf, sizeof(buf)), not_imported);
	/* a method named as a function: its Class.method among the closest */
	l = reason(p, out, 4, buf, sizeof(buf));
	assert_true(starts(l, no_match));
	assert_non_null(strstr(l, "py:ptmod.Engine.step"));
	/* a class named as a function */
	l = reason(p, out, 5, buf, sizeof(buf));
	assert_true(starts(l, no_match));
	if (!ends(l, is_class))
		fail_msg("Engine: '%s'", l);
	/* dotted: both readings' modules are missing */
	assert_string_equal(reason(p, out, 6, buf, sizeof(buf)), neither);
	/* dotted: function run of module ptpkg.mod (no class mod in ptpkg) */
	snprintf(want, sizeof(want), "%-10s %s/ptpkg/mod.py:%d (the agent hooks it at attach)",
		 "run", x->py.dir, PYFX_RUN_LINE);
	assert_string_equal(rest_of(out, "py:ptpkg.mod.run", buf, sizeof(buf)), want);
	assert_null(pt_run__py_hint_why(p, 7));
	/* dotted, both modules imported, neither reading matches: both
	 * modules' names, and both spellings */
	l = reason(p, out, 8, buf, sizeof(buf));
	if (!starts(l, "no function of module ptpkg or ptpkg.mod matches (closest: ") ||
	    !ends(l, "; it reads as method nosuch of class mod in module ptpkg or as function "
		     "nosuch of module ptpkg.mod (py:ptpkg.mod::nosuch)"))
		fail_msg("nosuch: '%s'", l);
	assert_non_null(strstr(l, "py:ptpkg.mod::run"));
	/* not a py: probe: nothing to say */
	assert_null(pt_run__py_hint_why(p, 9));
	assert_null(strstr(out, "lambda"));
}

/* The agent of pid hooked nothing, and walked its modules. */
static void check_hooked_nothing(int pid)
{
	struct pt_agent_info in;
	struct pt_agent *a;
	char err[512];

	assert_int_equal(pt_agent__open(&a, pid, err, sizeof(err)), 0);
	pt_agent__info(a, &in);
	pt_agent__close(a);
	assert_int_equal(in.narmed, 0);
	assert_true(in.scans > 0);
}

/* The dry run of p by another proftrace (a child of this test, at once):
 * what it printed. */
static char *dry_run_elsewhere(struct proc *p)
{
	char *out = NULL;
	size_t len = 0;
	int fds[2], status;
	pid_t pid;
	FILE *f;

	assert_int_equal(pipe(fds), 0);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		pt_run__py_dry_run(p);
		fflush(stdout);
		_exit(0);
	}
	close(fds[1]);
	f = open_memstream(&out, &len);
	assert_non_null(f);
	for (;;) {
		char buf[4096];
		ssize_t n = read(fds[0], buf, sizeof(buf));

		if (n <= 0)
			break;
		fwrite(buf, 1, (size_t)n, f);
	}
	fclose(f);
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return out;
}

/* The dry run on python with the agent: the listing; nothing hooked,
 * nothing said; and the agent left as it was: another proftrace right
 * after gets the same (not "another proftrace is attached"). */
static void dry_run_with_agent(void **state, const char *python, unsigned int minor)
{
	struct fx *x = *state;
	struct proc *p = open_python(x, python, true, typos);
	char *out, *again, *err;

	if (!p)
		skip();
	assert_int_equal(p->python.rt.L.minor, minor);
	out = capture(dry_run, p, &err);
	check_listing(x, p, out);
	assert_string_equal(err, "");	  /* listed, not said */
	assert_non_null(p->python.probe); /* names read as at attach */
	free(err);
	check_hooked_nothing(x->py.pid);
	again = dry_run_elsewhere(p);
	assert_string_equal(again, out);
	free(again);
	free(out);
}

static void test_dry_run_debian311(void **state)
{
	dry_run_with_agent(state, PYFX_DEBIAN, 11);
}

/* 3.10: qualified names from the module's source */
static void test_dry_run_pyenv310(void **state)
{
	char buf[PATH_MAX];

	dry_run_with_agent(state, pyenv(10, buf, sizeof(buf)), 10);
}

/* 3.12: the agent's sys.monitoring */
static void test_dry_run_pyenv312(void **state)
{
	char buf[PATH_MAX];

	dry_run_with_agent(state, pyenv(12, buf, sizeof(buf)), 12);
}

/* No agent in the process: none to ask now, per py: probe; and nothing
 * can be said of a probe that matches nothing (nothing sampled). */
static void test_dry_run_without_agent(void **state)
{
	struct fx *x = *state;
	struct proc *p = open_python(x, PYFX_DEBIAN, false, typos);
	char buf[2048], want[512], *out;

	if (!p)
		skip();
	out = capture(dry_run, p, NULL);
	assert_int_equal(nlines(out), NPY);
	snprintf(want, sizeof(want),
		 "python %s (%s): no Python agent to ask now; found at attach, by code object",
		 x->py.version, p->python.rt.path);
	for (size_t s = 0; s < NPY; s++)
		assert_string_equal(rest_of(out, x->r.cfg.probes[s].text, buf, sizeof(buf)), want);
	assert_null(line_of(out, x->r.cfg.probes[NPY].text, buf, sizeof(buf)));
	assert_non_null(p->python.probe); /* names read as at attach */
	free(out);
	for (size_t s = 0; s <= NPY; s++)
		assert_null(pt_run__py_hint_why(p, s));
}

/* Without py: probes there is nothing to say. */
static void test_why_without_py_probes(void **state)
{
	struct fx *x = *state;
	struct proc *p = open_python(x, PYFX_DEBIAN, false, "step native:exe:Py_RunMain\n");

	if (!p)
		skip();
	assert_false(x->r.want_py);
	assert_null(pt_run__py_hint_why(p, 0));
	assert_null(p->hint);
}

/* The agent's candidates without its lists (what it found is not
 * known): each probe of a module whose code is among them and that
 * matches nothing is said once, a warning at its place in the file,
 * the closest names from the candidates, and that only what ran is seen;
 * a module none of whose code is there is not said. The probe that
 * matches is not said: a dry run first resolves the candidates, as
 * pyagent.c does before it hands them over (its hint then freed). */
static void test_hint_agent_said_once(void **state)
{
	struct fx *x = *state;
	struct proc *p = open_python(x, PYFX_DEBIAN, true, typos);
	char want[1024], *err;
	const char *why;

	if (!p)
		skip();
	cur = x;
	free(capture(dry_run, p, NULL));
	pt_run__py_hint_free(p); /* what the agent's lists said: dropped */
	free(capture(hint_candidates, p, &err));
	/* the misspelled method, the misspelled function, the method and the
	 * class named as functions */
	assert_int_equal(nlines(err), 4);
	snprintf(want, sizeof(want),
		 "proftrace: warning: pid %d: %s:2:15: py:ptmod.Engine.stepp: no sampled function "
		 "of module ptmod matches (closest: py:ptmod.Engine.step, ",
		 x->py.pid, x->path);
	if (!starts(err, want))
		fail_msg("want '%s' in:\n%s", want, err);
	assert_non_null(strstr(err, "(without the Python agent only the functions that ran are "
				    "seen)\n"));
	snprintf(want, sizeof(want), "%s:3:15: py:ptmod::wrok: no sampled function", x->path);
	assert_non_null(strstr(err, want));
	snprintf(want, sizeof(want), "%s:5:15: py:ptmod::step: no sampled function", x->path);
	assert_non_null(strstr(err, want));
	snprintf(want, sizeof(want), "%s:6:15: py:ptmod.Engine: no sampled function", x->path);
	assert_non_null(strstr(err, want));
	assert_non_null(strstr(err, is_class));
	assert_null(strstr(err, "py:ptmod.Engine.step:"));
	assert_null(strstr(err, "ptmodd"));
	assert_null(strstr(err, "nosuch"));
	assert_null(strstr(err, "lambda"));
	free(err);
	/* the same again: nothing new to say */
	free(capture(hint_candidates, p, &err));
	assert_string_equal(err, "");
	free(err);
	/* the report's reason is the one said */
	why = pt_run__py_hint_why(p, 1);
	assert_non_null(why);
	assert_true(starts(why, "no sampled function of module ptmod matches (closest: "));
	assert_null(pt_run__py_hint_why(p, 3));
}

/* Freed, what the agent said is gone: nothing can be said then. */
static void test_hint_free(void **state)
{
	struct fx *x = *state;
	struct proc *p = open_python(x, PYFX_DEBIAN, true, typos);
	char *out;

	if (!p)
		skip();
	out = capture(dry_run, p, NULL);
	free(out);
	assert_non_null(p->hint);
	assert_non_null(pt_run__py_hint_why(p, 1));
	pt_run__py_hint_free(p);
	assert_null(p->hint);
	pt_run__py_hint_free(p); /* twice: nothing */
	assert_null(pt_run__py_hint_why(p, 1));
	assert_null(pt_run__py_hint_why(p, 3));
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_dry_run_debian311),
		T(test_dry_run_pyenv310),
		T(test_dry_run_pyenv312),
		T(test_dry_run_without_agent),
		T(test_why_without_py_probes),
		T(test_hint_agent_said_once),
		T(test_hint_free),
	};

	return cmocka_run_group_tests_name("pyhint", tests, NULL, NULL);
}
