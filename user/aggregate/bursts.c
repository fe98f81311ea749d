// SPDX-License-Identifier: BSD-2-Clause
/*
 * runs: counted steps -> runs split on idle gaps -> across-run statistics.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bursts.h"

struct sstep {
	uint64_t t0, t1;
	double tokens, batch;
	bool has_tok, has_batch;
	size_t b; /* index of its nb + 1 bucket times in bns */
};

/*
 * Memory stays bounded over any run length: steps wait in a buffer of at
 * most pending_max (threads commit steps out of start order, so a few must
 * wait to be put in order), and when it is full the older half is sorted
 * and folded into runs, which keep only sums and a distribution. A step
 * that arrives after later-starting steps were folded (a step longer than
 * the buffer holds of other threads' steps) is still counted, in the run
 * being built, and counted in `late`.
 */
#define PENDING_MAX_DEFAULT 16384

struct pt_bursts {
	size_t nb;
	uint64_t gap_ns;
	unsigned int warmup_runs;
	struct sstep *steps; /* pending */
	size_t nsteps, cap, pending_max;
	uint64_t *bns; /* (nb + 1) per step */
	bool failed;
	struct pt_run *runs;
	size_t nruns;
	/* folding state: the run being built (nruns - 1), the latest end
	 * and the latest start folded so far */
	bool open;
	uint64_t last_end, last_start;
	uint64_t late;
	struct pt_runs_aggregate agg;
};

struct pt_bursts *pt_bursts__new(size_t nbuckets, uint64_t gap_ns, unsigned int warmup_runs)
{
	struct pt_bursts *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	rs->nb = nbuckets;
	rs->gap_ns = gap_ns;
	rs->warmup_runs = warmup_runs;
	rs->pending_max = PENDING_MAX_DEFAULT;
	return rs;
}

void pt_bursts__set_pending_max(struct pt_bursts *rs, size_t n)
{
	rs->pending_max = n < 2 ? 2 : n;
}

uint64_t pt_bursts__late(const struct pt_bursts *rs)
{
	return rs->late;
}

static int by_start(const void *a, const void *b);
static int fold_pending(struct pt_bursts *rs, size_t n);

void pt_bursts__free(struct pt_bursts *rs)
{
	if (!rs)
		return;
	for (size_t i = 0; i < rs->nruns; i++) {
		pt_dist__free(&rs->runs[i].dur);
		free(rs->runs[i].bucket_ns);
	}
	free(rs->runs);
	free(rs->steps);
	free(rs->bns);
	free(rs->agg.bucket_ms);
	free(rs->agg.bucket_share);
	free(rs);
}

