// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/proftrace.h"
#include "flame.h"
#include "stacks.h"
#include "top.h"
#include "util/search.h"

struct fn {
	bool sampled, want_lines;
	struct pt_stacks_time t;
	struct pt_stacks_line *lines; /* sorted by line */
	size_t nlines, cap;
	uint64_t mark; /* sample number it was last counted in */
};

struct pt_stacks {
	struct pt_stacks_totals tot;
	struct pt_stacks_thread *thr;
	size_t nthr, cap_thr;
	int *thr_slot; /* tid hash -> index + 1 */
	size_t slots;
	struct fn *fns; /* by fid */
	size_t nfns;
	struct pt_flame *flame;
	const char **path; /* scratch: root-first frame labels */
	uint64_t nsample;
	uint8_t *merged;	       /* tids merged into the "other threads" row, a bit each */
	struct pt_stacks_thread other; /* that row (tid 0), after the others */
	bool has_other;
	struct pt_top *top; /* every function and line */
};

/* tids are below pid_max, at most 2^22 (PID_MAX_LIMIT): a bit each */
#define TID_BITS (1u << 22)
#define OTHER_NAME "other threads"

/* Room for the thread label, pseudo frames, the frames and the leaf. */
#define PATH_MAX_FRAMES (PT_STACKS_MAX_FRAMES + 4)

struct pt_stacks *pt_stacks__new(void)
{
	struct pt_stacks *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->slots = 64;
	st->thr_slot = calloc(st->slots, sizeof(*st->thr_slot));
	st->flame = pt_flame__new();
	pt_flame__set_div(st->flame, 1000); /* ns added, us written */
	st->path = calloc(PATH_MAX_FRAMES, sizeof(*st->path));
	st->top = pt_top__new();
	if (!st->thr_slot || !st->flame || !st->path || !st->top) {
		pt_stacks__free(st);
		return NULL;
	}
	return st;
}

void pt_stacks__free(struct pt_stacks *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->nthr; i++) {
		free(st->thr[i].name);
		free(st->thr[i].comm);
	}
	for (size_t i = 0; i < st->nfns; i++)
		free(st->fns[i].lines);
	free(st->thr);
	free(st->thr_slot);
	free(st->fns);
	free(st->path);
	free(st->merged);
	free(st->other.name);
	pt_flame__free(st->flame);
	pt_top__free(st->top);
	free(st);
}

static size_t slot_of(const struct pt_stacks *st, uint32_t tid)
{
	size_t i = (tid * 2654435761u) & (st->slots - 1);

	while (st->thr_slot[i] && st->thr[st->thr_slot[i] - 1].tid != tid)
		i = (i + 1) & (st->slots - 1);
	return i;
}

/* The row of the threads past the limit (tid 0), each counted once. */
static struct pt_stacks_thread *other(struct pt_stacks *st, uint32_t tid)
{
	if (!st->merged)
		st->merged = calloc(TID_BITS / 8, 1);
	if (tid >= TID_BITS || !st->merged)
		st->tot.threads_merged++; /* cannot tell: counted per sample */
	else if (!(st->merged[tid / 8] & (1u << (tid % 8)))) {
		st->merged[tid / 8] |= (uint8_t)(1u << (tid % 8));
		st->tot.threads_merged++;
	}
	if (!st->has_other) {
		st->other.name = strdup(OTHER_NAME);
		if (!st->other.name)
			return NULL;
		st->has_other = true;
	}
	return &st->other;
}

static struct pt_stacks_thread *thread(struct pt_stacks *st, uint32_t tid)
{
	size_t i = slot_of(st, tid);
	struct pt_stacks_thread *t;

