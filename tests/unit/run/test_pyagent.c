// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/pyagent.c: a process's Python agent, on runs opened by pt_run__open
 * on live children of this test: a CPython child (pyfx.h: Debian's 3.11,
 * module ptmod imported) with the agent preloaded or not, and a child
 * that plays the agent (it loads the agent's library, which does nothing
 * outside CPython, and makes the agent's segment as the agent does,
 * shim/memseg.h, going active on attach and applying each arm), so that
 * what a live agent only says on a conflict can be written at will. No
 * BPF: the Makefile links this test with --wrap for the two calls into
 * it on the way (the uprobes on the agent's two sites, the answer for a
 * code object), which the stand-ins below record.
 *
 * It proves: pt_run__agent_start finds no agent in a process started
 * without one (-ENOENT, what to do kept for the report); in a process
 * started with it, has BPF probe the agent's own pt_agent_enter and
 * pt_agent_exit (their file offsets in its library), attaches it (our pid
 * the reader; py_trampolines off reaches it as an option), and hooks of
 * the code objects it found those the probes name, only those (it finds
 * by name: a method named as a module's function too); it waits until the
 * agent took that arm (a slow one too), and the process is timing
 * (pt_run__agent_ok), its agent loaded by its environment (or earlier).
 * An agent that cannot answer (its process stopped) is waited for 3 s,
 * said, and the process is waiting until a tick sees it hook. A failure
 * closes the agent and keeps why: BPF refusing the sites, another live
 * proftrace attached (-EBUSY), probes that do not fit the segment
 * (-E2BIG), an interpreter the agent cannot run in (-ENOTSUP), a segment
 * without its library (-ENOENT), a library without the two sites
 * (-ENOEXEC), a memfd of the agent's name that is not its (-EPERM:
 * foreign; with --inject, refused as --inject's), --inject with no agent
 * to load (tried once).
 *
 * pt_run__agent_tick is the heartbeat (at the now given) and the state:
 * a conflict is said once and blocks, with the agent's dormant reason
 * when it went dormant for another cause; a replaced hook is said once,
 * as the loss only, and the process is lost for good. A segment whose
 * memory goes from under us is said once (by a tick, or by the stop when
 * a heartbeat met it since), lost, not written again, and what the agent
 * said last is kept. pt_run__agents_alive heartbeats a started agent;
 * pt_run__agent_stop keeps what the agent said and detaches it (it goes
 * dormant).
 *
 * PEP 768 (3.14+): the run asked the interpreter to load the agent; each
 * tick looks again: not up yet, nothing said; up, said once and timing;
 * the script failed (its words said, made printable) or what is there is
 * refused: said once, kept, never tried again; the stop removes the
 * script's folder.
 *
 * Not here: the ask itself (pt_pep768__exec; -EINPROGRESS at start)
 * needs a 3.14 interpreter, which this machine has not (pyenv 3.6 to
 * 3.13): the state it leaves is written by hand where the tick's tests
 * need it (tests/unit/python/test_pep768 checks the protocol);
 * --inject's ptrace load (tests/integration test_inject.py,
 * test_inject_stop.py); what BPF does at the agent's sites
 * (tests/integration test_agent.py). pt_run__agent_free runs in every
 * test's teardown (pt_run__free): ASAN's leak check is its test.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
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
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "attach/attach.h"
#include "attach/elfsyms.h"
#include "python/agent.h"
#include "run/env.h"
#include "run/pyagent.h"
#include "run/pyproc.h"
#include "run/run.h"
#include "run/steps.h"
#include "shim/memseg.h"
#include "shim/ptagent.h"
#include "util/helpers.h"
#include "util/segment.h"
#include "util/util.h"
#include "pyfx.h"
#include "runfx.h"

#define MS 1000000ull

/* A library of the agent's name without its sites (a copy of another). */
#define NOSITES_LIB "libproftrace_agent-nosites.so"

/* What the targets file of a child that plays the agent names (it is
 * this binary, forked). */
RUNFX_VICTIM(pyagent_victim);

static const char native_conf[] = "step native:exe:pyagent_victim\n";
/* Of ptmod's six functions, Engine.step and work are named. */
static const char py_conf[] = "step   py:ptmod.Engine.step\n"
			      "bucket a.work py:ptmod::work\n";

/* ---- BPF, stood in for (-Wl,--wrap) ---- */

/* What pt_attach__agent was asked; fail: what it answers (0: done). */
static struct {
	int calls;
	int fail;
	unsigned int pidx;
	int pid;
	char host[PATH_MAX], path[PATH_MAX];
	uint64_t enter, exit;
	bool clocks;
} bpf;

/* The code objects BPF was told about (pt_attach__py_code). */
static struct {
	size_t n;
	uint64_t code[64];
} answers;

int __wrap_pt_attach__agent(struct pt_attach *a, unsigned int pidx, int pid, const char *host_path,
			    const char *path, uint64_t enter_off, uint64_t exit_off, bool clocks,
			    char *err, size_t errlen);
int __wrap_pt_attach__agent(struct pt_attach *a, unsigned int pidx, int pid, const char *host_path,
			    const char *path, uint64_t enter_off, uint64_t exit_off, bool clocks,
			    char *err, size_t errlen)
{
	bpf.calls++;
	bpf.pidx = pidx;
	bpf.pid = pid;
	snprintf(bpf.host, sizeof(bpf.host), "%s", host_path);
	snprintf(bpf.path, sizeof(bpf.path), "%s", path);
	bpf.enter = enter_off;
	bpf.exit = exit_off;
	bpf.clocks = clocks;
	if (bpf.fail)
		snprintf(err, errlen, "cannot probe the Python agent %s: %s", path,
			 strerror(-bpf.fail));
	return bpf.fail;
}

int __wrap_pt_attach__py_code(struct pt_attach *a, int pid, uint64_t code,
			      const struct pt_py_code *val);
int __wrap_pt_attach__py_code(struct pt_attach *a, int pid, uint64_t code,
			      const struct pt_py_code *val)
{
	if (answers.n < sizeof(answers.code) / sizeof(answers.code[0]))
		answers.code[answers.n++] = code;
	return 0;
}

/* ---- the fixture ---- */

struct fx {
	struct run r;
	bool opened;
	struct pyfx py;
	pid_t child; /* a child that plays the agent, or a waiting one */
	pid_t other; /* another proftrace */
	char path[64];
	char agent[PATH_MAX];
	char tmp[64]; /* a folder of the test's ("" : none) */
	struct pt_segment seg;
	bool seg_open;
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	if (!x)
		return -1;
	x->py.pid = x->py.in = -1;
	x->child = x->other = -1;
	memset(&bpf, 0, sizeof(bpf));
	memset(&answers, 0, sizeof(answers));
	*state = x;
	return 0;
}

/* A folder of the test's, and what the tests or the code under test
 * may have left in it. */
