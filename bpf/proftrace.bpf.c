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
/* Some probe reads values (tokens=, kv_len=, batch=, count): without
 * any, the verifier drops the value readers as dead code, and loading
 * the programs takes a fraction of the time. */
const volatile bool has_vals = false;

/* CO_GENERATOR | CO_COROUTINE | CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR */
#define PY_CO_GENLIKE (0x20 | 0x80 | 0x100 | 0x200)

struct pt_counters counters = {};

/* Process index (PT_FID_PROC of a probe's fid) -> its tgid (0: ended)
 * and its interpreter's offsets (struct pt_bpf_proc). Each probe is
 * attached for one process: a hit from any other (a forked child that
 * inherited the breakpoint, an exec'ed image) is not ours. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PT_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct pt_bpf_proc);
} procs SEC(".maps");

/* tgid -> process index, for the fork and exec tracepoints. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PT_MAX_PROCS);
	__type(key, __u32);
	__type(value, __u32);
} tgids SEC(".maps");

/* The process the probe with this cookie was attached for, when it is
 * the current one; else NULL. */
static __always_inline const struct pt_bpf_proc *ours(__u64 id, __u64 cookie)
{
	__u32 pidx = PT_FID_PROC((__u32)(cookie & PT_COOKIE_FID_MASK));
	const struct pt_bpf_proc *p = bpf_map_lookup_elem(&procs, &pidx);

	return p && p->tgid == (__u32)(id >> 32) ? p : NULL;
}

struct pt_frame {
	__u64 t_entry;
	__u64 t_body; /* an agent activation: its body's start, the agent's clock; 0: none */
	__u64 sp;     /* %rsp at entry: the return address is at sp */
	__u64 code;   /* Python code object of a pending call, else 0 */
	__u32 fid;
	__u32 flags;
};

/* Frame flags kept in BPF only: entered through the Python probe; the
 * function has a pt_val_spec (read its return value at exit); an
 * activation the agent reported (sp holds its frame, not a %rsp). */
#define PT_FRAME_PY 0x100
#define PT_FRAME_VALS 0x200
#define PT_FRAME_AGENT 0x400