	if (st->thr_slot[i])
		return &st->thr[st->thr_slot[i] - 1];
	if (st->nthr == PT_STACKS_MAX_THREADS)
		return other(st, tid);
	if ((st->nthr + 1) * 2 > st->slots) {
		size_t n = st->slots * 2;
		int *v = calloc(n, sizeof(*v));

		if (!v)
			return NULL;
		free(st->thr_slot);
		st->thr_slot = v;
		st->slots = n;
		for (size_t k = 0; k < st->nthr; k++)
			st->thr_slot[slot_of(st, st->thr[k].tid)] = (int)k + 1;
		i = slot_of(st, tid);
	}
	if (st->nthr == st->cap_thr) {
		size_t cap = st->cap_thr ? st->cap_thr * 2 : 16;

		t = realloc(st->thr, cap * sizeof(*t));
		if (!t)
			return NULL;
		st->thr = t;
		st->cap_thr = cap;
	}
	t = &st->thr[st->nthr++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	st->thr_slot[i] = (int)st->nthr;
	return t;
}

bool pt_stacks__has_thread(const struct pt_stacks *st, uint32_t tid)
{
	/* when full, every thread has a row: its own, or "other threads" */
	return st->thr_slot[slot_of(st, tid)] != 0 || st->nthr == PT_STACKS_MAX_THREADS;
}

int pt_stacks__name_thread(struct pt_stacks *st, uint32_t tid, const char *name)
{
	struct pt_stacks_thread *t = thread(st, tid);
	char *s;

	if (!t)
		return -ENOMEM;
	if (t == &st->other)
		return 0; /* merged: the row keeps its own name */
	s = strdup(name);
	if (!s)
		return -ENOMEM;
	free(t->name);
	t->name = s;
	return 0;
}

int pt_stacks__thread_comm(struct pt_stacks *st, uint32_t tid, const char *comm)
{
	struct pt_stacks_thread *t = thread(st, tid);
	char *s;

	if (!t)
		return -ENOMEM;
	if (t == &st->other)
		return 0;
	s = strdup(comm);
	if (!s)
		return -ENOMEM;
	free(t->comm);
	t->comm = s;
	return 0;
}

int pt_stacks__own_thread(struct pt_stacks *st, uint32_t tid, const char *name)
{
	struct pt_stacks_thread *t = thread(st, tid);
	int e;

	if (!t)
		return -ENOMEM;
	if (t == &st->other)
		return 0;
	e = pt_stacks__name_thread(st, tid, name);
	if (!e)
		t->own = true;
	return e;
}

/* fids are dense (the resolver's row numbers): the table is sized by the
 * largest, so a larger one is refused rather than allocated. */
#define MAX_FID (1u << 24)

static struct fn *fn_of(struct pt_stacks *st, uint32_t fid)
{
	if (fid >= MAX_FID)
		return NULL;
	if (fid >= st->nfns) {
		size_t n = (size_t)fid + 16;
		struct fn *v = realloc(st->fns, n * sizeof(*v));

		if (!v)
			return NULL;
		memset(v + st->nfns, 0, (n - st->nfns) * sizeof(*v));
		st->fns = v;
		st->nfns = n;
	}
	return &st->fns[fid];
}

int pt_stacks__want_lines(struct pt_stacks *st, uint32_t fid)
{
	struct fn *f = fn_of(st, fid);

	if (!f)
		return fid >= MAX_FID ? -EINVAL : -ENOMEM;
	f->want_lines = true;
	return 0;
}

static bool line_before(const void *elem, const void *line)
{
	return ((const struct pt_stacks_line *)elem)->line < *(const uint32_t *)line;
}

/* f's lines stay sorted by number: a new one goes where it belongs. */
static int add_line(struct fn *f, uint32_t line, const struct pt_stacks_sample *s)
{
	size_t lo = pt_lower_bound(f->lines, f->nlines, sizeof(*f->lines), &line, line_before);

	if (lo == f->nlines || f->lines[lo].line != line) {
		if (f->nlines == f->cap) {
			size_t cap = f->cap ? f->cap * 2 : 16;
			struct pt_stacks_line *v = realloc(f->lines, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			f->lines = v;
			f->cap = cap;
		}
		memmove(&f->lines[lo + 1], &f->lines[lo], (f->nlines - lo) * sizeof(*f->lines));
		memset(&f->lines[lo], 0, sizeof(*f->lines));
		f->lines[lo].line = line;
		f->nlines++;
	}
	pt_stacks_time__add(&f->lines[lo].t, s);
	return 0;
}

/* Functions and lines: each function once per sample, lines at its
 * outermost frame (the walk goes innermost to outermost). */
static int count_funcs(struct pt_stacks *st, const struct pt_stacks_sample *s)
{
	size_t outer[PT_STACKS_MAX_FRAMES];
	size_t n = s->n < PT_STACKS_MAX_FRAMES ? s->n : PT_STACKS_MAX_FRAMES;
	uint32_t fids[PT_STACKS_MAX_FRAMES];
	size_t nf = 0;

	st->nsample++;
	for (size_t i = 0; i < n; i++) {
		struct fn *f = fn_of(st, s->f[i].fid);
		size_t k;

		if (s->f[i].fid == PT_SFID_NONE)
			continue;
		if (!f)
			return s->f[i].fid >= MAX_FID ? -EINVAL : -ENOMEM;
		if (f->mark != st->nsample) {
			f->mark = st->nsample;
			f->sampled = true;
			pt_stacks_time__add(&f->t, s);
			fids[nf] = s->f[i].fid;
			outer[nf++] = i;
			continue;
		}
		for (k = 0; k < nf && fids[k] != s->f[i].fid; k++)
			;
		if (k < nf)
			outer[k] = i;
	}
	for (size_t k = 0; k < nf; k++) {
		struct fn *f = &st->fns[fids[k]];
		uint32_t line = s->f[outer[k]].line;

		if (f->want_lines && line && add_line(f, line, s))
			return -ENOMEM;
	}
	return 0;
}

static int add_flame(struct pt_stacks *st, const struct pt_stacks_sample *s,
		     const struct pt_stacks_thread *t)
{
	char root[96];
	size_t np = 0, n = s->n < PT_STACKS_MAX_FRAMES ? s->n : PT_STACKS_MAX_FRAMES;
	uint64_t held;

	if (!s->weight_ns)
		return 0;
	if (t == &st->other)
		snprintf(root, sizeof(root), "%s", OTHER_NAME);
	else if (t->name)
		snprintf(root, sizeof(root), "%s (tid %u)", t->name, t->tid);
	else
		snprintf(root, sizeof(root), "tid %u", t->tid);
	st->path[np++] = root;
	if (s->flags & PT_SAMPLEF_TRUNCATED)
		st->path[np++] = "[truncated: deeper than 128 frames]";
	else if (s->flags & PT_SAMPLEF_UNREADABLE)
		st->path[np++] = n ? "[unreadable frame]" : "[stack unreadable]";
	for (size_t i = n; i-- > 0;)
		st->path[np++] = s->f[i].label;
	if (!n && !(s->flags & PT_SAMPLEF_UNREADABLE))
		st->path[np++] =
			s->flags & PT_SAMPLEF_RECHECKED	 ? "[stack unknown: not read at switch-out]"
			: s->flags & PT_SAMPLEF_NO_STACK ? "[stack unknown: asleep since attach]"
			: s->flags & PT_SAMPLEF_NOT_PYTHON ? "[not a Python thread]"
							   : "[no Python frame]";
	if (s->offcpu)
		st->path[np++] = PT_STACKS_OFFCPU;
	if (s->offcpu || !s->held_ns)
		return pt_flame__add(st->flame, st->path, np, s->weight_ns);
	/* the periods the timer missed: off the CPU at this stack */
	held = s->held_ns < s->weight_ns ? s->held_ns : s->weight_ns;
	if (held < s->weight_ns && pt_flame__add(st->flame, st->path, np, s->weight_ns - held))
		return -ENOMEM;
	st->path[np++] = PT_STACKS_OFFCPU;
	return pt_flame__add(st->flame, st->path, np, held);
}

int pt_stacks__add(struct pt_stacks *st, const struct pt_stacks_sample *s)
{
	struct pt_stacks_thread *t = thread(st, s->tid);
	struct pt_stacks_totals *tot = &st->tot;

	if (!t)
		return -ENOMEM;
	if (t->own) {
		pt_stacks_time__add(&t->t, s);
		pt_stacks_time__add(&tot->own, s);
		return 0;
	}
	pt_stacks_time__add(&tot->t, s);
	pt_stacks_time__add(&t->t, s);
	if (!(s->flags & (PT_SAMPLEF_NOT_PYTHON | PT_SAMPLEF_NO_STACK)) ||
	    (s->flags & PT_SAMPLEF_RECHECKED))
		t->python = true;
	if (s->offcpu)
		tot->intervals++;
	else if (s->flags & PT_SAMPLEF_NOT_PYTHON)
		tot->not_python += s->nsamples ? s->nsamples : 1;
	else if (s->n <= s->native)
		tot->no_frames++; /* native frames only */
	else
		tot->python_samples++;
	tot->truncated += !!(s->flags & PT_SAMPLEF_TRUNCATED);
	tot->unreadable += !!(s->flags & PT_SAMPLEF_UNREADABLE);
	tot->no_stack += !!(s->flags & PT_SAMPLEF_NO_STACK);
	if (!s->offcpu && s->held_ns) {
		tot->late_samples++;
		tot->late_ns += s->held_ns;
	}
	tot->unknown_frames += s->unknown;
	if (count_funcs(st, s) || pt_top__add(st->top, s))
		return -ENOMEM;
	return add_flame(st, s, t);
}

const struct pt_top *pt_stacks__top(const struct pt_stacks *st)
{
	return st->top;
}

const struct pt_stacks_totals *pt_stacks__totals(const struct pt_stacks *st)
{
	return &st->tot;
}

size_t pt_stacks__nthreads(const struct pt_stacks *st)
{
	return st->nthr + st->has_other;
}

const struct pt_stacks_thread *pt_stacks__thread(const struct pt_stacks *st, size_t i)
{
	if (i < st->nthr)
		return &st->thr[i];
	return i == st->nthr && st->has_other ? &st->other : NULL;
}

const struct pt_stacks_time *pt_stacks__func(const struct pt_stacks *st, uint32_t fid)
{
	return fid < st->nfns && st->fns[fid].sampled ? &st->fns[fid].t : NULL;
}

const struct pt_stacks_line *pt_stacks__lines(const struct pt_stacks *st, uint32_t fid, size_t *n)
{
	*n = 0;
	if (fid >= st->nfns || !st->fns[fid].nlines)
		return NULL;
	*n = st->fns[fid].nlines;
	return st->fns[fid].lines;
}

const struct pt_flame *pt_stacks__flame(const struct pt_stacks *st)
{
	return st->flame;
}
