/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sampled stacks -> host time: per thread, per py: function (inclusive),
 * per source line of the functions named on `lines` lines, and the call
 * tree for the flame graph. Pure C over symbolized samples, so tests feed
 * it synthetic ones.
 *
 * What a sample counts for (docs/summary.md, "Sampling"):
 * - an on-CPU sample weighs one sampling period; an off-CPU interval its
 *   exact length; wall = on + off;
 * - a function is counted once per sample when it is anywhere on the
 *   stack (recursion does not count it twice);
 * - a line of a `lines` function gets the sample when the function's
 *   outermost frame on the stack is at that line, so the time of calls
 *   made from the line is the line's, and a function's lines add up to
 *   the function.
 */
#ifndef PT_STACKS_H
#define PT_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pt_flame;
struct pt_top;

/* One frame of a symbolized sample. */
struct pt_sframe {
	const char *label; /* flame graph frame, e.g. "Sched.step (engine.py:42)" */
	uint32_t fid;	   /* the py: function it belongs to, or UINT32_MAX */
	uint32_t line;	   /* 0: unknown */
	/* its code's identity, for the top tables (top.h): a hash of
	 * qualname, filename and first_line; 0: unknown code */
	uint64_t key;
	const char *qualname, *filename;
	uint32_t first_line, last_line; /* last_line 0: unknown */
};

#define PT_SFID_NONE UINT32_MAX

/* Frames of one sample at most: its Python frames (PT_SAMPLE_MAX_FRAMES)
 * and as many native ones between and under them (native_frames on). */
#define PT_STACKS_MAX_FRAMES 256

/* The leaf frame of every off-CPU stack in the flame tree: the on-CPU
 * view is the tree without the stacks that end in it (pt_flame__copy()). */
#define PT_STACKS_OFFCPU "[off-cpu]"

struct pt_stacks_sample {
	uint32_t tid;
	bool offcpu;
	uint64_t weight_ns;
	/* on-CPU: the part of weight_ns in periods the sample timer missed
	 * (bpf/sampleclock.h: steal), booked off the CPU at this stack */
	uint64_t held_ns;
	/* on-CPU samples it stands for (0: one): a pooled sample of a thread
	 * without Python stands for those held before it (PT_SAMPLEF_POOLED) */
	uint32_t nsamples;
	uint32_t flags;		   /* PT_SAMPLEF_* */
	const struct pt_sframe *f; /* innermost first */
	size_t n;
	size_t unknown; /* frames among f whose code could not be read */
	size_t native;	/* frames among f that are native (native_frames on) */
};

struct pt_stacks_time {
	uint64_t samples; /* on-CPU samples */
	uint64_t on_ns, off_ns;
};

/* s's time into t: an off-CPU interval off the CPU; an on-CPU sample on
 * it, less the periods its timer missed, which are off it. */
static inline void pt_stacks_time__add(struct pt_stacks_time *t, const struct pt_stacks_sample *s)
{
	uint64_t held;

	if (s->offcpu) {
		t->off_ns += s->weight_ns;
		return;
	}
	held = s->held_ns < s->weight_ns ? s->held_ns : s->weight_ns;
	t->samples += s->nsamples ? s->nsamples : 1;
	t->on_ns += s->weight_ns - held;
	t->off_ns += held;
}

struct pt_stacks_thread {
	uint32_t tid;
	char *name;  /* its Python name (threading.Thread.name), else its comm; or NULL */
	char *comm;  /* its comm, or NULL */
	bool python; /* a sample found its Python thread state */
	/* proftrace's own thread in the target (the Python agent's, the
	 * CUPTI shim's): its samples are in this row and the totals' own
	 * time only, never in the other totals, the functions, the lines,
	 * the top tables or the flame graph */
	bool own;
	struct pt_stacks_time t;
};

struct pt_stacks_line {
	uint32_t line;
	struct pt_stacks_time t;
};

struct pt_stacks_totals {
	struct pt_stacks_time t;
	uint64_t intervals;	 /* off-CPU intervals */
	uint64_t python_samples; /* on-CPU samples with a Python frame */
	uint64_t no_frames;	 /* ... of Python threads with no frame */
	uint64_t not_python;	 /* ... of threads with no thread state */
	uint64_t truncated;	 /* stacks deeper than the walker goes */
	uint64_t unreadable;	 /* walks stopped at an unreadable frame */
	uint64_t unknown_frames; /* frames whose code could not be read */
	uint64_t no_stack;	 /* off-CPU intervals begun before attach */
	/* on-CPU samples whose timer missed periods (steal), booked off
	 * the CPU: how many, and the time missed */
	uint64_t late_samples, late_ns;
	/* threads past PT_STACKS_MAX_THREADS: their time is in one row,
	 * tid 0, "other threads" (memory stays bounded however many
	 * threads a server creates and ends) */
	uint64_t threads_merged;
	/* proftrace's own threads (pt_stacks__own_thread()): not in t */
	struct pt_stacks_time own;
};

#define PT_STACKS_MAX_THREADS 2048

struct pt_stacks;

struct pt_stacks *pt_stacks__new(void);
void pt_stacks__free(struct pt_stacks *st);

/* Keep per-line figures for function fid. 0, -ENOMEM, or -EINVAL for a
 * fid of 2^24 or more (fids are dense row numbers). */
int pt_stacks__want_lines(struct pt_stacks *st, uint32_t fid);
/* Name thread tid (its comm) for the flame graph and the report. */
int pt_stacks__name_thread(struct pt_stacks *st, uint32_t tid, const char *name);
/* Its comm, when name is its Python name. */
int pt_stacks__thread_comm(struct pt_stacks *st, uint32_t tid, const char *comm);
/* Thread tid is proftrace's own, named name: see struct pt_stacks_thread.
 * A thread past PT_STACKS_MAX_THREADS stays in the "other threads" row. */
int pt_stacks__own_thread(struct pt_stacks *st, uint32_t tid, const char *name);
bool pt_stacks__has_thread(const struct pt_stacks *st, uint32_t tid);

/* 0, -ENOMEM, or -EINVAL when a frame names a fid of 2^24 or more. */
int pt_stacks__add(struct pt_stacks *st, const struct pt_stacks_sample *s);

const struct pt_stacks_totals *pt_stacks__totals(const struct pt_stacks *st);
/* Every thread row, proftrace's own (->own) included. */
size_t pt_stacks__nthreads(const struct pt_stacks *st);
const struct pt_stacks_thread *pt_stacks__thread(const struct pt_stacks *st, size_t i);
/* Inclusive time of function fid; NULL when never sampled. */
const struct pt_stacks_time *pt_stacks__func(const struct pt_stacks *st, uint32_t fid);
/* Lines of fid with samples, sorted by line; NULL (and *n 0) when none. */
const struct pt_stacks_line *pt_stacks__lines(const struct pt_stacks *st, uint32_t fid, size_t *n);
/* Every function and line seen, with self and total time (top.h). */
const struct pt_top *pt_stacks__top(const struct pt_stacks *st);
/* The call tree: weights in microseconds of wall time. */
const struct pt_flame *pt_stacks__flame(const struct pt_stacks *st);

#endif
