// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/samples.c: a stack sample into the stacks of its process (and the
 * merged ones), on runs opened by pt_run__open on live CPython children
 * of this test (pyfx.h; and one of its own whose code holds the agent's
 * trampoline file name), no BPF object.
 *
 * Each frame is named from the code object in the child's memory, with
 * the line its position is at (the def line before its first
 * instruction), innermost first; a C-stack shim frame (code 0) and the
 * agent's trampolines are left out; code that cannot be read is
 * "[unknown code]", counted. A frame of a py: function is that
 * function's: found in the sample, it is declared (its state, its last
 * line) before the sample is counted, so its lines count from that very
 * sample. An on-CPU sample that stands for several periods has all but
 * the first booked off the CPU (a late sample); an off-CPU interval is
 * off the CPU whole; the walker's flags are counted. A thread is named
 * once, when first seen (its Python name and comm; "?" and no comm when
 * its comm cannot be read); proftrace's own thread (the agent's) is kept
 * apart. With several processes, the merged stacks get the sample under
 * the merged fids, and the merged function its last line. Samples of a
 * pid not traced, of a process not sampled, or of one that ended go
 * nowhere. Without the agent, the first sample a second after attach
 * works out the py: probes that match nothing from what was sampled
 * (said once); not before, and not without py: probes.
 *
 * Turning sampling on needs the BPF sampler (pt_run__attach's
 * start_sampling, pt_run__py_sample): sampling_on below makes the same
 * objects with the same constructors, and says why it fills the rest.
 *
 * Not here: a target in another PID namespace (its tids as it sees
 * them, for its Python thread names), and a process with the Python
 * agent in use (p->agent.handle: pt_run__agent_start attaches BPF to
 * it), which is asked nothing from here; a sample lost to out of memory.
 */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
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

#include "aggregate/flame.h"
#include "aggregate/stacks.h"
#include "aggregate/top.h"
#include "attach/resolve.h"
#include "bpf/proftrace.h"
#include "python/pythreads.h"
#include "run/env.h"
#include "run/procstate.h"
#include "run/pyhint.h"
#include "run/pyproc.h"
#include "run/run.h"
#include "run/samples.h"
#include "run/steps.h"
#include "sample/pysym.h"
#include "sample/thrname.h"
#include "util/tasks.h"
#include "util/util.h"
#include "pyfx.h"
#include "runfx.h"

#define MS 1000000ull
#define PERIOD (10 * MS) /* 100 Hz */

/* pyfx's code objects (struct pyfx codes[]) */
#define STEP 1 /* Engine.step: def at line 4, its body line 5 */
#define WORK 3 /* work: def at line 10, its body line 11 */

/* A position in each before its first instruction (3.11: -2), at its
 * first (its RESUME, the def line) and in its body (bytes, 3.11). */
#define POS_UNSTARTED (-2)
#define POS_DEF 0
#define POS_STEP_BODY 2
#define POS_WORK_BODY 4

/* Not a code object: nothing mapped there. */
#define NOT_CODE 0x1000

struct fx {
	struct run r;
	bool opened;
	struct pyfx py[2];
	pid_t native; /* a child with no Python, -1: none */
	/* the child with a trampoline's code (tramp_start), -1: none */
	pid_t tramp;
	int tramp_in;
	uint64_t tramp_code, inner_code;
	char path[64];
	char agent[PATH_MAX];
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	if (!x)
		return -1;
	for (int i = 0; i < 2; i++)
		x->py[i].pid = x->py[i].in = -1;
	x->native = x->tramp = -1;
	x->tramp_in = -1;
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	if (x->opened)
		pt_run__free(&x->r);
	for (int i = 0; i < 2; i++)
		pyfx__stop(&x->py[i]);
	runfx__reap(x->native);
	runfx__reap(x->tramp);
	if (x->tramp_in >= 0)
		close(x->tramp_in);
	if (x->path[0])
		unlink(x->path);
	free(x);
	return 0;
}

/* Debian's python3.11 is there (said when not). */
static bool debian(void)
{
	if (!access(PYFX_DEBIAN, X_OK))
		return true;
	print_message("skipped: no %s\n", PYFX_DEBIAN);
	return false;
}

/*
 * Sampling on, as a run turns it on once attached; nothing of it has a
 * constructor a unit test can call, so it is made here, as there, with
 * the constructors they call:
 * - the scratch of one sample and the merged stacks: steps.c's
 *   start_sampling, static, run by pt_run__attach (BPF);
 * - each Python process's sampled part: pt_run__py_sample returns at
 *   once without the BPF sampler (r->smp), and sets p->python.sampled
 *   only once the sampler took the process (pt_sampler__add_process):
 *   what it makes is made here, and p->python.sampled set as it sets it.
 *   Its code objects' map is pt_run__py_start's, called as attach_proc
 *   calls it;
 * - p->t_added: attach_proc's (BPF too), now, as there.
 */
