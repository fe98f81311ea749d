// SPDX-License-Identifier: BSD-2-Clause
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hooks.h"
#include "shim/ptagent.h"

/*
 * The probe sites. Written in assembly so they are exactly a 5-byte nop
 * (0f 1f 44 00 00: the kernel optimises a uprobe on it into a call, ~3x
 * cheaper than an emulated or single-stepped first instruction) and a
 * ret, never inlined and never folded into one another.
 */
__asm__(".text\n"
	".p2align 4\n"
	".globl " PTAG_SYM_ENTER "\n"
	".type " PTAG_SYM_ENTER ", @function\n" PTAG_SYM_ENTER ":\n"
	"\t.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
	"\tret\n"
	".size " PTAG_SYM_ENTER ", . - " PTAG_SYM_ENTER "\n"
	".p2align 4\n"
	".globl " PTAG_SYM_EXIT "\n"
	".type " PTAG_SYM_EXIT ", @function\n" PTAG_SYM_EXIT ":\n"
	"\t.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
	"\tret\n"
	".size " PTAG_SYM_EXIT ", . - " PTAG_SYM_EXIT "\n");

/*
 * The clock reads passed to the probe sites (PTAG_FLAG_CLOCKS): a probe
 * hit costs a trap into the kernel, and its own timestamp falls inside
 * it, so part of each hit's cost would be inside the activation's time.
 * Read right before an exit's call and right after an enter's returns,
 * they bound the body alone; the enter's is passed with the thread's
 * next call (an enter must return before it can be read), which BPF
 * checks against the hits around it. ~20 ns each (vDSO).
 */
static __thread uint64_t t_after; /* right after this thread's last enter */

static inline uint64_t clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void probe_enter(uint64_t code, uint64_t frame)
{
	pt_agent_enter(code, frame, t_after);
	t_after = clock_ns();
}

static inline void probe_leave(uint64_t code, uint64_t frame, uint64_t ret)
{
	pt_agent_exit(code, frame, ret, clock_ns(), t_after);
}

/* The hooks in force, read by the evaluator and the callbacks (which run
 * with the GIL, as does everything that changes it). Never freed: a
 * frame entered through our evaluator may return after it is removed. */
static struct ptag_hooks *g_h;
static void *g_default; /* _PyEval_EvalFrameDefault */
static PyObject *g_none;

/* CO_GENERATOR | CO_COROUTINE | CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR */
#define CO_GENLIKE (0x20 | 0x80 | 0x100 | 0x200)

#define likely(x) __builtin_expect(!!(x), 1)

/* ---- 3.8-3.11: the frame evaluator ---- */

typedef PyObject *(*eval38_t)(void *frame, int throwflag);
typedef PyObject *(*eval39_t)(void *tstate, void *frame, int throwflag);

static inline uint64_t frame_code(const struct ptag_hooks *h, void *frame)
{
	return *(uint64_t *)((char *)frame + h->L.frame_code) & h->L.code_mask;
}

/* 3.11 runs a generator's frame once to create it (up to
 * RETURN_GENERATOR), owned by the thread; its activations are owned by
 * the generator. */
static inline bool creation_frame(const struct ptag_hooks *h, uint64_t code, void *frame)
{
	return h->L.frame_owner && (*(uint32_t *)(code + h->L.code_flags) & CO_GENLIKE) &&
	       *((uint8_t *)frame + h->L.frame_owner) == 0;
}

/* A module was just imported (importlib's _find_and_load returned it). */
static void imported(struct ptag_hooks *h, PyObject *module)
{
	/* not while an arm lets other threads run: the next rescan sees it */
	if (module && h->on_import && !h->arming)
		h->on_import(h->ctx, module);
}

