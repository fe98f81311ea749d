/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Values read at a call (tokens=, kv_len=, batch=, count: docs/targets.md
 * "Tokens and sequence lengths"): integer arguments and return values of
 * native functions, and Python objects (ints, lengths, lists of ints, one
 * attribute level) of py: functions, read in BPF at the probe so the value
 * is the one of that call. Included by proftrace.bpf.c (after its ring,
 * counters and rb_flags()); every offset comes from the process's
 * struct pt_py_offsets.
 */
#ifndef PT_VALUES_BPF_H
#define PT_VALUES_BPF_H

/* fid -> the expressions to read at its calls (struct pt_val_spec). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct pt_val_spec);
} val_specs SEC(".maps");

/* (type, fid, expression) -> where objects of that type keep the
 * attribute (struct pt_pyattr_loc); kind NONE: not readable or being
 * found (vst says which). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct pt_attr_key);
	__type(value, struct pt_pyattr_loc);
} attr_locs SEC(".maps");

/* A value record is built here (it is too big for the stack) and copied
 * into the ring with its used length. One slot per CPU, indexed by CPU:
 * a per-CPU array cannot hold values above 32 KiB, and uprobe programs
 * run with migration disabled, so the slot is ours until we return. */
struct val_buf {
	struct pt_rec_vals r;
	__s64 elem[PT_VAL_MAX_ELEMS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* set to the number of possible CPUs */
	__type(key, __u32);
	__type(value, struct val_buf);
} val_scratch SEC(".maps");

/*
 * ---- Values read at a call (tokens, kv_len, batch: issue 7) ----
 *
 * Python objects are recognised by their type's tp_flags (the *_SUBCLASS
 * bits are the same on 3.8-3.14), so subclasses (bool,
 * IntEnum, a list subclass) read like their base. Every read can fail;
 * a failure is a status in the record, never a guessed value.
 */
#define TPF_LONG (1ULL << 24)
#define TPF_LIST (1ULL << 25)
#define TPF_TUPLE (1ULL << 26)
#define TPF_BYTES (1ULL << 27)
#define TPF_UNICODE (1ULL << 28)
#define TPF_DICT (1ULL << 29)
/* |element| limit, so 4096 of them cannot overflow the sum. */
#define ELEM_LIMIT (1LL << 50)

/* The head of any object, as an int sees it: ob_size (or lv_tag, or a
 * list's/str's/dict's length) at 16, the first two 30-bit digits at 24
 * (a list's ob_item pointer there). */
struct py_head {
	__u64 refcnt;
	__u64 type;
	__s64 size;
	__u32 d[2];
};

static __always_inline __u16 long_value(const struct py_head *h, bool tag, __s64 *out)
{
	__u64 ndig, mag = 0;
	bool neg;

	if (tag) { /* 3.12+: digits << 3 | sign (0 +, 1 zero, 2 -) */
		ndig = (__u64)h->size >> 3;
		neg = (h->size & 3) == 2;
	} else {
		neg = h->size < 0;
		ndig = neg ? -(__u64)h->size : (__u64)h->size;
	}
	if (ndig > 2)
		return PT_VST_RANGE;
	if (ndig >= 1)
		mag = h->d[0];
	if (ndig == 2)
		mag |= (__u64)h->d[1] << 30;
	*out = neg ? -(__s64)mag : (__s64)mag;
	return PT_VST_OK;
}

struct elems_ctx {
	__u64 items;	  /* the item array */
	__u64 int_type;	  /* last type found to be an int type */
	__u32 type_flags; /* PyTypeObject.tp_flags */
	bool long_tag;
	__s64 sum, min, max;
	__u32 n;
	__u16 status;
	bool keep; /* store elements in val_scratch */
};

static long elem_cb(__u64 i, void *data)
{
	struct elems_ctx *c = data;
	struct py_head h;
	__u64 item, flags;
	__u32 cpu = bpf_get_smp_processor_id();
	struct val_buf *b;
	__s64 x;
	__u16 st;

	if (bpf_probe_read_user(&item, sizeof(item), (void *)(c->items + i * 8)) || !item ||
	    bpf_probe_read_user(&h, sizeof(h), (void *)item)) {
		c->status = PT_VST_FAULT;
		return 1;
	}
	if (h.type != c->int_type) {
		if (bpf_probe_read_user(&flags, sizeof(flags), (void *)(h.type + c->type_flags))) {
			c->status = PT_VST_FAULT;
			return 1;
		}
		if (!(flags & TPF_LONG)) {
			c->status = PT_VST_TYPE;
			return 1;
		}
		c->int_type = h.type;
	}
	st = long_value(&h, c->long_tag, &x);
	if (!st && (x >= ELEM_LIMIT || x <= -ELEM_LIMIT))
		st = PT_VST_RANGE;
	if (st) {
		c->status = st;
		return 1;
	}
	if (!c->n || x < c->min)
		c->min = x;
	if (!c->n || x > c->max)
		c->max = x;
	c->sum += x;
	if (c->keep) {
		b = bpf_map_lookup_elem(&val_scratch, &cpu);
		if (b)
			b->elem[i & (PT_VAL_MAX_ELEMS - 1)] = x;
	}
	c->n++;
	return 0;
}

/* Read the Python object at obj as op says into v; *nelem: elements
 * stored (PT_VOP_ELEMS). A global function: the verifier checks it once
 * on its own, not again at each call with the caller's state. */
__noinline int pt_read_obj(const struct pt_py_offsets *L, __u64 obj, __u32 op, struct pt_val *v,
			   __u32 *nelem)
{
	struct elems_ctx c = {};
	struct py_head h;
	__u64 flags;
	__s64 n;

	if (!L || !v || !nelem)
		return 0;
	c.type_flags = L->type_flags;
	c.long_tag = L->long_tag;
	if (!obj) {
		v->status = PT_VST_UNSET;
		return 0;
	}
	if (bpf_probe_read_user(&h, sizeof(h), (void *)obj) ||
	    bpf_probe_read_user(&flags, sizeof(flags), (void *)(h.type + L->type_flags))) {
		v->status = PT_VST_FAULT;
		return 0;
	}
	if (op == PT_VOP_LEN) {
		/* ob_size, PyASCIIObject.length and ma_used all sit at 16 */
		if (!(flags & (TPF_LIST | TPF_TUPLE | TPF_BYTES | TPF_UNICODE | TPF_DICT)) ||
		    h.size < 0) {
			v->status = PT_VST_TYPE;
			return 0;
		}
		v->v = h.size;
		v->kind = PT_VKIND_SCALAR;
		return 0;
	}
	if (flags & TPF_LONG) {
		if (op != PT_VOP_INT && op != PT_VOP_AUTO && op != PT_VOP_AUTO_ELEMS) {
			v->status = PT_VST_TYPE;
			return 0;
		}
		v->status = long_value(&h, L->long_tag, &v->v);
		v->kind = PT_VKIND_SCALAR;
		return 0;
	}
	if (op == PT_VOP_INT || !(flags & (TPF_LIST | TPF_TUPLE)) || h.size < 0) {
		v->status = PT_VST_TYPE;
		return 0;
	}
	n = h.size;
	/* a list points at its items; a tuple holds them */
	c.items = (flags & TPF_LIST) ? *(__u64 *)h.d : obj + L->tuple_item;
	c.keep = op == PT_VOP_ELEMS || op == PT_VOP_AUTO_ELEMS;
	if (n > PT_VAL_MAX_ELEMS) {
		v->status = PT_VST_TRUNC;
		return 0;
	}
	bpf_loop((__u32)n, elem_cb, &c, 0);
	v->kind = PT_VKIND_LIST;
	v->status = c.status;
	v->v = c.sum;
	v->min = c.min;
	v->max = c.max;
	v->n = c.n;
	if (c.keep && !c.status)
		*nelem = c.n;
	return 0;
}

/*
 * ---- Attributes (user/pyattr.c: pt_pyattr__read() is this code's
 * reference, verified against every interpreter) ----
 */
#define DKIX_EMPTY (-1)
#define DKIX_DUMMY (-2)

enum { AT_OK, AT_MISSING, AT_FAULT, AT_UNDECIDED };

struct probe_ctx {
	__u64 indices, entries, mask, perturb, i, key, hash;
	__u64 nentries;
	__u32 ixw, esize;
	__u32 str_hash; /* PyASCIIObject.hash */
	__s64 found;
	int st;
};

/* One step of the dict's own probe sequence (lookdict). */
static long probe_cb(__u32 n, void *data)
{
	struct probe_ctx *c = data;
	__u64 e[3] = {}, ekey, ehash;
	__s64 ix;

	if (c->ixw == 1) {
		__s8 x;

		if (bpf_probe_read_user(&x, 1, (void *)(c->indices + c->i)))
			goto fault;
		ix = x;
	} else if (c->ixw == 2) {
		__s16 x;

		if (bpf_probe_read_user(&x, 2, (void *)(c->indices + c->i * 2)))
			goto fault;
		ix = x;
	} else {
		__s32 x;

		if (bpf_probe_read_user(&x, 4, (void *)(c->indices + c->i * 4)))
			goto fault;
		ix = x;
	}
	if (ix == DKIX_EMPTY) {
		c->st = AT_MISSING;
		return 1;
	}
	if (ix >= 0) {
		if ((__u64)ix >= c->nentries) {
			c->st = AT_UNDECIDED;
			return 1;
		}
		if (c->esize == 24) {
			if (bpf_probe_read_user(e, 24, (void *)(c->entries + (__u64)ix * 24)))
				goto fault;
			ekey = e[1];
			ehash = e[0];
		} else {
			if (bpf_probe_read_user(e, 16, (void *)(c->entries + (__u64)ix * 16)))
				goto fault;
			ekey = e[0];
			ehash = ~c->hash; /* a deleted entry: no key */
			if (ekey && ekey != c->key &&
			    bpf_probe_read_user(&ehash, 8, (void *)(ekey + c->str_hash)))
				goto fault;
		}
		if (ekey == c->key) {
			c->found = ix;
			c->st = AT_OK;
			return 1;
		}
		if (ehash == c->hash) { /* equal hash, another object: not decided */
			c->st = AT_UNDECIDED;
			return 1;
		}
	} else if (ix != DKIX_DUMMY) {
		c->st = AT_UNDECIDED;
		return 1;
	}
	c->perturb >>= 5;
	c->i = (c->i * 5 + c->perturb + 1) & c->mask;
	return 0;
fault:
	c->st = AT_FAULT;
	return 1;
}

/* The attribute loc of the object at obj: *out its value object. A
 * global function, checked once on its own (as pt_read_obj). */
__noinline int pt_read_attr(const struct pt_py_offsets *L, const struct pt_pyattr_loc *loc,
			    __u64 obj, __u64 *out)
{
	struct probe_ctx c = {};
	__u64 dict = 0, keys = 0, values = 0, w = 0, v = 0, d[6] = {};
	__u8 h[48] = {}, vh[4] = {};
	__u32 o_dkeys, o_dvalues, o_hdr, o_size, o_nent, o_log2, o_log2ix, o_kind;
	int cap = -1;
	__s64 n;

	if (!L || !loc || !out)
		return PT_VST_ATTR_UNREADABLE;
	c.str_hash = L->str_hash;
	/* The layout's offsets must fit the buffers they index (user space
	 * fills them from its table; checked here for the verifier). */
	o_dkeys = L->dict_keys;
	o_dvalues = L->dict_values;
	o_hdr = L->keys_hdr;
	o_size = L->keys_size;
	o_nent = L->keys_nentries;
	o_log2 = L->keys_log2;
	o_log2ix = L->keys_log2ix;
	o_kind = L->keys_kind;

	if (o_dkeys > 40 || o_dvalues > 40 || o_hdr > sizeof(h) || o_size > 40 || o_nent > 40 ||
	    o_log2 > 47 || o_log2ix > 47 || o_kind > 47)
		return PT_VST_ATTR_UNREADABLE;
	if (loc->kind == PT_PYATTR_K_SLOT) {
		if (bpf_probe_read_user(&v, 8, (void *)(obj + loc->off)))
			return PT_VST_FAULT;
		if (!v)
			return (loc->flags & PT_PYATTR_F_NONE_IF_NULL) ? PT_VST_TYPE
								       : PT_VST_ATTR_MISSING;
		*out = v;
		return PT_VST_OK;
	}
	/* 1. where this instance's attributes are */
	switch (loc->kind) {
	case PT_PYATTR_K_DICTPTR:
		if (bpf_probe_read_user(&dict, 8, (void *)(obj + loc->off)))
			return PT_VST_FAULT;
		break;
	case PT_PYATTR_K_MANAGED_311:
		if (bpf_probe_read_user(&values, 8, (void *)(obj + (__s64)L->managed_values)))
			return PT_VST_FAULT;
		if (!values &&
		    bpf_probe_read_user(&dict, 8, (void *)(obj + (__s64)L->managed_dict)))
			return PT_VST_FAULT;
		break;
	case PT_PYATTR_K_MANAGED_312:
		if (bpf_probe_read_user(&w, 8, (void *)(obj + (__s64)L->managed_dict)))
			return PT_VST_FAULT;
		if (w & 1)
			values = w + 1; /* stored as (char *)values - 1 */
		else
			dict = w;
		break;
	case PT_PYATTR_K_INLINE_313:
		if (bpf_probe_read_user(vh, 4, (void *)(obj + loc->off)))
			return PT_VST_FAULT;
		if (vh[3]) { /* valid */
			values = obj + loc->off;
			cap = vh[0];
		} else if (bpf_probe_read_user(&dict, 8, (void *)(obj + (__s64)L->managed_dict))) {
			return PT_VST_FAULT;
		}
		break;
	case PT_PYATTR_K_MANAGED_313:
		if (bpf_probe_read_user(&dict, 8, (void *)(obj + (__s64)L->managed_dict)))
			return PT_VST_FAULT;
		break;
	default:
		return PT_VST_ATTR_UNREADABLE;
	}
	if (values) {
		if (!loc->shared_keys)
			return PT_VST_ATTR_UNDECIDED;
		keys = loc->shared_keys;
	} else {
		if (!dict)
			return PT_VST_ATTR_MISSING; /* no attribute set yet */
		if (bpf_probe_read_user(d, sizeof(d), (void *)dict))
			return PT_VST_FAULT;
		if (loc->dict_type && d[1] != loc->dict_type) /* ob_type */
			return PT_VST_ATTR_UNDECIDED;
		keys = d[o_dkeys / 8];
		values = d[o_dvalues / 8];
		if (values && L->values_hdr) {
			if (bpf_probe_read_user(vh, 4, (void *)values))
				return PT_VST_FAULT;
			cap = vh[0];
		}
	}
	/* 2. the keys' geometry, from their header */
	if (bpf_probe_read_user(h, o_hdr, (void *)keys))
		return PT_VST_FAULT;
	c.indices = keys + o_hdr;
	if (o_size) {
		__s64 size = *(__s64 *)&h[o_size];

		if (size < 1 || size > (1LL << PT_PYATTR_LOG2_MAX) || (size & (size - 1)))
			return PT_VST_ATTR_UNDECIDED;
		c.mask = (__u64)size - 1;
		c.ixw = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
		c.entries = c.indices + (__u64)size * c.ixw;
		c.esize = 24;
	} else {
		__u8 lg = h[o_log2], lib = h[o_log2ix];
		__u8 kind = h[o_kind];

		if (lg > PT_PYATTR_LOG2_MAX || kind > 2)
			return PT_VST_ATTR_UNDECIDED;
		c.ixw = lg < 8 ? 1 : lg < 16 ? 2 : 4;
		if (lib != lg + (c.ixw == 1 ? 0 : c.ixw == 2 ? 1 : 2))
			return PT_VST_ATTR_UNDECIDED;
		c.mask = (1ULL << lg) - 1;
		c.entries = c.indices + (1ULL << (lib & 63));
		c.esize = kind == 0 ? 24 : 16;
	}
	n = *(__s64 *)&h[o_nent];
	if (n < 0 || (__u64)n > ((c.mask + 1) << 1) / 3)
		return PT_VST_ATTR_UNDECIDED;
	c.nentries = (__u64)n;
	c.key = loc->key;
	c.hash = (__u64)loc->hash;
	c.found = -1;
	c.st = AT_UNDECIDED; /* no answer within PT_PYATTR_PROBE_MAX probes */
	/* 3. the shared index: right while these are the type's keys */
	if (values && keys == loc->shared_keys && loc->index >= 0 &&
	    (__u64)loc->index < c.nentries) {
		if (bpf_probe_read_user(
			    &w, 8,
			    (void *)(c.entries + (__u64)loc->index * c.esize + c.esize - 16)))
			return PT_VST_FAULT;
		if (w == loc->key) {
			c.found = loc->index;
			c.st = AT_OK;
		}
	}
	/* 4. else the probe sequence */
	if (c.found < 0) {
		c.i = c.hash & c.mask;
		c.perturb = c.hash;
		bpf_loop(PT_PYATTR_PROBE_MAX, probe_cb, &c, 0);
	}
	if (c.st == AT_MISSING)
		return PT_VST_ATTR_MISSING;
	if (c.st == AT_FAULT)
		return PT_VST_FAULT;
	if (c.st != AT_OK || c.found < 0)
		return PT_VST_ATTR_UNDECIDED;
	/* 5. the value */
	if (values) {
		if (cap >= 0 && c.found >= cap)
			return PT_VST_ATTR_UNDECIDED;
		if (bpf_probe_read_user(&v, 8, (void *)(values + L->values_items + c.found * 8)))
			return PT_VST_FAULT;
	} else if (bpf_probe_read_user(&v, 8,
				       (void *)(c.entries + c.found * c.esize + c.esize - 8))) {
		return PT_VST_FAULT;
	}
	if (!v) /* deleted from a split table */
		return PT_VST_ATTR_MISSING;
	*out = v;
	return PT_VST_OK;
}

/* Ask user space where objects of this type keep expression k's
 * attribute; meanwhile the entry says "pending", so once is enough. */
static __always_inline void ask_attr(__u64 id, __u32 fid, __u32 k, __u64 type, __u64 obj,
				     const struct pt_attr_key *key)
{
	struct pt_pyattr_loc pend = { .kind = PT_PYATTR_K_NONE, .vst = PT_VST_ATTR_PENDING };
	struct pt_rec_attr *r;

	if (bpf_map_update_elem(&attr_locs, key, &pend, BPF_NOEXIST))
		return; /* another CPU asked first, or the map is full */
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		/* not a call record: a value one (lost calls are counted apart) */
		__sync_fetch_and_add(&counters.val_dropped, 1);
		bpf_map_delete_elem(&attr_locs, key); /* ask again next time */
		return;
	}
	r->type = PT_REC_ATTR;
	r->fid = fid;
	r->pid = id >> 32;
	r->tid = (__u32)id;
	r->obj_type = type;
	r->obj = obj;
	r->k = k;
	r->pad = 0;
	r->pad2 = 0;
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
}

