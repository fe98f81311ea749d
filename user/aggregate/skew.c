// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "skew.h"

void pt_skew__add(struct pt_skew_steps *s, uint64_t t_start, uint64_t t_end)
{
	if (s->oom)
		return;
	if (s->n >= PT_SKEW_MAX_STEPS) {
		s->not_kept++; /* the comparison covers the first ones */
		return;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		uint64_t *v = realloc(s->t, cap * 2 * sizeof(*v));

		if (!v) {
			s->oom = true;
			return;
		}
		s->t = v;
		s->cap = cap;
	}
	s->t[2 * s->n] = t_start;
	s->t[2 * s->n + 1] = t_end;
	s->n++;
}

void pt_skew__free(struct pt_skew_steps *s)
{
	free(s->t);
	memset(s, 0, sizeof(*s));
}

static uint64_t overlap(const struct pt_skew_steps *a, size_t i, const struct pt_skew_steps *b,
			size_t k)
{
	uint64_t s = a->t[2 * i] > b->t[2 * k] ? a->t[2 * i] : b->t[2 * k];
	uint64_t e = a->t[2 * i + 1] < b->t[2 * k + 1] ? a->t[2 * i + 1] : b->t[2 * k + 1];

	return e > s ? e - s : 0;
}

/* Steps "line up" when they overlap for at least half of the shorter
 * one: lockstep ranks start a step together, independent loops only
 * touch by chance. */
static bool lines_up(const struct pt_skew_steps *a, size_t i, const struct pt_skew_steps *b,
		     size_t k)
{
	uint64_t da = a->t[2 * i + 1] - a->t[2 * i], db = b->t[2 * k + 1] - b->t[2 * k];

	return 2 * overlap(a, i, b, k) >= (da < db ? da : db);
}

/* b's step that lines up with a's step i, overlapping it most; SIZE_MAX
 * when none does. */
static size_t best_match(const struct pt_skew_steps *a, size_t i, const struct pt_skew_steps *b)
{
	size_t best = SIZE_MAX;
	uint64_t most = 0;

	for (size_t k = 0; k < b->n; k++) {
		uint64_t o;

		if (b->t[2 * k] >= a->t[2 * i + 1])
			break; /* steps are in commit order: later ones start later */
		o = overlap(a, i, b, k);
		if (o > most && lines_up(a, i, b, k)) {
			most = o;
			best = k;
		}
	}
	return best;
}

/* How far the steps are shifted: p's step k is the reference's step
 * k - offset. Tried on the reference's first steps, as the very first one
 * may stand alone (a rank's first step, slowed by page faults, can end
 * before another's starts). */
#define ALIGN_TRIES 16
#define LOCKSTEP_SHARE 0.9

int pt_skew__compute(const struct pt_skew_steps *const *procs, size_t n, struct pt_skew *out)
{
	size_t ref = 0, start = 0;
	const struct pt_skew_steps *R;

	memset(out, 0, sizeof(*out));
	pt_dist__init(&out->skew);
	if (n < 2)
		return -EINVAL;
	out->nprocs = n;
	out->first = calloc(n, sizeof(*out->first));
	out->slowest = calloc(n, sizeof(*out->slowest));
	out->fastest = calloc(n, sizeof(*out->fastest));
	out->offset = calloc(n, sizeof(*out->offset));
	if (!out->first || !out->slowest || !out->fastest || !out->offset)
		return -ENOMEM;
	for (size_t p = 0; p < n; p++) {
		if (procs[p]->oom) {
			out->why = "out of memory keeping the steps";
			return 0;
		}
		if (!procs[p]->n) {
			out->why = "a process has no counted steps";
			return 0;
		}
		if (procs[p]->t[0] > procs[ref]->t[0])
			ref = p;
	}
	R = procs[ref];
	for (size_t p = 0; p < n; p++) {
		size_t k = SIZE_MAX, j;

		for (j = 0; p != ref && j < R->n && j < ALIGN_TRIES; j++) {
			k = best_match(R, j, procs[p]);
			if (k != SIZE_MAX)
				break;
		}
		if (p != ref && k == SIZE_MAX) {
			out->why = "the processes' steps do not overlap in time: they do not run "
				   "in lockstep";
			return 0;
		}
		out->offset[p] = p == ref ? 0 : (long)k - (long)j;
		if (out->offset[p] < 0 && (size_t)-out->offset[p] > start)
			start = (size_t)-out->offset[p];
	}
	for (size_t p = 0; p < n; p++)
		out->first[p] = (size_t)((long)start + out->offset[p]);
	for (size_t i = start; i < R->n; i++) {
		uint64_t lo = UINT64_MAX, hi = 0;
		size_t slow = 0, fast = 0;
		bool line_up = true, end = false;

		for (size_t p = 0; p < n; p++) {
			size_t k = (size_t)((long)i + out->offset[p]);
			uint64_t d;

			if (k >= procs[p]->n) {
				end = true;
				break;
			}
			if (!lines_up(R, i, procs[p], k)) {
				line_up = false;
				continue;
			}
			d = procs[p]->t[2 * k + 1] - procs[p]->t[2 * k];
			if (d > hi) {
				hi = d;
				slow = p;
			}
			if (d < lo) {
				lo = d;
				fast = p;
			}
		}
		if (end)
			break;
		if (!line_up) {
			out->unaligned++;
			continue;
		}
		if (pt_dist__add(&out->skew, hi - lo))
			return -ENOMEM;
		out->slowest[slow]++;
		out->fastest[fast]++;
		out->slowest_ms_sum += (double)hi / 1e6;
		out->skew_ms_sum += (double)(hi - lo) / 1e6;
		out->aligned++;
	}
	/* Independent loops line up now and then by chance: figures only
	 * when nearly every index does. */
	if (out->aligned < LOCKSTEP_SHARE * (double)(out->aligned + out->unaligned)) {
		out->why = "the processes' steps line up in time on fewer than 90% of step "
			   "indices: they do not run in lockstep";
		out->aligned = 0;
		pt_dist__free(&out->skew);
		pt_dist__init(&out->skew);
		memset(out->slowest, 0, n * sizeof(*out->slowest));
		memset(out->fastest, 0, n * sizeof(*out->fastest));
		out->slowest_ms_sum = out->skew_ms_sum = 0;
	}
	return 0;
}

void pt_skew__free_result(struct pt_skew *k)
{
	free(k->first);
	free(k->slowest);
	free(k->fastest);
	free(k->offset);
	pt_dist__free(&k->skew);
	memset(k, 0, sizeof(*k));
}