static PyObject *eval38(void *frame, int throwflag)
{
	struct ptag_hooks *h = g_h;
	uint64_t code = frame_code(h, frame);
	PyObject *r;

	if (likely(!ptag_codeset__has(&h->eset, code)))
		return ((eval38_t)g_default)(frame, throwflag);
	if (code == (uint64_t)h->import_code) {
		r = ((eval38_t)g_default)(frame, throwflag);
		imported(h, r);
		return r;
	}
	probe_enter(code, (uint64_t)frame);
	r = ((eval38_t)g_default)(frame, throwflag);
	probe_leave(code, (uint64_t)frame, (uint64_t)r);
	return r;
}

static PyObject *eval39(void *tstate, void *frame, int throwflag)
{
	struct ptag_hooks *h = g_h;
	uint64_t code = frame_code(h, frame);
	PyObject *r;

	if (likely(!ptag_codeset__has(&h->eset, code)) || creation_frame(h, code, frame))
		return ((eval39_t)g_default)(tstate, frame, throwflag);
	if (code == (uint64_t)h->import_code) {
		r = ((eval39_t)g_default)(tstate, frame, throwflag);
		imported(h, r);
		return r;
	}
	probe_enter(code, (uint64_t)frame);
	r = ((eval39_t)g_default)(tstate, frame, throwflag);
	probe_leave(code, (uint64_t)frame, (uint64_t)r);
	return r;
}

static void *evaluator(const struct ptag_hooks *h)
{
	return h->api->minor == 8 ? (void *)eval38 : (void *)eval39;
}

static void *interp_of(const struct ptag_hooks *h)
{
	char *ts;

	if (h->api->InterpState_Get)
		return h->api->InterpState_Get();
	/* PyThreadState.interp: 16 on 3.8-3.14 */
	ts = h->api->ThreadState_Get();
	return ts ? *(void **)(ts + 16) : NULL;
}

static void *eval_get(const struct ptag_hooks *h)
{
	if (h->api->GetEvalFrame)
		return h->api->GetEvalFrame(h->interp);
	return *(void **)((char *)h->interp + h->L.interp_eval_frame);
}

static void eval_set(const struct ptag_hooks *h, void *fn)
{
	if (h->api->SetEvalFrame)
		h->api->SetEvalFrame(h->interp, fn);
	else
		*(void **)((char *)h->interp + h->L.interp_eval_frame) = fn;
}

/* Who installed fn: its symbol and file, for the conflict report. */
static void name_of(void *fn, char *buf, size_t len)
{
	Dl_info di;

	if (dladdr(fn, &di) && di.dli_fname)
		snprintf(buf, len, "%s in %s", di.dli_sname ? di.dli_sname : "a function",
			 di.dli_fname);
	else
		snprintf(buf, len, "a function at %p", fn);
}

static int eval_install(struct ptag_hooks *h, char *why, size_t whylen)
{
	void *cur;
	char who[96];

	if (h->evaluator)
		return 0;
	h->interp = interp_of(h);
	if (!h->interp || (!h->api->GetEvalFrame && !h->L.interp_eval_frame)) {
		snprintf(why, whylen, "the interpreter state cannot be found");
		return -EIO;
	}
	cur = eval_get(h);
	if (cur && cur != h->api->EvalFrameDefault) {
		name_of(cur, who, sizeof(who));
		snprintf(why, whylen, "another frame evaluator (PEP 523) is installed: %s", who);
		return -EBUSY;
	}
	g_default = h->api->EvalFrameDefault;
	eval_set(h, evaluator(h));
	h->evaluator = true;
	return 0;
}

static void eval_remove(struct ptag_hooks *h)
{
	if (!h->evaluator)
		return;
	/* never take out someone else's: theirs replaced ours already */
	if (eval_get(h) == evaluator(h))
		eval_set(h, h->api->EvalFrameDefault);
	h->evaluator = false;
}

bool ptag_hooks__check(struct ptag_hooks *h)
{
	if (!h->evaluator || eval_get(h) == evaluator(h))
		return true;
	h->lost++;
	h->evaluator = false; /* theirs now: left alone */
	return false;
}

