// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_pyattr: attribute locations and the read path on fake CPython
 * memory built with each version's real layout row: str objects, types
 * with MROs and dicts, shared keys, split and combined dicts whose index
 * tables are filled in CPython's own probe order, managed dicts, 3.12
 * tagged pointers, 3.13 inline values. Then the same memory broken: log2
 * sizes and kinds out of range, huge entry counts, indices past the
 * entries, tables with no empty slot, unreadable pointers, a value
 * capacity smaller than the index, MROs too long or not starting with
 * the type, a dict that is not one, a key that is an equal str but
 * another object; and a count of the read path's reads in the worst case.
 * Live interpreters: tests/integration/test_pyattr.py.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "python/pyattr.h"
#include "python/pylayout.h"

/* ---- a fake target (as test_pycode.c) ---- */

#define MAX_REGIONS 4
#define HEAP_BASE 0x10000ull
#define HEAP_LEN (4u << 20)

struct region {
	uint64_t base;
	uint8_t *buf;
	size_t len;
};

struct fmem {
	struct region r[MAX_REGIONS];
	size_t n;
	uint64_t brk;
	unsigned long reads; /* calls of the callback */
};

static int fmem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct fmem *m = ctx;

	m->reads++;
	for (size_t i = 0; i < m->n; i++) {
		const struct region *r = &m->r[i];

		if (addr >= r->base && addr - r->base <= r->len &&
		    len <= r->len - (addr - r->base)) {
			memcpy(buf, r->buf + (addr - r->base), len);
			return 0;
		}
	}
	return -EFAULT;
}

static uint8_t *at(struct fmem *m, uint64_t addr, size_t len)
{
	for (size_t i = 0; i < m->n; i++) {
		struct region *r = &m->r[i];

		if (addr >= r->base && addr - r->base + len <= r->len)
			return r->buf + (addr - r->base);
	}
	fail_msg("poke outside the fake memory: 0x%llx+%zu", (unsigned long long)addr, len);
	return NULL;
}

static void poke(struct fmem *m, uint64_t addr, const void *p, size_t len)
{
	memcpy(at(m, addr, len), p, len);
}

static void poke64(struct fmem *m, uint64_t addr, uint64_t v)
{
	poke(m, addr, &v, 8);
}

static void poke32(struct fmem *m, uint64_t addr, uint32_t v)
{
	poke(m, addr, &v, 4);
}

static void poke8(struct fmem *m, uint64_t addr, uint8_t v)
{
	poke(m, addr, &v, 1);
}

static uint64_t peek64(struct fmem *m, uint64_t addr)
{
	uint64_t v;

	memcpy(&v, at(m, addr, 8), 8);
	return v;
}

static uint64_t alloc(struct fmem *m, size_t len)
{
	uint64_t a = m->brk;

	m->brk = (m->brk + len + 15) & ~15ull;
	assert_true(m->brk <= HEAP_BASE + HEAP_LEN);
	return a;
}

/* ---- a fake CPython ---- */

#define TPF_HEAPTYPE (1ull << 9)
#define TPF_UNICODE_SUBCLASS (1ull << 28)
#define TPF_DICT_SUBCLASS (1ull << 29)
#define GENERIC_GETATTR 0x7f0000401000ull /* PyObject_GenericGetAttr */
#define HOOK_GETATTR 0x7f0000402000ull	  /* slot_tp_getattr_hook */
#define DESCR_SET 0x7f0000403000ull	  /* some tp_descr_set */
#define TYPE_SIZE 1024			  /* beyond every ht_cached_keys */

struct world {
	struct fmem m;
	struct pt_tmem t;
	const struct pt_py_layout *L;
	unsigned int minor;
	uint64_t str_t, dict_t, func_t, code_t, member_t, prop_t, int_t, object_t;
};

static uint64_t mk_cstr(struct world *w, const char *s)
{
	uint64_t a = alloc(&w->m, strlen(s) + 1);

	poke(&w->m, a, s, strlen(s) + 1);
	return a;
}

static uint64_t mk_static_type(struct world *w, const char *name, uint64_t flags)
{
	uint64_t t = alloc(&w->m, TYPE_SIZE);

	poke64(&w->m, t, 1);
	poke64(&w->m, t + w->L->type_name, mk_cstr(w, name));
	poke64(&w->m, t + w->L->type_flags, flags);
	poke64(&w->m, t + w->L->type_basicsize, 16);
	poke64(&w->m, t + w->L->type_getattro, GENERIC_GETATTR);
	return t;
}

static uint64_t mk_tuple(struct world *w, const uint64_t *items, size_t n)
{
	uint64_t a = alloc(&w->m, w->L->tuple_item + 8 * n + 8);

	poke64(&w->m, a, 1);
	poke64(&w->m, a + w->L->tuple_size, n);
	for (size_t i = 0; i < n; i++)
		poke64(&w->m, a + w->L->tuple_item + 8 * i, items[i]);
	return a;
}

/* An exact str, compact ASCII, with its hash. */
static uint64_t mk_str(struct world *w, const char *s, bool interned, int64_t hash)
{
	const struct pt_py_layout *L = w->L;
	size_t n = strlen(s);
	uint64_t a = alloc(&w->m, L->ascii_size + n + 1);

	poke64(&w->m, a, 1);
	poke64(&w->m, a + L->ob_type, w->str_t);
	poke64(&w->m, a + L->str_length, n);
	poke64(&w->m, a + L->str_hash, (uint64_t)hash);
	/* interned:2 kind:3 compact:1 ascii:1 */
	poke32(&w->m, a + L->str_state, (interned ? 1u : 0u) | 1u << 2 | 1u << 5 | 1u << 6);
	poke(&w->m, a + L->ascii_size, s, n + 1);
	return a;
}

static uint64_t mk_obj(struct world *w, uint64_t type)
{
	uint64_t a = alloc(&w->m, 32);

	poke64(&w->m, a, 1);
	poke64(&w->m, a + w->L->ob_type, type);
	return a;
}

static void world_init(struct world *w, unsigned int minor)
{
	uint64_t mro;

	memset(w, 0, sizeof(*w));
	w->minor = minor;
	w->L = pt_py_layout__get(minor);
	assert_non_null(w->L);
	w->m.r[0].base = HEAP_BASE;
	w->m.r[0].len = HEAP_LEN;
	w->m.r[0].buf = calloc(1, HEAP_LEN);
	assert_non_null(w->m.r[0].buf);
	w->m.n = 1;
	w->m.brk = HEAP_BASE + 64;
	w->t.read = fmem_read;
	w->t.ctx = &w->m;
	w->str_t = mk_static_type(w, "str", TPF_UNICODE_SUBCLASS);
	w->dict_t = mk_static_type(w, "dict", TPF_DICT_SUBCLASS);
	w->func_t = mk_static_type(w, "function", 0);
	w->code_t = mk_static_type(w, "code", 0);
	w->member_t = mk_static_type(w, "member_descriptor", 0);
	poke64(&w->m, w->member_t + w->L->type_descr_set, DESCR_SET);
	w->prop_t = mk_static_type(w, "property", 0);
	poke64(&w->m, w->prop_t + w->L->type_descr_set, DESCR_SET);
	w->int_t = mk_static_type(w, "int", 0);
	/* object: no dict on 3.12+ (it lives in the interpreter), only the
	 * C arrays; an empty dict before */
	w->object_t = mk_static_type(w, "object", 0);
	mro = mk_tuple(w, &w->object_t, 1);
	poke64(&w->m, w->object_t + w->L->type_mro, mro);
}

static void world_free(struct world *w)
{
	for (size_t i = 0; i < w->m.n; i++)
		free(w->m.r[i].buf);
}

/* ---- dicts ---- */

struct kent {
	uint64_t key;
	int64_t hash;
	uint64_t value;
	bool deleted; /* the entry's key is cleared, its index slot DUMMY */
};

/* A keys object of 2^lg index slots holding e[0..n) in entry order,
 * each placed in the index table by CPython's probe sequence. kind: 3.11+
 * dk_kind (0 general, 1 unicode, 2 split); before, entries are general. */
