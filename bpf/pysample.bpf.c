// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Python stack sampling for one process.
 *
 * On-CPU: a cpu-clock perf event per thread of the target calls
 * pt_sample; it walks the sampled thread's Python frames (code object +
 * instruction position per frame, no strings) and sends them as one
 * record. Off-CPU: at sched_switch, a target thread going off the CPU has
 * its stack walked into its task storage; when it comes back the interval
 * is sent with that stack. A thread's Python stack cannot change while it
 * is off the CPU, so the stack at switch-out is the stack of the whole
 * interval.
 *
 * Thread to thread state: tstate->thread_id is pthread_self(), which is
 * the %fs base on x86-64 (glibc and musl), so it matches in containers
 * where TIDs differ. The tstate found is cached per thread and checked on
 * each use (a freed tstate can be reused by another thread).
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "proftrace.h"
#include "sampleclock.h"

/* BPF task works (tw_cb) came with 6.18: a vmlinux.h from an older
 * kernel lacks their types (the Makefile says which). Same name and
 * layout as the kernel's, which finds the field by its name. */
#ifndef PT_VMLINUX_TASK_WORK
struct bpf_task_work {
	__u64 __opaque;
};
typedef int (*bpf_task_work_callback_t)(struct bpf_map *, void *, void *);
#endif

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u64 period_ns = 1000000; /* one on-CPU sample: sampleclock.h */
const volatile bool offcpu = true;
/* set native_frames on: each on-CPU sample sends its registers and the
 * top of its user stack (struct pt_ustack) for user space to unwind */
const volatile bool native = false;

#define FRAME_BUF 128	/* >= frame_size, checked by user space */
#define MAX_THREADS 256 /* thread states searched per interpreter */
/* Retry a thread without a thread state every 10 ms: a new thread gets
 * its thread_id only once it runs its bootstrap, and a long negative cache
 * would hide its first samples. A search reads two words per thread. */
#define RECHECK_NS 10000000ull
#define NP_YOUNG_NS 100000000ull /* settle_held */
#define PF_EXITING 0x00000004	 /* include/linux/sched.h: a macro, not in BTF */

struct pt_sample_counters counters = {};
/* The sampled processes: tgid -> where its interpreter's state is, its
 * layout and when sampling it began (struct pt_sample_proc). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PT_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct pt_sample_proc);
} tgids SEC(".maps");

/* The one process sampled, 0: none or several (then tgids decides).
 * pt_switch runs on every context switch of the machine: a compare
 * spares the others a hash lookup in the usual one-process case. */
__u32 only_tgid = 0;

static __always_inline struct pt_sample_proc *proc_of(__u32 tgid)
{
	__u32 only = only_tgid;

	if (only && tgid != only)
		return NULL;
	return bpf_map_lookup_elem(&tgids, &tgid);
}

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pt_sample_thread);
} threads SEC(".maps");

struct scratch {
	struct pt_sample s;
	__u8 frame[FRAME_BUF];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

/* A native stack being copied: a page more than the record can hold,
 * since the verifier bounds each page's read by its size alone. Two per
 * CPU: UCOPY_IRQ for pt_sample and pt_switch, which nothing on their CPU
 * interrupts; UCOPY_SYSX for pt_sys_exit or tw_cb (one or the other is
 * loaded), which run preemptible and with interrupts on (they may run in
 * the middle of it, on its CPU: with one buffer they would write over its
 * copy). The kernel runs no program inside another run of itself on a
 * CPU, so pt_sys_exit's is its own; tw_cb guards its own (twbusy). */
struct ucopy {
	struct pt_ustack u;
	__u8 slack[4096];
};

#define UCOPY_IRQ 0
#define UCOPY_SYSX 1

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct ucopy);
} ucopy SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by user space */
} samples SEC(".maps");

static __always_inline __u64 fsbase_of(struct task_struct *t)
{
	return BPF_CORE_READ(t, thread.fsbase);
}

struct tstate_ctx {
	__u64 ts, fs, found;
	__u32 o_id, o_next;
	bool unreadable;
};

/* One thread state of the interpreter's list (a bpf_loop callback, as
 * walk_cb). A read that fails ends the search as unreadable, not as
 * "no thread state": a read cannot fault a page in, so one being migrated
 * or compacted reads as missing for a moment, and a thread taken for one
 * without Python loses its time off the CPU. */
static long tstate_cb(__u64 i, struct tstate_ctx *c)
{
	__u64 id, next;

	if (!c->ts)
		return 1;
	if (bpf_probe_read_user(&id, sizeof(id), (const void *)(c->ts + c->o_id))) {
		c->unreadable = true;
		return 1;
	}
	if (id == c->fs) {
		c->found = c->ts;
		return 1;
	}
	if (bpf_probe_read_user(&next, sizeof(next), (const void *)(c->ts + c->o_next))) {
		c->unreadable = true;
		return 1;
	}
	c->ts = next;
	return 0;
}

