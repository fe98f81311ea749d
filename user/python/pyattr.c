// SPDX-License-Identifier: BSD-2-Clause
/*
 * Attribute locations (resolve, user space, once per type) and the read
 * path BPF ports (pt_pyattr__read()). docs/pyattr-notes.md has the
 * per-version facts; pyattr.h the contract.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "pyattr.h"

/* tp_flags bits, the same on 3.8-3.13 */
#define TPF_HEAPTYPE (1ull << 9)
#define TPF_LONG_SUBCLASS (1ull << 24)
#define TPF_UNICODE_SUBCLASS (1ull << 28)
#define TPF_DICT_SUBCLASS (1ull << 29)

/* PyMemberDef {const char *name; int type; Py_ssize_t offset; int flags;
 * const char *doc}: 40 bytes on x86-64, 3.8-3.13 (gdb). */
#define MEMBERDEF_SIZE 40
#define MEMBERDEF_TYPE 8
#define MEMBERDEF_OFFSET 16
#define MEMBERDEF_FLAGS 24
#define T_OBJECT 6	  /* NULL reads as None */
#define T_OBJECT_EX 16	  /* NULL raises AttributeError; what __slots__ make */
#define RELATIVE_OFFSET 8 /* Py_RELATIVE_OFFSET (3.12+): not an offset from obj */
#define GETSETDEF_SIZE 40 /* {name, get, set, doc, closure} */
#define METHODDEF_SIZE 32 /* {ml_name, ml_meth, ml_flags, ml_doc} */
#define DEFS_MAX 256	  /* entries of one tp_members/tp_getset/tp_methods */

/* dict index table entries (dictobject.c) */
#define DKIX_EMPTY (-1)
#define DKIX_DUMMY (-2)
#define PERTURB_SHIFT 5

/* resolve() gives up after this many reads: a hostile or corrupt target
 * must not keep it busy (every loop is bounded, but nested ones multiply) */
#define READ_BUDGET 200000

/* ---- reads ---- */

/* len bytes at base + off (off may be negative: managed dicts live before
 * the object); the addresses come from the target: no wrap */
static int rdo(const struct pt_tmem *m, uint64_t base, int64_t off, void *buf, size_t len)
{
	uint64_t addr = base + (uint64_t)off;

	if (!base || (off >= 0 ? addr < base : addr >= base) || addr + len < addr)
		return -EFAULT;
	return m->read(m->ctx, addr, buf, len);
}

static int rd64(const struct pt_tmem *m, uint64_t base, int64_t off, uint64_t *v)
{
	return rdo(m, base, off, v, sizeof(*v));
}

/* ---- the read path (BPF ports this part) ---- */

/* Geometry of a PyDictKeysObject, from its header only. */
struct keys_geom {
	uint64_t size;	   /* slots in the index table: a power of 2 */
	uint64_t nentries; /* entries used, live or deleted */
	uint64_t indices;  /* address of the index table */
	uint64_t entries;  /* address of entry 0 */
	uint32_t ixw;	   /* bytes per index: 1, 2 or 4 (8 needs > 2^32 slots) */
	uint32_t esize;	   /* 24 {hash, key, value}, or 16 {key, value} */
};

static enum pt_pyattr_status keys_geom(const struct pt_tmem *m, const struct pt_py_layout *L,
				       uint64_t keys, struct keys_geom *g)
{
	uint8_t h[48];
	int64_t n;

	if (L->keys_indices > sizeof(h) || L->keys_nentries + 8 > L->keys_indices)
		return PT_PYATTR_BADLOC;
	if (rdo(m, keys, 0, h, L->keys_indices))
		return PT_PYATTR_FAULT;
	g->indices = keys + L->keys_indices;
	if (L->keys_size) {
		/* < 3.11: dk_size; index width by size (DK_IXSIZE) */
		int64_t size;

		memcpy(&size, h + L->keys_size, 8);
		if (size < 1 || size > (1ll << PT_PYATTR_LOG2_MAX) || (size & (size - 1)))
			return PT_PYATTR_CORRUPT;
		g->size = (uint64_t)size;
		g->ixw = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
		g->entries = g->indices + g->size * g->ixw;
		g->esize = 24;
	} else {
		/* 3.11+: log2 sizes; the index bytes must agree with the width
		 * the size implies (dictkeys_get_index) */
		uint8_t lg = h[L->keys_log2_size], lib = h[L->keys_log2_index_bytes];
		uint8_t kind = h[L->keys_kind];

		if (lg > PT_PYATTR_LOG2_MAX || kind > 2)
			return PT_PYATTR_CORRUPT;
		g->ixw = lg < 8 ? 1 : lg < 16 ? 2 : 4;
		if (lib != lg + (g->ixw == 1 ? 0 : g->ixw == 2 ? 1 : 2))
			return PT_PYATTR_CORRUPT;
		g->size = 1ull << lg;
		g->entries = g->indices + (1ull << lib);
		g->esize = kind == 0 ? 24 : 16; /* DICT_KEYS_GENERAL, else UNICODE/SPLIT */
	}
	/* entries are only appended while dk_usable lasts: at most
	 * USABLE_FRACTION(size) = 2/3 of the slots (0 for the empty keys'
	 * single slot); a split table's values array has that many */
	memcpy(&n, h + L->keys_nentries, 8);
	if (n < 0 || (uint64_t)n > (g->size << 1) / 3)
		return PT_PYATTR_CORRUPT;
	g->nentries = (uint64_t)n;
	if (g->entries < keys)
		return PT_PYATTR_CORRUPT; /* wrapped */
	return PT_PYATTR_OK;
}

/* index table slot i, sign-extended */
static int read_index(const struct pt_tmem *m, const struct keys_geom *g, uint64_t i, int64_t *ix)
{
	uint64_t addr = g->indices + i * g->ixw;
	int8_t i8;
	int16_t i16;
	int32_t i32;
	int e;

	if (g->ixw == 1) {
		e = rdo(m, addr, 0, &i8, 1);
		*ix = i8;
	} else if (g->ixw == 2) {
		e = rdo(m, addr, 0, &i16, 2);
		*ix = i16;
	} else {
		e = rdo(m, addr, 0, &i32, 4);
		*ix = i32;
	}
	return e;
}