static uint64_t mk_keys(struct world *w, unsigned int lg, int kind, const struct kent *e, size_t n)
{
	const struct pt_py_layout *L = w->L;
	uint64_t size = 1ull << lg, mask = size - 1;
	unsigned int ixw = lg < 8 ? 1 : lg < 16 ? 2 : 4;
	unsigned int esize = (L->keys_size || kind == 0) ? 24 : 16;
	uint64_t k = alloc(&w->m, L->keys_indices + size * ixw + (n + 1) * esize);
	uint64_t ind = k + L->keys_indices, ent = ind + size * ixw;

	poke64(&w->m, k, 1);
	if (L->keys_size) {
		poke64(&w->m, k + L->keys_size, size);
	} else {
		poke8(&w->m, k + L->keys_log2_size, (uint8_t)lg);
		poke8(&w->m, k + L->keys_log2_index_bytes,
		      (uint8_t)(lg + (ixw == 1	 ? 0
				      : ixw == 2 ? 1
						 : 2)));
		poke8(&w->m, k + L->keys_kind, (uint8_t)kind);
	}
	poke64(&w->m, k + L->keys_nentries, n);
	memset(at(&w->m, ind, size * ixw), 0xff, size * ixw); /* DKIX_EMPTY */
	for (size_t i = 0; i < n; i++) {
		uint64_t slot = (uint64_t)e[i].hash & mask, perturb = (uint64_t)e[i].hash;
		int64_t ix = e[i].deleted ? -2 : (int64_t)i, cur;
		uint64_t ea = ent + i * esize;

		if (esize == 24) {
			poke64(&w->m, ea, (uint64_t)e[i].hash);
			ea += 8;
		}
		poke64(&w->m, ea, e[i].deleted ? 0 : e[i].key);
		poke64(&w->m, ea + 8, e[i].deleted ? 0 : e[i].value);
		for (;;) {
			cur = 0;
			memcpy(&cur, at(&w->m, ind + slot * ixw, ixw), ixw);
			if ((ixw == 1 && (int8_t)cur == -1) || (ixw == 2 && (int16_t)cur == -1) ||
			    (ixw == 4 && (int32_t)cur == -1))
				break;
			perturb >>= 5;
			slot = (slot * 5 + perturb + 1) & mask;
		}
		poke(&w->m, ind + slot * ixw, &ix, ixw);
	}
	return k;
}

/* A values array (3.13: behind its {capacity, size, embedded, valid}
 * header) of cap slots, v[0..n) set. */
static uint64_t mk_values(struct world *w, const uint64_t *v, size_t n, size_t cap)
{
	uint64_t a = alloc(&w->m, w->L->values_items + 8 * cap + 8);

	if (w->L->values_header) {
		poke8(&w->m, a, (uint8_t)cap);
		poke8(&w->m, a + 1, (uint8_t)n);
		poke8(&w->m, a + 3, 1);
	}
	for (size_t i = 0; i < n; i++)
		poke64(&w->m, a + w->L->values_items + 8 * i, v[i]);
	return a;
}

static uint64_t mk_dict(struct world *w, uint64_t keys, uint64_t values)
{
	uint64_t d = alloc(&w->m, 48);

	poke64(&w->m, d, 1);
	poke64(&w->m, d + w->L->ob_type, w->dict_t);
	poke64(&w->m, d + w->L->dict_keys, keys);
	poke64(&w->m, d + w->L->dict_values, values);
	return d;
}

/* A combined dict of str keys: unicode kind on 3.11+. */
static uint64_t mk_cdict(struct world *w, const struct kent *e, size_t n)
{
	unsigned int lg = 3;

	while ((1ull << lg) * 2 < n * 3 + 3)
		lg++;
	return mk_dict(w, mk_keys(w, lg, 1, e, n), 0);
}

/* ---- a class like
 *	class Req:
 *		limit = 5000
 *		def __init__(self): self.num_tokens = ...; self.prompt = ...
 *		@property
 *		def total(self): ...
 * with shared keys (num_tokens, prompt) ---- */

#define H_NUM 0x5a5a00000000f001ll /* hashes of the names (made up) */
#define H_PROMPT 0x1234000000000a12ll
#define H_LIMIT 0x0bad00000000b0b3ll
#define H_TOTAL 0x7777000000000074ll
#define H_INIT 0x0101010101010101ll
#define H_EXTRA 0x3e3e3e3e3e3e3e35ll

struct req {
	uint64_t type, num, prompt, limit, total, init, extra, shared, tdict;
	uint64_t v_num, v_prompt, v_limit;
	uint64_t basicsize;
	int64_t dictoffset;
};

static uint64_t mk_func(struct world *w, const uint64_t *names, size_t n)
{
	const struct pt_py_layout *L = w->L;
	uint64_t code = alloc(&w->m, 256), fn = alloc(&w->m, 160);

	poke64(&w->m, code + L->ob_type, w->code_t);
	poke64(&w->m, code + L->code_names, mk_tuple(w, names, n));
	poke64(&w->m, code + L->code_consts, mk_tuple(w, NULL, 0));
	poke64(&w->m, fn + L->ob_type, w->func_t);
	poke64(&w->m, fn + L->func_code, code);
	return fn;
}

/* A heap type of the version's usual kind for a plain class. */
static uint64_t mk_htype(struct world *w, const char *name, uint64_t tdict, uint64_t shared,
			 const uint64_t *bases, size_t nbases, uint64_t *basicsize,
			 int64_t *dictoffset)
{
	const struct pt_py_layout *L = w->L;
	uint64_t t = alloc(&w->m, TYPE_SIZE), mro[8], flags = TPF_HEAPTYPE;

	assert_true(nbases < 7);
	*basicsize = 32; /* header, dict, weaklist */
	*dictoffset = 16;
	if (L->tpf_managed_dict) {
		flags |= L->tpf_managed_dict;
		*dictoffset = w->minor == 11 ? -48 : -1;
		*basicsize = w->minor == 11 ? 24 : 16;
	}
	flags |= L->tpf_inline_values;
	poke64(&w->m, t, 1);
	poke64(&w->m, t + L->type_name, mk_cstr(w, name));
	poke64(&w->m, t + L->type_flags, flags);
	poke64(&w->m, t + L->type_basicsize, *basicsize);
	poke64(&w->m, t + L->type_dictoffset, (uint64_t)*dictoffset);
	poke64(&w->m, t + L->type_getattro, GENERIC_GETATTR);
	poke64(&w->m, t + L->type_dict, tdict);
	poke64(&w->m, t + L->ht_cached_keys, shared);
	mro[0] = t;
	for (size_t i = 0; i < nbases; i++)
		mro[1 + i] = bases[i];
	mro[1 + nbases] = w->object_t;
	poke64(&w->m, t + L->type_mro, mk_tuple(w, mro, nbases + 2));
	return t;
}

static void mk_req(struct world *w, struct req *r)
{
	uint64_t names[2];
	struct kent te[3], se[2];

	memset(r, 0, sizeof(*r));
	r->num = mk_str(w, "num_tokens", true, H_NUM);
	r->prompt = mk_str(w, "prompt", true, H_PROMPT);
	r->limit = mk_str(w, "limit", true, H_LIMIT);
	r->total = mk_str(w, "total", true, H_TOTAL);
	r->init = mk_str(w, "__init__", true, H_INIT);
	r->extra = mk_str(w, "extra", true, H_EXTRA);
	r->v_num = mk_obj(w, w->int_t);
	r->v_prompt = mk_obj(w, w->int_t);
	r->v_limit = mk_obj(w, w->int_t);
	names[0] = r->num;
	names[1] = r->prompt;
	te[0] = (struct kent){ r->init, H_INIT, mk_func(w, names, 2) };
	te[1] = (struct kent){ r->limit, H_LIMIT, r->v_limit };
	te[2] = (struct kent){ r->total, H_TOTAL, mk_obj(w, w->prop_t) };
	r->tdict = mk_cdict(w, te, 3);
	se[0] = (struct kent){ r->num, H_NUM, 0 };
	se[1] = (struct kent){ r->prompt, H_PROMPT, 0 };
	r->shared = mk_keys(w, w->L->keys_size ? 3 : 6, 2, se, 2);
	r->type = mk_htype(w, "Req", r->tdict, r->shared, NULL, 0, &r->basicsize, &r->dictoffset);
}