/* The thread state whose thread_id is fs, or 0 (*unreadable: the list
 * could not be read to its end). "None" only from a walk that read the
 * list to its end (a NULL next) with its head the same after as before:
 * the interpreter changes the list under its own lock, which a walk from
 * outside does not take, and a walk that met a thread state being freed
 * (a thread's end, a PyGILState_Release) follows whatever the allocator
 * wrote there, maybe through readable memory that is no list at all. */
static __always_inline __u64 find_tstate(const struct pt_sample_proc *p, __u64 fs, bool *unreadable)
{
	const struct pt_py_offsets *L = &p->py;
	struct tstate_ctx c = { .fs = fs, .o_id = L->tstate_thread_id, .o_next = L->tstate_next };
	__u64 interp, head, again;

	__sync_fetch_and_add(&counters.tstate_walks, 1);
	if (bpf_probe_read_user(&interp, sizeof(interp),
				(const void *)(p->runtime + L->runtime_interp_head)) ||
	    (interp && bpf_probe_read_user(&c.ts, sizeof(c.ts),
					   (const void *)(interp + L->interp_tstate_head)))) {
		*unreadable = true;
		return 0;
	}
	if (!interp)
		return 0;
	head = c.ts;
	bpf_loop(MAX_THREADS, tstate_cb, &c, 0);
	*unreadable = c.unreadable;
	if (c.found || c.unreadable)
		return c.found;
	if (c.ts || /* MAX_THREADS read, no end */
	    bpf_probe_read_user(&again, sizeof(again),
				(const void *)(interp + L->interp_tstate_head)) ||
	    again != head)
		*unreadable = true;
	return 0;
}

/* The current thread's thread state, through its cache entry; 0 with
 * *unreadable set when it could not be told (then no "not Python" is
 * cached: the next sample asks again). A cached thread state that cannot
 * be read, or is another thread's now, is looked for in the list again. */
static __always_inline __u64 tstate_of(const struct pt_sample_proc *p, struct pt_sample_thread *ts,
				       struct task_struct *t, __u64 now, bool *unreadable)
{
	__u64 id, fs, had;

	*unreadable = false;
	/* Exiting: past its Python part, and its memory may be gone already
	 * (after exit_mm every read fails). */
	if (t->flags & PF_EXITING)
		return 0;
	fs = fsbase_of(t);
	if (ts->tstate &&
	    !bpf_probe_read_user(&id, sizeof(id),
				 (const void *)(ts->tstate + p->py.tstate_thread_id)) &&
	    id == fs)
		return ts->tstate;
	/* "none" is cached, but not for intervals held since (settle_held):
	 * those are decided by a look after them, this one */
	if (!ts->tstate && ts->checked_ns && now - ts->checked_ns < RECHECK_NS &&
	    !(ts->held_n && ts->checked_ns < ts->held_t))
		return 0;
	had = ts->tstate;
	ts->tstate = find_tstate(p, fs, unreadable);
	/* A thread seen with a thread state and not found in the list now:
	 * told as unreadable this once (its interval off the CPU is kept,
	 * stack unknown), not taken for one without Python (its interval
	 * dropped); the next look, not found, is "not Python". A thread never
	 * found before is settle_held's. */
	if (had && !ts->tstate)
		*unreadable = true;
	if (*unreadable) {
		ts->checked_ns = 0;
		__sync_fetch_and_add(&counters.tstate_unreadable, 1);
		return 0;
	}
	ts->checked_ns = now;
	if (ts->tstate)
		ts->np_since = 0;
	else if (!ts->np_since)
		ts->np_since = now;
	return ts->tstate;
}

/* One frame of a walk (walk_cb): the offsets it reads, where it writes. */
struct walk_ctx {
	struct pt_sample *s;
	__u8 *buf;
	__u64 frame, mask, adaptive;
	__u32 rd, o_code, o_back, o_lasti, o_ip, o_owner, cstack, o_entry;
	__u32 n;
};

/* Frame i: read it into buf, its code and position into slot i. A
 * bpf_loop callback: verified once, where an open-coded loop of
 * PT_SAMPLE_MAX_FRAMES steps took 0.3 s of every start per program. */
