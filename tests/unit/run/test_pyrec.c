// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/pyrec.c: what the records of py: functions do, on runs opened by
 * pt_run__open on live CPython children of this test (pyfx.h: Debian's
 * python3.11 that imported ptmod and keeps an Engine), their code-object
 * maps made as the attach makes them (pt_run__py_start), no BPF object.
 * What pyrec.c tells BPF goes through three map writes of attach.c,
 * wrapped here (the Makefile's MAP_WRAP_TESTS) to be recorded.
 *
 * A code object BPF announces (PT_REC_PYCODE, its fingerprint read out of
 * the child as BPF reads it) is answered with its function's fid (of
 * that process: PT_FID_MAKE), new functions declared to the figures
 * first (once: an evicted code object announced again is not a second
 * function), with the frame slots of its arg: values (-1 and a warning
 * naming the function, its file and line for an argument it does not
 * have; none for ret) or no values; unconfigured code as PT_FID_PY_NONE;
 * code freed or replaced before it was read gets no answer. A call that
 * began while its code was pending is given its function and counted as
 * first_call for the values it could not read (entry or exit side, in
 * the merged view too), or dropped: unknown code, no code map yet, code
 * gone (counted as unresolved at its exit only).
 *
 * An attribute location BPF asks for (PT_REC_ATTR) is found from the
 * instance, or from the type alone when the instance was freed or its
 * memory now holds an object of another type; a name no instance has yet
 * is stored as no_attribute, asked again a second later and said once
 * per expression (in the whole run); one instances cannot have, or
 * cannot be read, is stored as such and said each time; a type that went
 * away, or a full map, is asked again and nothing stored. Records not of
 * this process, of unknown functions, or of expressions without an
 * attribute do nothing. pt_run__attr_retries forgets (in BPF) exactly
 * the locations that are due, so BPF asks again, and keeps the others.
 *
 * Not here: what happens out of memory (a code object left pending, a
 * function not declared, a retry not kept), which no constructor makes.
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
#include "aggregate/stepvals.h"
#include "attach/resolve.h"
#include "bpf/proftrace.h"
#include "python/pycode.h"
#include "run/env.h"
#include "run/pyproc.h"
#include "run/pyrec.h"
#include "run/run.h"
#include "run/steps.h"
#include "util/log.h"
#include "pyfx.h"
#include "runfx.h"

struct pt_attach;

/*
 * ---- what pyrec.c writes into BPF's maps ----
 * There is no BPF object in a unit test (r->att is NULL), and what these
 * writes carry is what a user's figures depend on: the Makefile links
 * this test with attach.c's three map writes wrapped (-Wl,--wrap), and
 * they are recorded here instead.
 */

enum wkind { W_PYCODE, W_ATTR_LOC, W_ATTR_FORGET };

struct write {
	enum wkind kind;
	int pid;		  /* W_PYCODE */
	uint64_t code;		  /* W_PYCODE */
	struct pt_py_code val;	  /* W_PYCODE */
	struct pt_attr_key key;	  /* W_ATTR_* */
	struct pt_pyattr_loc loc; /* W_ATTR_LOC */
};

#define MAX_WRITES 16
static struct write writes[MAX_WRITES];
static size_t nwrites;
static int attr_loc_ret; /* what the attr_locs update returns: -E2BIG is a full map */

static struct write *wrote(enum wkind kind)
{
	assert_true(nwrites < MAX_WRITES);
	memset(&writes[nwrites], 0, sizeof(writes[nwrites]));
	writes[nwrites].kind = kind;
	return &writes[nwrites++];
}

int __wrap_pt_attach__py_code(struct pt_attach *a, int pid, uint64_t code,
			      const struct pt_py_code *val);
int __wrap_pt_attach__attr_loc(struct pt_attach *a, const struct pt_attr_key *key,
			       const struct pt_pyattr_loc *loc);
int __wrap_pt_attach__attr_forget(struct pt_attach *a, const struct pt_attr_key *key);

int __wrap_pt_attach__py_code(struct pt_attach *a, int pid, uint64_t code,
			      const struct pt_py_code *val)
{
	struct write *w = wrote(W_PYCODE);

	w->pid = pid;
	w->code = code;
	w->val = *val;
	return 0;
}

int __wrap_pt_attach__attr_loc(struct pt_attach *a, const struct pt_attr_key *key,
			       const struct pt_pyattr_loc *loc)
{
	struct write *w = wrote(W_ATTR_LOC);

	w->key = *key;
	w->loc = *loc;
	return attr_loc_ret;
}

int __wrap_pt_attach__attr_forget(struct pt_attach *a, const struct pt_attr_key *key)
{
	wrote(W_ATTR_FORGET)->key = *key;
	return 0;
}

/* ---- the run ---- */

/* Values: step's self's n (an int its Engine has), an argument step does
 * not have, its return; work's x; serve in a bucket, no values. */
