// SPDX-License-Identifier: BSD-2-Clause
/*
 * pt_agg: records -> steps, buckets, functions (semantics in agg.h).
 *
 * Each thread keeps a stack of its open probed calls indexed by the depth
 * BPF reports, so a lost record shows up as a slot that is still taken
 * when a record at that depth or above arrives: the call there ended
 * without us seeing it. Everything a step contributes (bucket time,
 * bucket calls, covered time) is buffered in the thread and only folded
 * into the totals when the step closes and is counted, because until then
 * we do not know whether it will be (loss, end of run).
 *
 * The hot path allocates only when a per-thread buffer has to grow (new
 * thread, a step with more bucket calls than any before).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"

#define NO_FID UINT32_MAX
/* fids index flat arrays; anything larger is a caller bug, not a program. */
#define PT_AGG_MAX_FID (1u << 24)

struct frame {
	uint64_t bmask; /* buckets this call counted in, fixed at entry */
	uint64_t t_in;	/* its ENTRY's time */
	uint32_t fid;	/* NO_FID: slot empty */
	uint8_t is_step;
	uint8_t opener; /* this call opened (call) or began (iteration) the step */
};

/* A bucket's state on one thread. */
struct tbucket {
	uint64_t pstart; /* start of the piece the open step has not taken yet */
	uint64_t acc;	 /* time of the open interval given to counted steps */
	uint32_t cnt;	 /* open calls of the bucket's functions */
};

/* A bucket call that ended in the open step: counted if the step is. */
struct pend {
	uint64_t v;
	uint32_t b;
};

struct thread {
	uint32_t tid, pid;
	uint32_t sp;	    /* stack slots >= sp are empty */
	uint32_t nstep;	    /* open calls of step functions */
	uint64_t open_mask; /* buckets with an open interval */
	uint64_t hit_mask;  /* open intervals that overlapped a counted step */

	/* Union of all open bucket intervals, for step.other. */
	uint64_t cov_start; /* start of the piece the open step has not taken */
	uint64_t cov_last;  /* last normal end of an interval in this union */

	bool step_open, step_broken;
	uint64_t step_seq, step_start;
	uint64_t step_cov;  /* covered time of the open step */
	unsigned int vmask; /* values of the open step (struct pt_step) */
	double val[3];
	uint64_t *step_ns; /* nbuckets: time of each bucket in the open step */
	struct pend *pend;
	size_t npend, cap_pend;

	struct frame stack[PT_MAX_DEPTH];
	struct tbucket b[]; /* nbuckets, then step_ns */
};

struct fn {
	uint64_t bmask;
	bool declared, is_step;
};

struct pt_agg {
	struct pt_agg_opts opts;
	size_t nb;

	struct fn *fn; /* roles, apart from the stats to keep the hot lookup small */
	struct pt_agg_func_stats *fst;
	size_t nfn, cap_fn;

	struct pt_agg_step_stats steps;
	struct pt_agg_bucket_stats *bst; /* nb + 1: the last is step.other */
	struct pt_agg_health health;
	uint64_t step_seq;   /* steps opened, all threads */
	uint64_t step_index; /* steps counted */

	struct thread **threads;
	size_t nthreads, cap_threads;
	uint32_t *slots;     /* open addressing: index + 1 into threads, 0 free */
	size_t nslots;	     /* power of two, at least twice nthreads */
	struct thread *last; /* records come in runs of one thread */
};

static inline uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* ---- threads ---- */

static inline size_t tid_hash(uint32_t tid, size_t nslots)
{
	/* Fibonacci hashing: tids are sequential, spread them. */
	return (size_t)(((uint64_t)tid * 0x9e3779b97f4a7c15ULL) >> 32) & (nslots - 1);
}

static int slots_grow(struct pt_agg *a)
{
	size_t n = a->nslots ? a->nslots * 2 : 64, i, j;
	uint32_t *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (i = 0; i < a->nthreads; i++) {
		j = tid_hash(a->threads[i]->tid, n);
		while (slots[j])
			j = (j + 1) & (n - 1);
		slots[j] = (uint32_t)(i + 1);
	}
	free(a->slots);
	a->slots = slots;
	a->nslots = n;
	return 0;
}

