// SPDX-License-Identifier: BSD-2-Clause
/*
 * run/probecost.c: a function's probe-site kind follows the instruction
 * its probe is on, as the resolver of a process opened by
 * pt_run__open_proc (a child of this test, waiting) found it in this
 * binary's functions below (push %rbp: emulated, a 5-byte nop: nop5,
 * sub $8,%rsp: single-stepped, a direct jmp or a one-byte nop: emulated,
 * a mov before a push: the push, unless prologue_skip is off); a py:
 * function's is the frame probe without an agent. pt_run__declare_cost
 * gives each function its kind's calibrated cost (none when not
 * calibrated), unnamed frames theirs; and pt_run__overhead_doc writes
 * the `overhead` section of a process's document (pt_run__view_doc) with
 * the keys docs/summary.md's table lists, each figure what the table
 * says from the calibration and the calls, and the corrected_* figures
 * next to the raw ones; not calibrated, `calibrated` false and why, and
 * no corrected_* figure anywhere.
 *
 * struct pt_calib has no parse or load of its own: pt_calib__get either
 * measures (a child proftrace attaching with BPF to a helper of the
 * proftrace binary) or reads root's cache in /run/proftrace, which a
 * unit test must neither need nor overwrite. The calibrated one is
 * filled here as pt_calib__get fills it; the one that is not comes from
 * pt_calib__get itself (PT_CALIBRATE=off).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "aggregate/agg.h"
#include "aggregate/overhead.h"
#include "attach/prologue.h"
#include "attach/resolve.h"
#include "bpf/proftrace.h"
#include "config/config.h"
#include "run/run.h"
#include "run/calib.h"
#include "run/funcs.h"
#include "run/probecost.h"
#include "run/procs.h"
#include "run/records.h"
#include "run/report.h"
#include "util/util.h"
#include "runfx.h"

#define MS 1000000ull

/*
 * What the targets files name in the child (this binary), in assembly so
 * that each starts with the instruction wanted (a compiler may start a
 * function with anything); global and sized, so that the resolver finds
 * them and reads them whole.
 */
__asm__(".text\n"
	".globl pc_site_push\n.type pc_site_push,@function\n"
	"pc_site_push:\n\tpush %rbp\n\tmov %rsp,%rbp\n\tpop %rbp\n\tret\n"
	".size pc_site_push,.-pc_site_push\n"
	".globl pc_site_nop5\n.type pc_site_nop5,@function\n"
	"pc_site_nop5:\n\t.byte 0x0f,0x1f,0x44,0x00,0x00\n\tret\n"
	".size pc_site_nop5,.-pc_site_nop5\n"
	".globl pc_site_sstep\n.type pc_site_sstep,@function\n"
	"pc_site_sstep:\n\tsub $8,%rsp\n\tadd $8,%rsp\n\tret\n"
	".size pc_site_sstep,.-pc_site_sstep\n"
	".globl pc_site_movpush\n.type pc_site_movpush,@function\n"
	"pc_site_movpush:\n\tmov %rdi,%rax\n\tpush %rbp\n\tpop %rbp\n\tret\n"
	".size pc_site_movpush,.-pc_site_movpush\n"
	".globl pc_site_jmp\n.type pc_site_jmp,@function\n"
	"pc_site_jmp:\n\tjmp 1f\n1:\n\tret\n"
	".size pc_site_jmp,.-pc_site_jmp\n"
	".globl pc_site_nop1\n.type pc_site_nop1,@function\n"
	"pc_site_nop1:\n\tnop\n\tret\n"
	".size pc_site_nop1,.-pc_site_nop1\n");

static const char conf_kinds[] = "step native:exe:pc_site_push\n"
				 "bucket k.nop5 native:exe:pc_site_nop5\n"
				 "bucket k.sstep native:exe:pc_site_sstep\n"
				 "bucket k.movpush native:exe:pc_site_movpush\n"
				 "bucket k.jmp native:exe:pc_site_jmp\n"
				 "bucket k.nop native:exe:pc_site_nop1\n"
				 "bucket k.py py:pcmod::work\n";

