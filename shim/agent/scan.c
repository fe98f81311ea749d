// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "scan.h"

#define MAX_DEPTH 12 /* classes in classes, closures of closures */

static bool ends_at_dir(const char *file, size_t lf, const char *path, const char *ext)
{
	size_t lp = strlen(path), le = strlen(ext);
	const char *at;

	if (lf < lp + le)
		return false;
	at = file + lf - lp - le;
	if (memcmp(at, path, lp) || memcmp(at + lp, ext, le))
		return false;
	return at == file || at[-1] == '/';
}

bool ptag_scan__file_matches(const char *file, const char *path)
{
	size_t lf = strlen(file);

	return ends_at_dir(file, lf, path, ".py") || ends_at_dir(file, lf, path, "/__init__.py") ||
	       ends_at_dir(file, lf, path, ".pyc") || ends_at_dir(file, lf, path, "/__init__.pyc");
}

/* Visited objects, by address: cycles (a class and its methods' closures)
 * and shared objects are walked once. */
static int seen_add(struct ptag_scan *s, const void *o)
{
	uint64_t k = (uint64_t)o, *t;
	uint32_t i, size;

	if (s->seen_n * 2 >= s->seen_mask) {
		size = s->seen_mask ? (s->seen_mask + 1) * 2 : 1024;
		t = calloc(size, sizeof(*t));
		if (!t)
			return -ENOMEM;
		for (uint32_t j = 0; s->seen && j <= s->seen_mask; j++) {
			if (!s->seen[j])
				continue;
			i = (uint32_t)(((s->seen[j] >> 4) * 0x9e3779b97f4a7c15ull) >> 32) &
			    (size - 1);
			while (t[i])
				i = (i + 1) & (size - 1);
			t[i] = s->seen[j];
		}
		free(s->seen);
		s->seen = t;
		s->seen_mask = size - 1;
	}
	i = (uint32_t)(((k >> 4) * 0x9e3779b97f4a7c15ull) >> 32) & s->seen_mask;
	while (s->seen[i]) {
		if (s->seen[i] == k)
			return 1;
		i = (i + 1) & s->seen_mask;
	}
	s->seen[i] = k;
	s->seen_n++;
	return 0;
}

static const char *utf8(const struct ptag_scan *s, PyObject *str)
{
	const char *p;

	if (!str || ptag_type(str) != s->api->UnicodeType)
		return NULL;
	p = s->api->UnicodeAsUTF8(str, NULL);
	if (!p)
		s->api->ErrClear();
	return p;
}

static void candidate(struct ptag_scan *s, PyObject *code)
{
	if (s->n == s->cap) {
		s->dropped++;
		return;
	}
	s->api->IncRef(code);
	s->out[s->n++] = code;
}

/* A code object of the module being walked: kept until the walk of the
 * module ends, for near[] (no reference: the module holds it meanwhile). */
static void module_code(struct ptag_scan *s, PyObject *code)
{
	if (!s->near)
		return;
	if (s->nmod == s->mod_cap) {
		uint32_t cap = s->mod_cap ? s->mod_cap * 2 : 256;
		PyObject **v = realloc(s->mod, cap * sizeof(*v));

		if (!v)
			return; /* fewer names to suggest */
		s->mod = v;
		s->mod_cap = cap;
	}
	s->mod[s->nmod++] = code;
}

/* The module walked: its code objects go to near[] when a probe of it has
 * matched nothing (its glob is a typo, or names what is not there). */
static void module_done(struct ptag_scan *s)
{
	bool want = false;

	for (uint32_t i = 0; i < s->nspecs; i++)
		want |= s->match[i] && !s->hits[i];
	for (uint32_t i = 0; want && i < s->nmod; i++) {
		if (s->nnear == s->near_cap) {
			s->near_dropped += s->nmod - i;
			break;
		}
		s->api->IncRef(s->mod[i]);
		s->near[s->nnear++] = s->mod[i];
	}
	s->nmod = 0;
}

static int walk(struct ptag_scan *s, PyObject *v, int depth);

/* A code object: a candidate when its name matches a probe of this
 * module; then the code objects it defines (nested functions, lambdas,
 * comprehensions, class bodies and their methods). */