static struct thread *thread_new(struct pt_agg *a, uint32_t tid, uint32_t pid)
{
	struct thread *th;

	th = calloc(1, sizeof(*th) + a->nb * (sizeof(struct tbucket) + sizeof(uint64_t)));
	if (!th)
		return NULL;
	th->tid = tid;
	th->pid = pid;
	th->step_ns = (uint64_t *)(th->b + a->nb);
	for (size_t i = 0; i < PT_MAX_DEPTH; i++)
		th->stack[i].fid = NO_FID;
	return th;
}

static struct thread *thread_get(struct pt_agg *a, uint32_t tid, uint32_t pid)
{
	struct thread *th;
	size_t i;

	if (a->last && a->last->tid == tid)
		return a->last;
	if (a->nslots) {
		for (i = tid_hash(tid, a->nslots); a->slots[i]; i = (i + 1) & (a->nslots - 1)) {
			th = a->threads[a->slots[i] - 1];
			if (th->tid == tid)
				return a->last = th;
		}
	}

	if ((a->nthreads + 1) * 2 > a->nslots && slots_grow(a))
		return NULL;
	if (a->nthreads == a->cap_threads) {
		size_t cap = a->cap_threads ? a->cap_threads * 2 : 16;
		struct thread **t = realloc(a->threads, cap * sizeof(*t));

		if (!t)
			return NULL;
		a->threads = t;
		a->cap_threads = cap;
	}
	th = thread_new(a, tid, pid);
	if (!th)
		return NULL;
	a->threads[a->nthreads++] = th;
	for (i = tid_hash(tid, a->nslots); a->slots[i]; i = (i + 1) & (a->nslots - 1))
		;
	a->slots[i] = (uint32_t)a->nthreads;
	a->health.threads++;
	if (a->nthreads > a->health.threads_max)
		a->health.threads_max = a->nthreads;
	return a->last = th;
}

/* The slot holding tid; nslots when none. */
static size_t slot_of(const struct pt_agg *a, uint32_t tid)
{
	size_t i;

	if (!a->nslots)
		return 0;
	for (i = tid_hash(tid, a->nslots); a->slots[i]; i = (i + 1) & (a->nslots - 1))
		if (a->threads[a->slots[i] - 1]->tid == tid)
			return i;
	return a->nslots;
}

/* Empty slot i of the linear-probing table, moving back the entries after
 * it that would no longer be found (no tombstones, so lookups stay short
 * however many threads come and go). */
static void slot_delete(struct pt_agg *a, size_t i)
{
	size_t mask = a->nslots - 1, j = i, k;

	a->slots[i] = 0;
	for (;;) {
		j = (j + 1) & mask;
		if (!a->slots[j])
			return;
		k = tid_hash(a->threads[a->slots[j] - 1]->tid, a->nslots);
		/* j's entry may move to i when its home k is not in (i, j] */
		if ((i <= j) ? (k <= i || k > j) : (k <= i && k > j)) {
			a->slots[i] = a->slots[j];
			a->slots[j] = 0;
			i = j;
		}
	}
}

static void thread_reset(struct pt_agg *a, struct thread *th);

/* ---- steps ---- */

static void step_commit(struct pt_agg *a, struct thread *th, uint64_t t_end)
{
	struct pt_agg_bucket_stats *other = &a->bst[a->nb];
	uint64_t dur = sub0(t_end, th->step_start), other_ns;
	struct pt_step s;
	size_t i;

	if (!a->steps.dur.count || th->step_start < a->steps.first_start_ns)
		a->steps.first_start_ns = th->step_start;
	if (t_end > a->steps.last_end_ns)
		a->steps.last_end_ns = t_end;
	pt_dist__add(&a->steps.dur, dur);

	for (i = 0; i < a->nb; i++)
		a->bst[i].total_ns += th->step_ns[i];
	for (i = 0; i < th->npend; i++) {
		struct pt_agg_bucket_stats *bs = &a->bst[th->pend[i].b];

		bs->calls++;
		pt_dist__add(&bs->per_call, th->pend[i].v);
	}

	other_ns = sub0(dur, th->step_cov);
	other->calls++;
	other->total_ns += other_ns;
	pt_dist__add(&other->per_call, other_ns);

	if (a->opts.on_step) {
		s.index = a->step_index;
		s.pid = th->pid;
		s.tid = th->tid;
		s.t_start = th->step_start;
		s.t_end = t_end;
		s.bucket_ns = th->step_ns;
		s.other_ns = other_ns;
		s.vmask = th->vmask;
		memcpy(s.val, th->val, sizeof(s.val));
		a->opts.on_step(a->opts.ctx, &s);
	}
	a->step_index++;
}