/* An instance of r whose attributes are v[0..n) in the shared keys'
 * order (split: values), or in dict (combined) when dict is set. */
static uint64_t mk_inst(struct world *w, const struct req *r, const uint64_t *v, size_t n,
			uint64_t dict)
{
	const struct pt_py_layout *L = w->L;
	uint64_t base = alloc(&w->m, 32 + r->basicsize + 8 + 8 * 30), obj = base + 32, values;

	poke64(&w->m, obj, 1);
	poke64(&w->m, obj + L->ob_type, r->type);
	if (!dict && L->idict != PT_PY_IDICT_INLINE)
		values = mk_values(w, v, n, 30);
	else
		values = 0;
	switch (L->idict) {
	case PT_PY_IDICT_OFFSET:
		poke64(&w->m, obj + (uint64_t)r->dictoffset,
		       dict ? dict : mk_dict(w, r->shared, values));
		break;
	case PT_PY_IDICT_VALUES:
		poke64(&w->m, obj + L->managed_values, values);
		poke64(&w->m, obj + L->managed_dict, dict);
		break;
	case PT_PY_IDICT_TAGGED:
		poke64(&w->m, obj + L->managed_dict, dict ? dict : values - 1);
		break;
	case PT_PY_IDICT_INLINE:
		/* inline after the 16-byte header; invalid when a dict took over */
		poke8(&w->m, obj + r->basicsize, 30);
		poke8(&w->m, obj + r->basicsize + 1, (uint8_t)n);
		poke8(&w->m, obj + r->basicsize + 2, 1);
		poke8(&w->m, obj + r->basicsize + 3, dict ? 0 : 1);
		for (size_t i = 0; i < n; i++)
			poke64(&w->m, obj + r->basicsize + L->values_items + 8 * i, v[i]);
		poke64(&w->m, obj + L->managed_dict, dict);
		break;
	}
	return obj;
}

#define for_each_version(w, minor)                                                                 \
	for ((minor) = PT_PY_MINOR_MIN; (minor) <= PT_PY_MINOR_MAX; (minor)++)                     \
		if (world_init((w), (minor)), 0) {                                                 \
		} else

static int resolve(struct world *w, uint64_t type, const char *name, struct pt_pyattr_loc *loc,
		   char *why)
{
	int e;

	memset(loc, 0xa5, sizeof(*loc));
	strcpy(why, "stale");
	e = pt_pyattr__resolve(&w->t, w->L, type, name, loc, why, 200);
	if (!why[0] || strchr(why, '\n'))
		fail_msg("3.%u %s: no one-line reason: \"%s\"", w->minor, name, why);
	return e;
}

static enum pt_pyattr_status rd(struct world *w, const struct pt_pyattr_loc *loc, uint64_t obj,
				uint64_t *v)
{
	*v = 0xdead;
	return pt_pyattr__read(&w->t, w->L, loc, obj, v);
}

#define assert_status(got, want)                                                                   \
	do {                                                                                       \
		enum pt_pyattr_status g_ = (got), w_ = (want);                                     \
		if (g_ != w_)                                                                      \
			fail_msg("3.%u: status %s, want %s", w.minor, pt_pyattr__status_str(g_),   \
				 pt_pyattr__status_str(w_));                                       \
	} while (0)

/* ---- valid memory ---- */

static void test_resolve_and_read_every_version(void **state)
{
	struct world w;
	unsigned int minor;

	for_each_version(&w, minor)
	{
		struct pt_pyattr_loc ln, lp, le;
		struct req r;
		uint64_t vals[2], obj, v;
		char why[200];

		mk_req(&w, &r);
		assert_int_equal(resolve(&w, r.type, "num_tokens", &ln, why), 0);
		assert_int_equal(ln.key, r.num);
		assert_int_equal(ln.hash, H_NUM);
		assert_int_equal(ln.shared_keys, r.shared);
		assert_int_equal(ln.index, 0);
		assert_int_equal(ln.dict_type, w.dict_t);
		assert_int_equal(ln.flags, 0);
		assert_int_equal(ln.type, r.type);
		assert_int_equal(ln.kind, minor <= 10	? PT_PYATTR_K_DICTPTR
					  : minor == 11 ? PT_PYATTR_K_MANAGED_311
					  : minor == 12 ? PT_PYATTR_K_MANAGED_312
							: PT_PYATTR_K_INLINE_313);
		assert_int_equal(resolve(&w, r.type, "prompt", &lp, why), 0);
		assert_int_equal(lp.index, 1);
		/* not in the class's code: its key is unknown */
		assert_int_equal(resolve(&w, r.type, "extra", &le, why), -EAGAIN);

		/* split: the values */
		vals[0] = r.v_num;
		vals[1] = r.v_prompt;
		obj = mk_inst(&w, &r, vals, 2, 0);
		assert_status(rd(&w, &ln, obj, &v), PT_PYATTR_OK);
		assert_int_equal(v, r.v_num);
		assert_status(rd(&w, &lp, obj, &v), PT_PYATTR_OK);
		assert_int_equal(v, r.v_prompt);
		/* deleted from a split table (3.11+), or never set */
		vals[0] = 0;
		obj = mk_inst(&w, &r, vals, 2, 0);
		assert_status(rd(&w, &ln, obj, &v), PT_PYATTR_MISSING);
		assert_int_equal(v, 0);
		assert_status(rd(&w, &lp, obj, &v), PT_PYATTR_OK);
		/* the same with the shared index unknown: the probe finds it */
		ln.index = -1;
		vals[0] = r.v_num;
		obj = mk_inst(&w, &r, vals, 2, 0);
		assert_status(rd(&w, &ln, obj, &v), PT_PYATTR_OK);
		assert_int_equal(v, r.v_num);
		world_free(&w);
	}
}

static void test_combined_dicts(void **state)
{
	struct world w;
	unsigned int minor;

	for_each_version(&w, minor)
	{
		struct pt_pyattr_loc ln, lp;
		struct kent e[40];
		struct req r;
		uint64_t obj, v, d;
		char why[200], nm[16];
		size_t n;

		mk_req(&w, &r);
		assert_int_equal(resolve(&w, r.type, "num_tokens", &ln, why), 0);
		assert_int_equal(resolve(&w, r.type, "prompt", &lp, why), 0);
		/* a dict of 40 keys with the name last, and a deleted entry */
		for (n = 0; n < 39; n++) {
			snprintf(nm, sizeof(nm), "k%zu", n);
			/* low bits equal to num_tokens': long probe chains */
			e[n] = (struct kent){
				mk_str(&w, nm, true, H_NUM + (int64_t)((n + 1) << 12)),
				H_NUM + (int64_t)((n + 1) << 12), mk_obj(&w, w.int_t)
			};
		}
		e[5].deleted = true;
		e[39] = (struct kent){ r.num, H_NUM, r.v_num };
		d = mk_cdict(&w, e, 40);
		obj = mk_inst(&w, &r, NULL, 0, d);
		assert_status(rd(&w, &ln, obj, &v), PT_PYATTR_OK);
		assert_int_equal(v, r.v_num);
		/* absent: the chain ends at an empty slot */
		assert_status(rd(&w, &lp, obj, &v), PT_PYATTR_MISSING);

		/* general kind (a non-str key), and 2-byte indices */
		e[0].key = mk_obj(&w, w.int_t);
		d = mk_dict(&w, mk_keys(&w, 9, 0, e, 40), 0);
		obj = mk_inst(&w, &r, NULL, 0, d);
		assert_status(rd(&w, &ln, obj, &v), PT_PYATTR_OK);
		assert_int_equal(v, r.v_num);
		/* 4-byte indices */
		d = mk_dict(&w, mk_keys(&w, 16, 1, e + 1, 39), 0);
		obj = mk_inst(&w, &r, NULL, 0, d);
		assert_status(rd(&w, &ln, obj, &v), PT_PYATTR_OK);
		assert_int_equal(v, r.v_num);
		/* the empty dict (Py_EMPTY_KEYS: one slot) */
		d = mk_dict(&w, mk_keys(&w, 0, 1, NULL, 0), 0);
		obj = mk_inst(&w, &r, NULL, 0, d);
		assert_status(rd(&w, &ln, obj, &v), PT_PYATTR_MISSING);
		/* no dict at all yet (3.13 inline: invalid values, no dict) */
		if (w.L->idict != PT_PY_IDICT_INLINE) {
			obj = alloc(&w.m, 64) + 32;
			poke64(&w.m, obj + w.L->ob_type, r.type);
		} else {
			obj = mk_inst(&w, &r, NULL, 0, 1);
			poke64(&w.m, obj + w.L->managed_dict, 0);
		}
		assert_status(rd(&w, &ln, obj, &v), PT_PYATTR_MISSING);
		world_free(&w);
	}
}