static long walk_cb(__u64 i, struct walk_ctx *c)
{
	__u8 *buf = c->buf;
	__u32 rd = c->rd;
	__u64 code, back;
	__s64 pos;

	if (!c->frame)
		return 1;
	if (rd > FRAME_BUF) /* again: a bound does not survive the stack */
		rd = FRAME_BUF;
	if (bpf_probe_read_user(buf, rd, (const void *)c->frame)) {
		c->s->flags |= PT_SAMPLEF_UNREADABLE;
		c->frame = 0;
		return 1;
	}
	code = *(__u64 *)(buf + (c->o_code & (FRAME_BUF - 8))) & c->mask;
	back = *(__u64 *)(buf + (c->o_back & (FRAME_BUF - 8)));
	if (c->o_lasti)
		pos = *(__s32 *)(buf + (c->o_lasti & (FRAME_BUF - 4)));
	else
		pos = (__s64)(*(__u64 *)(buf + (c->o_ip & (FRAME_BUF - 8))) - (code + c->adaptive));
	if (pos > 0x7fffffff || pos < -0x7fffffff)
		pos = -0x7fffffff - 1; /* no instruction of this code: garbage */
	if (c->o_owner && buf[c->o_owner & (FRAME_BUF - 1)] >= c->cstack)
		code = 0;
	c->s->f[i & (PT_SAMPLE_MAX_FRAMES - 1)].code = code;
	c->s->f[i & (PT_SAMPLE_MAX_FRAMES - 1)].pos = (__s32)pos;
	c->s->f[i & (PT_SAMPLE_MAX_FRAMES - 1)].flags =
		c->o_entry && buf[c->o_entry & (FRAME_BUF - 1)] ? PT_SFRAME_ENTRY : 0;
	c->frame = back;
	c->n = (__u32)i + 1;
	return 0;
}

/* Walk the Python frames of the current thread into s. One slot per
 * frame, C-stack shim frames (3.12+) included with code 0 for user space
 * to skip. */
static __always_inline void walk(const struct pt_py_offsets *L, struct pt_sample *s, __u8 *buf,
				 __u64 tstate, bool unreadable)
{
	struct walk_ctx c = { .s = s,
			      .buf = buf,
			      .mask = L->code_mask,
			      .adaptive = L->code_adaptive,
			      .rd = L->frame_size,
			      .o_code = L->frame_code,
			      .o_back = L->frame_back,
			      .o_lasti = L->frame_lasti,
			      .o_ip = L->frame_ip,
			      .o_owner = L->frame_owner,
			      .cstack = L->owner_cstack,
			      /* 3.11: bool is_entry, the byte before owner */
			      .o_entry =
				      L->minor == 11 && L->frame_owner ? L->frame_owner - 1 : 0 };

	s->nframes = 0;
	if (!tstate) {
		/* unreadable: a thread of unknown kind, its stack unknown */
		s->flags |= unreadable ? PT_SAMPLEF_UNREADABLE : PT_SAMPLEF_NOT_PYTHON;
		return;
	}
	if (bpf_probe_read_user(&c.frame, sizeof(c.frame),
				(const void *)(tstate + L->tstate_frame)) ||
	    (L->cframe_frame >= 0 && c.frame &&
	     bpf_probe_read_user(&c.frame, sizeof(c.frame),
				 (const void *)(c.frame + L->cframe_frame)))) {
		s->flags |= PT_SAMPLEF_UNREADABLE;
		return;
	}
	bpf_loop(PT_SAMPLE_MAX_FRAMES, walk_cb, &c, 0);
	if (c.frame)
		s->flags |= PT_SAMPLEF_TRUNCATED;
	s->nframes = c.n;
}

static __always_inline void send(struct pt_sample *s)
{
	__u32 n = s->nframes;

	if (n > PT_SAMPLE_MAX_FRAMES)
		n = PT_SAMPLE_MAX_FRAMES;
	if (bpf_ringbuf_output(&samples, s, PT_SAMPLE_HDR_SIZE + n * sizeof(s->f[0]),
			       BPF_RB_NO_WAKEUP))
		__sync_fetch_and_add(&counters.lost, 1);
}

/*
 * A thread taken for one without Python at a switch-out (its thread state
 * not found, or "none" cached from a look less than RECHECK_NS before)
 * may be a Python thread all the same: a thread state is not in the list
 * in its thread's first instants, and a search that meets the list while
 * another thread is added or removed can miss one; and a native thread
 * that takes one (a library's callback thread, PyGILState_Ensure) and
 * blocks in Python within RECHECK_NS of its last look lost that wait
 * whole (200 ms of 240 a thread in test_adopted_thread_*). So while the
 * thread's "none" is young (its first look without a thread
 * state less than NP_YOUNG_NS before), such intervals are held (their
 * total, in the thread's storage, no record sent) until a look at the
 * thread state made after them: found (or unreadable), they are sent,
 * stack unknown; still none, they are dropped as before. That look is
 * tstate_of's, at the thread's next sample or switch-out, which does not
 * take "none" from its cache for them: one search per held interval, and
 * only in a thread's first NP_YOUNG_NS without a thread state. A thread
 * without Python for longer (a pool) is dropped at once, as before. What
 * is still told wrong: a native thread that takes a thread state (a
 * callback through PyGILState_Ensure) right after an interval, before its
 * next sample, has that interval counted as a Python thread's. s: a
 * record to send them with; tstate, unreadable: tstate_of's answer just
 * now.
 */
