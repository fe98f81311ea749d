/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's hooks: the two probe sites proftrace attaches BPF to
 * (pt_agent_enter, pt_agent_exit), and what calls them for the named code
 * objects only — sys.monitoring local events (3.12+); on 3.8-3.11
 * trampolines (tramp.h) where they fit, and for the rest a PEP 523 frame
 * evaluator that passes every other frame on after one lookup in the code
 * set (installed only while some named code needs it). Every function here that calls into the
 * interpreter must be called with the GIL held.
 */
#ifndef PTAG_HOOKS_H
#define PTAG_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codeset.h"
#include "pyapi.h"
#include "scan.h"
#include "tramp.h"

/* The probe sites: a 5-byte nop (the kernel's cheapest uprobe) and ret.
 * code: the code object; frame: its frame (the activation's identity: a
 * generator keeps its frame across resumptions); ret: the returned or
 * yielded object, 0 when an exception ends the activation; the clock
 * reads (PTAG_FLAG_CLOCKS, CLOCK_MONOTONIC ns): end, right before this
 * call, and prev, right after the thread's last pt_agent_enter returned. */
void pt_agent_enter(uint64_t code, uint64_t frame, uint64_t prev);
void pt_agent_exit(uint64_t code, uint64_t frame, uint64_t ret, uint64_t end, uint64_t prev);

/* Where things are in this interpreter (from proftrace, ptag_header). */
struct ptag_layout {
	uint32_t tstate_frame;
	int32_t cframe_frame;
	uint32_t frame_code;
	uint32_t frame_owner;
	uint32_t code_flags;
	uint32_t interp_eval_frame;
	uint64_t code_mask;
};

struct ptag_hooks {
	struct pt_pyapi *api;
	struct ptag_layout L;
	int mechanism; /* enum ptag_mechanism */
	bool on;       /* callbacks or the evaluator are installed */
	/* sys.monitoring */
	PyObject *mon;	     /* the sys.monitoring module */
	PyObject *tool_name; /* "proftrace" */
	int tool;	     /* -1: none */
	long ev_start, ev_resume, ev_return, ev_yield, ev_unwind, ev_throw;
	PyObject *cb[3]; /* enter, leave, unwind */
	/* 3.8-3.11: trampolines where they fit, the PEP 523 evaluator for
	 * the rest; each tests its own set (tset, eset), so a code object is
	 * timed by one of them only */
	struct ptag_tramp tramp;
	struct ptag_codeset tset, eset;
	PyObject *import_func; /* importlib's _find_and_load (held) */
	bool arming;	       /* an arm is under way (it may let other threads run) */
	bool no_tramp;	       /* PTAG_OPT_NO_TRAMPOLINES: the evaluator for all */
	void *interp;
	bool evaluator; /* ours is installed */
	uint64_t lost;	/* found replaced by someone else's */
	/* imports: importlib's _find_and_load is hooked as well, and
	 * on_import(ctx, module) runs in the importing thread (GIL held)
	 * once a module is imported, before the program calls into it */
	PyObject *import_code;
	void (*on_import)(void *ctx, PyObject *module);
	void *ctx;
	/* 3.8-3.11: a probe's module is not imported yet, so the evaluator
	 * stays in even with nothing named (it is what sees the import) */
	bool watch_imports;
	/* what is hooked: the set the hooks test, and the objects (held) */
	struct ptag_codeset set;
	PyObject **armed;
	uint32_t narmed;
};

/*
 * Install what every named call needs (3.12+: a tool id, the callbacks,
 * PY_UNWIND and PY_THROW globally; 3.8-3.11: nothing until something is
 * armed). 0; -EBUSY: a conflict (what holds it in why); -EIO: a Python
 * call failed (why).
 */
int ptag_hooks__on(struct ptag_hooks *h, char *why, size_t whylen);
/* Hook exactly codes[0..n) (objects the caller holds references to;
 * references are taken here), unhook the rest. fns[0..nfns): the function
 * objects the scan found (3.8-3.11: a code object gets trampolines when
 * they fit it and it has functions here, else the frame evaluator).
 * 0 or -errno (why); -EAGAIN: another arm is under way (nothing done). */
int ptag_hooks__arm(struct ptag_hooks *h, PyObject *const *codes, uint32_t n,
		    const struct ptag_fn *fns, uint32_t nfns, char *why, size_t whylen);
/* How an armed code object is hooked now: PTAG_HOOK_*. code is only
 * looked up in the sets (any address may be given; none is read). */
int ptag_hooks__how(const struct ptag_hooks *h, PyObject *code);
/* For the scan: the code object a function of ours stands for. */
PyObject *ptag_hooks__unwrap(void *h, PyObject *code);
/* Remove every hook, event and callback, drop the references. */
void ptag_hooks__off(struct ptag_hooks *h);
/* 3.8-3.11: is our evaluator still the one installed? false: someone
 * replaced it (counted in lost, and it is not put back). */
bool ptag_hooks__check(struct ptag_hooks *h);

#endif