static void step_open(struct pt_agg *a, struct thread *th, uint64_t t)
{
	uint64_t m;

	th->step_open = true;
	th->step_broken = false;
	th->step_seq = a->step_seq++;
	th->step_start = t;
	th->vmask = 0;
	/* Intervals already open start counting from the step's start. */
	for (m = th->open_mask; m; m &= m - 1)
		th->b[__builtin_ctzll(m)].pstart = t;
	if (th->open_mask)
		th->cov_start = t;
}

/* complete: the step ended where it should (its EXIT, the next boundary);
 * false when loss or the end of the run cut it. */
static void step_close(struct pt_agg *a, struct thread *th, uint64_t t, bool complete)
{
	uint64_t m, piece;

	if (!th->step_open)
		return;
	if (complete && !th->step_broken && th->step_seq >= a->opts.warmup_steps) {
		/* Open intervals are split here: the piece so far is this
		 * step's, the rest goes on (into the next iteration). */
		for (m = th->open_mask; m; m &= m - 1) {
			unsigned int b = __builtin_ctzll(m);
			struct tbucket *tb = &th->b[b];

			piece = sub0(t, tb->pstart);
			th->step_ns[b] += piece;
			tb->acc += piece;
			tb->pstart = t;
		}
		th->hit_mask |= th->open_mask;
		if (th->open_mask) {
			th->step_cov += sub0(t, th->cov_start);
			th->cov_start = t;
		}
		step_commit(a, th, t);
	} else if (complete && !th->step_broken) {
		a->steps.warmup++;
	} else {
		a->steps.incomplete++;
	}

	th->step_open = false;
	memset(th->step_ns, 0, a->nb * sizeof(*th->step_ns));
	th->step_cov = 0;
	th->npend = 0;
}

/* ---- bucket intervals ---- */

static void iv_open(struct thread *th, unsigned int b, uint64_t t)
{
	uint64_t bit = 1ULL << b;

	th->b[b].pstart = t;
	th->b[b].acc = 0;
	th->hit_mask &= ~bit;
	if (!th->open_mask) {
		th->cov_start = t;
		th->cov_last = t;
	}
	th->open_mask |= bit;
}

static void pend_push(struct thread *th, unsigned int b, uint64_t v)
{
	if (th->npend == th->cap_pend) {
		size_t cap = th->cap_pend ? th->cap_pend * 2 : 16;
		struct pend *p = realloc(th->pend, cap * sizeof(*p));

		/* Out of memory: the call goes uncounted, its time stays in
		 * the bucket's total. */
		if (!p)
			return;
		th->pend = p;
		th->cap_pend = cap;
	}
	th->pend[th->npend].b = b;
	th->pend[th->npend].v = v;
	th->npend++;
}

static void iv_close(struct pt_agg *a, struct thread *th, unsigned int b, uint64_t t)
{
	uint64_t bit = 1ULL << b, piece;
	struct tbucket *tb = &th->b[b];

	th->open_mask &= ~bit;
	if (th->step_open) {
		piece = sub0(t, tb->pstart);
		th->step_ns[b] += piece;
		pend_push(th, b, tb->acc + piece);
	} else if (th->hit_mask & bit) {
		/* Ends between steps (call mode, a bucket function around the
		 * step function): its counted steps are all behind it. */
		a->bst[b].calls++;
		pt_dist__add(&a->bst[b].per_call, tb->acc);
	}
	th->hit_mask &= ~bit;

	th->cov_last = t;
	if (!th->open_mask && th->step_open)
		th->step_cov += sub0(t, th->cov_start);
}