static __always_inline void settle_held(struct pt_sample_thread *ts, struct pt_sample *s,
					struct task_struct *t, __u64 tstate, bool unreadable)
{
	if (!ts->held_n)
		return;
	if (!tstate && !unreadable && !(t->flags & PF_EXITING) && ts->checked_ns < ts->held_t)
		return; /* the "none" it has is from before: asked again later */
	if (tstate || unreadable) {
		s->type = PT_REC_OFFCPU;
		s->pid = t->tgid;
		s->tid = t->pid;
		s->t = ts->held_t;
		s->weight = ts->held_ns;
		s->periods = 0;
		s->nframes = 0;
		s->flags = PT_SAMPLEF_NO_STACK | PT_SAMPLEF_RECHECKED;
		send(s);
		__sync_fetch_and_add(&counters.offcpu_found_late, ts->held_n);
	} else {
		__sync_fetch_and_add(&counters.offcpu_not_python, ts->held_n);
	}
	ts->held_ns = 0;
	ts->held_n = 0;
}

struct ucopy_ctx {
	struct ucopy *c;
	__u64 sp;
	__u32 len;
};

/* One piece of the stack: from where the copy is up to the end of its
 * page (a page not mapped ends the copy where the stack ends, without
 * losing what was read before it). A bpf_loop callback. */
static long ucopy_cb(__u64 i, struct ucopy_ctx *c)
{
	__u64 at = c->sp + c->len;
	__u64 off = c->len, n = 4096 - (at & 4095); /* 64-bit: checked in place */

	if (off >= PT_USTACK_MAX)
		return 1;
	if (n > PT_USTACK_MAX - off)
		n = PT_USTACK_MAX - off;
	/* n <= 4096 already, but the verifier cannot tell, and the compiler
	 * would drop a check it can prove (or fold it with the next into one
	 * on a copy of n): hidden from the compiler, one check each */
	asm volatile("" : "+r"(n));
	if (n > 4096)
		return 1;
	asm volatile("" : "+r"(n));
	if (!n)
		return 1;
	if (bpf_probe_read_user(c->c->u.data + (off & (PT_USTACK_MAX - 1)), n, (const void *)at))
		return 1;
	c->len = off + n;
	return 0;
}

/* The thread's user registers (where it entered the kernel: the same
 * whether the timer interrupted user code or a system call) and up to
 * PT_USTACK_MAX bytes of its stack, sent ahead of its sample. */
static __always_inline bool send_ustack(struct task_struct *task, __u32 pid, __u32 tid, __u64 t,
					__u32 buf)
{
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(task);
	struct ucopy_ctx cc = {};
	struct ucopy *c;
	__u32 len;

	c = bpf_map_lookup_elem(&ucopy, &buf);
	if (!c || !r)
		return false;
	c->u.type = PT_REC_USTACK;
	c->u.pid = pid;
	c->u.tid = tid;
	c->u.t = t;
	/* r is a BTF pointer (bpf_task_pt_regs): plain loads, no helper
	 * call per register; CO-RE still relocates each field */
	c->u.regs[PT_UREG_IP] = r->ip;
	c->u.regs[PT_UREG_SP] = r->sp;
	c->u.regs[PT_UREG_BP] = r->bp;
	c->u.regs[PT_UREG_BX] = r->bx;
	c->u.regs[PT_UREG_R12] = r->r12;
	c->u.regs[PT_UREG_R13] = r->r13;
	c->u.regs[PT_UREG_R14] = r->r14;
	c->u.regs[PT_UREG_R15] = r->r15;
	c->u.regs[PT_UREG_AX] = r->ax;
	c->u.regs[PT_UREG_CX] = r->cx;
	c->u.regs[PT_UREG_DX] = r->dx;
	c->u.regs[PT_UREG_SI] = r->si;
	c->u.regs[PT_UREG_DI] = r->di;
	c->u.regs[PT_UREG_R8] = r->r8;
	c->u.regs[PT_UREG_R9] = r->r9;
	c->u.regs[PT_UREG_R10] = r->r10;
	c->u.regs[PT_UREG_R11] = r->r11;
	cc.c = c;
	cc.sp = c->u.regs[PT_UREG_SP];
	bpf_loop(PT_USTACK_MAX / 4096 + 1, ucopy_cb, &cc, 0);
	len = cc.len;
	if (len > PT_USTACK_MAX)
		len = PT_USTACK_MAX;
	c->u.len = len;
	if (bpf_ringbuf_output(&samples, &c->u, PT_USTACK_HDR_SIZE + len, BPF_RB_NO_WAKEUP)) {
		__sync_fetch_and_add(&counters.ustack_lost, 1);
		return false;
	}
	__sync_fetch_and_add(&counters.ustacks, 1);
	__sync_fetch_and_add(&counters.ustack_bytes, len);
	return true;
}

