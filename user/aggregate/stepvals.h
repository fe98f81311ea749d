/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Tokens, KV lengths and batch sizes per step (issue 7): turns the value
 * records BPF sends (struct pt_rec_vals) into figures for the aggregator's
 * open steps, and the counted steps it hands back (pt_agg opts.on_step)
 * into throughput and per-KV-length-bin statistics. Pure C: tests feed it
 * records and steps.
 */
#ifndef PT_STEPVALS_H
#define PT_STEPVALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/proftrace.h"
#include "agg.h"
#include "config/config.h"
#include "dist.h"
#include "config/valexpr.h"

/* Why a value is missing, beyond BPF's enum pt_val_status: the call
 * started before its code object was known (the first call of a py:
 * function after attach), or its record was lost (ring full). */
#define PT_VST_FIRST_CALL PT_VST_MAX
#define PT_VST_LOST (PT_VST_MAX + 1)
#define PT_VST_NREASONS (PT_VST_MAX + 2)

struct pt_stepvals_role {
	const struct pt_probe_spec *probe; /* NULL: role not configured */
	const struct pt_vexpr *expr;
	uint64_t read;			   /* values read (status ok) */
	uint64_t outside;		   /* read with no step open on the thread */
	uint64_t missing[PT_VST_NREASONS]; /* by reason */
	uint64_t steps;			   /* counted steps that have the figure */
};

struct pt_stepvals_count {
	const struct pt_probe_spec *probe;
	const struct pt_vexpr *expr;
	uint64_t read, outside, tokens_sum_outside;
	uint64_t missing[PT_VST_NREASONS];
};

struct pt_stepvals_bin {
	uint64_t lo, hi; /* [lo, hi); hi == UINT64_MAX: open-ended */
	struct pt_dist dur;
	double tokens;
	uint64_t tok_steps; /* steps with tokens */
	double tok_ns;	    /* their time */
};

struct pt_stepvals {
	const struct pt_config *cfg;
	struct pt_stepvals_role role[3]; /* PT_VROLE_TOKENS, _KVLEN, _BATCH */
	struct pt_stepvals_count *counts;
	size_t ncounts;

	/* counted steps */
	uint64_t steps;
	uint64_t tok_steps; /* with a token figure */
	double tokens;	    /* their tokens */
	double tok_ns;	    /* their summed time */
	uint64_t batch_steps;
	double batch_sum;
	uint64_t kv_steps;
	double kv_sum;
	struct pt_stepvals_bin bins[PT_MAX_KV_BINS];
	size_t nbins;
	uint64_t bad_records; /* malformed value records (not from our BPF) */
};

/* 0 or -ENOMEM; cfg stays owned by the caller and must outlive sv. */
int pt_stepvals__init(struct pt_stepvals *sv, const struct pt_config *cfg);
void pt_stepvals__free(struct pt_stepvals *sv);
/* Anything to do: the config reads values. */
bool pt_stepvals__active(const struct pt_stepvals *sv);

/* The BPF spec for a function first named by probe spec `spec`. */
void pt_stepvals__bpf_spec(const struct pt_stepvals *sv, int spec, struct pt_val_spec *out);

/* A value record of a function first named (with values) by probe spec
 * `spec`; size: bytes of the record. Passes figures to agg. */
void pt_stepvals__record(struct pt_stepvals *sv, struct pt_agg *agg, int spec,
			 const struct pt_rec_vals *r, size_t size);
/* A call of spec's function whose values cannot come (reason
 * PT_VST_FIRST_CALL or PT_VST_LOST), at entry (false) or exit (true). */
void pt_stepvals__missed(struct pt_stepvals *sv, int spec, bool at_exit, unsigned int reason);
/* "first_call", "lost", or pt_vexpr__status_name() */
const char *pt_stepvals__reason_name(unsigned int reason);
/* A counted step (from pt_agg's on_step). */
void pt_stepvals__step(struct pt_stepvals *sv, const struct pt_step *s);

#endif