static void remove_dir(const char *dir)
{
	static const char *const names[] = { "agent.py", "failed", NOSITES_LIB };
	char path[128];

	if (!dir[0])
		return;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

static int teardown(void **state)
{
	struct fx *x = *state;

	if (x->seg_open)
		pt_segment__close(&x->seg);
	if (x->opened)
		pt_run__free(&x->r); /* pt_run__agent_free, for each process */
	pyfx__stop(&x->py);
	runfx__reap(x->child);
	runfx__reap(x->other);
	if (x->path[0])
		unlink(x->path);
	remove_dir(x->tmp);
	unsetenv(PT_LIBDIR_ENV);
	free(x);
	return 0;
}

/* The run of pid, as `proftrace -p PID --targets FILE [--inject]` opens
 * it: its one process. */
static struct proc *open_run(struct fx *x, int pid, const char *text, bool inject)
{
	struct pt_env env = { 0 };

	snprintf(x->path, sizeof(x->path), "/tmp/pt-test-XXXXXX");
	assert_int_equal(runfx__targets(x->path, text), 0);
	env.pid = env.pids[0] = pid;
	env.npids = 1;
	env.targets = x->path;
	env.quiet = true;
	env.inject = inject;
	x->opened = true;
	assert_int_equal(pt_run__open(&x->r, &env), 0);
	assert_int_equal(x->r.procs.n, 1);
	return x->r.procs.v[0];
}

/* The agent library make built (NULL: the test is skipped, said). */
static const char *agent_lib(struct fx *x)
{
	const char *agent = pyfx__agent(x->agent, sizeof(x->agent));

	if (!agent)
		print_message("skipped: no Python agent (make builds libproftrace_agent.so; "
			      "$PT_AGENT names it)\n");
	return agent;
}

/* The run of a CPython child (python; the agent preloaded when
 * with_agent), its names read as at attach (pt_run__py_start, before the
 * agent in attach_proc too). NULL (skipped, said) when python or the
 * agent is not there. */
static struct proc *open_python(struct fx *x, const char *python, bool with_agent, const char *text)
{
	const char *agent = NULL;
	struct proc *p;

	if (!python || access(python, X_OK)) {
		print_message("skipped: no %s\n", python ? python : "such python");
		return NULL;
	}
	if (with_agent && !(agent = agent_lib(x)))
		return NULL;
	assert_int_equal(pyfx__start(&x->py, python, agent, false), 0);
	p = open_run(x, x->py.pid, text, false);
	if (p->python.have)
		assert_int_equal(pt_run__py_start(p), 0);
	return p;
}

/* The agent's segment in pid, as the agent and proftrace write it: the
 * test's own mapping (closed at teardown). */
static struct ptag_header *segment(struct fx *x, int pid)
{
	char err[512];

	if (!x->seg_open) {
		if (pt_segment__open(&x->seg, pid, pt_agent__segment_kind(), err, sizeof(err)))
			fail_msg("%s", err);
		x->seg_open = true;
	}
	return x->seg.map;
}

#define LD(f) __atomic_load_n(&(f), __ATOMIC_ACQUIRE)
#define ST(f, v) __atomic_store_n(&(f), (v), __ATOMIC_RELEASE)

/* ---- what is said ---- */

/* stderr into a temporary file, until said(). */
static void hear(struct runfx_ear *c)
{
	assert_int_equal(runfx__hear(c, 2), 0);
}

/* stderr back, and what it got (malloc'ed). */
static char *said(struct runfx_ear *c)
{
	char *out = runfx__heard(c);

	assert_non_null(out);
	return out;
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

/* pt_run__agent_start, what it said on stderr in *out (malloc'ed). */
static int start(struct proc *p, char *err, size_t errlen, char **out)
{
	struct runfx_ear c;
	int e;

	hear(&c);
	e = pt_run__agent_start(p, err, errlen);
	*out = said(&c);
	return e;
}

/* A process of Debian's 3.11 with the agent preloaded, its agent started
 * for py_conf (nothing in it refused); the test is skipped without that
 * Python. */
static struct proc *started(struct fx *x)
{
	struct proc *p = open_python(x, PYFX_DEBIAN, true, py_conf);
	char err[512], *out;

	if (!p)
		skip();
	assert_int_equal(start(p, err, sizeof(err), &out), 0);
	free(out);
	return p;
}

/* A failed start: e, the same text kept for the report, no agent. */
static void assert_refused(struct proc *p, int want, const char *err, int e)
{
	assert_int_equal(e, want);
	assert_non_null(p->agent.why);
	assert_string_equal(p->agent.why, err);
	assert_null(p->agent.handle);
	assert_int_equal(p->agent.state, PT_AGENT_WAITING);
	assert_false(pt_run__agent_ok(p));
}

/* The code objects the agent was asked to hook are exactly those of
 * Engine.step and work, the two of ptmod's that py_conf names. */
static void assert_hooks_named(const struct fx *x, const struct proc *p)
{
	const uint64_t named[] = { x->py.codes[1], x->py.codes[3] };

	assert_int_equal(p->agent.narm, 2);
	assert_non_null(p->agent.arm);
	for (uint32_t i = 0; i < 2; i++)
		if (p->agent.arm[0] != named[i] && p->agent.arm[1] != named[i])
			fail_msg("code object 0x%" PRIx64 " not asked for", named[i]);
}

/* Wait (10 s at most: the machine is shared) until the agent's segment
 * says state. */
static bool wait_state(const struct ptag_header *h, uint32_t state)
{
	struct timespec ts = { 0, 5 * MS };

	for (int i = 0; i < 2000; i++) {
		if (LD(h->state) == state)
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

/* ---- a CPython child: the agent, or none ---- */

/* Started without the agent: none (-ENOENT), what to do kept; BPF not
 * asked; ticks and the stop do nothing and say nothing. */
static void test_no_agent(void **state)
{
	struct fx *x = *state;
	struct proc *p = open_python(x, PYFX_DEBIAN, false, py_conf);
	char err[512], want[512], *out;
	struct runfx_ear c;
	int e;

	if (!p)
		skip();
	e = start(p, err, sizeof(err), &out);
	snprintf(want, sizeof(want),
		 "no Python agent in pid %d (no memfd \"" PTAG_MEMFD_NAME "\" among its open "
		 "files or mappings): start the server after `eval \"$(proftrace env)\"`, or "
		 "attach with --inject (3.14+: proftrace loads it itself)",
		 x->py.pid);
	assert_string_equal(err, want);
	assert_refused(p, -ENOENT, want, e);
	assert_string_equal(out, "");
	free(out);
	assert_null(p->agent.loaded_by);
	assert_int_equal(bpf.calls, 0);
	hear(&c);
	pt_run__agent_tick(p, pt_now_ns(CLOCK_MONOTONIC));
	pt_run__agents_alive(&x->r);
	pt_run__agent_stop(p);
	out = said(&c);
	assert_string_equal(out, "");
	free(out);
	assert_null(p->agent.handle);
	assert_int_equal(p->agent.state, PT_AGENT_WAITING);
}

/* The agent's two sites, as its library's symbols place them. */
static void assert_sites(struct fx *x, struct proc *p)
{
	struct stat ours, theirs;
	struct pt_elf *elf;
	uint64_t enter = 0, exit = 0;

	assert_int_equal(bpf.calls, 1);
	assert_int_equal(bpf.pid, x->py.pid);
	assert_int_equal(bpf.pidx, p->idx);
	assert_string_equal(bpf.path, x->agent);
	/* the file as we reach it: the same one */
	assert_int_equal(stat(bpf.host, &theirs), 0);
	assert_int_equal(stat(x->agent, &ours), 0);
	assert_true(ours.st_dev == theirs.st_dev && ours.st_ino == theirs.st_ino);
	assert_int_equal(pt_elf__open(&elf, x->agent), 0);
	for (size_t i = 0; i < elf->nsyms; i++) {
		if (!strcmp(elf->syms[i].name, PTAG_SYM_ENTER))
			enter = elf->syms[i].file_off;
		else if (!strcmp(elf->syms[i].name, PTAG_SYM_EXIT))
			exit = elf->syms[i].file_off;
	}
	pt_elf__free(elf);
	assert_true(enter && exit && enter != exit);
	assert_int_equal(bpf.enter, enter);
	assert_int_equal(bpf.exit, exit);
	/* the agent built with us passes its clock reads */
	assert_true(bpf.clocks);
}

/* Started with the agent (LD_PRELOAD): BPF probes its sites, it is
 * attached by us and hooks the two named code objects of ptmod: timing,
 * from the start's return on. Nothing said. */
static void test_start_hooks_named(void **state)
{
	struct fx *x = *state;
	struct proc *p = open_python(x, PYFX_DEBIAN, true, py_conf);
	const struct ptag_header *h;
	char err[512] = "", *out;

	if (!p)
		skip();
	assert_int_equal(start(p, err, sizeof(err), &out), 0);
	assert_string_equal(out, "");
	free(out);
	assert_non_null(p->agent.handle);
	assert_int_equal(p->agent.state, PT_AGENT_TIMING);
	assert_true(pt_run__agent_ok(p));
	assert_null(p->agent.why);
	assert_string_equal(p->agent.loaded_by, "environment");
	assert_sites(x, p);
	assert_hooks_named(x, p);
	/* the agent's side: attached by us, hooking those two */
	h = segment(x, x->py.pid);
	assert_int_equal(LD(h->attached), 1);
	assert_int_equal(LD(h->reader_pid), getpid());
	assert_int_equal(LD(h->state), PTAG_STATE_ACTIVE);
	assert_int_equal(LD(h->narmed), 2);
	assert_int_equal(LD(h->armed_seq), LD(h->arm_seq));
	assert_int_equal(LD(h->options), 0); /* py_trampolines on: the default */
	/* BPF was told which function each named one is before its hook */
	for (size_t i = 0; i < 2; i++) {
		bool told = false;

		for (size_t j = 0; j < answers.n; j++)
			told |= answers.code[j] == p->agent.arm[i];
		assert_true(told);
	}
}

/* The agent's candidates are what its globs match by name: Engine.stop
 * too for py:ptmod::stop (a method named as a function of the module,
 * which names nothing): it is not hooked. */
static void test_hooks_named_only(void **state)
{
	struct fx *x = *state;
	char conf[256], err[512], *out;
	struct proc *p;

	snprintf(conf, sizeof(conf), "%sbucket a.stop py:ptmod::stop\n", py_conf);
	p = open_python(x, PYFX_DEBIAN, true, conf);
	if (!p)
		skip();
	assert_int_equal(start(p, err, sizeof(err), &out), 0);
	free(out); /* that py:ptmod::stop matches nothing: pyhint.c's */
	assert_int_equal(LD(segment(x, x->py.pid)->ncand), 3);
	assert_hooks_named(x, p);
	assert_int_equal(LD(segment(x, x->py.pid)->narmed), 2);
}

/* set py_trampolines off reaches the agent with the attach. */
static void test_trampolines_off(void **state)
{
	struct fx *x = *state;
	char conf[256], err[512], *out;
	struct proc *p;

	snprintf(conf, sizeof(conf), "set py_trampolines off\n%s", py_conf);
	p = open_python(x, PYFX_DEBIAN, true, conf);
	if (!p)
		skip();
	assert_int_equal(start(p, err, sizeof(err), &out), 0);
	free(out);
	assert_int_equal(LD(segment(x, x->py.pid)->options), PTAG_OPT_NO_TRAMPOLINES);
	assert_true(pt_run__agent_ok(p));
}

/* A tick is the heartbeat, at the time given; pt_run__agents_alive
 * beats for every started agent, at the time it is called. Nothing said,
 * still timing. */
static void test_heartbeats(void **state)
{
	struct fx *x = *state;
	struct proc *p = started(x);
	const struct ptag_header *h;
	char *out;
	uint64_t now, before;
	struct runfx_ear c;

	h = segment(x, x->py.pid);
	hear(&c);
	now = pt_now_ns(CLOCK_MONOTONIC) + 7;
	pt_run__agent_tick(p, now);
	assert_int_equal(LD(h->heartbeat_ns), now);
	before = pt_now_ns(CLOCK_MONOTONIC) + 11;
	pt_run__agents_alive(&x->r);
	assert_true(LD(h->heartbeat_ns) >= before);
	out = said(&c);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(p->agent.state, PT_AGENT_TIMING);
}

/* The stop keeps what the agent said while attached (for the report)
 * and detaches it: it goes dormant, its hooks out. Timed, it stays so
 * for the report. */
static void test_stop_detaches(void **state)
{
	struct fx *x = *state;
	struct proc *p = started(x);
	const struct ptag_header *h;
	char *out;
	uint64_t seq;
	struct runfx_ear c;

	h = segment(x, x->py.pid);
	seq = LD(h->attach_seq);
	hear(&c);
	pt_run__agent_stop(p);
	out = said(&c);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(LD(h->attached), 0);
	assert_true(wait_state(h, PTAG_STATE_DORMANT));
	assert_int_equal(LD(h->dormant_reason), PTAG_DORMANT_DETACH);
	assert_int_equal(LD(h->attach_seq), seq);
	/* as it was before the detach */
	assert_int_equal(p->agent.last.state, PTAG_STATE_ACTIVE);
	assert_int_equal(p->agent.last.narmed, 2);
	assert_true(pt_run__agent_ok(p));
}

/* An agent that cannot answer (its process stopped) is waited for 3 s
 * and said; the start returns with the process waiting. Running again,
 * a tick sees it hook: timing, nothing more said. */
static void test_stopped_process_waits(void **state)
{
	struct fx *x = *state;
	struct proc *p = open_python(x, PYFX_DEBIAN, true, py_conf);
	struct timespec ts = { 0, 10 * MS };
	char err[512], want[512], *out;
	struct runfx_ear c;

	if (!p)
		skip();
	assert_int_equal(kill(x->py.pid, SIGSTOP), 0);
	assert_int_equal(start(p, err, sizeof(err), &out), 0);
	snprintf(want, sizeof(want),
		 "proftrace: warning: pid %d: the Python agent has not answered in 3 s (never "
		 "attached): its calls are timed once it does\n",
		 x->py.pid);
	assert_string_equal(out, want);
	free(out);
	assert_non_null(p->agent.handle);
	assert_int_equal(p->agent.state, PT_AGENT_WAITING);
	assert_false(pt_run__agent_ok(p));
	assert_null(p->agent.why);

	assert_int_equal(kill(x->py.pid, SIGCONT), 0);
	hear(&c);
	/* until it hooked: a tick may see it active before its candidates
	 * (30 s at most: the machine is shared) */
	for (int i = 0; i < 3000 && !(pt_run__agent_ok(p) && p->agent.narm); i++) {
		pt_run__agent_tick(p, pt_now_ns(CLOCK_MONOTONIC));
		nanosleep(&ts, NULL);
	}
	out = said(&c);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(p->agent.state, PT_AGENT_TIMING);
	assert_hooks_named(x, p);
}

/* Another proftrace, a child of this test: attached to pid's agent, its
 * heartbeat kept until it is killed. */
static pid_t other_proftrace(struct proc *p)
{
	pid_t parent = getpid(), pid;
	int fds[2];
	char c = 0;

	assert_int_equal(pipe(fds), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct timespec ts = { 0, 50 * MS };
		struct pt_agent *a;
		char err[512];

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		close(fds[0]);
		if (pt_agent__open(&a, p->tracee.pid, err, sizeof(err)) ||
		    pt_agent__attach(a, NULL, 0, &p->python.rt.L, pt_now_ns(CLOCK_MONOTONIC)))
			_exit(1);
		if (write(fds[1], &c, 1) != 1)
			_exit(1);
		for (;;) {
			pt_agent__heartbeat(a, pt_now_ns(CLOCK_MONOTONIC));
			nanosleep(&ts, NULL);
		}
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &c, 1), 1);
	close(fds[0]);
	return pid;
}

/* Another live proftrace attached first: -EBUSY, said as such, the
 * agent closed and left to the other. */
static void test_another_proftrace(void **state)
{
	struct fx *x = *state;
	struct proc *p = open_python(x, PYFX_DEBIAN, true, py_conf);
	char err[512], *out;
	int e;

	if (!p)
		skip();
	x->other = other_proftrace(p);
	e = start(p, err, sizeof(err), &out);
	assert_string_equal(err, "another proftrace is attached to its Python agent");
	assert_refused(p, -EBUSY, err, e);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(LD(segment(x, x->py.pid)->reader_pid), x->other);
}

/* py: probes whose modules and names do not fit the segment's 8 KiB:
 * -E2BIG, said as such, nothing attached. */
static void test_probes_do_not_fit(void **state)
{
	struct fx *x = *state;
	size_t len = 0, cap = 64 * 256;
	char *conf = calloc(1, cap), mod[201], err[512], *out;
	struct proc *p;
	int e;

	assert_non_null(conf);
	memset(mod, 'm', sizeof(mod) - 1);
	mod[sizeof(mod) - 1] = 0;
	/* 48 pairs of a 202-character module and a name: over 9 KiB */
	for (int i = 0; i < 48; i++)
		len += (size_t)snprintf(conf + len, cap - len, "bucket a.b%d py:%s%02d::f\n", i,
					mod, i);
	p = open_python(x, PYFX_DEBIAN, true, conf);
	free(conf);
	if (!p)
		skip();
	e = start(p, err, sizeof(err), &out);
	assert_string_equal(err, "the py: probes do not fit the agent's segment");
	assert_refused(p, -E2BIG, err, e);
	free(out);
	assert_int_equal(LD(segment(x, x->py.pid)->attached), 0);
}

/* BPF refuses the agent's sites: its error kept, the agent not even
 * attached (nothing of it hooked for a run that cannot see its calls). */
static void test_bpf_refuses(void **state)
{
	struct fx *x = *state;
	struct proc *p = open_python(x, PYFX_DEBIAN, true, py_conf);
	char err[512], want[PATH_MAX + 64], *out;
	const struct ptag_header *h;
	int e;

	if (!p)
		skip();
	bpf.fail = -EPERM;
	e = start(p, err, sizeof(err), &out);
	snprintf(want, sizeof(want), "cannot probe the Python agent %s: %s", x->agent,
		 strerror(EPERM));
	assert_string_equal(err, want);
	assert_refused(p, -EPERM, want, e);
	free(out);
	assert_int_equal(bpf.calls, 1);
	h = segment(x, x->py.pid);
	assert_int_equal(LD(h->attach_seq), 0);
	assert_int_equal(LD(h->attached), 0);
}

/* An interpreter the agent cannot run in (3.7: it made its segment and
 * said why there): -ENOTSUP with its words, BPF not asked. */
static void test_unsupported_python(void **state)
{
	struct fx *x = *state;
	char py[PATH_MAX], err[512], want[256], *out;
	const char *python = pyfx__pyenv(7, py, sizeof(py));
	struct proc *p;
	int e;

	if (!python) {
		print_message("skipped: no pyenv python3.7\n");
		skip();
	}
	/* no CPython the run knows: its targets name a function of libc */
	p = open_python(x, python, true, "step native:*libc.so*:getpid\n");
	if (!p)
		skip();
	e = start(p, err, sizeof(err), &out);
	/* its version as Py_GetVersion() gives it, cut at 20 characters */
	snprintf(want, sizeof(want), "the Python agent cannot run there: Python %s ",
		 x->py.version);
	if (strncmp(err, want, strlen(want)) || !strstr(err, " is not supported (3.8 to 3.14)"))
		fail_msg("'%s'", err);
	assert_refused(p, -ENOTSUP, err, e);
	free(out);
	assert_int_equal(bpf.calls, 0);
	assert_string_equal(p->agent.loaded_by, "environment");
}

/* ---- its segment lost ---- */

/* The run's own mapping of pid's agent segment (the handle's, not the
 * test's), replaced by an empty file: a read of it faults from then on,
 * which is what a truncated segment does (a sealed memfd cannot be
 * truncated: nothing known does this). */
static void lose_segment(struct fx *x)
{
	char line[512], want[96];
	void *at = NULL;
	size_t len = 0;
	int empty;
	FILE *f;

	pt_memseg__link(want, sizeof(want), PTAG_MEMFD_NAME);
	f = fopen("/proc/self/maps", "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (!strstr(line, want) || sscanf(line, "%lx-%lx", &lo, &hi) != 2 ||
		    (x->seg_open && (void *)lo == x->seg.map))
			continue;
		assert_null(at);
		at = (void *)lo;
		len = hi - lo;
	}
	fclose(f);
	assert_non_null(at);
	empty = (int)syscall(SYS_memfd_create, "pa-empty", 0);
	assert_true(empty >= 0);
	assert_true(mmap(at, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, empty, 0) == at);
	close(empty);
}

/* The loss said, once, in out; and kept for the report. */
static void assert_lost_said(struct fx *x, struct proc *p, const char *out)
{
	char head[128];
	const char *tail = "(its memory went from under us): proftrace stopped reading it, py: "
			   "calls after that are not timed";

	snprintf(head, sizeof(head), "a read of its segment %s faulted at +",
		 pt_agent__path(p->agent.handle));
	assert_int_equal(nlines(out), 1);
	if (strncmp(p->agent.truncated, head, strlen(head)) || !strstr(p->agent.truncated, tail))
		fail_msg("'%s'", p->agent.truncated);
	snprintf(head, sizeof(head), "proftrace: warning: pid %d: the Python agent: ", x->py.pid);
	if (strncmp(out, head, strlen(head)) ||
	    strncmp(out + strlen(head), p->agent.truncated, strlen(p->agent.truncated)) ||
	    strcmp(out + strlen(head) + strlen(p->agent.truncated),
		   "; the rest of the profile is kept\n"))
		fail_msg("'%s'", out);
	assert_int_equal(p->agent.state, PT_AGENT_LOST);
	assert_false(pt_run__agent_ok(p));
}

/* Lost while timing: the next ticks say it, once, and the stop does not
 * again; nothing is written to it again (no heartbeat, no detach: the
 * agent times out by itself); what it said last is kept. */
static void test_lost_said_once(void **state)
{
	struct fx *x = *state;
	struct proc *p = started(x);
	const struct ptag_header *h;
	char *out;
	uint64_t hb, now;
	struct runfx_ear c;

	h = segment(x, x->py.pid);
	hb = LD(h->heartbeat_ns);
	lose_segment(x);
	hear(&c);
	now = pt_now_ns(CLOCK_MONOTONIC);
	pt_run__agent_tick(p, now + 1);
	pt_run__agent_tick(p, now + 2);
	pt_run__agents_alive(&x->r);
	pt_run__agent_tick(p, now + 3);
	out = said(&c);
	assert_lost_said(x, p, out);
	free(out);
	hear(&c);
	pt_run__agent_tick(p, now + 4);
	pt_run__agent_stop(p);
	out = said(&c);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(p->agent.state, PT_AGENT_LOST);
	assert_int_equal(LD(h->heartbeat_ns), hb);
	assert_int_equal(LD(h->attached), 1);
	assert_int_equal(LD(h->reader_pid), getpid());
	assert_int_equal(p->agent.last.state, PTAG_STATE_ACTIVE);
	assert_int_equal(p->agent.last.narmed, 2);
}

/* Lost after the last tick (a heartbeat faulted): the stop says it. */
static void test_lost_said_by_stop(void **state)
{
	struct fx *x = *state;
	struct proc *p = started(x);
	char *out;
	struct runfx_ear c;

	lose_segment(x);
	hear(&c);
	pt_run__agents_alive(&x->r);
	pt_run__agent_stop(p);
	out = said(&c);
	assert_lost_said(x, p, out);
	free(out);
	assert_int_equal(LD(segment(x, x->py.pid)->attached), 1);
}

/* ---- PEP 768: asked, each tick looks again ---- */

/*
 * What pt_run__agent_start leaves once it asked a 3.14 interpreter to run
 * its script (and returned -EINPROGRESS): the script in a folder of its
 * own, the time asked. Written by hand: no constructor here, as
 * the ask needs a 3.14 interpreter (pyenv has 3.6 to 3.13 on this
 * machine). The CPython child plays the interpreter that ran the script
 * (started with the agent) or has not yet (without).
 */
static void asked_through_pep768(struct fx *x, struct proc *p)
{
	char path[96];
	FILE *f;

	snprintf(p->agent.pep768_dir, sizeof(p->agent.pep768_dir), "/tmp/proftrace-pep768-XXXXXX");
	assert_non_null(mkdtemp(p->agent.pep768_dir));
	snprintf(x->tmp, sizeof(x->tmp), "%s", p->agent.pep768_dir); /* removed at teardown */
	snprintf(path, sizeof(path), "%s/agent.py", p->agent.pep768_dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("import ctypes\n", f);
	assert_int_equal(fclose(f), 0);
	p->agent.pep768_asked = pt_now_ns(CLOCK_MONOTONIC);
}

static bool exists(const char *dir, const char *name)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "%s%s%s", dir, name ? "/" : "", name ? name : "");
	return !lstat(path, &st);
}

/* Not up yet: nothing said, the script kept for the next tick (a file
 * "failed" that is a link is not the script's: not followed). The stop
 * removes the folder. */
static void test_pep768_not_yet(void **state)
{
	struct fx *x = *state;
	struct proc *p = open_python(x, PYFX_DEBIAN, false, py_conf);
	char link[128], *out;
	struct runfx_ear c;

	if (!p)
		skip();
	asked_through_pep768(x, p);
	snprintf(link, sizeof(link), "%s/failed", x->tmp);
	assert_int_equal(symlink(x->path, link), 0);
	hear(&c);
	pt_run__agent_tick(p, pt_now_ns(CLOCK_MONOTONIC));
	pt_run__agent_tick(p, pt_now_ns(CLOCK_MONOTONIC));
	out = said(&c);
	assert_string_equal(out, "");
	free(out);
	assert_null(p->agent.handle);
	assert_true(exists(x->tmp, "agent.py"));
	assert_string_equal(p->agent.pep768_dir, x->tmp);
	pt_run__agent_stop(p);
	assert_false(exists(x->tmp, NULL));
	assert_string_equal(p->agent.pep768_dir, "");
	assert_int_equal(bpf.calls, 0);
}

/* Up: said once, with when; loaded by PEP 768, timing; its folder gone. */
static void test_pep768_loaded(void **state)
{
	struct fx *x = *state;
	struct proc *p = open_python(x, PYFX_DEBIAN, true, py_conf);
	char want[128], *out;
	struct runfx_ear c;

	if (!p)
		skip();
	asked_through_pep768(x, p);
	hear(&c);
	pt_run__agent_tick(p, pt_now_ns(CLOCK_MONOTONIC));
	pt_run__agent_tick(p, pt_now_ns(CLOCK_MONOTONIC));
	out = said(&c);
	snprintf(want, sizeof(want), "proftrace: pid %d: the Python agent loaded (PEP 768) at +",
		 x->py.pid);
	assert_int_equal(nlines(out), 1);
	if (strncmp(out, want, strlen(want)) ||
	    !strstr(out, "s: its named calls are timed from now on\n"))
		fail_msg("'%s'", out);
	free(out);
	assert_non_null(p->agent.handle);
	assert_string_equal(p->agent.loaded_by, "pep768");
	assert_int_equal(p->agent.state, PT_AGENT_TIMING);
	assert_true(pt_run__agent_ok(p));
	assert_hooks_named(x, p);
	assert_false(exists(x->tmp, NULL));
	assert_string_equal(p->agent.pep768_dir, "");
	assert_int_equal(bpf.calls, 1);
}

/* The script could not load it: its words (made printable) said once and
 * kept for the report, the folder removed, never tried again. */
static void test_pep768_failed(void **state)
{
	struct fx *x = *state;
	struct proc *p = open_python(x, PYFX_DEBIAN, false, py_conf);
	const char *why = "the agent could not be loaded through PEP 768: OSError: no?such?file";
	char path[128], want[256], *out;
	struct runfx_ear c;
	FILE *f;

	if (!p)
		skip();
	asked_through_pep768(x, p);
	snprintf(path, sizeof(path), "%s/failed", x->tmp);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("OSError: no\nsuch\177file", f);
	assert_int_equal(fclose(f), 0);
	hear(&c);
	pt_run__agent_tick(p, pt_now_ns(CLOCK_MONOTONIC));
	pt_run__agent_tick(p, pt_now_ns(CLOCK_MONOTONIC));
	out = said(&c);
	snprintf(want, sizeof(want), "proftrace: warning: pid %d: %s\n", x->py.pid, why);
	assert_string_equal(out, want);
	free(out);
	assert_string_equal(p->agent.why, why);
	assert_null(p->agent.handle);
	assert_false(exists(x->tmp, NULL));
	assert_string_equal(p->agent.pep768_dir, "");
}

/* ---- a child that plays the agent ---- */

enum fake {
	FAKE_AGENT,	 /* the agent's segment, and what the agent does with it */
	FAKE_SLOW_AGENT, /* the same, its candidates and arms late (SLOW_NS) */
	FAKE_FOREIGN,	 /* a memfd of the agent's name, never to be sealed */
};

/* How late a slow agent applies an arm; its candidates come twice as
 * late, after it went active. */
#define SLOW_NS (200 * MS)

/* The agent's segment, published as the agent publishes it: magic last. */
static struct ptag_header *fake_segment(void)
{
	struct ptag_header *h;
	void *mem = NULL;
	int fd = -1;

	if (pt_memseg__create(PTAG_MEMFD_NAME, PTAG_SIZE, &mem, &fd))
		return NULL;
	h = mem;
	h->version = PTAG_VERSION;
	h->header_size = PTAG_HEADER_SIZE;
	h->total_size = PTAG_SIZE;
	h->agent_pid = (uint32_t)getpid();
	h->py_hex = 0x030b02f0;
	h->tool_id = -1;
	h->files_off = PTAG_FILES_OFF;
	h->files_size = PTAG_FILES_SIZE;
	h->cand_off = PTAG_CAND_OFF;
	h->cand_cap = PTAG_MAX_CODES;
	h->arm_off = PTAG_ARM_OFF;
	h->arm_cap = PTAG_MAX_CODES;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(h->magic, PTAG_MAGIC, PTAG_MAGIC_LEN);
	return h;
}

/* What the agent's thread does (shim/agent/agent.c), every millisecond:
 * active for a new attach, unless a conflict was written (then it stays
 * dormant, as the agent does when what it needs is held); its candidates
 * published (none: there is no interpreter), each arm applied while
 * active, late by 2 * late and late; dormant once detached. The test
 * writes the rest. */
static void play_agent(struct ptag_header *h, uint64_t late)
{
	struct timespec ts = { 0, MS };
	uint64_t seen = 0, cand_at = 0, arm_seen = 0, arm_at = 0;

	for (;;) {
		uint64_t seq = LD(h->attach_seq), now = pt_now_ns(CLOCK_MONOTONIC);
		bool attached = LD(h->attached);

		if (attached && seq != seen) {
			seen = seq;
			if (!LD(h->conflict)) {
				h->active_seq = seq;
				h->activations++;
				h->dormant_reason = PTAG_DORMANT_NEVER;
				ST(h->state, PTAG_STATE_ACTIVE);
				cand_at = now + 2 * late;
			}
		}
		if (cand_at && now >= cand_at) {
			h->ncand = 0;
			ST(h->cand_seq, h->cand_seq + 1);
			cand_at = 0;
		}
		if (LD(h->state) == PTAG_STATE_ACTIVE && LD(h->arm_seq) != LD(h->armed_seq)) {
			if (LD(h->arm_seq) != arm_seen) {
				arm_seen = LD(h->arm_seq);
				arm_at = now + late;
			}
			if (now >= arm_at) {
				h->narmed = LD(h->narm);
				ST(h->armed_seq, arm_seen);
			}
		}
		if (LD(h->state) == PTAG_STATE_ACTIVE && !attached) {
			h->narmed = 0;
			h->dormant_reason = PTAG_DORMANT_DETACH;
			ST(h->state, PTAG_STATE_DORMANT);
		}
		nanosleep(&ts, NULL);
	}
}

/* A child of this test (it dies with it) that plays what kind says,
 * with lib loaded first as the agent's library is (NULL: none). */
static pid_t fake_child(enum fake kind, const char *lib)
{
	pid_t parent = getpid(), pid;
	int fds[2];
	char c = 0;

	assert_int_equal(pipe(fds), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct ptag_header *h = NULL;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		close(fds[0]);
		/* the agent's constructor finds no CPython here: it does nothing */
		if (lib && !dlopen(lib, RTLD_NOW))
			_exit(1);
		if (kind != FAKE_FOREIGN && !(h = fake_segment()))
			_exit(1);
		if (kind == FAKE_FOREIGN && syscall(SYS_memfd_create, PTAG_MEMFD_NAME, 0) < 0)
			_exit(1);
		if (write(fds[1], &c, 1) != 1)
			_exit(1);
		if (h)
			play_agent(h, kind == FAKE_SLOW_AGENT ? SLOW_NS : 0);
		for (;;)
			pause();
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &c, 1), 1);
	close(fds[0]);
	return pid;
}