/* The interval's last call lost its EXIT: we do not know when it ended. */
static void iv_drop(struct thread *th, unsigned int b)
{
	uint64_t bit = 1ULL << b;

	th->open_mask &= ~bit;
	th->hit_mask &= ~bit;
	/* Keep the union up to the last interval that ended normally: that
	 * much was surely covered, and it keeps the covered time at least
	 * as large as any bucket's, so other + bucket never exceeds the
	 * step. */
	if (!th->open_mask && th->step_open)
		th->step_cov += sub0(th->cov_last, th->cov_start);
}

/* ---- frames ---- */

/* A call whose EXIT we will never see. */
static void frame_lost(struct pt_agg *a, struct thread *th, struct frame *f)
{
	uint64_t m;

	a->health.lost_calls++;
	for (m = f->bmask; m; m &= m - 1) {
		unsigned int b = __builtin_ctzll(m);

		if (th->b[b].cnt && !--th->b[b].cnt)
			iv_drop(th, b);
	}
	if (f->is_step && th->nstep)
		th->nstep--;
	if (f->opener) {
		if (a->opts.step_mode == PT_STEP_CALL)
			step_close(a, th, 0, false);
		else
			th->step_broken = true; /* closes, uncounted, at the next boundary */
	}
	f->fid = NO_FID;
}

/* Frames at depth >= d are calls that have ended: their EXITs were lost. */
static void pop_lost(struct pt_agg *a, struct thread *th, uint32_t d)
{
	while (th->sp > d) {
		struct frame *f = &th->stack[--th->sp];

		if (f->fid != NO_FID)
			frame_lost(a, th, f);
	}
}

static void agg_entry(struct pt_agg *a, struct thread *th, const struct pt_rec *r,
		      const struct fn *fn)
{
	uint32_t d = r->depth;
	struct frame *f;
	uint64_t m;

	pop_lost(a, th, d);
	/* BPF does not report deeper calls; if one comes, it only counts as
	 * an entry. */
	if (d >= PT_MAX_DEPTH)
		return;
	/* Depths below d with no call of ours: BPF tracked calls there that
	 * turned out not to be configured (Python code announced and found
	 * unconfigured while its first call ran). Empty, not lost. */
	for (; th->sp < d; th->sp++)
		th->stack[th->sp].fid = NO_FID;

	f = &th->stack[d];
	f->fid = r->fid;
	f->bmask = fn->bmask;
	f->t_in = r->t_entry;
	f->is_step = fn->is_step;
	f->opener = 0;
	if (fn->is_step) {
		if (a->opts.step_mode == PT_STEP_CALL) {
			if (!th->step_open) {
				step_open(a, th, r->t_entry);
				f->opener = 1;
			}
		} else if (!th->nstep) {
			step_close(a, th, r->t_entry, true);
			step_open(a, th, r->t_entry);
			f->opener = 1;
		}
		th->nstep++;
	}
	for (m = fn->bmask; m; m &= m - 1) {
		unsigned int b = __builtin_ctzll(m);

		if (!th->b[b].cnt++)
			iv_open(th, b, r->t_entry);
	}
	th->sp = d + 1;
}

/*
 * An agent call's EXIT can bring its body's start (PT_RECF_AGENT_ENTRY,
 * to), later than its ENTRY's hit (f->t_in): what the call opened starts
 * there instead. No record of the thread lies between the two (the body
 * begins as the enter probe returns), so a start equal to t_in was set
 * by this ENTRY: the buckets it opened (it is their outermost call, the
 * last to close), the buckets' union when no other is open, and the step
 * it opened in call mode. A split there (an iteration's boundary) stays.
 */
static void rebase(struct pt_agg *a, struct thread *th, const struct frame *f, uint64_t to)
{
	uint64_t mine = 0, m;

	for (m = f->bmask; m; m &= m - 1) {
		unsigned int b = __builtin_ctzll(m);

		if (th->b[b].cnt == 1) {
			mine |= 1ULL << b;
			if (th->b[b].pstart == f->t_in)
				th->b[b].pstart = to;
		}
	}
	if (th->open_mask && !(th->open_mask & ~mine) && th->cov_start == f->t_in)
		th->cov_start = to;
	if (f->opener && a->opts.step_mode == PT_STEP_CALL && th->step_open &&
	    th->step_start == f->t_in)
		th->step_start = to;
}