int pt_bursts__step(struct pt_bursts *rs, const struct pt_step *s)
{
	struct sstep *st;

	if (rs->failed)
		return -ENOMEM;
	if (rs->nsteps >= rs->pending_max && fold_pending(rs, rs->nsteps / 2)) {
		rs->failed = true;
		return -ENOMEM;
	}
	if (rs->nsteps == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 1024;
		struct sstep *v = realloc(rs->steps, cap * sizeof(*v));
		uint64_t *b;

		if (!v) {
			rs->failed = true;
			return -ENOMEM;
		}
		rs->steps = v;
		b = realloc(rs->bns, cap * (rs->nb + 1) * sizeof(*b));
		if (!b) {
			rs->failed = true;
			return -ENOMEM;
		}
		rs->bns = b;
		rs->cap = cap;
	}
	st = &rs->steps[rs->nsteps];
	st->t0 = s->t_start;
	st->t1 = s->t_end > s->t_start ? s->t_end : s->t_start;
	st->has_tok = s->vmask & (1u << PT_VROLE_TOKENS);
	st->tokens = st->has_tok ? s->val[PT_VROLE_TOKENS] : 0;
	st->has_batch = s->vmask & (1u << PT_VROLE_BATCH);
	st->batch = st->has_batch ? s->val[PT_VROLE_BATCH] : 0;
	st->b = rs->nsteps * (rs->nb + 1);
	if (rs->nb)
		memcpy(&rs->bns[st->b], s->bucket_ns, rs->nb * sizeof(uint64_t));
	rs->bns[st->b + rs->nb] = s->other_ns;
	rs->nsteps++;
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct sstep *x = a, *y = b;

	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static void stat_add(struct pt_run_stat *s, double x, double *m2)
{
	/* Welford, as dist.c does for steps */
	double d = x - s->mean;

	s->n++;
	s->mean += d / (double)s->n;
	*m2 += d * (x - s->mean);
}

static void stat_end(struct pt_run_stat *s, double m2)
{
	s->std = s->n ? sqrt(m2 / (double)s->n) : 0;
}

static int aggregate(struct pt_bursts *rs)
{
	struct pt_runs_aggregate *A = &rs->agg;
	size_t nb1 = rs->nb + 1;
	double m2[8] = { 0 }, *bm2, *sm2;

	A->bucket_ms = calloc(nb1, sizeof(*A->bucket_ms));
	A->bucket_share = calloc(nb1, sizeof(*A->bucket_share));
	bm2 = calloc(2 * nb1, sizeof(*bm2));
	if (!A->bucket_ms || !A->bucket_share || !bm2) {
		free(bm2);
		return -ENOMEM;
	}
	sm2 = bm2 + nb1;
	for (size_t i = 0; i < rs->nruns; i++) {
		const struct pt_run *r = &rs->runs[i];
		double n = (double)r->dur.count, secs = (double)(r->t1 - r->t0) / 1e9;

		if (r->warmup) {
			A->warmup++;
			continue;
		}
		A->runs++;
		stat_add(&A->steps, n, &m2[0]);
		stat_add(&A->duration_s, secs, &m2[1]);
		if (secs > 0)
			stat_add(&A->steps_per_s, n / secs, &m2[2]);
		stat_add(&A->mean_ms, r->dur.sum / n / 1e6, &m2[3]);
		stat_add(&A->p50_ms, pt_dist__quantile(&r->dur, 0.5) / 1e6, &m2[4]);
		stat_add(&A->p90_ms, pt_dist__quantile(&r->dur, 0.9) / 1e6, &m2[5]);
		stat_add(&A->p99_ms, pt_dist__quantile(&r->dur, 0.99) / 1e6, &m2[6]);
		if (r->tok_steps && r->tok_ns > 0)
			stat_add(&A->tok_per_s, r->tokens / (r->tok_ns / 1e9), &m2[7]);
		for (size_t b = 0; b < nb1; b++) {
			stat_add(&A->bucket_ms[b], (double)r->bucket_ns[b] / n / 1e6, &bm2[b]);
			if (r->dur.sum > 0)
				stat_add(&A->bucket_share[b], (double)r->bucket_ns[b] / r->dur.sum,
					 &sm2[b]);
		}
	}
	stat_end(&A->steps, m2[0]);
	stat_end(&A->duration_s, m2[1]);
	stat_end(&A->steps_per_s, m2[2]);
	stat_end(&A->mean_ms, m2[3]);
	stat_end(&A->p50_ms, m2[4]);
	stat_end(&A->p90_ms, m2[5]);
	stat_end(&A->p99_ms, m2[6]);
	stat_end(&A->tok_per_s, m2[7]);
	for (size_t b = 0; b < nb1; b++) {
		stat_end(&A->bucket_ms[b], bm2[b]);
		stat_end(&A->bucket_share[b], sm2[b]);
	}
	free(bm2);
	return 0;
}

/* One step, in start order (but for late ones), into the runs. */
static int fold(struct pt_bursts *rs, const struct sstep *st, const uint64_t *bns)
{
	struct pt_run *r = rs->open ? &rs->runs[rs->nruns - 1] : NULL;

	if (r && st->t0 < rs->last_start)
		rs->late++;
	/* a gap: from the latest end so far (steps of other threads may
	 * still run) to this start */
	if (!r || (st->t0 > rs->last_end && st->t0 - rs->last_end >= rs->gap_ns)) {
		struct pt_run *v = realloc(rs->runs, (rs->nruns + 1) * sizeof(*v));

		if (!v)
			return -ENOMEM;
		rs->runs = v;
		r = &rs->runs[rs->nruns];
		memset(r, 0, sizeof(*r));
		r->bucket_ns = calloc(rs->nb + 1, sizeof(*r->bucket_ns));
		if (!r->bucket_ns)
			return -ENOMEM;
		r->index = (unsigned int)rs->nruns;
		r->warmup = rs->nruns < rs->warmup_runs;
		r->t0 = st->t0;
		rs->nruns++;
		rs->open = true;
	}
	if (st->t0 < r->t0)
		r->t0 = st->t0; /* a late step */
	if (st->t0 > rs->last_start)
		rs->last_start = st->t0;
	pt_dist__add(&r->dur, st->t1 - st->t0);
	if (st->t1 > r->t1)
		r->t1 = st->t1;
	if (st->t1 > rs->last_end)
		rs->last_end = st->t1;
	for (size_t b = 0; b <= rs->nb; b++)
		r->bucket_ns[b] += bns[b];
	if (st->has_batch) {
		r->batch_steps++;
		r->batch_sum += st->batch;
	}
	if (st->has_tok) {
		r->tok_steps++;
		r->tokens += st->tokens;
		r->tok_ns += (double)(st->t1 - st->t0);
	}
	return 0;
}

/* Sort the pending steps and fold the n earliest; the rest stay pending. */
static int fold_pending(struct pt_bursts *rs, size_t n)
{
	size_t nb1 = rs->nb + 1, i;
	uint64_t *tmp;

	if (!rs->nsteps) /* qsort(NULL, 0, ...) is undefined */
		return 0;
	qsort(rs->steps, rs->nsteps, sizeof(*rs->steps), by_start);
	for (i = 0; i < n && i < rs->nsteps; i++)
		if (fold(rs, &rs->steps[i], &rs->bns[rs->steps[i].b]))
			return -ENOMEM;
	/* keep the rest, their bucket times compacted in their new order */
	tmp = malloc((rs->nsteps - i) * nb1 * sizeof(*tmp) + 1);
	if (!tmp)
		return -ENOMEM;
	for (size_t k = i; k < rs->nsteps; k++) {
		memcpy(&tmp[(k - i) * nb1], &rs->bns[rs->steps[k].b], nb1 * sizeof(*tmp));
		rs->steps[k - i] = rs->steps[k];
		rs->steps[k - i].b = (k - i) * nb1;
	}
	memcpy(rs->bns, tmp, (rs->nsteps - i) * nb1 * sizeof(*tmp));
	free(tmp);
	rs->nsteps -= i;
	return 0;
}

int pt_bursts__finish(struct pt_bursts *rs)
{
	if (rs->failed)
		return -ENOMEM;
	if (fold_pending(rs, rs->nsteps))
		return -ENOMEM;
	return aggregate(rs);
}

bool pt_bursts__failed(const struct pt_bursts *rs)
{
	return rs->failed;
}

size_t pt_bursts__count(const struct pt_bursts *rs)
{
	return rs->nruns;
}

const struct pt_run *pt_bursts__get(const struct pt_bursts *rs, size_t i)
{
	return i < rs->nruns ? &rs->runs[i] : NULL;
}

const struct pt_runs_aggregate *pt_bursts__aggregate(const struct pt_bursts *rs)
{
	return &rs->agg;
}

size_t pt_bursts__nbuckets(const struct pt_bursts *rs)
{
	return rs->nb;
}

uint64_t pt_bursts__gap_ns(const struct pt_bursts *rs)
{
	return rs->gap_ns;
}