/* The run of a child that plays the agent (kind), with its library:
 * NULL (skipped, said) without the library. */
static struct proc *open_fake(struct fx *x, enum fake kind)
{
	if (!agent_lib(x))
		return NULL;
	x->child = fake_child(kind, x->agent);
	return open_run(x, x->child, native_conf, false);
}

/* The conflict the agent says, as it writes it: text, then the code. */
static void write_conflict(struct ptag_header *h, uint32_t conflict, const char *text)
{
	snprintf(h->conflict_text, sizeof(h->conflict_text), "%s", text);
	ST(h->conflict, conflict);
}

static void blocked_said(char *buf, size_t len, pid_t pid, const char *what)
{
	snprintf(buf, len,
		 "proftrace: warning: pid %d: the Python agent cannot hook: %s; py: functions get "
		 "sampled times and the py: step and buckets are not counted\n",
		 pid, what);
}

static void lost_said(char *buf, size_t len, pid_t pid)
{
	snprintf(buf, len,
		 "proftrace: warning: pid %d: another frame evaluator replaced the agent's: py: "
		 "calls are not seen from now on\n",
		 pid);
}

/* What ticks say. */
static char *ticks(struct proc *p, int n)
{
	struct runfx_ear c;

	hear(&c);
	for (int i = 0; i < n; i++)
		pt_run__agent_tick(p, pt_now_ns(CLOCK_MONOTONIC));
	return said(&c);
}