static const char conf_vals[] =
	"step py:ptmod.Engine.step tokens=arg:self.n kv_len=arg:nope batch=ret\n"
	"count tokens py:ptmod.work arg:x\n"
	"bucket engine.serve py:ptmod.serve\n";

/* Attributes: one every Engine has (n), one none has (absent), one that
 * code objects have (co_name: a T_OBJECT member); one code objects keep
 * where it cannot be read (co_argcount: a C int); a value without one. */
static const char conf_attrs[] =
	"step py:ptmod.Engine.step tokens=arg:self.n kv_len=arg:self.absent "
	"batch=arg:self.co_name\n"
	"count tokens py:ptmod.work arg:x.co_argcount\n"
	"count tokens py:ptmod.Engine.stop arg:self\n"
	"bucket engine.serve py:ptmod.serve\n";

/* The indices of pyfx's code objects */
enum { C_INIT, C_STEP, C_STOP, C_WORK, C_SERVE, C_SQUARE };

/* An address no object is at (the first page is never mapped): a freed
 * object or type, as BPF may name one by the time it is looked at. */
#define FREED 0x10ull

struct fx {
	struct run r;
	bool opened;
	struct pyfx py[2];
	struct proc *p[2];
	char path[64];
	struct runfx_ear ear; /* stderr while captured (hearing) */
	bool hearing;
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	if (!x)
		return -1;
	for (int i = 0; i < 2; i++)
		x->py[i].pid = x->py[i].in = -1;
	nwrites = 0;
	attr_loc_ret = 0;
	pt_log__set_verbose(0);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	if (x->hearing) /* a test failed while capturing */
		free(runfx__heard(&x->ear));
	pt_log__set_verbose(0);
	if (x->opened)
		pt_run__free(&x->r);
	for (int i = 0; i < 2; i++)
		pyfx__stop(&x->py[i]);
	if (x->path[0])
		unlink(x->path);
	free(x);
	return 0;
}

/*
 * The run of n CPython children with targets text, as
 * `proftrace -p PID[,PID] --targets FILE` opens it; their code-object
 * maps made (start) as the attach makes them. Skipped without Debian's
 * python3.11.
 */
static void open_run(struct fx *x, int n, const char *text, bool start)
{
	struct pt_env env = { 0 };

	if (access(PYFX_DEBIAN, X_OK)) {
		print_message("skipped: no %s\n", PYFX_DEBIAN);
		skip();
	}
	for (int i = 0; i < n; i++) {
		assert_int_equal(pyfx__start(&x->py[i], PYFX_DEBIAN, NULL, false), 0);
		env.pids[env.npids++] = x->py[i].pid;
	}
	assert_int_equal(pyfx__targets(x->path, text), 0);
	env.pid = env.pids[0];
	env.targets = x->path;
	env.quiet = true;
	x->opened = true;
	assert_int_equal(pt_run__open(&x->r, &env), 0);
	assert_int_equal(x->r.procs.n, (size_t)n);
	assert_int_equal(x->r.multi, n > 1);
	for (int i = 0; i < n; i++) {
		x->p[i] = x->r.procs.v[i];
		assert_int_equal(x->p[i]->tracee.pid, x->py[i].pid);
		assert_true(x->p[i]->python.have);
		if (start)
			assert_int_equal(pt_run__py_start(x->p[i]), 0);
	}
}

/* stderr into a temporary file, until err_end. */
static void err_start(struct fx *x)
{
	assert_int_equal(runfx__hear(&x->ear, 2), 0);
	x->hearing = true;
}

/* stderr back, and what it got (malloc'ed). */
static char *err_end(struct fx *x)
{
	char *out;

	x->hearing = false;
	out = runfx__heard(&x->ear);
	assert_non_null(out);
	return out;
}

/* The PYCODE record BPF sends for code object i of child c: the
 * fingerprint (co_filename and co_name addresses, co_firstlineno) read
 * out of the child as BPF reads it. */
static struct pt_rec_pycode pycode_rec(struct fx *x, int c, uint64_t code)
{
	struct proc *p = x->p[c];
	struct pt_pytypes t = { .code_type = p->python.rt.code_type,
				.unicode_type = p->python.rt.unicode_type };
	struct pt_rec_pycode rec = { .type = PT_REC_PYCODE,
				     .pid = (uint32_t)p->tracee.pid,
				     .tid = (uint32_t)p->tracee.pid,
				     .code = code };
	struct pt_pycode *pc = malloc(sizeof(*pc));

	assert_non_null(pc);
	assert_int_equal(pt_pycode__read_head(&p->python.mem, &p->python.rt.L, &t, code, pc), 0);
	rec.filename = pc->filename_obj;
	rec.name = pc->name_obj;
	rec.firstlineno = pc->firstlineno;
	free(pc);
	return rec;
}

/* Child c's code object i announced by BPF (what it said on stderr in
 * *err, malloc'ed; NULL: not wanted). Returns what was written into
 * py_codes, which must be one write. */