/* Off-CPU native stacks (pt_sys_exit). Does the interval just closed
 * get one? The thread earns credit with its time off the CPU, and each
 * copy spends one period of it: at most one copy per period off the CPU
 * (as on-CPU sampling takes one per period on it), and every interval of
 * a period or longer gets one. Shorter ones get one while credit lasts
 * (a long sleep lends up to UCREDIT_MAX periods to the short blocks after
 * it); those left without are counted. */
#define UCREDIT_MAX 16

static __always_inline bool want_native(struct pt_sample_thread *ts)
{
	__u64 c;

	if (!ts->out_sp)
		return false; /* not a Python thread with its registers at switch-out */
	c = ts->ucredit_ns + ts->s.weight;
	if (c > UCREDIT_MAX * period_ns)
		c = UCREDIT_MAX * period_ns;
	if (c < period_ns) {
		ts->ucredit_ns = c;
		__sync_fetch_and_add(&counters.offcpu_budget, 1);
		return false;
	}
	ts->ucredit_ns = c - period_ns;
	return true;
}

/* Is the thread still in the system call it went off the CPU in (its user
 * registers as they were at switch-out)? */
static __always_inline bool still_blocked(struct task_struct *task, struct pt_sample_thread *ts)
{
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(task);

	return r && r->ip == ts->out_ip && r->sp == ts->out_sp;
}

/* A closed interval that waits for its native stack (ts->pend), sent.
 * task is the current task (its memory is the one mapped): if it is still
 * in the system call it went off the CPU in, the stack is taken here;
 * else it came back another way (a page fault) and the interval goes with
 * its Python frames. Claimed first (pending 1 -> 2): pt_sys_exit can be
 * interrupted or preempted in here, and pt_sample or pt_switch may then
 * come for the same interval; the one that claims it sends it. buf: the
 * caller's ucopy (UCOPY_IRQ or UCOPY_SYSX). */
static __always_inline void finish_pending(struct task_struct *task, struct pt_sample_thread *ts,
					   __u32 buf)
{
	/* native is rodata: without native frames this is dead code; with,
	 * the plain load spares the atomic where nothing waits */
	if (!native || ts->pending != 1 || __sync_val_compare_and_swap(&ts->pending, 1, 2) != 1)
		return;
	if (!still_blocked(task, ts)) {
		__sync_fetch_and_add(&counters.offcpu_moved, 1);
	} else if (send_ustack(task, ts->pend.pid, ts->pend.tid, ts->pend.t - ts->pend.weight,
			       buf)) {
		ts->pend.flags |= PT_SAMPLEF_NATIVE;
		__sync_fetch_and_add(&counters.offcpu_native, 1);
	}
	send(&ts->pend);
	ts->pending = 0;
}

/*
 * Native frames off the CPU through a task work (kernel 6.18+): where an
 * interval closes and waits for its native stack (pending), pt_switch_tw
 * asks the kernel to run tw_cb in the thread's own context on its way
 * back to user space (bpf_task_work_schedule_resume), where its memory is
 * the one mapped and its registers are still those it blocked with
 * (where a signal's frame was pushed first, finish_pending finds it
 * moved). Only the sampled threads pay, once per such interval;
 * pt_sys_exit, the way before, ran at every system call of the machine.
 * A work not run (the thread exits first, or a work of its is still
 * queued: -EBUSY) leaves the interval to finish_pending at the thread's
 * next sample or switch-out, as before.
 */
extern int bpf_task_work_schedule_resume_impl(struct task_struct *task, struct bpf_task_work *tw,
					      void *map__map, bpf_task_work_callback_t callback,
					      void *aux__prog) __ksym __weak;

/* The kernel takes a task work only in a hash or array map's value (not
 * in task storage): one per thread, by tid; an LRU map, so the entries of
 * threads gone make room (an entry dropped cancels its work). */
struct twork {
	struct bpf_task_work tw;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096); /* resized by user space (1 without) */
	__type(key, __u32);
	__type(value, struct twork);
} tworks SEC(".maps");

