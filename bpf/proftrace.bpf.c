// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Entry/return probes for configured functions of the traced processes.
 *
 * Per hit: process check (an array lookup), one task-storage lookup, one
 * ring-buffer record.
 * Nothing else: no strings, no maps keyed by anything but the task. Timing
 * pairs are kept here (not only in user space) so that every EXIT record is
 * self-contained: a lost ENTRY record never breaks a call.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "proftrace.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set through skel->rodata before load. */
/* --children: report forks of traced processes (PT_REC_FORK). */
const volatile bool follow_children = false;
/* Wake the reader on every record: only for `make bench` comparisons. The
 * default drains the ring on a timer, saving ~1 us per record. */
const volatile bool wakeup_each = false;

/*
 * Python: where the interpreter keeps things, set from its layout table
 * (user/pylayout.c) before load. py_frame_arg 0: no Python probes.
 */
const volatile __u32 py_frame_arg = 0; /* 1 or 2: argument of _PyEval_EvalFrameDefault */
const volatile __u32 py_code_off = 0;  /* frame -> code object */
const volatile __u32 py_fname_off = 0; /* code -> co_filename; co_name follows it */
const volatile __u32 py_line_off = 0;  /* code -> co_firstlineno */
/* Generator creation frames (3.11+), see struct pt_py_layout. */
const volatile __u32 py_flags_off = 0; /* 0: none on this version */
const volatile __u32 py_first_off = 0;
const volatile __u32 py_ip_off = 0;
const volatile __s32 py_new_lim = 0;

/* Python objects read for values (issue 7); 0: no Python values. */
const volatile __u32 py_localsplus_off = 0; /* frame -> localsplus[0] */
const volatile bool py_long_tag = false;    /* 3.12+: lv_tag, not a signed ob_size */

/* Attributes: dicts and managed values (struct pt_py_layout, whose fields
 * these are; user/pyattr.c reads the same way). py_keys_hdr 0: none. */
const volatile __u32 py_keys_hdr = 0;      /* PyDictKeysObject header: the indices follow */
const volatile __u32 py_keys_size = 0;     /* dk_size (< 3.11), else 0: log2 fields */
const volatile __u32 py_keys_log2 = 0;     /* dk_log2_size (3.11+) */
const volatile __u32 py_keys_log2ix = 0;   /* dk_log2_index_bytes */
const volatile __u32 py_keys_kind = 0;     /* dk_kind */
const volatile __u32 py_keys_nentries = 0; /* dk_nentries */
const volatile __u32 py_dict_keys = 0;     /* PyDictObject.ma_keys */
const volatile __u32 py_dict_values = 0;   /* .ma_values */
const volatile __u32 py_values_items = 0;  /* PyDictValues: values[0] */
const volatile bool py_values_hdr = false; /* 3.13: a capacity byte at values + 0 */
const volatile __s32 py_managed_dict = 0;  /* dict * (or 3.12's tagged word) before obj */
const volatile __s32 py_managed_values = 0; /* 3.11: PyDictValues * before obj */
const volatile __u32 py_str_hash = 0;      /* PyASCIIObject.hash */

/* CO_GENERATOR | CO_COROUTINE | CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR */
#define PY_CO_GENLIKE (0x20 | 0x80 | 0x100 | 0x200)

struct pt_counters counters = {};

/* Process index (PT_FID_PROC of a probe's fid) -> its tgid, 0: ended.
 * Each probe is attached for one process: a hit from any other (a forked
 * child that inherited the breakpoint, an exec'ed image) is not ours. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PT_MAX_PROCS);
	__type(key, __u32);
	__type(value, __u32);
} procs SEC(".maps");

/* tgid -> process index, for the fork and exec tracepoints. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PT_MAX_PROCS);
	__type(key, __u32);
	__type(value, __u32);
} tgids SEC(".maps");

/* Is the current process the one the probe with this cookie was attached
 * for? */