/* Its attach, as with a real agent: timing, the agent loaded before this
 * run by other means than the environment ("earlier"). */
static void test_fake_agent_times(void **state)
{
	struct fx *x = *state;
	struct proc *p = open_fake(x, FAKE_AGENT);
	char err[512], *out;

	if (!p)
		skip();
	assert_int_equal(start(p, err, sizeof(err), &out), 0);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(p->agent.state, PT_AGENT_TIMING);
	assert_string_equal(p->agent.loaded_by, "earlier");
	assert_int_equal(bpf.calls, 1);
	assert_string_equal(bpf.path, x->agent);
}

/* An agent slow to publish what it found and to hook it: the start
 * waits until it took the candidates and the agent applied their arm
 * (the program's calls are timed from the start's return on). */
static void test_start_waits_for_the_arm(void **state)
{
	struct fx *x = *state;
	struct proc *p = open_fake(x, FAKE_SLOW_AGENT);
	const struct ptag_header *h;
	char err[512], *out;

	if (!p)
		skip();
	assert_int_equal(start(p, err, sizeof(err), &out), 0);
	assert_string_equal(out, "");
	free(out);
	h = segment(x, x->child);
	assert_int_equal(LD(h->cand_seq), 1);
	assert_non_null(p->agent.arm); /* the candidates' arm asked */
	assert_int_equal(LD(h->armed_seq), LD(h->arm_seq));
	assert_int_equal(p->agent.state, PT_AGENT_TIMING);
}

