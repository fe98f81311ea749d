/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Trampolines (3.8-3.11): how a named function is hooked there without a
 * frame evaluator, so that no other call pays anything. The function
 * object's __code__ is swapped for a code object of ours with the same
 * signature, name and qualname, whose body is
 *
 *	try:
 *	    enter(code); r = inner(<its arguments, as received>); leave(code, r)
 *	except BaseException:
 *	    unwind(code); raise
 *	return r
 *
 * where inner is a new function of the original code, globals and
 * closure, and enter/leave/unwind are the hooks' callbacks (which call
 * the probe sites with the original code object, so proftrace sees the
 * same code it named). A generator's or coroutine's wrapper resumes the
 * original step by step with the callbacks around each step (tramp.py
 * says how). Every reference to the function object (a class attribute,
 * a bound method, a decorator's cell, an import elsewhere) reaches the
 * wrapper. The swap is undone on disarm and detach, where the function
 * still has our code (someone else's replacement is left alone).
 *
 * It fits where the code object belongs to function objects the scan can
 * find and that are made once: not a function nested in another one (a
 * new function object is made on every call of the outer one), not an
 * async generator or a types.coroutine generator. Those stay on the frame
 * evaluator, said per function.
 *
 * What a program can see while it is in: one more frame, of file
 * PTAG_TRAMP_FILE, between a named function and its caller (in
 * tracebacks, sys._getframe(1), a warning's stacklevel), and the
 * function's __code__ (inspect.getsource of it fails meanwhile).
 * proftrace's sampler drops these frames. Call everything with the GIL.
 */
#ifndef PTAG_TRAMP_H
#define PTAG_TRAMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codeset.h"
#include "pyapi.h"
#include "shim/ptagent.h"

struct ptag_tramp_fn {
	PyObject *func; /* whose __code__ we set (references held on all three) */
	PyObject *orig; /* its code before */
	PyObject *wrap; /* ours */
};

struct ptag_tramp {
	const struct pt_pyapi *api;
	PyObject *cbs;	/* (enter, leave, unwind), held */
	PyObject *make; /* the helper's make(), NULL until first needed */
	bool failed;	/* the helper could not be made: never again */
	struct ptag_tramp_fn *v;
	uint32_t n, cap;
	uint64_t lost;	   /* wrappers found replaced when put back */
	uint32_t replaced; /* of those in v[], replaced at the last look */
};

/* Ready t (nothing made yet); cbs: a tuple of the three callbacks (a
 * reference is taken). */
void ptag_tramp__init(struct ptag_tramp *t, const struct pt_pyapi *api, PyObject *cbs);
/* Does a trampoline fit code (flags: its co_flags)? NULL, or why not. */
const char *ptag_tramp__unfit(long flags);
/* code's co_flags, -1 when unreadable. */
long ptag_tramp__flags(const struct ptag_tramp *t, PyObject *code);
/* Give func, whose code is code, a wrapper (nothing when it has one for
 * code already). 0; -errno (why). */
int ptag_tramp__add(struct ptag_tramp *t, PyObject *func, PyObject *code, char *why, size_t whylen);
/* Put back the original code of every function whose code is not in
 * keep (of all when keep is NULL), and forget them. */
void ptag_tramp__restore(struct ptag_tramp *t, const struct ptag_codeset *keep);
/* Wrapped functions whose __code__ is no longer ours (the program set
 * its own since): their calls are not timed. Counted into lost. */
uint32_t ptag_tramp__replaced(struct ptag_tramp *t);
/* The original code object when code is one of our wrappers, else code. */
PyObject *ptag_tramp__unwrap(const struct ptag_tramp *t, PyObject *code);
/* Restore all, drop every reference. */
void ptag_tramp__free(struct ptag_tramp *t);

#endif