static void sampling_on(struct run *r)
{
	r->sf = calloc(PT_SAMPLE_MAX_FRAMES, sizeof(*r->sf));
	r->msf = calloc(PT_SAMPLE_MAX_FRAMES, sizeof(*r->msf));
	r->labels = calloc(PT_SAMPLE_MAX_FRAMES, sizeof(*r->labels));
	assert_true(r->sf && r->msf && r->labels);
	if (r->multi) {
		r->all.stk = pt_stacks__new();
		assert_non_null(r->all.stk);
	}
	for (size_t i = 0; i < r->procs.n; i++) {
		struct proc *p = r->procs.v[i];
		struct pt_pysym_opts yo = { 0 };

		p->t_added = pt_now_ns(CLOCK_MONOTONIC);
		if (!p->python.have)
			continue;
		assert_int_equal(pt_run__py_start(p), 0);
		yo.layout = &p->python.rt.L;
		yo.types.code_type = p->python.rt.code_type;
		yo.types.unicode_type = p->python.rt.unicode_type;
		yo.mem = p->python.mem;
		yo.pyprobe = p->python.probe;
		p->python.sym = pt_pysym__new(&yo);
		p->v.stk = pt_stacks__new();
		p->python.threads = pt_pythreads__new(&yo.mem, &p->python.rt.L, &yo.types,
						      p->python.rt.runtime);
		p->python.tn = pt_thrname__new(p->python.threads);
		p->python.other_ns = pt_tasks__ns_pid(p->tracee.pid) != p->tracee.pid;
		assert_true(p->python.sym && p->v.stk && p->python.threads && p->python.tn);
		for (size_t k = 0; k < p->nfs; k++) {
			const struct pt_func *f = pt_resolver__func(p->res, k);

			if (f->py && f->lines_spec >= 0)
				pt_stacks__want_lines(p->v.stk, (uint32_t)f->fid);
		}
		p->python.sampled = true;
	}
}

/* The run of pids (-p PID[,PID]) with targets text, sampling on. */
static void open_run(struct fx *x, const pid_t *pids, int n, const char *text)
{
	struct pt_env env = { 0 };

	assert_int_equal(pyfx__targets(x->path, text), 0);
	for (int i = 0; i < n; i++)
		env.pids[env.npids++] = pids[i];
	env.pid = pids[0];
	env.targets = x->path;
	env.quiet = true;
	x->opened = true;
	assert_int_equal(pt_run__open(&x->r, &env), 0);
	assert_int_equal(x->r.procs.n, (size_t)n);
	sampling_on(&x->r);
}

/* n Debian python3.11 children (the agent preloaded when with_agent),
 * their run; false (the test to skip) when python or the agent is not
 * there. */
static bool open_python(struct fx *x, int n, bool with_agent, const char *text)
{
	const char *agent = NULL;
	pid_t pids[2];

	if (!debian())
		return false;
	if (with_agent) {
		agent = pyfx__agent(x->agent, sizeof(x->agent));
		if (!agent) {
			print_message("skipped: no Python agent (make builds "
				      "libproftrace_agent.so; $PT_AGENT names it)\n");
			return false;
		}
	}
	for (int i = 0; i < n; i++) {
		assert_int_equal(pyfx__start(&x->py[i], PYFX_DEBIAN, agent, false), 0);
		pids[i] = x->py[i].pid;
	}
	open_run(x, pids, n, text);
	for (int i = 0; i < n; i++)
		assert_true(x->r.procs.v[i]->python.sampled);
	return true;
}

/* A sample of pid's thread tid: on-CPU (type PT_REC_SAMPLE) or off
 * (PT_REC_OFFCPU), no frames yet. */
static struct pt_sample sample(uint32_t type, int pid, uint32_t tid, uint64_t weight,
			       uint32_t periods)
{
	struct pt_sample s;

	memset(&s, 0, sizeof(s));
	s.type = type;
	s.pid = (uint32_t)pid;
	s.tid = tid;
	s.weight = weight;
	s.periods = periods;
	return s;
}

/* One frame more, outer to those there: code at position pos. */
static void frame(struct pt_sample *s, uint64_t code, int32_t pos)
{
	s->f[s->nframes].code = code;
	s->f[s->nframes++].pos = pos;
}

/* A plain on-CPU sample of child i's main thread at Engine.step's body. */
static void sample_step(struct fx *x, int i)
{
	struct pt_sample s = sample(PT_REC_SAMPLE, x->py[i].pid, (uint32_t)x->py[i].pid, PERIOD, 1);

	frame(&s, x->py[i].codes[STEP], POS_STEP_BODY);
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
}

/* The flame graph of st as folded text (malloc'ed). */
static char *folded(const struct pt_stacks *st)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(pt_flame__write_folded(pt_stacks__flame(st), f), 0);
	fclose(f);
	return buf;
}

/* text has line (without its newline) as a whole line. */
static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, line, n) && (l[n] == '\n' || !l[n]))
			return true;
	return false;
}

static void assert_folded(const struct pt_stacks *st, const char *line)
{
	char *text = folded(st);

	if (!has_line(text, line))
		fail_msg("no line '%s' in:\n%s", line, text);
	free(text);
}

/* The local fid of p's py: function qualname; -1: none. */
static int fid_of(const struct proc *p, const char *qualname)
{
	for (size_t i = 0; i < pt_resolver__nfuncs(p->res); i++)
		if (!strcmp(pt_resolver__func(p->res, i)->symbol, qualname))
			return (int)i;
	return -1;
}

static const struct pt_top_fn *top_fn(const struct pt_stacks *st, const char *qualname)
{
	const struct pt_top *t = pt_stacks__top(st);

	for (size_t i = 0; i < pt_top__nfuncs(t); i++)
		if (!strcmp(pt_top__func(t, i)->qualname, qualname))
			return pt_top__func(t, i);
	return NULL;
}