static const struct pt_py_code *announce(struct fx *x, int c, int i, char **err)
{
	struct pt_rec_pycode rec = pycode_rec(x, c, x->py[c].codes[i]);
	size_t before = nwrites;
	char *said;

	err_start(x);
	pt_run__on_pycode(x->p[c], &rec);
	said = err_end(x);
	if (err)
		*err = said;
	else
		free(said);
	assert_int_equal(nwrites, before + 1);
	assert_int_equal(writes[before].kind, W_PYCODE);
	assert_int_equal(writes[before].pid, x->py[c].pid);
	assert_int_equal(writes[before].code, x->py[c].codes[i]);
	/* the fingerprint BPF checks before it uses the answer */
	assert_int_equal(writes[before].val.filename, rec.filename);
	assert_int_equal(writes[before].val.name, rec.name);
	assert_int_equal(writes[before].val.firstlineno, rec.firstlineno);
	return &writes[before].val;
}

/* The local fid of child c's answer (which must be its process's). */
static uint32_t local_fid(const struct fx *x, int c, const struct pt_py_code *val)
{
	assert_int_equal(PT_FID_PROC(val->fid), x->p[c]->idx);
	return val->fid & PT_FID_LOCAL_MASK;
}

/* A call record BPF sent while the code object was pending. */
static struct pt_rec pending_rec(const struct fx *x, int c, uint32_t type, uint64_t code)
{
	struct pt_rec rec = { .type = type,
			      .fid = PT_FID_PY_PENDING,
			      .pid = (uint32_t)x->py[c].pid,
			      .tid = (uint32_t)x->py[c].pid,
			      .t_entry = 1000,
			      .t_exit = type == PT_REC_EXIT ? 2000 : 0,
			      .code = code };

	return rec;
}

/* The first_call misses of a role's expression, in view sv. */
static uint64_t first_call(const struct pt_stepvals *sv, enum pt_vrole role)
{
	return sv->role[role].missing[PT_VST_FIRST_CALL];
}

/* The first_call misses of the count expression written text. */
static uint64_t count_first_call(const struct pt_stepvals *sv, const char *text)
{
	for (size_t i = 0; i < sv->ncounts; i++)
		if (!strcmp(sv->counts[i].expr->text, text))
			return sv->counts[i].missing[PT_VST_FIRST_CALL];
	fail_msg("no count %s", text);
	return 0;
}

/* ---- code objects ---- */

/* A configured function: its fid, declared to the figures (once), the
 * frame slot of its argument; unconfigured code: PT_FID_PY_NONE. */
static void test_code_answered(void **state)
{
	struct fx *x = *state;
	const struct pt_py_code *v;
	const struct pt_func *f;
	size_t nfs;
	uint32_t work, serve;
	char *err;

	open_run(x, 1, conf_vals, true);
	nfs = x->p[0]->nfs;
	v = announce(x, 0, C_WORK, &err);
	assert_string_equal(err, "");
	free(err);
	work = local_fid(x, 0, v);
	/* a function new to the process: declared, found (attached) */
	assert_int_equal(x->p[0]->nfs, nfs + 1);
	assert_int_equal(work, nfs);
	f = pt_resolver__func(x->p[0]->res, work);
	assert_true(f->py);
	assert_string_equal(f->symbol, "work");
	assert_string_equal(f->object, x->py[0].module);
	assert_int_equal(f->py_line, PYFX_WORK_LINE);
	assert_non_null(pt_agg__func(x->p[0]->v.agg, work));
	assert_true(x->p[0]->fs[work].attached);
	/* arg:x is its frame slot 0 */
	assert_int_equal(v->vals, 1);
	assert_int_equal(v->slot[0], 0);
	assert_int_equal(v->slot[1], PT_PY_SLOT_NONE);

	/* evicted from BPF's map and announced again: the same answer, no
	 * second function */
	v = announce(x, 0, C_WORK, NULL);
	assert_int_equal(v->fid, PT_FID_MAKE(x->p[0]->idx, work));
	assert_int_equal(v->vals, 1);
	assert_int_equal(v->slot[0], 0);
	assert_int_equal(x->p[0]->nfs, nfs + 1);

	/* in a bucket only: its fid, nothing to read at its calls */
	v = announce(x, 0, C_SERVE, &err);
	assert_string_equal(err, "");
	free(err);
	serve = local_fid(x, 0, v);
	assert_int_equal(serve, nfs + 1);
	assert_int_equal(x->p[0]->nfs, nfs + 2);
	assert_int_equal(v->vals, 0);
	for (int k = 0; k < PT_MAX_VALS; k++)
		assert_int_equal(v->slot[k], PT_PY_SLOT_NONE);

	/* not configured: BPF drops its calls, no function */
	v = announce(x, 0, C_STOP, &err);
	assert_string_equal(err, "");
	free(err);
	assert_int_equal(v->fid, PT_FID_PY_NONE);
	assert_int_equal(v->vals, 0);
	assert_int_equal(x->p[0]->nfs, nfs + 2);
}