/* A task work runs in process context, where the kernel may preempt it:
 * another thread's tw_cb could then run on its CPU in the middle of it
 * (nothing like a tracepoint's guard against a program running inside
 * itself); the one that finds its CPU's UCOPY_SYSX in use leaves its
 * interval to finish_pending (counted: tw_busy). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} twbusy SEC(".maps");

static int tw_cb(struct bpf_map *map, void *key, void *value)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_sample_thread *ts;
	__u32 zero = 0;
	__u64 *busy;

	__sync_fetch_and_add(&counters.tw_runs, 1);
	busy = bpf_map_lookup_elem(&twbusy, &zero);
	if (!busy)
		return 0;
	if (__sync_val_compare_and_swap(busy, 0, 1)) {
		__sync_fetch_and_add(&counters.tw_busy, 1);
		return 0;
	}
	ts = bpf_task_storage_get(&threads, task, 0, 0);
	if (ts && !(task->flags & PF_EXITING))
		finish_pending(task, ts, UCOPY_SYSX);
	*busy = 0; /* per CPU: only this CPU's runs meet it */
	return 0;
}

static __always_inline void schedule_tw(struct task_struct *t)
{
	struct twork zero = {}, *w;
	__u32 tid = t->pid;

	w = bpf_map_lookup_elem(&tworks, &tid);
	if (!w) {
		bpf_map_update_elem(&tworks, &tid, &zero, BPF_NOEXIST);
		w = bpf_map_lookup_elem(&tworks, &tid);
	}
	if (!w || bpf_task_work_schedule_resume_impl(t, &w->tw, &tworks, tw_cb, NULL))
		__sync_fetch_and_add(&counters.tw_failed, 1);
}

/*
 * Threads without Python, native frames on (OpenMP and BLAS pools, a
 * tokenizer's threads, NCCL's): a native stack at every sample of every
 * such thread would be 8-16 KiB of ring and ~100 us of proftrace's
 * unwinding each, per thread per period (a pool spin-waiting on 16 cores:
 * more than a core). So one sample in PT_POOL_EVERY is sent, with a native
 * stack and the weight of the ones before it (PT_SAMPLEF_POOLED): the
 * thread's time is whole, its stacks sampled at a tenth of the rate.
 * false: s is held (its weight in ts), not sent. A sample the timer came
 * late for (periods > 1: its missed periods count off the CPU) is sent
 * as it is, outside the pool.
 */
static __always_inline bool pool_sample(struct pt_sample_thread *ts, struct pt_sample *s)
{
	ts->pool_n++;
	ts->pool_ns += s->weight;
	if (ts->pool_n < PT_POOL_EVERY) {
		__sync_fetch_and_add(&counters.pooled, 1);
		return false;
	}
	s->weight = ts->pool_ns;
	s->periods = (__u32)ts->pool_n;
	s->flags |= PT_SAMPLEF_POOLED;
	ts->pool_n = 0;
	ts->pool_ns = 0;
	return true;
}

/* An exiting thread's held samples, sent without a stack (its memory
 * may be gone). t: now. */
static __always_inline void pool_flush(struct pt_sample_thread *ts, struct scratch *sc, __u32 pid,
				       __u32 tid, __u64 t)
{
	if (!ts->pool_n)
		return;
	sc->s.type = PT_REC_SAMPLE;
	sc->s.pid = pid;
	sc->s.tid = tid;
	sc->s.t = t;
	sc->s.weight = ts->pool_ns;
	sc->s.periods = (__u32)ts->pool_n;
	sc->s.flags = PT_SAMPLEF_NOT_PYTHON | PT_SAMPLEF_POOLED;
	sc->s.nframes = 0;
	ts->pool_n = 0;
	ts->pool_ns = 0;
	send(&sc->s);
}

/* A thread taken for one without Python at switch-out, back on the CPU
 * at end: its interval held for settle_held. */
static __always_inline void hold_np(struct pt_sample_thread *ts, __u64 end)
{
	ts->held_ns += end - ts->np_out;
	ts->held_t = end;
	ts->held_n++;
	ts->np_out = 0;
}

/* Its interval off the CPU (ts->s), closed at end. True when it was sent
 * here: preempted, its native stack was taken at switch-out (native_out);
 * else the caller sends it, or has it wait for its native stack. */
static __always_inline bool close_interval(struct pt_sample_thread *ts, __u64 end)
{
	ts->s.t = end;
	ts->s.weight = end - ts->t_out;
	ts->t_out = 0;
	__sync_fetch_and_add(&counters.offcpu, 1);
	if (!ts->native_out)
		return false;
	ts->native_out = 0;
	ts->s.flags |= PT_SAMPLEF_NATIVE;
	__sync_fetch_and_add(&counters.offcpu_native, 1);
	send(&ts->s);
	return true;
}