static void agg_exit(struct pt_agg *a, struct thread *th, const struct pt_rec *r,
		     const struct fn *fn)
{
	uint32_t d = r->depth;
	struct frame *f;
	uint64_t m;

	if (d >= PT_MAX_DEPTH)
		return;
	pop_lost(a, th, d + 1);

	f = &th->stack[d];
	if (d < th->sp && f->fid == r->fid && !(r->flags & PT_RECF_ENTRY_LOST)) {
		if ((r->flags & PT_RECF_AGENT_ENTRY) && r->t_entry > f->t_in)
			rebase(a, th, f, r->t_entry);
		for (m = f->bmask; m; m &= m - 1) {
			unsigned int b = __builtin_ctzll(m);

			if (th->b[b].cnt && !--th->b[b].cnt)
				iv_close(a, th, b, r->t_exit);
		}
		if (f->is_step && th->nstep)
			th->nstep--;
		if (f->opener && a->opts.step_mode == PT_STEP_CALL)
			step_close(a, th, r->t_exit, true);
		f->fid = NO_FID;
		th->sp = d;
		return;
	}

	/* No ENTRY for this call: whatever sits at depth d is an older call
	 * that ended unseen. */
	pop_lost(a, th, d);
	if (fn->is_step && !th->nstep) {
		/* An outermost step call whose ENTRY was lost: a step we never
		 * opened (call), or a boundary we missed, which merged two
		 * iterations into the open one (iteration). */
		if (a->opts.step_mode == PT_STEP_ITERATION && th->step_open)
			th->step_broken = true;
		else
			a->steps.incomplete++;
	}
}

/* ---- API ---- */

struct pt_agg *pt_agg__new(const struct pt_agg_opts *opts)
{
	struct pt_agg *a;