static int walk_code(struct ptag_scan *s, PyObject *code, int depth)
{
	const struct pt_pyapi *A = s->api;
	PyObject *name, *consts;
	const char *n;
	int e;

	if (ptag_type(code) != A->CodeType || depth > MAX_DEPTH)
		return 0;
	e = seen_add(s, code);
	if (e)
		return e < 0 ? e : 0;
	module_code(s, code);
	name = A->GetAttr(code, "co_name");
	n = utf8(s, name);
	for (uint32_t i = 0, added = 0; n && i < s->nspecs; i++)
		if (s->match[i] && !fnmatch(s->specs[i].glob, n, 0)) {
			s->hits[i]++;
			if (!added++)
				candidate(s, code);
		}
	if (name)
		A->DecRef(name);
	else
		A->ErrClear();
	consts = A->GetAttr(code, "co_consts");
	if (!consts) {
		A->ErrClear();
		return 0;
	}
	if (ptag_type(consts) == A->TupleType) {
		ssize_t k = A->TupleSize(consts);

		for (ssize_t i = 0; i < k && !e; i++) {
			PyObject *c = A->TupleGetItem(consts, i);

			if (c && ptag_type(c) == A->CodeType)
				e = walk_code(s, c, depth + 1);
		}
	}
	A->DecRef(consts);
	return e;
}

/* o.name of a builtin-typed object, walked. */
static int walk_attr(struct ptag_scan *s, PyObject *o, const char *name, int depth)
{
	PyObject *v = s->api->GetAttr(o, name);
	int e = 0;

	if (!v) {
		s->api->ErrClear();
		return 0;
	}
	if (v != s->api->None)
		e = walk(s, v, depth);
	s->api->DecRef(v);
	return e;
}

/* Every value of a dict (a namespace). */
static int walk_dict(struct ptag_scan *s, PyObject *d, int depth)
{
	PyObject *k, *v;
	ssize_t pos = 0;
	int e = 0;

	if (!d || ptag_type(d) != s->api->DictType)
		return 0;
	while (!e && s->api->DictNext(d, &pos, &k, &v))
		e = walk(s, v, depth);
	return e;
}

static uint64_t type_flags(const struct ptag_scan *s, const void *type)
{
	return *(const unsigned long *)((const char *)type + s->type_flags);
}

/* Does code's name match a probe of the module being walked? */
static bool named(const struct ptag_scan *s, PyObject *code)
{
	PyObject *name = s->api->GetAttr(code, "co_name");
	const char *n = utf8(s, name);
	bool hit = false;

	for (uint32_t i = 0; n && !hit && i < s->nspecs; i++)
		hit = s->match[i] && !fnmatch(s->specs[i].glob, n, 0);
	if (name)
		s->api->DecRef(name);
	else
		s->api->ErrClear();
	return hit;
}

/* f runs a candidate: kept for the trampolines (none beyond fns_cap:
 * that function is then hooked by the frame evaluator). */
static void function_of(struct ptag_scan *s, PyObject *f, PyObject *code)
{
	if (!s->fns_cap || !named(s, code))
		return;
	if (s->nfns == s->fns_cap)
		return;
	s->api->IncRef(f);
	s->api->IncRef(code);
	s->fns[s->nfns++] = (struct ptag_fn){ .func = f, .code = code };
}

static int walk_function(struct ptag_scan *s, PyObject *f, int depth)
{
	const struct pt_pyapi *A = s->api;
	PyObject *code = A->FunctionGetCode(f), *cl, *d;
	int e = 0;

	if (code && s->unwrap)
		code = s->unwrap(s->unwrap_ctx, code);
	if (code) {
		e = walk_code(s, code, depth + 1);
		function_of(s, f, code);
	}
	/* a decorator's wrapper holds the wrapped function in a cell... */
	cl = A->FunctionGetClosure(f);
	if (!e && cl && ptag_type(cl) == A->TupleType) {
		ssize_t n = A->TupleSize(cl);

		for (ssize_t i = 0; i < n && !e; i++) {
			PyObject *cell = A->TupleGetItem(cl, i), *x;

			if (!cell || ptag_type(cell) != A->CellType)
				continue;
			x = A->CellGet(cell);
			if (x) {
				e = walk(s, x, depth + 1);
				A->DecRef(x);
			} else {
				A->ErrClear();
			}
		}
	}
	/* ...or functools.wraps put it in __wrapped__ */
	d = e ? NULL : A->GetAttr(f, "__dict__");
	if (d) {
		PyObject *w = A->DictGetItemString(d, "__wrapped__");

		if (w)
			e = walk(s, w, depth + 1);
		A->DecRef(d);
	} else {
		A->ErrClear();
	}
	return e;
}

/* A class defined in a walked module: its namespace, read from tp_dict
 * (no attribute lookup, so no metaclass code runs). */
static int walk_class(struct ptag_scan *s, PyObject *t, int depth)
{
	PyObject *d = *(PyObject **)((char *)t + s->type_dict);

	if (!(type_flags(s, t) & PTAG_TPFLAGS_HEAPTYPE))
		return 0; /* builtin and extension types hold no Python code */
	return walk_dict(s, d, depth + 1);
}