static const char conf_noskip[] = "step native:exe:pc_site_push\n"
				  "bucket k.movpush native:exe:pc_site_movpush\n"
				  "set prologue_skip off\n";

/* a step with two probed calls in it, each its own bucket */
static const char conf_cost[] = "step native:exe:pc_site_push\n"
				"bucket c.sstep native:exe:pc_site_sstep\n"
				"bucket c.nop5 native:exe:pc_site_nop5\n";

/* A calibration as pt_calib__get makes one: the native kinds measured,
 * the others the bench's figures. */
static void calibrated(struct pt_calib *c)
{
	static const double pair[PT_SITE_NKINDS] = {
		[PT_SITE_EMULATED] = 2000,     [PT_SITE_NOP5] = 1000.4, [PT_SITE_SSTEP] = 8000,
		[PT_SITE_AGENT] = 700,	       [PT_SITE_FRAME] = 1300,	[PT_SITE_SAMPLE] = 1800,
		[PT_SITE_FRAME_UNNAMED] = 650,
	};
	static const double self[PT_SITE_NKINDS] = {
		[PT_SITE_EMULATED] = 1000, [PT_SITE_NOP5] = 500,  [PT_SITE_SSTEP] = 4000.6,
		[PT_SITE_AGENT] = 350,	   [PT_SITE_FRAME] = 650,
	};

	memset(c, 0, sizeof(*c));
	c->ok = true;
	for (int k = 0; k < PT_SITE_NKINDS; k++) {
		c->pair_ns[k] = pair[k];
		c->self_ns[k] = self[k];
	}
	c->measured[PT_SITE_EMULATED] = c->measured[PT_SITE_NOP5] = c->measured[PT_SITE_SSTEP] =
		true;
	c->took_s = 2.5;
}

struct fx {
	struct run r;
	pid_t child;
	struct proc *p;
};

/* A process opened on a child with targets text, in the run's table. */
static int open_with(void **state, const char *text)
{
	struct fx *x = calloc(1, sizeof(*x));
	char err[512] = "out of memory";

	*state = x;
	if (!x || runfx__config(&x->r, text))
		return -1;
	x->child = runfx__child();
	if (x->child < 0 || pt_run__open_proc(&x->r, x->child, true, &x->p, err, sizeof(err)) ||
	    pt_proctable__add(&x->r.procs, x->p)) {
		fprintf(stderr, "open_proc: %s\n", err);
		pt_run__free_proc(x->p);
		runfx__reap(x->child); /* no teardown after a failed setup */
		return -1;
	}
	return 0;
}

static int setup_kinds(void **state)
{
	return open_with(state, conf_kinds);
}

static int setup_noskip(void **state)
{
	return open_with(state, conf_noskip);
}

static int setup_cost(void **state)
{
	return open_with(state, conf_cost);
}

/* (after a failed check too: the child must not outlive the test) */
static int teardown(void **state)
{
	struct fx *x = *state;

	if (!x)
		return 0;
	pt_run__free_proc(x->p);
	runfx__reap(x->child);
	pt_proctable__free(&x->r.procs);
	pt_config__free(&x->r.cfg);
	free(x);
	return 0;
}

static const struct pt_func *func_of(const struct proc *p, const char *symbol)
{
	for (size_t i = 0; i < p->nfs; i++)
		if (!strcmp(pt_resolver__func(p->res, i)->symbol, symbol))
			return pt_resolver__func(p->res, i);
	fail_msg("%s not resolved", symbol);
	return NULL;
}

/* ---- site kinds ---- */

static void kind_is(const struct proc *p, const char *symbol, enum pt_insn_class cls,
		    unsigned int skip, enum pt_site_kind kind)
{
	const struct pt_func *f = func_of(p, symbol);

	if (f->site.cls != cls || f->site.skip != skip)
		fail_msg("%s: probe on %s at +%u, not %s at +%u", symbol,
			 pt_insn_class__str(f->site.cls), f->site.skip, pt_insn_class__str(cls),
			 skip);
	if (pt_run__site_kind(p, f) != kind)
		fail_msg("%s: kind %s, not %s", symbol, pt_site_kind__str(pt_run__site_kind(p, f)),
			 pt_site_kind__str(kind));
}