/* Expression k's attribute of the object *obj, in place of it. */
static __always_inline __u16 attr_of(const struct pt_py_offsets *L, __u64 id, __u32 fid, __u32 k,
				     __u64 *obj)
{
	struct pt_attr_key key = { .fid = fid, .k = k };
	const struct pt_pyattr_loc *loc;

	if (!*obj)
		return PT_VST_UNSET;
	if (!L->keys_hdr)
		return PT_VST_ATTR_UNREADABLE;
	if (bpf_probe_read_user(&key.type, 8, (void *)(*obj + 8)))
		return PT_VST_FAULT;
	loc = bpf_map_lookup_elem(&attr_locs, &key);
	if (!loc) {
		ask_attr(id, fid, k, key.type, *obj, &key);
		return PT_VST_ATTR_PENDING;
	}
	if (loc->kind == PT_PYATTR_K_NONE)
		return loc->vst ? loc->vst : PT_VST_ATTR_PENDING;
	return (__u16)pt_read_attr(L, loc, *obj, obj);
}

/* Integer argument n (0..5) in the x86-64 SysV order. Read through a
 * helper: the compiler folds a switch over ctx fields into one load at a
 * variable offset from ctx, which the verifier refuses. */
static __always_inline __u64 reg_arg(struct pt_regs *ctx, __u8 n)
{
	static const __u16 off[6] = {
		__builtin_offsetof(struct pt_regs, di), __builtin_offsetof(struct pt_regs, si),
		__builtin_offsetof(struct pt_regs, dx), __builtin_offsetof(struct pt_regs, cx),
		__builtin_offsetof(struct pt_regs, r8), __builtin_offsetof(struct pt_regs, r9),
	};
	__u64 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), (char *)ctx + off[n < 6 ? n : 5]);
	return v;
}

