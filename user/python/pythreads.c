// SPDX-License-Identifier: BSD-2-Clause
/*
 * threading._active, read from outside (pythreads.h). The module's dict
 * is PyModuleObject.md_dict, at 16 on 3.8-3.13 (gdb). `_active` is one
 * dict for the life of the module (after a fork the child's threading
 * clears and refills it in place), so its address is kept and checked to
 * still be a dict at each read; the attribute locations of `_name` and
 * `_native_id` are resolved once per Thread type (Thread, _MainThread,
 * _DummyThread, a server's subclasses).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pyattr.h"
#include "pythreads.h"

#define MODULE_DICT 16 /* PyModuleObject.md_dict */
#define TYPES_MAX 16   /* Thread types whose locations are kept */
#define RESOLVE_MAX 64 /* resolves tried per read: a hostile target's types */

struct ttype {
	uint64_t type;
	struct pt_pyattr_loc name, nid;
};

struct pt_pythreads {
	struct pt_tmem m;
	const struct pt_py_layout *L;
	struct pt_pytypes t;
	uint64_t runtime;
	uint64_t active; /* threading._active, 0: not found yet */
	struct ttype types[TYPES_MAX];
	size_t ntypes;
	uint64_t objs[PT_PYTHREADS_MAX];
	struct pt_pythread thr[PT_PYTHREADS_MAX]; /* sorted by tid */
	size_t nthr;
	char str[PT_PYSTR_MAX * 4 + 1];
};

struct pt_pythreads *pt_pythreads__new(const struct pt_tmem *m, const struct pt_py_layout *L,
				       const struct pt_pytypes *t, uint64_t runtime)
{
	struct pt_pythreads *pt = calloc(1, sizeof(*pt));

	if (!pt)
		return NULL;
	pt->m = *m;
	pt->L = L;
	pt->t = *t;
	pt->runtime = runtime;
	return pt;
}

void pt_pythreads__free(struct pt_pythreads *pt)
{
	free(pt);
}

static int rd64(const struct pt_pythreads *pt, uint64_t addr, uint64_t *v)
{
	if (!addr || addr + 8 < addr)
		return -EFAULT;
	return pt->m.read(pt->m.ctx, addr, v, 8);
}

/* runtime -> interpreter -> sys.modules["threading"].__dict__["_active"] */
static int find_active(struct pt_pythreads *pt)
{
	const struct pt_py_layout *L = pt->L;
	uint64_t interp, modules, mod, md;
	int e;

	if (!L->interp_modules)
		return -ENOTSUP;
	if (rd64(pt, pt->runtime + L->runtime_interp_head, &interp) ||
	    rd64(pt, interp + L->interp_modules, &modules))
		return -EFAULT;
	e = pt_pyattr__dict_get(&pt->m, L, modules, "threading", PT_PYTHREADS_MODULES_MAX, &mod);
	if (e <= 0)
		return e ? e : -ENOENT;
	if (rd64(pt, mod + MODULE_DICT, &md))
		return -EFAULT;
	e = pt_pyattr__dict_get(&pt->m, L, md, "_active", PT_PYATTR_SCAN_MAX, &pt->active);
	if (e <= 0)
		return e ? e : -ENOENT;
	return 0;
}

/* The locations of a Thread type's _name and _native_id, resolved with
 * one of its instances; NULL when they cannot be (yet). */
static const struct ttype *type_of(struct pt_pythreads *pt, uint64_t obj, int *budget)
{
	struct ttype tt = { 0 };
	char why[256];

	if (rd64(pt, obj + pt->L->ob_type, &tt.type))
		return NULL;
	for (size_t i = 0; i < pt->ntypes; i++)
		if (pt->types[i].type == tt.type)
			return &pt->types[i];
	if (pt->ntypes == TYPES_MAX || --*budget < 0)
		return NULL;
	if (pt_pyattr__resolve_obj(&pt->m, pt->L, obj, "_name", &tt.name, why, sizeof(why)) ||
	    pt_pyattr__resolve_obj(&pt->m, pt->L, obj, "_native_id", &tt.nid, why, sizeof(why)))
		return NULL; /* asked again at the next read */
	pt->types[pt->ntypes] = tt;
	return &pt->types[pt->ntypes++];
}

/* Cut s to fit len bytes at a UTF-8 character boundary. */
static void cut_utf8(char *dst, const char *s, size_t len)
{
	size_t n = strlen(s);

	if (n >= len) {
		n = len - 1;
		while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(dst, s, n);
	dst[n] = 0;
}

static int one(struct pt_pythreads *pt, uint64_t obj, int *budget, struct pt_pythread *out)
{
	const struct ttype *tt = type_of(pt, obj, budget);
	uint64_t name, nid;
	int64_t tid;

	if (!tt || pt_pyattr__read(&pt->m, pt->L, &tt->name, obj, &name) != PT_PYATTR_OK ||
	    pt_pyattr__read(&pt->m, pt->L, &tt->nid, obj, &nid) != PT_PYATTR_OK ||
	    pt_pyattr__int(&pt->m, pt->L, nid, &tid) || tid <= 0 || tid > UINT32_MAX ||
	    pt_pystr__read(&pt->m, pt->L, &pt->t, name, pt->str, sizeof(pt->str)) || !pt->str[0])
		return -EINVAL;
	out->tid = (uint32_t)tid;
	cut_utf8(out->name, pt->str, sizeof(out->name));
	return 0;
}

static int cmp_tid(const void *a, const void *b)
{
	const struct pt_pythread *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

int pt_pythreads__read(struct pt_pythreads *pt, const struct pt_pythread **out, size_t *n)
{
	int budget = RESOLVE_MAX, e = 0;
	size_t nobj = 0;

	*out = pt->thr;
	*n = pt->nthr = 0;
	for (int tries = 0; tries < 2; tries++) {
		if (!pt->active && (e = find_active(pt)))
			return e;
		e = pt_pyattr__dict_values(&pt->m, pt->L, pt->active, pt->objs, PT_PYTHREADS_MAX,
					   &nobj);
		if (!e)
			break;
		pt->active = 0; /* freed and reused? found again once */
	}
	if (e)
		return e;
	for (size_t i = 0; i < nobj; i++)
		if (!one(pt, pt->objs[i], &budget, &pt->thr[pt->nthr]))
			pt->nthr++;
	qsort(pt->thr, pt->nthr, sizeof(pt->thr[0]), cmp_tid);
	*n = pt->nthr;
	return 0;
}

const char *pt_pythreads__name(const struct pt_pythreads *pt, uint32_t tid)
{
	struct pt_pythread key = { .tid = tid };
	const struct pt_pythread *t;

	t = bsearch(&key, pt->thr, pt->nthr, sizeof(pt->thr[0]), cmp_tid);
	return t ? t->name : NULL;
}