static const struct pt_stacks_thread *thread_of(const struct pt_stacks *st, uint32_t tid)
{
	for (size_t i = 0; i < pt_stacks__nthreads(st); i++)
		if (pt_stacks__thread(st, i)->tid == tid)
			return pt_stacks__thread(st, i);
	return NULL;
}

static const char step_py[] = "step py:ptmod.Engine.step\n";

/* A stack into its process's stacks: each frame named and at its line,
 * innermost first, the shim's frame left out; the py: function found in
 * it declared before it is counted; the thread named once. */
static void test_stack_into_its_process(void **state)
{
	struct fx *x = *state;
	struct proc *p;
	const struct pt_stacks_totals *tot;
	const struct pt_stacks_time *t;
	const struct pt_stacks_thread *th;
	const struct pt_top_fn *fn;
	struct pt_thrname_stats ts;
	struct pt_sample s;
	char want[256];
	int step;

	if (!open_python(x, 1, false, step_py))
		skip();
	p = x->r.procs.v[0];
	assert_int_equal(pt_resolver__nfuncs(p->res), 0); /* py: functions: found at run time */
	/* Engine.step called from work, through a C-stack shim frame */
	s = sample(PT_REC_SAMPLE, x->py[0].pid, (uint32_t)x->py[0].pid, PERIOD, 1);
	frame(&s, x->py[0].codes[STEP], POS_STEP_BODY);
	frame(&s, 0, 0);
	frame(&s, x->py[0].codes[WORK], POS_WORK_BODY);
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);

	/* found in the sample, and known to the process before it counted */
	step = fid_of(p, "Engine.step");
	assert_true(step >= 0);
	assert_int_equal(pt_resolver__spec_nfuncs(p->res, 0), 1);
	assert_int_equal(p->nfs, pt_resolver__nfuncs(p->res));
	assert_true(p->fs[step].attached);
	assert_int_equal(p->fs[step].last_line, 5);
	t = pt_stacks__func(p->v.stk, (uint32_t)step);
	assert_non_null(t);
	assert_int_equal(t->samples, 1);
	assert_int_equal(t->on_ns, PERIOD);
	assert_int_equal(t->off_ns, 0);

	tot = pt_stacks__totals(p->v.stk);
	assert_int_equal(tot->t.samples, 1);
	assert_int_equal(tot->t.on_ns, PERIOD);
	assert_int_equal(tot->t.off_ns, 0);
	assert_int_equal(tot->python_samples, 1);
	assert_int_equal(tot->unknown_frames, 0); /* the shim's frame is none */
	assert_int_equal(tot->late_samples, 0);

	/* root first: the thread, the caller, the callee, each at its line */
	snprintf(want, sizeof(want),
		 "python3.11 (tid %d);work (ptmod.py:11);Engine.step (ptmod.py:5) %llu",
		 x->py[0].pid, PERIOD / 1000);
	assert_folded(p->v.stk, want);
	assert_int_equal(pt_flame__nstacks(pt_stacks__flame(p->v.stk)), 1);

	/* the top tables: every function, py: or not, by its code */
	fn = top_fn(p->v.stk, "Engine.step");
	assert_non_null(fn);
	assert_string_equal(fn->filename, x->py[0].module);
	assert_int_equal(fn->first_line, PYFX_STEP_LINE);
	assert_int_equal(fn->last_line, 5);
	assert_int_equal(fn->self.on_ns, PERIOD);
	fn = top_fn(p->v.stk, "work");
	assert_non_null(fn);
	assert_int_equal(fn->first_line, PYFX_WORK_LINE);
	assert_int_equal(fn->last_line, 11);
	assert_int_equal(fn->self.on_ns, 0);
	assert_int_equal(fn->total.on_ns, PERIOD);
	assert_int_equal(pt_top__nfuncs(pt_stacks__top(p->v.stk)), 2);

	/* its thread: no Python name (pyfx's child has not imported
	 * threading), its comm */
	assert_int_equal(pt_stacks__nthreads(p->v.stk), 1);
	th = thread_of(p->v.stk, (uint32_t)x->py[0].pid);
	assert_non_null(th);
	assert_string_equal(th->name, "python3.11");
	assert_string_equal(th->comm, "python3.11");
	assert_true(th->python);
	assert_false(th->own);

	/* again: named once; the function known once */
	sample_step(x, 0);
	pt_thrname__stats(p->python.tn, &ts);
	assert_int_equal(ts.comm, 1);
	assert_int_equal(ts.python, 0);
	assert_int_equal(pt_resolver__nfuncs(p->res), 1);
	assert_int_equal(pt_stacks__func(p->v.stk, (uint32_t)step)->samples, 2);
	assert_int_equal(pt_stacks__totals(p->v.stk)->t.samples, 2);
}

/* Frames before their first instruction are at the def line; a `lines`
 * function counts its lines from the sample that finds it. */