static __always_inline bool ours(__u64 id, __u64 cookie)
{
	__u32 pidx = PT_FID_PROC((__u32)(cookie & PT_COOKIE_FID_MASK));
	__u32 *tgid = bpf_map_lookup_elem(&procs, &pidx);

	return tgid && *tgid == (__u32)(id >> 32);
}

struct pt_frame {
	__u64 t_entry;
	__u64 sp;   /* %rsp at entry: the return address is at sp */
	__u64 code; /* Python code object of a pending call, else 0 */
	__u32 fid;
	__u32 flags;
};

/* Frame flags kept in BPF only: entered through the Python probe; the
 * function has a pt_val_spec (read its return value at exit). */
#define PT_FRAME_PY 0x100
#define PT_FRAME_VALS 0x200

struct pt_stack {
	__u32 depth;
	__u32 pad;
	struct pt_frame f[PT_MAX_DEPTH];
};

/* Task storage: no hashing, and freed by the kernel when the thread exits. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pt_stack);
} stacks SEC(".maps");

/* (process, code object) -> fid (struct pt_py_code in proftrace.h). LRU:
 * an entry evicted by a flood of code objects is only announced again. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536); /* inserts that fail: counters.py_map_full */
	__type(key, struct pt_py_key);
	__type(value, struct pt_py_code);
} py_codes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20); /* resized by user space (ringbuf_mb) */
} events SEC(".maps");

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

static __always_inline __u64 rb_flags(void)
{
	return wakeup_each ? 0 : BPF_RB_NO_WAKEUP;
}

static __always_inline int emit(__u32 type, __u32 fid, __u64 id, __u64 t_entry, __u64 t_exit,
				__u32 depth, __u32 flags, __u64 code)
{
	struct pt_rec *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);

	if (!r) {
		__sync_fetch_and_add(&counters.dropped, 1);
		return -1;
	}
	r->type = type;
	r->fid = fid;
	r->pid = id >> 32;
	r->tid = (__u32)id;
	r->t_entry = t_entry;
	r->t_exit = t_exit;
	r->depth = depth;
	r->flags = flags;
	r->code = code;
	bpf_ringbuf_submit(r, rb_flags());
	return 0;
}

/* A code object BPF has no answer for: ask user space, at once. */
static __always_inline void announce(__u64 id, __u64 code, const struct pt_py_code *fp)
{
	struct pt_rec_pycode *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);

	if (!r) {
		__sync_fetch_and_add(&counters.dropped, 1);
		return;
	}
	r->type = PT_REC_PYCODE;
	r->firstlineno = fp->firstlineno;
	r->pid = id >> 32;
	r->tid = (__u32)id;
	r->code = code;
	r->filename = fp->filename;
	r->name = fp->name;
	r->pad = 0;
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
}

/* Open a tracked call on the current thread's stack: its entry time, 0
 * when it is not tracked. */
static __always_inline __u64 push(struct pt_regs *ctx, __u64 id, __u32 fid, __u64 code,
				 __u32 fflags)
{
	struct pt_stack *st;
	struct pt_frame *fr;
	__u64 now;
	__u32 d;

	now = bpf_ktime_get_ns();
	st = bpf_task_storage_get(&stacks, bpf_get_current_task_btf(), 0,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st) {
		__sync_fetch_and_add(&counters.no_storage, 1);
		return 0;
	}
	d = st->depth;
	if (d >= PT_MAX_DEPTH) {
		/* Not tracked: its return will find no frame at its %rsp and
		 * is dropped there (counted as an orphan, not twice here). */
		__sync_fetch_and_add(&counters.depth_overflow, 1);
		return 0;
	}
	fr = &st->f[d];
	fr->t_entry = now;
	fr->sp = PT_REGS_SP(ctx);
	fr->code = code;
	fr->fid = fid;
	fr->flags = fflags;
	st->depth = d + 1;
	if (emit(PT_REC_ENTRY, fid, id, now, 0, d, 0, code))
		fr->flags |= PT_RECF_ENTRY_LOST;
	return now;
}