/* A conflict while timing (an arm refused: the agent stays active) is
 * said once and blocks; the agent going dormant after that adds nothing;
 * neither its conflict going away nor the agent active again make it
 * timing again. A replaced hook after that is said once: lost, for good
 * (a new conflict is not said). */
static void test_blocked_then_lost(void **state)
{
	struct fx *x = *state;
	struct proc *p = open_fake(x, FAKE_AGENT);
	const char *what = "another frame evaluator (PEP 523) is installed: f in libx.so";
	char err[512], want[512], *out;
	struct ptag_header *h;

	if (!p)
		skip();
	assert_int_equal(start(p, err, sizeof(err), &out), 0);
	free(out);
	h = segment(x, x->child);
	write_conflict(h, PTAG_CONFLICT_EVAL_FRAME, what);
	out = ticks(p, 3);
	blocked_said(want, sizeof(want), x->child, what);
	assert_string_equal(out, want);
	free(out);
	assert_int_equal(p->agent.state, PT_AGENT_BLOCKED);
	assert_false(pt_run__agent_ok(p));
	assert_non_null(p->agent.handle);

	h->dormant_reason = PTAG_DORMANT_TIMEOUT;
	ST(h->state, PTAG_STATE_DORMANT);
	out = ticks(p, 2);
	assert_string_equal(out, "");
	free(out);
	write_conflict(h, PTAG_CONFLICT_NONE, "");
	h->dormant_reason = PTAG_DORMANT_NEVER;
	ST(h->state, PTAG_STATE_ACTIVE);
	out = ticks(p, 2);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(p->agent.state, PT_AGENT_BLOCKED);

	ST(h->hook_lost, 1);
	out = ticks(p, 3);
	lost_said(want, sizeof(want), x->child);
	assert_string_equal(out, want);
	free(out);
	assert_int_equal(p->agent.state, PT_AGENT_LOST);
	write_conflict(h, PTAG_CONFLICT_PYTHON_ERROR, "a call failed");
	out = ticks(p, 2);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(p->agent.state, PT_AGENT_LOST);
	assert_false(pt_run__agent_ok(p));
}

