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

struct pt_counters counters = {};

struct pt_frame {
	__u64 t_entry;
	__u64 sp; /* %rsp at entry: the return address is at sp */
	__u32 fid;
	__u32 flags;
};

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

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20); /* resized by user space (ringbuf_mb) */
} events SEC(".maps");

static __always_inline __u64 rb_flags(void)
{
	return wakeup_each ? 0 : BPF_RB_NO_WAKEUP;
}

static __always_inline int emit(__u32 type, __u32 fid, __u64 id, __u64 t_entry, __u64 t_exit,
				__u32 depth, __u32 flags)
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
	bpf_ringbuf_submit(r, rb_flags());
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(pt_entry)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct pt_stack *st;
	struct pt_frame *fr;
	__u64 now;
	__u32 d, fid;

	if ((id >> 32) != targ_tgid)
		return 0;
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
	fid = bpf_get_attach_cookie(ctx) & PT_COOKIE_FID_MASK;
	fr = &st->f[d];
	fr->t_entry = now;
	fr->sp = PT_REGS_SP(ctx);
	fr->fid = fid;
	fr->flags = 0;
	st->depth = d + 1;
	if (emit(PT_REC_ENTRY, fid, id, now, 0, d, 0))
		fr->flags = PT_RECF_ENTRY_LOST;
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(pt_exit)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct pt_stack *st;
	struct pt_frame *fr;
	__u64 now, sp;
	__u32 d, fid;
	int i;

	if ((id >> 32) != targ_tgid)
		return 0;
	now = bpf_ktime_get_ns();
	st = bpf_task_storage_get(&stacks, bpf_get_current_task_btf(), 0, 0);
	if (!st)
		goto orphan;
	fid = bpf_get_attach_cookie(ctx) & PT_COOKIE_FID_MASK;
	/* After `ret`, %rsp is 8 above the entry %rsp. Frames entered deeper
	 * (lower %rsp) whose returns never came were skipped by longjmp or
	 * unwinding: the kernel discarded their return probes, so pop them. */
	sp = PT_REGS_SP(ctx) - 8;
	for (i = 0; i < PT_MAX_DEPTH; i++) {
		d = st->depth;
		if (d == 0 || d > PT_MAX_DEPTH)
			goto orphan;
		fr = &st->f[(d - 1) & (PT_MAX_DEPTH - 1)];
		if (fr->sp >= sp)
			break;
		st->depth = d - 1;
		__sync_fetch_and_add(&counters.unwound, 1);
	}
	if (i == PT_MAX_DEPTH || fr->sp != sp || fr->fid != fid)
		goto orphan; /* an untracked (too deep) call returning */
	st->depth = d - 1;
	emit(PT_REC_EXIT, fid, id, fr->t_entry, now, d - 1, fr->flags);
	return 0;
orphan:
	__sync_fetch_and_add(&counters.orphan_returns, 1);
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