/*
 * ---- Values read at a call (tokens, kv_len, batch: issue 7) ----
 *
 * Python objects are recognised by their type's tp_flags (offset 168 and
 * the *_SUBCLASS bits are the same on 3.8-3.13), so subclasses (bool,
 * IntEnum, a list subclass) read like their base. Every read can fail;
 * a failure is a status in the record, never a guessed value.
 */
#define PY_TP_FLAGS_OFF 168
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

static __always_inline __u16 long_value(const struct py_head *h, __s64 *out)
{
	__u64 ndig, mag = 0;
	bool neg;

	if (py_long_tag) { /* 3.12+: digits << 3 | sign (0 +, 1 zero, 2 -) */
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
	__u64 items;    /* the item array */
	__u64 int_type; /* last type found to be an int type */
	__s64 sum, min, max;
	__u32 n;
	__u16 status;
	bool keep;      /* store elements in val_scratch */
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
		if (bpf_probe_read_user(&flags, sizeof(flags), (void *)(h.type + PY_TP_FLAGS_OFF))) {
			c->status = PT_VST_FAULT;
			return 1;
		}
		if (!(flags & TPF_LONG)) {
			c->status = PT_VST_TYPE;
			return 1;
		}
		c->int_type = h.type;
	}
	st = long_value(&h, &x);
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
 * stored (PT_VOP_ELEMS). */
static __always_inline void read_obj(__u64 obj, __u8 op, struct pt_val *v, __u32 *nelem)
{
	struct elems_ctx c = {};
	struct py_head h;
	__u64 flags;
	__s64 n;

	if (!obj) {
		v->status = PT_VST_UNSET;
		return;
	}
	if (bpf_probe_read_user(&h, sizeof(h), (void *)obj) ||
	    bpf_probe_read_user(&flags, sizeof(flags), (void *)(h.type + PY_TP_FLAGS_OFF))) {
		v->status = PT_VST_FAULT;
		return;
	}
	if (op == PT_VOP_LEN) {
		/* ob_size, PyASCIIObject.length and ma_used all sit at 16 */
		if (!(flags & (TPF_LIST | TPF_TUPLE | TPF_BYTES | TPF_UNICODE | TPF_DICT)) ||
		    h.size < 0) {
			v->status = PT_VST_TYPE;
			return;
		}
		v->v = h.size;
		v->kind = PT_VKIND_SCALAR;
		return;
	}
	if (flags & TPF_LONG) {
		if (op != PT_VOP_INT && op != PT_VOP_AUTO && op != PT_VOP_AUTO_ELEMS) {
			v->status = PT_VST_TYPE;
			return;
		}
		v->status = long_value(&h, &v->v);
		v->kind = PT_VKIND_SCALAR;
		return;
	}
	if (op == PT_VOP_INT || !(flags & (TPF_LIST | TPF_TUPLE)) || h.size < 0) {
		v->status = PT_VST_TYPE;
		return;
	}
	n = h.size;
	/* a list points at its items; a tuple holds them */
	c.items = (flags & TPF_LIST) ? *(__u64 *)h.d : obj + 24;
	c.keep = op == PT_VOP_ELEMS || op == PT_VOP_AUTO_ELEMS;
	if (n > PT_VAL_MAX_ELEMS) {
		v->status = PT_VST_TRUNC;
		return;
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
			    bpf_probe_read_user(&ehash, 8, (void *)(ekey + py_str_hash)))
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

/* The attribute loc of the object at obj: *out its value object. */
static __always_inline __u16 read_attr(const struct pt_pyattr_loc *loc, __u64 obj, __u64 *out)
{
	struct probe_ctx c = {};
	__u64 dict = 0, keys = 0, values = 0, w = 0, v = 0, d[6] = {};
	__u8 h[48] = {}, vh[4] = {};
	int cap = -1;
	__s64 n;

	/* the layout's offsets fit the buffers (constants at load time) */
	if (py_dict_keys > 40 || py_dict_values > 40 || py_keys_hdr > sizeof(h) ||
	    py_keys_size > 40 || py_keys_nentries > 40 || py_keys_log2 > 47 ||
	    py_keys_log2ix > 47 || py_keys_kind > 47)
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
		if (bpf_probe_read_user(&values, 8, (void *)(obj + (__s64)py_managed_values)))
			return PT_VST_FAULT;
		if (!values && bpf_probe_read_user(&dict, 8, (void *)(obj + (__s64)py_managed_dict)))
			return PT_VST_FAULT;
		break;
	case PT_PYATTR_K_MANAGED_312:
		if (bpf_probe_read_user(&w, 8, (void *)(obj + (__s64)py_managed_dict)))
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
		} else if (bpf_probe_read_user(&dict, 8, (void *)(obj + (__s64)py_managed_dict))) {
			return PT_VST_FAULT;
		}
		break;
	case PT_PYATTR_K_MANAGED_313:
		if (bpf_probe_read_user(&dict, 8, (void *)(obj + (__s64)py_managed_dict)))
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
		keys = d[py_dict_keys / 8];
		values = d[py_dict_values / 8];
		if (values && py_values_hdr) {
			if (bpf_probe_read_user(vh, 4, (void *)values))
				return PT_VST_FAULT;
			cap = vh[0];
		}
	}
	/* 2. the keys' geometry, from their header */
	if (bpf_probe_read_user(h, py_keys_hdr, (void *)keys))
		return PT_VST_FAULT;
	c.indices = keys + py_keys_hdr;
	if (py_keys_size) {
		__s64 size = *(__s64 *)&h[py_keys_size];

		if (size < 1 || size > (1LL << PT_PYATTR_LOG2_MAX) || (size & (size - 1)))
			return PT_VST_ATTR_UNDECIDED;
		c.mask = (__u64)size - 1;
		c.ixw = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
		c.entries = c.indices + (__u64)size * c.ixw;
		c.esize = 24;
	} else {
		__u8 lg = h[py_keys_log2], lib = h[py_keys_log2ix];
		__u8 kind = h[py_keys_kind];

		if (lg > PT_PYATTR_LOG2_MAX || kind > 2)
			return PT_VST_ATTR_UNDECIDED;
		c.ixw = lg < 8 ? 1 : lg < 16 ? 2 : 4;
		if (lib != lg + (c.ixw == 1 ? 0 : c.ixw == 2 ? 1 : 2))
			return PT_VST_ATTR_UNDECIDED;
		c.mask = (1ULL << lg) - 1;
		c.entries = c.indices + (1ULL << (lib & 63));
		c.esize = kind == 0 ? 24 : 16;
	}
	n = *(__s64 *)&h[py_keys_nentries];
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
		if (bpf_probe_read_user(&w, 8, (void *)(c.entries + (__u64)loc->index * c.esize +
							c.esize - 16)))
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
		if (bpf_probe_read_user(&v, 8, (void *)(values + py_values_items + c.found * 8)))
			return PT_VST_FAULT;
	} else if (bpf_probe_read_user(&v, 8, (void *)(c.entries + c.found * c.esize +
						      c.esize - 8))) {
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
static __always_inline __u16 attr_of(__u64 id, __u32 fid, __u32 k, __u64 *obj)
{
	struct pt_attr_key key = { .fid = fid, .k = k };
	const struct pt_pyattr_loc *loc;

	if (!*obj)
		return PT_VST_UNSET;
	if (!py_keys_hdr)
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
	return read_attr(loc, *obj, obj);
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
static __always_inline void send_vals(struct pt_regs *ctx, __u64 id, __u32 fid, __u64 t_entry,
				      bool at_exit, __u64 frame, const struct pt_py_code *pc)
{
	const struct pt_val_spec *sp;
	struct val_buf *b;
	__u32 cpu = bpf_get_smp_processor_id(), nelem = 0, need = 0;
	__u64 size, obj;

	sp = bpf_map_lookup_elem(&val_specs, &fid);
	b = bpf_map_lookup_elem(&val_scratch, &cpu);
	if (!sp || !b)
		return;
	for (int i = 0; i < PT_MAX_VALS; i++) {
		struct pt_val *v = &b->r.v[i];
		struct pt_val_expr e = sp->e[i];
		bool ret = e.src == PT_VSRC_RET || e.src == PT_VSRC_PYRET;

		v->v = v->min = v->max = 0;
		v->n = 0;
		v->kind = 0;
		v->status = PT_VST_UNREAD;
		if (i >= sp->n || ret != at_exit)
			continue;
		need++;
		v->status = PT_VST_OK;
		switch (e.src) {
		case PT_VSRC_ARG:
			v->v = cut(reg_arg(ctx, e.argn), e.width);
			v->kind = PT_VKIND_SCALAR;
			break;
		case PT_VSRC_RET:
			v->v = cut(PT_REGS_RC(ctx), e.width);
			v->kind = PT_VKIND_SCALAR;
			break;
		case PT_VSRC_PYRET:
			obj = PT_REGS_RC(ctx);
			if (e.attr)
				v->status = attr_of(id, fid, i, &obj);
			if (!v->status)
				read_obj(obj, e.op, v, &nelem);
			break;
		case PT_VSRC_PYARG:
			if (!pc || !py_localsplus_off || pc->slot[i] < 0) {
				v->status = PT_VST_NONAME;
				break;
			}
			if (bpf_probe_read_user(&obj, sizeof(obj),
						(void *)(frame + py_localsplus_off +
							 (__u64)(__u16)pc->slot[i] * 8))) {
				v->status = PT_VST_FAULT;
				break;
			}
			if (e.attr && obj)
				v->status = attr_of(id, fid, i, &obj);
			if (!v->status)
				read_obj(obj, e.op, v, &nelem);
			break;
		default:
			v->status = PT_VST_TYPE;
		}
	}
	if (!need)
		return;
	b->r.type = PT_REC_VALUES;
	b->r.fid = fid;
	b->r.pid = id >> 32;
	b->r.tid = (__u32)id;
	b->r.t_entry = t_entry;
	b->r.at_exit = at_exit;
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

SEC("uprobe")
int BPF_KPROBE(pt_entry)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 cookie, t;
	__u32 fid;

	cookie = bpf_get_attach_cookie(ctx);
	if (!ours(id, cookie))
		return 0;
	fid = cookie & PT_COOKIE_FID_MASK;
	t = push(ctx, id, fid, 0, (cookie & PT_COOKIE_VALS) ? PT_FRAME_VALS : 0);
	if (t && (cookie & PT_COOKIE_VALS))
		send_vals(ctx, id, fid, t, false, 0, NULL);
	return 0;
}

/*
 * The call entered with %rsp == sp is returning (after `ret`, %rsp is 8
 * above the entry %rsp). Frames entered deeper (lower %rsp) whose returns
 * never came were skipped by longjmp or unwinding: the kernel discarded
 * their return probes, so pop them. Returns the top frame when it is that
 * call, NULL when the call is not tracked.
 */
static __always_inline struct pt_frame *pop_to(struct pt_stack *st, __u64 sp)
{
	struct pt_frame *fr;
	__u32 d;

	for (int i = 0; i < PT_MAX_DEPTH; i++) {
		d = st->depth;
		if (d == 0 || d > PT_MAX_DEPTH)
			return NULL;
		fr = &st->f[(d - 1) & (PT_MAX_DEPTH - 1)];
		if (fr->sp >= sp)
			return fr->sp == sp ? fr : NULL;
		st->depth = d - 1;
		__sync_fetch_and_add(&counters.unwound, 1);
	}
	return NULL;
}

/* Close the top frame fr (from pop_to) with its EXIT record. */
static __always_inline void close_top(struct pt_stack *st, struct pt_frame *fr, __u64 id,
				      __u64 now)
{
	__u32 d = st->depth - 1;

	st->depth = d;
	emit(PT_REC_EXIT, fr->fid, id, fr->t_entry, now, d, fr->flags & PT_RECF_ENTRY_LOST, fr->code);
}

SEC("uretprobe")
int BPF_KRETPROBE(pt_exit)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct pt_stack *st;
	struct pt_frame *fr;
	__u64 now;

	if (!ours(id, bpf_get_attach_cookie(ctx)))
		return 0;
	now = bpf_ktime_get_ns();
	st = bpf_task_storage_get(&stacks, bpf_get_current_task_btf(), 0, 0);
	fr = st ? pop_to(st, PT_REGS_SP(ctx) - 8) : NULL;
	/* NULL or another function: an untracked (too deep) call returning */
	if (!fr || fr->fid != (bpf_get_attach_cookie(ctx) & PT_COOKIE_FID_MASK)) {
		__sync_fetch_and_add(&counters.orphan_returns, 1);
		return 0;
	}
	if (fr->flags & PT_FRAME_VALS)
		send_vals(ctx, id, fr->fid, fr->t_entry, true, 0, NULL);
	close_top(st, fr, id, now);
	return 0;
}

/*
 * Python frames: a probe on _PyEval_EvalFrameDefault sees each frame the
 * interpreter evaluates through it (every call on 3.8-3.10 and with the
 * 3.12+ perf trampoline; calls from C only otherwise: user space labels the
 * timing). Only code objects the config names are tracked; the rest cost
 * three small reads and one map lookup.
 */
/* A frame starts: true when it is tracked (its return is wanted). */
static __always_inline bool py_enter(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct pt_py_code fp = {}, *v;
	struct pt_py_key key = {};
	__u64 frame, code = 0, t;
	__u32 fid, vals = 0;

	if (!ours(id, bpf_get_attach_cookie(ctx)))
		return false;
	/* Two plain loads: a select between ctx offsets does not verify. */
	frame = PT_REGS_PARM2(ctx);
	if (py_frame_arg == 1)
		frame = PT_REGS_PARM1(ctx);
	if (bpf_probe_read_user(&code, sizeof(code), (void *)(frame + py_code_off)) || !code ||
	    bpf_probe_read_user(&fp.filename, 2 * sizeof(__u64), (void *)(code + py_fname_off)) ||
	    bpf_probe_read_user(&fp.firstlineno, sizeof(__u32), (void *)(code + py_line_off))) {
		__sync_fetch_and_add(&counters.py_unreadable, 1);
		return false;
	}
	key.tgid = id >> 32;
	key.code = code;
	v = bpf_map_lookup_elem(&py_codes, &key);
	if (v && v->filename == fp.filename && v->name == fp.name &&
	    v->firstlineno == fp.firstlineno) {
		fid = v->fid;
		if (fid == PT_FID_PY_NONE)
			return false;
		vals = v->vals;
	} else {
		/* New, or a reused address: ask user space, and time the
		 * call meanwhile in case it is one of ours. */
		fid = PT_FID_PY_PENDING;
		fp.fid = fid;
		if (bpf_map_update_elem(&py_codes, &key, &fp, BPF_ANY))
			__sync_fetch_and_add(&counters.py_map_full, 1);
		announce(id, code, &fp);
	}
	if (py_flags_off) {
		/* Creating a generator or coroutine is not an activation. */
		__u64 ip = 0;
		__u32 flags = 0;

		if (!bpf_probe_read_user(&flags, sizeof(flags), (void *)(code + py_flags_off)) &&
		    (flags & PY_CO_GENLIKE) &&
		    !bpf_probe_read_user(&ip, sizeof(ip), (void *)(frame + py_ip_off)) &&
		    (__s64)(ip - (code + py_first_off)) < py_new_lim)
			return false;
	}
	t = push(ctx, id, fid, fid == PT_FID_PY_PENDING ? code : 0,
		 PT_FRAME_PY | (vals ? PT_FRAME_VALS : 0));
	/* A pending call's values cannot be read: its slots are not known
	 * yet (user space counts it as missing). */
	if (t && vals && v)
		send_vals(ctx, id, fid, t, false, frame, v);
	return t != 0;
}

SEC("uprobe")
int BPF_KPROBE(pt_py_entry)
{
	py_enter(ctx);
	return 0;
}

/* Every frame's return comes here; only tracked ones are closed. */
static __always_inline void py_leave(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct pt_stack *st;
	struct pt_frame *fr;
	__u64 now;

	if (!ours(id, bpf_get_attach_cookie(ctx)))
		return;
	st = bpf_task_storage_get(&stacks, bpf_get_current_task_btf(), 0, 0);
	if (!st)
		return;
	now = bpf_ktime_get_ns();
	fr = pop_to(st, PT_REGS_SP(ctx) - 8);
	if (!fr || !(fr->flags & PT_FRAME_PY))
		return; /* a frame we do not track */
	if (fr->flags & PT_FRAME_VALS)
		send_vals(ctx, id, fr->fid, fr->t_entry, true, 0, NULL);
	close_top(st, fr, id, now);
}

SEC("uretprobe")
int BPF_KRETPROBE(pt_py_exit)
{
	py_leave(ctx);
	return 0;
}

/*
 * The same as a uprobe/uretprobe pair, as one uprobe session (kernel
 * 6.13+; loaded as BPF_TRACE_UPROBE_SESSION when the kernel has it):
 * returning 1 at entry tells the kernel not to hijack this call's return,
 * so a frame that is not ours costs one probe hit instead of two.
 */
extern bool bpf_session_is_return(void) __ksym __weak;

SEC("uprobe")
int BPF_KPROBE(pt_py_session)
{
	if (bpf_session_is_return()) {
		py_leave(ctx);
		return 0;
	}
	return py_enter(ctx) ? 0 : 1;
}


/*
 * The dynamic linker calls _dl_debug_state() (r_brk, the debugger hook)
 * around every change of the link map. Wake user space at once so a
 * library dlopen'ed now is probed before the program calls into it.
 */
SEC("uprobe")
int BPF_KPROBE(pt_dlopen)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct pt_rec *r;

	if (!ours(id, bpf_get_attach_cookie(ctx)))
		return 0;
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		__sync_fetch_and_add(&counters.dropped, 1);
		return 0;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->type = PT_REC_DLOPEN;
	r->pid = id >> 32;
	r->tid = (__u32)id;
	r->t_entry = bpf_ktime_get_ns();
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* A process event for user space, at once. */
static __always_inline void proc_event(__u32 type, __u32 pid, __u32 child)
{
	struct pt_rec *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);

	if (!r) {
		__sync_fetch_and_add(&counters.dropped, 1);
		return;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->type = type;
	r->pid = pid;
	r->tid = child;
	r->t_entry = bpf_ktime_get_ns();
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
}

/* --children: a traced process started another (not a thread). */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(pt_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;

	if (!follow_children || ptgid == ctgid || !bpf_map_lookup_elem(&tgids, &ptgid))
		return 0;
	proc_event(PT_REC_FORK, ptgid, ctgid);
	return 0;
}

/* A traced process replaced its image: its probes and state are gone. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(pt_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;

	if (bpf_map_lookup_elem(&tgids, &tgid))
		proc_event(PT_REC_EXEC, tgid, 0);
	return 0;
}