static void test_lines(void **state)
{
	struct fx *x = *state;
	const struct pt_stacks_line *ln;
	struct pt_sample s;
	struct proc *p;
	char want[256];
	size_t n;
	int step;

	if (!open_python(x, 1, false, "lines py:ptmod.Engine.step\n"))
		skip();
	p = x->r.procs.v[0];
	s = sample(PT_REC_SAMPLE, x->py[0].pid, (uint32_t)x->py[0].pid, PERIOD, 1);
	frame(&s, x->py[0].codes[STEP], POS_UNSTARTED);
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	step = fid_of(p, "Engine.step");
	assert_true(step >= 0);
	s.f[0].pos = POS_DEF;
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	s.f[0].pos = POS_STEP_BODY;
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	ln = pt_stacks__lines(p->v.stk, (uint32_t)step, &n);
	assert_int_equal(n, 2);
	assert_int_equal(ln[0].line, PYFX_STEP_LINE);
	assert_int_equal(ln[0].t.samples, 2); /* the first sample's among them */
	assert_int_equal(ln[1].line, 5);
	assert_int_equal(ln[1].t.samples, 1);
	snprintf(want, sizeof(want), "python3.11 (tid %d);Engine.step (ptmod.py:4) %llu",
		 x->py[0].pid, 2 * PERIOD / 1000);
	assert_folded(p->v.stk, want);
}

/* An on-CPU sample that stands for several periods (the timer missed
 * some): the first on the CPU, the others off it at the same stack, and
 * counted late; one period, or none said, is on the CPU whole; an
 * off-CPU interval is off it whole, whatever its periods say. */
static void test_late_samples(void **state)
{
	struct fx *x = *state;
	const struct pt_stacks_totals *tot;
	const struct pt_stacks_time *t;
	struct pt_sample s;
	struct proc *p;
	char want[256];
	int pid, step;

	if (!open_python(x, 1, false, step_py))
		skip();
	p = x->r.procs.v[0];
	pid = x->py[0].pid;
	tot = pt_stacks__totals(p->v.stk);
	s = sample(PT_REC_SAMPLE, pid, (uint32_t)pid, 3 * PERIOD, 3);
	frame(&s, x->py[0].codes[STEP], POS_STEP_BODY);
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	step = fid_of(p, "Engine.step");
	assert_true(step >= 0);
	assert_int_equal(tot->t.samples, 1);
	assert_int_equal(tot->t.on_ns, PERIOD);
	assert_int_equal(tot->t.off_ns, 2 * PERIOD);
	assert_int_equal(tot->late_samples, 1);
	assert_int_equal(tot->late_ns, 2 * PERIOD);
	t = pt_stacks__func(p->v.stk, (uint32_t)step);
	assert_int_equal(t->on_ns, PERIOD);
	assert_int_equal(t->off_ns, 2 * PERIOD);
	snprintf(want, sizeof(want), "python3.11 (tid %d);Engine.step (ptmod.py:5) %llu", pid,
		 PERIOD / 1000);
	assert_folded(p->v.stk, want);
	snprintf(want, sizeof(want),
		 "python3.11 (tid %d);Engine.step (ptmod.py:5);" PT_STACKS_OFFCPU " %llu", pid,
		 2 * PERIOD / 1000);
	assert_folded(p->v.stk, want);

	/* one period, and a sample that says none: on the CPU whole */
	s.weight = PERIOD;
	s.periods = 1;
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	s.periods = 0;
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	assert_int_equal(tot->t.samples, 3);
	assert_int_equal(tot->t.on_ns, 3 * PERIOD);
	assert_int_equal(tot->t.off_ns, 2 * PERIOD);
	assert_int_equal(tot->late_samples, 1);

	/* an off-CPU interval of 7 ms: off the CPU, not a sample, not late */
	s = sample(PT_REC_OFFCPU, pid, (uint32_t)pid, 7 * MS, 4);
	frame(&s, x->py[0].codes[STEP], POS_STEP_BODY);
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	assert_int_equal(tot->t.samples, 3);
	assert_int_equal(tot->t.on_ns, 3 * PERIOD);
	assert_int_equal(tot->t.off_ns, 2 * PERIOD + 7 * MS);
	assert_int_equal(tot->intervals, 1);
	assert_int_equal(tot->late_samples, 1);
	assert_int_equal(tot->late_ns, 2 * PERIOD);
	assert_int_equal(t->off_ns, 2 * PERIOD + 7 * MS);
	snprintf(want, sizeof(want),
		 "python3.11 (tid %d);Engine.step (ptmod.py:5);" PT_STACKS_OFFCPU " %llu", pid,
		 (2 * PERIOD + 7 * MS) / 1000);
	assert_folded(p->v.stk, want);
}

/* A pooled sample of a thread without Python (PT_SAMPLEF_POOLED, native
 * frames on): its periods are the samples it stands for, all on the CPU
 * (not late: none of it off the CPU), counted as that many samples. */
static void test_pooled_samples(void **state)
{
	struct fx *x = *state;
	const struct pt_stacks_totals *tot;
	struct pt_sample s;
	struct proc *p;
	int pid;

	if (!open_python(x, 1, false, step_py))
		skip();
	p = x->r.procs.v[0];
	pid = x->py[0].pid;
	tot = pt_stacks__totals(p->v.stk);
	s = sample(PT_REC_SAMPLE, pid, (uint32_t)pid + 1, PT_POOL_EVERY * PERIOD, PT_POOL_EVERY);
	s.flags = PT_SAMPLEF_NOT_PYTHON | PT_SAMPLEF_POOLED;
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	assert_int_equal(tot->t.samples, PT_POOL_EVERY);
	assert_int_equal(tot->not_python, PT_POOL_EVERY);
	assert_int_equal(tot->t.on_ns, PT_POOL_EVERY * PERIOD);
	assert_int_equal(tot->t.off_ns, 0);
	assert_int_equal(tot->late_samples, 0);
	/* the same periods without the flag: a late sample, as before */
	s.flags = PT_SAMPLEF_NOT_PYTHON;
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	assert_int_equal(tot->t.samples, PT_POOL_EVERY + 1);
	assert_int_equal(tot->t.on_ns, (PT_POOL_EVERY + 1) * PERIOD);
	assert_int_equal(tot->t.off_ns, (PT_POOL_EVERY - 1) * PERIOD);
	assert_int_equal(tot->late_samples, 1);
}