/* A value of an argument the function does not have: slot -1, said with
 * the function, its file and line and the expression; ret has no slot
 * and nothing to say. */
static void test_code_without_the_argument(void **state)
{
	struct fx *x = *state;
	const struct pt_py_code *v;
	char want[512], *err;

	open_run(x, 1, conf_vals, true);
	v = announce(x, 0, C_STEP, &err);
	snprintf(want, sizeof(want),
		 "proftrace: warning: Engine.step (%s:%d) has no argument 'nope': "
		 "kv_len=arg:nope is missing for it\n",
		 x->py[0].module, PYFX_STEP_LINE);
	assert_string_equal(err, want);
	free(err);
	local_fid(x, 0, v);
	assert_int_equal(v->vals, 1);
	assert_int_equal(v->slot[0], 0); /* arg:self */
	assert_int_equal(v->slot[1], -1);
	assert_int_equal(v->slot[2], PT_PY_SLOT_NONE); /* ret */
}

/* Code freed before it was read (unreadable), or whose address another
 * code object took (another fingerprint): no answer (the object there
 * announces itself), no function. */
static void test_code_gone(void **state)
{
	struct fx *x = *state;
	struct pt_rec_pycode rec;
	size_t nfs;

	open_run(x, 1, conf_vals, true);
	nfs = x->p[0]->nfs;
	rec = pycode_rec(x, 0, x->py[0].codes[C_WORK]);
	rec.firstlineno++;
	pt_run__on_pycode(x->p[0], &rec);
	rec = pycode_rec(x, 0, x->py[0].codes[C_STEP]);
	rec.name = rec.filename;
	pt_run__on_pycode(x->p[0], &rec);
	rec.code = FREED;
	pt_run__on_pycode(x->p[0], &rec);
	assert_int_equal(nwrites, 0);
	assert_int_equal(x->p[0]->nfs, nfs);
}

/* ---- calls that began while their code was pending ---- */

static void test_pending_calls(void **state)
{
	struct fx *x = *state;
	struct pt_stepvals *sv;
	struct pt_rec rec;
	uint32_t fid = 12345, step, work, serve;

	open_run(x, 1, conf_vals, true);
	sv = &x->p[0]->v.sv;
	step = local_fid(x, 0, announce(x, 0, C_STEP, NULL));
	work = local_fid(x, 0, announce(x, 0, C_WORK, NULL));
	serve = local_fid(x, 0, announce(x, 0, C_SERVE, NULL));
	assert_int_equal(announce(x, 0, C_STOP, NULL)->fid, PT_FID_PY_NONE);

	/* its function; the values of its entry could not be read */
	rec = pending_rec(x, 0, PT_REC_ENTRY, x->py[0].codes[C_STEP]);
	assert_true(pt_run__py_pending_fid(x->p[0], &rec, &fid));
	assert_int_equal(fid, step);
	assert_int_equal(first_call(sv, PT_VROLE_TOKENS), 1);
	assert_int_equal(first_call(sv, PT_VROLE_KVLEN), 1);
	assert_int_equal(first_call(sv, PT_VROLE_BATCH), 0);
	/* nor those of its return */
	rec = pending_rec(x, 0, PT_REC_EXIT, x->py[0].codes[C_STEP]);
	fid = 12345;
	assert_true(pt_run__py_pending_fid(x->p[0], &rec, &fid));
	assert_int_equal(fid, step);
	assert_int_equal(first_call(sv, PT_VROLE_TOKENS), 1);
	assert_int_equal(first_call(sv, PT_VROLE_KVLEN), 1);
	assert_int_equal(first_call(sv, PT_VROLE_BATCH), 1);
	/* a count's */
	rec = pending_rec(x, 0, PT_REC_ENTRY, x->py[0].codes[C_WORK]);
	assert_true(pt_run__py_pending_fid(x->p[0], &rec, &fid));
	assert_int_equal(fid, work);
	assert_int_equal(count_first_call(sv, "arg:x"), 1);
	/* a function without values: its fid, nothing missed */
	rec = pending_rec(x, 0, PT_REC_EXIT, x->py[0].codes[C_SERVE]);
	assert_true(pt_run__py_pending_fid(x->p[0], &rec, &fid));
	assert_int_equal(fid, serve);
	assert_int_equal(first_call(sv, PT_VROLE_BATCH), 1);
	assert_int_equal(count_first_call(sv, "arg:x"), 1);

	/* not ours, or never announced (not a code object BPF saw): dropped,
	 * not counted as unresolved */
	rec = pending_rec(x, 0, PT_REC_EXIT, x->py[0].codes[C_STOP]);
	assert_false(pt_run__py_pending_fid(x->p[0], &rec, &fid));
	rec = pending_rec(x, 0, PT_REC_EXIT, x->py[0].codes[C_SQUARE]);
	assert_false(pt_run__py_pending_fid(x->p[0], &rec, &fid));
	assert_int_equal(x->p[0]->py_unresolved, 0);
	assert_int_equal(first_call(sv, PT_VROLE_TOKENS), 1);
}