static void test_key_not_identical(void **state)
{
	struct world w;
	unsigned int minor;

	for_each_version(&w, minor)
	{
		struct pt_pyattr_loc ln;
		struct kent e[2];
		struct req r;
		uint64_t obj, v, other;
		char why[200];

		mk_req(&w, &r);
		assert_int_equal(resolve(&w, r.type, "num_tokens", &ln, why), 0);
		/* an equal str, not interned: the same hash, another object */
		other = mk_str(&w, "num_tokens", false, H_NUM);
		e[0] = (struct kent){ r.prompt, H_PROMPT, r.v_prompt };
		e[1] = (struct kent){ other, H_NUM, r.v_num };
		obj = mk_inst(&w, &r, NULL, 0, mk_cdict(&w, e, 2));
		assert_status(rd(&w, &ln, obj, &v), PT_PYATTR_KEYCMP);
		assert_int_equal(v, 0);
		obj = mk_inst(&w, &r, NULL, 0, mk_dict(&w, mk_keys(&w, 3, 0, e, 2), 0));
		assert_status(rd(&w, &ln, obj, &v), PT_PYATTR_KEYCMP);
		world_free(&w);
	}
}

static void test_class_attr_property_getattr(void **state)
{
	struct world w;
	unsigned int minor;

	for_each_version(&w, minor)
	{
		struct pt_pyattr_loc l;
		struct req r;
		uint64_t vals[2], obj, v, names[2];
		struct kent te[2];
		char why[200];

		mk_req(&w, &r);
		vals[0] = r.v_num;
		vals[1] = r.v_prompt;
		obj = mk_inst(&w, &r, vals, 2, 0);
		/* a class variable: the instance's dict first, then the class */
		assert_int_equal(resolve(&w, r.type, "limit", &l, why), 0);
		assert_int_equal(l.flags, PT_PYATTR_F_CLASS);
		assert_int_equal(l.key, r.limit);
		assert_int_equal(l.index, -1);
		assert_status(rd(&w, &l, obj, &v), PT_PYATTR_CLASS);
		/* a method: the same */
		assert_int_equal(resolve(&w, r.type, "__init__", &l, why), 0);
		assert_status(rd(&w, &l, obj, &v), PT_PYATTR_CLASS);
		/* a property: computed */
		assert_int_equal(resolve(&w, r.type, "total", &l, why), -EOPNOTSUPP);
		assert_non_null(strstr(why, "property"));

		/* __getattr__: readable, but a miss is its call */
		names[0] = r.num;
		names[1] = r.prompt;
		te[0] = (struct kent){ r.init, H_INIT, mk_func(&w, names, 2) };
		te[1] = (struct kent){ mk_str(&w, "__getattr__", true, 77), 77,
				       mk_func(&w, NULL, 0) };
		poke64(&w.m, r.type + w.L->type_dict, mk_cdict(&w, te, 2));
		poke64(&w.m, r.type + w.L->type_getattro, HOOK_GETATTR);
		assert_int_equal(resolve(&w, r.type, "num_tokens", &l, why), 0);
		assert_int_equal(l.flags, PT_PYATTR_F_GETATTR);
		assert_status(rd(&w, &l, obj, &v), PT_PYATTR_OK);
		vals[0] = 0;
		obj = mk_inst(&w, &r, vals, 2, 0);
		assert_status(rd(&w, &l, obj, &v), PT_PYATTR_GETATTR);
		/* __getattribute__: not readable */
		te[1].key = mk_str(&w, "__getattribute__", true, 78);
		poke64(&w.m, r.type + w.L->type_dict, mk_cdict(&w, te, 2));
		assert_int_equal(resolve(&w, r.type, "num_tokens", &l, why), -EOPNOTSUPP);
		assert_non_null(strstr(why, "__getattribute__"));
		/* neither: a C tp_getattro */
		te[1].key = mk_str(&w, "something", true, 79);
		poke64(&w.m, r.type + w.L->type_dict, mk_cdict(&w, te, 2));
		assert_int_equal(resolve(&w, r.type, "num_tokens", &l, why), -EOPNOTSUPP);
		assert_non_null(strstr(why, "tp_getattro"));
		world_free(&w);
	}
}

/* A member descriptor for `name` in a slots class. */
static uint64_t mk_member(struct world *w, uint64_t dtype, int type, int64_t off, int flags)
{
	uint64_t def = alloc(&w->m, 40), d = alloc(&w->m, 48);

	poke32(&w->m, def + 8, (uint32_t)type);
	poke64(&w->m, def + 16, (uint64_t)off);
	poke32(&w->m, def + 24, (uint32_t)flags);
	poke64(&w->m, d + w->L->ob_type, w->member_t);
	poke64(&w->m, d + w->L->descr_type, dtype);
	poke64(&w->m, d + w->L->descr_member, def);
	return d;
}