static int walk(struct ptag_scan *s, PyObject *v, int depth)
{
	const struct pt_pyapi *A = s->api;
	void *t;
	int e;

	if (!v || depth > MAX_DEPTH)
		return 0;
	t = ptag_type(v);
	if (t == A->CodeType)
		return walk_code(s, v, depth);
	if (t != A->FunctionType && t != A->StaticMethodType && t != A->ClassMethodType &&
	    t != A->PropertyType && t != s->partial_type && t != s->lru_type &&
	    !(type_flags(s, t) & PTAG_TPFLAGS_TYPE_SUBCLASS))
		return 0;
	e = seen_add(s, v);
	if (e)
		return e < 0 ? e : 0;
	if (t == A->FunctionType)
		return walk_function(s, v, depth);
	if (t == A->StaticMethodType || t == A->ClassMethodType)
		return walk_attr(s, v, "__func__", depth + 1);
	if (t == A->PropertyType) {
		e = walk_attr(s, v, "fget", depth + 1);
		if (!e)
			e = walk_attr(s, v, "fset", depth + 1);
		if (!e)
			e = walk_attr(s, v, "fdel", depth + 1);
		return e;
	}
	if (t == s->partial_type)
		return walk_attr(s, v, "func", depth + 1);
	if (t == s->lru_type)
		return walk_attr(s, v, "__wrapped__", depth + 1);
	return walk_class(s, v, depth);
}

/* functools' partial and lru_cache wrapper types, to recognise them. */
static void wrapper_types(struct ptag_scan *s)
{
	const struct pt_pyapi *A = s->api;
	PyObject *ft = A->Import("functools"), *p, *l;

	if (!ft) {
		A->ErrClear();
		return;
	}
	p = A->GetAttr(ft, "partial");
	l = A->GetAttr(ft, "_lru_cache_wrapper");
	A->ErrClear();
	s->partial_type = p;
	s->lru_type = l;
	/* types live as long as the module: the addresses stay valid */
	if (p)
		A->DecRef(p);
	if (l)
		A->DecRef(l);
	A->DecRef(ft);
}

static int prepare(struct ptag_scan *s)
{
	if (!s->match) {
		s->match = calloc(s->nspecs ? s->nspecs : 1, sizeof(*s->match));
		s->found = calloc(s->nspecs ? s->nspecs : 1, sizeof(*s->found));
		s->hits = calloc(s->nspecs ? s->nspecs : 1, sizeof(*s->hits));
		if (!s->match || !s->found || !s->hits)
			return -ENOMEM;
		wrapper_types(s);
	}
	return 0;
}

bool ptag_scan__found(const struct ptag_scan *s, uint32_t i)
{
	return s->found && i < s->nspecs && s->found[i];
}

bool ptag_scan__all_found(const struct ptag_scan *s)
{
	for (uint32_t i = 0; s->found && i < s->nspecs; i++)
		if (!s->found[i])
			return false;
	return s->found != NULL;
}

int ptag_scan__module(struct ptag_scan *s, PyObject *m)
{
	const struct pt_pyapi *A = s->api;
	PyObject *d;
	const char *file;
	bool any = false;
	int e = prepare(s);

	if (e)
		return e;
	d = m ? A->ModuleGetDict(m) : NULL;
	if (!d) {
		A->ErrClear(); /* not a module */
		return 0;
	}
	file = utf8(s, A->DictGetItemString(d, "__file__"));
	if (!file)
		return 0;
	for (uint32_t i = 0; i < s->nspecs; i++) {
		s->match[i] = ptag_scan__file_matches(file, s->specs[i].path);
		s->found[i] |= s->match[i];
		any |= s->match[i];
	}
	if (!any)
		return 0;
	s->modules++;
	e = walk_dict(s, d, 0);
	module_done(s);
	return e;
}

int ptag_scan__run(struct ptag_scan *s)
{
	const struct pt_pyapi *A = s->api;
	PyObject *mods = A->SysGet("modules"), *k, *m;
	ssize_t pos = 0;
	int e = prepare(s);

	if (e || !mods || ptag_type(mods) != A->DictType)
		return e;
	while (!e && A->DictNext(mods, &pos, &k, &m))
		e = ptag_scan__module(s, m);
	return e;
}

void ptag_scan__free(struct ptag_scan *s)
{
	for (uint32_t i = 0; i < s->n; i++)
		s->api->DecRef(s->out[i]);
	s->n = 0;
	for (uint32_t i = 0; i < s->nfns; i++) {
		s->api->DecRef(s->fns[i].func);
		s->api->DecRef(s->fns[i].code);
	}
	s->nfns = 0;
	for (uint32_t i = 0; i < s->nnear; i++)
		s->api->DecRef(s->near[i]);
	s->nnear = s->near_dropped = 0;
	free(s->mod);
	s->mod = NULL;
	s->nmod = s->mod_cap = 0;
	free(s->hits);
	s->hits = NULL;
	free(s->seen);
	s->seen = NULL;
	s->seen_mask = s->seen_n = 0;
	free(s->match);
	free(s->found);
	s->match = NULL;
	s->found = NULL;
}