/* Code gone before it was read: its calls cannot be attributed; each is
 * counted once, at its exit. */
static void test_pending_calls_of_code_gone(void **state)
{
	struct fx *x = *state;
	struct pt_rec_pycode pc;
	struct pt_rec rec;
	uint32_t fid;

	open_run(x, 1, conf_vals, true);
	pc = pycode_rec(x, 0, x->py[0].codes[C_STEP]);
	pc.firstlineno++;
	pt_run__on_pycode(x->p[0], &pc);
	rec = pending_rec(x, 0, PT_REC_ENTRY, x->py[0].codes[C_STEP]);
	assert_false(pt_run__py_pending_fid(x->p[0], &rec, &fid));
	assert_int_equal(x->p[0]->py_unresolved, 0);
	rec = pending_rec(x, 0, PT_REC_EXIT, x->py[0].codes[C_STEP]);
	assert_false(pt_run__py_pending_fid(x->p[0], &rec, &fid));
	assert_int_equal(x->p[0]->py_unresolved, 1);
	assert_int_equal(first_call(&x->p[0]->v.sv, PT_VROLE_TOKENS), 0);
}

/* Before its code-object map is made (pt_run__py_start at attach):
 * nothing is known, nothing counted. */
static void test_pending_calls_before_the_map(void **state)
{
	struct fx *x = *state;
	struct pt_rec rec;
	uint32_t fid;

	open_run(x, 1, conf_vals, false);
	assert_null(x->p[0]->python.probe);
	rec = pending_rec(x, 0, PT_REC_EXIT, x->py[0].codes[C_STEP]);
	assert_false(pt_run__py_pending_fid(x->p[0], &rec, &fid));
	assert_int_equal(x->p[0]->py_unresolved, 0);
}

/* With two processes: the answer's fid is the process's (PT_FID_MAKE:
 * its BPF slot in the high bits), and a pending call's misses are the
 * merged view's too. */
static void test_two_processes(void **state)
{
	struct fx *x = *state;
	const struct pt_py_code *v;
	struct pt_rec rec;
	uint32_t step0, step1, fid;

	open_run(x, 2, conf_vals, true);
	step0 = local_fid(x, 0, announce(x, 0, C_STEP, NULL));
	/* the second process's slot is not 0: PT_FID_MAKE shows */
	assert_int_not_equal(x->p[1]->idx, 0);
	v = announce(x, 1, C_STEP, NULL);
	assert_int_equal(v->fid, PT_FID_MAKE(x->p[1]->idx, x->p[1]->nfs - 1));
	step1 = v->fid & PT_FID_LOCAL_MASK;
	assert_int_equal(v->vals, 1);

	rec = pending_rec(x, 1, PT_REC_ENTRY, x->py[1].codes[C_STEP]);
	assert_true(pt_run__py_pending_fid(x->p[1], &rec, &fid));
	assert_int_equal(fid, step1);
	assert_int_equal(first_call(&x->p[1]->v.sv, PT_VROLE_TOKENS), 1);
	assert_int_equal(first_call(&x->p[0]->v.sv, PT_VROLE_TOKENS), 0);
	assert_int_equal(first_call(&x->r.all.sv, PT_VROLE_TOKENS), 1);
	rec = pending_rec(x, 0, PT_REC_EXIT, x->py[0].codes[C_STEP]);
	assert_true(pt_run__py_pending_fid(x->p[0], &rec, &fid));
	assert_int_equal(fid, step0);
	assert_int_equal(first_call(&x->r.all.sv, PT_VROLE_TOKENS), 1);
	assert_int_equal(first_call(&x->r.all.sv, PT_VROLE_BATCH), 1);
}

/* ---- attribute locations ---- */

/* Which of fid[c][] is which function */
enum { F_STEP, F_WORK, F_STOP, F_SERVE, NF };

/* conf_attrs' run of n children, with step, work, stop and serve
 * announced in each (child c's answers, PT_FID_MAKE'd, in fid[c][]); no
 * write recorded yet. */
static void open_attrs(struct fx *x, int n, uint32_t fid[][NF])
{
	static const int code[NF] = { C_STEP, C_WORK, C_STOP, C_SERVE };

	open_run(x, n, conf_attrs, true);
	for (int c = 0; c < n; c++)
		for (int i = 0; i < NF; i++) {
			fid[c][i] = announce(x, c, code[i], NULL)->fid;
			assert_int_not_equal(fid[c][i], PT_FID_PY_NONE);
		}
	nwrites = 0;
}

/* The ATTR record BPF sends: expression k of fid (PT_FID_MAKE'd) wants
 * an attribute of obj, of type obj_type. */
static struct pt_rec_attr attr_rec(const struct fx *x, int c, uint32_t fid, uint32_t k,
				   uint64_t obj_type, uint64_t obj)
{
	struct pt_rec_attr a = { .type = PT_REC_ATTR,
				 .fid = fid,
				 .pid = (uint32_t)x->py[c].pid,
				 .tid = (uint32_t)x->py[c].pid,
				 .obj_type = obj_type,
				 .obj = obj,
				 .k = k };

	return a;
}