static void test_slots(void **state)
{
	struct world w;
	unsigned int minor;

	for_each_version(&w, minor)
	{
		struct pt_pyattr_loc l;
		struct kent te[1];
		uint64_t t, obj, v, x, bs, val;
		int64_t doff;
		char why[200];

		x = mk_str(&w, "x", true, 120);
		te[0] = (struct kent){ x, 120, 0 };
		t = mk_htype(&w, "S", 0, 0, NULL, 0, &bs, &doff);
		/* __slots__ = ("x",): no dict, x at +16 */
		poke64(&w.m, t + w.L->type_flags, TPF_HEAPTYPE);
		poke64(&w.m, t + w.L->type_basicsize, 24);
		poke64(&w.m, t + w.L->type_dictoffset, 0);
		te[0].value = mk_member(&w, t, 16, 16, 0);
		poke64(&w.m, t + w.L->type_dict, mk_cdict(&w, te, 1));
		assert_int_equal(resolve(&w, t, "x", &l, why), 0);
		assert_int_equal(l.kind, PT_PYATTR_K_SLOT);
		assert_int_equal(l.off, 16);
		obj = alloc(&w.m, 24);
		poke64(&w.m, obj + 8, t);
		assert_status(rd(&w, &l, obj, &v), PT_PYATTR_UNSET);
		val = mk_obj(&w, w.int_t);
		poke64(&w.m, obj + 16, val);
		assert_status(rd(&w, &l, obj, &v), PT_PYATTR_OK);
		assert_int_equal(v, val);
		/* no such member, no dict */
		assert_int_equal(resolve(&w, t, "y", &l, why), -ENOENT);
		/* T_OBJECT: NULL reads as None */
		te[0].value = mk_member(&w, t, 6, 16, 0);
		poke64(&w.m, t + w.L->type_dict, mk_cdict(&w, te, 1));
		assert_int_equal(resolve(&w, t, "x", &l, why), 0);
		assert_int_equal(l.flags, PT_PYATTR_F_NONE_IF_NULL);
		poke64(&w.m, obj + 16, 0);
		assert_status(rd(&w, &l, obj, &v), PT_PYATTR_NONE);
		/* a C int member: not an object */
		te[0].value = mk_member(&w, t, 1, 16, 0);
		poke64(&w.m, t + w.L->type_dict, mk_cdict(&w, te, 1));
		assert_int_equal(resolve(&w, t, "x", &l, why), -EOPNOTSUPP);
		/* an offset beyond the object */
		te[0].value = mk_member(&w, t, 16, 24, 0);
		poke64(&w.m, t + w.L->type_dict, mk_cdict(&w, te, 1));
		assert_int_equal(resolve(&w, t, "x", &l, why), -EINVAL);
		te[0].value = mk_member(&w, t, 16, -8, 0);
		poke64(&w.m, t + w.L->type_dict, mk_cdict(&w, te, 1));
		assert_int_equal(resolve(&w, t, "x", &l, why), -EINVAL);
		/* a member of a type not in the MRO */
		te[0].value = mk_member(&w, w.int_t, 16, 16, 0);
		poke64(&w.m, t + w.L->type_dict, mk_cdict(&w, te, 1));
		assert_int_equal(resolve(&w, t, "x", &l, why), -EOPNOTSUPP);
		/* 3.12+: a relative offset */
		te[0].value = mk_member(&w, t, 16, 16, 8);
		poke64(&w.m, t + w.L->type_dict, mk_cdict(&w, te, 1));
		assert_int_equal(resolve(&w, t, "x", &l, why), minor >= 12 ? -EOPNOTSUPP : 0);
		/* a class variable but no dict */
		te[0].value = mk_obj(&w, w.int_t);
		poke64(&w.m, t + w.L->type_dict, mk_cdict(&w, te, 1));
		assert_int_equal(resolve(&w, t, "x", &l, why), -EOPNOTSUPP);
		assert_non_null(strstr(why, "class attribute"));
		/* var-sized instances (int subclass before 3.12) */
		poke64(&w.m, t + w.L->type_dictoffset, (uint64_t)-8);
		assert_int_equal(resolve(&w, t, "z", &l, why), -EOPNOTSUPP);
		assert_non_null(strstr(why, "var-sized"));
		world_free(&w);
	}
}

/* 3.12+ builtin static types have no tp_dict: their C arrays are read. */
static void test_static_type_arrays(void **state)
{
	struct world w;
	unsigned int minor;

	for_each_version(&w, minor)
	{
		struct pt_pyattr_loc l;
		uint64_t base = mk_static_type(&w, "Base", 0), t, bs, mem, gs, mro[2], obj, v;
		int64_t doff;
		char why[200];

		/* tp_members {"m", T_OBJECT_EX, 16}, tp_getset {"g"} */
		mem = alloc(&w.m, 80);
		poke64(&w.m, mem, mk_cstr(&w, "m"));
		poke32(&w.m, mem + 8, 16);
		poke64(&w.m, mem + 16, 16);
		gs = alloc(&w.m, 80);
		poke64(&w.m, gs, mk_cstr(&w, "g"));
		poke64(&w.m, base + w.L->type_members, mem);
		poke64(&w.m, base + w.L->type_getset, gs);
		poke64(&w.m, base + w.L->type_basicsize, 24);
		mro[0] = base;
		mro[1] = w.object_t;
		poke64(&w.m, base + w.L->type_mro, mk_tuple(&w, mro, 2));
		t = mk_htype(&w, "Sub", mk_cdict(&w, NULL, 0), mk_keys(&w, 3, 2, NULL, 0), &base, 1,
			     &bs, &doff);
		poke64(&w.m, t + w.L->type_basicsize, 48);
		if (w.L->idict == PT_PY_IDICT_INLINE)
			poke64(&w.m, t + w.L->type_flags, TPF_HEAPTYPE | w.L->tpf_managed_dict);
		assert_int_equal(resolve(&w, t, "m", &l, why), 0);
		assert_int_equal(l.kind, PT_PYATTR_K_SLOT);
		assert_int_equal(l.off, 16);
		obj = alloc(&w.m, 64) + 32;
		poke64(&w.m, obj + 16, 0x4242);
		assert_status(rd(&w, &l, obj, &v), PT_PYATTR_OK);
		assert_int_equal(v, 0x4242);
		assert_int_equal(resolve(&w, t, "g", &l, why), -EOPNOTSUPP);
		assert_non_null(strstr(why, "getset"));
		/* a static type with a dict of its own: the dict counts */
		poke64(&w.m, base + w.L->type_dict, mk_cdict(&w, NULL, 0));
		assert_int_equal(resolve(&w, t, "m", &l, why), -EAGAIN);
		world_free(&w);
	}
}

static void test_resolve_obj(void **state)
{
	struct world w;
	unsigned int minor;

	for_each_version(&w, minor)
	{
		struct pt_pyattr_loc l;
		struct kent e[3];
		struct req r;
		uint64_t obj, v, val, other;
		char why[200];

		mk_req(&w, &r);
		val = mk_obj(&w, w.int_t);
		e[0] = (struct kent){ r.num, H_NUM, r.v_num };
		e[1] = (struct kent){ r.extra, H_EXTRA, val };
		obj = mk_inst(&w, &r, NULL, 0, mk_cdict(&w, e, 2));
		assert_int_equal(pt_pyattr__resolve_obj(&w.t, w.L, obj, "extra", &l, why, 200), 0);
		assert_int_equal(l.key, r.extra);
		assert_status(rd(&w, &l, obj, &v), PT_PYATTR_OK);
		assert_int_equal(v, val);
		/* a key that is not interned is not taken */
		other = mk_str(&w, "other", false, 99);
		e[1] = (struct kent){ other, 99, val };
		obj = mk_inst(&w, &r, NULL, 0, mk_cdict(&w, e, 2));
		assert_int_equal(pt_pyattr__resolve_obj(&w.t, w.L, obj, "other", &l, why, 200),
				 -EAGAIN);
		assert_non_null(strstr(why, "interned"));
		/* nothing there */
		assert_int_equal(pt_pyattr__resolve_obj(&w.t, w.L, obj, "nope", &l, why, 200),
				 -EAGAIN);
		assert_int_equal(pt_pyattr__resolve_obj(&w.t, w.L, 0, "nope", &l, why, 200),
				 -EFAULT);
		world_free(&w);
	}
}

/* ---- broken memory ---- */

/* num_tokens' location and an instance whose attributes are a combined
 * dict of (prompt, num_tokens), for breaking */
struct victim {
	struct req r;
	struct pt_pyattr_loc l;
	uint64_t obj, dict, keys;
};

static void mk_victim(struct world *w, struct victim *x)
{
	struct kent e[2];
	char why[200];

	mk_req(w, &x->r);
	assert_int_equal(resolve(w, x->r.type, "num_tokens", &x->l, why), 0);
	e[0] = (struct kent){ x->r.prompt, H_PROMPT, x->r.v_prompt };
	e[1] = (struct kent){ x->r.num, H_NUM, x->r.v_num };
	x->keys = mk_keys(w, 3, 1, e, 2);
	x->dict = mk_dict(w, x->keys, 0);
	x->obj = mk_inst(w, &x->r, NULL, 0, x->dict);
}

