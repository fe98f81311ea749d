// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Entry/return probes for configured functions of one process.
 *
 * Per hit: tgid filter, one task-storage lookup, one ring-buffer record.
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
const volatile __u32 targ_tgid = 0;
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

/* CO_GENERATOR | CO_COROUTINE | CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR */
#define PY_CO_GENLIKE (0x20 | 0x80 | 0x100 | 0x200)

struct pt_counters counters = {};

struct pt_frame {
	__u64 t_entry;
	__u64 sp;   /* %rsp at entry: the return address is at sp */
	__u64 code; /* Python code object of a pending call, else 0 */
	__u32 fid;
	__u32 flags;
};

/* Frame flag kept in BPF only: entered through the Python probe. */
#define PT_FRAME_PY 0x100

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

/* Code object -> fid (struct pt_py_code in proftrace.h). LRU: an entry
 * evicted by a flood of code objects is only announced again. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536); /* inserts that fail: counters.py_map_full */
	__type(key, __u64);
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

/* Open a tracked call on the current thread's stack; false: not tracked. */
static __always_inline bool push(struct pt_regs *ctx, __u64 id, __u32 fid, __u64 code,
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
		return false;
	}
	d = st->depth;
	if (d >= PT_MAX_DEPTH) {
		/* Not tracked: its return will find no frame at its %rsp and
		 * is dropped there (counted as an orphan, not twice here). */
		__sync_fetch_and_add(&counters.depth_overflow, 1);
		return false;
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
	return true;
}

SEC("uprobe")
int BPF_KPROBE(pt_entry)
{
	__u64 id = bpf_get_current_pid_tgid();

	if ((id >> 32) != targ_tgid)
		return 0;
	push(ctx, id, bpf_get_attach_cookie(ctx) & PT_COOKIE_FID_MASK, 0, 0);
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

	if ((id >> 32) != targ_tgid)
		return 0;
	now = bpf_ktime_get_ns();
	st = bpf_task_storage_get(&stacks, bpf_get_current_task_btf(), 0, 0);
	fr = st ? pop_to(st, PT_REGS_SP(ctx) - 8) : NULL;
	/* NULL or another function: an untracked (too deep) call returning */
	if (!fr || fr->fid != (bpf_get_attach_cookie(ctx) & PT_COOKIE_FID_MASK)) {
		__sync_fetch_and_add(&counters.orphan_returns, 1);
		return 0;
	}
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
	__u64 frame, code = 0;
	__u32 fid;

	if ((id >> 32) != targ_tgid)
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
	v = bpf_map_lookup_elem(&py_codes, &code);
	if (v && v->filename == fp.filename && v->name == fp.name &&
	    v->firstlineno == fp.firstlineno) {
		fid = v->fid;
		if (fid == PT_FID_PY_NONE)
			return false;
	} else {
		/* New, or a reused address: ask user space, and time the
		 * call meanwhile in case it is one of ours. */
		fid = PT_FID_PY_PENDING;
		fp.fid = fid;
		if (bpf_map_update_elem(&py_codes, &code, &fp, BPF_ANY))
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
	return push(ctx, id, fid, fid == PT_FID_PY_PENDING ? code : 0, PT_FRAME_PY);
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

	if ((id >> 32) != targ_tgid)
		return;
	st = bpf_task_storage_get(&stacks, bpf_get_current_task_btf(), 0, 0);
	if (!st)
		return;
	now = bpf_ktime_get_ns();
	fr = pop_to(st, PT_REGS_SP(ctx) - 8);
	if (fr && (fr->flags & PT_FRAME_PY))
		close_top(st, fr, id, now); /* else a frame we do not track */
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

	if ((id >> 32) != targ_tgid)
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