/* Process c's answer to a: what was said on stderr (malloc'ed). */
static char *ask(struct fx *x, int c, const struct pt_rec_attr *a)
{
	err_start(x);
	pt_run__on_attr(x->p[c], a);
	return err_end(x);
}

/* Write w, the last one: a location stored for a's key. */
static const struct pt_pyattr_loc *loc_for(size_t w, const struct pt_rec_attr *a)
{
	assert_int_equal(nwrites, w + 1);
	assert_int_equal(writes[w].kind, W_ATTR_LOC);
	assert_int_equal(writes[w].key.type, a->obj_type);
	assert_int_equal(writes[w].key.fid, a->fid);
	assert_int_equal(writes[w].key.k, a->k);
	assert_int_equal(writes[w].loc.type, a->obj_type);
	return &writes[w].loc;
}

/* Engine.n: found from the instance; from the type alone when the
 * instance is freed, or its memory holds an object of another type now
 * (a code object: no n, no __dict__). Nothing said, nothing asked again. */
static void test_attr_found(void **state)
{
	struct fx *x = *state;
	struct pyfx *py = &x->py[0];
	struct pt_rec_attr a;
	struct pt_pyattr_loc found;
	uint32_t fid[1][NF], step;
	char *err;

	open_attrs(x, 1, fid);
	step = fid[0][F_STEP];
	a = attr_rec(x, 0, step, 0, py->engine_type, py->engine);
	err = ask(x, 0, &a);
	assert_string_equal(err, "");
	free(err);
	found = *loc_for(0, &a);
	assert_int_not_equal(found.kind, PT_PYATTR_K_NONE);
	assert_int_not_equal(found.key, 0);
	assert_int_equal(found.vst, 0);
	assert_int_equal(x->p[0]->nretries, 0);

	/* freed: the type alone */
	a.obj = FREED;
	err = ask(x, 0, &a);
	assert_string_equal(err, "");
	free(err);
	assert_memory_equal(loc_for(1, &a), &found, sizeof(found));
	/* its memory now another type's object */
	a.obj = py->codes[C_INIT];
	err = ask(x, 0, &a);
	assert_string_equal(err, "");
	free(err);
	assert_memory_equal(loc_for(2, &a), &found, sizeof(found));
	assert_int_equal(x->p[0]->nretries, 0);
}

/* Engine.co_name, asked with a code object where the Engine was: the
 * code object has it, Engine instances do not (yet): no_attribute, not
 * the code object's slot. */
static void test_attr_of_another_type_not_taken(void **state)
{
	struct fx *x = *state;
	struct pyfx *py = &x->py[0];
	const struct pt_pyattr_loc *loc;
	struct pt_rec_attr a;
	uint32_t fid[1][NF], step;
	char *err;

	open_attrs(x, 1, fid);
	step = fid[0][F_STEP];
	a = attr_rec(x, 0, step, 2, py->engine_type, py->codes[C_INIT]);
	err = ask(x, 0, &a);
	assert_non_null(strstr(err, "batch=arg:self.co_name in Engine.step"));
	free(err);
	loc = loc_for(0, &a);
	assert_int_equal(loc->kind, PT_PYATTR_K_NONE);
	assert_int_equal(loc->vst, PT_VST_ATTR_MISSING);
	assert_int_equal(x->p[0]->nretries, 1);
}

/* A name no Engine has yet: no_attribute for now, asked again, said once
 * per expression; each expression's first time is said. */
static void test_attr_not_yet(void **state)
{
	struct fx *x = *state;
	struct pyfx *py = &x->py[0];
	const struct pt_pyattr_loc *loc;
	struct pt_rec_attr a;
	uint64_t t0 = pt_now_ns(CLOCK_MONOTONIC);
	uint32_t fid[1][NF], step;
	char want[160], *err;

	open_attrs(x, 1, fid);
	step = fid[0][F_STEP];
	a = attr_rec(x, 0, step, 1, py->engine_type, py->engine);
	err = ask(x, 0, &a);
	snprintf(want, sizeof(want),
		 "proftrace: warning: kv_len=arg:self.absent in Engine.step "
		 "(pid %d): Engine.absent: no interned 'absent' found",
		 py->pid);
	assert_true(!strncmp(err, want, strlen(want)));
	assert_non_null(strstr(err, ": counted as no_attribute until an object has it\n"));
	assert_non_null(strchr(err, '\n'));
	assert_int_equal(strchr(err, '\n')[1], 0); /* one line */
	free(err);
	loc = loc_for(0, &a);
	assert_int_equal(loc->kind, PT_PYATTR_K_NONE);
	assert_int_equal(loc->vst, PT_VST_ATTR_MISSING);
	/* asked again in a second */
	assert_int_equal(x->p[0]->nretries, 1);
	assert_memory_equal(&x->p[0]->retries[0].key, &writes[0].key, sizeof(writes[0].key));
	assert_true(x->p[0]->retries[0].due >= t0 + 1000000000ull);

	/* asked again (after the retry, or by another instance): not said
	 * again */
	a.obj = FREED;
	err = ask(x, 0, &a);
	assert_string_equal(err, "");
	free(err);
	assert_int_equal(loc_for(1, &a)->vst, PT_VST_ATTR_MISSING);
	assert_int_equal(x->p[0]->nretries, 2);
	/* another expression is said */
	a = attr_rec(x, 0, step, 2, py->engine_type, py->engine);
	err = ask(x, 0, &a);
	assert_non_null(strstr(err, "batch=arg:self.co_name in Engine.step"));
	free(err);
	assert_int_equal(loc_for(2, &a)->vst, PT_VST_ATTR_MISSING);
	assert_int_equal(x->p[0]->nretries, 3);
}