/* What the walker says of a stack is counted; code that cannot be read
 * is "[unknown code]", counted. */
static void test_flags_and_unknown_code(void **state)
{
	struct fx *x = *state;
	const struct pt_stacks_totals *tot;
	struct pt_sample s;
	struct proc *p;
	char want[256];
	int pid;

	if (!open_python(x, 1, false, step_py))
		skip();
	p = x->r.procs.v[0];
	pid = x->py[0].pid;
	tot = pt_stacks__totals(p->v.stk);
	/* a thread with no thread state: no frames */
	s = sample(PT_REC_SAMPLE, pid, (uint32_t)pid, PERIOD, 1);
	s.flags = PT_SAMPLEF_NOT_PYTHON;
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	assert_int_equal(tot->not_python, 1);
	assert_int_equal(tot->python_samples, 0);
	assert_false(thread_of(p->v.stk, (uint32_t)pid)->python);
	/* a walk cut at its depth, one stopped at a frame it could not read
	 * (its code unreadable too) */
	s.flags = PT_SAMPLEF_TRUNCATED;
	frame(&s, x->py[0].codes[STEP], POS_STEP_BODY);
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	s.flags = PT_SAMPLEF_UNREADABLE;
	frame(&s, NOT_CODE, 0);
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	assert_int_equal(tot->truncated, 1);
	assert_int_equal(tot->unreadable, 1);
	assert_int_equal(tot->python_samples, 2);
	assert_int_equal(tot->unknown_frames, 1);
	assert_true(thread_of(p->v.stk, (uint32_t)pid)->python);
	snprintf(want, sizeof(want),
		 "python3.11 (tid %d);[unreadable frame];[unknown code];Engine.step (ptmod.py:5) "
		 "%llu",
		 pid, PERIOD / 1000);
	assert_folded(p->v.stk, want);
	/* asleep since before the attach: its stack unknown */
	s = sample(PT_REC_OFFCPU, pid, (uint32_t)pid, 3 * MS, 0);
	s.flags = PT_SAMPLEF_NO_STACK;
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	assert_int_equal(tot->no_stack, 1);
	assert_int_equal(tot->intervals, 1);
	assert_int_equal(tot->t.samples, 3);
	assert_int_equal(tot->t.off_ns, 3 * MS);
}

/* A record that says more frames than a sample holds (a bad one: the
 * sampler checks the size) gives the frames it holds, no more: a frame
 * read past them would be written past the run's scratch, which the
 * asan build of this test catches (the stacks keep 128 frames either
 * way). */
static void test_frames_past_the_sample(void **state)
{
	struct fx *x = *state;
	/* a frame after the sample, for a read past it to find */
	struct {
		struct pt_sample s;
		struct pt_sample_frame after;
	} rec;
	struct proc *p;
	char *text, *c;
	size_t depth = 0;

	if (!open_python(x, 1, false, step_py))
		skip();
	p = x->r.procs.v[0];
	rec.s = sample(PT_REC_SAMPLE, x->py[0].pid, (uint32_t)x->py[0].pid, PERIOD, 1);
	rec.s.flags = PT_SAMPLEF_TRUNCATED;
	while (rec.s.nframes < PT_SAMPLE_MAX_FRAMES)
		frame(&rec.s, x->py[0].codes[STEP], POS_STEP_BODY);
	rec.s.nframes = PT_SAMPLE_MAX_FRAMES + 1;
	rec.after.code = x->py[0].codes[WORK];
	rec.after.pos = POS_WORK_BODY;
	assert_int_equal(pt_run__on_sample(&x->r, &rec.s), 0);
	text = folded(p->v.stk);
	for (c = text; (c = strchr(c, ';')); c++)
		depth++;
	/* the thread, the cut, the frames */
	assert_int_equal(depth, 1 + PT_SAMPLE_MAX_FRAMES);
	free(text);
}

/* A tid whose comm cannot be read (not a thread of the process): "?",
 * no comm. */
static void test_thread_unknown(void **state)
{
	struct fx *x = *state;
	const struct pt_stacks_thread *th;
	struct pt_thrname_stats ts;
	struct pt_sample s;
	struct proc *p;
	uint32_t tid;
	char want[64];

	if (!open_python(x, 1, false, step_py))
		skip();
	p = x->r.procs.v[0];
	tid = (uint32_t)getpid(); /* a thread of ours, not of the child */
	s = sample(PT_REC_SAMPLE, x->py[0].pid, tid, PERIOD, 1);
	frame(&s, x->py[0].codes[STEP], POS_STEP_BODY);
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	th = thread_of(p->v.stk, tid);
	assert_non_null(th);
	assert_string_equal(th->name, "?");
	assert_null(th->comm);
	pt_thrname__stats(p->python.tn, &ts);
	assert_int_equal(ts.comm, 1);
	snprintf(want, sizeof(want), "? (tid %u);Engine.step (ptmod.py:5) %llu", tid,
		 PERIOD / 1000);
	assert_folded(p->v.stk, want);
}

/* The agent's thread (preloaded, it runs one named proftrace-py): in its
 * own row, in the totals' own time only; none of the functions', the
 * flame graph's or the other totals'. */
