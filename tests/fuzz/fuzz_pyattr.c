// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness for pt_pyattr__resolve(), pt_pyattr__resolve_obj()
 * and pt_pyattr__read(): types, dicts and instances are all read from the
 * target's memory; in raw mode also pt_pyattr__dict_get/dict_values/int
 * and the thread-name walk of python/pythreads.c over the same image.
 * Build and run with `make fuzz`.
 *
 * Blank memory rarely parses as a type, so by default the harness builds
 * a valid image itself (a class with a dict of a method, a class
 * variable, a property and a slot, shared keys, a split and a combined
 * instance, in the chosen version's layout) and the input patches it:
 *   [0]    CPython 3.(8 + n % 6) layout
 *   [1]    bit 0: raw mode (below); bits 1-3: the attribute name
 *   [2..]  patches of 3 bytes: u16 offset into the image, then a byte
 *          written there (xor'ed in when bit 7 of [1] is set)
 * Raw mode: [8..] is the memory image itself; [2..7] pick the type, the
 * object, and a location's kind, flags, offset and index for a direct
 * read. No seeds are needed (tests/fuzz/corpus/pyattr/ may be empty).
 *
 * Checked: statuses in range and a value exactly when OK; reads of one
 * pt_pyattr__read() within PT_PYATTR_READS_MAX; resolve()'s answers among
 * the documented ones, a one-line reason that fits its (exactly sized,
 * heap) buffer, a location of a known kind with a key for dict kinds.
 * ASan catches any read outside the image (the callback refuses them).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "python/pyattr.h"
#include "python/pylayout.h"
#include "python/pythreads.h"

#define IMAGE_BASE 0x10000ull
#define IMAGE_LEN 16384

struct image {
	const uint8_t *data;
	size_t size;
	unsigned long reads;
};

static int image_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct image *im = ctx;
	uint64_t off;

	im->reads++;
	if (addr < IMAGE_BASE)
		return -EFAULT;
	off = addr - IMAGE_BASE;
	if (off > im->size || len > im->size - off)
		return -EFAULT;
	memcpy(buf, im->data + off, len);
	return 0;
}

static uint16_t u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* ---- a small builder (the unit test's, cut down) ---- */

struct b {
	uint8_t img[IMAGE_LEN];
	size_t brk;
	const struct pt_py_layout *L;
	unsigned int minor;
	uint64_t str_t, dict_t, func_t, code_t, member_t, prop_t, object_t;
};

static uint64_t al(struct b *b, size_t len)
{
	uint64_t a = IMAGE_BASE + b->brk;

	b->brk = (b->brk + len + 15) & ~(size_t)15;
	if (b->brk > IMAGE_LEN)
		__builtin_trap(); /* the builder outgrew the image */
	return a;
}

static void p64(struct b *b, uint64_t a, uint64_t v)
{
	memcpy(b->img + (a - IMAGE_BASE), &v, 8);
}

static void p8(struct b *b, uint64_t a, uint8_t v)
{
	b->img[a - IMAGE_BASE] = v;
}

static uint64_t cstr(struct b *b, const char *s)
{
	uint64_t a = al(b, strlen(s) + 1);

	memcpy(b->img + (a - IMAGE_BASE), s, strlen(s) + 1);
	return a;
}

static uint64_t stype(struct b *b, const char *name, uint64_t flags, uint64_t dset)
{
	uint64_t t = al(b, 352);

	p64(b, t + b->L->type_name, cstr(b, name));
	p64(b, t + b->L->type_flags, flags);
	p64(b, t + b->L->type_basicsize, 16);
	p64(b, t + b->L->type_getattro, 0x7f0000401000ull);
	p64(b, t + b->L->type_descr_set, dset);
	return t;
}

static uint64_t tuple(struct b *b, const uint64_t *v, size_t n)
{
	uint64_t a = al(b, 24 + 8 * n);

	p64(b, a + b->L->tuple_size, n);
	for (size_t i = 0; i < n; i++)
		p64(b, a + b->L->tuple_item + 8 * i, v[i]);
	return a;
}

static uint64_t str(struct b *b, const char *s, int64_t hash)
{
	const struct pt_py_layout *L = b->L;
	uint64_t a = al(b, L->ascii_size + strlen(s) + 1);

	p64(b, a + L->ob_type, b->str_t);
	p64(b, a + L->str_length, strlen(s));
	p64(b, a + L->str_hash, (uint64_t)hash);
	p64(b, a + L->str_state, 1u | 1u << 2 | 1u << 5 | 1u << 6);
	memcpy(b->img + (a + L->ascii_size - IMAGE_BASE), s, strlen(s));
	return a;
}

struct ent {
	uint64_t key;
	int64_t hash;
	uint64_t value;
};

static uint64_t keys(struct b *b, unsigned int lg, int kind, const struct ent *e, size_t n)
{
	const struct pt_py_layout *L = b->L;
	uint64_t size = 1ull << lg, mask = size - 1;
	unsigned int esz = (L->keys_size || kind == 0) ? 24 : 16;
	uint64_t k = al(b, L->keys_indices + size + n * esz), ind = k + L->keys_indices;

	if (L->keys_size) {
		p64(b, k + L->keys_size, size);
	} else {
		p8(b, k + L->keys_log2_size, (uint8_t)lg);
		p8(b, k + L->keys_log2_index_bytes, (uint8_t)lg);
		p8(b, k + L->keys_kind, (uint8_t)kind);
	}
	p64(b, k + L->keys_nentries, n);
	memset(b->img + (ind - IMAGE_BASE), 0xff, size);
	for (size_t i = 0; i < n; i++) {
		uint64_t ea = ind + size + i * esz, slot = (uint64_t)e[i].hash & mask;
		uint64_t perturb = (uint64_t)e[i].hash;

		if (esz == 24) {
			p64(b, ea, (uint64_t)e[i].hash);
			ea += 8;
		}
		p64(b, ea, e[i].key);
		p64(b, ea + 8, e[i].value);
		while (b->img[ind + slot - IMAGE_BASE] != 0xff) {
			perturb >>= 5;
			slot = (slot * 5 + perturb + 1) & mask;
		}
		p8(b, ind + slot, (uint8_t)i);
	}
	return k;
}

static uint64_t dict(struct b *b, uint64_t k, uint64_t values)
{
	uint64_t d = al(b, 48);

	p64(b, d + b->L->ob_type, b->dict_t);
	p64(b, d + b->L->dict_keys, k);
	p64(b, d + b->L->dict_values, values);
	return d;
}

enum { H_NUM = 0x51, H_PROMPT = 0x62, H_LIMIT = 0x13, H_TOTAL = 0x24, H_INIT = 0x35, H_X = 0x46 };

static const char *const names[8] = { "num_tokens", "prompt", "limit", "total",
				      "__init__",   "x",      "extra", "a b" };

struct world {
	uint64_t type, split, comb, slot;
};

static void build(struct b *b, struct world *w)
{
	const struct pt_py_layout *L = b->L;
	uint64_t num, prompt, code, fn, member, def, mro[2], shared, flags, bs, vals, obj, n2[2];
	struct ent te[4], se[2], ce[2];
	int64_t doff;

	b->str_t = stype(b, "str", 1ull << 28, 0);
	b->dict_t = stype(b, "dict", 1ull << 29, 0);
	b->func_t = stype(b, "function", 0, 0);
	b->code_t = stype(b, "code", 0, 0);
	b->member_t = stype(b, "member_descriptor", 0, 1);
	b->prop_t = stype(b, "property", 0, 1);
	b->object_t = stype(b, "object", 0, 0);
	p64(b, b->object_t + L->type_mro, tuple(b, &b->object_t, 1));

	num = str(b, names[0], H_NUM);
	prompt = str(b, names[1], H_PROMPT);
	n2[0] = num;
	n2[1] = prompt;
	code = al(b, 128);
	p64(b, code + L->ob_type, b->code_t);
	p64(b, code + L->code_names, tuple(b, n2, 2));
	p64(b, code + L->code_consts, tuple(b, NULL, 0));
	fn = al(b, 64);
	p64(b, fn + L->ob_type, b->func_t);
	p64(b, fn + L->func_code, code);
	w->type = al(b, L->ht_cached_keys + 8);
	def = al(b, 40);
	p64(b, def + 8, 16); /* T_OBJECT_EX */
	p64(b, def + 16, 16);
	member = al(b, 48);
	p64(b, member + L->ob_type, b->member_t);
	p64(b, member + L->descr_type, w->type);
	p64(b, member + L->descr_member, def);
	te[0] = (struct ent){ str(b, names[4], H_INIT), H_INIT, fn };
	te[1] = (struct ent){ str(b, names[2], H_LIMIT), H_LIMIT, al(b, 32) };
	te[2] = (struct ent){ str(b, names[3], H_TOTAL), H_TOTAL, al(b, 32) };
	p64(b, te[2].value + L->ob_type, b->prop_t);
	te[3] = (struct ent){ str(b, names[5], H_X), H_X, member };
	se[0] = (struct ent){ num, H_NUM, 0 };
	se[1] = (struct ent){ prompt, H_PROMPT, 0 };
	shared = keys(b, L->keys_size ? 3 : 6, 2, se, 2);

	flags = 1ull << 9 | L->tpf_managed_dict | L->tpf_inline_values;
	bs = L->tpf_inline_values ? 16 : 32;
	doff = L->tpf_managed_dict ? -1 : 16;
	p64(b, w->type + L->type_name, cstr(b, "Req"));
	p64(b, w->type + L->type_flags, flags);
	p64(b, w->type + L->type_basicsize, bs);
	p64(b, w->type + L->type_dictoffset, (uint64_t)doff);
	p64(b, w->type + L->type_getattro, 0x7f0000401000ull);
	p64(b, w->type + L->type_dict, dict(b, keys(b, 3, 1, te, 4), 0));
	p64(b, w->type + L->ht_cached_keys, shared);
	mro[0] = w->type;
	mro[1] = b->object_t;
	p64(b, w->type + L->type_mro, tuple(b, mro, 2));

	/* the split instance */
	vals = al(b, 8 + 8 * 4);
	if (L->values_header) {
		p8(b, vals, 4);
		p8(b, vals + 3, 1);
	}
	p64(b, vals + L->values_items, al(b, 32));
	p64(b, vals + L->values_items + 8, al(b, 32));
	obj = al(b, 32 + 16 + 8 + 8 * 30) + 32;
	p64(b, obj + L->ob_type, w->type);
	switch (L->idict) {
	case PT_PY_IDICT_OFFSET:
		p64(b, obj + 16, dict(b, shared, vals));
		break;
	case PT_PY_IDICT_VALUES:
		p64(b, obj + L->managed_values, vals);
		break;
	case PT_PY_IDICT_TAGGED:
		p64(b, obj + L->managed_dict, vals - 1);
		break;
	case PT_PY_IDICT_INLINE:
		memcpy(b->img + (obj + 16 - IMAGE_BASE), b->img + (vals - IMAGE_BASE), 8 + 16);
		break;
	}
	w->split = obj;
	/* the combined one */
	ce[0] = (struct ent){ prompt, H_PROMPT, al(b, 32) };
	ce[1] = (struct ent){ num, H_NUM, al(b, 32) };
	obj = al(b, 32 + 16 + 8) + 32;
	p64(b, obj + L->ob_type, w->type);
	if (L->idict == PT_PY_IDICT_OFFSET)
		p64(b, obj + 16, dict(b, keys(b, 3, 1, ce, 2), 0));
	else
		p64(b, obj + L->managed_dict, dict(b, keys(b, 3, 1, ce, 2), 0));
	w->comb = obj;
	w->slot = obj; /* its slot x at +16 */
}

/* ---- the checks ---- */

static void check_read(struct image *im, const struct pt_tmem *m, const struct pt_py_layout *L,
		       const struct pt_pyattr_loc *loc, uint64_t obj)
{
	enum pt_pyattr_status st;
	uint64_t v = 0xdead;

	im->reads = 0;
	st = pt_pyattr__read(m, L, loc, obj, &v);
	if ((unsigned int)st >= PT_PYATTR_NSTATUS || (st == PT_PYATTR_OK) != (v != 0) ||
	    im->reads > PT_PYATTR_READS_MAX || !pt_pyattr__status_str(st)[0])
		__builtin_trap();
}

static void check_resolve(int rc, const struct pt_pyattr_loc *loc, const char *why, size_t whylen)
{
	if (strnlen(why, whylen) >= whylen || strchr(why, '\n'))
		__builtin_trap();
	switch (rc) {
	case 0:
		if (!loc->kind || loc->kind > PT_PYATTR_K_MANAGED_313 || !why[0])
			__builtin_trap();
		if (loc->kind != PT_PYATTR_K_SLOT && !loc->key)
			__builtin_trap();
		break;
	case -EOPNOTSUPP:
	case -ENOENT:
	case -EAGAIN:
	case -EINVAL:
	case -EFAULT:
	case -E2BIG:
		if (!why[0])
			__builtin_trap();
		break;
	default:
		__builtin_trap();
	}
}

/* The readers of what is no attribute, and the thread-name walk over
 * them (sys.modules -> threading -> _active -> each Thread), with the
 * image as the runtime: bounded answers only. */
static void check_other(const struct pt_tmem *m, const struct pt_py_layout *L, uint64_t obj,
			const char *name, uint64_t runtime)
{
	static const struct pt_pytypes t = { IMAGE_BASE + 0x100, IMAGE_BASE + 0x200 };
	const struct pt_pythread *thr;
	struct pt_pythreads *pt;
	uint64_t v, vals[16];
	size_t n = 99;
	int64_t i;
	int rc;

	rc = pt_pyattr__dict_get(m, L, obj, name, 64, &v);
	if (rc < -4096 || rc > 1 || (rc != 1 && v))
		__builtin_trap();
	rc = pt_pyattr__dict_values(m, L, obj, vals, 16, &n);
	if (rc > 0 || n > 16 || (rc && n))
		__builtin_trap();
	for (size_t k = 0; k < n; k++)
		if (!vals[k])
			__builtin_trap();
	rc = pt_pyattr__int(m, L, obj, &i);
	if (rc > 0 || (rc && i) || i < -(1ll << 60) || i >= (1ll << 60))
		__builtin_trap();
	pt = pt_pythreads__new(m, L, &t, runtime);
	if (!pt)
		return;
	n = 99;
	rc = pt_pythreads__read(pt, &thr, &n);
	if (rc > 0 || n > PT_PYTHREADS_MAX || (rc && n))
		__builtin_trap();
	for (size_t k = 0; k < n; k++)
		if (!thr[k].tid || !thr[k].name[0] ||
		    strlen(thr[k].name) >= PT_PYTHREADS_NAME_MAX ||
		    pt_pythreads__name(pt, thr[k].tid) == NULL)
			__builtin_trap();
	pt_pythreads__free(pt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct b b;
	const struct pt_py_layout *L;
	struct pt_pyattr_loc loc;
	struct image im;
	struct pt_tmem m = { image_read, &im };
	struct world w;
	const char *name;
	size_t whylen;
	char *why;
	int rc;

	if (size < 2)
		return 0;
	L = pt_py_layout__get(PT_PY_MINOR_MIN + data[0] % (PT_PY_MINOR_MAX - PT_PY_MINOR_MIN + 1));
	if (!L)
		__builtin_trap();
	name = names[(data[1] >> 1) & 7];
	/* an exactly sized heap buffer, short now and then: cut, not overrun */
	whylen = (data[1] & 0x40) ? 9 : 160;
	why = malloc(whylen);
	if (!why)
		return 0;

	if (data[1] & 1) {
		/* raw: the input is the memory */
		uint64_t type, obj;

		if (size < 8)
			goto out;
		im = (struct image){ data + 8, size - 8, 0 };
		type = IMAGE_BASE + u16(data + 2);
		obj = IMAGE_BASE + u16(data + 4);
		rc = pt_pyattr__resolve(&m, L, type, name, &loc, why, whylen);
		check_resolve(rc, &loc, why, whylen);
		if (!rc)
			check_read(&im, &m, L, &loc, obj);
		rc = pt_pyattr__resolve_obj(&m, L, obj, name, &loc, why, whylen);
		check_resolve(rc, &loc, why, whylen);
		/* a location made up from the input: the read path alone */
		memset(&loc, 0, sizeof(loc));
		loc.kind = data[6] % 8;
		loc.flags = data[6] >> 3;
		loc.off = (int8_t)data[7];
		loc.index = (int8_t)data[3];
		loc.key = IMAGE_BASE + u16(data + 2);
		loc.shared_keys = IMAGE_BASE + (uint64_t)data[5] * 16;
		if (!image_read(&im, loc.key + L->str_hash, &loc.hash, 8) && data[7] & 1)
			loc.dict_type = loc.key;
		check_read(&im, &m, L, &loc, obj);
		check_other(&m, L, obj, name, IMAGE_BASE + u16(data + 2));
		goto out;
	}

	memset(&b, 0, sizeof(b));
	b.L = L;
	b.brk = 64;
	build(&b, &w);
	for (size_t i = 2; i + 3 <= size; i += 3) {
		size_t off = u16(data + i) % b.brk;

		if (data[1] & 0x80)
			b.img[off] ^= data[i + 2];
		else
			b.img[off] = data[i + 2];
	}
	im = (struct image){ b.img, b.brk, 0 };
	rc = pt_pyattr__resolve(&m, L, w.type, name, &loc, why, whylen);
	check_resolve(rc, &loc, why, whylen);
	if (!rc) {
		check_read(&im, &m, L, &loc, w.split);
		check_read(&im, &m, L, &loc, w.comb);
		check_read(&im, &m, L, &loc, w.slot);
	}
	rc = pt_pyattr__resolve_obj(&m, L, w.comb, name, &loc, why, whylen);
	check_resolve(rc, &loc, why, whylen);
	if (!rc)
		check_read(&im, &m, L, &loc, w.split);
out:
	free(why);
	return 0;
}