/* Instances that cannot have it (a str: no member, no __dict__), or keep
 * it where it cannot be read (a code object's co_argcount, a C int): for
 * good, said each time, not asked again. */
static void test_attr_never(void **state)
{
	struct fx *x = *state;
	struct proc *p;
	const struct pt_pyattr_loc *loc;
	struct pt_rec_attr a;
	uint32_t fid[1][NF], step;
	char want[256], *err;

	open_attrs(x, 1, fid);
	step = fid[0][F_STEP];
	p = x->p[0];
	a = attr_rec(x, 0, step, 0, p->python.rt.unicode_type, FREED);
	for (size_t i = 0; i < 2; i++) {
		err = ask(x, 0, &a);
		snprintf(want, sizeof(want),
			 "proftrace: warning: tokens=arg:self.n in Engine.step (pid %d): str has "
			 "no member n and its instances have no __dict__: counted as "
			 "no_attribute\n",
			 x->py[0].pid);
		assert_string_equal(err, want);
		free(err);
		loc = loc_for(i, &a);
		assert_int_equal(loc->kind, PT_PYATTR_K_NONE);
		assert_int_equal(loc->vst, PT_VST_ATTR_MISSING);
	}
	a = attr_rec(x, 0, fid[0][F_WORK], 0, p->python.rt.code_type, x->py[0].codes[C_WORK]);
	err = ask(x, 0, &a);
	snprintf(want, sizeof(want),
		 "proftrace: warning: count tokens=arg:x.co_argcount in work (pid %d): ",
		 x->py[0].pid);
	assert_true(!strncmp(err, want, strlen(want)));
	assert_non_null(strstr(err, "not readable: counted as attribute_not_readable\n"));
	free(err);
	loc = loc_for(2, &a);
	assert_int_equal(loc->kind, PT_PYATTR_K_NONE);
	assert_int_equal(loc->vst, PT_VST_ATTR_UNREADABLE);
	assert_int_equal(p->nretries, 0);
}

/* A type that went away (its memory unreadable): nothing stored, asked
 * again; said with -v only. */
static void test_attr_type_gone(void **state)
{
	struct fx *x = *state;
	struct pt_rec_attr a;
	uint32_t fid[1][NF], step;
	char *err;

	open_attrs(x, 1, fid);
	step = fid[0][F_STEP];
	a = attr_rec(x, 0, step, 0, FREED, FREED);
	err = ask(x, 0, &a);
	assert_string_equal(err, "");
	free(err);
	assert_int_equal(nwrites, 0);
	assert_int_equal(x->p[0]->nretries, 1);
	assert_int_equal(x->p[0]->retries[0].key.type, FREED);
	assert_int_equal(x->p[0]->retries[0].key.fid, step);
	assert_int_equal(x->p[0]->retries[0].key.k, 0);
	pt_log__set_verbose(1);
	err = ask(x, 0, &a);
	assert_non_null(strstr(err, "(asking again)\n"));
	free(err);
	assert_int_equal(nwrites, 0);
	assert_int_equal(x->p[0]->nretries, 2);
}

/* attr_locs full: the location is not stored, so it is asked again. */
static void test_attr_map_full(void **state)
{
	struct fx *x = *state;
	struct pt_rec_attr a;
	uint32_t fid[1][NF], step;
	char *err;

	open_attrs(x, 1, fid);
	step = fid[0][F_STEP];
	attr_loc_ret = -E2BIG;
	a = attr_rec(x, 0, step, 0, x->py[0].engine_type, x->py[0].engine);
	err = ask(x, 0, &a);
	assert_string_equal(err, "");
	free(err);
	assert_int_not_equal(loc_for(0, &a)->kind, PT_PYATTR_K_NONE);
	assert_int_equal(x->p[0]->nretries, 1);
	assert_memory_equal(&x->p[0]->retries[0].key, &writes[0].key, sizeof(writes[0].key));
}

/* Records that are not this process's, of a function it does not have,
 * or of an expression without an attribute, or beyond the function's
 * values, or of a function without values: nothing. */