/* ---- 3.12+: sys.monitoring ---- */

static inline uint64_t cur_frame(const struct ptag_hooks *h)
{
	char *ts = h->api->ThreadState_Get();
	uint64_t f;

	if (!ts)
		return 0;
	f = *(uint64_t *)(ts + h->L.tstate_frame);
	if (h->L.cframe_frame >= 0 && f)
		f = *(uint64_t *)(f + (uint32_t)h->L.cframe_frame);
	return f;
}

/* PY_START, PY_RESUME, PY_THROW (code, offset[, exception]): an
 * activation begins. */
static PyObject *cb_enter(PyObject *self, PyObject *const *args, ssize_t n)
{
	struct ptag_hooks *h = g_h;

	if (h && n >= 1 && ptag_codeset__has(&h->set, (uint64_t)args[0]) &&
	    args[0] != h->import_code)
		probe_enter((uint64_t)args[0], cur_frame(h));
	return g_none;
}

/* PY_RETURN, PY_YIELD (code, offset, value): it ends with a value. */
static PyObject *cb_leave(PyObject *self, PyObject *const *args, ssize_t n)
{
	struct ptag_hooks *h = g_h;

	if (!h || n < 3 || !ptag_codeset__has(&h->set, (uint64_t)args[0]))
		return g_none;
	if (args[0] == h->import_code)
		imported(h, args[2]);
	else
		probe_leave((uint64_t)args[0], cur_frame(h), (uint64_t)args[2]);
	return g_none;
}

/* PY_UNWIND (code, offset, exception): an exception leaves the frame.
 * Global: fires for every frame an exception unwinds, so a miss must be
 * cheap, and never DISABLE (refused for this event: it would replace the
 * program's exception with a ValueError). */
static PyObject *cb_unwind(PyObject *self, PyObject *const *args, ssize_t n)
{
	struct ptag_hooks *h = g_h;

	if (h && n >= 1 && ptag_codeset__has(&h->set, (uint64_t)args[0]) &&
	    args[0] != h->import_code)
		probe_leave((uint64_t)args[0], cur_frame(h), 0);
	return g_none;
}

static struct ptag_methoddef cb_defs[3] = {
	{ "proftrace_enter", (void *)cb_enter, PTAG_METH_FASTCALL, NULL },
	{ "proftrace_leave", (void *)cb_leave, PTAG_METH_FASTCALL, NULL },
	{ "proftrace_unwind", (void *)cb_unwind, PTAG_METH_FASTCALL, NULL },
};

/* ---- 3.8-3.11: the trampolines' callbacks (tramp.h) ---- */

/* Before 3.12 None is not immortal: a result is a new reference. */
static PyObject *none_ref(void)
{
	g_h->api->IncRef(g_none);
	return g_none;
}

/* offsetof(PyGenObject, gi_iframe), and PyCoroObject's cr_iframe, on
 * every 3.11 (its ABI): where a generator's frame lives inside it
 * (tests/victims/pytramp_cases.py checks what the key is; test_agent the
 * arguments read through it) */
#define GEN_IFRAME_311 80

/*
 * The activation's frame: a plain function's wrapper is given none (its
 * own frame, the current one, has the original's parameters in the same
 * slots); a generator's or coroutine's driver gives the original's (tramp.py's
 * key: the frame object, or on 3.11 the generator holding it).
 */
static inline uint64_t tr_frame(const struct ptag_hooks *h, PyObject *const *args, ssize_t n,
				ssize_t plain)
{
	if (n == plain)
		return cur_frame(h);
	return h->api->minor == 11 ? (uint64_t)args[plain] + GEN_IFRAME_311 : (uint64_t)args[plain];
}

/* enter(code[, key]): the original is about to run. */
static PyObject *tr_enter(PyObject *self, PyObject *const *args, ssize_t n)
{
	struct ptag_hooks *h = g_h;

	if ((n == 1 || n == 2) && ptag_codeset__has(&h->tset, (uint64_t)args[0]) &&
	    args[0] != h->import_code)
		probe_enter((uint64_t)args[0], tr_frame(h, args, n, 1));
	return none_ref();
}