	if (!opts || opts->nbuckets > PT_MAX_BUCKETS ||
	    (opts->step_mode != PT_STEP_CALL && opts->step_mode != PT_STEP_ITERATION)) {
		errno = EINVAL;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->opts = *opts;
	a->nb = opts->nbuckets;
	a->bst = calloc(a->nb + 1, sizeof(*a->bst));
	if (!a->bst) {
		free(a);
		errno = ENOMEM;
		return NULL;
	}
	return a;
}

void pt_agg__free(struct pt_agg *a)
{
	size_t i;

	if (!a)
		return;
	for (i = 0; i < a->nthreads; i++) {
		free(a->threads[i]->pend);
		free(a->threads[i]);
	}
	free(a->threads);
	free(a->slots);
	for (i = 0; i < a->nfn; i++)
		pt_dist__free(&a->fst[i].dur);
	free(a->fst);
	free(a->fn);
	for (i = 0; i <= a->nb; i++)
		pt_dist__free(&a->bst[i].per_call);
	free(a->bst);
	pt_dist__free(&a->steps.dur);
	free(a);
}

int pt_agg__set_func(struct pt_agg *a, uint32_t fid, bool is_step, uint64_t bucket_mask)
{
	if (!a || fid >= PT_AGG_MAX_FID)
		return -EINVAL;
	if (a->nb < 64 && bucket_mask >> a->nb)
		return -EINVAL;

	if (fid >= a->cap_fn) {
		size_t cap = a->cap_fn ? a->cap_fn : 16;
		struct pt_agg_func_stats *fst;
		struct fn *fn;

		while (cap <= fid)
			cap *= 2;
		/* Two reallocs: if the second fails, the first only left
		 * spare room behind, nothing inconsistent. */
		fn = realloc(a->fn, cap * sizeof(*fn));
		if (!fn)
			return -ENOMEM;
		a->fn = fn;
		fst = realloc(a->fst, cap * sizeof(*fst));
		if (!fst)
			return -ENOMEM;
		a->fst = fst;
		memset(a->fn + a->cap_fn, 0, (cap - a->cap_fn) * sizeof(*fn));
		memset(a->fst + a->cap_fn, 0, (cap - a->cap_fn) * sizeof(*fst));
		a->cap_fn = cap;
	}
	a->fn[fid].declared = true;
	a->fn[fid].is_step = is_step;
	a->fn[fid].bmask = bucket_mask;
	if (fid >= a->nfn)
		a->nfn = fid + 1;
	return 0;
}

void pt_agg__record(struct pt_agg *a, const struct pt_rec *r)
{
	const struct fn *fn;
	struct thread *th;

	a->health.records++;
	if (r->type != PT_REC_ENTRY && r->type != PT_REC_EXIT) {
		/* The stream handles link-map changes; they are no call. */
		if (r->type != PT_REC_DLOPEN)
			a->health.bad_records++;
		return;
	}
	if (r->fid >= a->nfn || !a->fn[r->fid].declared) {
		a->health.bad_records++;
		return;
	}
	fn = &a->fn[r->fid];
	th = thread_get(a, r->tid, r->pid);
	if (!th) {
		/* Out of memory for a new thread: nothing of it can be
		 * followed; say so where ignored records are counted. */
		a->health.bad_records++;
		return;
	}

	if (r->type == PT_REC_ENTRY) {
		a->fst[r->fid].entries++;
		agg_entry(a, th, r, fn);
	} else {
		pt_dist__add(&a->fst[r->fid].dur, sub0(r->t_exit, r->t_entry));
		agg_exit(a, th, r, fn);
	}
}

bool pt_agg__value(struct pt_agg *a, uint32_t tid, uint32_t pid, unsigned int role, double x,
		   uint64_t t_entry)
{
	struct thread *th = thread_get(a, tid, pid);

	if (!th || !th->step_open || role >= PT_VROLE_MAX)
		return false;
	if (role != PT_VROLE_COUNT && t_entry != th->step_start)
		return false;
	if (role == PT_VROLE_COUNT)
		role = PT_VROLE_TOKENS;
	if (role == PT_VROLE_TOKENS && (th->vmask & (1u << role)))
		th->val[role] += x;
	else
		th->val[role] = x;
	th->vmask |= 1u << role;
	return true;
}

bool pt_agg__thread_exit(struct pt_agg *a, uint32_t tid)
{
	size_t i = slot_of(a, tid), idx, last;
	struct thread *th;

	if (i >= a->nslots)
		return false;
	idx = a->slots[i] - 1;
	th = a->threads[idx];
	thread_reset(a, th);
	slot_delete(a, i);
	/* the last thread takes the freed index */
	last = a->nthreads - 1;
	if (idx != last) {
		size_t j = slot_of(a, a->threads[last]->tid);

		a->threads[idx] = a->threads[last];
		a->slots[j] = (uint32_t)(idx + 1);
	}
	a->nthreads--;
	if (a->last == th)
		a->last = NULL;
	free(th->pend);
	free(th);
	a->health.threads_ended++;
	return true;
}

void pt_agg__lost(struct pt_agg *a, uint64_t n)
{
	a->health.lost_records += n;
}

/* The thread's open step becomes incomplete, its open calls are dropped. */
static void thread_reset(struct pt_agg *a, struct thread *th)
{
	size_t d;

	step_close(a, th, 0, false);
	for (d = 0; d < th->sp; d++)
		th->stack[d].fid = NO_FID;
	th->sp = 0;
	th->nstep = 0;
	for (d = 0; d < a->nb; d++)
		th->b[d].cnt = 0;
	th->open_mask = 0;
	th->hit_mask = 0;
}

void pt_agg__finish(struct pt_agg *a)
{
	for (size_t i = 0; i < a->nthreads; i++)
		thread_reset(a, a->threads[i]);
}

const struct pt_agg_step_stats *pt_agg__steps(const struct pt_agg *a)
{
	return &a->steps;
}

const struct pt_agg_bucket_stats *pt_agg__bucket(const struct pt_agg *a, size_t i)
{
	return i <= a->nb ? &a->bst[i] : NULL;
}

const struct pt_agg_func_stats *pt_agg__func(const struct pt_agg *a, uint32_t fid)
{
	if (fid >= a->nfn || !a->fn[fid].declared)
		return NULL;
	return &a->fst[fid];
}

size_t pt_agg__nfuncs(const struct pt_agg *a)
{
	return a->nfn;
}

const struct pt_agg_health *pt_agg__health(const struct pt_agg *a)
{
	return &a->health;
}