static void test_site_kinds(void **state)
{
	struct fx *x = *state;
	struct proc *p = x->p;
	size_t spec = 6; /* the py: line */
	int fid;

	kind_is(p, "pc_site_push", PT_INSN_EMULATED, 0, PT_SITE_EMULATED);
	kind_is(p, "pc_site_nop5", PT_INSN_NOP5, 0, PT_SITE_NOP5);
	kind_is(p, "pc_site_sstep", PT_INSN_SINGLESTEP, 0, PT_SITE_SSTEP);
	kind_is(p, "pc_site_jmp", PT_INSN_BRANCH, 0, PT_SITE_EMULATED);
	kind_is(p, "pc_site_nop1", PT_INSN_NOP, 0, PT_SITE_EMULATED);
	/* the probe moved over the mov (3 bytes) to the push */
	kind_is(p, "pc_site_movpush", PT_INSN_EMULATED, 3, PT_SITE_EMULATED);
	/* a py: function, no agent: the frame probe times it */
	fid = pt_resolver__add_py(p->res, &spec, 1, "/srv/pcmod.py", "work", 1);
	assert_true(fid >= 0);
	assert_null(p->agent.handle);
	assert_int_equal(pt_run__site_kind(p, pt_resolver__func(p->res, (size_t)fid)),
			 PT_SITE_FRAME);
}

/* prologue_skip off: the probe stays on the mov, single-stepped. */
static void test_site_kind_not_moved(void **state)
{
	struct fx *x = *state;

	kind_is(x->p, "pc_site_movpush", PT_INSN_SINGLESTEP, 0, PT_SITE_SSTEP);
	kind_is(x->p, "pc_site_push", PT_INSN_EMULATED, 0, PT_SITE_EMULATED);
}

/* ---- costs ---- */

/* One record of p's function f on the child's main thread, through the
 * run's route (records.c): to p's view. */
static void rec(struct fx *x, uint32_t type, const struct pt_func *f, uint16_t depth, uint64_t t0,
		uint64_t t1, uint32_t unnamed)
{
	struct pt_rec r = { .type = type,
			    .fid = PT_FID_MAKE(x->p->idx, (uint32_t)f->fid),
			    .pid = (uint32_t)x->child,
			    .tid = (uint32_t)x->child,
			    .t_entry = t0,
			    .t_exit = type == PT_REC_EXIT ? t1 : 0,
			    .depth = depth,
			    .unnamed = unnamed };

	assert_int_equal(pt_run__on_rec(&x->r, &r, sizeof(r)), 0);
}

/* A step (pc_site_push) at t ms, 10 ms long, with pc_site_sstep at +1..+3
 * ms and pc_site_nop5 at +4..+5 ms in it; unnamed frames: u at the step's
 * entry, u + du at its exit. */
static void step(struct fx *x, uint64_t t, uint32_t u, uint32_t du)
{
	const struct pt_func *st = func_of(x->p, "pc_site_push"),
			     *ss = func_of(x->p, "pc_site_sstep"),
			     *n5 = func_of(x->p, "pc_site_nop5");

	t *= MS;
	rec(x, PT_REC_ENTRY, st, 0, t, 0, u);
	rec(x, PT_REC_ENTRY, ss, 1, t + 1 * MS, 0, u);
	rec(x, PT_REC_EXIT, ss, 1, t + 1 * MS, t + 3 * MS, u);
	rec(x, PT_REC_ENTRY, n5, 1, t + 4 * MS, 0, u);
	rec(x, PT_REC_EXIT, n5, 1, t + 4 * MS, t + 5 * MS, u);
	rec(x, PT_REC_EXIT, st, 0, t, t + 10 * MS, u + du);
}

static void declare_all(struct proc *p)
{
	for (size_t i = 0; i < p->nfs; i++)
		assert_int_equal(pt_run__declare_func(p, i), 0);
}

/* Calibrated: each call costs its kind's self_ns, and what it encloses
 * the pair_ns of the probed calls in it and the unnamed frames' cost. */