/* leave(code, r[, key]): the original returned or yielded r. */
static PyObject *tr_leave(PyObject *self, PyObject *const *args, ssize_t n)
{
	struct ptag_hooks *h = g_h;

	if ((n != 2 && n != 3) || !ptag_codeset__has(&h->tset, (uint64_t)args[0]))
		return none_ref();
	if (args[0] == h->import_code)
		imported(h, args[1]);
	else
		probe_leave((uint64_t)args[0], tr_frame(h, args, n, 2), (uint64_t)args[1]);
	return none_ref();
}

/* unwind(code[, key]): an exception left the original. */
static PyObject *tr_unwind(PyObject *self, PyObject *const *args, ssize_t n)
{
	struct ptag_hooks *h = g_h;

	if ((n == 1 || n == 2) && ptag_codeset__has(&h->tset, (uint64_t)args[0]) &&
	    args[0] != h->import_code)
		probe_leave((uint64_t)args[0], tr_frame(h, args, n, 1), 0);
	return none_ref();
}

static struct ptag_methoddef tr_defs[3] = {
	{ "proftrace_tramp_enter", (void *)tr_enter, PTAG_METH_FASTCALL, NULL },
	{ "proftrace_tramp_leave", (void *)tr_leave, PTAG_METH_FASTCALL, NULL },
	{ "proftrace_tramp_unwind", (void *)tr_unwind, PTAG_METH_FASTCALL, NULL },
};

/* The callbacks (held by the trampolines' tuple only), and the
 * trampolines that call them. */
static int tramp_on(struct ptag_hooks *h, char *why, size_t whylen)
{
	const struct pt_pyapi *A = h->api;
	PyObject *t = A->TupleNew(3), *cb = NULL;

	for (int i = 0; t && i < 3; i++) {
		cb = A->CFunctionNew(&tr_defs[i], NULL, NULL);
		if (!cb || A->TupleSetItem(t, i, cb)) /* stolen */
			break;
	}
	if (!t || !cb) {
		A->ErrClear();
		if (t)
			A->DecRef(t);
		snprintf(why, whylen, "cannot make the trampolines' callbacks");
		return -EIO;
	}
	ptag_tramp__init(&h->tramp, A, t);
	A->DecRef(t);
	return 0;
}

static void tramp_off(struct ptag_hooks *h)
{
	ptag_tramp__free(&h->tramp);
	ptag_codeset__free(&h->tset);
	ptag_codeset__free(&h->eset);
}

/* Call sys.monitoring.<fn>(args...) with up to three arguments (ints
 * unless obj is given for the one at obj_at). New reference or NULL (the
 * error cleared, said in why). */
static PyObject *mon_call(struct ptag_hooks *h, const char *fn, int nargs, long a0, long a1,
			  long a2, int obj_at, PyObject *obj, char *why, size_t whylen)
{
	const struct pt_pyapi *A = h->api;
	PyObject *f = A->GetAttr(h->mon, fn), *args = NULL, *r = NULL;
	long v[3] = { a0, a1, a2 };

	if (!f)
		goto fail;
	args = A->TupleNew(nargs);
	if (!args)
		goto fail;
	for (int i = 0; i < nargs; i++) {
		PyObject *x;

		if (i == obj_at) {
			x = obj;
			A->IncRef(x);
		} else {
			x = A->LongFromLong(v[i]);
		}
		if (!x || A->TupleSetItem(args, i, x))
			goto fail;
	}
	r = A->CallObject(f, args);
	if (!r)
		goto fail;
	A->DecRef(args);
	A->DecRef(f);
	return r;
fail:
	if (why && whylen)
		snprintf(why, whylen, "sys.monitoring.%s failed", fn);
	A->ErrClear();
	if (args)
		A->DecRef(args);
	if (f)
		A->DecRef(f);
	return NULL;
}