static void test_own_thread(void **state)
{
	struct fx *x = *state;
	const struct pt_stacks_totals *tot;
	const struct pt_stacks_thread *th;
	char path[64], comm[64];
	struct pt_sample s;
	struct dirent *d;
	struct proc *p;
	uint32_t own = 0;
	DIR *dir;

	if (!open_python(x, 1, true, step_py))
		skip();
	p = x->r.procs.v[0];
	snprintf(path, sizeof(path), "/proc/%d/task", x->py[0].pid);
	dir = opendir(path);
	assert_non_null(dir);
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		pt_tasks__comm(x->py[0].pid, (uint32_t)atoi(d->d_name), comm, sizeof(comm));
		if (!strcmp(comm, "proftrace-py"))
			own = (uint32_t)atoi(d->d_name);
	}
	closedir(dir);
	assert_true(own != 0);
	s = sample(PT_REC_SAMPLE, x->py[0].pid, own, PERIOD, 1);
	frame(&s, x->py[0].codes[STEP], POS_STEP_BODY);
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	th = thread_of(p->v.stk, own);
	assert_non_null(th);
	assert_true(th->own);
	assert_string_equal(th->name, "proftrace-py");
	assert_int_equal(th->t.on_ns, PERIOD);
	tot = pt_stacks__totals(p->v.stk);
	assert_int_equal(tot->own.on_ns, PERIOD);
	assert_int_equal(tot->t.samples, 0);
	assert_int_equal(tot->t.on_ns, 0);
	assert_int_equal(pt_flame__nstacks(pt_stacks__flame(p->v.stk)), 0);
	assert_int_equal(pt_top__nfuncs(pt_stacks__top(p->v.stk)), 0);
}

/* Two processes: each one's sample in its stacks and the merged ones,
 * under the merged fid; each thread named in both; the merged function
 * its last line. The merged view numbers a function when a process
 * first finds it, and each child's ptmod is a file of its own (pyfx.h),
 * so each has functions of its own there: process 0 finds work then
 * step (merged 0, 1), process 1 step then work (merged 2, 3), and its
 * local fids (0, 1) would land on process 0's functions. */
static void test_merged(void **state)
{
	struct fx *x = *state;
	const char text[] = "step py:ptmod.Engine.step\nbucket engine.work py:ptmod::work\n";
	const struct pt_stacks *all;
	struct proc *p0, *p1;
	struct pt_sample s;
	int step0, work0, step1, work1;
	char want[256];

	if (!open_python(x, 2, false, text))
		skip();
	assert_true(x->r.multi);
	p0 = x->r.procs.v[0];
	p1 = x->r.procs.v[1];
	all = x->r.all.stk;
	/* process 0: work, then step inside it */
	s = sample(PT_REC_SAMPLE, x->py[0].pid, (uint32_t)x->py[0].pid, PERIOD, 1);
	frame(&s, x->py[0].codes[WORK], POS_WORK_BODY);
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	s.nframes = 0;
	frame(&s, x->py[0].codes[STEP], POS_STEP_BODY);
	frame(&s, x->py[0].codes[WORK], POS_WORK_BODY);
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	/* process 1: step alone, then work alone */
	sample_step(x, 1);
	s = sample(PT_REC_SAMPLE, x->py[1].pid, (uint32_t)x->py[1].pid, PERIOD, 1);
	frame(&s, x->py[1].codes[WORK], POS_WORK_BODY);
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);

	step0 = fid_of(p0, "Engine.step");
	work0 = fid_of(p0, "work");
	step1 = fid_of(p1, "Engine.step");
	work1 = fid_of(p1, "work");
	assert_int_equal(work0, 0);
	assert_int_equal(step0, 1);
	assert_int_equal(step1, 0);
	assert_int_equal(work1, 1);
	assert_int_equal(x->r.nmerged_funcs, 4);
	assert_int_equal(p0->mfid[work0], 0);
	assert_int_equal(p0->mfid[step0], 1);
	assert_int_equal(p1->mfid[step1], 2);
	assert_int_equal(p1->mfid[work1], 3);

	/* each process: its own */
	assert_int_equal(pt_stacks__func(p0->v.stk, (uint32_t)work0)->samples, 2);
	assert_int_equal(pt_stacks__func(p0->v.stk, (uint32_t)step0)->samples, 1);
	assert_int_equal(pt_stacks__func(p1->v.stk, (uint32_t)step1)->samples, 1);
	assert_int_equal(pt_stacks__func(p1->v.stk, (uint32_t)work1)->samples, 1);
	assert_int_equal(pt_stacks__totals(p0->v.stk)->t.samples, 2);
	assert_int_equal(pt_stacks__totals(p1->v.stk)->t.samples, 2);
	/* merged: under the merged fids */
	assert_int_equal(pt_stacks__totals(all)->t.samples, 4);
	assert_int_equal(pt_stacks__func(all, 0)->samples, 2);
	assert_int_equal(pt_stacks__func(all, 1)->samples, 1);
	assert_int_equal(pt_stacks__func(all, 2)->samples, 1);
	assert_int_equal(pt_stacks__func(all, 3)->samples, 1);
	assert_int_equal(x->r.merged_funcs[0].last_line, 11);
	assert_int_equal(x->r.merged_funcs[1].last_line, 5);
	assert_int_equal(x->r.merged_funcs[2].last_line, 5);
	assert_int_equal(x->r.merged_funcs[3].last_line, 11);
	/* each thread in the merged stacks, named there too */
	for (int i = 0; i < 2; i++) {
		const struct pt_stacks_thread *th = thread_of(all, (uint32_t)x->py[i].pid);

		assert_non_null(th);
		assert_non_null(th->name);
		assert_non_null(th->comm);
		assert_string_equal(th->name, "python3.11");
		assert_string_equal(th->comm, "python3.11");
	}
	snprintf(want, sizeof(want),
		 "python3.11 (tid %d);work (ptmod.py:11);Engine.step (ptmod.py:5) %llu",
		 x->py[0].pid, PERIOD / 1000);
	assert_folded(all, want);
	assert_int_equal(pt_flame__nstacks(pt_stacks__flame(all)), 4);
}