static void test_corrupt_keys(void **state)
{
	struct world w;
	unsigned int minor;

	for_each_version(&w, minor)
	{
		const struct pt_py_layout *L = w.L;
		struct victim x;
		uint64_t v, save[6];

		mk_victim(&w, &x);
		assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_OK);
		memcpy(save, at(&w.m, x.keys, 48), 48);
#define RESTORE() memcpy(at(&w.m, x.keys, 48), save, 48)
		if (L->keys_size) {
			static const int64_t bad[] = { 0,	 -8,	    7,
						       12,	 3ll << 20, (1ll << 30) * 2,
						       INT64_MIN };

			for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
				poke64(&w.m, x.keys + L->keys_size, (uint64_t)bad[i]);
				assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_CORRUPT);
				assert_int_equal(v, 0);
			}
			RESTORE();
		} else {
			/* log2 sizes out of range, index bytes that do not match */
			static const uint8_t lg[][2] = { { 31, 33 }, { 64, 66 }, { 255, 1 },
							 { 3, 4 },   { 3, 2 },	 { 8, 8 },
							 { 16, 16 }, { 0, 3 } };

			for (size_t i = 0; i < sizeof(lg) / sizeof(lg[0]); i++) {
				poke8(&w.m, x.keys + L->keys_log2_size, lg[i][0]);
				poke8(&w.m, x.keys + L->keys_log2_index_bytes, lg[i][1]);
				assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_CORRUPT);
			}
			RESTORE();
			poke8(&w.m, x.keys + L->keys_kind, 3);
			assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_CORRUPT);
			poke8(&w.m, x.keys + L->keys_kind, 0xff);
			assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_CORRUPT);
			RESTORE();
		}
		/* entry counts: negative, beyond the table, huge */
		poke64(&w.m, x.keys + L->keys_nentries, (uint64_t)-1);
		assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_CORRUPT);
		poke64(&w.m, x.keys + L->keys_nentries, 9);
		assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_CORRUPT);
		/* more than USABLE_FRACTION (5 of 8 slots) */
		poke64(&w.m, x.keys + L->keys_nentries, 6);
		assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_CORRUPT);
		poke64(&w.m, x.keys + L->keys_nentries, 5);
		assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_OK);
		poke64(&w.m, x.keys + L->keys_nentries, 1ull << 62);
		assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_CORRUPT);
		/* one entry less: the index of num_tokens (1) is past them */
		poke64(&w.m, x.keys + L->keys_nentries, 1);
		assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_CORRUPT);
		RESTORE();
		/* indices: -3 and below are nothing */
		memset(at(&w.m, x.keys + L->keys_indices, 8), 0xfd, 8);
		assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_CORRUPT);
		memset(at(&w.m, x.keys + L->keys_indices, 8), 0x80, 8);
		assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_CORRUPT);
		/* every slot DUMMY: no empty slot ends the chain */
		memset(at(&w.m, x.keys + L->keys_indices, 8), 0xfe, 8);
		w.m.reads = 0;
		assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_PROBES);
		/* and every slot index 0 (prompt, another hash): the same */
		memset(at(&w.m, x.keys + L->keys_indices, 8), 0, 8);
		assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_PROBES);
		RESTORE();
		assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_OK);
#undef RESTORE
		world_free(&w);
	}
}

/* The read path's reads are bounded by a constant (PT_PYATTR_READS_MAX)
 * and the worst case comes near it: every probe reads an index, an
 * entry and a key's hash. */
static void test_read_count_bounded(void **state)
{
	struct world w;
	unsigned int minor;

	for_each_version(&w, minor)
	{
		struct victim x;
		struct kent e[5];
		uint64_t v;
		char nm[8];

		mk_victim(&w, &x);
		/* every slot points at an entry of the same low hash bits but
		 * another hash: each probe reads index, entry, key hash */
		for (int i = 0; i < 5; i++) {
			int64_t h = H_NUM ^ (0x100ll << i);

			snprintf(nm, sizeof(nm), "c%d", i);
			e[i] = (struct kent){ mk_str(&w, nm, true, h), h, mk_obj(&w, w.int_t) };
		}
		x.keys = mk_keys(&w, 3, 1, e, 5);
		memset(at(&w.m, x.keys + w.L->keys_indices, 8), 0, 8);
		poke64(&w.m, x.dict + w.L->dict_keys, x.keys);
		w.m.reads = 0;
		assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_PROBES);
		if (w.m.reads > PT_PYATTR_READS_MAX)
			fail_msg("3.%u: %lu reads", minor, w.m.reads);
		assert_true(w.m.reads >= 2 * PT_PYATTR_PROBE_MAX);
		world_free(&w);
	}
}

static void test_unreadable(void **state)
{
	struct world w;
	unsigned int minor;

	for_each_version(&w, minor)
	{
		const struct pt_py_layout *L = w.L;
		struct pt_pyattr_loc l;
		struct victim x;
		uint64_t v, vals[2];

		mk_victim(&w, &x);
		assert_status(rd(&w, &x.l, 0, &v), PT_PYATTR_FAULT);
		assert_status(rd(&w, &x.l, 8, &v), PT_PYATTR_FAULT);
		assert_status(rd(&w, &x.l, ~0ull - 4, &v), PT_PYATTR_FAULT);
		assert_status(rd(&w, &x.l, 0x1000, &v), PT_PYATTR_FAULT);
		/* the dict unmapped */
		if (L->idict == PT_PY_IDICT_OFFSET)
			poke64(&w.m, x.obj + (uint64_t)x.r.dictoffset, 0x1000);
		else
			poke64(&w.m, x.obj + L->managed_dict, 0x1000);
		assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_FAULT);
		/* the keys unmapped, near the end of the address space */
		x.obj = mk_inst(&w, &x.r, NULL, 0, x.dict);
		poke64(&w.m, x.dict + L->dict_keys, 0x2000);
		assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_FAULT);
		poke64(&w.m, x.dict + L->dict_keys, ~0ull - 16);
		assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_FAULT);
		poke64(&w.m, x.dict + L->dict_keys, 0);
		assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_FAULT);
		/* the keys at the end of the memory: header readable, index
		 * table not */
		{
			uint64_t k = HEAP_BASE + HEAP_LEN - L->keys_indices;

			memcpy(at(&w.m, k, L->keys_indices), at(&w.m, x.keys, L->keys_indices),
			       L->keys_indices);
			poke64(&w.m, x.dict + L->dict_keys, k);
			assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_FAULT);
		}
		/* a key whose hash cannot be read (unicode entries read it on
		 * a collision) */
		poke64(&w.m, x.dict + L->dict_keys, x.keys);
		if (!L->keys_size) {
			uint64_t ent = x.keys + L->keys_indices + 8;

			poke64(&w.m, ent + 16, 0x3000); /* entry 1's key */
			assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_FAULT);
			poke64(&w.m, ent + 16, x.r.num);
		}
		assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_OK);
		/* values unmapped (a split table) */
		vals[0] = x.r.v_num;
		vals[1] = x.r.v_prompt;
		x.obj = mk_inst(&w, &x.r, vals, 2, 0);
		if (L->idict == PT_PY_IDICT_OFFSET)
			poke64(&w.m,
			       peek64(&w.m, x.obj + (uint64_t)x.r.dictoffset) + L->dict_values,
			       0x4000);
		else if (L->idict == PT_PY_IDICT_VALUES)
			poke64(&w.m, x.obj + L->managed_values, 0x4000);
		else if (L->idict == PT_PY_IDICT_TAGGED)
			poke64(&w.m, x.obj + L->managed_dict, 0x4000 - 1);
		if (L->idict != PT_PY_IDICT_INLINE)
			assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_FAULT);
		/* the shared keys unmapped */
		x.obj = mk_inst(&w, &x.r, vals, 2, 0);
		l = x.l;
		l.shared_keys = 0x5000;
		if (L->idict != PT_PY_IDICT_OFFSET)
			assert_status(rd(&w, &l, x.obj, &v), PT_PYATTR_FAULT);
		world_free(&w);
	}
}

