/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Runs: a server serves in bursts. A run is a stretch of counted steps
 * with no idle gap of run_gap_ms or more between one step's end and the
 * next step's start (over all threads). Per run: step figures, bucket
 * averages and tokens; across runs (the first warmup_runs left out):
 * mean and standard deviation of each. Pure C, fed the aggregator's
 * counted steps; split at the end, when every step is known (threads
 * commit steps out of start order).
 */
#ifndef PT_BURSTS_H
#define PT_BURSTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agg.h"
#include "dist.h"

struct pt_run {
	unsigned int index;
	bool warmup;	     /* one of the first warmup_runs */
	uint64_t t0, t1;     /* first step's start, last step's end (ns) */
	struct pt_dist dur;  /* its steps */
	uint64_t *bucket_ns; /* nbuckets + 1 (the last: step.other) */
	uint64_t tok_steps;  /* steps with a token figure */
	double tokens, tok_ns;
	uint64_t batch_steps; /* steps with a batch figure */
	double batch_sum;
};

/* mean and population standard deviation over the counted runs */
struct pt_run_stat {
	double mean, std;
	size_t n; /* runs with the figure */
};

struct pt_runs_aggregate {
	size_t runs; /* counted (not warmup) */
	size_t warmup;
	struct pt_run_stat steps, steps_per_s, mean_ms, p50_ms, p90_ms, p99_ms, duration_s;
	struct pt_run_stat tok_per_s;
	struct pt_run_stat *bucket_ms;	  /* nbuckets + 1: ms per step */
	struct pt_run_stat *bucket_share; /* nbuckets + 1: share of step time */
};

struct pt_bursts;

struct pt_bursts *pt_bursts__new(size_t nbuckets, uint64_t gap_ns, unsigned int warmup_runs);
void pt_bursts__free(struct pt_bursts *rs);
/* A counted step. 0 or -ENOMEM (then runs are left out: pt_bursts__failed). */
int pt_bursts__step(struct pt_bursts *rs, const struct pt_step *s);
/* Split and compute. 0 or -ENOMEM. */
int pt_bursts__finish(struct pt_bursts *rs);
bool pt_bursts__failed(const struct pt_bursts *rs);
/* Steps are held until they can be put in start order, at most n (default
 * 16384, whatever the run's length); then the older half is folded. */
void pt_bursts__set_pending_max(struct pt_bursts *rs, size_t n);
/* Steps folded after a later-starting one (longer than the buffer's
 * reach): counted in the run being built, their start order lost. */
uint64_t pt_bursts__late(const struct pt_bursts *rs);
size_t pt_bursts__count(const struct pt_bursts *rs);
const struct pt_run *pt_bursts__get(const struct pt_bursts *rs, size_t i);
const struct pt_runs_aggregate *pt_bursts__aggregate(const struct pt_bursts *rs);
size_t pt_bursts__nbuckets(const struct pt_bursts *rs);
uint64_t pt_bursts__gap_ns(const struct pt_bursts *rs);

#endif