static bool mon_ok(struct ptag_hooks *h, PyObject *r)
{
	if (!r)
		return false;
	h->api->DecRef(r);
	return true;
}

static long event(struct ptag_hooks *h, PyObject *events, const char *name)
{
	PyObject *v = h->api->GetAttr(events, name);
	long x = v ? h->api->LongAsLong(v) : -1;

	if (v)
		h->api->DecRef(v);
	if (!v || x <= 0)
		h->api->ErrClear();
	return x;
}

/* Tool ids 3 and 4 have no assigned use (0 debugger, 1 coverage, 2
 * profiler, 5 optimizer): taking one of those could make the program's
 * own cProfile or coverage fail later. */
static const int tool_ids[] = { 4, 3 };

static int take_tool(struct ptag_hooks *h, char *why, size_t whylen)
{
	const struct pt_pyapi *A = h->api;
	size_t used = 0;

	for (size_t i = 0; i < sizeof(tool_ids) / sizeof(tool_ids[0]); i++) {
		PyObject *name = mon_call(h, "get_tool", 1, tool_ids[i], 0, 0, -1, NULL, NULL, 0);
		PyObject *me;

		if (!name)
			continue;
		if (name != g_none) {
			A->DecRef(name);
			continue;
		}
		A->DecRef(name);
		me = mon_call(h, "use_tool_id", 2, tool_ids[i], 0, 0, 1, h->tool_name, NULL, 0);
		if (me) {
			A->DecRef(me);
			h->tool = tool_ids[i];
			return 0;
		}
		A->ErrClear(); /* taken meanwhile */
	}
	/* Say who holds what. */
	used = (size_t)snprintf(why, whylen, "sys.monitoring tool ids 3 and 4 are taken:");
	for (int id = 0; id < 6 && used < whylen; id++) {
		PyObject *name = mon_call(h, "get_tool", 1, id, 0, 0, -1, NULL, NULL, 0);
		const char *s;

		if (!name)
			continue;
		s = name != g_none ? A->UnicodeAsUTF8(name, NULL) : NULL;
		if (s)
			used += (size_t)snprintf(why + used, whylen - used, " %d=%s", id, s);
		else
			A->ErrClear();
		A->DecRef(name);
	}
	return -EBUSY;
}

static int mon_on(struct ptag_hooks *h, char *why, size_t whylen)
{
	const struct pt_pyapi *A = h->api;
	PyObject *sys = A->Import("sys"), *events;
	int e;

	h->mon = sys ? A->GetAttr(sys, "monitoring") : NULL;
	if (sys)
		A->DecRef(sys);
	if (!h->mon) {
		A->ErrClear();
		snprintf(why, whylen, "no sys.monitoring");
		return -EIO;
	}
	events = A->GetAttr(h->mon, "events");
	if (!events) {
		A->ErrClear();
		snprintf(why, whylen, "no sys.monitoring.events");
		return -EIO;
	}
	/* the values moved in 3.14: always by name */
	h->ev_start = event(h, events, "PY_START");
	h->ev_resume = event(h, events, "PY_RESUME");
	h->ev_return = event(h, events, "PY_RETURN");
	h->ev_yield = event(h, events, "PY_YIELD");
	h->ev_unwind = event(h, events, "PY_UNWIND");
	h->ev_throw = event(h, events, "PY_THROW");
	A->DecRef(events);
	if (h->ev_start < 0 || h->ev_resume < 0 || h->ev_return < 0 || h->ev_yield < 0 ||
	    h->ev_unwind < 0 || h->ev_throw < 0) {
		snprintf(why, whylen, "sys.monitoring.events lacks a PY_* event");
		return -EIO;
	}
	h->tool_name = A->UnicodeFromString("proftrace");
	if (!h->tool_name) {
		A->ErrClear();
		snprintf(why, whylen, "out of memory");
		return -EIO;
	}
	e = take_tool(h, why, whylen);
	if (e)
		return e;
	for (int i = 0; i < 3; i++) {
		h->cb[i] = A->CFunctionNew(&cb_defs[i], NULL, NULL);
		if (!h->cb[i]) {
			A->ErrClear();
			snprintf(why, whylen, "cannot make the callbacks");
			return -EIO;
		}
	}
	{
		const struct {
			long ev;
			int cb;
		} reg[] = { { h->ev_start, 0 },	 { h->ev_resume, 0 }, { h->ev_throw, 0 },
			    { h->ev_return, 1 }, { h->ev_yield, 1 },  { h->ev_unwind, 2 } };

		for (size_t i = 0; i < sizeof(reg) / sizeof(reg[0]); i++)
			if (!mon_ok(h, mon_call(h, "register_callback", 3, h->tool, reg[i].ev, 0, 2,
						h->cb[reg[i].cb], why, whylen)))
				return -EIO;
	}
	/* global, but tested only where an exception unwinds or is thrown
	 * into a frame: nothing for calls that return */
	if (!mon_ok(h, mon_call(h, "set_events", 2, h->tool, h->ev_unwind | h->ev_throw, 0, -1,
				NULL, why, whylen)))
		return -EIO;
	return 0;
}

