// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tramp.h"

/* CO_ITERABLE_COROUTINE (types.coroutine), CO_ASYNC_GENERATOR */
#define CO_UNFIT (0x100 | 0x200)
#define CO_NESTED 0x10

/*
 * The maker, in Python (tramp.py: how a wrapper is written, why), built
 * in here as it is (the path is the build's, from the source root) and
 * NUL-terminated. Run once into a namespace of its own.
 */
__asm__(".section .rodata\n"
	".p2align 3\n"
	".type ptag_tramp_py, @object\n"
	"ptag_tramp_py:\n"
	"\t.incbin \"shim/agent/tramp.py\"\n"
	"\t.byte 0\n"
	".size ptag_tramp_py, . - ptag_tramp_py\n"
	".previous\n");
extern const char ptag_tramp_py[];

#define PY_FILE_INPUT 257

void ptag_tramp__init(struct ptag_tramp *t, const struct pt_pyapi *api, PyObject *cbs)
{
	memset(t, 0, sizeof(*t));
	t->api = api;
	api->IncRef(cbs);
	t->cbs = cbs;
}

const char *ptag_tramp__unfit(long flags)
{
	if (flags < 0)
		return "its flags are unreadable";
	if (flags & CO_UNFIT)
		return "an async generator, or a generator made a coroutine by types.coroutine";
	if (flags & CO_NESTED)
		return "nested in another function (a new function object on each call)";
	return NULL;
}

long ptag_tramp__flags(const struct ptag_tramp *t, PyObject *code)
{
	PyObject *f = t->api->GetAttr(code, "co_flags");
	long v = f ? t->api->LongAsLong(f) : -1;

	if (f)
		t->api->DecRef(f);
	if (v < 0)
		t->api->ErrClear();
	return v;
}

/* The helper's make(), compiled on first need. */
static PyObject *helper(struct ptag_tramp *t)
{
	const struct pt_pyapi *A = t->api;
	PyObject *ns, *b, *r;

	if (t->make || t->failed)
		return t->make;
	t->failed = true;
	ns = A->DictNew();
	b = A->Import("builtins");
	if (!ns || !b || A->DictSetItemString(ns, "__builtins__", b))
		goto out;
	r = A->RunString(ptag_tramp_py, PY_FILE_INPUT, ns, ns, NULL);
	if (!r)
		goto out;
	A->DecRef(r);
	t->make = A->DictGetItemString(ns, "make"); /* borrowed */
	if (t->make) {
		A->IncRef(t->make);
		t->failed = false;
	}
out:
	A->ErrClear();
	if (b)
		A->DecRef(b);
	if (ns)
		A->DecRef(ns); /* make's globals keep it */
	return t->make;
}

static int grow(struct ptag_tramp *t)
{
	uint32_t cap = t->cap ? t->cap * 2 : 16;
	struct ptag_tramp_fn *v;

	if (t->n < t->cap)
		return 0;
	v = realloc(t->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	t->v = v;
	t->cap = cap;
	return 0;
}

int ptag_tramp__add(struct ptag_tramp *t, PyObject *func, PyObject *code, char *why, size_t whylen)
{
	const struct pt_pyapi *A = t->api;
	PyObject *make, *args = NULL, *mark = NULL, *w = NULL;
	int e = -EIO;

	for (uint32_t i = 0; i < t->n; i++)
		if (t->v[i].func == func && t->v[i].orig == code)
			return 0;
	if (A->FunctionGetCode(func) != code) {
		snprintf(why, whylen, "its function's code is no longer this one");
		return -ESTALE;
	}
	make = helper(t);
	if (!make) {
		snprintf(why, whylen, "the trampoline helper could not be made");
		return -EIO;
	}
	if (grow(t)) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	args = A->TupleNew(4);
	mark = A->UnicodeFromString(PTAG_TRAMP_FILE);
	if (!args || !mark)
		goto out;
	A->IncRef(func);
	A->TupleSetItem(args, 0, func);
	A->IncRef(code);
	A->TupleSetItem(args, 1, code);
	A->IncRef(t->cbs);
	A->TupleSetItem(args, 2, t->cbs);
	A->TupleSetItem(args, 3, mark); /* stolen */
	mark = NULL;
	w = A->CallObject(make, args);
	if (!w || ptag_type(w) != A->CodeType || A->SetAttr(func, "__code__", w))
		goto out;
	A->IncRef(func);
	A->IncRef(code);
	t->v[t->n++] = (struct ptag_tramp_fn){ .func = func, .orig = code, .wrap = w };
	w = NULL;
	e = 0;
out:
	if (e)
		snprintf(why, whylen, "its wrapper could not be made");
	A->ErrClear();
	if (w)
		A->DecRef(w);
	if (mark)
		A->DecRef(mark);
	if (args)
		A->DecRef(args);
	return e;
}

static void put_back(struct ptag_tramp *t, struct ptag_tramp_fn *f)
{
	const struct pt_pyapi *A = t->api;

	if (A->FunctionGetCode(f->func) == f->wrap) {
		if (A->SetAttr(f->func, "__code__", f->orig))
			A->ErrClear();
	} else {
		t->lost++; /* replaced since: theirs stays */
	}
	A->DecRef(f->func);
	A->DecRef(f->orig);
	A->DecRef(f->wrap);
}

void ptag_tramp__restore(struct ptag_tramp *t, const struct ptag_codeset *keep)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < t->n; i++) {
		if (keep && ptag_codeset__has(keep, (uint64_t)t->v[i].orig))
			t->v[k++] = t->v[i];
		else
			put_back(t, &t->v[i]);
	}
	t->n = k;
}

uint32_t ptag_tramp__replaced(struct ptag_tramp *t)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < t->n; i++)
		n += t->api->FunctionGetCode(t->v[i].func) != t->v[i].wrap;
	t->replaced = n;
	return n;
}

PyObject *ptag_tramp__unwrap(const struct ptag_tramp *t, PyObject *code)
{
	for (uint32_t i = 0; i < t->n; i++)
		if (t->v[i].wrap == code)
			return t->v[i].orig;
	return code;
}

void ptag_tramp__free(struct ptag_tramp *t)
{
	if (!t->api)
		return;
	ptag_tramp__restore(t, NULL);
	free(t->v);
	t->v = NULL;
	t->cap = 0;
	if (t->make)
		t->api->DecRef(t->make);
	if (t->cbs)
		t->api->DecRef(t->cbs);
	t->make = t->cbs = NULL;
	t->failed = false;
}