/* Samples that are no process's: a pid not traced, a process traced
 * but not sampled (no CPython), a process that ended. */
static void test_samples_that_are_no_ones(void **state)
{
	struct fx *x = *state;
	struct pt_sample s;
	pid_t pids[2];
	struct proc *p, *q;

	if (!debian())
		skip();
	assert_int_equal(pyfx__start(&x->py[0], PYFX_DEBIAN, NULL, false), 0);
	x->native = runfx__child();
	assert_true(x->native > 0);
	pids[0] = x->py[0].pid;
	pids[1] = x->native;
	/* a function both have (libc's), so each is traced */
	open_run(x, pids, 2, "step native:libc.so*:getppid\n");
	p = x->r.procs.v[0];
	q = x->r.procs.v[1];
	assert_true(p->python.sampled);
	assert_false(q->python.have);
	assert_false(q->python.sampled);

	s = sample(PT_REC_SAMPLE, getpid(), (uint32_t)getpid(), PERIOD, 1);
	frame(&s, x->py[0].codes[STEP], POS_STEP_BODY);
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	s.pid = s.tid = (uint32_t)x->native;
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	assert_null(q->v.stk);
	assert_int_equal(pt_stacks__totals(p->v.stk)->t.samples, 0);
	assert_int_equal(pt_stacks__totals(x->r.all.stk)->t.samples, 0);
	assert_int_equal(pt_stacks__nthreads(x->r.all.stk), 0);

	/* the Python one: counted while it runs, not once it ended */
	sample_step(x, 0);
	assert_int_equal(pt_stacks__totals(p->v.stk)->t.samples, 1);
	assert_int_equal(pt_stacks__totals(x->r.all.stk)->t.samples, 1);
	assert_int_equal(pt_proc__set_state(p, PT_PROC_ENDED), 0);
	sample_step(x, 0);
	assert_int_equal(pt_stacks__totals(p->v.stk)->t.samples, 1);
	assert_int_equal(pt_stacks__totals(x->r.all.stk)->t.samples, 1);
}

/* ---- the agent's trampolines ---- */

/* A CPython child whose code has the agent's trampoline file name:
 * function inner, called through tramp (compiled from "<proftrace>");
 * their code objects' addresses. Its main thread has a Python name
 * (pyfx's child has none: it does not import threading). Waits on its
 * stdin. */
#define TRAMP_PROGRAM                                                                              \
	"import sys, threading\n"                                                                  \
	"threading.main_thread().name = 'engine-main'\n"                                           \
	"ns = {}\n"                                                                                \
	"exec(compile('def inner():\\n    pass\\n', '/tmp/ptinner.py', 'exec'), ns)\n"             \
	"exec(compile('def tramp():\\n    pass\\n', '<proftrace>', 'exec'), ns)\n"                 \
	"print('ready', id(ns['tramp'].__code__), id(ns['inner'].__code__), flush=True)\n"         \
	"sys.stdin.read()\n"