static void test_bad_locations(void **state)
{
	struct world w;
	unsigned int minor;

	for_each_version(&w, minor)
	{
		const struct pt_py_layout *L = w.L;
		struct pt_pyattr_loc l;
		struct victim x;
		uint64_t v, vals[2];

		mk_victim(&w, &x);
		l = x.l;
		l.kind = PT_PYATTR_K_NONE;
		assert_status(rd(&w, &l, x.obj, &v), PT_PYATTR_BADLOC);
		l.kind = 99;
		assert_status(rd(&w, &l, x.obj, &v), PT_PYATTR_BADLOC);
		l = x.l;
		l.key = 0;
		assert_status(rd(&w, &l, x.obj, &v), PT_PYATTR_BADLOC);
		/* values (no dict) need the type's shared keys */
		vals[0] = x.r.v_num;
		vals[1] = x.r.v_prompt;
		x.obj = mk_inst(&w, &x.r, vals, 2, 0);
		l = x.l;
		l.shared_keys = 0;
		if (L->idict != PT_PY_IDICT_OFFSET)
			assert_status(rd(&w, &l, x.obj, &v), PT_PYATTR_BADLOC);
		/* a resolved index beyond the entries, or a stale one: the
		 * probe answers */
		l = x.l;
		l.index = 1000;
		assert_status(rd(&w, &l, x.obj, &v), PT_PYATTR_OK);
		assert_int_equal(v, x.r.v_num);
		l.index = 1; /* prompt's */
		assert_status(rd(&w, &l, x.obj, &v), PT_PYATTR_OK);
		assert_int_equal(v, x.r.v_num);
		/* 3.13: a value capacity below the index */
		if (L->values_header) {
			poke8(&w.m, x.obj + x.r.basicsize, 0);
			assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_CORRUPT);
		}
		/* a dict that is not one */
		x.obj = mk_inst(&w, &x.r, NULL, 0, x.dict);
		poke64(&w.m, x.dict + L->ob_type, w.int_t);
		assert_status(rd(&w, &x.l, x.obj, &v), PT_PYATTR_NOTDICT);
		l = x.l;
		l.dict_type = 0; /* not checked */
		assert_status(rd(&w, &l, x.obj, &v), PT_PYATTR_OK);
		world_free(&w);
	}
}