static void test_declare_cost_calibrated(void **state)
{
	struct fx *x = *state;
	struct proc *p = x->p;
	const struct pt_calib *c = &x->r.calib;
	const struct pt_func *st = func_of(p, "pc_site_push"), *ss = func_of(p, "pc_site_sstep"),
			     *n5 = func_of(p, "pc_site_nop5");
	double step_cost;

	calibrated(&x->r.calib);
	/* as pt_run__declare_func does for p's view: its cost, its roles */
	for (size_t i = 0; i < p->nfs; i++) {
		const struct pt_func *f = pt_resolver__func(p->res, i);

		assert_null(pt_ovh__func(p->v.ovh, (uint32_t)i));
		assert_int_equal(pt_run__declare_cost(p, f, p->v.ovh, (uint32_t)i), 0);
		assert_non_null(pt_ovh__func(p->v.ovh, (uint32_t)i));
		assert_int_equal(
			pt_agg__set_func(p->v.agg, (uint32_t)i, f->is_step, f->bucket_mask), 0);
	}
	step(x, 10, 0, 0);
	step(x, 30, 0, 3); /* three unnamed frames in the step */
	assert_int_equal(pt_ovh__func(p->v.ovh, (uint32_t)ss->fid)->calls, 2);
	assert_float_equal(pt_ovh__func(p->v.ovh, (uint32_t)ss->fid)->cost_ns,
			   2 * c->self_ns[PT_SITE_SSTEP], 1e-6);
	assert_float_equal(pt_ovh__func(p->v.ovh, (uint32_t)n5->fid)->cost_ns,
			   2 * c->self_ns[PT_SITE_NOP5], 1e-6);
	step_cost =
		c->self_ns[PT_SITE_EMULATED] + c->pair_ns[PT_SITE_SSTEP] + c->pair_ns[PT_SITE_NOP5];
	assert_float_equal(pt_ovh__func(p->v.ovh, (uint32_t)st->fid)->cost_ns,
			   2 * step_cost + 3 * c->pair_ns[PT_SITE_FRAME_UNNAMED], 1e-6);
	assert_float_equal(pt_ovh__step_cost_ns(p->v.ovh),
			   2 * step_cost + 3 * c->pair_ns[PT_SITE_FRAME_UNNAMED], 1e-6);
	assert_int_equal(pt_ovh__hits(p->v.ovh, PT_SITE_EMULATED), 2);
	assert_int_equal(pt_ovh__hits(p->v.ovh, PT_SITE_SSTEP), 2);
	assert_int_equal(pt_ovh__hits(p->v.ovh, PT_SITE_NOP5), 2);
	assert_int_equal(pt_ovh__hits(p->v.ovh, PT_SITE_FRAME_UNNAMED), 3);
}

/* Not calibrated: the calls are counted by kind, and cost nothing. */
static void test_declare_cost_not_calibrated(void **state)
{
	struct fx *x = *state;
	struct proc *p = x->p;

	setenv("PT_CALIBRATE", "off", 1);
	pt_calib__get(&x->r.calib, NULL);
	unsetenv("PT_CALIBRATE");
	assert_false(x->r.calib.ok);
	assert_string_equal(x->r.calib.why, "PT_CALIBRATE=off");
	declare_all(p);
	step(x, 10, 0, 5);
	for (size_t i = 0; i < p->nfs; i++) {
		assert_int_equal(pt_ovh__func(p->v.ovh, (uint32_t)i)->calls, 1);
		assert_float_equal(pt_ovh__func(p->v.ovh, (uint32_t)i)->cost_ns, 0, 0);
	}
	assert_float_equal(pt_ovh__step_cost_ns(p->v.ovh), 0, 0);
	assert_int_equal(pt_ovh__hits(p->v.ovh, PT_SITE_SSTEP), 1);
	assert_int_equal(pt_ovh__hits(p->v.ovh, PT_SITE_FRAME_UNNAMED), 5);
}

/* ---- the document ---- */

/* docs/summary.md's `overhead` table: the keys of its rows, and the
 * kinds its `kinds` row lists. */
struct doc_keys {
	char key[32][32];
	size_t nkey;
	char kind[PT_SITE_NKINDS + 2][32];
	size_t nkind;
};