/*
 * A thread on the CPU (sampled, or going off it) with its last interval
 * off the CPU still open: the switch in that ended it was not seen. This
 * kernel (6.18 here) does not trace every one: a thread that blocked and
 * let its CPU idle was seen to run on it again with no sched_switch at
 * all (in our program, and not in tracefs either), some 5 times a second
 * in test_sampling's victim; a main thread's 1 s sleep and 2.5 s join
 * were lost whole that way in CI.
 * Its time on the CPU since it was last put there (the scheduler's
 * sum_exec_runtime less its value then) says when that was: the interval
 * is closed there and sent (counted: offcpu_unseen_in); it is that much
 * too long by the interrupts and steal time in between, which the
 * scheduler does not count as the task's. An estimate before the
 * interval's start is no estimate: then it is lost (offcpu_unclosed).
 */
static __always_inline void close_unseen(struct task_struct *prev, struct pt_sample_thread *ts,
					 __u64 now)
{
	__u64 ran = prev->se.sum_exec_runtime - prev->se.prev_sum_exec_runtime;
	__u64 back = now - ran, out = ts->t_out ? ts->t_out : ts->np_out;

	if (ran >= now || back <= out) {
		__sync_fetch_and_add(&counters.offcpu_unclosed, 1);
		ts->t_out = 0;
		ts->np_out = 0;
		return;
	}
	__sync_fetch_and_add(&counters.offcpu_unseen_in, 1);
	ts->t_in = back; /* for the on-CPU samples' clock (sampleclock.h) */
	if (ts->np_out)
		hold_np(ts, back);
	else if (!close_interval(ts, back))
		send(&ts->s);
}

SEC("perf_event")
int pt_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), now;
	struct task_struct *task;
	struct scratch *sc;
	struct pt_sample_thread *ts;
	struct pt_sample_proc *p;
	__u32 zero = 0, tgid = id >> 32;
	bool unreadable;
	__u64 tstate;

	/* inherited events follow fork()ed children too: not ours */
	p = proc_of(tgid);
	if (!p)
		return 0;
	sc = bpf_map_lookup_elem(&scratch, &zero);
	if (!sc)
		return 0;
	task = bpf_get_current_task_btf();
	ts = bpf_task_storage_get(&threads, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ts) {
		__sync_fetch_and_add(&counters.no_storage, 1);
		return 0;
	}
	finish_pending(task, ts, UCOPY_IRQ);
	now = bpf_ktime_get_ns();
	if (ts->t_out || ts->np_out) /* on the CPU: back with no switch in seen */
		close_unseen(task, ts, now);
	tstate = tstate_of(p, ts, task, now, &unreadable);
	settle_held(ts, &sc->s, task, tstate, unreadable);
	sc->s.type = PT_REC_SAMPLE;
	sc->s.pid = id >> 32;
	sc->s.tid = (__u32)id;
	sc->s.t = now;
	sc->s.periods = pt_sampleclock__periods(now, ts->t_in, &ts->grid, period_ns, offcpu);
	sc->s.weight = sc->s.periods * period_ns;
	sc->s.flags = 0;
	walk(&p->py, &sc->s, sc->frame, tstate, unreadable);
	__sync_fetch_and_add(&counters.samples, 1);
	if (native && !tstate && (sc->s.flags & PT_SAMPLEF_NOT_PYTHON) && sc->s.periods == 1 &&
	    !pool_sample(ts, &sc->s))
		return 0;
	if (native && (tstate || (sc->s.flags & PT_SAMPLEF_POOLED)) &&
	    send_ustack(task, sc->s.pid, sc->s.tid, now, UCOPY_IRQ))
		sc->s.flags |= PT_SAMPLEF_NATIVE;
	send(&sc->s);
	return 0;
}

/* prev is the current task here: its memory is the one mapped. tw: the
 * closed interval's native stack is taken by a task work of next's
 * (pt_switch_tw), else by pt_sys_exit. */
static __always_inline int on_switch(bool preempt, struct task_struct *prev,
				     struct task_struct *next, const bool tw)
{
	struct pt_sample_thread *ts;
	struct pt_sample_proc *p;
	struct scratch *sc;
	__u32 zero = 0, tgid;
	__u64 now, tstate;
	bool unreadable;