static void mon_off(struct ptag_hooks *h)
{
	const long evs[] = { h->ev_start,  h->ev_resume, h->ev_throw,
			     h->ev_return, h->ev_yield,	 h->ev_unwind };

	if (h->tool >= 0) {
		/* 3.12/3.13's free_tool_id leaves events and callbacks in
		 * force: clear them one by one first */
		for (uint32_t i = 0; i < h->narmed; i++)
			mon_ok(h, mon_call(h, "set_local_events", 3, h->tool, 0, 0, 1, h->armed[i],
					   NULL, 0));
		mon_ok(h, mon_call(h, "set_events", 2, h->tool, 0, 0, -1, NULL, NULL, 0));
		for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
			if (evs[i] > 0)
				mon_ok(h, mon_call(h, "register_callback", 3, h->tool, evs[i], 0, 2,
						   g_none, NULL, 0));
		mon_ok(h, mon_call(h, "free_tool_id", 1, h->tool, 0, 0, -1, NULL, NULL, 0));
		h->tool = -1;
	}
	for (int i = 0; i < 3; i++)
		if (h->cb[i]) {
			h->api->DecRef(h->cb[i]);
			h->cb[i] = NULL;
		}
	if (h->mon) {
		h->api->DecRef(h->mon);
		h->mon = NULL;
	}
	if (h->tool_name) {
		h->api->DecRef(h->tool_name);
		h->tool_name = NULL;
	}
}

/* ---- both ---- */

/* importlib's _find_and_load: every import of a module not imported yet
 * goes through it (import statements, importlib.import_module), and it
 * returns the module. */
static void find_import(struct ptag_hooks *h)
{
	const struct pt_pyapi *A = h->api;
	PyObject *m = A->Import("_frozen_importlib"), *f = NULL, *c;

	if (m)
		f = A->GetAttr(m, "_find_and_load");
	c = f && ptag_type(f) == A->FunctionType ? A->FunctionGetCode(f) : NULL;
	if (c && ptag_type(c) == A->CodeType) {
		A->IncRef(c);
		h->import_code = c;
		A->IncRef(f); /* for its trampoline */
		h->import_func = f;
	}
	A->ErrClear();
	if (f)
		A->DecRef(f);
	if (m)
		A->DecRef(m);
}

static void drop_import(struct ptag_hooks *h)
{
	if (h->import_code)
		h->api->DecRef(h->import_code);
	if (h->import_func)
		h->api->DecRef(h->import_func);
	h->import_code = h->import_func = NULL;
}