static void doc_keys(struct doc_keys *k)
{
	const char *dir = getenv("PT_SRCDIR");
	char path[4096], line[4096];
	bool in = false;
	FILE *f;

	memset(k, 0, sizeof(*k));
	snprintf(path, sizeof(path), "%s/docs/summary.md", dir ? dir : ".");
	f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open %s: %s (run from the repository root or set PT_SRCDIR)", path,
			 strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *s, *e;

		if (!strncmp(line, "### ", 4)) {
			if (in)
				break;
			in = !strcmp(line, "### `overhead`\n");
			continue;
		}
		if (!in || strncmp(line, "| `", 3))
			continue;
		e = strchr(line + 3, '`');
		assert_non_null(e);
		assert_true(k->nkey < 32 && e - (line + 3) < 32);
		snprintf(k->key[k->nkey++], 32, "%.*s", (int)(e - (line + 3)), line + 3);
		if (strcmp(k->key[k->nkey - 1], "kinds"))
			continue;
		/* "per kind (`emulated`, `nop5`, ...):" */
		s = strstr(line, "per kind (");
		assert_non_null(s);
		e = strchr(s, ')');
		assert_non_null(e);
		*e = '\0';
		for (s = strchr(s, '`'); s; s = strchr(s, '`')) {
			char *end = strchr(s + 1, '`');

			assert_non_null(end);
			assert_true(k->nkind < PT_SITE_NKINDS + 2);
			snprintf(k->kind[k->nkind++], 32, "%.*s", (int)(end - s - 1), s + 1);
			s = end + 1;
		}
	}
	fclose(f);
	assert_true(in);
	assert_true(k->nkey >= 10);
	assert_int_equal(k->nkind, PT_SITE_NKINDS);
}

static double r6(double v)
{
	return round(v * 1e6) / 1e6;
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(o, k);

	if (!cJSON_IsNumber(v))
		fail_msg("%s: not a number", k);
	return v->valuedouble;
}

/* The array element of arr whose key is val. */
static const cJSON *named(const cJSON *arr, const char *key, const char *val)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, arr)
	{
		const cJSON *v = cJSON_GetObjectItem(e, key);

		if (cJSON_IsString(v) && !strcmp(v->valuestring, val))
			return e;
	}
	fail_msg("no element with %s %s", key, val);
	return NULL;
}

/* Any key starting with corrected_, anywhere in o. */
static bool has_corrected(const cJSON *o)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, o)
	{
		if (e->string && !strncmp(e->string, "corrected_", 10))
			return true;
		if ((cJSON_IsObject(e) || cJSON_IsArray(e)) && has_corrected(e))
			return true;
	}
	return false;
}

/* A process's document after two steps. What pt_run__attach sets (it
 * needs BPF) is set as it would be: the clock started 2 s before the
 * run's end, the attach took 300 ms and half of the CPU time so far. */
static cJSON *doc_after_steps(struct fx *x)
{
	uint64_t now = pt_now_ns(CLOCK_MONOTONIC);

	declare_all(x->p);
	step(x, 10, 0, 0);
	step(x, 30, 0, 0);
	x->r.t0_mono = now - 2000 * MS;
	x->r.t_end_mono = now;
	x->r.attach_ns = 300 * MS;
	x->r.attach_cpu_ns = pt_now_ns(CLOCK_PROCESS_CPUTIME_ID) / 2;
	return pt_run__view_doc(&x->r, x->p, &x->p->v);
}