static void tramp_start(struct fx *x)
{
	char *argv[] = { PYFX_DEBIAN, "-s", "-B", "-c", TRAMP_PROGRAM, NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", NULL };
	struct pollfd pf;
	char line[256];
	int in[2], out[2];
	ssize_t n = 0;

	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	x->tramp = fork();
	assert_true(x->tramp >= 0);
	if (x->tramp == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execve(PYFX_DEBIAN, argv, envp);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	/* should the test die first, it reads EOF and exits */
	x->tramp_in = in[1];
	/* "ready TRAMP INNER\n", within 30 s */
	pf.fd = out[0];
	pf.events = POLLIN;
	while (n < (ssize_t)sizeof(line) - 1 && !memchr(line, '\n', (size_t)n) &&
	       poll(&pf, 1, 30000) == 1) {
		ssize_t k = read(out[0], line + n, sizeof(line) - 1 - (size_t)n);

		if (k <= 0)
			break;
		n += k;
	}
	close(out[0]);
	line[n] = 0;
	if (sscanf(line, "ready %" SCNu64 " %" SCNu64, &x->tramp_code, &x->inner_code) != 2)
		fail_msg("the trampoline's child did not say ready: '%s'", line);
}

/* The trampoline's frame is left out of the stack: not a frame, not a
 * function, not unknown. The thread is called by its Python name. */
static void test_trampoline_left_out(void **state)
{
	struct fx *x = *state;
	const struct pt_stacks_thread *th;
	struct pt_thrname_stats ts;
	struct pt_sample s;
	struct proc *p;
	char want[256];

	if (!debian())
		skip();
	tramp_start(x);
	open_run(x, &x->tramp, 1, "step native:exe:Py_RunMain\n");
	p = x->r.procs.v[0];
	assert_true(p->python.sampled);
	s = sample(PT_REC_SAMPLE, x->tramp, (uint32_t)x->tramp, PERIOD, 1);
	frame(&s, x->inner_code, POS_DEF);
	frame(&s, x->tramp_code, POS_DEF);
	frame(&s, x->inner_code, POS_DEF);
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	snprintf(want, sizeof(want),
		 "engine-main (tid %d);inner (ptinner.py:1);inner (ptinner.py:1) %llu", x->tramp,
		 PERIOD / 1000);
	assert_folded(p->v.stk, want);
	th = thread_of(p->v.stk, (uint32_t)x->tramp);
	assert_non_null(th);
	assert_non_null(th->name);
	assert_string_equal(th->name, "engine-main");
	assert_non_null(th->comm);
	assert_string_equal(th->comm, "python3.11");
	pt_thrname__stats(p->python.tn, &ts);
	assert_int_equal(ts.python, 1);
	assert_int_equal(pt_stacks__totals(p->v.stk)->unknown_frames, 0);
	assert_int_equal(pt_top__nfuncs(pt_stacks__top(p->v.stk)), 1);
	assert_null(top_fn(p->v.stk, "tramp"));
}

/* ---- py: probes that match nothing, from the samples ---- */

/* stderr into a temporary file, until cap_end. */
static void cap_start(struct runfx_ear *c)
{
	assert_int_equal(runfx__hear(c, 2), 0);
}

/* stderr back, and what it got (malloc'ed). */
static char *cap_end(struct runfx_ear *c)
{
	char *out = runfx__heard(c);

	assert_non_null(out);
	return out;
}

/* pt_run__on_sample(s) and what it said on stderr (malloc'ed). */
static char *on_sample_said(struct fx *x, const struct pt_sample *s)
{
	struct runfx_ear c;

	cap_start(&c);
	assert_int_equal(pt_run__on_sample(&x->r, s), 0);
	return cap_end(&c);
}

/* A misspelled py: probe: nothing worked out in the first second after
 * attach; the first sample after it says, from the samples before it,
 * what the probe's module has (warned once, kept for the report). */
static void test_hint_from_samples(void **state)
{
	struct fx *x = *state;
	struct pt_sample s;
	struct proc *p;
	uint64_t t0;
	const char *why;
	char *said;

	if (!open_python(x, 1, false, "step py:ptmod.Engine.stepp\n"))
		skip();
	p = x->r.procs.v[0];
	s = sample(PT_REC_SAMPLE, x->py[0].pid, (uint32_t)x->py[0].pid, PERIOD, 1);
	frame(&s, x->py[0].codes[STEP], POS_STEP_BODY);
	t0 = pt_now_ns(CLOCK_MONOTONIC);
	p->t_added = t0; /* attached now (see sampling_on) */
	said = on_sample_said(x, &s);
	if (pt_now_ns(CLOCK_MONOTONIC) - t0 >= 1000000000ull) {
		free(said);
		print_message("skipped: a second went by on a loaded machine\n");
		skip();
	}
	assert_string_equal(said, "");
	free(said);
	assert_null(p->hint); /* not even looked at */
	assert_int_equal(pt_resolver__nfuncs(p->res), 0);

	/* attached two seconds ago: Engine.step was sampled */
	p->t_added = t0 - 2000000000ull;
	said = on_sample_said(x, &s);
	assert_non_null(strstr(said, "py:ptmod.Engine.stepp: no sampled function of module ptmod "
				     "matches (closest: py:ptmod.Engine.step"));
	assert_non_null(strstr(said, "(without the Python agent only the functions that ran are "
				     "seen)"));
	free(said);
	why = pt_run__py_hint_why(p, 0);
	assert_non_null(why);
	assert_non_null(strstr(why, "(closest: py:ptmod.Engine.step"));
	/* once */
	said = on_sample_said(x, &s);
	assert_string_equal(said, "");
	free(said);
	assert_int_equal(pt_stacks__totals(p->v.stk)->t.samples, 3);
}

/* Without py: probes there is nothing to work out. */
static void test_no_hint_without_py_probes(void **state)
{
	struct fx *x = *state;
	struct pt_sample s;
	struct proc *p;

	if (!open_python(x, 1, false, "step native:exe:Py_RunMain\n"))
		skip();
	p = x->r.procs.v[0];
	assert_false(x->r.want_py);
	p->t_added = pt_now_ns(CLOCK_MONOTONIC) - 2000000000ull; /* attached two seconds ago */
	s = sample(PT_REC_SAMPLE, x->py[0].pid, (uint32_t)x->py[0].pid, PERIOD, 1);
	frame(&s, x->py[0].codes[STEP], POS_STEP_BODY);
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	assert_int_equal(pt_run__on_sample(&x->r, &s), 0);
	assert_null(p->hint);
	assert_int_equal(pt_stacks__totals(p->v.stk)->t.samples, 2);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_stack_into_its_process),
		T(test_lines),
		T(test_late_samples),
		T(test_pooled_samples),
		T(test_flags_and_unknown_code),
		T(test_frames_past_the_sample),
		T(test_thread_unknown),
		T(test_own_thread),
		T(test_merged),
		T(test_samples_that_are_no_ones),
		T(test_trampoline_left_out),
		T(test_hint_from_samples),
		T(test_no_hint_without_py_probes),
	};
#undef T

	return cmocka_run_group_tests_name("samples", tests, NULL, NULL);
}