/* What the instance lacks: who answers instead. */
static enum pt_pyattr_status absent(const struct pt_pyattr_loc *loc, enum pt_pyattr_status st)
{
	if (loc->flags & PT_PYATTR_F_GETATTR)
		return PT_PYATTR_GETATTR;
	if (st == PT_PYATTR_MISSING && (loc->flags & PT_PYATTR_F_CLASS))
		return PT_PYATTR_CLASS;
	return st;
}

/*
 * The key object loc->key in keys: its entry index. values (split table)
 * or the entry (combined) then holds the value. The dict's own probe
 * sequence (lookdict, the same on 3.8-3.13), bounded: EMPTY proves
 * absence; a key of the same hash that is another object stops it
 * (equality would need a string compare).
 */
static enum pt_pyattr_status find_key(const struct pt_tmem *m, const struct pt_py_layout *L,
				      const struct pt_pyattr_loc *loc, uint64_t keys, bool split,
				      const struct keys_geom *g, int64_t *found)
{
	uint64_t mask = g->size - 1, perturb = (uint64_t)loc->hash;
	uint64_t i = (uint64_t)loc->hash & mask, e[3];
	uint32_t ko = g->esize - 16; /* the key's offset in an entry */
	int p;

	/* shared keys only grow (entries are appended, never removed or
	 * moved): the resolved index stays right while this is the same
	 * keys object. The key compare closes the case of another keys
	 * object at a freed one's address. */
	if (split && keys == loc->shared_keys && loc->index >= 0 &&
	    (uint64_t)loc->index < g->nentries) {
		if (rd64(m, g->entries + (uint64_t)loc->index * g->esize, ko, &e[0]))
			return PT_PYATTR_FAULT;
		if (e[0] == loc->key) {
			*found = loc->index;
			return PT_PYATTR_OK;
		}
	}
	for (p = 0; p < PT_PYATTR_PROBE_MAX; p++) {
		int64_t ix;

		if (read_index(m, g, i, &ix))
			return PT_PYATTR_FAULT;
		if (ix == DKIX_EMPTY)
			return PT_PYATTR_MISSING;
		if (ix >= 0) {
			uint64_t ekey, ehash;

			if ((uint64_t)ix >= g->nentries)
				return PT_PYATTR_CORRUPT;
			if (rdo(m, g->entries + (uint64_t)ix * g->esize, 0, e, g->esize))
				return PT_PYATTR_FAULT;
			ekey = g->esize == 24 ? e[1] : e[0];
			if (ekey == loc->key) {
				*found = ix;
				return PT_PYATTR_OK;
			}
			if (g->esize == 24) {
				ehash = e[0];
			} else if (!ekey) {
				ehash = ~(uint64_t)loc->hash; /* a deleted entry */
			} else if (rd64(m, ekey, L->str_hash, &ehash)) {
				return PT_PYATTR_FAULT;
			}
			if (ehash == (uint64_t)loc->hash)
				return PT_PYATTR_KEYCMP;
		} else if (ix != DKIX_DUMMY) {
			return PT_PYATTR_CORRUPT;
		}
		perturb >>= PERTURB_SHIFT;
		i = (i * 5 + perturb + 1) & mask;
	}
	return PT_PYATTR_PROBES;
}

/*
 * Step 1 of the read path: where this instance's attributes are. Either
 * *values (a split table's values with *keys the type's shared keys, or
 * with a dict's keys), or *keys of a combined dict (*values 0). *cap: the
 * values' capacity where it is known (3.13), else -1. *dictp: the dict
 * when there is one.
 */
static enum pt_pyattr_status locate(const struct pt_tmem *m, const struct pt_py_layout *L,
				    const struct pt_pyattr_loc *loc, uint64_t obj, uint64_t *keys,
				    uint64_t *values, int *cap, uint64_t *dictp)
{
	uint64_t dict = 0, w, d[6];
	uint8_t hdr[4];

	*keys = *values = *dictp = 0;
	*cap = -1;
	switch (loc->kind) {
	case PT_PYATTR_K_DICTPTR:
		if (rd64(m, obj, loc->off, &dict))
			return PT_PYATTR_FAULT;
		break;
	case PT_PYATTR_K_MANAGED_311:
		if (rd64(m, obj, L->managed_values, values))
			return PT_PYATTR_FAULT;
		if (!*values && rd64(m, obj, L->managed_dict, &dict))
			return PT_PYATTR_FAULT;
		break;
	case PT_PYATTR_K_MANAGED_312:
		/* _PyDictOrValues: values are stored as (char *)values - 1 */
		if (rd64(m, obj, L->managed_dict, &w))
			return PT_PYATTR_FAULT;
		if (w & 1)
			*values = w + 1;
		else
			dict = w;
		break;
	case PT_PYATTR_K_INLINE_313:
		/* {capacity, size, embedded, valid}: valid is cleared when
		 * the instance's dict stops using them */
		if (rdo(m, obj, loc->off, hdr, sizeof(hdr)))
			return PT_PYATTR_FAULT;
		if (hdr[3]) {
			*values = obj + (uint64_t)loc->off;
			*cap = hdr[0];
		} else if (rd64(m, obj, L->managed_dict, &dict)) {
			return PT_PYATTR_FAULT;
		}
		break;
	case PT_PYATTR_K_MANAGED_313:
		if (rd64(m, obj, L->managed_dict, &dict))
			return PT_PYATTR_FAULT;
		break;
	default:
		return PT_PYATTR_BADLOC;
	}
	if (*values) {
		/* values without a dict always pair with the type's keys */
		if (!loc->shared_keys)
			return PT_PYATTR_BADLOC;
		*keys = loc->shared_keys;
		return PT_PYATTR_OK;
	}
	if (!dict)
		return PT_PYATTR_MISSING; /* no attribute set yet */
	*dictp = dict;
	if (L->dict_keys + 8 > sizeof(d) || L->dict_values + 8 > sizeof(d) ||
	    L->ob_type + 8 > sizeof(d))
		return PT_PYATTR_BADLOC;
	if (rdo(m, dict, 0, d, sizeof(d)))
		return PT_PYATTR_FAULT;
	memcpy(&w, (uint8_t *)d + L->ob_type, 8);
	if (loc->dict_type && w != loc->dict_type)
		return PT_PYATTR_NOTDICT;
	memcpy(keys, (uint8_t *)d + L->dict_keys, 8);
	memcpy(values, (uint8_t *)d + L->dict_values, 8);
	if (*values && L->values_header) {
		if (rdo(m, *values, 0, hdr, sizeof(hdr)))
			return PT_PYATTR_FAULT;
		*cap = hdr[0];
	}
	return PT_PYATTR_OK;
}

