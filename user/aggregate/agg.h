/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The aggregator: turns the record stream (bpf/proftrace.h) into steps,
 * buckets and per-function figures. Pure C, no libbpf: tests drive it with
 * synthetic records.
 *
 * Input order: records of one thread arrive in time order (the ring buffer
 * keeps each thread's order); threads interleave freely.
 *
 * Semantics (docs/summary.md):
 * - functions: every EXIT record is one call of its function, t_exit - t_entry,
 *   inside steps or not, warmup included.
 * - steps, mode=call: the outermost call of the step function on a thread
 *   (recursion does not open a second step). mode=iteration: from one
 *   outermost ENTRY of the step function to the next on the same thread; the
 *   last iteration of a thread never closes and is counted as incomplete.
 * - buckets: per thread, the union of the outermost calls of the bucket's
 *   functions, intersected with the step window of the same thread. A bucket
 *   interval that straddles an iteration boundary is split at it. Time
 *   outside any step is not in any bucket.
 * - step.other: step time not covered by any bucket (union of all buckets).
 * - warmup: the first warmup_steps steps to start (in record order) are not
 *   counted in steps, buckets or step.other.
 * - Lost records (ring full): a step whose ENTRY or EXIT was lost is not
 *   counted (incomplete); a bucket interval whose EXIT was lost is dropped;
 *   an EXIT whose ENTRY was lost still counts as a function call.
 */
#ifndef PT_AGG_H
#define PT_AGG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/proftrace.h"
#include "config/config.h"
#include "dist.h"

/* A committed (counted) step, passed to opts.on_step. */
struct pt_step {
	uint64_t index; /* 0-based among counted steps, in commit order */
	uint32_t pid, tid;
	uint64_t t_start, t_end;   /* ns */
	const uint64_t *bucket_ns; /* nbuckets entries, time in each bucket */
	uint64_t other_ns;	   /* step time no bucket covers */
	/* Values read during the step (pt_agg__value): bit r of vmask set
	 * when val[r] holds role r (PT_VROLE_TOKENS, _KVLEN, _BATCH). */
	unsigned int vmask;
	double val[3];
};

struct pt_agg_opts {
	size_t nbuckets; /* <= PT_MAX_BUCKETS */
	enum pt_step_mode step_mode;
	unsigned int warmup_steps;
	void (*on_step)(void *ctx, const struct pt_step *s); /* optional */
	void *ctx;
};

struct pt_agg_step_stats {
	struct pt_dist dur;	 /* counted steps */
	uint64_t warmup;	 /* steps skipped as warmup */
	uint64_t incomplete;	 /* steps open at the end or broken by loss */
	uint64_t first_start_ns; /* of counted steps; 0 when none */
	uint64_t last_end_ns;
};

struct pt_agg_bucket_stats {
	uint64_t calls;		 /* outermost intervals ending in counted steps */
	uint64_t total_ns;	 /* time attributed to counted steps */
	struct pt_dist per_call; /* attributed time of each of those calls */
};

struct pt_agg_func_stats {
	struct pt_dist dur; /* every completed call */
	uint64_t entries;   /* ENTRY records seen */
};

struct pt_agg_health {
	uint64_t records;	/* records given to pt_agg__record */
	uint64_t lost_records;	/* from pt_agg__lost */
	uint64_t lost_calls;	/* open calls discarded because their EXIT was lost */
	uint64_t bad_records;	/* unknown type or fid: ignored */
	uint64_t threads;	/* distinct threads seen */
	uint64_t threads_ended; /* of those, ended and freed (pt_agg__thread_exit) */
	uint64_t threads_max;	/* most threads held at once */
};

struct pt_agg;

struct pt_agg *pt_agg__new(const struct pt_agg_opts *opts);
void pt_agg__free(struct pt_agg *a);

/* Declare function fid with its roles; fids are small dense integers.
 * May be called while records flow (libraries attached late).
 * 0 or -errno. */
int pt_agg__set_func(struct pt_agg *a, uint32_t fid, bool is_step, uint64_t bucket_mask);

void pt_agg__record(struct pt_agg *a, const struct pt_rec *r);
/*
 * A value read at a call on thread tid (valexpr.h roles): PT_VROLE_TOKENS
 * and PT_VROLE_COUNT add to the step open on that thread, KVLEN and BATCH
 * set it. The step's own roles (all but COUNT) come from the call that
 * opened the step, entered at t_entry: a recursive call of the step
 * function inside it is not another step, and its values are ignored.
 * false: the value was not used (no step open on the thread, or not the
 * opening call).
 */
bool pt_agg__value(struct pt_agg *a, uint32_t tid, uint32_t pid, unsigned int role, double x,
		   uint64_t t_entry);
/*
 * Thread tid ended (PT_REC_TEXIT, after its last record): what is kept for
 * it is freed. A step still open on it is incomplete, as at the end of the
 * run; calls still open are dropped. Memory then depends on the threads
 * alive at once, not on how many a run has seen. false: tid unknown.
 */
bool pt_agg__thread_exit(struct pt_agg *a, uint32_t tid);
/* n records were lost before they reached us (BPF drop counter delta). */
void pt_agg__lost(struct pt_agg *a, uint64_t n);
/* End of the run: open steps become incomplete, open calls are dropped. */
void pt_agg__finish(struct pt_agg *a);

const struct pt_agg_step_stats *pt_agg__steps(const struct pt_agg *a);
/* i in [0, nbuckets) for configured buckets; i == nbuckets is step.other
 * (calls = counted steps, per_call = other time per step). */
const struct pt_agg_bucket_stats *pt_agg__bucket(const struct pt_agg *a, size_t i);
/* NULL for an fid never declared. */
const struct pt_agg_func_stats *pt_agg__func(const struct pt_agg *a, uint32_t fid);
size_t pt_agg__nfuncs(const struct pt_agg *a); /* 1 + highest fid declared */
const struct pt_agg_health *pt_agg__health(const struct pt_agg *a);

#endif