static void test_overhead_doc(void **state)
{
	struct fx *x = *state;
	const struct pt_calib *c = &x->r.calib;
	const cJSON *ov, *kinds, *hits, *stats, *fn, *bk, *e;
	struct doc_keys dk;
	double cost, added, dur = 2.0, cpu, att;
	cJSON *doc;
	size_t n = 0;

	calibrated(&x->r.calib);
	doc_keys(&dk);
	doc = doc_after_steps(x);
	assert_non_null(doc);
	ov = cJSON_GetObjectItem(doc, "overhead");
	assert_true(cJSON_IsObject(ov));
	/* the table's keys, and no other; unnamed_frames only with the
	 * frame probe */
	for (size_t i = 0; i < dk.nkey; i++)
		if (strcmp(dk.key[i], "unnamed_frames") && !cJSON_GetObjectItem(ov, dk.key[i]))
			fail_msg("overhead.%s: in docs/summary.md, not in the document", dk.key[i]);
	cJSON_ArrayForEach(e, ov)
	{
		bool documented = false;

		for (size_t i = 0; i < dk.nkey; i++)
			documented |= !strcmp(dk.key[i], e->string);
		if (!documented)
			fail_msg("overhead.%s: not in docs/summary.md", e->string);
		n++;
	}
	assert_int_equal(n, dk.nkey - 1);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(ov, "calibrated")));
	/* kinds: every one the table lists, with the calibration's figures */
	kinds = cJSON_GetObjectItem(ov, "kinds");
	hits = cJSON_GetObjectItem(ov, "hits");
	assert_int_equal(cJSON_GetArraySize(kinds), PT_SITE_NKINDS);
	assert_int_equal(cJSON_GetArraySize(hits), PT_SITE_NKINDS);
	for (size_t i = 0; i < dk.nkind; i++) {
		const cJSON *k = cJSON_GetObjectItem(kinds, dk.kind[i]);
		int kd = -1;

		if (!k || !cJSON_GetObjectItem(hits, dk.kind[i]))
			fail_msg("kind %s: in docs/summary.md, not in the document", dk.kind[i]);
		for (int j = 0; j < PT_SITE_NKINDS; j++)
			if (!strcmp(pt_site_kind__str(j), dk.kind[i]))
				kd = j;
		assert_true(kd >= 0);
		assert_int_equal(cJSON_GetArraySize(k), 3);
		assert_float_equal(num(k, "pair_ns"), round(c->pair_ns[kd]), 0);
		assert_float_equal(num(k, "self_ns"), round(c->self_ns[kd]), 0);
		assert_string_equal(cJSON_GetObjectItem(k, "source")->valuestring,
				    c->measured[kd] ? "measured" : "bench");
	}
	assert_float_equal(num(hits, "emulated"), 2, 0);
	assert_float_equal(num(hits, "nop5"), 2, 0);
	assert_float_equal(num(hits, "single-step"), 2, 0);
	assert_float_equal(num(hits, "python-agent"), 0, 0);
	assert_float_equal(num(hits, "frame-probe-unnamed"), 0, 0);
	/* added: hits times pair_ns; its share of the run's 2 s */
	added = 2 * (c->pair_ns[PT_SITE_EMULATED] + c->pair_ns[PT_SITE_NOP5] +
		     c->pair_ns[PT_SITE_SSTEP]);
	assert_float_equal(num(ov, "added_ms"), r6(added / 1e6), 1e-9);
	assert_float_equal(num(ov, "added_share"), r6(added / (dur * 1e9)), 1e-9);
	/* the steps: the step's own self_ns and the pair_ns of the calls
	 * in it, per step and over their 20 ms */
	cost = 2 * (c->self_ns[PT_SITE_EMULATED] + c->pair_ns[PT_SITE_SSTEP] +
		    c->pair_ns[PT_SITE_NOP5]);
	stats = cJSON_GetObjectItem(doc, "stats");
	assert_float_equal(num(stats, "time_ms"), 20, 1e-9);
	assert_float_equal(num(ov, "per_step_ms"), r6(cost / 2 / 1e6), 1e-9);
	assert_float_equal(num(ov, "step_share"), r6(cost / 20e6), 1e-9);
	assert_float_equal(num(stats, "corrected_time_ms"), r6(20 - cost / 1e6), 1e-9);
	assert_float_equal(num(stats, "corrected_min_ms"), r6(10 - cost / 2 / 1e6), 1e-5);
	/* a function: its own self_ns per call */
	fn = named(cJSON_GetObjectItem(doc, "functions"), "symbol", "pc_site_sstep");
	assert_float_equal(num(fn, "total_ms"), 4, 1e-9);
	assert_float_equal(num(fn, "corrected_total_ms"),
			   r6(4 - 2 * c->self_ns[PT_SITE_SSTEP] / 1e6), 1e-9);
	assert_float_equal(num(fn, "corrected_mean_ms"), r6(2 - c->self_ns[PT_SITE_SSTEP] / 1e6),
			   1e-9);
	/* per call: both calls 2 ms less their own cost; the median within 0.5%
	 * of a value added (aggregate/dist.h) */
	assert_float_equal(num(fn, "corrected_min_ms"), r6(2 - c->self_ns[PT_SITE_SSTEP] / 1e6),
			   1e-6);
	assert_float_equal(num(fn, "corrected_p50_ms"), 2 - c->self_ns[PT_SITE_SSTEP] / 1e6, 0.02);
	fn = named(cJSON_GetObjectItem(doc, "functions"), "symbol", "pc_site_push");
	assert_float_equal(num(fn, "corrected_total_ms"), r6(20 - cost / 1e6), 1e-9);
	/* a bucket: its calls' self_ns; step.other the rest of the steps' */
	bk = named(cJSON_GetObjectItem(doc, "buckets"), "name", "c.nop5");
	assert_float_equal(num(bk, "total_ms"), 2, 1e-9);
	assert_float_equal(num(bk, "corrected_total_ms"),
			   r6(2 - 2 * c->self_ns[PT_SITE_NOP5] / 1e6), 1e-9);
	bk = named(cJSON_GetObjectItem(doc, "buckets"), "name", "step.other");
	assert_float_equal(
		num(bk, "corrected_total_ms"),
		r6(num(bk, "total_ms") -
		   (cost - 2 * c->self_ns[PT_SITE_NOP5] - 2 * c->self_ns[PT_SITE_SSTEP]) / 1e6),
		1e-9);
	/* proftrace's own CPU: the attach's, and the steady rest */
	cpu = num(ov, "proftrace_cpu_ms");
	att = (double)x->r.attach_cpu_ns / 1e6;
	assert_true(cpu > att && att > 0);
	assert_float_equal(num(ov, "proftrace_cpu_share"), r6(cpu / (dur * 1e3)), 1e-6);
	assert_float_equal(num(ov, "attach_ms"), 300, 0);
	assert_float_equal(num(ov, "attach_cpu_ms"), r6(att), 1e-6);
	assert_float_equal(num(ov, "steady_cpu_ms"), r6(cpu - att), 1e-3);
	assert_float_equal(num(ov, "steady_cpu_share"), r6((cpu - att) / (dur * 1e3)), 1e-6);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(ov, "calibration_cached")));
	assert_float_equal(num(ov, "calibration_s"), 2.5, 0);
	cJSON_Delete(doc);
}