static void test_resolve_bad_types(void **state)
{
	struct world w;
	unsigned int minor;

	for_each_version(&w, minor)
	{
		const struct pt_py_layout *L = w.L;
		struct pt_pyattr_loc l;
		struct req r;
		uint64_t mro[PT_PYATTR_MRO_MAX + 1], tup;
		char why[200], longname[PT_PYATTR_NAME_MAX + 2];
		char small[12];

		mk_req(&w, &r);
		/* names */
		assert_int_equal(resolve(&w, r.type, "", &l, why), -EINVAL);
		assert_int_equal(resolve(&w, r.type, "a b", &l, why), -EINVAL);
		assert_int_equal(resolve(&w, r.type, "caf\xc3\xa9", &l, why), -EINVAL);
		memset(longname, 'a', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = 0;
		assert_int_equal(resolve(&w, r.type, longname, &l, why), -EINVAL);
		assert_int_equal(pt_pyattr__resolve(&w.t, L, r.type, NULL, &l, why, 200), -EINVAL);
		/* a short why buffer is cut, not overrun; none at all is fine */
		assert_int_equal(
			pt_pyattr__resolve(&w.t, L, r.type, "total", &l, small, sizeof(small)),
			-EOPNOTSUPP);
		assert_int_equal(strlen(small), sizeof(small) - 1);
		assert_int_equal(pt_pyattr__resolve(&w.t, L, r.type, "total", &l, NULL, 0),
				 -EOPNOTSUPP);
		/* a type name with a newline and other bytes: still one line */
		poke64(&w.m, r.type + L->type_name, mk_cstr(&w, "Re\nq\x7f\x01"));
		assert_int_equal(resolve(&w, r.type, "total", &l, why), -EOPNOTSUPP);
		assert_non_null(strstr(why, "Re?q??.total"));
		/* unreadable types */
		assert_int_equal(resolve(&w, 0, "num_tokens", &l, why), -EFAULT);
		assert_int_equal(resolve(&w, 0x1000, "num_tokens", &l, why), -EFAULT);
		/* MROs: too long, empty, not starting with the type, a NULL,
		 * the type over and over (as a tp_base loop would give) */
		for (size_t i = 0; i <= PT_PYATTR_MRO_MAX; i++)
			mro[i] = r.type;
		tup = mk_tuple(&w, mro, PT_PYATTR_MRO_MAX + 1);
		poke64(&w.m, r.type + L->type_mro, tup);
		assert_int_equal(resolve(&w, r.type, "num_tokens", &l, why), -EINVAL);
		poke64(&w.m, tup + L->tuple_size, (uint64_t)-1);
		assert_int_equal(resolve(&w, r.type, "num_tokens", &l, why), -EINVAL);
		poke64(&w.m, tup + L->tuple_size, 0);
		assert_int_equal(resolve(&w, r.type, "num_tokens", &l, why), -EINVAL);
		poke64(&w.m, tup + L->tuple_size, PT_PYATTR_MRO_MAX);
		/* the type repeated: bounded, and object (the last) is the
		 * type itself: its getattro is the generic one */
		assert_int_equal(resolve(&w, r.type, "num_tokens", &l, why), 0);
		mro[0] = w.int_t;
		poke64(&w.m, r.type + L->type_mro, mk_tuple(&w, mro, 2));
		assert_int_equal(resolve(&w, r.type, "num_tokens", &l, why), -EINVAL);
		mro[0] = r.type;
		mro[1] = 0;
		poke64(&w.m, r.type + L->type_mro, mk_tuple(&w, mro, 2));
		assert_int_equal(resolve(&w, r.type, "num_tokens", &l, why), -EFAULT);
		mro[1] = w.object_t;
		poke64(&w.m, r.type + L->type_mro, mk_tuple(&w, mro, 2));
		assert_int_equal(resolve(&w, r.type, "num_tokens", &l, why), 0);
		/* implausible sizes */
		poke64(&w.m, r.type + L->type_basicsize, 8);
		assert_int_equal(resolve(&w, r.type, "num_tokens", &l, why), -EINVAL);
		poke64(&w.m, r.type + L->type_basicsize, 1ull << 40);
		assert_int_equal(resolve(&w, r.type, "num_tokens", &l, why), -EINVAL);
		poke64(&w.m, r.type + L->type_basicsize, r.basicsize);
		/* the type dict unreadable, or its keys corrupt */
		poke64(&w.m, r.type + L->type_dict, 0x1000);
		assert_true(resolve(&w, r.type, "num_tokens", &l, why) < 0);
		poke64(&w.m, r.type + L->type_dict, r.tdict);
		poke64(&w.m, peek64(&w.m, r.tdict + L->dict_keys) + L->keys_nentries, 1ull << 40);
		assert_true(resolve(&w, r.type, "num_tokens", &l, why) < 0);
		world_free(&w);
	}
}

/* A huge but well-formed type: 32 MRO types whose dicts hold 4096
 * functions of 4096 names each. resolve() stops at its read budget. */
static void test_resolve_budget(void **state)
{
	struct world w;
	struct kent *e = calloc(4096, sizeof(*e));
	uint64_t names[4096], fn, mro[PT_PYATTR_MRO_MAX], tdict, bs, t;
	int64_t doff;
	struct pt_pyattr_loc l;
	char why[200];

	assert_non_null(e);
	world_init(&w, 12);
	for (int i = 0; i < 4096; i++)
		names[i] = mk_str(&w, "zz", true, 5);
	fn = mk_func(&w, names, 4096);
	for (int i = 0; i < 4096; i++)
		e[i] = (struct kent){ mk_str(&w, "f", true, i * 31 + 7), i * 31 + 7, fn };
	tdict = mk_dict(&w, mk_keys(&w, 13, 1, e, 4096), 0);
	t = mk_htype(&w, "T", tdict, mk_keys(&w, 3, 2, NULL, 0), NULL, 0, &bs, &doff);
	for (int i = 0; i < PT_PYATTR_MRO_MAX - 1; i++)
		mro[i] = t;
	mro[PT_PYATTR_MRO_MAX - 1] = w.object_t;
	poke64(&w.m, t + w.L->type_mro, mk_tuple(&w, mro, PT_PYATTR_MRO_MAX));
	w.m.reads = 0;
	assert_int_equal(pt_pyattr__resolve(&w.t, w.L, t, "x", &l, why, sizeof(why)), -E2BIG);
	assert_true(w.m.reads < 250000);
	free(e);
	world_free(&w);
}

/* ---- objects that are not attributes (python/pythreads.c) ---- */

#define TPF_LONG_SUBCLASS (1ull << 24)

/* An exact int of the version's layout: digits of 30 bits at 24. */
static uint64_t mk_int(struct world *w, uint64_t long_t, int64_t v)
{
	uint64_t a = alloc(&w->m, 40), u = v < 0 ? -(uint64_t)v : (uint64_t)v;
	uint32_t d[3] = { u & 0x3fffffff, (u >> 30) & 0x3fffffff, (uint32_t)(u >> 60) };
	uint64_t nd = d[2] ? 3 : d[1] ? 2 : d[0] ? 1 : 0;

	poke64(&w->m, a, 1);
	poke64(&w->m, a + w->L->ob_type, long_t);
	if (w->L->long_tag)
		poke64(&w->m, a + 16, nd << 3 | (v < 0 ? 2 : v == 0 ? 1 : 0));
	else
		poke64(&w->m, a + 16, v < 0 ? -nd : nd);
	poke(&w->m, a + 24, d, sizeof(d));
	return a;
}

/* sys.modules-like dicts: a str key found by content among the first max
 * entries (whether or not it is interned, whatever its hash), deleted
 * entries skipped; values of combined and split tables in entry order;
 * what is not a dict, or holds implausible keys, refused. */
static void test_dict_get_values(void **state)
{
	struct world w;
	unsigned int minor;

	for_each_version(&w, minor)
	{
		struct kent e[5];
		uint64_t d, v, vals[8], sv[2], split;
		size_t n;

		e[0] = (struct kent){ mk_str(&w, "sys", true, 11), 11, mk_obj(&w, w.int_t) };
		e[1] = (struct kent){ mk_str(&w, "threadin", true, 12), 12, mk_obj(&w, w.int_t) };
		e[2] = (struct kent){ mk_str(&w, "gone", true, 13), 13, 0, true };
		e[3] = (struct kent){ mk_str(&w, "threading", false, 14), 14, mk_obj(&w, w.int_t) };
		e[4] = (struct kent){ mk_str(&w, "threading2", true, 15), 15, mk_obj(&w, w.int_t) };
		d = mk_cdict(&w, e, 5);
		assert_int_equal(pt_pyattr__dict_get(&w.t, w.L, d, "threading", 100, &v), 1);
		assert_int_equal(v, e[3].value);
		assert_int_equal(pt_pyattr__dict_get(&w.t, w.L, d, "sys", 100, &v), 1);
		assert_int_equal(v, e[0].value);
		assert_int_equal(pt_pyattr__dict_get(&w.t, w.L, d, "gone", 100, &v), 0);
		assert_int_equal(pt_pyattr__dict_get(&w.t, w.L, d, "_active", 100, &v), 0);
		assert_int_equal(v, 0);
		/* past max: not searched */
		assert_int_equal(pt_pyattr__dict_get(&w.t, w.L, d, "threading", 3, &v), 0);
		assert_int_equal(pt_pyattr__dict_get(&w.t, w.L, d, "threading", 4, &v), 1);
		assert_int_equal(pt_pyattr__dict_get(&w.t, w.L, d, "", 100, &v), -EINVAL);
		assert_int_equal(pt_pyattr__dict_get(&w.t, w.L, d, "a b", 100, &v), -EINVAL);
		assert_int_equal(pt_pyattr__dict_get(&w.t, w.L, d, "sys", 0, &v), -EINVAL);

		assert_int_equal(pt_pyattr__dict_values(&w.t, w.L, d, vals, 8, &n), 0);
		assert_int_equal(n, 4);
		assert_int_equal(vals[0], e[0].value);
		assert_int_equal(vals[1], e[1].value);
		assert_int_equal(vals[2], e[3].value);
		assert_int_equal(vals[3], e[4].value);
		assert_int_equal(pt_pyattr__dict_values(&w.t, w.L, d, vals, 2, &n), 0);
		assert_int_equal(n, 2);

		/* a split table: values from its values array, NULL ones skipped */
		sv[0] = mk_obj(&w, w.int_t);
		sv[1] = 0;
		split = mk_dict(&w, mk_keys(&w, 3, 2, e, 2), mk_values(&w, sv, 2, 4));
		assert_int_equal(pt_pyattr__dict_values(&w.t, w.L, split, vals, 8, &n), 0);
		assert_int_equal(n, 1);
		assert_int_equal(vals[0], sv[0]);
		assert_int_equal(pt_pyattr__dict_get(&w.t, w.L, split, "threadin", 8, &v), 0);

		/* not a dict, no object, implausible keys */
		assert_int_equal(pt_pyattr__dict_get(&w.t, w.L, e[0].key, "sys", 9, &v), -EINVAL);
		assert_int_equal(pt_pyattr__dict_values(&w.t, w.L, e[0].key, vals, 8, &n), -EINVAL);
		assert_int_equal(pt_pyattr__dict_values(&w.t, w.L, 0, vals, 8, &n), -EINVAL);
		assert_int_equal(pt_pyattr__dict_get(&w.t, w.L, 0x7fff0000, "sys", 9, &v), -EINVAL);
		poke64(&w.m, peek64(&w.m, d + w.L->dict_keys) + w.L->keys_nentries, 1ull << 40);
		assert_int_equal(pt_pyattr__dict_values(&w.t, w.L, d, vals, 8, &n), -EINVAL);
		assert_int_equal(pt_pyattr__dict_get(&w.t, w.L, d, "sys", 9, &v), -EINVAL);
		world_free(&w);
	}
}

/* ints as thread ids are: one and two digits, zero, negative; what is
 * no exact int or does not fit, refused. */
static void test_int(void **state)
{
	static const int64_t ok[] = {
		0, 1, 4242, 0x3fffffff, 0x40000000, 1ll << 59, (1ll << 60) - 1, -7, -(1ll << 45)
	};
	struct world w;
	unsigned int minor;

	for_each_version(&w, minor)
	{
		uint64_t long_t = mk_static_type(&w, "int", TPF_LONG_SUBCLASS);
		uint64_t sub_t = mk_static_type(&w, "bool", TPF_LONG_SUBCLASS);
		int64_t v;

		for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
			assert_int_equal(pt_pyattr__int(&w.t, w.L, mk_int(&w, long_t, ok[i]), &v),
					 0);
			assert_int_equal(v, ok[i]);
		}
		/* three digits */
		assert_int_equal(pt_pyattr__int(&w.t, w.L, mk_int(&w, long_t, 1ll << 60), &v),
				 -EINVAL);
		/* not int: the flagless int of the world, a subclass, None-like */
		assert_int_equal(pt_pyattr__int(&w.t, w.L, mk_int(&w, w.int_t, 5), &v), -EINVAL);
		assert_int_equal(pt_pyattr__int(&w.t, w.L, mk_int(&w, sub_t, 1), &v), -EINVAL);
		assert_int_equal(pt_pyattr__int(&w.t, w.L, 0, &v), -EINVAL);
		/* a digit with bits past 30 */
		{
			uint64_t a = mk_int(&w, long_t, 3);

			poke32(&w.m, a + 24, 1u << 30);
			assert_int_equal(pt_pyattr__int(&w.t, w.L, a, &v), -EINVAL);
		}
		world_free(&w);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolve_and_read_every_version),
		cmocka_unit_test(test_combined_dicts),
		cmocka_unit_test(test_key_not_identical),
		cmocka_unit_test(test_class_attr_property_getattr),
		cmocka_unit_test(test_slots),
		cmocka_unit_test(test_static_type_arrays),
		cmocka_unit_test(test_resolve_obj),
		cmocka_unit_test(test_corrupt_keys),
		cmocka_unit_test(test_read_count_bounded),
		cmocka_unit_test(test_unreadable),
		cmocka_unit_test(test_bad_locations),
		cmocka_unit_test(test_resolve_bad_types),
		cmocka_unit_test(test_resolve_budget),
		cmocka_unit_test(test_dict_get_values),
		cmocka_unit_test(test_int),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