enum pt_pyattr_status pt_pyattr__read(const struct pt_tmem *m, const struct pt_py_layout *L,
				      const struct pt_pyattr_loc *loc, uint64_t obj,
				      uint64_t *value)
{
	enum pt_pyattr_status st;
	struct keys_geom g;
	uint64_t keys, values, dict, v;
	int64_t ix;
	int cap;

	*value = 0;
	if (!obj)
		return PT_PYATTR_FAULT;
	if (loc->kind == PT_PYATTR_K_SLOT) {
		if (rd64(m, obj, loc->off, &v))
			return PT_PYATTR_FAULT;
		if (!v)
			return (loc->flags & PT_PYATTR_F_NONE_IF_NULL)
				       ? PT_PYATTR_NONE
				       : absent(loc, PT_PYATTR_UNSET);
		*value = v;
		return PT_PYATTR_OK;
	}
	if (!loc->key)
		return PT_PYATTR_BADLOC;
	st = locate(m, L, loc, obj, &keys, &values, &cap, &dict);
	if (st == PT_PYATTR_OK)
		st = keys_geom(m, L, keys, &g);
	if (st == PT_PYATTR_OK)
		st = find_key(m, L, loc, keys, values != 0, &g, &ix);
	if (st != PT_PYATTR_OK)
		return st == PT_PYATTR_MISSING ? absent(loc, st) : st;
	if (values) {
		if (cap >= 0 && ix >= cap)
			return PT_PYATTR_CORRUPT;
		if (rd64(m, values, (int64_t)L->values_items + ix * 8, &v))
			return PT_PYATTR_FAULT;
	} else if (rd64(m, g.entries + (uint64_t)ix * g.esize, g.esize - 8, &v)) {
		return PT_PYATTR_FAULT;
	}
	if (!v) /* deleted from a split table */
		return absent(loc, PT_PYATTR_MISSING);
	*value = v;
	return PT_PYATTR_OK;
}

const char *pt_pyattr__status_str(enum pt_pyattr_status st)
{
	/* clang-format off */
	static const char *const s[PT_PYATTR_NSTATUS] = {
	    [PT_PYATTR_OK] = "ok",
	    [PT_PYATTR_UNSET] = "unset",
	    [PT_PYATTR_NONE] = "none",
	    [PT_PYATTR_MISSING] = "missing",
	    [PT_PYATTR_CLASS] = "class attribute",
	    [PT_PYATTR_GETATTR] = "__getattr__",
	    [PT_PYATTR_FAULT] = "fault",
	    [PT_PYATTR_NOTDICT] = "not a dict",
	    [PT_PYATTR_CORRUPT] = "corrupt dict",
	    [PT_PYATTR_KEYCMP] = "key not identical",
	    [PT_PYATTR_PROBES] = "probe limit",
	    [PT_PYATTR_BADLOC] = "bad location",
	};
	/* clang-format on */

	return (unsigned int)st < PT_PYATTR_NSTATUS ? s[st] : "?";
}

/* ---- resolve (user space only) ---- */

struct ctx {
	const struct pt_tmem *m;
	const struct pt_py_layout *L;
	const char *name;
	size_t nlen;
	uint64_t type, flags, basicsize;
	int64_t dictoffset;
	uint64_t mro[PT_PYATTR_MRO_MAX];
	size_t nmro;
	/* builtin types, each verified once (static, by tp_name) */
	uint64_t str_type, dict_type, func_type, code_type, int_type;
	size_t scan_max; /* keys_find: entries searched; 0: PT_PYATTR_SCAN_MAX */
	long budget;
	char tname[80]; /* the type's tp_name, for messages */
	char *why;
	size_t whylen;
};

