/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the probes cost the target, and times with that cost taken out.
 *
 * A probed call costs its thread `pair_ns` of CPU (entry and return hits
 * together), of which `self_ns` falls inside the interval proftrace
 * measures for that call (after the entry timestamp, before the return
 * timestamp); an interval that encloses the whole call pays all of
 * pair_ns. Both figures come per probe-site kind from the calibration
 * (run/calib.c). So, per interval on a thread:
 *
 *     corrected = measured - self_ns(own probe) - sum(pair_ns of the probed
 *                 calls that completed inside it)
 *
 * for every function call, step (call mode: the opening call; iteration
 * mode: entry to next entry, no self term) and outermost bucket call in a
 * counted step; step.other's cost is the step's less its buckets'.
 * An estimate: intervals split at iteration boundaries, calls whose
 * records were lost and the sampler's interrupts are not in it. Fed with
 * the same records as the aggregator, before it (pt_agg's on_step comes
 * after), pure C like it.
 */
#ifndef PT_OVERHEAD_H
#define PT_OVERHEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/proftrace.h"
#include "config/config.h"
#include "agg.h"
#include "dist.h"

/* Probe-site kinds, each with its own cost (docs/summary.md#overhead). */
enum pt_site_kind {
	PT_SITE_EMULATED = 0,  /* uprobe on an instruction the kernel emulates (push, branch) */
	PT_SITE_NOP5,	       /* uprobe on a 5-byte nop (the agent's marker functions) */
	PT_SITE_SSTEP,	       /* uprobe on an instruction the kernel single-steps */
	PT_SITE_AGENT,	       /* a named Python call through the agent (its two nop5 sites
				* and its interpreter hook) */
	PT_SITE_FRAME,	       /* the frame probe: a uprobe pair on the frame evaluator,
				* on every Python call, named or not */
	PT_SITE_SAMPLE,	       /* one stack sample */
	PT_SITE_FRAME_UNNAMED, /* the frame probe on a frame no py: probe names (its
				* entry hit; the return is not hijacked where the
				* kernel has uprobe sessions) */
	PT_SITE_NKINDS
};

const char *pt_site_kind__str(enum pt_site_kind k);

struct pt_ovh_opts {
	size_t nbuckets;
	enum pt_step_mode step_mode;
};

struct pt_ovh_func {
	uint64_t calls;
	double cost_ns; /* sum over its calls of self_ns + nested pair_ns */
	/* each call whose entry was seen: its time less its cost (never
	 * below 0), for a corrected minimum and median per function */
	struct pt_dist corrected;
};

struct pt_ovh;

struct pt_ovh *pt_ovh__new(const struct pt_ovh_opts *opts);
void pt_ovh__free(struct pt_ovh *o);

/* fid's roles (as pt_agg__set_func) and what one of its calls costs. */
int pt_ovh__set_func(struct pt_ovh *o, uint32_t fid, bool is_step, uint64_t bucket_mask,
		     enum pt_site_kind kind, double pair_ns, double self_ns);
/* What one unnamed frame costs (PT_SITE_FRAME_UNNAMED): the frame
 * probe's hits between two records of a thread (pt_rec.unnamed) are
 * charged to the intervals open on it, as nested calls are. */
void pt_ovh__set_unnamed_cost(struct pt_ovh *o, double ns);
/* Every record given to pt_agg__record, before it. */
void pt_ovh__record(struct pt_ovh *o, const struct pt_rec *r);
/* A thread ended (after its last record): what is kept for it goes. */
void pt_ovh__thread_exit(struct pt_ovh *o, uint32_t tid);
/* pt_agg's on_step: the step is counted. */
void pt_ovh__step(struct pt_ovh *o, const struct pt_step *s);

/* NULL for an fid never declared. */
const struct pt_ovh_func *pt_ovh__func(const struct pt_ovh *o, uint32_t fid);
/* Over counted steps: cost taken out of step times, and of bucket b's
 * (b == nbuckets: step.other). */
double pt_ovh__step_cost_ns(const struct pt_ovh *o);
double pt_ovh__bucket_cost_ns(const struct pt_ovh *o, size_t b);
/* Corrected step durations of counted steps. */
const struct pt_dist *pt_ovh__steps(const struct pt_ovh *o);
/* Completed probed calls of kind k, all of them (in steps or not). */
uint64_t pt_ovh__hits(const struct pt_ovh *o, enum pt_site_kind k);

#endif