/* The agent's frame evaluator replaced while timing, written as the agent
 * writes it (the loss counted, then the conflict that says it): said
 * once, as the loss; lost. */
static void test_hook_replaced(void **state)
{
	struct fx *x = *state;
	struct proc *p = open_fake(x, FAKE_AGENT);
	char err[512], want[512], *out;
	struct ptag_header *h;

	if (!p)
		skip();
	assert_int_equal(start(p, err, sizeof(err), &out), 0);
	free(out);
	h = segment(x, x->child);
	ST(h->hook_lost, 1);
	write_conflict(h, PTAG_CONFLICT_EVAL_FRAME,
		       "another frame evaluator (PEP 523) replaced the agent's");
	out = ticks(p, 2);
	lost_said(want, sizeof(want), x->child);
	assert_string_equal(out, want);
	free(out);
	assert_int_equal(p->agent.state, PT_AGENT_LOST);
	assert_false(pt_run__agent_ok(p));
}

/* A conflict there at attach: the start says it (the agent's dormant
 * reason with it when it went dormant for another cause than the
 * conflict) and returns at once, the process blocked and its agent kept
 * (for the report). */
static void test_blocked_at_start(void **state)
{
	static const struct {
		uint32_t state, reason, conflict;
		const char *text, *said;
	} rows[] = {
		/* every sys.monitoring tool id taken: dormant for the conflict */
		{ PTAG_STATE_DORMANT, PTAG_DORMANT_CONFLICT, PTAG_CONFLICT_TOOL_IDS,
		  "sys.monitoring tool ids 3 and 4 are taken: 3=x 4=y",
		  "sys.monitoring tool ids 3 and 4 are taken: 3=x 4=y" },
		/* a Python call failed: dormant, failed */
		{ PTAG_STATE_DORMANT, PTAG_DORMANT_FAILED, PTAG_CONFLICT_PYTHON_ERROR,
		  "the segment's probes or layout are invalid",
		  "the segment's probes or layout are invalid (failed)" },
		/* said before it was ever attached */
		{ PTAG_STATE_DORMANT, PTAG_DORMANT_NEVER, PTAG_CONFLICT_EVAL_FRAME, "f in libx.so",
		  "f in libx.so" },
	};
	struct fx *x = *state;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char err[512], want[512], *out;
		struct ptag_header *h;
		struct proc *p = open_fake(x, FAKE_AGENT);

		if (!p)
			skip();
		h = segment(x, x->child);
		h->dormant_reason = rows[i].reason;
		ST(h->state, rows[i].state);
		write_conflict(h, rows[i].conflict, rows[i].text);
		assert_int_equal(start(p, err, sizeof(err), &out), 0);
		blocked_said(want, sizeof(want), x->child, rows[i].said);
		assert_string_equal(out, want);
		free(out);
		assert_int_equal(p->agent.state, PT_AGENT_BLOCKED);
		assert_false(pt_run__agent_ok(p));
		assert_non_null(p->agent.handle);
		assert_null(p->agent.why);
		/* the next row on a child of its own */
		pt_segment__close(&x->seg);
		x->seg_open = false;
		pt_run__free(&x->r);
		x->opened = false;
		runfx__reap(x->child);
		x->child = -1;
		unlink(x->path);
	}
}