	if (!offcpu)
		return 0;
	now = bpf_ktime_get_ns();
	tgid = next->tgid;
	p = proc_of(tgid);
	if (p) {
		__u64 attach_ns = p->attach_ns;

		ts = bpf_task_storage_get(&threads, next, 0, 0);
		if (!ts && next->start_time < attach_ns) {
			/* Asleep since before we attached: the time since
			 * then is off-CPU, its stack is not known. */
			ts = bpf_task_storage_get(&threads, next, 0,
						  BPF_LOCAL_STORAGE_GET_F_CREATE);
			if (ts) {
				ts->s.type = PT_REC_OFFCPU;
				ts->s.pid = next->tgid;
				ts->s.tid = next->pid;
				ts->s.nframes = 0;
				ts->s.flags = PT_SAMPLEF_NO_STACK;
				ts->t_out = attach_ns;
			}
		}
		if (ts)
			ts->t_in = now;
		if (ts && ts->np_out)
			hold_np(ts, now);
		if (ts && ts->t_out) {
			if (close_interval(ts, now)) {
				/* sent, with the stack taken at switch-out */
			} else if (native && !ts->pending && want_native(ts)) {
				/* its own copy: the next switch-out writes ts->s
				 * (and pending is 0: no pt_sys_exit or tw_cb of
				 * this thread is reading pend, preempted in the
				 * middle) */
				if (bpf_probe_read_kernel(&ts->pend, sizeof(ts->pend), &ts->s)) {
					send(&ts->s);
				} else {
					ts->pending = 1; /* sent by finish_pending */
					if (tw)
						schedule_tw(next);
				}
			} else {
				send(&ts->s);
			}
		}
	}
	tgid = prev->tgid;
	p = proc_of(tgid);
	if (!p)
		return 0;
	sc = bpf_map_lookup_elem(&scratch, &zero);
	ts = bpf_task_storage_get(&threads, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!sc || !ts) {
		__sync_fetch_and_add(&counters.no_storage, 1);
		return 0;
	}
	finish_pending(prev, ts, UCOPY_IRQ);
	if (ts->t_out || ts->np_out)
		close_unseen(prev, ts, now);
	if (native && ts->pool_n && (prev->flags & PF_EXITING))
		pool_flush(ts, sc, prev->tgid, prev->pid, now);
	ts->s.type = PT_REC_OFFCPU;
	ts->s.pid = prev->tgid;
	ts->s.tid = prev->pid;
	ts->s.flags = 0;
	ts->s.periods = 0;
	tstate = tstate_of(p, ts, prev, now, &unreadable);
	settle_held(ts, &sc->s, prev, tstate, unreadable);
	walk(&p->py, &ts->s, sc->frame, tstate, unreadable);
	/* Threads without Python frames (pools of native workers) sleep
	 * most of the time: their idle time is not host time of the server.
	 * Held until a later look says so (settle_held); an exiting thread's
	 * is past its Python part. */
	if (ts->s.flags & PT_SAMPLEF_NOT_PYTHON) {
		if (!(prev->flags & PF_EXITING) && now - ts->np_since < NP_YOUNG_NS)
			ts->np_out = now;
		else
			__sync_fetch_and_add(&counters.offcpu_not_python, 1);
		return 0;
	}
	ts->t_out = now;
	ts->out_sp = 0;
	ts->native_out = 0;
	if (native && tstate) {
		struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(prev);

		if (r) {
			ts->out_ip = r->ip;
			ts->out_sp = r->sp;
		}
		/* Preempted, not blocked (still runnable: preempt is set only
		 * for a preemption in the kernel, not for one on the way back
		 * to user space): it will come back without leaving a system
		 * call, where pt_sys_exit would take its stack; so it is taken
		 * now. The scheduler bounds how often a thread is preempted, as
		 * nothing bounds how often one blocks. */
		if ((preempt || prev->__state == 0 /* TASK_RUNNING */) &&
		    send_ustack(prev, prev->tgid, prev->pid, now, UCOPY_IRQ))
			ts->native_out = 1;
	}
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(pt_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(preempt, prev, next, false);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(pt_switch_tw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(preempt, prev, next, true);
}

/*
 * Native frames off the CPU. A thread's user stack cannot change while
 * it is off the CPU, but at switch-out the interval's length is not
 * known, and copying at every switch would tax every GIL hand-off; at
 * switch-in the length is known, but the memory mapped is the previous
 * task's. So pt_switch keeps a closed interval that is to get a native
 * stack (want_native) pending, and the copy is taken here, where the
 * thread leaves the system call it went off the CPU in: its stack and
 * registers are still those it blocked with (nothing has run in user
 * space since; a signal's frame is pushed after this). Attached only with
 * native frames on, where the kernel has no BPF task work (pt_switch_tw,
 * above, before 6.18): the tracepoint puts every system call of the
 * machine on the kernel's slower exit path.
 */
SEC("tp_btf/sys_exit")
int BPF_PROG(pt_sys_exit, struct pt_regs *regs, long ret)
{
	struct pt_sample_thread *ts;
	struct task_struct *task;

	if (!proc_of(bpf_get_current_pid_tgid() >> 32))
		return 0;
	task = bpf_get_current_task_btf();
	ts = bpf_task_storage_get(&threads, task, 0, 0);
	if (ts)
		finish_pending(task, ts, UCOPY_SYSX);
	return 0;
}