static __always_inline __s64 cut(__u64 v, __u8 width)
{
	if (width == PT_VW_I32)
		return (__s32)v;
	if (width == PT_VW_U32)
		return (__u32)v;
	return (__s64)v;
}

/*
 * Read fid's expressions of one side of a call (entry: arguments; exit:
 * the return value) and send them, if it has any. frame and pc: the
 * Python frame and its py_codes entry (entry of a py: function).
 */
struct vals_req {
	__u64 id;      /* bpf_get_current_pid_tgid() */
	__u64 t_entry; /* of the call */
	__u64 frame;   /* py: entry: the frame, else 0 */
	__u64 ret;     /* at exit: the return value (register or object) */
	__u32 fid;
	__u32 at_exit;
};

/* One expression of a call, read by vals_cb. */
struct vals_loop {
	struct pt_regs *ctx;
	const struct pt_py_offsets *L;
	const struct pt_val_spec *sp;
	const struct pt_py_code *pc;
	struct val_buf *b;
	__u64 id, frame, rv;
	__u32 fid, nelem, need;
	bool at_exit;
};

/* Expression i: a bpf_loop callback, so the verifier goes through the
 * readers once instead of once per expression (they were most of the
 * time it took to load a program that reads values). */
static long vals_cb(__u64 i, struct vals_loop *c)
{
	const struct pt_val_spec *sp = c->sp;
	const struct pt_py_code *pc = c->pc;
	struct pt_val_expr e;
	struct pt_val *v;
	__u64 obj;
	bool ret;

	if (i >= PT_MAX_VALS)
		return 1;
	v = &c->b->r.v[i];
	e = sp->e[i];
	ret = e.src == PT_VSRC_RET || e.src == PT_VSRC_PYRET;
	v->v = v->min = v->max = 0;
	v->n = 0;
	v->kind = 0;
	v->status = PT_VST_UNREAD;
	if (i >= sp->n || ret != c->at_exit)
		return 0;
	c->need++;
	v->status = PT_VST_OK;
	switch (e.src) {
	case PT_VSRC_ARG:
		v->v = cut(reg_arg(c->ctx, e.argn), e.width);
		v->kind = PT_VKIND_SCALAR;
		break;
	case PT_VSRC_RET:
		v->v = cut(c->rv, e.width);
		v->kind = PT_VKIND_SCALAR;
		break;
	case PT_VSRC_PYRET:
		obj = c->rv;
		if (e.attr)
			v->status = attr_of(c->L, c->id, c->fid, i, &obj);
		if (!v->status)
			pt_read_obj(c->L, obj, e.op, v, &c->nelem);
		break;
	case PT_VSRC_PYARG:
		if (!pc || !c->L->frame_localsplus || pc->slot[i] < 0) {
			v->status = PT_VST_NONAME;
			break;
		}
		if (bpf_probe_read_user(&obj, sizeof(obj),
					(void *)(c->frame + c->L->frame_localsplus +
						 (__u64)(__u16)pc->slot[i] * 8))) {
			v->status = PT_VST_FAULT;
			break;
		}
		obj &= c->L->code_mask; /* 3.14: a tagged stack reference */
		if (e.attr && obj)
			v->status = attr_of(c->L, c->id, c->fid, i, &obj);
		if (!v->status)
			pt_read_obj(c->L, obj, e.op, v, &c->nelem);
		break;
	default:
		v->status = PT_VST_TYPE;
	}
	return 0;
}