static int say(struct ctx *c, int ret, const char *fmt, ...)
{
	va_list ap;

	if (c->why && c->whylen) {
		va_start(ap, fmt);
		vsnprintf(c->why, c->whylen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

/* every read of resolve goes through here: counted */
static int crd(struct ctx *c, uint64_t base, int64_t off, void *buf, size_t len)
{
	if (--c->budget < 0)
		return -E2BIG;
	return rdo(c->m, base, off, buf, len);
}

static int crd64(struct ctx *c, uint64_t base, int64_t off, uint64_t *v)
{
	return crd(c, base, off, v, sizeof(*v));
}

/* A C string into buf (NUL-terminated, cut to len - 1), read in aligned
 * 8-byte pieces so a read never crosses into an unmapped page the
 * string does not reach. For messages: anything but printable ASCII
 * becomes '?', so a target's bytes cannot break a one-line reason. */
static int read_cstr(struct ctx *c, uint64_t addr, char *buf, size_t len)
{
	size_t o = 0;
	int e;

	buf[0] = 0;
	while (o + 1 < len) {
		uint8_t piece[8];
		size_t n = 8 - ((addr + o) & 7), k;

		if ((e = crd(c, addr + o, 0, piece, n)))
			return o ? 0 : e;
		for (k = 0; k < n && o + 1 < len; k++) {
			if (!piece[k]) {
				buf[o] = 0;
				return 0;
			}
			buf[o++] = piece[k] < 0x20 || piece[k] >= 0x7f ? '?' : (char)piece[k];
		}
	}
	buf[o] = 0;
	return 0;
}

/* the C string at addr is exactly s */
static bool cstr_is(struct ctx *c, uint64_t addr, const char *s, size_t n)
{
	char buf[PT_PYATTR_NAME_MAX + 1];

	if (!addr || n > PT_PYATTR_NAME_MAX || crd(c, addr, 0, buf, n + 1))
		return false;
	return !memcmp(buf, s, n) && !buf[n];
}

static void type_name(struct ctx *c, uint64_t t, char *buf, size_t len)
{
	uint64_t p;

	if (crd64(c, t, c->L->type_name, &p) || !p || read_cstr(c, p, buf, len) || !buf[0])
		snprintf(buf, len, "type@0x%llx", (unsigned long long)t);
}

/* t is a static (C) type named name with the flag bits want */
static bool static_type_is(struct ctx *c, uint64_t t, const char *name, uint64_t want)
{
	uint64_t flags, p;

	if (!t || crd64(c, t, c->L->type_flags, &flags) || (flags & TPF_HEAPTYPE) ||
	    (flags & want) != want || crd64(c, t, c->L->type_name, &p))
		return false;
	return cstr_is(c, p, name, strlen(name));
}

/* obj's type is the builtin *cache (found and verified on first sight) */
static bool is_builtin(struct ctx *c, uint64_t obj, uint64_t *cache, const char *name,
		       uint64_t want)
{
	uint64_t t;

	if (!obj || crd64(c, obj, c->L->ob_type, &t))
		return false;
	if (*cache)
		return t == *cache;
	if (!static_type_is(c, t, name, want))
		return false;
	*cache = t;
	return true;
}

/* s is an exact str equal to c->name (compact ASCII); its interned state
 * and hash when so */
static bool str_is_name(struct ctx *c, uint64_t s, bool *interned, int64_t *hash)
{
	const struct pt_py_layout *L = c->L;
	char buf[PT_PYATTR_NAME_MAX];
	uint64_t length;
	uint32_t state;

	if (!is_builtin(c, s, &c->str_type, "str", TPF_UNICODE_SUBCLASS) ||
	    crd64(c, s, L->str_length, &length) || length != c->nlen ||
	    crd(c, s, L->str_state, &state, sizeof(state)))
		return false;
	/* compact (bit 5) and ascii (bit 6): the data follows the header */
	if (!((state >> 5) & 1) || !((state >> 6) & 1))
		return false;
	if (crd(c, s, L->ascii_size, buf, c->nlen) || memcmp(buf, c->name, c->nlen))
		return false;
	*interned = (state & 3) != 0;
	return !crd(c, s, L->str_hash, hash, sizeof(*hash));
}

/*
 * Entries of a keys object (with values: a split table) for the name, by
 * content (want 0) or the key object want. 1 with *ix, *key, *value (the
 * value may be 0), 0 when absent, -errno.
 */
static int keys_find(struct ctx *c, uint64_t keys, uint64_t values, uint64_t want, int64_t *ix,
		     uint64_t *key, uint64_t *value, bool *interned, int64_t *hash)
{
	struct keys_geom g;
	uint64_t i, e[3];

	if (c->budget <= 0)
		return -E2BIG;
	if (keys_geom(c->m, c->L, keys, &g) != PT_PYATTR_OK)
		return -EINVAL;
	/* the first PT_PYATTR_SCAN_MAX entries only: names set early (in
	 * __init__) come first */
	for (i = 0; i < g.nentries && i < (c->scan_max ? c->scan_max : PT_PYATTR_SCAN_MAX); i++) {
		uint64_t k;

		if (crd(c, g.entries + i * g.esize, 0, e, g.esize))
			return -EFAULT;
		k = g.esize == 24 ? e[1] : e[0];
		if (!k)
			continue; /* deleted */
		if (want ? k != want : !str_is_name(c, k, interned, hash))
			continue;
		*ix = (int64_t)i;
		*key = k;
		if (!values)
			*value = g.esize == 24 ? e[2] : e[1];
		else if (crd64(c, values, (int64_t)c->L->values_items + (int64_t)i * 8, value))
			return -EFAULT;
		return 1;
	}
	return 0;
}

/* the name in the dict at dict: as keys_find() */
static int dict_find(struct ctx *c, uint64_t dict, uint64_t *key, uint64_t *value, bool *interned,
		     int64_t *hash)
{
	uint64_t keys, values;
	int64_t ix;

	if (!is_builtin(c, dict, &c->dict_type, "dict", TPF_DICT_SUBCLASS))
		return -EINVAL;
	if (crd64(c, dict, c->L->dict_keys, &keys) || crd64(c, dict, c->L->dict_values, &values))
		return -EFAULT;
	return keys_find(c, keys, values, 0, &ix, key, value, interned, hash);
}

/* What _PyType_Lookup() finds for the name along the MRO. */
enum { F_NONE, F_DICT, F_MEMBER, F_GETSET, F_METHOD };
struct found {
	int where;	/* F_* */
	uint64_t owner; /* the MRO type that has it */
	uint64_t obj;	/* F_DICT: the value; F_MEMBER: its PyMemberDef */
	uint64_t key;	/* F_DICT: the dict's key object */
	bool interned;	/* ... and whether it is interned */
	int64_t hash;
};

/* One of a static type's C arrays: the entry named c->name. */
static int defs_find(struct ctx *c, uint64_t t, unsigned int field, size_t esize, uint64_t *at)
{
	uint64_t arr, name;
	size_t i;

	if (crd64(c, t, field, &arr))
		return -EFAULT;
	for (i = 0; arr && i < DEFS_MAX; i++) {
		if (crd64(c, arr + i * esize, 0, &name))
			return -EFAULT;
		if (!name)
			return 0;
		if (cstr_is(c, name, c->name, c->nlen)) {
			*at = arr + i * esize;
			return 1;
		}
	}
	return 0;
}

/*
 * _PyType_Lookup(): the first MRO type whose dict has the name, among
 * the first n. Static builtin types on 3.12+ keep their dict in the
 * interpreter (tp_dict NULL): for those the C arrays that made it are
 * searched (members and getsets, the data descriptors, and methods).
 */
static int mro_lookup(struct ctx *c, size_t n, struct found *f)
{
	size_t i;
	int e;

	memset(f, 0, sizeof(*f));
	for (i = 0; i < n; i++) {
		uint64_t t = c->mro[i], dict, flags;

		if (crd64(c, t, c->L->type_dict, &dict) || crd64(c, t, c->L->type_flags, &flags))
			return -EFAULT;
		f->owner = t;
		if (dict) {
			e = dict_find(c, dict, &f->key, &f->obj, &f->interned, &f->hash);
			if (e < 0)
				return e;
			if (e) {
				if (!f->obj)
					return -EINVAL; /* a NULL value in a type dict */
				f->where = F_DICT;
				return 0;
			}
			continue;
		}
		if (flags & TPF_HEAPTYPE)
			return -EINVAL; /* a heap type always has its dict */
		f->where = F_MEMBER;
		e = defs_find(c, t, c->L->type_members, MEMBERDEF_SIZE, &f->obj);
		if (!e) {
			f->where = F_GETSET;
			e = defs_find(c, t, c->L->type_getset, GETSETDEF_SIZE, &f->obj);
		}
		if (!e) {
			f->where = F_METHOD;
			e = defs_find(c, t, c->L->type_methods, METHODDEF_SIZE, &f->obj);
		}
		if (e)
			return e < 0 ? e : 0;
		f->where = F_NONE;
	}
	f->owner = 0;
	return 0;
}

static bool in_mro(struct ctx *c, uint64_t t)
{
	for (size_t i = 0; i < c->nmro; i++)
		if (c->mro[i] == t)
			return true;
	return false;
}

/* A PyMemberDef of the MRO (from a member descriptor or a static
 * type's tp_members): a slot when it holds an object. */
static int member_slot(struct ctx *c, uint64_t def, uint64_t dtype, struct pt_pyattr_loc *loc)
{
	int32_t mtype, mflags;
	int64_t off;

	if (crd(c, def, MEMBERDEF_TYPE, &mtype, 4) || crd(c, def, MEMBERDEF_FLAGS, &mflags, 4) ||
	    crd(c, def, MEMBERDEF_OFFSET, &off, 8))
		return say(c, -EFAULT, "%s.%s: cannot read its PyMemberDef", c->tname, c->name);
	if (!in_mro(c, dtype))
		return say(c, -EOPNOTSUPP,
			   "%s.%s is a member descriptor of another type (not in the MRO)",
			   c->tname, c->name);
	if (mtype != T_OBJECT && mtype != T_OBJECT_EX)
		return say(c, -EOPNOTSUPP,
			   "%s.%s is a C member of type code %d, not an object: not readable",
			   c->tname, c->name, mtype);
	if (c->L->minor >= 12 && (mflags & RELATIVE_OFFSET))
		return say(c, -EOPNOTSUPP, "%s.%s: a member with a relative offset", c->tname,
			   c->name);
	/* after ob_refcnt and ob_type, inside the fixed part */
	if (off < 16 || (uint64_t)off + 8 > c->basicsize)
		return say(c, -EINVAL, "%s.%s: member offset %lld outside the object (%llu bytes)",
			   c->tname, c->name, (long long)off, (unsigned long long)c->basicsize);
	loc->kind = PT_PYATTR_K_SLOT;
	loc->off = off;
	if (mtype == T_OBJECT)
		loc->flags |= PT_PYATTR_F_NONE_IF_NULL;
	return say(c, 0, "%s.%s: slot at +%lld (%s)", c->tname, c->name, (long long)off,
		   mtype == T_OBJECT ? "T_OBJECT" : "T_OBJECT_EX");
}

/* tp_getattro other than object's: only a Python __getattr__ keeps the
 * generic lookup (slot_tp_getattr_hook runs it first). */
static int check_getattro(struct ctx *c, struct pt_pyattr_loc *loc)
{
	uint64_t mine, generic;
	struct found f;
	const char *saved = c->name;
	size_t saved_n = c->nlen;
	int e;

	if (crd64(c, c->type, c->L->type_getattro, &mine) ||
	    crd64(c, c->mro[c->nmro - 1], c->L->type_getattro, &generic))
		return say(c, -EFAULT, "%s: cannot read tp_getattro", c->tname);
	if (mine == generic)
		return 0;
	c->name = "__getattribute__";
	c->nlen = strlen(c->name);
	e = mro_lookup(c, c->nmro - 1, &f); /* object's own does not count */
	if (!e && f.where) {
		char owner[80];

		c->name = saved;
		c->nlen = saved_n;
		type_name(c, f.owner, owner, sizeof(owner));
		return say(c, -EOPNOTSUPP, "%s.%s: %s defines __getattribute__: not readable",
			   c->tname, c->name, owner);
	}
	if (!e) {
		c->name = "__getattr__";
		c->nlen = strlen(c->name);
		e = mro_lookup(c, c->nmro - 1, &f);
	}
	c->name = saved;
	c->nlen = saved_n;
	if (e)
		return say(c, e, "%s: cannot look up __getattribute__/__getattr__", c->tname);
	if (!f.where || f.where != F_DICT)
		return say(c, -EOPNOTSUPP, "%s.%s: %s has its own C tp_getattro: not readable",
			   c->tname, c->name, c->tname);
	loc->flags |= PT_PYATTR_F_GETATTR;
	return 0;
}

/* The interned name among the names and constants of the code of
 * functions in the MRO's dicts (`self.x = ...` in a method puts it
 * there). 1 with *key, *hash; 0; -errno. */
static int key_from_code(struct ctx *c, uint64_t *key, int64_t *hash)
{
	const struct pt_py_layout *L = c->L;

	for (size_t t = 0; t + 1 < c->nmro; t++) {
		uint64_t dict, keys, values;
		struct keys_geom g;

		if (crd64(c, c->mro[t], L->type_dict, &dict))
			return -EFAULT;
		if (!dict || !is_builtin(c, dict, &c->dict_type, "dict", TPF_DICT_SUBCLASS) ||
		    crd64(c, dict, L->dict_keys, &keys) || crd64(c, dict, L->dict_values, &values))
			continue;
		if (values || keys_geom(c->m, L, keys, &g) != PT_PYATTR_OK ||
		    g.nentries > PT_PYATTR_SCAN_MAX)
			continue; /* type dicts are combined and small */
		for (uint64_t i = 0; i < g.nentries; i++) {
			uint64_t e[3], fn, code;

			if (crd(c, g.entries + i * g.esize, 0, e, g.esize))
				return -EFAULT;
			fn = g.esize == 24 ? e[2] : e[1];
			if (!is_builtin(c, fn, &c->func_type, "function", 0) ||
			    crd64(c, fn, L->func_code, &code) ||
			    !is_builtin(c, code, &c->code_type, "code", 0))
				continue;
			for (int k = 0; k < 2; k++) {
				uint64_t tup, n, item;

				if (crd64(c, code, k ? L->code_consts : L->code_names, &tup) ||
				    crd64(c, tup, L->tuple_size, &n) || n > PT_PYATTR_SCAN_MAX)
					continue;
				for (uint64_t j = 0; j < n; j++) {
					bool interned;

					if (crd64(c, tup, L->tuple_item + j * 8, &item))
						break;
					if (str_is_name(c, item, &interned, hash) && interned) {
						*key = item;
						return 1;
					}
				}
			}
			if (c->budget <= 0)
				return -E2BIG;
		}
	}
	return 0;
}

/* The instance dict's kind for this type, from its flags. */
static int dict_kind(struct ctx *c, struct pt_pyattr_loc *loc)
{
	const struct pt_py_layout *L = c->L;

	if (L->tpf_managed_dict && (c->flags & L->tpf_managed_dict)) {
		switch (L->idict) {
		case PT_PY_IDICT_VALUES:
			loc->kind = PT_PYATTR_K_MANAGED_311;
			return 0;
		case PT_PY_IDICT_TAGGED:
			loc->kind = PT_PYATTR_K_MANAGED_312;
			return 0;
		case PT_PY_IDICT_INLINE:
			if (L->tpf_inline_values && (c->flags & L->tpf_inline_values)) {
				loc->kind = PT_PYATTR_K_INLINE_313;
				loc->off = (int64_t)c->basicsize;
			} else {
				loc->kind = PT_PYATTR_K_MANAGED_313;
			}
			return 0;
		default:
			return say(c, -EINVAL, "managed dicts on a layout that has none");
		}
	}
	if (c->dictoffset > 0) {
		if ((uint64_t)c->dictoffset + 8 > c->basicsize)
			return say(c, -EINVAL, "%s: tp_dictoffset %lld outside the object",
				   c->tname, (long long)c->dictoffset);
		loc->kind = PT_PYATTR_K_DICTPTR;
		loc->off = c->dictoffset;
		return 0;
	}
	if (c->dictoffset < 0)
		return say(c, -EOPNOTSUPP,
			   "%s.%s: instances are var-sized, their dict follows the items "
			   "(tp_dictoffset %lld): not supported",
			   c->tname, c->name, (long long)c->dictoffset);
	return 0;
}

static const char *kind_str(uint8_t kind)
{
	switch (kind) {
	case PT_PYATTR_K_DICTPTR:
		return "dict at tp_dictoffset";
	case PT_PYATTR_K_MANAGED_311:
		return "managed values or dict (3.11)";
	case PT_PYATTR_K_MANAGED_312:
		return "managed values or dict (3.12)";
	case PT_PYATTR_K_INLINE_313:
		return "inline values or managed dict (3.13)";
	case PT_PYATTR_K_MANAGED_313:
		return "managed dict (3.13)";
	}
	return "?";
}

/* The key is known: its index in the shared keys, the rest of loc. */
static int finish_dict(struct ctx *c, struct pt_pyattr_loc *loc, uint64_t key, int64_t hash)
{
	uint64_t k, v;
	int64_t ix;
	bool interned;
	int e;

	if (hash == -1)
		return say(c, -EAGAIN, "%s.%s: the name's hash is not computed yet", c->tname,
			   c->name);
	loc->key = key;
	loc->hash = hash;
	if (loc->shared_keys) {
		e = keys_find(c, loc->shared_keys, 0, key, &ix, &k, &v, &interned, &hash);
		if (e < 0)
			return say(c, e, "%s: cannot read its shared keys 0x%llx", c->tname,
				   (unsigned long long)loc->shared_keys);
		if (e)
			loc->index = (int32_t)ix;
	}
	loc->dict_type = c->dict_type;
	return say(c, 0, "%s.%s: %s, key 0x%llx, shared keys 0x%llx index %d%s%s", c->tname,
		   c->name, kind_str(loc->kind), (unsigned long long)key,
		   (unsigned long long)loc->shared_keys, loc->index,
		   (loc->flags & PT_PYATTR_F_CLASS) ? ", class attribute behind it" : "",
		   (loc->flags & PT_PYATTR_F_GETATTR) ? ", __getattr__ when missing" : "");
}

static int resolve(struct ctx *c, uint64_t type_addr, struct pt_pyattr_loc *loc)
{
	const struct pt_py_layout *L = c->L;
	uint64_t tup, n, key = 0;
	int64_t hash = -1, ix;
	struct found f;
	bool class_attr = false, interned, ok;
	int e;

	memset(loc, 0, sizeof(*loc));
	loc->index = -1;
	loc->type = type_addr;
	c->type = type_addr;
	c->budget = READ_BUDGET;
	ok = c->nlen && c->nlen <= PT_PYATTR_NAME_MAX;
	for (size_t i = 0; ok && i < c->nlen; i++)
		ok = c->name[i] > ' ' && c->name[i] < 0x7f;
	if (!ok)
		return say(c, -EINVAL, "attribute names are 1-%d printable ASCII characters",
			   PT_PYATTR_NAME_MAX);
	type_name(c, type_addr, c->tname, sizeof(c->tname));
	if (crd64(c, type_addr, L->type_flags, &c->flags) ||
	    crd64(c, type_addr, L->type_basicsize, &c->basicsize) ||
	    crd64(c, type_addr, L->type_dictoffset, (uint64_t *)&c->dictoffset) ||
	    crd64(c, type_addr, L->type_mro, &tup) || crd64(c, tup, L->tuple_size, &n))
		return say(c, -EFAULT, "type at 0x%llx: cannot read it",
			   (unsigned long long)type_addr);
	if (c->basicsize < 16 || c->basicsize > (1u << 20))
		return say(c, -EINVAL, "%s: implausible tp_basicsize %llu", c->tname,
			   (unsigned long long)c->basicsize);
	if (n < 1 || n > PT_PYATTR_MRO_MAX)
		return say(c, -EINVAL, "%s: an MRO of %llu types (at most %d)", c->tname,
			   (unsigned long long)n, PT_PYATTR_MRO_MAX);
	c->nmro = n;
	for (size_t i = 0; i < n; i++)
		if (crd64(c, tup, L->tuple_item + i * 8, &c->mro[i]) || !c->mro[i])
			return say(c, -EFAULT, "%s: cannot read its MRO", c->tname);
	if (c->mro[0] != type_addr)
		return say(c, -EINVAL, "%s: its MRO does not start with it", c->tname);

	if ((e = check_getattro(c, loc)))
		return e;
	if ((e = mro_lookup(c, c->nmro, &f)))
		return say(c, e, "%s.%s: cannot read the MRO's dicts", c->tname, c->name);

	if (f.where) {
		uint64_t dtype = 0, def = 0, dset = 0;
		char what[80] = "descriptor";

		if (f.where == F_DICT) {
			if (crd64(c, f.obj, L->ob_type, &dtype))
				return say(c, -EFAULT, "%s.%s: cannot read it", c->tname, c->name);
			if (static_type_is(c, dtype, "member_descriptor", 0)) {
				if (crd64(c, f.obj, L->descr_member, &def) ||
				    crd64(c, f.obj, L->descr_type, &dtype))
					return say(c, -EFAULT, "%s.%s: cannot read the member",
						   c->tname, c->name);
			} else {
				if (crd64(c, dtype, L->type_descr_set, &dset))
					return say(c, -EFAULT, "%s.%s: cannot read its type",
						   c->tname, c->name);
				type_name(c, dtype, what, sizeof(what));
			}
		} else if (f.where == F_MEMBER) {
			def = f.obj;
			dtype = f.owner;
		} else if (f.where == F_GETSET) {
			dset = 1;
			snprintf(what, sizeof(what), "getset_descriptor");
		}
		if (def)
			return member_slot(c, def, dtype, loc);
		if (dset) {
			char owner[80];

			type_name(c, f.owner, owner, sizeof(owner));
			return say(c, -EOPNOTSUPP,
				   "%s.%s is a %s of %s: computed on access, not stored", c->tname,
				   c->name, what, owner);
		}
		/* a method or class variable: the instance's dict comes first */
		class_attr = true;
		if (f.where == F_DICT && f.interned) {
			key = f.key;
			hash = f.hash;
		}
	}

	if ((e = dict_kind(c, loc)))
		return e;
	if (!loc->kind) {
		if (class_attr)
			return say(c, -EOPNOTSUPP,
				   "%s.%s is a class attribute (instances have no __dict__): not "
				   "per instance",
				   c->tname, c->name);
		if (loc->flags & PT_PYATTR_F_GETATTR)
			return say(c, -EOPNOTSUPP, "%s.%s: not stored; its __getattr__ computes it",
				   c->tname, c->name);
		return say(c, -ENOENT, "%s has no member %s and its instances have no __dict__",
			   c->tname, c->name);
	}
	if (class_attr)
		loc->flags |= PT_PYATTR_F_CLASS;
	/* type dicts are exact dicts: one read of the type's own gives
	 * &PyDict_Type when the MRO walk did not meet one */
	if (!c->dict_type) {
		uint64_t dict;

		if (!crd64(c, type_addr, L->type_dict, &dict))
			is_builtin(c, dict, &c->dict_type, "dict", TPF_DICT_SUBCLASS);
	}
	if (c->flags & TPF_HEAPTYPE) {
		uint64_t keys;

		if (crd64(c, type_addr, L->ht_cached_keys, &keys))
			return say(c, -EFAULT, "%s: cannot read ht_cached_keys", c->tname);
		loc->shared_keys = keys;
	}
	if (!loc->shared_keys && loc->kind != PT_PYATTR_K_DICTPTR &&
	    loc->kind != PT_PYATTR_K_MANAGED_313)
		return say(c, -EINVAL, "%s: a managed dict without shared keys", c->tname);

	/* the key: from the type's dict, its shared keys, its code */
	if (!key && loc->shared_keys) {
		uint64_t k, v;

		e = keys_find(c, loc->shared_keys, 0, 0, &ix, &k, &v, &interned, &hash);
		if (e < 0)
			return say(c, e, "%s: cannot read its shared keys 0x%llx", c->tname,
				   (unsigned long long)loc->shared_keys);
		if (e && interned)
			key = k;
	}
	if (!key) {
		e = key_from_code(c, &key, &hash);
		if (e < 0)
			return say(c, e, "%s: cannot read the code of its functions", c->tname);
	}
	if (!key)
		return say(c, -EAGAIN,
			   "%s.%s: no interned '%s' found (not a class attribute, not in the "
			   "shared keys, not named by the class's code); retry once an instance "
			   "has it",
			   c->tname, c->name, c->name);
	return finish_dict(c, loc, key, hash);
}

int pt_pyattr__resolve(const struct pt_tmem *m, const struct pt_py_layout *L, uint64_t type_addr,
		       const char *name, struct pt_pyattr_loc *loc, char *why, size_t whylen)
{
	struct ctx c = { .m = m, .L = L, .name = name ? name : "", .why = why, .whylen = whylen };

	int e;

	if (why && whylen)
		why[0] = 0;
	c.nlen = strlen(c.name);
	e = resolve(&c, type_addr, loc);
	if (c.budget < 0)
		e = say(&c, -E2BIG, "%s.%s: gave up after %d reads of the type and its MRO",
			c.tname, c.name, READ_BUDGET);
	return e;
}

int pt_pyattr__resolve_obj(const struct pt_tmem *m, const struct pt_py_layout *L, uint64_t obj,
			   const char *name, struct pt_pyattr_loc *loc, char *why, size_t whylen)
{
	struct ctx c = { .m = m, .L = L, .name = name ? name : "", .why = why, .whylen = whylen };
	uint64_t type, keys, values, dict, key, v;
	int64_t ix, hash;
	bool interned;
	int cap, e;

	if (why && whylen)
		why[0] = 0;
	c.nlen = strlen(c.name);
	if (rd64(m, obj, L->ob_type, &type))
		return say(&c, -EFAULT, "object at 0x%llx: cannot read its type",
			   (unsigned long long)obj);
	e = resolve(&c, type, loc);
	if (c.budget < 0)
		return say(&c, -E2BIG, "%s.%s: gave up after %d reads of the type and its MRO",
			   c.tname, c.name, READ_BUDGET);
	if (e != -EAGAIN || !loc->kind)
		return e;
	/* the instance's own keys (any str equal to the name: its dict holds
	 * that very object) */
	if (locate(m, L, loc, obj, &keys, &values, &cap, &dict) != PT_PYATTR_OK)
		return e; /* why still says what resolve() found */
	c.budget = READ_BUDGET;
	if (dict && !c.dict_type)
		is_builtin(&c, dict, &c.dict_type, "dict", TPF_DICT_SUBCLASS);
	if (keys_find(&c, keys, values, 0, &ix, &key, &v, &interned, &hash) != 1 || c.budget < 0)
		return e;
	if (!interned)
		return say(&c, -EAGAIN,
			   "%s.%s: the instance's key is a str that is not interned: other "
			   "instances hold other objects",
			   c.tname, c.name);
	return finish_dict(&c, loc, key, hash);
}

/* ---- objects that are not attributes ---- */

static int ascii_name_ok(const char *name, size_t n)
{
	if (!n || n > PT_PYATTR_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (name[i] <= ' ' || name[i] >= 0x7f)
			return 0;
	return 1;
}

int pt_pyattr__dict_get(const struct pt_tmem *m, const struct pt_py_layout *L, uint64_t dict,
			const char *name, size_t max, uint64_t *value)
{
	struct ctx c = { .m = m, .L = L, .name = name, .budget = READ_BUDGET, .scan_max = max };
	uint64_t key;
	int64_t hash;
	bool interned;
	int e;

	*value = 0;
	c.nlen = name ? strlen(name) : 0;
	if (!ascii_name_ok(name, c.nlen) || !max)
		return -EINVAL;
	e = dict_find(&c, dict, &key, value, &interned, &hash);
	if (c.budget < 0)
		return -E2BIG;
	if (e == 1 && !*value)
		return 0; /* deleted from a split table */
	return e;
}

int pt_pyattr__dict_values(const struct pt_tmem *m, const struct pt_py_layout *L, uint64_t dict,
			   uint64_t *values, size_t max, size_t *n)
{
	struct ctx c = { .m = m, .L = L, .budget = READ_BUDGET };
	uint64_t keys, vals, i, e[3], v;
	struct keys_geom g;

	*n = 0;
	if (!is_builtin(&c, dict, &c.dict_type, "dict", TPF_DICT_SUBCLASS))
		return -EINVAL;
	if (crd64(&c, dict, L->dict_keys, &keys) || crd64(&c, dict, L->dict_values, &vals))
		return -EFAULT;
	if (keys_geom(m, L, keys, &g) != PT_PYATTR_OK)
		return -EINVAL;
	for (i = 0; i < g.nentries && *n < max; i++) {
		if (crd(&c, g.entries + i * g.esize, 0, e, g.esize))
			return c.budget < 0 ? -E2BIG : -EFAULT;
		if (!(g.esize == 24 ? e[1] : e[0]))
			continue; /* deleted */
		if (!vals)
			v = g.esize == 24 ? e[2] : e[1];
		else if (crd64(&c, vals, (int64_t)L->values_items + (int64_t)i * 8, &v))
			return c.budget < 0 ? -E2BIG : -EFAULT;
		if (v)
			values[(*n)++] = v;
	}
	return 0;
}

int pt_pyattr__int(const struct pt_tmem *m, const struct pt_py_layout *L, uint64_t obj, int64_t *v)
{
	struct ctx c = { .m = m, .L = L, .budget = READ_BUDGET };
	uint64_t size, ndig;
	uint32_t d[2] = { 0, 0 };
	bool neg;

	*v = 0;
	if (!is_builtin(&c, obj, &c.int_type, "int", TPF_LONG_SUBCLASS))
		return -EINVAL;
	/* PyLongObject: ob_size (digits, signed) before 3.12, lv_tag after
	 * (digits << 3 | sign: 0 positive, 1 zero, 2 negative); 30-bit
	 * digits at 24 on every version (gdb) */
	if (rd64(m, obj, 16, &size))
		return -EFAULT;
	if (L->long_tag) {
		if ((size & 3) == 3)
			return -EINVAL;
		neg = (size & 3) == 2;
		ndig = size >> 3;
	} else {
		neg = (int64_t)size < 0;
		ndig = neg ? -size : size;
	}
	if (ndig > 2)
		return -EINVAL;
	if (ndig && rdo(m, obj, 24, d, ndig * 4))
		return -EFAULT;
	if ((d[0] >> 30) || (d[1] >> 30))
		return -EINVAL;
	*v = (int64_t)((uint64_t)d[1] << 30 | d[0]);
	if (neg)
		*v = -*v;
	return 0;
}