struct pt_stack {
	__u32 depth;
	__u32 unnamed; /* frames the frame probe saw on this thread that no py: probe names
			* (wraps; user space takes differences: pt_rec.unnamed) */
	/* the agent activation (index + 1, its frame) whose enter was this
	 * thread's last agent hit: the next one brings its body's start */
	__u32 body_wait;
	__u32 pad;
	__u64 body_key;
	__u64 t_last; /* the thread's last hit that pushed or closed a call */
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

static __always_inline __u64 rb_flags(void)
{
	return wakeup_each ? 0 : BPF_RB_NO_WAKEUP;
}

static __always_inline int emit(__u32 type, __u32 fid, __u64 id, __u64 t_entry, __u64 t_exit,
				__u32 depth, __u32 flags, __u64 code, __u32 unnamed)
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
	r->unnamed = unnamed;
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

/* The current thread's stack of tracked calls, made at its first. */
static __always_inline struct pt_stack *stack_create(void)
{
	struct pt_stack *st = bpf_task_storage_get(&stacks, bpf_get_current_task_btf(), 0,
						   BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (!st)
		__sync_fetch_and_add(&counters.no_storage, 1);
	return st;
}

/* push_key() on st, the thread's stack, at now. */
static __always_inline __u64 push_on(struct pt_stack *st, __u64 key, __u64 id, __u32 fid,
				     __u64 code, __u32 fflags, __u64 now)
{
	struct pt_frame *fr;
	__u32 d;

	d = st->depth;
	if (d >= PT_MAX_DEPTH) {
		/* Not tracked: its return will find no frame at its %rsp and
		 * is dropped there (counted as an orphan, not twice here). */
		__sync_fetch_and_add(&counters.depth_overflow, 1);
		return 0;
	}
	fr = &st->f[d];
	st->t_last = now;
	fr->t_entry = now;
	fr->t_body = 0;
	fr->sp = key;
	fr->code = code;
	fr->fid = fid;
	fr->flags = fflags;
	st->depth = d + 1;
	if (emit(PT_REC_ENTRY, fid, id, now, 0, d, 0, code, st->unnamed))
		fr->flags |= PT_RECF_ENTRY_LOST;
	return now;
}

/* Open a tracked call on the current thread's stack: its entry time, 0
 * when it is not tracked. key: what its return is matched by (%rsp at
 * entry for a probed function, the frame for the agent's activations). */
static __always_inline __u64 push_key(__u64 key, __u64 id, __u32 fid, __u64 code, __u32 fflags)
{
	__u64 now = bpf_ktime_get_ns();
	struct pt_stack *st = stack_create();

	return st ? push_on(st, key, id, fid, code, fflags, now) : 0;
}

static __always_inline __u64 push(struct pt_regs *ctx, __u64 id, __u32 fid, __u64 code,
				  __u32 fflags)
{
	return push_key(PT_REGS_SP(ctx), id, fid, code, fflags);
}

#include "values.bpf.h"

SEC("uprobe")
int BPF_KPROBE(pt_entry)
{
	__u64 id = bpf_get_current_pid_tgid();
	const struct pt_bpf_proc *p;
	__u64 cookie, t;
	__u32 fid;

	cookie = bpf_get_attach_cookie(ctx);
	p = ours(id, cookie);
	if (!p)
		return 0;
	fid = cookie & PT_COOKIE_FID_MASK;
	t = push(ctx, id, fid, 0, (cookie & PT_COOKIE_VALS) ? PT_FRAME_VALS : 0);
	if (has_vals && t && (cookie & PT_COOKIE_VALS))
		send_vals(ctx, &p->py, id, fid, t, false, 0, NULL, 0);
	return 0;
}

/*
 * The call entered with %rsp == sp is returning (after `ret`, %rsp is 8
 * above the entry %rsp). Frames entered deeper (lower %rsp) whose returns
 * never came were skipped by longjmp or unwinding: the kernel discarded
 * their return probes, so pop them. Returns the top frame when it is that
 * call, NULL when the call is not tracked.
 *
 * The walk is a bpf_loop callback: verified once, where an open-coded
 * loop of PT_MAX_DEPTH steps was verified step by step (most of a second
 * of every proftrace's start, per program that pops).
 */
struct pop_ctx {
	struct pt_stack *st;
	__u64 key;
	int found; /* 1: the top frame is the call, 0: not tracked */
};

static long pop_to_cb(__u64 i, struct pop_ctx *c)
{
	struct pt_stack *st = c->st;
	struct pt_frame *fr;
	__u32 d = st->depth;

	if (d == 0 || d > PT_MAX_DEPTH)
		return 1;
	fr = &st->f[(d - 1) & (PT_MAX_DEPTH - 1)];
	/* an agent activation holds a frame address, not a %rsp: still
	 * open above a returning function, its end was missed */
	if (!(fr->flags & PT_FRAME_AGENT) && fr->sp >= c->key) {
		c->found = fr->sp == c->key;
		return 1;
	}
	st->depth = d - 1;
	__sync_fetch_and_add(&counters.unwound, 1);
	return 0;
}

static __always_inline struct pt_frame *pop_to(struct pt_stack *st, __u64 sp)
{
	struct pop_ctx c = { .st = st, .key = sp };
	struct pt_frame *top;
	__u32 d = st->depth;

	/* the usual case, without the loop: the call is the top frame */
	if (d && d <= PT_MAX_DEPTH) {
		top = &st->f[(d - 1) & (PT_MAX_DEPTH - 1)];
		if (!(top->flags & PT_FRAME_AGENT) && top->sp == sp)
			return top;
	}
	bpf_loop(PT_MAX_DEPTH, pop_to_cb, &c, 0);
	d = st->depth;
	if (!c.found || d == 0 || d > PT_MAX_DEPTH)
		return NULL;
	return &st->f[(d - 1) & (PT_MAX_DEPTH - 1)];
}

/* Close the top frame fr (from pop_to) with its EXIT record, the call
 * from t0 to t1 (flags: PT_RECF_AGENT_*). */
static __always_inline void close_top_at(struct pt_stack *st, struct pt_frame *fr, __u64 id,
					 __u64 t0, __u64 t1, __u32 flags)
{
	__u32 d = st->depth - 1;

	st->depth = d;
	emit(PT_REC_EXIT, fr->fid, id, t0, t1, d, (fr->flags & PT_RECF_ENTRY_LOST) | flags,
	     fr->code, st->unnamed);
}

static __always_inline void close_top(struct pt_stack *st, struct pt_frame *fr, __u64 id, __u64 now)
{
	st->t_last = now;
	close_top_at(st, fr, id, fr->t_entry, now, 0);
}

SEC("uretprobe")
int BPF_KRETPROBE(pt_exit)
{
	__u64 id = bpf_get_current_pid_tgid();
	const struct pt_bpf_proc *p;
	struct pt_stack *st;
	struct pt_frame *fr;
	__u64 now;

	p = ours(id, bpf_get_attach_cookie(ctx));
	if (!p)
		return 0;
	now = bpf_ktime_get_ns();
	st = bpf_task_storage_get(&stacks, bpf_get_current_task_btf(), 0, 0);
	fr = st ? pop_to(st, PT_REGS_SP(ctx) - 8) : NULL;
	/* NULL or another function: an untracked (too deep) call returning */
	if (!fr || fr->fid != (bpf_get_attach_cookie(ctx) & PT_COOKIE_FID_MASK)) {
		__sync_fetch_and_add(&counters.orphan_returns, 1);
		return 0;
	}
	if (has_vals && (fr->flags & PT_FRAME_VALS))
		send_vals(ctx, &p->py, id, fr->fid, fr->t_entry, true, 0, NULL, PT_REGS_RC(ctx));
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
/*
 * The function code object code is in the current process: true with
 * *fid its fid (PT_FID_PY_NONE: not ours) and *vp its py_codes entry; a
 * code object not known (or whose address was freed and reused) is
 * announced to user space and meanwhile PT_FID_PY_PENDING (*vp NULL).
 * false: it cannot be read.
 */
static __always_inline bool code_fid(const struct pt_py_offsets *L, __u64 id, __u64 code,
				     struct pt_py_code **vp, __u32 *fid)
{
	struct pt_py_key key = { .tgid = id >> 32, .code = code };
	struct pt_py_code fp = {}, *v;

	if (!code ||
	    bpf_probe_read_user(&fp.filename, 2 * sizeof(__u64),
				(void *)(code + L->code_filename)) ||
	    bpf_probe_read_user(&fp.firstlineno, sizeof(__u32),
				(void *)(code + L->code_firstlineno))) {
		__sync_fetch_and_add(&counters.py_unreadable, 1);
		return false;
	}
	v = bpf_map_lookup_elem(&py_codes, &key);
	if (v && v->filename == fp.filename && v->name == fp.name &&
	    v->firstlineno == fp.firstlineno) {
		*fid = v->fid;
		*vp = v;
		return true;
	}
	/* New, or a reused address: ask user space, and time the call
	 * meanwhile in case it is one of ours. */
	fp.fid = PT_FID_PY_PENDING;
	if (bpf_map_update_elem(&py_codes, &key, &fp, BPF_ANY))
		__sync_fetch_and_add(&counters.py_map_full, 1);
	announce(id, code, &fp);
	*fid = PT_FID_PY_PENDING;
	*vp = NULL;
	return true;
}

/* A frame starts: true when it is tracked (its return is wanted). */
static __always_inline bool py_enter(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	const struct pt_py_offsets *L;
	const struct pt_bpf_proc *p;
	struct pt_py_code *v;
	__u64 frame, a1, code = 0, t;
	__u32 fid;

	p = ours(id, bpf_get_attach_cookie(ctx));
	if (!p)
		return false;
	L = &p->py;
	/* Both loads, then a select of values: a select between ctx offsets
	 * (what the compiler makes of a branch between loads) does not verify. */
	a1 = PT_REGS_PARM1(ctx);
	frame = PT_REGS_PARM2(ctx);
	asm volatile("" : "+r"(a1), "+r"(frame));
	if (L->frame_arg == 1)
		frame = a1;
	if (bpf_probe_read_user(&code, sizeof(code), (void *)(frame + L->frame_code))) {
		__sync_fetch_and_add(&counters.py_unreadable, 1);
		return false;
	}
	code &= L->code_mask;
	if (!code_fid(L, id, code, &v, &fid))
		return false;
	if (fid == PT_FID_PY_NONE) {
		/* the frame probe's whole cost on calls nobody named; counted
		 * per thread too, where a tracked call may be open (its
		 * storage exists), so that user space can take these hits out
		 * of the intervals they fell in */
		struct pt_stack *st =
			bpf_task_storage_get(&stacks, bpf_get_current_task_btf(), 0, 0);

		if (st)
			st->unnamed++;
		__sync_fetch_and_add(&counters.py_unnamed, 1);
		return false;
	}
	if (L->code_flags) {
		/* Creating a generator or coroutine is not an activation. */
		__u64 ip = 0;
		__u32 flags = 0;

		if (!bpf_probe_read_user(&flags, sizeof(flags), (void *)(code + L->code_flags)) &&
		    (flags & PY_CO_GENLIKE) &&
		    !bpf_probe_read_user(&ip, sizeof(ip), (void *)(frame + L->frame_ip)) &&
		    (__s64)(ip - (code + L->code_adaptive)) < L->gen_new_lim)
			return false;
	}
	t = push(ctx, id, fid, fid == PT_FID_PY_PENDING ? code : 0,
		 PT_FRAME_PY | (v && v->vals ? PT_FRAME_VALS : 0));
	/* A pending call's values cannot be read: its slots are not known
	 * yet (user space counts it as missing). */
	if (has_vals && t && v && v->vals)
		send_vals(ctx, L, id, fid, t, false, frame, v, 0);
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
	const struct pt_bpf_proc *p;
	struct pt_stack *st;
	struct pt_frame *fr;
	__u64 now;

	p = ours(id, bpf_get_attach_cookie(ctx));
	if (!p)
		return;
	st = bpf_task_storage_get(&stacks, bpf_get_current_task_btf(), 0, 0);
	if (!st)
		return;
	now = bpf_ktime_get_ns();
	fr = pop_to(st, PT_REGS_SP(ctx) - 8);
	if (!fr || !(fr->flags & PT_FRAME_PY))
		return; /* a frame we do not track */
	if (has_vals && (fr->flags & PT_FRAME_VALS))
		send_vals(ctx, &p->py, id, fr->fid, fr->t_entry, true, 0, NULL, PT_REGS_RC(ctx));
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
 * The agent's clock reads (PT_COOKIE_AGENT_CLOCKS; shim/ptagent.h): each
 * probe call passes prev, its thread's clock right after its last enter
 * call returned, and an exit also end, its clock right before this call.
 * So the body of the activation whose enter was the thread's last agent
 * hit began at prev: kept for its EXIT when it lies between that hit and
 * this one (now), else counted and the hit's time stays. Every agent hit
 * takes it, before anything else, so it is never given to a later one.
 * An end is taken between the last hit inside the call (its own enter's,
 * or a nested call's) and its exit hit. So forged reads can move a
 * call's start only between its enter hit and the first hit inside it,
 * and its end only between the last hit inside it and its exit hit.
 */
static __always_inline void body_start(struct pt_stack *st, __u64 prev, __u64 now)
{
	__u32 k = st->body_wait;
	struct pt_frame *fr;

	if (!k)
		return;
	st->body_wait = 0;
	k = (k - 1) & (PT_MAX_DEPTH - 1);
	fr = &st->f[k];
	if (k >= st->depth || !(fr->flags & PT_FRAME_AGENT) || fr->sp != st->body_key)
		return; /* popped since (unwound): nothing waits */
	if (prev >= fr->t_entry && prev <= now)
		fr->t_body = prev;
	else
		__sync_fetch_and_add(&counters.agent_clock_rejected, 1);
}

/*
 * The Python agent's probe sites (shim/ptagent.h): pt_agent_enter(code,
 * frame, prev) when an activation of a named code object begins,
 * pt_agent_exit(code, frame, ret, end, prev) when it ends (ret: the
 * returned or yielded object, 0 for an exception; prev, end: the clock
 * reads above). Only named code objects ever reach them. The frame is the
 * activation's identity: its exit closes the frame opened with the same
 * one, whatever returned in between.
 */
SEC("uprobe")
int BPF_KPROBE(pt_agent_enter, __u64 code, __u64 frame, __u64 prev)
{
	__u64 id = bpf_get_current_pid_tgid(), cookie = bpf_get_attach_cookie(ctx), now, t;
	const struct pt_bpf_proc *p;
	struct pt_py_code *v;
	struct pt_stack *st;
	__u32 fid, d;

	p = ours(id, cookie);
	if (!p)
		return 0;
	now = bpf_ktime_get_ns();
	st = stack_create();
	if (!st)
		return 0;
	if (cookie & PT_COOKIE_AGENT_CLOCKS)
		body_start(st, prev, now);
	if (!frame)
		return 0;
	code &= p->py.code_mask;
	if (!code_fid(&p->py, id, code, &v, &fid) || fid == PT_FID_PY_NONE)
		return 0;
	d = st->depth;
	t = push_on(st, frame, id, fid, fid == PT_FID_PY_PENDING ? code : 0,
		    PT_FRAME_PY | PT_FRAME_AGENT | (v && v->vals ? PT_FRAME_VALS : 0), now);
	if (t && (cookie & PT_COOKIE_AGENT_CLOCKS)) {
		st->body_wait = d + 1;
		st->body_key = frame;
	}
	if (has_vals && t && v && v->vals)
		send_vals(ctx, &p->py, id, fid, t, false, frame, v, 0);
	return 0;
}

/* The open activation with this frame: frames opened above it never got
 * their end (dropped, counted); NULL when it is not open at all (begun
 * before attach, or beyond PT_MAX_DEPTH). A bpf_loop search, as pop_to. */
struct find_ctx {
	struct pt_stack *st;
	__u64 frame;
	__u32 d;
	__u32 k; /* the frame's index, when found */
	int found;
};

static long find_frame_cb(__u64 i, struct find_ctx *c)
{
	struct pt_frame *fr;
	__u32 k;

	if ((__u32)i >= c->d)
		return 1;
	k = c->d - 1 - (__u32)i;
	fr = &c->st->f[k & (PT_MAX_DEPTH - 1)];
	if ((fr->flags & PT_FRAME_AGENT) && fr->sp == c->frame) {
		c->k = k;
		c->found = 1;
		return 1;
	}
	return 0;
}

static __always_inline struct pt_frame *pop_frame(struct pt_stack *st, __u64 frame)
{
	struct find_ctx c = { .st = st, .frame = frame, .d = st->depth };
	__u32 k;

	if (c.d == 0 || c.d > PT_MAX_DEPTH)
		return NULL;
	/* the usual case, without the loop: the activation is the top frame */
	k = (c.d - 1) & (PT_MAX_DEPTH - 1);
	if ((st->f[k].flags & PT_FRAME_AGENT) && st->f[k].sp == frame) {
		st->depth = k + 1;
		return &st->f[k];
	}
	bpf_loop(PT_MAX_DEPTH, find_frame_cb, &c, 0);
	if (!c.found)
		return NULL;
	k = c.k & (PT_MAX_DEPTH - 1);
	if (c.d - k > 1)
		__sync_fetch_and_add(&counters.unwound, c.d - k - 1);
	st->depth = k + 1;
	return &st->f[k];
}

SEC("uprobe")
int BPF_KPROBE(pt_agent_exit, __u64 code, __u64 frame, __u64 ret, __u64 end, __u64 prev)
{
	__u64 id = bpf_get_current_pid_tgid(), cookie = bpf_get_attach_cookie(ctx), now, t0, lo;
	const struct pt_bpf_proc *p;
	struct pt_stack *st;
	struct pt_frame *fr;
	__u32 flags = 0;

	p = ours(id, cookie);
	if (!p)
		return 0;
	now = bpf_ktime_get_ns();
	st = bpf_task_storage_get(&stacks, bpf_get_current_task_btf(), 0, 0);
	if (st && (cookie & PT_COOKIE_AGENT_CLOCKS))
		body_start(st, prev, now);
	fr = st ? pop_frame(st, frame) : NULL;
	if (!fr) {
		__sync_fetch_and_add(&counters.orphan_returns, 1);
		return 0;
	}
	if (has_vals && (fr->flags & PT_FRAME_VALS))
		send_vals(ctx, &p->py, id, fr->fid, fr->t_entry, true, 0, NULL, ret);
	t0 = fr->t_entry;
	if (fr->t_body) {
		t0 = fr->t_body;
		flags |= PT_RECF_AGENT_ENTRY;
	}
	/* the body ended after every hit inside it (the last one's) */
	lo = st->t_last > t0 ? st->t_last : t0;
	st->t_last = now;
	if (cookie & PT_COOKIE_AGENT_CLOCKS) {
		if (end >= lo && end <= now) {
			now = end;
			flags |= PT_RECF_AGENT_EXIT;
		} else {
			__sync_fetch_and_add(&counters.agent_clock_rejected, 1);
		}
	}
	close_top_at(st, fr, id, t0, now, flags);
	return 0;
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

/* A traced process replaced its image: its probes and state are gone.
 * Its slot stops matching at once (ours() sees tgid 0): a probed file the
 * new image maps again fires there, and those hits are not the old
 * image's, however late user space reads the exec record. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(pt_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;
	__u32 *pidx = bpf_map_lookup_elem(&tgids, &tgid);
	struct pt_bpf_proc *v;
	__u32 k;

	if (!pidx)
		return 0;
	k = *pidx;
	v = bpf_map_lookup_elem(&procs, &k);
	if (v && v->tgid == tgid)
		v->tgid = 0;
	proc_event(PT_REC_EXEC, tgid, 0);
	return 0;
}

/*
 * A thread of a traced process ended. Only threads that ever entered a
 * probed call have task storage, and only they are reported: user space
 * frees what it keeps per thread (the aggregator's stack and step state),
 * so a server that creates and ends threads all day costs proftrace no
 * memory per thread. The tracepoint runs on the exiting thread itself, so
 * this is the last record of that thread in the ring (a thread's records
 * keep their order). No wakeup: it is drained with the rest.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(pt_texit, struct task_struct *p)
{
	__u32 tgid = p->tgid;
	struct pt_rec *r;

	if (!bpf_map_lookup_elem(&tgids, &tgid) || !bpf_task_storage_get(&stacks, p, 0, 0))
		return 0;
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		/* its state stays until the end of the run: counted */
		__sync_fetch_and_add(&counters.texit_dropped, 1);
		return 0;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->type = PT_REC_TEXIT;
	r->pid = tgid;
	r->tid = p->pid;
	r->t_entry = bpf_ktime_get_ns();
	bpf_ringbuf_submit(r, rb_flags());
	return 0;
}