int ptag_hooks__on(struct ptag_hooks *h, char *why, size_t whylen)
{
	int e = 0;

	h->tool = -1;
	g_none = h->api->None;
	g_h = h;
	h->mechanism = h->api->minor >= 12 ? PTAG_MECH_MONITORING : PTAG_MECH_EVALFRAME;
	find_import(h);
	if (h->mechanism == PTAG_MECH_MONITORING) {
		e = mon_on(h, why, whylen);
		/* a lazy import is seen as it returns, at no cost to any other call */
		if (!e && h->import_code)
			mon_ok(h, mon_call(h, "set_local_events", 3, h->tool, 0, h->ev_return, 1,
					   h->import_code, NULL, 0));
	} else {
		e = tramp_on(h, why, whylen);
	}
	if (e) {
		mon_off(h);
		tramp_off(h);
		drop_import(h);
		return e;
	}
	h->on = true;
	return 0;
}

static bool held(PyObject *const *v, uint32_t n, PyObject *o)
{
	for (uint32_t i = 0; i < n; i++)
		if (v[i] == o)
			return true;
	return false;
}

/*
 * 3.8-3.11: trampolines for the code objects they fit (their functions
 * found), the frame evaluator for the rest, the import hook by a
 * trampoline too where it can; the evaluator is installed only while it
 * has something to test. A wrapper is made while tset does not have its
 * code yet (making it runs Python code: other threads may run), so until
 * the sets are swapped the evaluator alone times that code; between the
 * two swaps, neither (a few instructions, no Python code unless the
 * program has an audit hook on setattr), never both.
 */
static int arm_split(struct ptag_hooks *h, PyObject *const *codes, uint32_t n,
		     const struct ptag_fn *fns, uint32_t nfns, char *why, size_t whylen)
{
	uint64_t *tr = calloc(n + 1, sizeof(*tr)), *ev = calloc(n + 1, sizeof(*ev));
	struct ptag_codeset tset, eset;
	uint32_t nt = 0, ne = 0;
	char w[128];
	int e = 0;

	if (!tr || !ev) {
		free(tr);
		free(ev);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		bool fits =
			!h->no_tramp && !ptag_tramp__unfit(ptag_tramp__flags(&h->tramp, codes[i]));
		uint32_t got = 0;

		for (uint32_t j = 0; fits && j < nfns; j++)
			if (fns[j].code == codes[i]) {
				if (ptag_tramp__add(&h->tramp, fns[j].func, codes[i], w, sizeof(w)))
					fits = false; /* its other wrappers go below */
				else
					got++;
			}
		if (fits && got)
			tr[nt++] = (uint64_t)codes[i];
		else
			ev[ne++] = (uint64_t)codes[i];
	}
	if (h->watch_imports && h->import_code) {
		if (h->import_func && !h->no_tramp &&
		    !ptag_tramp__add(&h->tramp, h->import_func, h->import_code, w, sizeof(w)))
			tr[nt++] = (uint64_t)h->import_code;
		else
			ev[ne++] = (uint64_t)h->import_code;
	}
	if (ptag_codeset__build(&tset, tr, nt)) {
		e = -ENOMEM;
	} else if (ptag_codeset__build(&eset, ev, ne)) {
		ptag_codeset__free(&tset);
		e = -ENOMEM;
	}
	free(tr);
	free(ev);
	if (e) {
		snprintf(why, whylen, "out of memory");
		return e;
	}
	/* the evaluator's set first: a code object moving to a trampoline is
	 * timed by neither until tset is swapped below, never by both */
	ptag_codeset__free(&h->eset);
	h->eset = eset;
	if (ne) {
		e = eval_install(h, why, whylen);
		if (e) {
			/* a conflict: what has trampolines stays timed */
			ptag_codeset__free(&h->eset);
			memset(&h->eset, 0, sizeof(h->eset));
		}
	} else {
		eval_remove(h);
	}
	ptag_tramp__restore(&h->tramp, &tset);
	ptag_codeset__free(&h->tset);
	h->tset = tset;
	return e;
}