/* Its segment, but not its library: as if none (-ENOENT), said why. */
static void test_segment_without_library(void **state)
{
	struct fx *x = *state;
	char err[512], *out;
	struct proc *p;
	int e;

	x->child = fake_child(FAKE_AGENT, NULL);
	p = open_run(x, x->child, native_conf, false);
	e = start(p, err, sizeof(err), &out);
	assert_string_equal(err, "the agent's segment is there but not its library");
	assert_refused(p, -ENOENT, err, e);
	free(out);
	assert_int_equal(bpf.calls, 0);
	assert_int_equal(LD(segment(x, x->child)->attached), 0);
}

/* from into a new file to */
static void copy(const char *from, const char *to)
{
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	char buf[1 << 16];
	ssize_t n;

	assert_true(in >= 0);
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	assert_true(out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	assert_int_equal(n, 0);
	close(in);
	assert_int_equal(close(out), 0);
}

/* A library of the agent's name without its two sites (another library,
 * copied there): -ENOEXEC, said which. */
static void test_library_without_sites(void **state)
{
	struct fx *x = *state;
	char lib[128], err[512], want[256], *out;
	struct proc *p;
	Dl_info di;
	int e;

	/* cmocka's library: small, and this test has it loaded anyway */
	assert_true(dladdr((void *)_assert_true, &di) && di.dli_fname);
	snprintf(x->tmp, sizeof(x->tmp), "/tmp/pt-test-pyagent-XXXXXX");
	assert_non_null(mkdtemp(x->tmp));
	snprintf(lib, sizeof(lib), "%s/" NOSITES_LIB, x->tmp);
	copy(di.dli_fname, lib);
	x->child = fake_child(FAKE_AGENT, lib);
	p = open_run(x, x->child, native_conf, false);
	e = start(p, err, sizeof(err), &out);
	snprintf(want, sizeof(want), "%s has no " PTAG_SYM_ENTER "/" PTAG_SYM_EXIT, lib);
	assert_string_equal(err, want);
	assert_refused(p, -ENOEXEC, want, e);
	free(out);
	assert_int_equal(bpf.calls, 0);
}

/* A memfd of the agent's name that is not the agent's (not sealed as
 * its is; the process's own doing): -EPERM, foreign (the report says
 * what to do); with --inject, refused as --inject's. */
static void test_foreign_memfd(void **state)
{
	struct fx *x = *state;
	char err[512], head[128], *out;
	const char *tail = " is memfd:" PTAG_MEMFD_NAME " (deleted): not sealed against "
			   "resizing, as our helpers' are; left alone";
	struct proc *p;
	int e;

	for (int inject = 0; inject < 2; inject++) {
		x->child = fake_child(FAKE_FOREIGN, NULL);
		p = open_run(x, x->child, native_conf, inject);
		e = start(p, err, sizeof(err), &out);
		snprintf(head, sizeof(head), "%sPython agent of pid %d: fd/",
			 inject ? "--inject: " : "", x->child);
		if (strncmp(err, head, strlen(head)) || !strstr(err, tail) ||
		    strcmp(strstr(err, tail), tail))
			fail_msg("'%s'", err);
		assert_refused(p, -EPERM, err, e);
		free(out);
		assert_true(p->agent.foreign);
		assert_int_equal(p->agent.inject_tried, inject);
		assert_int_equal(p->agent.inject_failed, inject);
		assert_false(p->agent.injected);
		assert_int_equal(bpf.calls, 0);
		pt_run__free(&x->r);
		x->opened = false;
		runfx__reap(x->child);
		x->child = -1;
		unlink(x->path);
	}
}

/* Asked through PEP 768, and what is there now is refused for good (a
 * memfd of the agent's name that is not its): said once and kept, the
 * script's folder removed, never tried again. */
static void test_pep768_refused(void **state)
{
	struct fx *x = *state;
	const char *head = "Python agent of pid ";
	char want[640], *out;
	struct proc *p;

	x->child = fake_child(FAKE_FOREIGN, NULL);
	p = open_run(x, x->child, native_conf, false);
	asked_through_pep768(x, p);
	out = ticks(p, 3);
	assert_non_null(p->agent.why);
	assert_int_equal(strncmp(p->agent.why, head, strlen(head)), 0);
	snprintf(want, sizeof(want), "proftrace: warning: pid %d: %s\n", x->child, p->agent.why);
	assert_string_equal(out, want);
	free(out);
	assert_true(p->agent.foreign);
	assert_null(p->agent.handle);
	assert_false(exists(x->tmp, NULL));
	assert_string_equal(p->agent.pep768_dir, "");
}

/* --inject with no agent to load (none where proftrace looks): refused as
 * --inject's; tried once: the next start finds none, as without it. */
static void test_inject_nothing_to_load(void **state)
{
	struct fx *x = *state;
	char err[512], want[512], *out;
	struct proc *p;
	int e;

	snprintf(x->tmp, sizeof(x->tmp), "/tmp/pt-test-pyagent-XXXXXX");
	assert_non_null(mkdtemp(x->tmp));
	assert_int_equal(setenv(PT_LIBDIR_ENV, x->tmp, 1), 0);
	x->child = runfx__child();
	assert_true(x->child > 0);
	p = open_run(x, x->child, native_conf, true);
	e = start(p, err, sizeof(err), &out);
	assert_string_equal(err, "--inject: no " PT_AGENT_LIB " to load (build it with make)");
	assert_refused(p, -ENOENT, err, e);
	free(out);
	assert_true(p->agent.inject_tried);
	assert_true(p->agent.inject_failed);
	assert_false(p->agent.injected);

	e = start(p, err, sizeof(err), &out);
	snprintf(want, sizeof(want), "no Python agent in pid %d (no memfd", x->child);
	assert_int_equal(strncmp(err, want, strlen(want)), 0);
	assert_refused(p, -ENOENT, err, e);
	free(out);
	assert_int_equal(bpf.calls, 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_no_agent),
		T(test_start_hooks_named),
		T(test_hooks_named_only),
		T(test_trampolines_off),
		T(test_heartbeats),
		T(test_stop_detaches),
		T(test_stopped_process_waits),
		T(test_another_proftrace),
		T(test_probes_do_not_fit),
		T(test_bpf_refuses),
		T(test_unsupported_python),
		T(test_lost_said_once),
		T(test_lost_said_by_stop),
		T(test_pep768_not_yet),
		T(test_pep768_loaded),
		T(test_pep768_failed),
		T(test_fake_agent_times),
		T(test_start_waits_for_the_arm),
		T(test_blocked_then_lost),
		T(test_hook_replaced),
		T(test_blocked_at_start),
		T(test_segment_without_library),
		T(test_library_without_sites),
		T(test_foreign_memfd),
		T(test_pep768_refused),
		T(test_inject_nothing_to_load),
	};

	return cmocka_run_group_tests_name("pyagent", tests, NULL, NULL);
}