/* Not calibrated: calibrated false and why, nothing else, and no
 * corrected_* figure anywhere. */
static void test_overhead_doc_not_calibrated(void **state)
{
	struct fx *x = *state;
	const cJSON *ov;
	cJSON *doc;

	setenv("PT_CALIBRATE", "off", 1);
	pt_calib__get(&x->r.calib, NULL);
	unsetenv("PT_CALIBRATE");
	doc = doc_after_steps(x);
	assert_non_null(doc);
	ov = cJSON_GetObjectItem(doc, "overhead");
	assert_int_equal(cJSON_GetArraySize(ov), 2);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(ov, "calibrated")));
	assert_string_equal(cJSON_GetObjectItem(ov, "why")->valuestring, "PT_CALIBRATE=off");
	assert_float_equal(num(cJSON_GetObjectItem(doc, "stats"), "time_ms"), 20, 1e-9);
	assert_false(has_corrected(doc));
	cJSON_Delete(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_site_kinds, setup_kinds, teardown),
		cmocka_unit_test_setup_teardown(test_site_kind_not_moved, setup_noskip, teardown),
		cmocka_unit_test_setup_teardown(test_declare_cost_calibrated, setup_cost, teardown),
		cmocka_unit_test_setup_teardown(test_declare_cost_not_calibrated, setup_cost,
						teardown),
		cmocka_unit_test_setup_teardown(test_overhead_doc, setup_cost, teardown),
		cmocka_unit_test_setup_teardown(test_overhead_doc_not_calibrated, setup_cost,
						teardown),
	};

	return cmocka_run_group_tests_name("probecost", tests, NULL, NULL);
}