/* A subprogram of its own (not inlined): its stack frame is apart from
 * the probe's, which the three expressions' reads would overflow. */
static __noinline void send_vals_req(struct pt_regs *ctx, const struct pt_py_offsets *L,
				     const struct vals_req *q, const struct pt_py_code *pc)
{
	struct vals_loop c = { .ctx = ctx,
			       .L = L,
			       .pc = pc,
			       .id = q->id,
			       .frame = q->frame,
			       .rv = q->ret,
			       .fid = q->fid,
			       .at_exit = q->at_exit };
	__u32 cpu = bpf_get_smp_processor_id(), fid = q->fid, nelem;
	struct val_buf *b;
	__u64 size;

	c.sp = bpf_map_lookup_elem(&val_specs, &fid);
	b = bpf_map_lookup_elem(&val_scratch, &cpu);
	if (!c.sp || !b)
		return;
	c.b = b;
	bpf_loop(PT_MAX_VALS, vals_cb, &c, 0);
	if (!c.need)
		return;
	b->r.type = PT_REC_VALUES;
	b->r.fid = fid;
	b->r.pid = c.id >> 32;
	b->r.tid = (__u32)c.id;
	b->r.t_entry = q->t_entry;
	b->r.at_exit = c.at_exit;
	nelem = c.nelem;
	if (nelem > PT_VAL_MAX_ELEMS)
		nelem = PT_VAL_MAX_ELEMS;
	b->r.nelem = nelem;
	size = sizeof(b->r) + (__u64)nelem * sizeof(__s64);
	/* keep the check the compiler would prove redundant: the verifier
	 * needs it on this register */
	asm volatile("" : "+r"(size));
	if (size > sizeof(*b))
		return;
	if (bpf_ringbuf_output(&events, b, size, rb_flags()))
		__sync_fetch_and_add(&counters.val_dropped, 1);
}

/* ret: at exit, the returned value (PT_REGS_RC at a return probe, the
 * object the agent passes at its exit site). */
static __always_inline void send_vals(struct pt_regs *ctx, const struct pt_py_offsets *L, __u64 id,
				      __u32 fid, __u64 t_entry, bool at_exit, __u64 frame,
				      const struct pt_py_code *pc, __u64 ret)
{
	struct vals_req q = { .id = id,
			      .t_entry = t_entry,
			      .frame = frame,
			      .ret = ret,
			      .fid = fid,
			      .at_exit = at_exit };

	send_vals_req(ctx, L, &q, pc);
}

#endif