static void test_attr_not_ours(void **state)
{
	struct fx *x = *state;
	struct pyfx *py = &x->py[0];
	struct pt_rec_attr a[6];
	uint32_t fid[1][NF], idx;
	char *err;

	open_attrs(x, 1, fid);
	idx = x->p[0]->idx;
	a[0] = attr_rec(x, 0, PT_FID_MAKE(idx + 1, fid[0][F_STEP] & PT_FID_LOCAL_MASK), 0,
			py->engine_type, py->engine);
	a[1] = attr_rec(x, 0, PT_FID_MAKE(idx, x->p[0]->nfs), 0, py->engine_type, py->engine);
	a[2] = attr_rec(x, 0, fid[0][F_STOP], 0, py->engine_type, py->engine);
	a[3] = attr_rec(x, 0, fid[0][F_WORK], 1, py->engine_type, py->engine);
	a[4] = attr_rec(x, 0, fid[0][F_SERVE], 0, py->engine_type, py->engine);
	a[5] = attr_rec(x, 0, fid[0][F_STEP], PT_MAX_VALS, py->engine_type, py->engine);
	for (int i = 0; i < 6; i++) {
		err = ask(x, 0, &a[i]);
		assert_string_equal(err, "");
		free(err);
		assert_int_equal(nwrites, 0);
		assert_int_equal(x->p[0]->nretries, 0);
	}
}

/* Said once per expression in the whole run, not per process. */
static void test_attr_said_once_per_run(void **state)
{
	struct fx *x = *state;
	struct pt_rec_attr a;
	uint32_t fid[2][NF];
	char *err;

	open_attrs(x, 2, fid);
	a = attr_rec(x, 0, fid[0][F_STEP], 1, x->py[0].engine_type, x->py[0].engine);
	err = ask(x, 0, &a);
	assert_non_null(strstr(err, "kv_len=arg:self.absent"));
	free(err);
	a = attr_rec(x, 1, fid[1][F_STEP], 1, x->py[1].engine_type, x->py[1].engine);
	err = ask(x, 1, &a);
	assert_string_equal(err, "");
	free(err);
	assert_int_equal(loc_for(1, &a)->vst, PT_VST_ATTR_MISSING);
	assert_int_equal(x->p[0]->nretries, 1);
	assert_int_equal(x->p[1]->nretries, 1);
}

/* The locations asked again are forgotten in BPF once due (so BPF asks
 * again), the others kept, in order. */
static void test_attr_retries(void **state)
{
	struct fx *x = *state;
	struct proc *p;
	struct pt_rec_attr a, b;
	struct attr_retry first, second;
	uint32_t fid[1][NF], step;
	char *err;

	open_attrs(x, 1, fid);
	step = fid[0][F_STEP];
	p = x->p[0];
	/* nothing to ask again: nothing forgotten */
	pt_run__attr_retries(p, UINT64_MAX);
	assert_int_equal(nwrites, 0);
	a = attr_rec(x, 0, step, 1, x->py[0].engine_type, x->py[0].engine);
	b = attr_rec(x, 0, step, 0, FREED, FREED);
	err = ask(x, 0, &a);
	free(err);
	err = ask(x, 0, &b);
	free(err);
	nwrites = 0;
	assert_int_equal(p->nretries, 2);
	first = p->retries[0];
	second = p->retries[1];
	/* a's was asked for first (the clock moved in between) */
	assert_true(second.due > first.due);

	/* none due yet */
	pt_run__attr_retries(p, first.due - 1);
	assert_int_equal(nwrites, 0);
	assert_int_equal(p->nretries, 2);
	/* due at its time: forgotten, the other kept */
	pt_run__attr_retries(p, first.due);
	assert_int_equal(nwrites, 1);
	assert_int_equal(writes[0].kind, W_ATTR_FORGET);
	assert_int_equal(writes[0].key.type, x->py[0].engine_type);
	assert_int_equal(writes[0].key.fid, step);
	assert_int_equal(writes[0].key.k, 1);
	assert_int_equal(p->nretries, 1);
	assert_memory_equal(&p->retries[0], &second, sizeof(second));
	/* once only */
	pt_run__attr_retries(p, first.due);
	assert_int_equal(nwrites, 1);
	pt_run__attr_retries(p, second.due + 1);
	assert_int_equal(nwrites, 2);
	assert_int_equal(writes[1].kind, W_ATTR_FORGET);
	assert_int_equal(writes[1].key.type, FREED);
	assert_int_equal(p->nretries, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_code_answered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_code_without_the_argument, setup, teardown),
		cmocka_unit_test_setup_teardown(test_code_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pending_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pending_calls_of_code_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pending_calls_before_the_map, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_processes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attr_found, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attr_of_another_type_not_taken, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_attr_not_yet, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attr_never, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attr_type_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attr_map_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attr_not_ours, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attr_said_once_per_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attr_retries, setup, teardown),
	};

	return cmocka_run_group_tests_name("pyrec", tests, NULL, NULL);
}