int ptag_hooks__arm(struct ptag_hooks *h, PyObject *const *codes, uint32_t n,
		    const struct ptag_fn *fns, uint32_t nfns, char *why, size_t whylen)
{
	const struct pt_pyapi *A = h->api;
	long local = h->ev_start | h->ev_resume | h->ev_return | h->ev_yield;
	struct ptag_codeset set;
	PyObject **armed;
	uint64_t *keys;
	int e = 0;

	if (!h->on)
		return -EINVAL;
	if (h->arming)
		return -EAGAIN;
	armed = calloc(n ? n : 1, sizeof(*armed));
	keys = calloc(n + 1, sizeof(*keys));
	if (keys) {
		for (uint32_t i = 0; i < n; i++)
			keys[i] = (uint64_t)codes[i];
		/* the import hook's code is tested like a named one */
		keys[n] = (uint64_t)h->import_code;
	}
	if (!armed || !keys || ptag_codeset__build(&set, keys, n + 1)) {
		free(armed);
		free(keys);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	free(keys);
	h->arming = true;
	if (h->mechanism == PTAG_MECH_MONITORING) {
		for (uint32_t i = 0; i < h->narmed; i++)
			if (!held(codes, n, h->armed[i]))
				mon_ok(h, mon_call(h, "set_local_events", 3, h->tool, 0, 0, 1,
						   h->armed[i], NULL, 0));
		for (uint32_t i = 0; i < n; i++)
			if (!held(h->armed, h->narmed, codes[i]) &&
			    !mon_ok(h, mon_call(h, "set_local_events", 3, h->tool, 0, local, 1,
						codes[i], why, whylen)))
				A->ErrClear(); /* that one stays unhooked: said by narmed */
	}
	for (uint32_t i = 0; i < n; i++) {
		A->IncRef(codes[i]);
		armed[i] = codes[i];
	}
	for (uint32_t i = 0; i < h->narmed; i++)
		A->DecRef(h->armed[i]);
	free(h->armed);
	ptag_codeset__free(&h->set);
	h->set = set;
	h->armed = armed;
	h->narmed = n;
	if (h->mechanism == PTAG_MECH_EVALFRAME)
		e = arm_split(h, codes, n, fns, nfns, why, whylen);
	h->arming = false;
	return e;
}

int ptag_hooks__how(const struct ptag_hooks *h, PyObject *code)
{
	if (!ptag_codeset__has(&h->set, (uint64_t)code))
		return PTAG_HOOK_NONE;
	if (h->mechanism == PTAG_MECH_MONITORING)
		return PTAG_HOOK_MONITORING;
	if (ptag_codeset__has(&h->tset, (uint64_t)code))
		return PTAG_HOOK_TRAMPOLINE;
	return h->evaluator && ptag_codeset__has(&h->eset, (uint64_t)code) ? PTAG_HOOK_EVALFRAME
									   : PTAG_HOOK_NONE;
}

PyObject *ptag_hooks__unwrap(void *ctx, PyObject *code)
{
	const struct ptag_hooks *h = ctx;

	return h->on && h->mechanism == PTAG_MECH_EVALFRAME ? ptag_tramp__unwrap(&h->tramp, code)
							    : code;
}

void ptag_hooks__off(struct ptag_hooks *h)
{
	if (h->mechanism == PTAG_MECH_EVALFRAME) {
		eval_remove(h);
		tramp_off(h);
	} else {
		if (h->tool >= 0 && h->import_code)
			mon_ok(h, mon_call(h, "set_local_events", 3, h->tool, 0, 0, 1,
					   h->import_code, NULL, 0));
		mon_off(h);
	}
	drop_import(h);
	for (uint32_t i = 0; i < h->narmed; i++)
		h->api->DecRef(h->armed[i]);
	free(h->armed);
	h->armed = NULL;
	h->narmed = 0;
	ptag_codeset__free(&h->set);
	h->on = false;
}
